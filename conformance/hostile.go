package conformance

import (
	"fmt"
	"path"
	"runtime"

	"github.com/kvblob/kvblob/runtime/driver"
)

// Neighbour writes to a store's medium as another client with write
// access would: around the driver, not through it. It is how the hostile
// checks attack a store; a suite whose Neighbour is nil skips the checks
// that need one, saying so. Each method reaches the medium through the
// driver under test (its root, its server, its bucket, its master).
//
// Optional capabilities, each its own interface a Neighbour may also
// implement: MarkerWriter, WrongTypeWriter, TreeWriter. A check whose
// capability the Neighbour lacks is skipped naming the interface.
type Neighbour interface {
	// WriteRaw stores value, byte for byte, as key's whole object: no
	// trailer, no marker, no claim.
	WriteRaw(d driver.Driver, key string, value []byte) error
}

// MarkerWriter is a Neighbour of a store that writes pending markers.
type MarkerWriter interface {
	// Marker returns a fresh marker of the exact form the store's
	// writers leave while they publish (Redis: trailer.NewMarker()).
	Marker() []byte
}

// WrongTypeWriter is a Neighbour of a store whose values have types.
type WrongTypeWriter interface {
	// WriteWrongType stores under key a value of a type no row has
	// (Redis: a list).
	WriteWrongType(d driver.Driver, key string) error
}

// TreeWriter is a Neighbour of a store that keeps folders on its medium.
type TreeWriter interface {
	// OverTree makes a fresh medium holding, where the store keeps its
	// own folders, one folder of wide names and a chain of deep nested
	// folders, and returns what opens a driver over it. The check
	// measures only open.
	OverTree(t T, wide, deep int) (open func() (driver.Driver, error), err error)
}

// The shape of the tree the tree check opens a driver over, and the bytes
// opening it may allocate. The folder is wider than a sweep's default
// budget of entries (fs: 65,536, about 11 MiB of allocation at open), so
// a walk bounded by its budget allocates the same whatever the tree holds,
// and one that is not allocates twice the bound for this tree.
const (
	TreeWide        = 200_000
	TreeDeep        = 5_000
	TreeOpenBytes   = 16 << 20
	oversizedObject = 1 << 20
)

// Names of the hostile checks, for their broken twins.
const (
	HostileRawName       = "a_neighbours_object_under_a_row_key_never_reads_ready"
	HostileReplaceName   = "a_neighbours_object_never_holds_a_put_pending"
	HostileMagicName     = "a_payload_beginning_with_a_marker_reads_back_ready"
	HostileWrongTypeName = "a_value_of_the_wrong_type_is_a_fault"
	HostileTenantName    = "nested_prefix_tenants_never_read_each_others_rows"
	HostileTreeName      = "opening_over_a_wide_and_deep_tree_is_bounded"
)

// HostileChecks returns the checks that attack a store through n, in the
// order Run runs them. A nil n skips every check but the tenant one,
// which needs no neighbour (Suite.Checks calls it with Suite.Neighbour).
func HostileChecks(n Neighbour) []Check {
	return []Check{
		{Name: HostileRawName, Group: Data, Run: func(h *Harness, _ Scenarios) { hostileRaw(h, n) }},
		{Name: HostileReplaceName, Group: Data, Run: func(h *Harness, _ Scenarios) { hostileReplace(h, n) }},
		{Name: HostileMagicName, Group: Data, Run: func(h *Harness, _ Scenarios) { hostileMagic(h, n) }},
		{Name: HostileWrongTypeName, Group: Data, Run: func(h *Harness, _ Scenarios) { hostileWrongType(h, n) }},
		{Name: HostileTenantName, Group: Data, Run: hostileTenants},
		{Name: HostileTreeName, Group: Data, Run: func(h *Harness, _ Scenarios) { hostileTree(h, n) }},
	}
}

func needNeighbour(h *Harness, n Neighbour) {
	h.T.Helper()
	if n == nil {
		h.T.Skipf("the store gives no Neighbour (Suite.Neighbour is nil): nothing writes to its medium as another client would")
	}
}

// rawValue is one object a neighbour leaves under a row's key.
type rawValue struct {
	name  string
	value []byte
	// held: a store may keep the key pending for it (an exact marker),
	// so a put over it need not succeed.
	held bool
}

