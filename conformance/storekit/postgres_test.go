package storekit_test

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance/storekit"
)

// postgres is all a PostgreSQL kit writes to run its server: Debian puts
// it in /usr/lib/postgresql/<version>/bin, off PATH; it refuses to run as
// root; its folder needs initdb before the first start. initdb and a
// smart shutdown each take seconds on a quiet machine, so the bounds on
// them are wide: on a loaded two-core machine running -race tests beside
// them, the kit's default 10 s was too short.
var postgres = storekit.Spec{
	Binary: "postgres", Dirs: []string{"/usr/lib/postgresql/*/bin"}, User: "postgres",
	Wait: time.Minute, StopWait: 30 * time.Second,
	Install: "apt-get install postgresql",
	Init: func(dir string, run func(string, ...string) error) error {
		return run("initdb", "-D", filepath.Join(dir, "data"), "-U", "kvblob", "--auth=trust", "-E", "UTF8")
	},
	Args: func(host string, port int, dir string) []string {
		return []string{"-D", filepath.Join(dir, "data"), "-h", host, "-p", strconv.Itoa(port), "-k", dir}
	},
}

// psql runs one statement as the kit's superuser on database db.
func psql(addr, db, sql string) (string, error) {
	bin, _ := storekit.FindBinaryIn("psql", postgres.Dirs)
	host, port, _ := strings.Cut(addr, ":")
	out, err := exec.Command(bin, "-h", host, "-p", port, "-U", "kvblob", "-d", db, "-qtA", "-c", sql).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// TestAServerThatNeedsInitAndItsOwnUser starts a real PostgreSQL from the
// kit's Spec alone (found off PATH, initialised, run as user postgres),
// gives a driver a database of its own, and stops it politely.
func TestAServerThatNeedsInitAndItsOwnUser(t *testing.T) {
	if ok, why := storekit.Available(postgres); !ok {
		t.Skip(why)
	}
	if os.Geteuid() != 0 {
		t.Skip("PostgreSQL runs as user postgres, which needs root to switch to")
	}
	spec := postgres
	spec.Ready = func(addr string) error { _, err := psql(addr, "postgres", "SELECT 1"); return err }
	s, err := storekit.Start(spec)
	require.NoError(t, err)
	defer s.Stop()
	require.NoError(t, s.LoopbackOnly())
	pg, err := user.Lookup("postgres")
	require.NoError(t, err)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.PID()))
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^Uid:\s+`+pg.Uid+`\s`, string(b), "the server runs as user postgres")

	var db string
	t.Run("driver", func(t *testing.T) {
		db = storekit.Namespace(t, func(n string) error { _, err := psql(s.Addr, "postgres", "CREATE DATABASE "+n); return err },
			func(n string) error { _, err := psql(s.Addr, "postgres", "DROP DATABASE "+n); return err })
		out, err := psql(s.Addr, db, "CREATE TABLE rows (k text PRIMARY KEY); SELECT current_database()")
		require.NoError(t, err, out)
		assert.Equal(t, db, out)
	})
	out, err := psql(s.Addr, "postgres", "SELECT count(*) FROM pg_database WHERE datname = '"+db+"'")
	require.NoError(t, err, out)
	assert.Equal(t, "0", out, "the driver's database is dropped at its test's end")

	s.Stop()
	assert.True(t, s.ExitedWhenAsked(), "PostgreSQL exits on SIGTERM (smart shutdown)")
}
