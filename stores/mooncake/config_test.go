package mooncake_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/stores/mooncake"
	"github.com/kvblob/kvblob/stores/mooncake/fakesdk"
)

func TestConfigDefaultsComeFromTheSpec(t *testing.T) {
	cfg, err := mooncake.ParseConfig("empty.yaml", nil)
	require.NoError(t, err)
	assert.Equal(t, mooncake.BackendConfig{Workers: 4, RowsPerBatch: 4096, BytesPerBatch: 16 << 20}, cfg.Backend)
}

func TestConfigErrorsNameTheKey(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"unknown section", "cache: {}\n", "field cache not found"},
		{"unknown key", "backend: {workerz: 2}\n", "field workerz not found"},
		{"wrong type", "backend: {bytes_per_batch: 1.28e+8}\n", `line 1: backend.bytes_per_batch must be an integer, found !!float "1.28e+8"`},
		{"HA master list", "mooncake: {master: \"a:1,b:2\"}\n", "not one host:port"},
		{"no port", "mooncake: {master: \"localhost\"}\n", "not one host:port"},
		{"bad port", "mooncake: {master: \"localhost:99999\"}\n", "want 1-65535"},
		{"port 0", "mooncake: {master: \"localhost:0\"}\n", "want 1-65535"},
		{"port 65536", "mooncake: {master: \"localhost:65536\"}\n", "want 1-65535"},
		{"zero workers", "backend: {workers: 0}\n", "backend.workers is 0"},
		{"bad protocol", "mooncake: {protocol: udp}\n", "mooncake.protocol"},
		{"segment under 16 MiB", "mooncake: {global_segment_size: 16777215}\n", "mooncake.global_segment_size is 16777215; want 0 (mount no segment) or at least 16777216"},
		{"segment of 1 byte", "mooncake: {global_segment_size: 1}\n", "mooncake.global_segment_size is 1"},
		{"invalid yaml", "backend: [\n", "store.yaml"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := mooncake.ParseConfig("store.yaml", []byte(c.yaml))
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Contains(t, err.Error(), "store.yaml")
		})
	}
	_, err := mooncake.LoadConfig(filepath.Join(t.TempDir(), "missing.yaml"))
	assert.ErrorContains(t, err, "missing.yaml")
}

func TestOpenRefusesTheSettingsTheSpecRefuses(t *testing.T) {
	open := func(mooncake.ClientConfig) (mooncake.SDK, error) {
		return fakesdk.NewClient(fakesdk.NewMaster(0), fakesdk.Version), nil
	}
	for _, env := range []string{"MC_STORE_LOCAL_HOT_CACHE_SIZE", "MC_TCP_PROTO", "MC_USE_TENT", "MC_USE_TEV1"} {
		t.Run(env, func(t *testing.T) {
			getenv := func(k string) string {
				if k == env {
					return "1"
				}
				return ""
			}
			_, _, err := mooncake.OpenConfig(mooncake.DefaultConfig(), open, getenv)
			require.Error(t, err)
			assert.Contains(t, err.Error(), env+`="1" is refused`)
		})
	}
	d, be, err := mooncake.OpenConfig(mooncake.DefaultConfig(), open, func(string) string { return "" })
	require.NoError(t, err)
	assert.Equal(t, 4, be.Workers)
	assert.NotNil(t, d)

	closed := false
	old := func(mooncake.ClientConfig) (mooncake.SDK, error) {
		c := fakesdk.NewClient(fakesdk.NewMaster(0), "0.3.12")
		return closeSpy{Client: c, closed: &closed}, nil
	}
	_, _, err = mooncake.OpenConfig(mooncake.DefaultConfig(), old, func(string) string { return "" })
	assert.ErrorContains(t, err, "has no spec")
	assert.True(t, closed, "a client whose driver could not be built is closed")
}

type closeSpy struct {
	*fakesdk.Client
	closed *bool
}

func (c closeSpy) Close() error { *c.closed = true; return c.Client.Close() }

func TestConfigTakesNoSegmentOrAtLeast16MiB(t *testing.T) {
	for _, size := range []int64{0, 16 << 20, 64 << 20} {
		cfg, err := mooncake.ParseConfig("store.yaml", []byte(fmt.Sprintf("mooncake: {global_segment_size: %d}\n", size)))
		require.NoError(t, err, "size %d", size)
		assert.Equal(t, size, cfg.Mooncake.GlobalSegmentSize)
	}
}

func TestLoadConfigReadsAFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "store.yaml")
	require.NoError(t, os.WriteFile(p, []byte("backend: {workers: 2}\nmooncake: {master: \"127.0.0.1:6000\"}\n"), 0o644))
	cfg, err := mooncake.LoadConfig(p)
	require.NoError(t, err)
	assert.Equal(t, 2, cfg.Backend.Workers)
	assert.Equal(t, mooncake.DefaultConfig().Backend.RowsPerBatch, cfg.Backend.RowsPerBatch, "unset keys keep their defaults")
	assert.Equal(t, "127.0.0.1:6000", cfg.Mooncake.Master)
}