// rawValues are the objects the raw checks plant: bytes no driver framed,
// of every length around a row's, and, for a store with markers, values
// that begin like a marker but are none, and a marker of the exact form.
func rawValues(n Neighbour) []rawValue {
	garbage := func(size int, seed byte) []byte {
		b := make([]byte, size)
		fill(b, seed)
		return b
	}
	out := []rawValue{
		{name: "an empty object", value: []byte{}},
		{name: "5 bytes", value: garbage(5, 1)},
		{name: "a row's length of bytes with no trailer", value: garbage(RowBytes, 2)},
		{name: "a row and 64 bytes, no trailer", value: garbage(RowBytes+64, 3)},
		{name: "an oversized object (1 MiB)", value: garbage(oversizedObject, 4)},
	}
	if m, ok := n.(MarkerWriter); ok {
		mk := m.Marker()
		nonHex := append([]byte(nil), mk...)
		nonHex[len(nonHex)-1] = 'z'
		out = append(out,
			rawValue{name: "a marker's bytes and one more", value: append(append([]byte(nil), mk...), 'x')},
			rawValue{name: "a marker less its last byte", value: mk[:len(mk)-1]},
			rawValue{name: "a marker's length ending in a non-hex byte", value: nonHex},
			rawValue{name: "a marker then a row's length of bytes", value: append(append([]byte(nil), mk...), garbage(RowBytes, 5)...)},
			rawValue{name: "a marker of the exact form", value: mk, held: true},
		)
	}
	return out
}

// hostileRaw: whatever a neighbour leaves under a row's key, a get never
// answers READY with it, and a MISS leaves the destination untouched.
func hostileRaw(h *Harness, n Neighbour) {
	needNeighbour(h, n)
	for i, v := range rawValues(n) {
		key := h.Key("raw " + v.name)
		if err := n.WriteRaw(h.D, key, v.value); err != nil {
			h.T.Fatalf("writing %s under %s as a neighbour: %v", v.name, h.RowName(key), err)
		}
		dst := h.Row(key, i%Slots)
		h.Dest(dst)
		before := Snapshot(dst)
		res, _ := h.Get(driver.Hint{}, dst)
		switch res[0].Status {
		case driver.Ready:
			h.T.Errorf("get of %s, which holds %s a neighbour wrote: READY; no object the driver did not frame is a row (want FAULT, or MISS, or NOT_READY for a marker)", h.RowName(key), v.name)
		case driver.Miss:
			if d := differs(before, Snapshot(dst)); d != "" {
				h.T.Errorf("get of %s, which holds %s a neighbour wrote: MISS, but the destination was written (%s)", h.RowName(key), v.name, d)
			}
		}
	}
}

// hostileReplace: no object a neighbour leaves under a row's key holds a
// put of the row pending: the put answers READY, and a get then reads the
// row back, or FAULT (a store may refuse to overwrite a value that is no
// row of its own, as Redis does), never NOT_READY, which asks the caller
// to retry a put that would answer the same for ever. An exact marker is
// left out: a store may hold its key until it is taken over or deleted.
func hostileReplace(h *Harness, n Neighbour) {
	needNeighbour(h, n)
	for _, v := range rawValues(n) {
		if v.held {
			continue
		}
		key := h.Key("replaced " + v.name)
		if err := n.WriteRaw(h.D, key, v.value); err != nil {
			h.T.Fatalf("writing %s under %s as a neighbour: %v", v.name, h.RowName(key), err)
		}
		src := h.Row(key, 0)
		Fill(src.Spans[0], 9)
		put, _ := h.Put(src)
		switch put[0].Status {
		case driver.Ready:
			dst := h.Row(key, 1)
			res, _ := h.Get(driver.Hint{}, dst)
			h.readBack(src, dst, res[0])
		case driver.Fault:
		default:
			h.T.Errorf("put of %s over %s a neighbour wrote: got %v, want READY (the put replaced it) or FAULT (the store keeps it); no such object is another writer's pending row", h.RowName(key), v.name, put[0])
		}
	}
}

// hostileMagic: a payload that begins with a marker's bytes, or is a
// marker of the exact form, is a row like any other: it reads back READY.
func hostileMagic(h *Harness, n Neighbour) {
	needNeighbour(h, n)
	m, ok := n.(MarkerWriter)
	if !ok {
		h.T.Skipf("the store's Neighbour writes no marker (it implements no conformance.MarkerWriter, which a store that keeps no marker in a value leaves out)")
	}
	mk := m.Marker()
	for i, c := range []struct {
		name string
		size int
	}{{"a row beginning with a marker", RowBytes}, {"a row that is a marker of the exact form", len(mk)}} {
		key := h.Key(c.name)
		src := h.RowOf(key, 2*i, c.size)
		b := src.Spans[0].Bytes()
		fill(b, byte(20+i))
		copy(b, mk)
		put, _ := h.Put(src)
		if put[0].Status != driver.Ready {
			h.T.Errorf("put of %s (%s): got %v, want READY", h.RowName(key), c.name, put[0])
			continue
		}
		dst := h.RowOf(key, 2*i+1, c.size)
		res, _ := h.Get(driver.Hint{}, dst)
		h.readBack(src, dst, res[0])
	}
}

