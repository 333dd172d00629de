package rules

import (
	"hash/maphash"
	"math/bits"
	"sync"

	"github.com/kvblob/kvblob/runtime/driver"
)

// Admission checks, composed by the Admit function generated from each
// store's spec. Each returns a RejectedError naming its rule, so a refusal
// says which rule of the spec it enforces. They run before anything is
// recorded.

// AdmitRows refuses an empty batch and more rows than max (0: no bound).
func AdmitRows(rows []driver.Row, max int) error {
	if len(rows) == 0 {
		return driver.Reject(driver.RuleNoRows, "no rows; submit at least one")
	}
	if max > 0 && len(rows) > max {
		return driver.Reject(driver.RuleTooManyRows, "%d rows exceed the driver's %d rows per operation", len(rows), max)
	}
	return nil
}

// keyTables recycles AdmitKeys' hash tables, one pool per power of two of
// rows: admission runs for every driver call (and the backend's for every
// view), and clearing a table costs its size, so a 256-row driver call
// must not clear the table a 4,096-row view needed.
var keyTables [bits.UintSize + 1]sync.Pool

// keySeed seeds AdmitKeys' hashes; it is random per process.
var keySeed = maphash.MakeSeed()

// smallKeys is how many rows a KeySet compares pairwise instead of
// through a table: below it, the comparisons cost less than the table.
const smallKeys = 8

// AdmitKeys refuses an empty key and a key repeated within the batch.
func AdmitKeys(rows []driver.Row) error {
	set := NewKeySet(len(rows))
	defer set.Release()
	for i, r := range rows {
		if r.Key == "" {
			return driver.Reject(driver.RuleEmptyKey, "row %d has an empty key", i)
		}
		if set.tp == nil {
			for j := range i {
				if rows[j].Key == r.Key {
					return driver.Reject(driver.RuleRepeatedKey, "rows %d and %d repeat key %q", j, i, r.Key)
				}
			}
			continue
		}
		// AddHashed's probe, inlined: a call a row costs a batch of
		// short keys a fifth more.
		h := maphash.String(keySeed, r.Key)
		tag := h &^ 0xffffffff
		for at := h & set.mask; ; at = (at + 1) & set.mask {
			e := set.table[at]
			if e == 0 {
				set.table[at] = tag | uint64(i+1)
				break
			}
			if j := int(uint32(e)) - 1; e&^0xffffffff == tag && rows[j].Key == r.Key {
				return driver.Reject(driver.RuleRepeatedKey, "rows %d and %d repeat key %q", j, i, r.Key)
			}
		}
	}
	return nil
}

// KeySet finds a key repeated among rows as they are added: AdmitKeys's
// set, for a caller that admits keys as it makes them (the backend does, as
// it copies a view, by the names it makes them from).
//
// Up to smallKeys rows it compares each key with those before it. Above,
// it is an open-addressed table of at least twice as many slots as rows:
// each slot is empty (0) or holds a row's index + 1 (low 32 bits) and the
// high 32 bits of its key's hash, which most probes compare instead of the
// keys. Two keys are the same only if they compare equal, so a hash
// collision never finds a repeat.
type KeySet struct {
	tp    *[]uint64 // nil: pairwise
	table []uint64
	mask  uint64 // len(table) - 1
	class int
}

// NewKeySet returns an empty set for up to n rows. Release it when done:
// its table comes from a pool.
func NewKeySet(n int) KeySet {
	if n <= smallKeys {
		return KeySet{}
	}
	class := bits.Len(uint(n)) + 1
	tp, _ := keyTables[class].Get().(*[]uint64)
	if tp == nil {
		t := make([]uint64, 1<<class)
		tp = &t
	}
	// The table is cleared before use, not after: the clear, in address
	// order, brings it into this core's cache at memory speed, where the
	// probes, in hash order, would each miss on a table that went cold
	// in the pool (behind 4 KiB row copies, a 4,096-row view's probes
	// missed on most of its 128 KiB table).
	clear(*tp)
	return KeySet{tp: tp, table: *tp, mask: uint64(len(*tp) - 1), class: class}
}

// AddHashed adds rows[i].Key, which must not be empty, under the hash h
// the caller made, and returns the index of the row added before with the
// same key, or -1 (then the key is added). h must be a function of the key
// alone (one key, one h): a hash of the name the key was made from under
// one stem is, and is shorter than the key, and in the caller's cache.
// Rows are added in order from the first, each row added must keep its
// key, and at most the n rows NewKeySet was given may be added.
func (s *KeySet) AddHashed(rows []driver.Row, i int, h uint64) int {
	if s.tp == nil {
		key := rows[i].Key
		for j := range i {
			if rows[j].Key == key {
				return j
			}
		}
		return -1
	}
	tag := h &^ 0xffffffff
	for at := h & s.mask; ; at = (at + 1) & s.mask {
		e := s.table[at]
		if e == 0 {
			s.table[at] = tag | uint64(i+1)
			return -1
		}
		if j := int(uint32(e)) - 1; e&^0xffffffff == tag && rows[j].Key == rows[i].Key {
			return j
		}
	}
}

// Release returns the set's table to the pool. The set is empty and
// unusable after.
func (s *KeySet) Release() {
	if s.tp != nil {
		keyTables[s.class].Put(s.tp)
		*s = KeySet{}
	}
}

// KeyBytes is a set of byte classes a store refuses in a key.
type KeyBytes uint8

