package conformance

import (
	"errors"
	"testing"
	"time"

	"github.com/kvblob/kvblob/runtime/driver"
)

// Check is one rule of the contract, observed through a driver.
type Check struct {
	Name string
	// Needs names the scenario hook the check stages ("" for none).
	Needs string
	Run   func(h *Harness, s Scenarios)
}

func rejected(t T, err error, rule string, what string) {
	t.Helper()
	var re *driver.RejectedError
	if !errors.As(err, &re) {
		t.Fatalf("%s: want a driver.RejectedError, got %v", what, err)
	}
	if rule != "" && re.Rule != rule {
		t.Errorf("%s: rejected by rule %q, want %q (%s)", what, re.Rule, rule, re.Reason)
	}
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
	want(h.T, res[0], driver.Ready, "put of "+key)
	return row
}

// Checks is the suite, in the order Run runs it.
var Checks = []Check{
	{Name: "round_trip_is_byte_for_byte", Run: func(h *Harness, _ Scenarios) {
		a, b := h.stored(h.Key("a"), 0, 1), h.stored(h.Key("b"), 1, 2)
		dst := []driver.Row{h.Row(a.Key, 2), h.Row(b.Key, 3)}
		res, _ := h.Get(driver.Hint{}, dst...)
		for i := range res {
			want(h.T, res[i], driver.Ready, "get")
		}
		if d := differs(Snapshot(a, b), Snapshot(dst...)); d != "" {
			h.T.Errorf("round trip changed the bytes: %s", d)
		}
	}},
	{Name: "access_ends_after_a_round_trip", Run: func(h *Harness, _ Scenarios) {
		_, put := h.Put(h.Row(h.Key("a"), 0))
		_, get := h.Get(driver.Hint{}, h.Row(h.Key("a"), 1))
		for _, op := range []driver.Operation{put, get} {
			if !WaitAccess(op, Deadline) {
				h.T.Errorf("a successful operation never proved its access ended")
			}
			if op.AccessUnprovable() {
				h.T.Errorf("a successful operation is unprovable")
			}
		}
	}},
	{Name: "a_miss_leaves_the_destination_untouched", Run: func(h *Harness, _ Scenarios) {
		dst := h.Row(h.Key("absent"), 0)
		h.Dest(dst)
		before := Snapshot(dst)
		op, err := h.D.Get(h.Ctx, []driver.Row{dst}, driver.Hint{})
		if err != nil {
			h.T.Fatal(err)
		}
		res := h.Wait(op, 1)
		if res[0].Status == driver.Miss {
			if d := differs(before, Snapshot(dst)); d != "" {
				h.T.Errorf("a MISS wrote its destination: %s", d)
			}
		}
	}},
	{Name: "absent_keys_answer_as_AbsentIsMiss_says", Run: func(h *Harness, _ Scenarios) {
		res, _ := h.Get(driver.Hint{}, h.Row(h.Key("absent"), 0))
		if h.Caps.AbsentIsMiss {
			want(h.T, res[0], driver.Miss, "absent key with AbsentIsMiss")
		} else if res[0].Status != driver.Miss && res[0].Status != driver.Fault {
			h.T.Errorf("absent key: got %v, want MISS or FAULT", res[0])
		}
	}},
	{Name: "put_never_writes_its_sources", Run: func(h *Harness, _ Scenarios) {
		row := h.Row(h.Key("a"), 0)
		Fill(row.Spans[0], 5)
		before := Snapshot(row)
		_, op := h.Put(row)
		WaitAccess(op, Deadline)
		if d := differs(before, Snapshot(row)); d != "" {
			h.T.Errorf("put wrote its source: %s", d)
		}
	}},
	{Name: "writes_stay_inside_their_spans", Run: func(h *Harness, _ Scenarios) {
		src := h.stored(h.Key("a"), 0, 3)
		_ = src
		h.Mem.Reset() // every byte a canary again, no window open
		_, op := h.Get(driver.Hint{}, h.Row(h.Key("a"), 5))
		WaitAccess(op, Deadline)
		if err := h.Mem.Check(); err != nil {
			h.T.Error(err)
		}
	}},
	{Name: "a_device_region_is_refused_unless_declared", Run: func(h *Harness, _ Scenarios) {
		dev := &driver.Region{Name: "device", Kind: driver.Device, Layout: driver.Layout{SlotBytes: SlotBytes, Slots: 1}}
		reg, err := h.D.Register(dev)
		if h.Caps.DeviceMemory {
			if err != nil {
				h.T.Errorf("DeviceMemory declared, but Register(device) = %v", err)
			} else {
				_ = h.D.Unregister(reg)
			}
			return
		}
		rejected(h.T, err, driver.RuleDeviceRegion, "Register(device)")
	}},
	{Name: "hints_are_refused_unless_declared", Run: func(h *Harness, _ Scenarios) {
		row := h.Row(h.Key("a"), 0)
		op, err := h.D.Get(h.Ctx, []driver.Row{row}, driver.NewHint([]byte("node-1")))
		if h.Caps.Hints {
			if err != nil {
				h.T.Errorf("Hints declared, but a hinted get = %v", err)
			} else {
				h.Wait(op, 1)
			}
			return
		}
		rejected(h.T, err, driver.RuleHint, "hinted get")
	}},
	{Name: "multi_span_rows_only_when_declared", Run: func(h *Harness, _ Scenarios) {
		row := driver.Row{Key: h.Key("a"), Spans: []driver.Span{h.Span(0), h.Span(1)}}
		Fill(row.Spans[0], 1)
		Fill(row.Spans[1], 2)
		op, err := h.D.Put(h.Ctx, []driver.Row{row})
		if !h.Caps.MultiSpan {
			rejected(h.T, err, driver.RuleMultiSpan, "multi-span put")
			return
		}
		if err != nil {
			h.T.Fatalf("MultiSpan declared, but a two-span put = %v", err)
		}
		want(h.T, h.Wait(op, 1)[0], driver.Ready, "two-span put")
		dst := driver.Row{Key: row.Key, Spans: []driver.Span{h.Span(2), h.Span(3)}}
		res, _ := h.Get(driver.Hint{}, dst)
		want(h.T, res[0], driver.Ready, "two-span get")
		if d := differs(Snapshot(row), Snapshot(dst)); d != "" {
			h.T.Errorf("two-span round trip: %s", d)
		}
	}},
	{Name: "MaxRowsPerOp_is_honoured", Run: func(h *Harness, _ Scenarios) {
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
			res, _ := h.Put(rows...)
			for i := range res {
				want(h.T, res[i], driver.Ready, "unbounded put")
			}
			return
		}
		_, err := h.D.Put(h.Ctx, rows)
		rejected(h.T, err, driver.RuleTooManyRows, "put of MaxRowsPerOp+1 rows")
		res, _ := h.Put(rows[:max]...)
		if len(res) != max {
			h.T.Errorf("put of MaxRowsPerOp rows answered %d results", len(res))
		}
	}},
	{Name: "a_repeated_key_is_rejected_and_nothing_recorded", Run: func(h *Harness, _ Scenarios) {
		a, b := h.Row(h.Key("a"), 0), h.Row(h.Key("b"), 1)
		_, err := h.D.Put(h.Ctx, []driver.Row{a, b, h.Row(a.Key, 2)})
		rejected(h.T, err, driver.RuleRepeatedKey, "put with a repeated key")
		res, _ := h.Get(driver.Hint{}, h.Row(b.Key, 3))
		if res[0].Status == driver.Ready {
			h.T.Errorf("a rejected put recorded row %s", b.Key)
		}
	}},
	{Name: "an_empty_key_is_rejected_and_nothing_recorded", Run: func(h *Harness, _ Scenarios) {
		a := h.Row(h.Key("a"), 0)
		_, err := h.D.Put(h.Ctx, []driver.Row{a, h.Row("", 1)})
		rejected(h.T, err, driver.RuleEmptyKey, "put with an empty key")
		res, _ := h.Get(driver.Hint{}, h.Row(a.Key, 3))
		if res[0].Status == driver.Ready {
			h.T.Errorf("a rejected put recorded row %s", a.Key)
		}
	}},
	{Name: "a_span_outside_a_live_registration_is_rejected", Run: func(h *Harness, _ Scenarios) {
		other := &driver.Region{Name: "unregistered", Kind: driver.Host, Layout: driver.Layout{SlotBytes: SlotBytes, Slots: 1}, Mem: make([]byte, SlotBytes)}
		_, err := h.D.Put(h.Ctx, []driver.Row{{Key: h.Key("a"), Spans: []driver.Span{other.Slot(0)}}})
		rejected(h.T, err, driver.RuleSpanOutside, "put from an unregistered region")
	}},
	{Name: "cancel_yields_CANCELLED_only_for_rows_that_never_started", Run: func(h *Harness, _ Scenarios) {
		rows := make([]driver.Row, 4)
		for i := range rows {
			rows[i] = h.Row(h.Key(string(rune('a'+i))), i)
			Fill(rows[i].Spans[0], byte(i))
		}
		op, err := h.D.Put(h.Ctx, rows)
		if err != nil {
			h.T.Fatal(err)
		}
		op.Cancel()
		res := h.Wait(op, len(rows))
		WaitAccess(op, Deadline)
		for i, r := range res {
			got, _ := h.Get(driver.Hint{}, h.Row(rows[i].Key, 8+i))
			switch r.Status {
			case driver.Cancelled:
				if got[0].Status == driver.Ready {
					h.T.Errorf("row %d answered CANCELLED but was stored", i)
				}
			case driver.Ready:
				want(h.T, got[0], driver.Ready, "a READY row read back")
			}
		}
	}},
	{Name: "results_and_access_end_are_independent", Needs: "HoldAccess", Run: func(h *Harness, s Scenarios) {
		release := s.HoldAccess(h.D)
		defer release()
		res, op := h.Put(h.Row(h.Key("a"), 0))
		want(h.T, res[0], driver.Ready, "put with access held")
		if op.AccessEnded() {
			h.T.Fatalf("access ended while the store still holds it: a result is not an access end")
		}
		release()
		if !WaitAccess(op, Deadline) {
			h.T.Errorf("access never ended after the store let go")
		}
	}},
	{Name: "unregister_is_refused_while_an_operation_may_touch_the_region", Needs: "HoldAccess", Run: func(h *Harness, s Scenarios) {
		release := s.HoldAccess(h.D)
		defer release()
		_, op := h.Put(h.Row(h.Key("a"), 0))
		rejected(h.T, h.D.Unregister(h.Reg), "", "Unregister with access open")
		release()
		WaitAccess(op, Deadline)
		if !h.D.Drain(Within(Deadline)) {
			h.T.Fatal("drain failed after the access ended")
		}
		if err := h.D.Unregister(h.Reg); err != nil {
			h.T.Errorf("Unregister after drain = %v", err)
		}
		h.Reg = nil
	}},
	{Name: "unregister_is_refused_while_a_call_is_in_progress", Needs: "HoldGet", Run: func(h *Harness, s Scenarios) {
		key := h.Key("a")
		h.stored(key, 0, 1)
		entered, release := s.HoldGet(h.D, key)
		defer release()
		done := make(chan struct{})
		go func() {
			defer close(done)
			if op, err := h.D.Get(h.Ctx, []driver.Row{h.Row(key, 1)}, driver.Hint{}); err == nil {
				WaitResults(op, Deadline)
			}
		}()
		select {
		case <-entered:
		case <-time.After(Deadline):
			h.T.Fatal("test timed out: the get never reached the SDK")
		}
		rejected(h.T, h.D.Unregister(h.Reg), "", "Unregister while a get is inside the SDK")
		release()
		<-done
	}},
	{Name: "drain_waits_for_work_in_progress", Needs: "HoldGet", Run: func(h *Harness, s Scenarios) {
		key := h.Key("a")
		h.stored(key, 0, 1)
		entered, release := s.HoldGet(h.D, key)
		defer release()
		done := make(chan driver.Operation, 1)
		go func() {
			op, err := h.D.Get(h.Ctx, []driver.Row{h.Row(key, 1)}, driver.Hint{})
			if err != nil {
				done <- nil
				return
			}
			done <- op
		}()
		select {
		case <-entered:
		case <-time.After(Deadline):
			h.T.Fatal("test timed out: the get never reached the SDK")
		}
		if h.D.Drain(Within(50 * time.Millisecond)) {
			h.T.Errorf("drain returned true while a get is held inside the SDK")
		}
		release()
		if !h.D.Drain(Within(Deadline)) {
			h.T.Errorf("drain did not return true after the get was released")
		}
		if op := <-done; op == nil {
			h.T.Error("the held get was refused")
		}
	}},
	{Name: "a_held_get_does_not_block_another", Needs: "HoldGet", Run: func(h *Harness, s Scenarios) {
		a, b := h.Key("a"), h.Key("b")
		h.stored(a, 0, 1)
		h.stored(b, 1, 2)
		entered, release := s.HoldGet(h.D, a)
		defer release()
		go func() {
			if op, err := h.D.Get(h.Ctx, []driver.Row{h.Row(a, 2)}, driver.Hint{}); err == nil {
				WaitResults(op, Deadline)
			}
		}()
		select {
		case <-entered:
		case <-time.After(Deadline):
			h.T.Fatal("test timed out: the get never reached the SDK")
		}
		got := make(chan []driver.Result, 1)
		go func() {
			op, err := h.D.Get(h.Ctx, []driver.Row{h.Row(b, 3)}, driver.Hint{})
			if err != nil {
				got <- nil
				return
			}
			r, _ := WaitResults(op, Deadline)
			got <- r
		}()
		select {
		case r := <-got:
			if len(r) != 1 || r[0].Status != driver.Ready {
				h.T.Errorf("the second get answered %v", r)
			}
		case <-time.After(Deadline):
			h.T.Error("a get held inside the SDK blocked another get")
		}
		release()
	}},
	{Name: "drain_answers_false_at_once_while_an_operation_is_unprovable", Needs: "Unprovable", Run: func(h *Harness, s Scenarios) {
		key := h.Key("a")
		s.Unprovable(h.D, key)
		_, op := h.Put(h.Row(key, 0))
		if !op.AccessUnprovable() {
			h.T.Fatalf("the staged operation is not unprovable")
		}
		if op.AccessEnded() {
			h.T.Errorf("an unprovable operation reports its access ended")
		}
		done, finished := make(chan bool, 1), make(chan struct{})
		go func() { done <- h.D.Drain(Within(time.Hour)); close(finished) }()
		h.T.Cleanup(func() { // do not leave the drain running past the check
			select {
			case <-finished:
			case <-time.After(2 * Deadline):
			}
		})
		select {
		case ok := <-done:
			if ok {
				h.T.Errorf("drain returned true with an unprovable operation")
			}
		case <-time.After(Deadline):
			h.T.Errorf("drain waited with an unprovable operation instead of answering false at once")
		}
	}},
	{Name: "an_unprovable_operation_keeps_its_region_registered", Needs: "Unprovable", Run: func(h *Harness, s Scenarios) {
		key := h.Key("a")
		s.Unprovable(h.D, key)
		h.Put(h.Row(key, 0))
		rejected(h.T, h.D.Unregister(h.Reg), "", "Unregister under an unprovable operation")
	}},
	{Name: "close_only_after_drain_and_unregister", Run: func(h *Harness, _ Scenarios) {
		h.Put(h.Row(h.Key("a"), 0))
		if err := h.D.Close(); err == nil {
			h.T.Fatalf("Close succeeded with a region registered and no drain")
		}
		if !h.D.Drain(Within(Deadline)) {
			h.T.Fatal("drain failed")
		}
		if err := h.D.Close(); err == nil {
			h.T.Fatalf("Close succeeded with a region still registered")
		}
		if err := h.D.Unregister(h.Reg); err != nil {
			h.T.Fatal(err)
		}
		h.Reg = nil
		if err := h.D.Close(); err != nil {
			h.T.Errorf("Close after drain and unregister = %v", err)
		}
	}},
	{Name: "a_key_another_client_is_writing_is_NOT_READY", Needs: "Writing", Run: func(h *Harness, s Scenarios) {
		key := h.Key("a")
		finish := s.Writing(h.D, key)
		defer finish()
		res, _ := h.Get(driver.Hint{}, h.Row(key, 0))
		want(h.T, res[0], driver.NotReady, "get of a key being written")
		put, _ := h.Put(h.Row(key, 1))
		if put[0].Status == driver.Ready || put[0].Status == driver.Fault {
			h.T.Errorf("put of a key another client is writing: got %v, want NOT_READY or DECLINED", put[0])
		}
	}},
	{Name: "a_full_store_declines", Needs: "Full", Run: func(h *Harness, s Scenarios) {
		key := h.Key("a")
		s.Full(h.D, key)
		res, _ := h.Put(h.Row(key, 0))
		want(h.T, res[0], driver.Declined, "put into a full store")
	}},
	{Name: "a_failure_inside_a_put_is_a_row_fault", Needs: "FailPut", Run: func(h *Harness, s Scenarios) {
		key := h.Key("a")
		s.FailPut(h.D, key)
		res, _ := h.Put(h.Row(key, 0), h.Row(h.Key("b"), 1))
		want(h.T, res[0], driver.Fault, "put that failed inside the SDK")
	}},
	{Name: "a_failing_read_is_a_row_fault", Needs: "FailRead", Run: func(h *Harness, s Scenarios) {
		key := h.Key("a")
		h.stored(key, 0, 1)
		s.FailRead(h.D, key)
		res, _ := h.Get(driver.Hint{}, h.Row(key, 1))
		want(h.T, res[0], driver.Fault, "a failing read")
	}},
}

// Run runs every check against drivers from f, one fresh driver per check,
// skipping those whose scenario s does not provide.
func Run(t *testing.T, f Factory, s Scenarios) {
	t.Helper()
	for _, c := range Checks {
		t.Run(c.Name, func(t *testing.T) { RunCheck(t, c, f, s) })
	}
}

// RunCheck runs one check.
func RunCheck(t T, c Check, f Factory, s Scenarios) {
	t.Helper()
	if c.Needs != "" && !s.has(c.Needs) {
		t.Skipf("the store stages no %s scenario", c.Needs)
	}
	c.Run(NewHarness(t, f), s)
}

// CheckByName returns the check named name.
func CheckByName(name string) (Check, bool) {
	for _, c := range Checks {
		if c.Name == name {
			return c, true
		}
	}
	return Check{}, false
}

func (s Scenarios) has(name string) bool {
	switch name {
	case "HoldGet":
		return s.HoldGet != nil
	case "Writing":
		return s.Writing != nil
	case "Full":
		return s.Full != nil
	case "FailPut":
		return s.FailPut != nil
	case "FailRead":
		return s.FailRead != nil
	case "Unprovable":
		return s.Unprovable != nil
	case "HoldAccess":
		return s.HoldAccess != nil
	}
	return false
}
