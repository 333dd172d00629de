package mooncakekit

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/kvblob/kvblob/stores/mooncake"
)

// Validate reports a scenario the runner cannot play: a repeated step
// name, an unknown buffer or client, a wait for no async step, or two
// source keys whose bytes cannot be told apart.
func (s Scenario) Validate() error {
	cfg := s.Config.Effective()
	bufs := map[string]Buf{}
	seeds := map[int64]string{}
	for _, b := range s.Bufs {
		if b.Client < 0 || b.Client >= cfg.Clients {
			return fmt.Errorf("%s: buffer %s is in client %d of %d", s.Name, b.Name, b.Client, cfg.Clients)
		}
		bufs[b.Name] = b
	}
	for _, k := range s.labels() {
		if o, ok := seeds[seed(k)]; ok {
			return fmt.Errorf("%s: keys %q and %q have the same byte pattern; rename one", s.Name, o, k)
		}
		seeds[seed(k)] = k
	}
	names := map[string]bool{}
	async := map[string]bool{}
	for _, st := range s.Steps {
		if st.Name == "" || names[st.Name] {
			return fmt.Errorf("%s: step name %q is empty or repeated", s.Name, st.Name)
		}
		names[st.Name] = true
		if st.Client < 0 || st.Client >= cfg.Clients {
			return fmt.Errorf("%s: step %s is on client %d of %d", s.Name, st.Name, st.Client, cfg.Clients)
		}
		refs := append([]Ref{st.Ref}, st.Into...)
		for _, f := range st.From {
			refs = append(refs, f...)
		}
		for _, r := range refs {
			if _, ok := bufs[r.Buf]; r.Buf != "" && !ok {
				return fmt.Errorf("%s: step %s names no buffer %q", s.Name, st.Name, r.Buf)
			}
		}
		if st.Async {
			async[st.Name] = true
		}
		if st.Op == OpWait && !async[st.Of] {
			return fmt.Errorf("%s: step %s waits for %q, no async step before it", s.Name, st.Name, st.Of)
		}
	}
	return nil
}

// labels are the keys whose bytes a destination may hold: every fill.
func (s Scenario) labels() []string {
	set := map[string]bool{}
	for _, b := range s.Bufs {
		if b.Fill != "" {
			set[b.Fill] = true
		}
	}
	for _, st := range s.Steps {
		if st.FillKey != "" {
			set[st.FillKey] = true
		}
	}
	var out []string
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

type pending struct {
	op    Op
	rec   *StepRecord
	done  <-chan struct{}
	start time.Duration
	end   time.Duration
}

type runner struct {
	env     Env
	s       Scenario
	cfg     Config
	clients []mooncake.SDK
	mem     map[string]Memory
	bufs    map[string]Buf
	labels  []string
	thawAt  time.Duration
	thawed  bool
	pending map[string]*pending
	recs    []*StepRecord
}

// Run plays s through env (opened here, closed at the end) and records
// every step: call steps with their answers (or error), timing and, for a
// get or a look, the bytes of each destination at return.
func Run(env Env, s Scenario) (Recording, error) {
	if err := s.Validate(); err != nil {
		return Recording{}, err
	}
	r := &runner{env: env, s: s, cfg: s.Config.Effective(), mem: map[string]Memory{}, bufs: map[string]Buf{},
		labels: s.labels(), pending: map[string]*pending{}}
	clients, err := env.Open(r.cfg)
	if err != nil {
		return Recording{}, fmt.Errorf("%s: open: %w", s.Name, err)
	}
	r.clients = clients
	err = r.play()
	if cerr := env.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("%s: close: %w", s.Name, cerr)
	}
	rec := Recording{Scenario: s.Name}
	for _, sr := range r.recs {
		rec.Steps = append(rec.Steps, *sr)
	}
	return rec, err
}

func (r *runner) play() error {
	for _, b := range r.s.Bufs {
		m, err := r.env.Alloc(b.Client, b.Len)
		if err != nil {
			return fmt.Errorf("%s: buffer %s: %w", r.s.Name, b.Name, err)
		}
		r.mem[b.Name], r.bufs[b.Name] = m, b
		r.fill(Ref{Buf: b.Name}, b.Fill)
	}
	for _, st := range r.s.Steps {
		if err := r.step(st); err != nil {
			return fmt.Errorf("%s: step %s: %w", r.s.Name, st.Name, err)
		}
	}
	for name, p := range r.pending {
		if err := r.env.Await(p.done); err != nil {
			return fmt.Errorf("%s: async step %s never collected and still blocked: %w", r.s.Name, name, err)
		}
	}
	return nil
}

func (r *runner) window(ref Ref) (Memory, int64, int64) {
	m := r.mem[ref.Buf]
	n := ref.Len
	if n == 0 {
		n = r.bufs[ref.Buf].Len - ref.Off
	}
	return m, ref.Off, n
}

