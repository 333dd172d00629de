package backend

import (
	"math/rand/v2"
	"testing"

	"github.com/kvblob/kvblob/runtime/driver"
)

// The keys a view's one allocation holds are driver.Stem.Key's, row for
// row, names of every length (none, for an unnamed row) side by side.
func TestViewKeysAreTheStemsKeys(t *testing.T) {
	stem, err := driver.KeyStem("kv/model-a")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		v := make(View, rng.IntN(40))
		for i := range v {
			v[i].Name = make([]byte, rng.IntN(20))
			for j := range v[i].Name {
				v[i].Name[j] = byte(rng.IntN(256))
			}
		}
		size := 0
		for _, vr := range v {
			if len(vr.Name) > 0 {
				size += len(stem.String()) + 2*len(vr.Name)
			}
		}
		keys := newKeys(stem.String(), size)
		for i, vr := range v {
			if len(vr.Name) == 0 {
				continue
			}
			want, err := stem.Key(vr.Name)
			if err != nil {
				t.Fatal(err)
			}
			if got := keys.key(vr.Name); got != want {
				t.Fatalf("row %d: key %q, want %q", i, got, want)
			}
		}
		if len(keys.buf) != 0 {
			t.Fatalf("%d bytes of the allocation left over", len(keys.buf))
		}
	}
}
