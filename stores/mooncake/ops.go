package mooncake

import (
	"context"

	"github.com/kvblob/kvblob/internal/reuse"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/rules"
)

// scratch is one Put's or Get's working space: the rows of each stage, the
// keys, sizes and buffers it hands the SDK. It is the driver's spare while
// no call uses it, so a call allocates what it returns (the operation) and
// little else. The SDK keeps none of it past its call (SDK).
type scratch struct {
	start, held, kept, scatter, toEnd, toRevoke, endRevoke, ask []int     // a put's rows, by stage
	holds                                                       []holding // a put's revoked rows' holdings
	all, reread                                                 []int     // a get's
	keys                                                        []string
	sizes                                                       []int64
	flat                                                        []Buffer   // a scatter's buffers, back to back
	bufs                                                        [][]Buffer // a scatter's buffers, per row
	into                                                        []Buffer   // a get's buffers
	// With the object trailer on: the tags and trailers a put scatters,
	// and the memory a get reads objects into (see stage).
	tailStage, getStage *stage
}

// takeScratch takes a spare scratch, or a new one.
func (d *Driver) takeScratch() *scratch {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.spare.Get()
}

// release gives sc back to the driver's spares, holding no key.
func (d *Driver) release(sc *scratch) {
	clear(sc.keys[:cap(sc.keys)])
	d.mu.Lock()
	d.spare.Put(sc)
	d.mu.Unlock()
}

// keysOf are rows idx's keys, in sc's space: good until the next keysOf.
func (sc *scratch) keysOf(rows []driver.Row, idx []int) []string {
	ks := reuse.Resize(sc.keys, len(idx))
	for k, i := range idx {
		ks[k] = rows[i].Key
	}
	sc.keys = ks
	return ks
}

// put is one Put in progress.
type put struct {
	d      *Driver
	rows   []driver.Row
	o      *op
	sc     *scratch
	exists map[int]rules.Mapping // rows whose result waits on batch_is_exist; nil for none
}

// Put starts a session per key, writes the started rows in one scatter,
// ends the sessions of rows written whole and revokes the rest.
//
// A key this driver's own put is writing is NOT_READY at once; a key whose
// session it left open is READY when batch_is_exist shows its object
// complete, NOT_READY otherwise. It never starts a session for a key it
// holds.
func (d *Driver) Put(_ context.Context, rows []driver.Row) (driver.Operation, error) {
	call, err := d.life.Begin(rows, func(live func(*driver.Region) bool) error { return d.spec.Admission.Put(rows, live) })
	if err != nil {
		return nil, err
	}
	o := newOp(len(rows), true)
	defer o.settle(call)
	p := put{d: d, rows: rows, o: o, sc: d.takeScratch()}
	defer d.release(p.sc)

	start, askHeld, askKept := p.sc.start[:0], p.sc.held[:0], p.sc.kept[:0]
	var keptCode []int64 // the code each kept key was kept under, by askKept's order
	d.mu.Lock()
	for i, r := range rows {
		switch h := d.held[r.Key]; h.how {
		case heldPut:
			o.results[i] = driver.Result{Status: driver.NotReady}
		case heldOpen:
			askHeld = append(askHeld, i)
		case heldKeep:
			askKept, keptCode = append(askKept, i), append(keptCode, h.code)
		default:
			d.held[r.Key] = holding{how: heldPut}
			start = append(start, i)
		}
	}
	d.mu.Unlock()
	p.sc.start, p.sc.held, p.sc.kept = start, askHeld, askKept

	for _, i := range askHeld {
		p.waitExistence(i, rules.Mapping{Result: driver.FaultResult(0, "batch_is_exist failed for a key whose session this driver left open"),
			FollowUp: rules.FollowAskExistence, IfExists: driver.Ready, IfAbsent: driver.NotReady})
	}
	for k, i := range askKept {
		// The client keeps a session for the key that nothing may end or
		// revoke, and refuses a new start of it until it is torn down: a
		// stored object (another writer's) is READY; otherwise the key is
		// lost to this client, which is no writer still at work.
		why := "after " + d.codeName(keptCode[k])
		if keptCode[k] == 0 {
			why = "after a scatter that raised"
		}
		lost := driver.FaultResult(keptCode[k], "the key is lost to this client: its SDK client keeps a session for it that nothing may end or revoke (%s), and refuses to start it again until the client is torn down; reopen the driver over a new client to write it", why)
		p.waitExistence(i, rules.Mapping{Result: lost, FollowUp: rules.FollowAskExistence, IfExists: driver.Ready, IfAbsent: driver.Fault})
	}

	scatter := p.startSessions(start)
	toEnd, toRevoke := p.scatter(scatter)
	toRevoke = append(toRevoke, p.endSessions(toEnd)...)
	p.sc.toRevoke = toRevoke
	p.revoke(toRevoke)
	p.askExistence()
	return o, nil
}

