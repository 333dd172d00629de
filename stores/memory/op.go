package memory

import (
	"sync"
	"sync/atomic"

	"github.com/kvblob/kvblob/stores/trailer"

	memorygen "github.com/kvblob/kvblob/generated/memory"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/driverkit"
	"github.com/kvblob/kvblob/runtime/rules"
)

// op is one recorded Put or Get.
type op struct {
	d    *Driver
	call *driverkit.Call
	put  bool
	rows []driver.Row
	one  oneRow // room for a call of one row (newOp)

	// moving runs move's rows once; a caller that comes while another
	// moves waits for it, so staged and writes, written by move alone
	// and read only once it returned, need no lock per row.
	moving    sync.Once
	staged    []driver.Result // results computed by move, not yet published
	writes    []write         // a put's objects, committed when results are published
	cancelled atomic.Bool

	mu          sync.Mutex
	results     []driver.Result // published results
	accessEnded bool
	unprovable  bool
	lose        bool          // lose the evidence of the access end
	holdAccess  chan struct{} // keep access open until closed
	notify      func()        // driver.Notifier's f, called after each change
}

var _ driver.Notifier = (*op)(nil)

// oneRow is an op's room for a call of one row: its row (when copied),
// result and write live in the op itself, so such a call allocates the op
// and nothing more for them.
type oneRow struct {
	row    [1]driver.Row
	result [1]driver.Result
	write  [1]write
}

// newOp returns the op of a call of rows. A blocking driver moves the
// rows before Put returns and keeps the caller's slice only until then;
// another driver's op outlives the call, so it keeps a copy, since the
// caller may reuse its slice once Put returns.
func newOp(d *Driver, call *driverkit.Call, put bool, rows []driver.Row) *op {
	o := &op{d: d, call: call, put: put, rows: rows}
	if len(rows) == 1 {
		if d.opt.Mode != Blocking {
			o.one.row[0] = rows[0]
			o.rows = o.one.row[:]
		}
		o.staged = o.one.result[:]
		if put {
			o.writes = o.one.write[:]
		}
		return o
	}
	if d.opt.Mode != Blocking {
		o.rows = append([]driver.Row(nil), rows...)
	}
	o.staged = make([]driver.Result, len(rows))
	if put {
		o.writes = make([]write, len(rows))
	}
	return o
}

// Notify makes the operation call f after each change of its results or
// access state (driver.Notifier).
func (o *op) Notify(f func()) {
	o.mu.Lock()
	o.notify = f
	o.mu.Unlock()
}

func (o *op) Poll() ([]driver.Result, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.results == nil {
		return nil, false
	}
	return o.results, true // final, and the caller's to read only (driver.Operation)
}

func (o *op) AccessEnded() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.accessEnded
}

func (o *op) AccessUnprovable() bool { return o.Unprovable() }

func (o *op) Unprovable() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.unprovable
}

// Cancel stops rows that have not started; they answer CANCELLED.
func (o *op) Cancel() { o.cancelled.Store(true) }

// run does every stage in order, as the blocking and background modes do.
func (o *op) run() {
	o.move()
	o.publish()
	if o.lose {
		o.loseEvidence()
		return
	}
	if o.holdAccess != nil {
		go func() {
			<-o.holdAccess
			o.endAccess()
		}()
		return
	}
	o.endAccess()
}

// move moves each row's data, in order, unless the operation was cancelled
// first: rows that never started answer CANCELLED. It runs once; a second
// caller returns once the first is done. When no row started, nothing was
// touched and access ends, outside the once (ending access notifies, and
// whatever the notified does may move the op again).
func (o *op) move() {
	none := false
	o.moving.Do(func() { none = o.moveRows() })
	if none {
		o.endAccess()
	}
}

