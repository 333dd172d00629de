package redis

// Lanes reports whether d's gets go out on a client of their own and
// whether its publish connections yield to them (lanes.go).
func Lanes(d *Driver) (ownGets, yielding bool) { return d.g != d.c, d.gate != nil }

// IdleBufferBytes is the bytes of object buffers d keeps between calls
// (bufs.go).
func IdleBufferBytes(d *Driver) int {
	d.bufs.mu.Lock()
	defer d.bufs.mu.Unlock()
	return d.bufs.bytes
}