// waitExistence makes row i's result wait on batch_is_exist, mapped by m.
func (p *put) waitExistence(i int, m rules.Mapping) {
	if p.exists == nil {
		p.exists = map[int]rules.Mapping{}
	}
	p.exists[i] = m
}

// set settles how the driver holds row i's key.
func (p *put) set(i int, h hold) { p.setHolding(i, holding{how: h}) }

// keep holds row i's key for good, kept under code.
func (p *put) keep(i int, code int64) { p.setHolding(i, holding{heldKeep, code}) }

func (p *put) setHolding(i int, h holding) {
	p.d.mu.Lock()
	p.d.holdLocked(p.rows[i].Key, h)
	p.d.mu.Unlock()
}

// startSessions starts a session per key; it returns the rows to scatter.
func (p *put) startSessions(start []int) []int {
	if len(start) == 0 {
		return nil
	}
	rows, o := p.rows, p.o
	sizes := reuse.Resize(p.sc.sizes, len(start))
	p.sc.sizes = sizes
	ov := p.d.overhead()
	for k, i := range start {
		sizes[k] = rows[i].Bytes() + ov
	}
	codes, err := p.d.sdk.BatchPutSessionStart(p.sc.keysOf(rows, start), sizes)
	if err != nil || len(codes) != len(start) {
		// Which sessions started is unknown. Nothing was written into any,
		// so revoke them all at once: a key whose revoke answers is free
		// again (a failed put leaves its key writable); one whose revoke
		// fails too is left for drain.
		for _, i := range start {
			o.results[i] = raised("batch_put_session_start", err, len(codes), len(start))
		}
		p.revoke(start)
		return nil
	}
	scatter := p.sc.scatter[:0]
	for k, i := range start {
		m := p.d.spec.Calls.BatchPutSessionStart.Map(codes[k])
		switch {
		case m.Continue:
			scatter = append(scatter, i)
			continue
		case m.FollowUp == rules.FollowAskExistence:
			p.waitExistence(i, m)
		default:
			o.results[i] = m.Result
		}
		p.set(i, 0) // no session of ours was started
	}
	p.sc.scatter = scatter
	return scatter
}

// scatter writes every started row in one call. Its return ends its access
// whatever it answers; a raise or a wrong count leaves access unproven.
func (p *put) scatter(idx []int) (toEnd, toRevoke []int) {
	if len(idx) == 0 {
		return nil, nil
	}
	rows, o := p.rows, p.o
	var tails []Buffer // each row's tag and trailer, with the trailer on
	if p.d.opt.Trailer {
		var err error
		if tails, err = p.d.tails(p.sc, rows, idx); err != nil {
			for _, i := range idx {
				o.results[i] = driver.FaultResult(0, "mooncake: no memory for the rows' trailers: %v", err)
			}
			p.revoke(idx)
			return nil, nil
		}
	}
	n := len(tails)
	for _, i := range idx {
		n += len(rows[i].Spans)
	}
	flat := reuse.Resize(p.sc.flat, n)[:0] // every row's buffers in one array
	bufs := reuse.Resize(p.sc.bufs, len(idx))
	for k, i := range idx {
		at := len(flat)
		for _, s := range rows[i].Spans {
			flat = append(flat, spanBuffer(s))
		}
		if tails != nil {
			flat = append(flat, tails[k])
		}
		bufs[k] = flat[at:len(flat):len(flat)]
	}
	p.sc.flat, p.sc.bufs = flat, bufs
	answers, err := p.d.sdk.BatchPutFromMultiBufferRanges(p.sc.keysOf(rows, idx), bufs)
	if err != nil || len(answers) != len(idx) {
		for _, i := range idx {
			o.results[i] = raised("batch_put_from_multi_buffer_ranges", err, len(answers), len(idx))
			// The scatter may still be writing, as after TRANSFER_FAIL: never
			// revoke (a drain's sweep could run beside this call and free
			// space a stale transfer then lands in).
			p.keep(i, 0)
		}
		p.sc.tailStage = nil // the scatter may still read it: never reused
		o.ended.Store(false)
		o.unprovable = true
		return nil, nil
	}
	kept := false
	toEnd, toRevoke = p.sc.toEnd[:0], p.sc.toRevoke[:0]
	for k, i := range idx {
		m := p.d.spec.Calls.BatchPutFromMultiBufferRanges.Map(answers[k], rows[i].Bytes()+p.d.overhead())
		kept = kept || m.KeepsAccess
		switch {
		case m.Continue:
			toEnd = append(toEnd, i)
		case m.FollowUp == rules.FollowKeepOpen:
			o.results[i] = m.Result
			p.keep(i, answers[k])
		default:
			o.results[i] = m.Result
			toRevoke = append(toRevoke, i)
		}
	}
	p.sc.toEnd, p.sc.toRevoke = toEnd, toRevoke
	if kept {
		p.sc.tailStage = nil // a transfer may still read it: never reused
	}
	if !p.d.spec.Calls.BatchPutFromMultiBufferRanges.Access().Ended(kept) {
		o.ended.Store(false)
		o.unprovable = true
	}
	return toEnd, toRevoke
}