// moveRows is move's work; it reports whether no row started. A row
// reads the cancel flag as it starts (an atomic load, not a lock: a put
// row's copy leaves stores in flight that a locked instruction per row
// would wait for).
func (o *op) moveRows() (none bool) {
	st := o.d.store
	// A get looks its rows up a chunk at a time under one hold of the
	// store's lock, unless a hold or an injection was ever staged: those
	// run per row, as the row's get starts.
	var rd *reads
	if !o.put && !st.staged.Load() {
		rd = &reads{}
	}
	// A put without Integrity reserves its rows' keys and blocks a chunk
	// at a time the same way (with Integrity, putRow reserves each row's
	// key and block as it copies and tags the row).
	var pw *puts
	if o.put && !st.staged.Load() && !o.d.opt.Integrity.On() {
		pw = &puts{}
	}
	started := 0
	for i := range o.rows {
		if o.cancelled.Load() {
			o.staged[i] = driver.Result{Status: driver.Cancelled}
			continue
		}
		started = i + 1
		switch {
		case pw != nil:
			w, code := st.reserved(pw, o.rows, i)
			if i+1 < len(o.rows) {
				prefetchRow(o.rows[i+1]) // see prefetch
			}
			o.staged[i], o.writes[i] = fill(o.rows[i], w, code)
		case o.put:
			o.staged[i], o.writes[i] = o.putRow(o.rows[i])
		case rd != nil:
			obj, code := st.at(rd, o.rows, i)
			if k := i + 1 - rd.start; k < rd.n && rd.objs[k] != nil {
				prefetch(rd.objs[k].b) // held, as obj is
			}
			o.staged[i] = o.readRow(o.rows[i], obj, code)
		default:
			o.staged[i] = o.getRow(o.rows[i])
		}
	}
	if rd != nil {
		st.letGo(rd)
	}
	if pw != nil {
		st.unreserve(pw) // rows cancelled after their chunk was reserved
	}
	return started == 0
}

// write is a put's object, copied out of the caller's spans and reserved
// in the store (other writers and readers see the key as PENDING) until
// the results are published, which commits it. A nil obj is no write.
type write struct {
	id  int
	e   *entry // key's entry, reserved for id
	obj *object
}

// putRow reserves the key and copies the row out of its spans. It returns
// the row's result when the store refused, or the write to commit.
func (o *op) putRow(row driver.Row) (driver.Result, write) {
	st := o.d.store
	if code, ok := st.enter(CallPut, row.Key); ok {
		return memorygen.Memory().Calls.StorePut.Map(int64(code)).Result, write{}
	}
	n := int(row.Bytes())
	if in := o.d.opt.Integrity; in.On() {
		// One pass: each span is copied into the object's block and
		// tagged there a chunk at a time, while the chunk is in cache
		// (trailer.Sealer.Copy); the tag and trailer follow.
		w, code := st.begin(row.Key, n+int(in.Overhead()), false)
		if code != memorygen.OK {
			return memorygen.Memory().Calls.StorePut.Map(int64(code)).Result, write{}
		}
		sl := in.Sealer(int64(n))
		off := 0
		for _, s := range row.Spans {
			off += sl.Copy(w.obj.b[off:], s.Bytes())
		}
		sl.Finish(w.obj.b[:n:len(w.obj.b)], row.Key)
		return driver.Result{}, w
	}
	// One pass: each span is copied into the arena block. The trailer's
	// bytes are left unwritten (object.own): whole writes them, name digest
	// and CRC32 included, for a reader that sees the object whole.
	w, code := st.begin(row.Key, ownBytes(row), true)
	return fill(row, w, code)
}

// prefetchRow asks for row's bytes (its host spans') into the cache
// (prefetch).
func prefetchRow(row driver.Row) {
	for _, s := range row.Spans {
		if s.Region != nil && s.Region.Kind == driver.Host {
			prefetch(s.Bytes())
		}
	}
}

// ownBytes is the size of the object a put writes for row itself
// (object.own): its payload, and room for the trailer.
func ownBytes(row driver.Row) int { return int(row.Bytes()) + trailer.Size }

// fill copies row out of its spans into w's object, which begin (or
// reserved) gave it with code: it returns the row's result when the store
// refused, or the write to commit.
func fill(row driver.Row, w write, code memorygen.Code) (driver.Result, write) {
	if code != memorygen.OK {
		return memorygen.Memory().Calls.StorePut.Map(int64(code)).Result, write{}
	}
	off := 0
	for _, s := range row.Spans {
		off += stream(w.obj.b[off:], s.Bytes())
	}
	return driver.Result{}, w
}

func (o *op) getRow(row driver.Row) driver.Result {
	st := o.d.store
	if code, ok := st.enter(CallGet, row.Key); ok {
		return memorygen.Memory().Calls.StoreGet.Map(int64(code), row.Bytes()).Result
	}
	obj, code := st.get(row.Key)
	if obj != nil {
		defer st.done(obj)
	}
	return o.readRow(row, obj, code)
}

