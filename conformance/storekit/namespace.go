package storekit

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync/atomic"

	"github.com/kvblob/kvblob/conformance"
)

// namespaces counts the names NewName gave in this process, so that two
// are never alike even if the random part were.
var namespaces atomic.Uint64

// NewName returns a name no other call (in this process or, with
// overwhelming odds, another) returns: "kvblob", a counter and 8 random
// hex digits, all lowercase letters and digits, under 40 bytes, so that
// it is a valid database, schema, table, bucket, key prefix or folder
// name in every store without quoting.
func NewName() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand's Read never fails on Linux
	return fmt.Sprintf("kvblob%d%s", namespaces.Add(1), hex.EncodeToString(b[:]))
}

// Namespace gives a driver a namespace of its own (a database, a table, a
// bucket, a key prefix) in a server its tests share: it makes a NewName
// with create, fails t saying why when create fails, and drops it with
// drop (nil: nothing to drop) at t's cleanup, so that no check sees
// another's rows and none is left behind. A drop that fails is logged.
func Namespace(t conformance.T, create, drop func(name string) error) string {
	t.Helper()
	name := NewName()
	if err := create(name); err != nil {
		t.Fatalf("storekit: creating the namespace %s for %s: %v", name, t.Name(), err)
	}
	if drop != nil {
		t.Cleanup(func() {
			if err := drop(name); err != nil {
				t.Logf("storekit: dropping the namespace %s: %v", name, err)
			}
		})
	}
	return name
}
