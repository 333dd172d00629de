package mooncake

import (
	"context"

	gen "github.com/kvblob/kvblob/generated/mooncake"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/rules"
)

// Put starts a session per key, writes the started rows in one scatter,
// ends the sessions of rows written whole and revokes the rest.
//
// A key this driver's own put is writing is NOT_READY at once; a key whose
// session it left open is READY when batch_is_exist shows its object
// complete, NOT_READY otherwise. It never starts a session for a key it
// holds.
func (d *Driver) Put(_ context.Context, rows []driver.Row) (driver.Operation, error) {
	call, err := d.life.Begin(rows, func(live func(*driver.Region) bool) error { return gen.AdmitPut(rows, live) })
	if err != nil {
		return nil, err
	}
	o := newOp(len(rows), true)
	defer o.settle(call)

	var start, askHeld []int
	d.mu.Lock()
	for i, r := range rows {
		switch d.held[r.Key] {
		case heldPut:
			o.results[i] = driver.Result{Status: driver.NotReady}
		case heldOpen, heldKeep:
			askHeld = append(askHeld, i)
		default:
			d.held[r.Key] = heldPut
			start = append(start, i)
		}
	}
	d.mu.Unlock()

	exists := map[int]rules.Mapping{} // rows whose result waits on batch_is_exist
	for _, i := range askHeld {
		exists[i] = rules.Mapping{Result: driver.FaultResult(0, "batch_is_exist failed for a key whose session this driver left open"),
			FollowUp: rules.FollowAskExistence, IfExists: driver.Ready, IfAbsent: driver.NotReady}
	}
	set := func(i int, h hold) { // settle how the driver holds row i's key
		d.mu.Lock()
		if h == 0 {
			delete(d.held, rows[i].Key)
		} else {
			d.held[rows[i].Key] = h
		}
		d.mu.Unlock()
	}

	scatter := d.startSessions(rows, start, o, exists, set)
	toEnd, toRevoke := d.scatter(rows, scatter, o, set)
	toRevoke = append(toRevoke, d.endSessions(rows, toEnd, o, set)...)
	d.revoke(rows, toRevoke, set)
	d.askExistence(rows, exists, o)
	return o, nil
}

// startSessions starts a session per key; it returns the rows to scatter.
func (d *Driver) startSessions(rows []driver.Row, start []int, o *op, exists map[int]rules.Mapping, set func(int, hold)) []int {
	if len(start) == 0 {
		return nil
	}
	sizes := make([]int64, len(start))
	for k, i := range start {
		sizes[k] = rows[i].Bytes()
	}
	codes, err := d.sdk.BatchPutSessionStart(keysOf(rows, start), sizes)
	if err != nil || len(codes) != len(start) {
		// Which sessions started is unknown. Nothing was written into any,
		// so revoke them all at once: a key whose revoke answers is free
		// again (a failed put leaves its key writable); one whose revoke
		// fails too is left for drain.
		for _, i := range start {
			o.results[i] = raised("batch_put_session_start", err, len(codes), len(start))
		}
		d.revoke(rows, start, set)
		return nil
	}
	var scatter []int
	for k, i := range start {
		m := gen.MapBatchPutSessionStart(codes[k])
		switch {
		case m.Continue:
			scatter = append(scatter, i)
			continue
		case m.FollowUp == rules.FollowAskExistence:
			exists[i] = m
		default:
			o.results[i] = m.Result
		}
		set(i, 0) // no session of ours was started
	}
	return scatter
}

// scatter writes every started row in one call. Its return ends its access
// whatever it answers; a raise or a wrong count leaves access unproven.
func (d *Driver) scatter(rows []driver.Row, idx []int, o *op, set func(int, hold)) (toEnd, toRevoke []int) {
	if len(idx) == 0 {
		return nil, nil
	}
	n := 0
	for _, i := range idx {
		n += len(rows[i].Spans)
	}
	flat := make([]Buffer, 0, n) // every row's buffers in one allocation
	bufs := make([][]Buffer, len(idx))
	for k, i := range idx {
		at := len(flat)
		for _, s := range rows[i].Spans {
			flat = append(flat, spanBuffer(s))
		}
		bufs[k] = flat[at:len(flat):len(flat)]
	}
	answers, err := d.sdk.BatchPutFromMultiBufferRanges(keysOf(rows, idx), bufs)
	if err != nil || len(answers) != len(idx) {
		for _, i := range idx {
			o.results[i] = raised("batch_put_from_multi_buffer_ranges", err, len(answers), len(idx))
			// The scatter may still be writing, as after TRANSFER_FAIL: never
			// revoke (a drain's sweep could run beside this call and free
			// space a stale transfer then lands in).
			set(i, heldKeep)
		}
		o.ended, o.unprovable = false, true
		return nil, nil
	}
	kept := false
	for k, i := range idx {
		m := gen.MapBatchPutFromMultiBufferRanges(answers[k], rows[i].Bytes())
		kept = kept || m.KeepsAccess
		switch {
		case m.Continue:
			toEnd = append(toEnd, i)
		case m.FollowUp == rules.FollowKeepOpen:
			o.results[i] = m.Result
			set(i, heldKeep)
		default:
			o.results[i] = m.Result
			toRevoke = append(toRevoke, i)
		}
	}
	if !gen.BatchPutFromMultiBufferRangesRule.Access.Ended(kept) {
		o.ended, o.unprovable = false, true
	}
	return toEnd, toRevoke
}

