package redistest

import (
	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/gate"
	gen "github.com/kvblob/kvblob/generated/redis"
	"github.com/kvblob/kvblob/runtime/driver"
)

// Redis joins the gate over a redis-server the gate starts on loopback, and
// is skipped, with the reason, where no redis-server is installed.
func init() {
	var server *Server
	gate.Register(gate.Store{
		Name: "redis", SDK: gen.SDKName + " " + gen.SDKVersions[0] + ".x (loopback)",
		Scenarios: Scenarios(), Cases: gen.Cases, Stage: Stage, KnownFailures: KnownFailures(),
		SDKChecks: SDKChecks(),
		Factory: func(t conformance.T) driver.Driver {
			return Factory(Deployment{Addrs: []string{server.Addr}})(t)
		},
		Setup: func() (string, func(), error) {
			if ok, why := Available(); !ok {
				return why, nil, nil
			}
			s, err := Start()
			if err != nil {
				return "", nil, err
			}
			server = s
			return "", s.Stop, nil
		},
	})
}
