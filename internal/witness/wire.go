package witness

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Dir is a direction of a connection.
type Dir int

const (
	// Request is client to server.
	Request Dir = iota
	// Reply is server to client.
	Reply
)

func (d Dir) String() string {
	if d == Request {
		return "request"
	}
	return "reply"
}

// Action is what a fault does at its byte.
type Action int

const (
	// Stall holds the direction's bytes from the fault's byte on until
	// Release (then forwards them), or until the connection ends.
	Stall Action = iota
	// Cut closes the connection both ways, gracefully (FIN), at the byte.
	Cut
	// Reset closes the connection both ways with RST (linger 0) at the
	// byte: unread data is dropped and the peer reads ECONNRESET.
	Reset
	// Truncate ends the direction at the byte (its receiver reads EOF);
	// the other direction stays open.
	Truncate
	// Slice forwards the direction from the byte on in writes of at most
	// SliceBytes bytes each, SliceGap apart.
	Slice
)

func (a Action) String() string {
	return [...]string{"stall", "cut", "reset", "truncate", "slice"}[a]
}

// Fault is one fault to arm.
type Fault struct {
	Dir    Dir
	Action Action
	// After, when set, starts the count at the end of the Skip+1-th
	// occurrence of these bytes in the direction's stream since arming,
	// ASCII letters matched in either case (a client may spell a command
	// "set" or "SET"); at most 256 bytes.
	After []byte
	Skip  int
	// At is how many bytes past the start of the count are forwarded
	// before the action.
	At int64
	// SliceBytes (default 1) and SliceGap (default 0) shape a Slice.
	SliceBytes int
	SliceGap   time.Duration
}

func (f Fault) String() string {
	s := fmt.Sprintf("%s the %s at byte %d", f.Action, f.Dir, f.At)
	if f.After != nil {
		s += fmt.Sprintf(" after %q (occurrence %d)", f.After, f.Skip+1)
	}
	return s
}

// Armed is a fault on the proxy.
type Armed struct {
	Fault
	fired   chan struct{}
	release chan struct{}
	relOnce sync.Once

	// Under the proxy's lock.
	state faultState
	done  bool // fired
}

// Fired is closed once the fault has acted.
func (a *Armed) Fired() <-chan struct{} { return a.fired }

// Release lets a stalled direction go on (no effect on other actions).
func (a *Armed) Release() { a.relOnce.Do(func() { close(a.release) }) }

// Proxy forwards each connection it accepts on a loopback port to one
// upstream address.
type Proxy struct {
	ln       net.Listener
	upstream string

	mu     sync.Mutex
	armed  []*Armed
	links  map[*link]struct{}
	closed bool
	wg     sync.WaitGroup
	idle   *sync.Cond
}

// Start listens on 127.0.0.1 (a free port) and forwards to upstream.
func StartProxy(upstream string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("witness: proxy: listen on loopback: %w", err)
	}
	p := &Proxy{ln: ln, upstream: upstream, links: map[*link]struct{}{}}
	p.idle = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port; point the client here.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Arm arms f: it fires on the first connection whose stream in f.Dir
// reaches its byte.
func (p *Proxy) Arm(f Fault) *Armed {
	if f.SliceBytes <= 0 {
		f.SliceBytes = 1
	}
	a := &Armed{Fault: f, fired: make(chan struct{}), release: make(chan struct{})}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed = append(p.armed, a)
	return a
}

// Disarm drops every armed fault that has not fired and releases every
// stall.
func (p *Proxy) Disarm() {
	p.mu.Lock()
	armed := p.armed
	p.armed = nil
	p.mu.Unlock()
	for _, a := range armed {
		a.Release()
	}
}

// Drop ends every open connection (the client's next command dials again)
// and waits until their goroutines are done: after it, no byte of theirs
// can reach the client.
func (p *Proxy) Drop() {
	p.mu.Lock()
	for l := range p.links {
		l.close(false)
	}
	for len(p.links) > 0 {
		p.idle.Wait()
	}
	p.mu.Unlock()
}

// Links is how many connections are open.
func (p *Proxy) Links() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// Close stops listening, releases every stall, ends every connection and
// waits for every goroutine of the proxy.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	p.Disarm()
	p.Drop()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.DialTimeout("tcp", p.upstream, 5*time.Second)
		if err != nil {
			_ = c.Close()
			continue
		}
		l := &link{p: p, client: c.(*net.TCPConn), server: s.(*net.TCPConn), done: make(chan struct{})}
		_ = l.client.SetNoDelay(true)
		_ = l.server.SetNoDelay(true)
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			_ = c.Close()
			_ = s.Close()
			continue
		}
		p.links[l] = struct{}{}
		p.mu.Unlock()
		l.pumps = [2]*pump{
			{l: l, dir: Request, from: l.client, to: l.server},
			{l: l, dir: Reply, from: l.server, to: l.client},
		}
		l.running.Add(2)
		p.wg.Add(1)
		go l.pumps[0].run()
		go l.pumps[1].run()
		go func() {
			defer p.wg.Done()
			l.running.Wait()
			l.close(false)
			p.mu.Lock()
			delete(p.links, l)
			p.idle.Broadcast()
			p.mu.Unlock()
		}()
	}
}

// link is one client connection and its upstream connection.
type link struct {
	p              *Proxy
	client, server *net.TCPConn
	pumps          [2]*pump
	running        sync.WaitGroup
	once           sync.Once
	done           chan struct{} // closed when the link is closed
}

