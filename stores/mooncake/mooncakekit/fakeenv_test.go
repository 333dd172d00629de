package mooncakekit_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/stores/mooncake/mooncakekit"
)

// TestFakeEnvCloseUnmapsEachAllocOnce: Close unmaps the memory Alloc
// mapped and forgets it, so a second Close (a scenario's cleanup after an
// early Close) unmaps nothing again and answers no error, and memory
// allocated after a Close is unmapped by the next. (Tried: Close keeping
// its list unmaps the same memory twice, which munmap refuses.)
func TestFakeEnvCloseUnmapsEachAllocOnce(t *testing.T) {
	e := &mooncakekit.FakeEnv{}
	for i := 0; i < 2; i++ {
		m, err := e.Alloc(mooncakekit.A, 4096)
		require.NoError(t, err)
		m.Write(0, []byte{1, 2, 3})
		assert.Equal(t, []byte{1, 2, 3}, m.Read(0, 3))
		require.NoError(t, e.Close(), "close after alloc %d", i)
	}
	assert.NoError(t, e.Close(), "a second Close")
}
