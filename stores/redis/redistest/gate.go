package redistest

import (
	"errors"
	"strings"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/gate"
	"github.com/kvblob/kvblob/runtime/driver"
)

// Each build joins the gate over a server of its own the gate starts on
// loopback, and is skipped, with the reason, where that server is not
// installed: "redis" on redis-server 7, "redis-valkey-8.1" on Valkey 8.1.
// Each runs its own spec's generated cases and SDK checks.
func init() {
	for _, b := range Builds {
		register(b)
	}
}

func register(b *Build) {
	var server *Server
	gate.Register(gate.Store{
		Name: b.Store, SDK: b.Spec.SDKName + " " + strings.Join(b.Spec.SDKVersions, ", ") + " (loopback)",
		Scenarios: Scenarios(), Cases: b.Cases, Stage: Stage, KnownFailures: KnownFailures(),
		SDKChecks: SDKChecks(b),
		Factory: func(t conformance.T) driver.Driver {
			return Factory(Deployment{Addrs: []string{server.Addr}})(t)
		},
		Setup: func() (string, func(), error) {
			if ok, why := b.Available(); !ok {
				if b.Named() {
					// A build the user pointed the gate at: not there is
					// a set-up error (exit 2), never a skip.
					return "", nil, errors.New(why)
				}
				return why, nil, nil
			}
			s, err := StartWith(Config{Build: b})
			if err != nil {
				return "", nil, err
			}
			server = s
			return "", s.Stop, nil
		},
	})
}