// hostileWrongType: a value of a type no row has reads as a FAULT: it is
// something, so not a MISS, and no row, so not READY.
func hostileWrongType(h *Harness, n Neighbour) {
	needNeighbour(h, n)
	w, ok := n.(WrongTypeWriter)
	if !ok {
		h.T.Skipf("the store's Neighbour writes no value of another type (it implements no conformance.WrongTypeWriter, which a store whose values have one type leaves out)")
	}
	key := h.Key("wrong type")
	if err := w.WriteWrongType(h.D, key); err != nil {
		h.T.Fatalf("writing a value of the wrong type under %s as a neighbour: %v", h.RowName(key), err)
	}
	res, _ := h.Get(driver.Hint{}, h.Row(key, 0))
	want(h.T, res[0], driver.Fault, "get of "+h.RowName(key)+", which holds a value of the wrong type")
}

// Tenant prefixes of the tenant check: the second nests in the first as a
// path, which the key layout must keep apart.
const (
	TenantOuter = "kv"
	TenantInner = "kv/model-a"
)

// hostileTenants: rows of the same name under the nested tenant prefixes
// kv and kv/model-a are two rows: each reads back its own bytes, and the
// pattern a policy grants kv (Stem.Pattern) matches no key of kv/model-a,
// nor the reverse. Drivers take keys as they are, so this holds unless a
// driver maps two keys to one object.
func hostileTenants(h *Harness, _ Scenarios) {
	stems := make([]driver.Stem, 2)
	for i, p := range []string{TenantOuter, TenantInner} {
		s, err := driver.KeyStem(p)
		if err != nil {
			h.T.Fatalf("KeyStem(%q): %v", p, err)
		}
		stems[i] = s
	}
	name := rowName(h.T, "row")
	keys := make([]string, 2)
	for i, s := range stems {
		k, err := s.Key(name)
		if err != nil {
			h.T.Fatalf("Key under %q: %v", s.String(), err)
		}
		keys[i] = k
		h.names[k] = "row of tenant " + []string{TenantOuter, TenantInner}[i]
	}
	for i, s := range stems {
		other := keys[1-i]
		if ok, err := path.Match(s.Pattern(), other); err != nil || ok {
			h.T.Errorf("the pattern %q a policy grants tenant %q matches the other tenant's key %q (err %v)", s.Pattern(), s.String(), other, err)
		}
	}
	srcs := []driver.Row{h.stored(keys[0], 0, 31), h.stored(keys[1], 1, 32)}
	for i := range srcs { // a get each: one get of both would be a get of one key under a driver that merged them
		dst := h.Row(keys[i], 2+i)
		res, _ := h.Get(driver.Hint{}, dst)
		h.readBack(srcs[i], dst, res[0])
	}
}

// hostileTree: a driver opened over a medium where a neighbour made a
// folder of TreeWide names and a chain TreeDeep folders deep opens within
// TreeOpenBytes of allocation (runtime.MemStats, not wall time): whatever
// it does at open is bounded by its own budget, not by the tree's shape.
func hostileTree(h *Harness, n Neighbour) {
	needNeighbour(h, n)
	w, ok := n.(TreeWriter)
	if !ok {
		h.T.Skipf("the store's Neighbour makes no folders (it implements no conformance.TreeWriter, which a store that keeps no folders of its own leaves out)")
	}
	open, err := w.OverTree(h.T, TreeWide, TreeDeep)
	if err != nil {
		h.T.Fatalf("making a folder of %d names and a chain %d deep as a neighbour: %v", TreeWide, TreeDeep, err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	d, err := open()
	runtime.ReadMemStats(&after)
	if err != nil {
		h.T.Fatalf("opening a driver over a folder of %d names and a chain %d deep: %v", TreeWide, TreeDeep, err)
	}
	h.T.Cleanup(func() { _ = d.Close() })
	got := after.TotalAlloc - before.TotalAlloc
	h.T.Logf("opening over a folder of %d names and a chain %d deep allocated %d bytes", TreeWide, TreeDeep, got)
	if got > TreeOpenBytes {
		h.T.Errorf("opening a driver over a folder of %d names and a chain %d deep allocated %s, over the bound of %s: what it does at open grows with the tree a neighbour made",
			TreeWide, TreeDeep, mib(got), mib(TreeOpenBytes))
	}
}

func mib(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
