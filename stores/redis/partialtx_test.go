package redis_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/redis"
	"github.com/kvblob/kvblob/stores/redis/rediskit"
)

// TestAUserGrantedPartOfTheTransactionCommandsStillStores: on a standalone
// Redis 7 (the WATCH/MULTI/EXEC store step), a user whose ACL grants some
// of WATCH, MULTI and EXEC but not all, and the script's commands
// (rediskit.ClusterScriptCommands: the pre-@transaction tenant), has its
// rows stored by the script: every put READY and every
// get READY with the bytes put, twice over (the driver's verdict on the
// user's transactions is cached after the first store). A driver that
// took MULTI alone, or EXEC alone, for leave to transact would send the
// rows into a transaction the server refuses, and one that took a
// refused WATCH for a failed row would fault it. (Tried: mayTransact's
// multi.Err() == nil && exec.Err() == nil as || fails the -exec user's
// put; watchedRow's case for a refused WATCH dropped fails the -watch
// user's put, FAULT NOPERM.)
func TestAUserGrantedPartOfTheTransactionCommandsStillStores(t *testing.T) {
	b := builds()[0]
	require.Equal(t, rediskit.Redis7, b.build)
	srv := b.owned.Need(t)
	recipe := docACL(t)[0]
	const pass = "pw-partial-5d7a"
	ctx := context.Background()
	admin := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
	t.Cleanup(func() {
		_ = admin.Do(ctx, "acl", "deluser", "tenantA").Err()
		_ = admin.Close()
	})
	for _, drop := range [][]string{{"+watch"}, {"+multi"}, {"+exec"}, {"+multi", "+exec"}} {
		t.Run(strings.Join(drop, " "), func(t *testing.T) {
			line := recipe + " " + strings.Join(rediskit.ClusterScriptCommands, " ")
			for _, d := range drop {
				next := strings.Replace(line, " "+d+" ", " ", 1)
				require.NotEqual(t, line, next)
				line = next
			}
			require.NoError(t, admin.Do(ctx, "acl", "deluser", "tenantA").Err())
			var args []any
			for _, f := range strings.Fields(strings.ReplaceAll(line, "PASSWORD", pass)) {
				args = append(args, f)
			}
			require.NoError(t, admin.Do(ctx, args...).Err())
			a := openTenant(t, redis.Options{Addrs: []string{srv.Addr}, Username: "tenantA", Password: pass})
			for round := range 2 {
				var src, dst []driver.Row
				for i := range 2 {
					a.fill(i, byte(31*round+7*i+1))
					k := fmt.Sprintf("tenantA/v1/partial-%x-%d-%d", time.Now().UnixNano(), round, i)
					src, dst = append(src, a.row(k, i)), append(dst, a.row(k, 4+i))
				}
				for i, r := range a.put(t, src...) {
					require.Equal(t, driver.Ready, r.Status, "round %d, put %d: %v", round, i, r)
				}
				for i, r := range a.get(t, dst...) {
					require.Equal(t, driver.Ready, r.Status, "round %d, get %d: %v", round, i, r)
					assert.Equal(t, a.r.Slot(i).Bytes(), a.r.Slot(4+i).Bytes(), "round %d, row %d", round, i)
				}
			}
		})
	}
}