const (
	// KeySpace is the space byte (0x20).
	KeySpace KeyBytes = 1 << iota
	// KeyControl is a control byte: 0x00-0x1f and 0x7f (tab, newline, NUL).
	KeyControl
	// KeyNonASCII is a byte of 0x80 or more.
	KeyNonASCII
)

// has reports whether class holds b.
func (k KeyBytes) has(b byte) (string, bool) {
	switch {
	case k&KeySpace != 0 && b == ' ':
		return "a space", true
	case k&KeyControl != 0 && (b < 0x20 || b == 0x7f):
		return "a control byte", true
	case k&KeyNonASCII != 0 && b >= 0x80:
		return "a byte that is not ASCII", true
	}
	return "", false
}

// KeyRule is what a spec's keys block says about a store's keys. The zero
// KeyRule admits every key of at most driver.MaxKeyBytes bytes.
type KeyRule struct {
	// MaxBytes: keys must be at most this many bytes (0: driver.MaxKeyBytes;
	// a bound over driver.MaxKeyBytes is driver.MaxKeyBytes).
	MaxBytes int
	// Refuse holds the byte classes no key may hold.
	Refuse KeyBytes
	// WellFormed: a key must be prefix/v1/hex(name) as driver.ParseKey
	// reads it (no empty, "." or ".." prefix segment, lower-case hex).
	WellFormed bool
}

// maxBytes is the bound k admits keys under: the spec's, where it is
// lower than the framework's.
func (k KeyRule) maxBytes() int {
	if k.MaxBytes > 0 && k.MaxBytes < driver.MaxKeyBytes {
		return k.MaxBytes
	}
	return driver.MaxKeyBytes
}

// AdmitKeyRule refuses a key longer than the bound (key_too_long: the
// spec's k.MaxBytes where it is lower than driver.MaxKeyBytes, which binds
// every store: one bound on every host, whatever the store resolves keys
// by), one holding a refused byte (key_bytes) and, under k.WellFormed, one
// that is not a driver key (key_format), in that order.
func AdmitKeyRule(rows []driver.Row, k KeyRule) error {
	max := k.maxBytes()
	for i, r := range rows {
		if len(r.Key) > max {
			if max == driver.MaxKeyBytes {
				return driver.Reject(driver.RuleKeyTooLong, "row %d has a key of %d bytes; keys are at most driver.MaxKeyBytes (%d) on every store: shorten the prefix or the name", i, len(r.Key), max)
			}
			return driver.Reject(driver.RuleKeyTooLong, "row %d has a key of %d bytes; this store takes keys of at most %d", i, len(r.Key), max)
		}
		if k.Refuse != 0 {
			for j := 0; j < len(r.Key); j++ {
				if what, bad := k.Refuse.has(r.Key[j]); bad {
					return driver.Reject(driver.RuleKeyBytes, "row %d key %q has %s (0x%02x) at byte %d; this store refuses it in keys", i, r.Key, what, r.Key[j], j)
				}
			}
		}
		if k.WellFormed {
			if _, _, err := driver.ParseKey(r.Key); err != nil {
				return driver.Reject(driver.RuleKeyFormat, "row %d: %v", i, err)
			}
		}
	}
	return nil
}

// AdmitSpans refuses a row with no span, more than one span unless
// multiSpan, an invalid span, a span outside every live registration and a
// row of maxRowBytes or more (0: no bound).
func AdmitSpans(rows []driver.Row, multiSpan bool, maxRowBytes int64, live func(*driver.Region) bool) error {
	for i, r := range rows {
		if len(r.Spans) == 0 {
			return driver.Reject(driver.RuleInvalidSpan, "row %d (%q) has no span", i, r.Key)
		}
		if len(r.Spans) > 1 && !multiSpan {
			return driver.Reject(driver.RuleMultiSpan, "row %d (%q) has %d spans; this store takes one span per row", i, r.Key, len(r.Spans))
		}
		for j, s := range r.Spans {
			if err := s.Validate(); err != nil {
				return driver.Reject(driver.RuleInvalidSpan, "row %d (%q) span %d: %v", i, r.Key, j, err)
			}
			if live != nil && !live(s.Region) {
				return driver.Reject(driver.RuleSpanOutside, "row %d (%q) span %d lies in region %q, which has no live registration", i, r.Key, j, s.Region.Name)
			}
		}
		if maxRowBytes > 0 && r.Bytes() >= maxRowBytes {
			return driver.Reject(driver.RuleRowTooLarge, "row %d (%q) has %d bytes; this store takes rows under %d", i, r.Key, r.Bytes(), maxRowBytes)
		}
	}
	return nil
}

// AdmitHint refuses a non-zero hint unless the driver reads hints.
func AdmitHint(h driver.Hint, hints bool) error {
	if !h.IsZero() && !hints {
		return driver.Reject(driver.RuleHint, "a hint was given, but this driver does not declare hints")
	}
	return nil
}

// AdmitRegion refuses an invalid region and a device region unless the
// driver declares device memory.
func AdmitRegion(r *driver.Region, deviceMemory bool) error {
	if err := r.Validate(); err != nil {
		return driver.Reject(driver.RuleInvalidSpan, "%v", err)
	}
	if r.Kind == driver.Device && !deviceMemory {
		return driver.Reject(driver.RuleDeviceRegion, "region %q is device memory; this driver takes host memory only", r.Name)
	}
	return nil
}
