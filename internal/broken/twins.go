package broken

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/kvblob/kvblob/runtime/driver"
)

// Twin returns the constructor of the broken driver that breaks exactly
// the rule of the conformance check named check, wrapping a sound driver.
func Twin(check string) (func(inner driver.Driver) driver.Driver, bool) {
	f, ok := twins[check]
	return f, ok
}

// Names returns the names of the checks that have a twin, sorted.
func Names() []string {
	out := make([]string, 0, len(twins))
	for name := range twins {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// twins maps each conformance check's name to its twin's constructor.
var twins = map[string]func(inner driver.Driver) driver.Driver{
	"round_trip_is_byte_for_byte": func(in driver.Driver) driver.Driver {
		d := &Driver{Inner: in}
		d.op = func(o *Op) {
			if !o.Put {
				o.after = func(res []driver.Result) { // corrupt what a get delivered
					for i, r := range res {
						if r.Status == driver.Ready {
							o.Rows[i].Spans[0].Bytes()[0] ^= 0xff
						}
					}
				}
			}
		}
		return d
	},
	"access_ends_after_a_put_and_a_get": func(in driver.Driver) driver.Driver {
		return &Driver{Inner: in, op: func(o *Op) { o.accessEnded = func() bool { return false } }}
	},
	"a_miss_leaves_the_destination_untouched": func(in driver.Driver) driver.Driver {
		d := &Driver{Inner: in}
		d.op = func(o *Op) {
			if !o.Put {
				o.after = func(res []driver.Result) {
					for i, r := range res {
						if r.Status == driver.Miss {
							clear(o.Rows[i].Spans[0].Bytes())
						}
					}
				}
			}
		}
		return d
	},
	"absent_keys_answer_as_AbsentIsMiss_says": func(in driver.Driver) driver.Driver {
		return &Driver{Inner: in, op: func(o *Op) {
			o.poll = mapResults(o, func(_ int, r driver.Result) driver.Result {
				if r.Status == driver.Miss {
					return driver.FaultResult(-1, "absent")
				}
				return r
			})
		}}
	},
	"put_never_writes_its_sources": func(in driver.Driver) driver.Driver {
		return &Driver{Inner: in, op: func(o *Op) {
			if o.Put {
				o.after = func([]driver.Result) { o.Rows[0].Spans[0].Bytes()[1] ^= 0xff }
			}
		}}
	},
	"writes_stay_inside_their_spans": func(in driver.Driver) driver.Driver {
		return &Driver{Inner: in, op: func(o *Op) {
			if !o.Put {
				o.after = func([]driver.Result) {
					s := o.Rows[0].Spans[0]
					s.Region.Mem[s.Offset+s.Length] ^= 0xff // one byte past the span
				}
			}
		}}
	},
	"a_device_region_is_refused_unless_declared": func(in driver.Driver) driver.Driver {
		d := &Driver{Inner: in}
		d.register = func(r *driver.Region) (driver.Registration, error) {
			if r.Kind == driver.Device {
				return fakeRegistration{r}, nil
			}
			return in.Register(r)
		}
		d.unregister = func(reg driver.Registration) error {
			if _, ok := reg.(fakeRegistration); ok {
				return nil
			}
			return in.Unregister(reg)
		}
		return d
	},
	"hints_are_refused_unless_declared": func(in driver.Driver) driver.Driver {
		d := &Driver{Inner: in, caps: func(c driver.Capabilities) driver.Capabilities { c.Hints = false; return c }}
		d.get = func(ctx context.Context, rows []driver.Row, _ driver.Hint) (driver.Operation, error) {
			return d.wrap(in.Get(ctx, rows, driver.Hint{}))(rows, false) // swallows the hint
		}
		return d
	},
	"multi_span_rows_are_refused_unless_declared": func(in driver.Driver) driver.Driver {
		return &Driver{Inner: in, caps: func(c driver.Capabilities) driver.Capabilities { c.MultiSpan = false; return c }}
	},
	"multi_span_rows_round_trip_when_declared": func(in driver.Driver) driver.Driver {
		return &Driver{Inner: in, op: func(o *Op) {
			if !o.Put {
				o.after = func(res []driver.Result) { // loses a byte of every second span it delivers
					for i, r := range res {
						if spans := o.Rows[i].Spans; r.Status == driver.Ready && len(spans) > 1 {
							spans[1].Bytes()[0] ^= 0xff
						}
					}
				}
			}
		}}
	},
	"MaxRowsPerOp_is_honoured": func(in driver.Driver) driver.Driver {
		return &Driver{Inner: in, caps: func(c driver.Capabilities) driver.Capabilities { c.MaxRowsPerOp = 2; return c }}
	},
	"a_repeated_key_is_rejected_and_nothing_recorded":         recordsBeforeRejecting(driver.RuleRepeatedKey),
	"an_empty_key_is_rejected_and_nothing_recorded":           recordsBeforeRejecting(driver.RuleEmptyKey),
	"a_key_past_MaxKeyBytes_is_rejected_and_nothing_recorded": recordsBeforeRejecting(driver.RuleKeyTooLong),
	"a_span_outside_a_live_registration_is_rejected": func(in driver.Driver) driver.Driver {
		d := &Driver{Inner: in}
		d.put = func(ctx context.Context, rows []driver.Row) (driver.Operation, error) {
			op, err := in.Put(ctx, rows)
			if re, ok := err.(*driver.RejectedError); ok && re.Rule == driver.RuleSpanOutside {
				return doneOp{res: ready(len(rows))}, nil // pretends the rows were stored
			}
			return op, err
		}
		return d
	},
	"cancel_yields_CANCELLED_only_for_rows_that_never_started": func(in driver.Driver) driver.Driver {
		return &Driver{Inner: in, op: func(o *Op) {
			var mu sync.Mutex
			cancelled := false
			o.cancel = func() { mu.Lock(); cancelled = true; mu.Unlock(); o.Inner.Cancel() }
			o.poll = mapResults(o, func(_ int, r driver.Result) driver.Result {
				mu.Lock()
				defer mu.Unlock()
				if cancelled {
					return driver.Result{Status: driver.Cancelled}
				}
				return r
			})
		}}
	},
	"results_and_access_end_are_independent": func(in driver.Driver) driver.Driver {
		return &Driver{Inner: in, op: func(o *Op) {
			o.accessEnded = func() bool { _, done := o.Inner.Poll(); return done }
		}}
	},
	"unregister_is_refused_while_an_operation_may_touch_the_region": func(in driver.Driver) driver.Driver {
		d := &Driver{Inner: in}
		d.unregister = unregisterLying(d, in, false)
		return d
	},
	"unregister_is_refused_for_every_region_of_an_operation": func(in driver.Driver) driver.Driver {
		d := &Driver{Inner: in}
		d.unregister = func(reg driver.Registration) error { // pins only each operation's first row's region
			err := in.Unregister(reg)
			if err != nil && !d.firstRegionOfAnOpenOp(reg.Region()) {
				return nil
			}
			return err
		}
		return d
	},
	"unregister_is_refused_while_a_call_is_in_progress": func(in driver.Driver) driver.Driver {
		d := &Driver{Inner: in}
		d.unregister = unregisterLying(d, in, false)
		return d
	},
	"an_unprovable_operation_keeps_its_region_registered": func(in driver.Driver) driver.Driver {
		d := &Driver{Inner: in}
		d.unregister = unregisterLying(d, in, true)
		return d
	},
	"drain_waits_for_work_in_progress": func(in driver.Driver) driver.Driver {
		d := &Driver{Inner: in}
		d.drain = func(ctx context.Context) bool {
			if dl, ok := ctx.Deadline(); ok && time.Until(dl) < time.Second {
				return true // answers before the work finished
			}
			return in.Drain(ctx)
		}
		return d
	},
	"a_held_get_does_not_block_another": func(in driver.Driver) driver.Driver {
		d := &Driver{Inner: in}
		var mu sync.Mutex
		d.get = func(ctx context.Context, rows []driver.Row, hint driver.Hint) (driver.Operation, error) {
			mu.Lock() // one get at a time, held for the whole call
			defer mu.Unlock()
			op, err := in.Get(ctx, rows, hint)
			if err == nil {
				for _, done := op.Poll(); !done; _, done = op.Poll() {
					time.Sleep(time.Millisecond)
				}
			}
			return op, err
		}
		return d
	},
	"drain_answers_false_at_once_while_an_operation_is_unprovable": func(in driver.Driver) driver.Driver {
		d := &Driver{Inner: in}
		d.drain = func(ctx context.Context) bool {
			if d.anyUnprovable() {
				<-ctx.Done() // waits instead of answering at once
				return false
			}
			return in.Drain(ctx)
		}
		return d
	},
	"close_only_when_idle_and_unregistered": func(in driver.Driver) driver.Driver {
		closed := false
		return &Driver{Inner: in, close: func() error {
			if !closed {
				closed = true
				return nil // closes with regions registered
			}
			return in.Close()
		}}
	},
	"a_key_another_client_is_writing_is_NOT_READY": statusAs(driver.NotReady, driver.Result{Status: driver.Miss}),
	"a_full_store_declines":                        statusAs(driver.Declined, driver.FaultResult(-3, "full")),
	"a_failing_read_is_a_row_fault":                statusAs(driver.Fault, driver.Result{Status: driver.Miss}),
	"a_failure_inside_a_put_is_a_row_fault": func(in driver.Driver) driver.Driver {
		d := &Driver{Inner: in}
		d.put = func(ctx context.Context, rows []driver.Row) (driver.Operation, error) {
			op, err := in.Put(ctx, rows)
			if err != nil {
				return nil, err
			}
			res, _ := waitDone(op)
			for _, r := range res {
				if r.Status == driver.Fault {
					return nil, errStore // an error after the operation was recorded
				}
			}
			return op, nil
		}
		return d
	},
	"a_declined_put_leaves_the_key_writable":               leavesMarker,
	"a_faulted_put_leaves_the_key_writable":                poisonsFailedKeys,
	"a_READY_put_over_another_length_stored_the_new_bytes": putIfAbsent,
}

// leavesMarker leaves a key that a put failed (DECLINED or FAULT) looking
// mid-write: every later operation answers NOT_READY for it, as a store
// would that left its claim marker behind.
func leavesMarker(in driver.Driver) driver.Driver {
	var mu sync.Mutex
	marked := map[string]*Op{} // key -> the failed put that left the marker
	return &Driver{Inner: in, op: func(o *Op) {
		o.poll = mapResults(o, func(i int, r driver.Result) driver.Result {
			mu.Lock()
			defer mu.Unlock()
			if by, ok := marked[o.Rows[i].Key]; ok && by != o {
				return driver.Result{Status: driver.NotReady}
			}
			return r
		})
		if o.Put {
			o.after = func(res []driver.Result) {
				mu.Lock()
				defer mu.Unlock()
				for i, r := range res {
					if r.Status == driver.Declined || r.Status == driver.Fault {
						marked[o.Rows[i].Key] = o
					}
				}
			}
		}
	}}
}

// poisonsFailedKeys answers FAULT for every later put of a key whose put
// failed (DECLINED or FAULT), never NOT_READY: a key the store can no
// longer take, which no marker shows.
func poisonsFailedKeys(in driver.Driver) driver.Driver {
	var mu sync.Mutex
	poisoned := map[string]*Op{} // key -> the failed put that poisoned it
	return &Driver{Inner: in, op: func(o *Op) {
		if !o.Put {
			return
		}
		o.poll = mapResults(o, func(i int, r driver.Result) driver.Result {
			mu.Lock()
			defer mu.Unlock()
			if by, ok := poisoned[o.Rows[i].Key]; ok && by != o {
				return driver.FaultResult(0, "the key was poisoned by a failed put")
			}
			return r
		})
		o.after = func(res []driver.Result) {
			mu.Lock()
			defer mu.Unlock()
			for i, r := range res {
				if r.Status == driver.Declined || r.Status == driver.Fault {
					if _, ok := poisoned[o.Rows[i].Key]; !ok {
						poisoned[o.Rows[i].Key] = o
					}
				}
			}
		}
	}}
}

// putIfAbsent answers READY for a put of a key it already stored, without
// storing anything: a store that cannot replace an object and calls an
// existing key READY whatever its length.
func putIfAbsent(in driver.Driver) driver.Driver {
	var mu sync.Mutex
	stored := map[string]bool{}
	d := &Driver{Inner: in}
	d.op = func(o *Op) {
		if !o.Put {
			return
		}
		o.after = func(res []driver.Result) {
			mu.Lock()
			defer mu.Unlock()
			for i, r := range res {
				if r.Status == driver.Ready {
					stored[o.Rows[i].Key] = true
				}
			}
		}
	}
	d.put = func(ctx context.Context, rows []driver.Row) (driver.Operation, error) {
		mu.Lock()
		all := len(rows) > 0
		for _, r := range rows {
			all = all && stored[r.Key]
		}
		mu.Unlock()
		if all {
			return doneOp{res: ready(len(rows))}, nil
		}
		return d.wrap(in.Put(ctx, rows))(rows, true)
	}
	return d
}

func ready(n int) []driver.Result {
	out := make([]driver.Result, n)
	for i := range out {
		out[i] = driver.Result{Status: driver.Ready}
	}
	return out
}

func waitDone(op driver.Operation) ([]driver.Result, bool) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if res, done := op.Poll(); done {
			return res, true
		}
		time.Sleep(time.Millisecond)
	}
	return nil, false
}

