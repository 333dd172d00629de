package trailer

import "github.com/kvblob/kvblob/runtime/claim"

// A pending marker is what a writer stores under a key it claimed until
// its object replaces it, in a store that keeps a key's marker and its
// object in one value (stores/redis; stores/fs keeps its markers in files
// of their own, the memory store a key's state beside its bytes, and S3
// and Mooncake claim no key). Readers answer NOT_READY for a marker, so a
// payload must never be taken for one: a marker is recognised only by a
// form no object can have, and a reader checks an object's trailer first
// (IsMarker).
//
// A marker is exactly MarkerLen bytes: MarkerMagic, then a claim.Token's
// text (runtime/claim: 32 lower-case hex digits, random per claim, the
// claim's identity every store writes into its marker). No object is one,
// whatever its payload: every object ends in a trailer starting with
// Magic, so the only objects of MarkerLen bytes (unkeyed, of a
// MarkerLen-Size-byte payload; a keyed object is at least TagSize+Size
// bytes, and one of format VersionHMAC TailSize) hold Magic at byte
// MarkerLen-Size, inside the marker's magic, where a marker holds other
// bytes (TestNoObjectIsAMarker).
const (
	MarkerMagic    = "kvblob-pending:"
	MarkerTokenLen = claim.TextLen
	MarkerLen      = len(MarkerMagic) + MarkerTokenLen
)

// The two facts that keep every object from being a marker, checked by
// the compiler: a keyed object is longer than a marker, and an unkeyed
// object of a marker's length has its trailer's magic within the marker's
// magic (whose bytes there TestNoObjectIsAMarker holds unlike Magic).
// Re-check the doc above if either fails to compile.
var (
	_ [TagSize + Size - MarkerLen - 1]struct{}
	_ [HMACTagSize + Size - MarkerLen - 1]struct{}
	_ [len(MarkerMagic) - (MarkerLen - Size + len(Magic))]struct{}
)

// NewMarker returns a fresh marker: MarkerMagic and a new claim.Token.
func NewMarker() string { return MarkerMagic + claim.New().String() }

// IsMarker reports whether v is a marker: exactly MarkerLen bytes,
// MarkerMagic, then lower-case hex digits. A value that begins with the
// magic but has another length, or other bytes after it, is no marker; a
// reader that checks the trailer first (an object is never a marker
// anyway) gives a payload that begins with a marker's bytes to its row.
func IsMarker(v []byte) bool {
	if len(v) != MarkerLen || string(v[:len(MarkerMagic)]) != MarkerMagic {
		return false
	}
	for _, c := range v[len(MarkerMagic):] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