// endSessions marks rows written whole complete; it returns the rows whose
// end failed in a way that needs a revoke.
func (d *Driver) endSessions(rows []driver.Row, idx []int, o *op, set func(int, hold)) (toRevoke []int) {
	if len(idx) == 0 {
		return nil
	}
	codes, err := d.sdk.BatchPutSessionEnd(keysOf(rows, idx))
	if err != nil || len(codes) != len(idx) {
		for _, i := range idx {
			o.results[i] = raised("batch_put_session_end", err, len(codes), len(idx))
			set(i, heldOpen)
		}
		return nil
	}
	for k, i := range idx {
		m := gen.MapBatchPutSessionEnd(codes[k])
		o.results[i] = m.Result
		switch {
		case m.Result.Status == driver.Ready:
			set(i, 0)
		case m.FollowUp == rules.FollowRevokeInDrain:
			set(i, heldOpen) // an unanswered end may still complete
		default:
			toRevoke = append(toRevoke, i)
		}
	}
	return toRevoke
}

// revoke revokes the sessions of rows not written whole; a session whose
// revoke fails is left open for drain, and one whose revoke answered that it
// outlives any revoke is kept (afterRevoke).
func (d *Driver) revoke(rows []driver.Row, idx []int, set func(int, hold)) {
	if len(idx) == 0 {
		return
	}
	codes, err := d.sdk.BatchPutSessionRevoke(keysOf(rows, idx))
	for k, i := range idx {
		if err != nil || len(codes) != len(idx) {
			set(i, heldOpen)
		} else {
			h, _ := afterRevoke(codes[k])
			set(i, h)
		}
	}
}

// askExistence settles the rows that wait on batch_is_exist.
func (d *Driver) askExistence(rows []driver.Row, exists map[int]rules.Mapping, o *op) {
	if len(exists) == 0 {
		return
	}
	idx := make([]int, 0, len(exists))
	for i := range rows {
		if _, ok := exists[i]; ok {
			idx = append(idx, i)
		}
	}
	answers, err := d.sdk.BatchIsExist(keysOf(rows, idx))
	for k, i := range idx {
		m := exists[i]
		switch {
		case err != nil || len(answers) != len(idx) || answers[k] < 0:
			o.results[i] = m.Result
		case answers[k] == 1:
			o.results[i] = driver.Result{Status: m.IfExists}
		default:
			o.results[i] = driver.Result{Status: m.IfAbsent}
		}
		if o.results[i].Status == driver.Fault && o.results[i].Text == "" {
			o.results[i] = driver.FaultResult(0, "batch_is_exist could not confirm the key")
		}
	}
}

// Get reads each row's object into its span with one batch_get_into, and
// rereads once the rows whose read lease expired. Access ends only when no
// row's answer keeps it (TRANSFER_FAIL).
func (d *Driver) Get(_ context.Context, rows []driver.Row, hint driver.Hint) (driver.Operation, error) {
	call, err := d.life.Begin(rows, func(live func(*driver.Region) bool) error { return gen.AdmitGet(rows, hint, live) })
	if err != nil {
		return nil, err
	}
	o := newOp(len(rows), false)
	defer o.settle(call)
	all := make([]int, len(rows))
	for i := range all {
		all[i] = i
	}
	kept, ok, reread := d.getInto(rows, all, o, false)
	if ok && len(reread) > 0 {
		var k bool
		k, ok, _ = d.getInto(rows, reread, o, true)
		kept = kept || k
	}
	if ok && gen.BatchGetIntoRule.Access.Ended(kept) {
		o.ended = true
	} else {
		o.unprovable = true
	}
	return o, nil
}

// getInto runs one batch_get_into over rows idx and maps the answers. It
// reports whether an answer kept access, whether the call answered at all
// (no raise, right count), and the rows to reread.
func (d *Driver) getInto(rows []driver.Row, idx []int, o *op, rereading bool) (kept, ok bool, reread []int) {
	bufs := make([]Buffer, len(idx))
	for k, i := range idx {
		bufs[k] = spanBuffer(rows[i].Spans[0])
	}
	answers, err := d.sdk.BatchGetInto(keysOf(rows, idx), bufs)
	if err != nil || len(answers) != len(idx) {
		for _, i := range idx {
			o.results[i] = raised("batch_get_into", err, len(answers), len(idx))
		}
		return false, false, nil
	}
	if !rereading && allWhole(answers, rows, idx) { // the common case, batch-wise
		for _, i := range idx {
			o.results[i] = driver.Result{Status: driver.Ready}
		}
		return false, true, nil
	}
	for k, i := range idx {
		m := gen.MapBatchGetInto(answers[k], rows[i].Bytes())
		if rereading {
			m = rules.AfterReread(m)
		}
		kept = kept || m.KeepsAccess
		o.results[i] = m.Result
		if m.FollowUp == rules.FollowRereadOnce {
			reread = append(reread, i)
		}
	}
	return kept, true, reread
}

func allWhole(answers []int64, rows []driver.Row, idx []int) bool {
	for k, i := range idx {
		if answers[k] != rows[i].Spans[0].Length {
			return false
		}
	}
	return true
}
