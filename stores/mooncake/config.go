package mooncake

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"

	"gopkg.in/yaml.v3"

	mooncakegen "github.com/kvblob/kvblob/generated/mooncake"
	"github.com/kvblob/kvblob/runtime/rules"
)

// Config is a Mooncake store file: a backend section (the backend's batching) and a
// mooncake section for the SDK client.
//
//	backend:
//	  workers: 4
//	  rows_per_batch: 4096
//	  bytes_per_batch: 16777216
//	mooncake:
//	  master: 127.0.0.1:50051
//	  local_hostname: 127.0.0.1
//	  metadata_server: P2PHANDSHAKE
//	  protocol: tcp
//	  device: ""
//	  global_segment_size: 0
//	  local_buffer_size: 0
type Config struct {
	Backend  BackendConfig `yaml:"backend"`
	Mooncake ClientConfig  `yaml:"mooncake"`
}

// BackendConfig holds the backend's settings for this store. Its defaults come
// from the spec's config (chosen there from measurements on the real SDK):
// 4 workers, 4,096 rows and 16 MiB per call.
type BackendConfig struct {
	Workers       int   `yaml:"workers"`
	RowsPerBatch  int   `yaml:"rows_per_batch"`
	BytesPerBatch int64 `yaml:"bytes_per_batch"`
}

// ClientConfig holds the SDK client's setup arguments.
type ClientConfig struct {
	Master            string `yaml:"master"`
	LocalHostname     string `yaml:"local_hostname"`
	MetadataServer    string `yaml:"metadata_server"`
	Protocol          string `yaml:"protocol"`
	Device            string `yaml:"device"`
	GlobalSegmentSize int64  `yaml:"global_segment_size"`
	LocalBufferSize   int64  `yaml:"local_buffer_size"`
}

// DefaultConfig is the config an empty file gives.
func DefaultConfig() Config {
	return Config{
		Backend: BackendConfig{Workers: mooncakegen.Mooncake0313().Defaults.Workers, RowsPerBatch: mooncakegen.Mooncake0313().Defaults.RowsPerBatch, BytesPerBatch: mooncakegen.Mooncake0313().Defaults.BytesPerBatch},
		Mooncake: ClientConfig{Master: "127.0.0.1:50051", LocalHostname: "127.0.0.1",
			MetadataServer: "P2PHANDSHAKE", Protocol: "tcp"},
	}
}

// LoadConfig reads a store file strictly: an unreadable file, invalid YAML,
// unknown sections or keys, values of the wrong type, and a master address
// that is not one host:port are errors naming the file and key.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("mooncake config: %w", err)
	}
	return ParseConfig(path, data)
}

// ParseConfig is LoadConfig over bytes; name labels errors.
func ParseConfig(name string, data []byte) (Config, error) {
	if err := checkIntegers(data); err != nil {
		return Config{}, fmt.Errorf("mooncake config %s: %v", name, err)
	}
	cfg := DefaultConfig()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) { // an empty file is all defaults
		return Config{}, fmt.Errorf("mooncake config %s: %v", name, err)
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, fmt.Errorf("mooncake config %s: %v", name, err)
	}
	return cfg, nil
}

