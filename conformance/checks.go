package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kvblob/kvblob/runtime/driver"
)

// rejected fails the check unless err is a driver.RejectedError for rule
// ("" for any rule); what names the call and its rows.
func rejected(t T, err error, rule string, what string) {
	t.Helper()
	var re *driver.RejectedError
	if !errors.As(err, &re) {
		if err == nil {
			t.Fatalf("%s: admitted; want it refused with a driver.RejectedError (%s)", what, ruleText(rule))
		}
		t.Fatalf("%s: returned error %q; want a driver.RejectedError (%s), the only error that certifies nothing was recorded", what, err.Error(), ruleText(rule))
	}
	if rule != "" && re.Rule != rule {
		t.Errorf("%s: refused by rule %s (%s), want rule %s", what, re.Rule, re.Reason, rule)
	}
}

func ruleText(rule string) string {
	if rule == "" {
		return "any rule"
	}
	return "rule " + rule
}

func want(t T, got driver.Result, status driver.Status, what string) {
	t.Helper()
	if got.Status != status {
		t.Errorf("%s: got %v, want %v", what, got, status)
	}
}

// stored puts one filled row under key from slot src and fails unless it is
// READY.
func (h *Harness) stored(key string, src int, seed byte) driver.Row {
	h.T.Helper()
	row := h.Row(key, src)
	Fill(row.Spans[0], seed)
	res, _ := h.Put(row)
	want(h.T, res[0], driver.Ready, "put of "+h.RowName(key))
	return row
}

// readable checks got, a get of a row whose put answered READY: it must be
// READY, unless the driver declares Evicts, when a MISS is tolerated (the
// store may have dropped the whole object to make room). It reports
// whether got is READY, so the caller compares bytes only then.
func (h *Harness) readable(got driver.Result, what string) bool {
	h.T.Helper()
	if got.Status == driver.Miss && h.Caps.Evicts {
		h.T.Logf("%s: MISS, tolerated: the driver declares Evicts", what)
		return false
	}
	want(h.T, got, driver.Ready, what)
	return got.Status == driver.Ready
}

// readBack gets dst, the row src was stored from, and checks it is READY
// with src's bytes. Under Evicts a MISS is tolerated once: the row is put
// again and read once more, and a second MISS fails, since a store that
// evicts every row the moment it is stored stores nothing.
func (h *Harness) readBack(src, dst driver.Row, res driver.Result) {
	h.T.Helper()
	what := "get of " + h.RowName(dst.Key)
	if res.Status == driver.Miss && h.Caps.Evicts {
		h.T.Logf("%s: MISS, tolerated once (Evicts): putting it again", what)
		put, _ := h.Put(src)
		want(h.T, put[0], driver.Ready, "second put of "+h.RowName(src.Key))
		got, _ := h.Get(driver.Hint{}, dst)
		res, what = got[0], what+" right after its second put (Evicts tolerates one MISS, not a store that keeps nothing)"
	}
	want(h.T, res, driver.Ready, what)
	if res.Status == driver.Ready {
		if d := differs(Snapshot(src), Snapshot(dst)); d != "" {
			h.T.Errorf("%s: READY, but the bytes differ from what the put stored (%s)", what, d)
		}
	}
}

// held waits until a call held by a scenario entered the SDK.
func (h *Harness) held(entered <-chan struct{}, what string) {
	h.T.Helper()
	select {
	case <-entered:
	case <-time.After(h.Deadline):
		h.T.Fatalf("%s: test timed out: the call never reached the SDK within %v", what, h.Deadline)
	}
}

