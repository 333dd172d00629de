package broken

import (
	"github.com/kvblob/kvblob/runtime/driver"
)

// IntegrityTwin breaks conformance.IntegrityCheck: it skips the integrity
// verdict, so a get that the sound driver refused (a row whose tag does
// not verify) is reported READY.
func IntegrityTwin(in driver.Driver) driver.Driver {
	return &Driver{Inner: in, op: func(o *Op) {
		if o.Put {
			return
		}
		o.poll = mapResults(o, func(_ int, r driver.Result) driver.Result {
			if r.Status == driver.Fault {
				return driver.Result{Status: driver.Ready}
			}
			return r
		})
	}}
}
