package fakesdk_test

import (
	"testing"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/internal/memorykit"
	"github.com/kvblob/kvblob/stores/memory"
)

func TestConformance(t *testing.T) {
	s := memorykit.Suite("mooncake", memory.Options{})
	s.SDK = "twosdks fake"
	conformance.Run(t, s)
}
