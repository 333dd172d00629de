package s3kit

import "github.com/kvblob/kvblob/runtime/driver"

// Neighbour writes objects into a driver's bucket with the SDK's own
// unconditional PutObject, as another client with write access to the
// bucket would (conformance.Neighbour). An object has one type and the
// driver writes no marker into one, and a bucket keeps no folders the
// driver walks, so it gives none of the optional capabilities.
type Neighbour struct{}

// WriteRaw puts value as key's object.
func (Neighbour) WriteRaw(d driver.Driver, key string, value []byte) error {
	return Parts(d).Plant(key, value)
}