// recordsBeforeRejecting stores the rows it can before rejecting a batch
// for rule: the rejection no longer certifies that nothing escaped.
func recordsBeforeRejecting(rule string) func(driver.Driver) driver.Driver {
	return func(in driver.Driver) driver.Driver {
		d := &Driver{Inner: in}
		d.put = func(ctx context.Context, rows []driver.Row) (driver.Operation, error) {
			op, err := in.Put(ctx, rows)
			re, ok := err.(*driver.RejectedError)
			if !ok || re.Rule != rule {
				return op, err
			}
			seen := map[string]bool{}
			var keep []driver.Row
			for _, r := range rows {
				if r.Key != "" && !seen[r.Key] && len(r.Key) <= driver.MaxKeyBytes {
					seen[r.Key] = true
					keep = append(keep, r)
				}
			}
			if op, err := in.Put(ctx, keep); err == nil {
				waitDone(op)
			}
			return nil, re
		}
		return d
	}
}

// unregisterLying claims an unregister succeeded when the sound driver
// refused it: under an unprovable operation (unprovable) or under an open
// one (not unprovable).
func unregisterLying(d *Driver, in driver.Driver, unprovable bool) func(driver.Registration) error {
	return func(reg driver.Registration) error {
		err := in.Unregister(reg)
		if err != nil && d.anyUnprovable() == unprovable {
			return nil
		}
		return err
	}
}

// statusAs reports every row answered from with to instead.
func statusAs(from driver.Status, to driver.Result) func(driver.Driver) driver.Driver {
	return func(in driver.Driver) driver.Driver {
		return &Driver{Inner: in, op: func(o *Op) {
			o.poll = mapResults(o, func(_ int, r driver.Result) driver.Result {
				if r.Status == from {
					return to
				}
				return r
			})
		}}
	}
}