// endSessions marks rows written whole complete; it returns the rows whose
// end failed in a way that needs a revoke.
func (p *put) endSessions(idx []int) (toRevoke []int) {
	if len(idx) == 0 {
		return nil
	}
	rows, o := p.rows, p.o
	codes, err := p.d.sdk.BatchPutSessionEnd(p.sc.keysOf(rows, idx))
	if err != nil || len(codes) != len(idx) {
		for _, i := range idx {
			o.results[i] = raised("batch_put_session_end", err, len(codes), len(idx))
			p.set(i, heldOpen)
		}
		return nil
	}
	toRevoke = p.sc.endRevoke[:0]
	for k, i := range idx {
		m := p.d.spec.Calls.BatchPutSessionEnd.Map(codes[k])
		o.results[i] = m.Result
		switch {
		case m.Result.Status == driver.Ready:
			p.set(i, 0)
		case m.FollowUp == rules.FollowRevokeInDrain:
			p.set(i, heldOpen) // an unanswered end may still complete
		default:
			toRevoke = append(toRevoke, i)
		}
	}
	p.sc.endRevoke = toRevoke
	return toRevoke
}

// revoke revokes the sessions of rows not written whole; a session whose
// revoke fails is left open for drain, and one whose revoke answered that it
// outlives any revoke is kept (afterRevoke).
func (p *put) revoke(idx []int) {
	if len(idx) == 0 {
		return
	}
	keys := p.sc.keysOf(p.rows, idx)
	codes, err := p.d.sdk.BatchPutSessionRevoke(keys)
	if err != nil || len(codes) != len(idx) {
		for _, i := range idx {
			p.set(i, heldOpen)
		}
		return
	}
	holds := reuse.Resize(p.sc.holds, len(idx))
	p.sc.holds = holds
	again := false
	for k := range idx {
		holds[k] = p.d.afterRevoke(codes[k])
		again = again || holds[k].how == heldEnd
	}
	if again {
		p.d.endAgain(keys, holds)
	}
	for k, i := range idx {
		p.setHolding(i, holds[k])
	}
}

// askExistence settles the rows that wait on batch_is_exist.
func (p *put) askExistence() {
	if len(p.exists) == 0 {
		return
	}
	rows, o, exists := p.rows, p.o, p.exists
	idx := p.sc.ask[:0]
	for i := range rows {
		if _, ok := exists[i]; ok {
			idx = append(idx, i)
		}
	}
	p.sc.ask = idx
	answers, err := p.d.sdk.BatchIsExist(p.sc.keysOf(rows, idx))
	for k, i := range idx {
		m := exists[i]
		switch {
		case err != nil || len(answers) != len(idx) || answers[k] < 0:
			o.results[i] = m.Result
		case answers[k] == 1:
			o.results[i] = existence(m, m.IfExists)
		default:
			o.results[i] = existence(m, m.IfAbsent)
		}
		if o.results[i].Status == driver.Fault && o.results[i].Text == "" {
			o.results[i] = driver.FaultResult(0, "batch_is_exist could not confirm the key")
		}
	}
}

// existence is a row's result once batch_is_exist answered: status, or,
// when that is FAULT, the mapping's own fault (its code and reason).
func existence(m rules.Mapping, status driver.Status) driver.Result {
	if status == driver.Fault {
		return m.Result
	}
	return driver.Result{Status: status}
}