// readRow answers a get of row from what the store's lookup found: obj
// (held by the caller until readRow returns) or the lookup's code.
func (o *op) readRow(row driver.Row, obj *object, code memorygen.Code) driver.Result {
	if code != memorygen.OK {
		return memorygen.Memory().Calls.StoreGet.Map(int64(code), row.Bytes()).Result
	}
	// The trailer is checked before a byte is written, so a corrupt object
	// leaves the destination untouched. An object the store wrote itself,
	// read by a driver without Integrity, needs no trailer (object.own): it
	// was found under its key, and nothing else writes its block, so only
	// its length is compared (by MapStoreGet, below). A planted object is
	// checked whole, and so is every object read with Integrity on (an own
	// object through the copy a reader outside the store would see).
	var payload []byte
	var err error
	switch {
	case obj.own && !o.d.opt.Integrity.On():
		payload = obj.b[:len(obj.b)-trailer.Size]
	case obj.own:
		payload, err = o.d.opt.Integrity.Check(obj.whole(row.Key), row.Key)
	default:
		payload, err = o.d.opt.Integrity.Check(obj.b, row.Key)
	}
	if err != nil {
		m := memorygen.Memory().Calls.StoreGet.Map(int64(memorygen.Corrupt), row.Bytes())
		m.Result.Text += ": " + err.Error()
		return m.Result
	}
	m := memorygen.Memory().Calls.StoreGet.Map(int64(len(payload)), row.Bytes())
	if m.Written == rules.WrittenYes {
		for _, s := range row.Spans {
			payload = payload[copy(s.Bytes(), payload):]
		}
	}
	return m.Result
}

// publish commits the put's writes and publishes every row's result.
func (o *op) publish() {
	o.move()
	o.mu.Lock()
	if o.results != nil {
		o.mu.Unlock()
		o.call.Done()
		return
	}
	if o.put {
		// A commit answers OK but for a full store: OK's result is
		// mapped once per call, not once per row (a lookup in the
		// rule's codes under the store's lock).
		committed := memorygen.Memory().Calls.StorePut.Map(int64(memorygen.OK)).Result
		st := o.d.store
		st.mu.Lock()
		for i, w := range o.writes {
			if w.obj == nil {
				continue
			}
			if code := st.commitLocked(o.rows[i].Key, w); code == memorygen.OK {
				o.staged[i] = committed
			} else {
				o.staged[i] = memorygen.Memory().Calls.StorePut.Map(int64(code)).Result
			}
		}
		st.mu.Unlock()
	}
	// staged is final: move returned and never runs again (moving), so
	// the results are staged itself, handed over without a copy, to Poll's
	// callers too.
	o.results = o.staged
	f := o.notify
	o.mu.Unlock()
	o.call.Done()
	if f != nil {
		f()
	}
}

func (o *op) endAccess() {
	o.mu.Lock()
	ended := !o.unprovable
	changed := ended && !o.accessEnded
	o.accessEnded = o.accessEnded || ended
	f := o.notify
	o.mu.Unlock()
	if ended {
		o.call.EndAccess()
	}
	if changed && f != nil {
		f()
	}
}

func (o *op) loseEvidence() {
	o.mu.Lock()
	lost := !o.accessEnded
	changed := lost && !o.unprovable
	o.unprovable = o.unprovable || lost
	f := o.notify
	o.mu.Unlock()
	if lost {
		o.call.Unprovable()
	}
	if changed && f != nil {
		f()
	}
}

// Controller releases the stages of an operation of a Controlled driver.
type Controller struct{ o *op }

// ControllerOf returns the controller of an operation returned by a
// Controlled driver, or nil for any other operation.
func ControllerOf(operation driver.Operation) *Controller {
	o, ok := operation.(*op)
	if !ok || o.d.opt.Mode != Controlled {
		return nil
	}
	return &Controller{o: o}
}

// MoveData moves every row's bytes (rows cancelled before this answer
// CANCELLED): a get fills its spans; a put copies its spans out and
// reserves its keys, which other readers and writers see as NOT_READY
// until the results are published. Results stay unpublished.
func (c *Controller) MoveData() { c.o.move() }

// PublishResults commits a put's objects and publishes the rows' results,
// moving data first if needed.
func (c *Controller) PublishResults() { c.o.publish() }

// EndAccess proves the operation's access ended, moving data first if
// needed.
func (c *Controller) EndAccess() {
	c.o.move()
	c.o.endAccess()
}

// LoseEvidence makes the operation's access unprovable for good.
func (c *Controller) LoseEvidence() { c.o.loseEvidence() }