// Validate checks values the types alone cannot.
func (c Config) Validate() error {
	if c.Backend.Workers < 1 {
		return fmt.Errorf("backend.workers is %d; want at least 1", c.Backend.Workers)
	}
	if c.Backend.RowsPerBatch < 0 || c.Backend.BytesPerBatch < 0 {
		return fmt.Errorf("backend.rows_per_batch and backend.bytes_per_batch must be 0 (no bound) or more")
	}
	host, port, err := net.SplitHostPort(c.Mooncake.Master)
	if err != nil || host == "" {
		return fmt.Errorf("mooncake.master %q is not one host:port (an HA master list is not supported)", c.Mooncake.Master)
	}
	if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
		return fmt.Errorf("mooncake.master %q has port %q; want 1-65535", c.Mooncake.Master, port)
	}
	switch c.Mooncake.Protocol {
	case "tcp", "rdma":
	default:
		return fmt.Errorf("mooncake.protocol is %q; want \"tcp\" or \"rdma\"", c.Mooncake.Protocol)
	}
	if c.Mooncake.GlobalSegmentSize < 0 || c.Mooncake.LocalBufferSize < 0 {
		return fmt.Errorf("mooncake.global_segment_size and mooncake.local_buffer_size must not be negative")
	}
	if g := c.Mooncake.GlobalSegmentSize; g > 0 && g < MinGlobalSegmentSize {
		return fmt.Errorf("mooncake.global_segment_size is %d; want 0 (mount no segment) or at least %d (16 MiB): the SDK's setup refuses a smaller segment with INVALID_PARAMS", g, MinGlobalSegmentSize)
	}
	return nil
}

// MinGlobalSegmentSize is the smallest segment the real SDK's setup mounts:
// setup_real answers INVALID_PARAMS (-600) under it (Mooncake main at
// 3b5a594); 0 mounts none and is accepted.
const MinGlobalSegmentSize = 16 << 20

// Opener sets up an SDK client from the mooncake section: the fake SDK's,
// or the cgo client's (build tag mooncake).
type Opener func(ClientConfig) (SDK, error)

// Open reads the store file, refuses the environment settings the spec
// refuses, opens the SDK with open and returns the driver with its backend
// settings. A client whose driver could not be built is closed.
func Open(path string, open Opener) (*Driver, BackendConfig, error) {
	cfg, err := LoadConfig(path)
	if err != nil {
		return nil, BackendConfig{}, err
	}
	return OpenConfig(cfg, open, os.Getenv)
}

// OpenConfig is Open over a parsed config and an environment.
func OpenConfig(cfg Config, open Opener, getenv func(string) string) (*Driver, BackendConfig, error) {
	return OpenConfigWith(cfg, open, getenv, Options{})
}

// OpenConfigWith is OpenConfig with the driver's options (NewWith).
func OpenConfigWith(cfg Config, open Opener, getenv func(string) string, opt Options) (*Driver, BackendConfig, error) {
	// The SDK reads these settings at setup, before its version picks a
	// spec, so the driver refuses what any spec it holds refuses.
	for _, s := range Specs() {
		if err := rules.CheckEnvironment(s.Environment, getenv); err != nil {
			return nil, BackendConfig{}, fmt.Errorf("mooncake: %w", err)
		}
	}
	sdk, err := open(cfg.Mooncake)
	if err != nil {
		return nil, BackendConfig{}, fmt.Errorf("mooncake: opening the SDK: %w", err)
	}
	d, err := NewWith(sdk, opt)
	if err != nil {
		_ = sdk.Close()
		return nil, BackendConfig{}, err
	}
	return d, cfg.Backend, nil
}

// integerKeys are the keys whose values must be written as integers. yaml.v3
// would otherwise read 1.28e+8 into an int without a word.
var integerKeys = map[string]bool{
	"backend.workers": true, "backend.rows_per_batch": true, "backend.bytes_per_batch": true,
	"mooncake.global_segment_size": true, "mooncake.local_buffer_size": true,
}

func checkIntegers(data []byte) error {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil || len(root.Content) == 0 {
		return nil // the strict decode reports syntax errors and empty files
	}
	top := root.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(top.Content); i += 2 {
		sec := top.Content[i+1]
		if sec.Kind != yaml.MappingNode {
			continue
		}
		for j := 0; j+1 < len(sec.Content); j += 2 {
			key := top.Content[i].Value + "." + sec.Content[j].Value
			v := sec.Content[j+1]
			if integerKeys[key] && v.Tag != "!!int" {
				return fmt.Errorf("line %d: %s must be an integer, found %s %q", v.Line, key, v.Tag, v.Value)
			}
		}
	}
	return nil
}
