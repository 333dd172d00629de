package rediskit

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kvblob/kvblob/stores/redis"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestSDKCheckRules: each rule the SDK checks apply to a live server's
// replies refuses a reply the spec does not rely on.
func TestSDKCheckRules(t *testing.T) {
	assert.NoError(t, versionHeld(map[string]string{"server": "redis", "version": "7.0.15", "mode": "standalone"}, Redis7.Spec))
	assert.ErrorContains(t, versionHeld(map[string]string{"server": "redis", "version": "8.2.1"}, Redis7.Spec), "the server is redis-server 8.2.1; spec/redis-7.yaml holds for redis-server [7.x]")
	assert.ErrorContains(t, versionHeld(map[string]string{}, Redis7.Spec), "the server is redis-server unknown")
	valkey := map[string]string{"server": "valkey", "version": "8.1.1"}
	assert.NoError(t, versionHeld(valkey, Valkey81.Spec))
	assert.ErrorContains(t, versionHeld(valkey, Redis7.Spec), "the server is valkey-server 8.1.1; spec/redis-7.yaml holds for")

	assert.NoError(t, wantNil(goredis.Nil))
	assert.ErrorContains(t, wantNil(nil), "answered OK, not a nil reply")
	assert.ErrorContains(t, wantNil(errors.New("WRONGTYPE x")), `answered "WRONGTYPE x"`)

	assert.NoError(t, wantOOM(errors.New("OOM command not allowed when used memory > 'maxmemory'.")))
	assert.ErrorContains(t, wantOOM(nil), "answered OK")
	assert.ErrorContains(t, wantOOM(errors.New("ERR other")), `not an "OOM ..." error reply`)
}

// TestEveryDriverSpecHasABuild: each spec the driver serves has a build
// here, so that its cases and SDK checks run against its own server; and
// each build's spec is one the driver serves.
func TestEveryDriverSpecHasABuild(t *testing.T) {
	specs := redis.Specs()
	assert.Len(t, Builds, len(specs))
	for i, spec := range specs {
		b := BuildOf(spec)
		if assert.NotNil(t, b, "%s has no rediskit.Build: nothing runs its cases", spec) && i < len(Builds) {
			assert.Same(t, b, Builds[i], "Builds are in the order of redis.Specs")
		}
	}
	for _, b := range Builds {
		assert.Contains(t, specs, b.Spec, "build %s", b.Name)
	}
}

// TestValkeyEnvIsTheOnlyCandidate: KVBLOB_VALKEY_SERVER, when set, is the
// program the Valkey tests run, and a wrong one is an error naming it, not
// a fall-back to another Valkey.
func TestValkeyEnvIsTheOnlyCandidate(t *testing.T) {
	redis := filepath.Join(t.TempDir(), "redis-server")
	require.NoError(t, os.WriteFile(redis, []byte("#!/bin/sh\necho 'Redis server v=7.0.15 sha=00000000:0'\n"), 0o755))
	t.Setenv("KVBLOB_VALKEY_SERVER", redis)
	p, why := Valkey81.Server()
	assert.Empty(t, p)
	assert.Equal(t, "KVBLOB_VALKEY_SERVER="+redis+": it is Redis server v=7.0.15 sha=00000000:0, not Valkey 8.1", why)
	ok, why := Valkey81.Available()
	assert.False(t, ok)
	assert.Contains(t, why, "KVBLOB_VALKEY_SERVER="+redis)

	// The suite treats a build the user named as required: a set-up error
	// (the gate exits 2), not a skip.
	assert.True(t, Valkey81.Named())
	assert.False(t, Redis7.Named())
	skip, err := Valkey81.Suite(Valkey81.Store, nil, false, why).Setup(nil)
	assert.Empty(t, skip)
	assert.ErrorContains(t, err, "KVBLOB_VALKEY_SERVER="+redis+": it is Redis server v=7.0.15")
	skip, err = Redis7.Suite(Redis7.Store, nil, false, "redis-server is not installed").Setup(nil)
	assert.Equal(t, "redis-server is not installed", skip, "a build nobody named is skipped where it is missing")
	assert.NoError(t, err)
}
