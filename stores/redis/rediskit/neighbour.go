package rediskit

import (
	"context"

	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/trailer"
)

// Neighbour writes keys through the kit's own client, as another client
// of the server with write access would (conformance.Neighbour): a raw
// SET of any bytes, a marker of the driver's exact form, and a list under
// a row's key (a value of the wrong type).
type Neighbour struct{}

// WriteRaw SETs value under key, with no TTL.
func (Neighbour) WriteRaw(d driver.Driver, key string, value []byte) error {
	return set(adminOf(d), key, value)
}

// Marker is a fresh marker of the form the driver writes while it
// publishes.
func (Neighbour) Marker() []byte { return []byte(trailer.NewMarker()) }

// WriteWrongType makes key a list (RPUSH).
func (Neighbour) WriteWrongType(d driver.Driver, key string) error {
	return adminOf(d).RPush(context.Background(), key, "a", "list").Err()
}