func (r *runner) buffer(ref Ref) mooncake.Buffer {
	m, off, n := r.window(ref)
	return mooncake.Buffer{Addr: m.Buffer().Addr + uintptr(off), Len: n}
}

func (r *runner) fill(ref Ref, key string) {
	m, off, n := r.window(ref)
	p := make([]byte, n)
	sd := seed(key)
	for i := range p {
		if key == "" {
			p[i] = Canary
		} else {
			p[i] = pattern(sd, off+int64(i))
		}
	}
	m.Write(off, p)
}

func (r *runner) look(refs []Ref) [][]ByteRun {
	out := make([][]ByteRun, len(refs))
	for i, ref := range refs {
		m, off, n := r.window(ref)
		out[i] = DescribeBytes(m.Read(off, n), r.labels)
	}
	return out
}

func (r *runner) step(st Step) error {
	env := r.env
	switch st.Op {
	case OpAdvance:
		env.Advance(st.D)
		return nil
	case OpKillMaster:
		return env.KillMaster()
	case OpRestartMaster:
		return env.RestartMaster()
	case OpFreezeMaster:
		return env.FreezeMaster()
	case OpFreezePeer:
		return env.FreezePeer()
	case OpKillPeer:
		return env.KillPeer()
	case OpThawMaster, OpThawPeer:
		var err error
		if st.Op == OpThawMaster {
			err = env.ThawMaster()
		} else {
			err = env.ThawPeer()
		}
		r.thawAt, r.thawed = env.Now(), true
		return err
	case OpFill:
		r.fill(st.Ref, st.FillKey)
		return nil
	case OpLook:
		r.recs = append(r.recs, &StepRecord{Step: st.Name, Bytes: r.look(st.Into)})
		return nil
	case OpWait:
		p := r.pending[st.Of]
		delete(r.pending, st.Of)
		if err := env.Await(p.done); err != nil {
			return err
		}
		r.finish(p)
		return nil
	}
	call, err := r.call(st)
	if err != nil {
		return err
	}
	rec := &StepRecord{Step: st.Name}
	r.recs = append(r.recs, rec)
	p := &pending{op: st.Op, rec: rec, start: env.Now()}
	var mu sync.Mutex
	p.done = env.Go(func() {
		answers, err := call()
		end := env.Now()
		var bytes [][]ByteRun
		if st.Op == OpGet && err == nil {
			bytes = r.look(st.Into) // at return: later landings are a look's
		}
		mu.Lock()
		defer mu.Unlock()
		p.end = end
		rec.Answers, rec.Bytes = answers, bytes
		if err != nil {
			rec.Error = err.Error()
		}
	})
	if st.Async {
		env.Settle()
		r.pending[st.Name] = p
		return nil
	}
	if err := env.Await(p.done); err != nil {
		return err
	}
	r.finish(p)
	return nil
}

// finish sets the timing class of a returned call.
func (r *runner) finish(p *pending) {
	thawed := r.thawed && r.thawAt >= p.start && r.thawAt <= p.end
	p.rec.Timing = Timings{Classify(r.cfg, p.op, p.end-p.start, thawed, p.end-r.thawAt)}
}

var errNoCall = errors.New("not an SDK call")

func (r *runner) call(st Step) (func() ([]int64, error), error) {
	c := r.clients[st.Client]
	switch st.Op {
	case OpRegister, OpUnregister:
		b := r.buffer(st.Ref)
		reg := c.RegisterBuffer
		if st.Op == OpUnregister {
			reg = c.UnregisterBuffer
		}
		return func() ([]int64, error) {
			code, err := reg(b)
			if err != nil {
				return nil, err
			}
			return []int64{code}, nil
		}, nil
	case OpStart:
		return func() ([]int64, error) { return c.BatchPutSessionStart(st.Keys, st.Sizes) }, nil
	case OpScatter:
		bufs := make([][]mooncake.Buffer, len(st.From))
		for i, refs := range st.From {
			for _, ref := range refs {
				bufs[i] = append(bufs[i], r.buffer(ref))
			}
		}
		return func() ([]int64, error) { return c.BatchPutFromMultiBufferRanges(st.Keys, bufs) }, nil
	case OpEnd:
		return func() ([]int64, error) { return c.BatchPutSessionEnd(st.Keys) }, nil
	case OpRevoke:
		return func() ([]int64, error) { return c.BatchPutSessionRevoke(st.Keys) }, nil
	case OpGet:
		bufs := make([]mooncake.Buffer, len(st.Into))
		for i, ref := range st.Into {
			bufs[i] = r.buffer(ref)
		}
		return func() ([]int64, error) { return c.BatchGetInto(st.Keys, bufs) }, nil
	case OpExist:
		return func() ([]int64, error) { return c.BatchIsExist(st.Keys) }, nil
	case OpClose:
		return func() ([]int64, error) {
			if err := c.Close(); err != nil {
				return nil, err
			}
			return []int64{0}, nil
		}, nil
	}
	return nil, fmt.Errorf("%w: %q", errNoCall, st.Op)
}
