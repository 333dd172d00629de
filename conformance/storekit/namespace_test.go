package storekit

import (
	"errors"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A name every store takes unquoted: an S3 bucket (3 to 63 lowercase
// letters, digits, hyphens), a PostgreSQL or MySQL identifier (a letter
// first, then letters, digits, underscores; at most 63 bytes), a folder.
var plainName = regexp.MustCompile(`^[a-z][a-z0-9]{2,62}$`)

func TestEachDriverGetsANamespaceOfItsOwn(t *testing.T) {
	var created, dropped []string
	seen := map[string]bool{}
	for i := 0; i < 3; i++ {
		t.Run("driver", func(t *testing.T) {
			name := Namespace(t, func(n string) error { created = append(created, n); return nil },
				func(n string) error { dropped = append(dropped, n); return nil })
			assert.Regexp(t, plainName, name)
			assert.False(t, seen[name], "%s given twice", name)
			seen[name] = true
			assert.Len(t, dropped, len(created)-1, "dropped before the driver's test ended, or never")
		})
	}
	assert.Len(t, created, 3)
	assert.Equal(t, created, dropped, "each dropped at its test's end")
}

func TestANamespaceThatCannotBeMadeFailsTheTest(t *testing.T) {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Namespace(r, func(string) error { return errors.New("permission denied to create database") }, nil)
	}()
	<-done
	require.NotEmpty(t, r.failed)
	assert.Regexp(t, `^storekit: creating the namespace kvblob\w+ for TestANamespaceThatCannotBeMadeFailsTheTest: permission denied to create database$`, r.failed)
}
