package metrics

import "time"

// SetClock makes d's fault log read the time from now, for a test that
// steps it.
func SetClock(d *Drivers, now func() time.Time) { d.now = now }
