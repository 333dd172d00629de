package mooncakekit

import "github.com/kvblob/kvblob/runtime/driver"

// Neighbour stores objects in the fake SDK's master, as another client of
// the pool would (conformance.Neighbour). A Mooncake object has one type
// and the driver writes no marker into one, and the pool keeps no
// folders, so it gives none of the optional capabilities.
type Neighbour struct{}

// WriteRaw stores value as key's object in d's master.
func (Neighbour) WriteRaw(d driver.Driver, key string, value []byte) error {
	Master(d).Plant(key, append([]byte(nil), value...))
	return nil
}
