//go:build mooncake

package realsdk_test

import (
	"testing"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/stores/memory"
	"github.com/kvblob/kvblob/stores/memory/memorykit"
)

// TestConformance runs with no generated cases, so its row has fewer
// checks than the fake's: a row that merged both would show it.
func TestConformance(t *testing.T) {
	s := memorykit.Suite("mooncake", memory.Options{})
	s.SDK = "twosdks real"
	s.Cases = nil
	conformance.Run(t, s)
}
