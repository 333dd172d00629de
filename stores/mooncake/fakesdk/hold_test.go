package fakesdk_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/stores/mooncake"
	"github.com/kvblob/kvblob/stores/mooncake/fakesdk"
)

// TestAHeldGetWaitsForItsRelease: a batch_get_into naming a key a Hold was
// staged for waits inside the SDK, before it reads anything, until the
// hold is released, and then reads the object. (Tried: the get not
// entering the SDK's holds finishes with its hold never entered.)
func TestAHeldGetWaitsForItsRelease(t *testing.T) {
	m := fakesdk.NewMaster(4 << 10)
	c := fakesdk.NewClient(m, fakesdk.Version)
	m.Plant("k", []byte{7})
	h := m.Hold(fakesdk.CallGet, "k")
	buf := make([]byte, 1)
	var codes []int64
	done := m.Go(func() { codes, _ = c.BatchGetInto([]string{"k"}, []mooncake.Buffer{mooncake.BufferOf(buf)}) })
	select {
	case <-h.Entered:
	case <-done:
		h.Release()
		t.Fatalf("the get finished (%v) without waiting at its hold", codes)
	}
	assert.Equal(t, []byte{0}, buf, "nothing read while held")
	h.Release()
	require.NoError(t, m.Await(done))
	assert.Equal(t, []int64{1}, codes, "the object's length")
	assert.Equal(t, []byte{7}, buf)
}
