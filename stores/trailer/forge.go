package trailer

// Retarget is obj (an object under some key, payload and trailer, tagged
// or not) as a neighbour copies it to key: the trailer's name digest
// rewritten for key, which anyone can compute. The unkeyed trailer then
// checks under key; only the keyed tag, which binds the name, refuses it.
// For the stores' tests of that attack.
func Retarget(obj []byte, key string) []byte {
	out := append([]byte(nil), obj...)
	if len(out) < Size {
		return out
	}
	d := NameDigest(key)
	copy(out[len(out)-Size+8:len(out)-Size+24], d[:])
	return out
}