// checks is the suite, in the order Run runs it.
func checks() []Check {
	return []Check{
		{Name: "round_trip_is_byte_for_byte", Group: Data, Run: func(h *Harness, _ Scenarios) {
			a, b := h.stored(h.Key("a"), 0, 1), h.stored(h.Key("b"), 1, 2)
			dst := []driver.Row{h.Row(a.Key, 2), h.Row(b.Key, 3)}
			res, _ := h.Get(driver.Hint{}, dst...)
			for i, src := range []driver.Row{a, b} {
				h.readBack(src, dst[i], res[i])
			}
		}},
		{Name: "access_ends_after_a_put_and_a_get", Group: Lifecycle, Run: func(h *Harness, _ Scenarios) {
			row := h.Row(h.Key("a"), 0)
			_, put := h.Put(row)
			_, get := h.Get(driver.Hint{}, h.Row(row.Key, 1))
			for _, o := range []struct {
				op   driver.Operation
				what string
			}{{put, "put"}, {get, "get"}} {
				if o.op.AccessUnprovable() {
					h.T.Errorf("%s of %s: unprovable, though nothing was staged to lose its evidence", o.what, h.RowName(row.Key))
				} else if !WaitAccess(o.op, h.Deadline) {
					h.T.Errorf("%s of %s: finished, but never proved its access ended within %v", o.what, h.RowName(row.Key), h.Deadline)
				}
			}
		}},
		{Name: "a_miss_leaves_the_destination_untouched", Group: Data, Run: func(h *Harness, _ Scenarios) {
			dst := h.Row(h.Key("absent"), 0)
			h.Dest(dst)
			before := Snapshot(dst)
			what := "get of " + h.RowName(dst.Key)
			op, err := h.D.Get(h.Ctx, []driver.Row{dst}, driver.Hint{})
			if err != nil {
				h.T.Fatalf("%s: %s", what, CallError("Get", err))
			}
			res := h.Wait(op, what, 1)
			if res[0].Status == driver.Miss {
				if d := differs(before, Snapshot(dst)); d != "" {
					h.T.Errorf("%s: MISS, but the destination was written (%s); a MISS leaves it untouched", what, d)
				}
			}
		}},
		{Name: "absent_keys_answer_as_AbsentIsMiss_says", Group: Data, Run: func(h *Harness, _ Scenarios) {
			key := h.Key("absent")
			res, _ := h.Get(driver.Hint{}, h.Row(key, 0))
			what := "get of the absent " + h.RowName(key)
			if h.Caps.AbsentIsMiss {
				want(h.T, res[0], driver.Miss, what+" (AbsentIsMiss declared)")
			} else if res[0].Status != driver.Miss && res[0].Status != driver.Fault {
				h.T.Errorf("%s: got %v, want MISS or FAULT", what, res[0])
			}
		}},
		{Name: "put_never_writes_its_sources", Group: Lifecycle, Run: func(h *Harness, _ Scenarios) {
			row := h.Row(h.Key("a"), 0)
			Fill(row.Spans[0], 5)
			before := Snapshot(row)
			_, op := h.Put(row)
			WaitAccess(op, h.Deadline)
			if d := differs(before, Snapshot(row)); d != "" {
				h.T.Errorf("put of %s wrote its source (%s); a put only reads its spans", h.RowName(row.Key), d)
			}
		}},
		{Name: "writes_stay_inside_their_spans", Group: Data, Run: func(h *Harness, _ Scenarios) {
			h.stored(h.Key("a"), 0, 3)
			h.Mem.Reset() // every byte a canary again, no window open
			_, op := h.Get(driver.Hint{}, h.Row(h.Key("a"), 5))
			WaitAccess(op, h.Deadline)
			if err := h.Mem.Check(); err != nil {
				h.T.Errorf("get of %s wrote outside its span: %v", h.RowName(h.Key("a")), err)
			}
		}},
		{Name: "a_device_region_is_refused_unless_declared", Group: Lifecycle, Run: func(h *Harness, _ Scenarios) {
			dev := &driver.Region{Name: "device", Kind: driver.Device, Layout: driver.Layout{SlotBytes: SlotBytes, Slots: 1}}
			reg, err := h.D.Register(dev)
			if h.Caps.DeviceMemory {
				if err != nil {
					h.T.Errorf("Register of a device region: %v; DeviceMemory is declared", err)
				} else {
					_ = h.D.Unregister(reg)
				}
				return
			}
			rejected(h.T, err, driver.RuleDeviceRegion, "Register of a device region without DeviceMemory")
		}},
		{Name: "hints_are_refused_unless_declared", Group: Lifecycle, Run: func(h *Harness, _ Scenarios) {
			row := h.Row(h.Key("a"), 0)
			what := "hinted get of " + h.RowName(row.Key)
			op, err := h.D.Get(h.Ctx, []driver.Row{row}, driver.NewHint([]byte("node-1")))
			if h.Caps.Hints {
				if err != nil {
					h.T.Errorf("%s: %s (Hints is declared)", what, CallError("Get", err))
				} else {
					h.Wait(op, what, 1)
				}
				return
			}
			rejected(h.T, err, driver.RuleHint, what+" without Hints")
		}},
		{Name: "multi_span_rows_are_refused_unless_declared", Group: Lifecycle, Run: func(h *Harness, _ Scenarios) {
			row := driver.Row{Key: h.Key("a"), Spans: []driver.Span{h.Span(0), h.Span(1)}}
			what := "put of the two-span " + h.RowName(row.Key)
			op, err := h.D.Put(h.Ctx, []driver.Row{row})
			if !h.Caps.MultiSpan {
				rejected(h.T, err, driver.RuleMultiSpan, what+" without MultiSpan")
				return
			}
			if err != nil {
				h.T.Fatalf("%s: %s (MultiSpan is declared)", what, CallError("Put", err))
			}
			h.Wait(op, what, 1)
		}},
		{Name: "multi_span_rows_round_trip_when_declared", Group: Data, Run: func(h *Harness, _ Scenarios) {
			if !h.Caps.MultiSpan {
				h.T.Skipf("the driver does not declare MultiSpan")
			}
			row := driver.Row{Key: h.Key("a"), Spans: []driver.Span{h.Span(0), h.Span(1)}}
			Fill(row.Spans[0], 1)
			Fill(row.Spans[1], 2)
			res, _ := h.Put(row)
			want(h.T, res[0], driver.Ready, "put of the two-span "+h.RowName(row.Key))
			dst := driver.Row{Key: row.Key, Spans: []driver.Span{h.Span(2), h.Span(3)}}
			res, _ = h.Get(driver.Hint{}, dst)
			h.readBack(row, dst, res[0])
		}},
		{Name: "MaxRowsPerOp_is_honoured", Group: Lifecycle, Run: func(h *Harness, _ Scenarios) {
			max := h.Caps.MaxRowsPerOp
			n := max + 1
			if max == 0 {
				n = Slots
			}
			rows := make([]driver.Row, n)
			for i := range rows {
				rows[i] = h.Row(h.Key(string(rune('a'+i))), i%Slots)
			}
			if max == 0 {
				h.Put(rows...) // admitted, one valid result per row
				return
			}
			_, err := h.D.Put(h.Ctx, rows)
			rejected(h.T, err, driver.RuleTooManyRows, fmt.Sprintf("put of MaxRowsPerOp+1 = %d rows", n))
			h.Put(rows[:max]...)
		}},
		{Name: "a_repeated_key_is_rejected_and_nothing_recorded", Group: Lifecycle, Run: func(h *Harness, _ Scenarios) {
			a, b := h.Row(h.Key("a"), 0), h.Row(h.Key("b"), 1)
			_, err := h.D.Put(h.Ctx, []driver.Row{a, b, h.Row(a.Key, 2)})
			rejected(h.T, err, driver.RuleRepeatedKey, fmt.Sprintf("put of %s, %s, %s", h.RowName(a.Key), h.RowName(b.Key), h.RowName(a.Key)))
			res, _ := h.Get(driver.Hint{}, h.Row(b.Key, 3))
			if res[0].Status == driver.Ready {
				h.T.Errorf("get of %s: READY after the put that named it was rejected; a rejection certifies nothing was recorded", h.RowName(b.Key))
			}
		}},
		{Name: "an_empty_key_is_rejected_and_nothing_recorded", Group: Lifecycle, Run: func(h *Harness, _ Scenarios) {
			a := h.Row(h.Key("a"), 0)
			_, err := h.D.Put(h.Ctx, []driver.Row{a, h.Row("", 1)})
			rejected(h.T, err, driver.RuleEmptyKey, fmt.Sprintf("put of %s and %s", h.RowName(a.Key), h.RowName("")))
			res, _ := h.Get(driver.Hint{}, h.Row(a.Key, 3))
			if res[0].Status == driver.Ready {
				h.T.Errorf("get of %s: READY after the put that named it was rejected; a rejection certifies nothing was recorded", h.RowName(a.Key))
			}
		}},
		{Name: "a_key_past_MaxKeyBytes_is_rejected_and_nothing_recorded", Group: Lifecycle, Run: func(h *Harness, _ Scenarios) {
			// Every store's bound, whatever its spec says: one byte more
			// than driver.MaxKeyBytes is refused by Put and Get alike.
			a := h.Row(h.Key("a"), 0)
			long, err := driver.Key(keyPrefix, bytes.Repeat([]byte{'k'}, (driver.MaxKeyBytes+1-len(keyPrefix+"/v1/"))/2))
			if err != nil || len(long) != driver.MaxKeyBytes+1 {
				h.T.Fatalf("a key of %d bytes (%v); want driver.MaxKeyBytes+1", len(long), err)
			}
			what := fmt.Sprintf("put of %s and a key of %d bytes", h.RowName(a.Key), len(long))
			_, err = h.D.Put(h.Ctx, []driver.Row{a, h.Row(long, 1)})
			rejected(h.T, err, driver.RuleKeyTooLong, what)
			_, err = h.D.Get(h.Ctx, []driver.Row{h.Row(long, 2)}, driver.Hint{})
			rejected(h.T, err, driver.RuleKeyTooLong, fmt.Sprintf("get of a key of %d bytes", len(long)))
			res, _ := h.Get(driver.Hint{}, h.Row(a.Key, 3))
			if res[0].Status == driver.Ready {
				h.T.Errorf("get of %s: READY after the put that named it was rejected; a rejection certifies nothing was recorded", h.RowName(a.Key))
			}
		}},
		{Name: "a_span_outside_a_live_registration_is_rejected", Group: Lifecycle, Run: func(h *Harness, _ Scenarios) {
			other := &driver.Region{Name: "unregistered", Kind: driver.Host, Layout: driver.Layout{SlotBytes: SlotBytes, Slots: 1}, Mem: make([]byte, SlotBytes)}
			key := h.Key("a")
			_, err := h.D.Put(h.Ctx, []driver.Row{{Key: key, Spans: []driver.Span{other.Slot(0)}}})
			rejected(h.T, err, driver.RuleSpanOutside, "put of "+h.RowName(key)+" from an unregistered region")
		}},
		{Name: "cancel_yields_CANCELLED_only_for_rows_that_never_started", Group: Data, Run: func(h *Harness, _ Scenarios) {
			rows := make([]driver.Row, 4)
			for i := range rows {
				rows[i] = h.Row(h.Key(string(rune('a'+i))), i)
				Fill(rows[i].Spans[0], byte(i))
			}
			what := "cancelled put of " + h.Rows(rows)
			op, err := h.D.Put(h.Ctx, rows)
			if err != nil {
				h.T.Fatalf("%s: %s", what, CallError("Put", err))
			}
			op.Cancel()
			res := h.Wait(op, what, len(rows))
			WaitAccess(op, h.Deadline)
			for i, r := range res {
				got, _ := h.Get(driver.Hint{}, h.Row(rows[i].Key, 8+i))
				switch r.Status {
				case driver.Cancelled:
					if got[0].Status == driver.Ready {
						h.T.Errorf("%s: %s answered CANCELLED, but a get of it is READY; CANCELLED is only for rows that never started", what, h.RowName(rows[i].Key))
					}
				case driver.Ready:
					h.readable(got[0], "get of "+h.RowName(rows[i].Key)+" after its cancelled put answered READY")
				}
			}
		}},
		{Name: "results_and_access_end_are_independent", Group: Data, Needs: HoldAccess, Run: func(h *Harness, s Scenarios) {
			release := s.HoldAccess(h.D)
			defer release()
			key := h.Key("a")
			res, op := h.Put(h.Row(key, 0))
			want(h.T, res[0], driver.Ready, "put of "+h.RowName(key)+" with its access held")
			if op.AccessEnded() {
				h.T.Fatalf("put of %s: access reported ended while the store still holds it; a result is not an access end", h.RowName(key))
			}
			release()
			if !WaitAccess(op, h.Deadline) {
				h.T.Errorf("put of %s: access never ended within %v after the store let go", h.RowName(key), h.Deadline)
			}
		}},
		{Name: "unregister_is_refused_while_an_operation_may_touch_the_region", Group: Lifecycle, Needs: HoldAccess, Run: func(h *Harness, s Scenarios) {
			release := s.HoldAccess(h.D)
			defer release()
			key := h.Key("a")
			_, op := h.Put(h.Row(key, 0))
			rejected(h.T, h.D.Unregister(h.Reg), "", "Unregister while the put of "+h.RowName(key)+" holds its access")
			release()
			WaitAccess(op, h.Deadline)
			if !h.D.Drain(Within(h.Deadline)) {
				h.T.Fatalf("Drain answered false after the put of %s ended its access", h.RowName(key))
			}
			if err := h.D.Unregister(h.Reg); err != nil {
				h.T.Errorf("Unregister after a drain that answered true: %v", err)
			}
			h.Reg = nil
		}},
		{Name: "unregister_is_refused_for_every_region_of_an_operation", Group: Lifecycle, Needs: HoldAccess, Run: func(h *Harness, s Scenarios) {
			// One put over rows in two regions: the second row's region is
			// as pinned as the first's (a driver that pins only the first
			// row's region frees the other while the store may read it).
			second, reg := h.secondRegion()
			release := s.HoldAccess(h.D)
			defer release()
			a, b := h.Key("a"), h.Key("b")
			rows := []driver.Row{h.Row(a, 0), {Key: b, Spans: []driver.Span{{Region: second, Offset: 0, Length: RowBytes}}}}
			_, op := h.Put(rows...)
			rejected(h.T, h.D.Unregister(reg), "", "Unregister of the second region while the put of "+h.Rows(rows)+" holds its access")
			rejected(h.T, h.D.Unregister(h.Reg), "", "Unregister of the first region while the put of "+h.Rows(rows)+" holds its access")
			release()
			WaitAccess(op, h.Deadline)
		}},
		{Name: "unregister_is_refused_while_a_call_is_in_progress", Group: Lifecycle, Needs: HoldGet, Run: func(h *Harness, s Scenarios) {
			key := h.Key("a")
			h.stored(key, 0, 1)
			entered, release := s.HoldGet(h.D, key)
			done := make(chan struct{})
			go func() {
				defer close(done)
				if op, err := h.D.Get(h.Ctx, []driver.Row{h.Row(key, 1)}, driver.Hint{}); err == nil {
					WaitResults(op, h.Deadline)
				}
			}()
			defer func() { release(); <-done }()
			h.held(entered, "get of "+h.RowName(key))
			rejected(h.T, h.D.Unregister(h.Reg), "", "Unregister while the get of "+h.RowName(key)+" is inside the SDK")
		}},
		{Name: "drain_waits_for_work_in_progress", Group: Lifecycle, Needs: HoldGet, Run: func(h *Harness, s Scenarios) {
			key := h.Key("a")
			h.stored(key, 0, 1)
			entered, release := s.HoldGet(h.D, key)
			defer release()
			done := make(chan error, 1)
			go func() {
				_, err := h.D.Get(h.Ctx, []driver.Row{h.Row(key, 1)}, driver.Hint{})
				done <- err
			}()
			what := "get of " + h.RowName(key)
			h.held(entered, what)
			if h.D.Drain(Within(50 * time.Millisecond)) {
				h.T.Errorf("Drain answered true while the %s is held inside the SDK", what)
			}
			release()
			if !h.D.Drain(Within(h.Deadline)) {
				h.T.Errorf("Drain did not answer true within %v after the %s was released", h.Deadline, what)
			}
			if err := <-done; err != nil {
				h.T.Errorf("%s: %s", what, CallError("Get", err))
			}
		}},
		{Name: "a_held_get_does_not_block_another", Group: Data, Needs: HoldGet, Run: func(h *Harness, s Scenarios) {
			a, b := h.Key("a"), h.Key("b")
			h.stored(a, 0, 1)
			h.stored(b, 1, 2)
			entered, release := s.HoldGet(h.D, a)
			first := make(chan struct{})
			go func() {
				defer close(first)
				if op, err := h.D.Get(h.Ctx, []driver.Row{h.Row(a, 2)}, driver.Hint{}); err == nil {
					WaitResults(op, h.Deadline)
				}
			}()
			defer func() { release(); <-first }()
			h.held(entered, "get of "+h.RowName(a))
			got := make(chan []driver.Result, 1)
			go func() {
				op, err := h.D.Get(h.Ctx, []driver.Row{h.Row(b, 3)}, driver.Hint{})
				if err != nil {
					got <- nil
					return
				}
				r, _ := WaitResults(op, h.Deadline)
				got <- r
			}()
			select {
			case r := <-got:
				if len(r) == 1 && r[0].Status == driver.Miss && h.Caps.Evicts {
					h.T.Logf("get of %s beside the held get of %s: MISS, tolerated: the driver declares Evicts", h.RowName(b), h.RowName(a))
				} else if len(r) != 1 || r[0].Status != driver.Ready {
					h.T.Errorf("get of %s beside the held get of %s: got %v, want READY", h.RowName(b), h.RowName(a), r)
				}
			case <-time.After(h.Deadline):
				h.T.Errorf("get of %s: no results within %v while the get of %s was held inside the SDK; a held get blocked another", h.RowName(b), h.Deadline, h.RowName(a))
				release()
				<-got
			}
		}},
		{Name: "drain_answers_false_at_once_while_an_operation_is_unprovable", Group: Lifecycle, Needs: Unprovable, Run: func(h *Harness, s Scenarios) {
			key := h.Key("a")
			s.Unprovable(h.D, key)
			_, op := h.Put(h.Row(key, 0))
			// A store may publish its results before it learns that the
			// evidence is lost (the two questions are apart): wait for the
			// access to settle one way or the other.
			if !waitAccessSettled(op, h.Deadline) || !op.AccessUnprovable() {
				h.T.Fatalf("put of %s: the staged loss of evidence did not make it unprovable", h.RowName(key))
			}
			if op.AccessEnded() {
				h.T.Errorf("put of %s: unprovable, yet it reports its access ended", h.RowName(key))
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan bool, 1)
			go func() { done <- h.D.Drain(ctx) }()
			h.T.Cleanup(func() { cancel(); <-done }) // a drain that waits ends with the check
			select {
			case ok := <-done:
				done <- ok
				if ok {
					h.T.Errorf("Drain answered true while the put of %s is unprovable", h.RowName(key))
				}
			case <-time.After(h.Deadline):
				h.T.Errorf("Drain waited %v while the put of %s is unprovable, instead of answering false at once", h.Deadline, h.RowName(key))
			}
		}},
		{Name: "an_unprovable_operation_keeps_its_region_registered", Group: Lifecycle, Needs: Unprovable, Run: func(h *Harness, s Scenarios) {
			key := h.Key("a")
			s.Unprovable(h.D, key)
			h.Put(h.Row(key, 0))
			rejected(h.T, h.D.Unregister(h.Reg), "", "Unregister while the put of "+h.RowName(key)+" is unprovable")
		}},
		{Name: "close_only_when_idle_and_unregistered", Group: Lifecycle, Run: func(h *Harness, _ Scenarios) {
			_, op := h.Put(h.Row(h.Key("a"), 0))
			if !WaitAccess(op, h.Deadline) {
				h.T.Fatalf("the put's access never ended within %v", h.Deadline)
			}
			if err := h.D.Close(); err == nil {
				h.T.Fatalf("Close succeeded with a region registered")
			}
			if err := h.D.Unregister(h.Reg); err != nil {
				h.T.Fatalf("Unregister after the put's access ended: %v", err)
			}
			h.Reg = nil
			// No Drain: every call ended, so nothing can touch memory.
			if err := h.D.Close(); err != nil {
				h.T.Errorf("Close of an idle driver (its one put ended, its region unregistered) without a Drain: %v; a driver whose calls all ended closes without one", err)
			}
		}},
		{Name: "a_key_another_client_is_writing_is_NOT_READY", Group: Data, Needs: Writing, Run: func(h *Harness, s Scenarios) {
			key := h.Key("a")
			finish := s.Writing(h.D, key)
			defer finish()
			res, _ := h.Get(driver.Hint{}, h.Row(key, 0))
			want(h.T, res[0], driver.NotReady, "get of "+h.RowName(key)+" while another client writes it")
			put, _ := h.Put(h.Row(key, 1))
			if put[0].Status == driver.Ready || put[0].Status == driver.Fault {
				h.T.Errorf("put of %s while another client writes it: got %v, want NOT_READY or DECLINED", h.RowName(key), put[0])
			}
		}},
		{Name: "a_full_store_declines", Group: Data, Needs: Full, Run: func(h *Harness, s Scenarios) {
			key := h.Key("a")
			s.Full(h.D, key)
			res, _ := h.Put(h.Row(key, 0))
			want(h.T, res[0], driver.Declined, "put of "+h.RowName(key)+" into a full store")
			if res[0].Status == driver.Declined && res[0].Text == "" {
				h.T.Errorf("put of %s into a full store: DECLINED says nothing of the store's answer; a DECLINED carries the answer that refused the row (Result.Code and Text, as the spec's mapping gives them)", h.RowName(key))
			}
		}},
		{Name: "a_failure_inside_a_put_is_a_row_fault", Group: Data, Needs: FailPut, Run: func(h *Harness, s Scenarios) {
			key := h.Key("a")
			s.FailPut(h.D, key)
			res, _ := h.Put(h.Row(key, 0), h.Row(h.Key("b"), 1))
			want(h.T, res[0], driver.Fault, "put of "+h.RowName(key)+" that failed inside the SDK")
		}},
		{Name: "a_failing_read_is_a_row_fault", Group: Data, Needs: FailRead, Run: func(h *Harness, s Scenarios) {
			key := h.Key("a")
			h.stored(key, 0, 1)
			s.FailRead(h.D, key)
			res, _ := h.Get(driver.Hint{}, h.Row(key, 1))
			want(h.T, res[0], driver.Fault, "get of "+h.RowName(key)+" that failed inside the SDK")
		}},
		{Name: "a_declined_put_leaves_the_key_writable", Group: Data, Needs: Full, Run: func(h *Harness, s Scenarios) {
			leavesWritable(h, s.Full, false)
		}},
		{Name: "a_faulted_put_leaves_the_key_writable", Group: Data, Needs: FailPut, Run: func(h *Harness, s Scenarios) {
			leavesWritable(h, s.FailPut, true)
		}},
		{Name: "a_READY_put_over_another_length_stored_the_new_bytes", Group: Data, Run: func(h *Harness, _ Scenarios) {
			// A put answers READY only for the bytes it stored. Put a row
			// of RowBytes, then one of half that under the same key: if
			// the second answers READY, a get of the new length must be
			// READY with the new bytes. Whatever the second put answered,
			// a get of the new length that is READY must deliver them,
			// since no other bytes of that length were put under the key.
			key := h.Key("a")
			h.stored(key, 0, 1)
			n := RowBytes / 2
			src := h.RowOf(key, 1, n)
			Fill(src.Spans[0], 2)
			what := fmt.Sprintf("put of %s with %d bytes over its %d", h.RowName(key), n, RowBytes)
			put, _ := h.Put(src)
			dst := h.RowOf(key, 2, n)
			got, _ := h.Get(driver.Hint{}, dst)
			same := differs(Snapshot(src), Snapshot(dst)) == ""
			switch {
			case put[0].Status == driver.Ready && got[0].Status == driver.Miss && h.Caps.Evicts:
				h.T.Logf("%s: READY, then a get of %d bytes answered MISS, tolerated: the driver declares Evicts", what, n)
			case put[0].Status == driver.Ready && got[0].Status != driver.Ready:
				h.T.Errorf("%s: READY, but a get of %d bytes answered %v; READY promises the new bytes are stored", what, n, got[0])
			case got[0].Status == driver.Ready && !same:
				h.T.Errorf("%s: %v, then a get of %d bytes answered READY with bytes no put stored", what, put[0], n)
			}
		}},
	}
}