func (l *link) close(reset bool) {
	l.once.Do(func() {
		if reset {
			_ = l.client.SetLinger(0)
			_ = l.server.SetLinger(0)
		}
		_ = l.client.Close()
		_ = l.server.Close()
		close(l.done)
	})
}

// pump copies one direction of a link.
type pump struct {
	l        *link
	dir      Dir
	from, to *net.TCPConn
	tail     []byte // the last bytes seen, for an After split across reads
	slice    *Armed // a Slice in force
	dead     bool   // truncated: discard the rest
}

func (u *pump) run() {
	defer u.l.running.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := u.from.Read(buf)
		if n > 0 && !u.forward(buf[:n]) {
			return
		}
		if err != nil {
			if errors.Is(err, io.EOF) && !u.dead {
				_ = u.to.CloseWrite() // a half-close passes through
			} else {
				u.l.close(false)
			}
			return
		}
	}
}

// forward sends chunk on, acting on the first armed fault it reaches; it
// reports false once the link is closed.
func (u *pump) forward(chunk []byte) bool {
	for len(chunk) > 0 {
		if u.dead {
			return true
		}
		a, pos := u.l.p.reach(u, chunk)
		if a == nil {
			return u.write(chunk)
		}
		if !u.write(chunk[:pos]) {
			return false
		}
		chunk = chunk[pos:]
		close(a.fired)
		switch a.Action {
		case Stall:
			select {
			case <-a.release:
			case <-u.l.done:
				return false
			}
		case Cut:
			u.l.close(false)
			return false
		case Reset:
			u.l.close(true)
			return false
		case Truncate:
			_ = u.to.CloseWrite()
			u.dead = true
			return true
		case Slice:
			u.slice = a
		}
	}
	return true
}

func (u *pump) write(b []byte) bool {
	if u.slice == nil {
		_, err := u.to.Write(b)
		return err == nil
	}
	for len(b) > 0 {
		n := min(len(b), u.slice.SliceBytes)
		if _, err := u.to.Write(b[:n]); err != nil {
			return false
		}
		b = b[n:]
		if u.slice.SliceGap > 0 && len(b) > 0 {
			t := time.NewTimer(u.slice.SliceGap)
			select {
			case <-t.C:
			case <-u.l.done:
				t.Stop()
				return false
			}
		}
	}
	return true
}

// reach finds the first armed fault of u's direction that chunk reaches
// and the offset in chunk where it acts, and advances every other fault
// over the bytes before that offset (the rest is offered again).
func (p *Proxy) reach(u *pump, chunk []byte) (*Armed, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var best *Armed
	var bestPos int
	for _, a := range p.armed {
		if _, pos, ok := a.scan(u, chunk); ok && (best == nil || pos < bestPos) {
			best, bestPos = a, pos
		}
	}
	upto := chunk
	if best != nil {
		upto = chunk[:bestPos]
		best.done = true
		for i, a := range p.armed {
			if a == best {
				p.armed = append(p.armed[:i], p.armed[i+1:]...)
				break
			}
		}
	}
	for _, a := range p.armed {
		if st, _, ok := a.scan(u, upto); !ok {
			a.state = st
		}
	}
	seen := append(u.tail, upto...)
	u.tail = append([]byte(nil), seen[max(0, len(seen)-tailKeep):]...)
	return best, bestPos
}

// tailKeep is how many bytes of a stream are kept to find an After split
// across reads; After must be no longer.
const tailKeep = 256

// faultState is an armed fault's progress.
type faultState struct {
	owner *pump // the pump its After was seen on (nil until then, and without After)
	seen  int   // occurrences of After seen
	count int64 // bytes counted toward At on owner
	// counts are the bytes each pump passed since arming, for a fault
	// without After: the first to reach At gets it.
	counts map[*pump]int64
}

// scan is a's state after chunk passes through u, and the offset in chunk
// where a acts, if it does (ok). It changes nothing.
func (a *Armed) scan(u *pump, chunk []byte) (st faultState, pos int, ok bool) {
	st = a.state
	if a.done || a.Dir != u.dir || (st.owner != nil && st.owner != u) {
		return st, 0, false
	}
	start := 0 // where in chunk the count runs from
	if a.After == nil {
		n := st.counts[u]
		if int64(len(chunk)) < a.At-n {
			counts := make(map[*pump]int64)
			for k, v := range st.counts {
				counts[k] = v
			}
			counts[u] = n + int64(len(chunk))
			st.counts = counts
			return st, 0, false
		}
		return st, int(a.At - n), true
	}
	if st.owner == nil {
		seen := asciiLower(append(append([]byte(nil), u.tail...), chunk...))
		after := asciiLower(bytes.Clone(a.After))
		for from := 0; st.seen <= a.Skip; {
			i := bytes.Index(seen[from:], after)
			if i < 0 {
				break
			}
			end := from + i + len(after)
			if end > len(u.tail) { // ends in chunk: not counted before
				st.seen++
				start = end - len(u.tail)
			}
			from += i + 1
		}
		if st.seen <= a.Skip {
			return st, 0, false
		}
		st.owner = u
	}
	left := a.At - st.count
	if int64(len(chunk)-start) < left {
		st.count += int64(len(chunk) - start)
		return st, 0, false
	}
	return st, start + int(left), true
}

// asciiLower lowers the ASCII letters of b in place, byte for byte (a
// stream is no UTF-8: bytes.ToLower would change its length).
func asciiLower(b []byte) []byte {
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return b
}
