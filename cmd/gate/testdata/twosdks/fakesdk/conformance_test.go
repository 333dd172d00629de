package fakesdk_test

import (
	"testing"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/stores/memory"
	"github.com/kvblob/kvblob/stores/memory/memorykit"
)

func TestConformance(t *testing.T) {
	s := memorykit.Suite("mooncake", memory.Options{})
	s.SDK = "twosdks fake"
	conformance.Run(t, s)
}