// leavesWritable stages a put of a key that fails (DECLINED or FAULT) and
// checks that the key is not left looking mid-write: neither a get nor a
// retry of the put answers NOT_READY. With retried, the staged failure
// was the failed put's alone (FailPut), so the retry, of the same bytes as
// a runtime retries it, must be READY and a get must read those bytes: the
// key is writable, not merely free of a marker. (A store kept full, Full,
// declines the retry too, so the declined check asks only that nothing
// looks mid-write.)
func leavesWritable(h *Harness, stage func(d driver.Driver, key string), retried bool) {
	key := h.Key("a")
	stage(h.D, key)
	src := h.Row(key, 0)
	Fill(src.Spans[0], 9)
	first, _ := h.Put(src)
	if st := first[0].Status; st != driver.Declined && st != driver.Fault {
		h.T.Fatalf("put of %s: the staged failure answered %v, want DECLINED or FAULT; nothing to check after it", h.RowName(key), first[0])
	}
	what := fmt.Sprintf("after the put of %s answered %v", h.RowName(key), first[0])
	got, _ := h.Get(driver.Hint{}, h.Row(key, 1))
	if got[0].Status == driver.NotReady {
		h.T.Errorf("%s, a get of it answered NOT_READY; a failed put must not leave its key looking mid-write", what)
	}
	again, _ := h.Put(src)
	switch {
	case again[0].Status == driver.NotReady:
		h.T.Errorf("%s, a retry of the put answered NOT_READY; a failed put must leave its key writable", what)
	case !retried:
	case again[0].Status != driver.Ready:
		h.T.Errorf("%s, a retry of the put answered %v; the failure was that put's alone, so the key must take the retry (READY)", what, again[0])
	default:
		dst := h.Row(key, 2)
		res, _ := h.Get(driver.Hint{}, dst)
		h.readBack(src, dst, res[0])
	}
}
