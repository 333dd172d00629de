package broken

import (
	"bytes"
	"context"
	"path"
	"sort"

	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/trailer"
)

// HostileTwin returns the constructor of the broken driver that breaks
// exactly the rule of the hostile check named check (conformance's
// HostileChecks), wrapping a sound driver.
func HostileTwin(check string) (func(inner driver.Driver) driver.Driver, bool) {
	f, ok := hostileTwins[check]
	return f, ok
}

// HostileNames returns the names of the hostile checks that have a twin,
// sorted.
func HostileNames() []string {
	out := make([]string, 0, len(hostileTwins))
	for name := range hostileTwins {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// treeSweepBytes is what the tree check's twin allocates at open: what a
// sweep that read a whole folder of 100,000 names would.
const treeSweepBytes = 64 << 20

// hostileTwins maps each hostile check's name to its twin's constructor.
// The names are conformance's Hostile*Name constants (this package may not
// import conformance, which imports it in its tests).
var hostileTwins = map[string]func(inner driver.Driver) driver.Driver{
	// A driver that takes any object under a row's key for the row.
	"a_neighbours_object_under_a_row_key_never_reads_ready": func(in driver.Driver) driver.Driver {
		return &Driver{Inner: in, op: func(o *Op) {
			if !o.Put {
				o.poll = mapResults(o, func(_ int, r driver.Result) driver.Result {
					if r.Status == driver.Fault || r.Status == driver.Miss || r.Status == driver.NotReady {
						return driver.Result{Status: driver.Ready}
					}
					return r
				})
			}
		}}
	},
	// A driver whose put takes whatever a key holds for another writer's
	// pending row.
	"a_neighbours_object_never_holds_a_put_pending": func(in driver.Driver) driver.Driver {
		d := &Driver{Inner: in}
		d.put = func(_ context.Context, rows []driver.Row) (driver.Operation, error) {
			res := make([]driver.Result, len(rows))
			for i := range res {
				res[i] = driver.Result{Status: driver.NotReady}
			}
			return doneOp{res}, nil
		}
		return d
	},
	// A driver that takes a value beginning with the marker magic for a
	// pending marker, whatever follows it.
	"a_payload_beginning_with_a_marker_reads_back_ready": func(in driver.Driver) driver.Driver {
		return &Driver{Inner: in, op: func(o *Op) {
			if !o.Put {
				o.poll = mapResults(o, func(i int, r driver.Result) driver.Result {
					if r.Status == driver.Ready && bytes.HasPrefix(o.Rows[i].Spans[0].Bytes(), []byte(trailer.MarkerMagic)) {
						return driver.Result{Status: driver.NotReady}
					}
					return r
				})
			}
		}}
	},
	// A driver that calls a key holding a value of the wrong type absent.
	"a_value_of_the_wrong_type_is_a_fault": func(in driver.Driver) driver.Driver {
		return &Driver{Inner: in, op: func(o *Op) {
			if !o.Put {
				o.poll = mapResults(o, func(_ int, r driver.Result) driver.Result {
					if r.Status == driver.Fault {
						return driver.Result{Status: driver.Miss}
					}
					return r
				})
			}
		}}
	},
	// A driver that stores a row by its name alone, dropping its prefix,
	// so tenants' rows of one name are one object.
	"nested_prefix_tenants_never_read_each_others_rows": func(in driver.Driver) driver.Driver {
		d := &Driver{Inner: in}
		d.put = func(ctx context.Context, rows []driver.Row) (driver.Operation, error) {
			return d.wrap(d.Inner.Put(ctx, tenantless(rows)))(rows, true)
		}
		d.get = func(ctx context.Context, rows []driver.Row, hint driver.Hint) (driver.Operation, error) {
			return d.wrap(d.Inner.Get(ctx, tenantless(rows), hint))(rows, false)
		}
		return d
	},
	// A driver whose open reads a whole folder into memory.
	"opening_over_a_wide_and_deep_tree_is_bounded": func(in driver.Driver) driver.Driver {
		return &treeDriver{Driver: Driver{Inner: in}, read: make([]byte, treeSweepBytes)}
	},
}

type treeDriver struct {
	Driver
	read []byte // what the open read, kept so it is allocated
}

// tenantless rewrites each row's key to its name under one fixed prefix.
func tenantless(rows []driver.Row) []driver.Row {
	out := make([]driver.Row, len(rows))
	for i, r := range rows {
		r.Key = "tenantless/v1/" + path.Base(r.Key)
		out[i] = r
	}
	return out
}