// Get reads each row's object into its span with one batch_get_into, and
// rereads once the rows whose read lease expired. Access ends only when no
// row's answer keeps it (TRANSFER_FAIL).
func (d *Driver) Get(_ context.Context, rows []driver.Row, hint driver.Hint) (driver.Operation, error) {
	call, err := d.life.Begin(rows, func(live func(*driver.Region) bool) error { return d.spec.Admission.Get(rows, hint, live) })
	if err != nil {
		return nil, err
	}
	o := newOp(len(rows), false)
	defer o.settle(call)
	sc := d.takeScratch()
	defer d.release(sc)
	all := reuse.Resize(sc.all, len(rows))
	sc.all = all
	for i := range all {
		all[i] = i
	}
	kept, ok, reread := d.getInto(rows, all, o, false, sc)
	if ok && len(reread) > 0 {
		var k keeps
		k, ok, _ = d.getInto(rows, reread, o, true, sc)
		kept = kept.or(k)
	}
	switch {
	case ok && d.spec.Calls.BatchGetInto.Access().Ended(kept.any()):
		o.ended.Store(true)
	case ok && !kept.untilOther:
		// Every kept transfer ends when the client is torn down: a drain
		// whose only leftovers are such gets does so (Drain).
		o.atTeardown = true
		d.mu.Lock()
		d.atTeardown = append(d.atTeardown, o)
		d.mu.Unlock()
	default:
		o.unprovable = true
	}
	return o, nil
}

// keeps is what a get's answers say about its access: some answer keeps it
// until the client is torn down (ends_at_teardown), or until nothing the
// driver can do (any other kept access).
type keeps struct{ untilTeardown, untilOther bool }

func (k keeps) any() bool { return k.untilTeardown || k.untilOther }
func (k keeps) or(o keeps) keeps {
	return keeps{k.untilTeardown || o.untilTeardown, k.untilOther || o.untilOther}
}
func (k *keeps) add(m rules.Mapping) {
	switch {
	case !m.KeepsAccess:
	case m.FollowUp == rules.FollowEndsAtTeardown:
		k.untilTeardown = true
	default:
		k.untilOther = true
	}
}

// getInto runs one batch_get_into over rows idx and maps the answers. It
// reports whether an answer kept access, whether the call answered at all
// (no raise, right count), and, unless rereading, the rows to reread.
func (d *Driver) getInto(rows []driver.Row, idx []int, o *op, rereading bool, sc *scratch) (kept keeps, ok bool, reread []int) {
	bufs := reuse.Resize(sc.into, len(idx))
	sc.into = bufs
	var offs []int64 // with the trailer on: where each row's object is staged
	if d.opt.Trailer {
		offs = make([]int64, len(idx)+1)
		for k, i := range idx {
			offs[k+1] = offs[k] + rows[i].Bytes() + stageMax
		}
		if err := d.room(&sc.getStage, offs[len(idx)]); err != nil {
			for _, i := range idx {
				o.results[i] = driver.FaultResult(0, "mooncake: no memory to stage the rows' objects in: %v", err)
			}
			return keeps{}, true, nil
		}
	}
	for k, i := range idx {
		if offs != nil {
			bufs[k] = sc.getStage.at(offs[k], offs[k+1]-offs[k])
		} else {
			bufs[k] = spanBuffer(rows[i].Spans[0])
		}
	}
	answers, err := d.sdk.BatchGetInto(sc.keysOf(rows, idx), bufs)
	if err != nil || len(answers) != len(idx) {
		for _, i := range idx {
			o.results[i] = raised("batch_get_into", err, len(answers), len(idx))
		}
		sc.getStage = nil // the SDK may still write it: never reused
		return keeps{}, false, nil
	}
	var unverified map[int]error // rows whose object failed its trailer check
	if offs != nil {
		for k, i := range idx {
			a, err := d.unstage(rows[i], answers[k], sc.getStage.mem[offs[k]:offs[k+1]])
			answers[k] = a
			if err != nil {
				if unverified == nil {
					unverified = map[int]error{}
				}
				unverified[i] = err
			}
		}
	}
	if !rereading && allWhole(answers, rows, idx) { // the common case, batch-wise
		for _, i := range idx {
			o.results[i] = driver.Result{Status: driver.Ready}
		}
		return keeps{}, true, nil
	}
	if !rereading {
		reread = sc.reread[:0] // idx is sc.reread when rereading
	}
	for k, i := range idx {
		m := d.spec.Calls.BatchGetInto.Map(answers[k], rows[i].Bytes())
		if rereading {
			m = rules.AfterReread(m)
		}
		kept.add(m)
		o.results[i] = m.Result
		if err, bad := unverified[i]; bad {
			o.results[i] = driver.FaultResult(0, "mooncake: the object under the key is no whole row for it (%v); the slot is untouched", err)
			continue
		}
		if !rereading && m.FollowUp == rules.FollowRereadOnce {
			reread = append(reread, i)
		}
	}
	if !rereading {
		sc.reread = reread
	}
	if kept.any() {
		sc.getStage = nil // a transfer may still write it: never reused
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
