package mooncakekit

import (
	"fmt"
	"time"
)

// Row is the object size most scenarios use.
const Row = 4096

func start(name string, c int, key string, size int64) Step {
	return Step{Name: name, Client: c, Op: OpStart, Keys: []string{key}, Sizes: []int64{size}}
}

func scatter(name string, c int, key string, from ...Ref) Step {
	return Step{Name: name, Client: c, Op: OpScatter, Keys: []string{key}, From: [][]Ref{from}}
}

func end(name string, c int, key string) Step {
	return Step{Name: name, Client: c, Op: OpEnd, Keys: []string{key}}
}

func revoke(name string, c int, key string) Step {
	return Step{Name: name, Client: c, Op: OpRevoke, Keys: []string{key}}
}

func get(name string, c int, key string, into Ref) Step {
	return Step{Name: name, Client: c, Op: OpGet, Keys: []string{key}, Into: []Ref{into}}
}

func exist(name string, c int, keys ...string) Step {
	return Step{Name: name, Client: c, Op: OpExist, Keys: keys}
}

func async(s Step) Step { s.Async = true; return s }

func wait(name, of string) Step { return Step{Name: name, Op: OpWait, Of: of} }

func look(name string, refs ...Ref) Step { return Step{Name: name, Op: OpLook, Into: refs} }

func fill(name string, ref Ref, key string) Step {
	return Step{Name: name, Op: OpFill, Ref: ref, FillKey: key}
}

func advance(name string, d time.Duration) Step { return Step{Name: name, Op: OpAdvance, D: d} }

func envStep(op Op) Step { return Step{Name: string(op), Op: op} }

func ref(buf string) Ref { return Ref{Buf: buf} }

// put is a whole put of key by client c from buffer src: start, scatter, end.
func put(prefix string, c int, key string, size int64, src string) []Step {
	return []Step{
		start(prefix+"start-"+key, c, key, size),
		scatter(prefix+"scatter-"+key, c, key, Ref{Buf: src, Len: size}),
		end(prefix+"end-"+key, c, key),
	}
}

func steps(parts ...any) []Step {
	var out []Step
	for _, p := range parts {
		switch p := p.(type) {
		case Step:
			out = append(out, p)
		case []Step:
			out = append(out, p...)
		default:
			panic(fmt.Sprintf("mcscenario: %T is not a step", p))
		}
	}
	return out
}

// All is the script: every row of docs/mooncake-sdk.md's probe table, its
// master faults, its stalls, and the answers it found agreeing.
func All() []Scenario {
	stall := Config{Clients: 2, PoolOn: B}
	src := Buf{Name: "src", Client: A, Len: Row, Fill: "k"}
	dst := Buf{Name: "dst", Client: A, Len: Row}
	var fill16 []Step
	for i := 0; i < 16; i++ {
		fill16 = append(fill16, put("", A, fmt.Sprintf("f%02d", i), 1<<20, "mib")...)
	}
	var keys16 []string
	for i := 0; i < 16; i++ {
		keys16 = append(keys16, fmt.Sprintf("f%02d", i))
	}
	var open16 []Step
	for i := 0; i < 16; i++ {
		open16 = append(open16, start(fmt.Sprintf("start-f%02d", i), A, fmt.Sprintf("f%02d", i), 1<<20))
	}
	return []Scenario{
		{
			Name:  "b3-second-start-held",
			About: "probe b3: a second start of a key this client holds is refused by the client itself, and never ages out",
			Steps: steps(start("start", A, "k", Row), start("start-again", A, "k", Row),
				advance("past-discard", 31*time.Second), start("start-after-discard", A, "k", Row),
				revoke("revoke", A, "k")),
		},
		{
			Name: "b4e-pool-full-declines-then-evicts",
			About: "probe b4e: a 16 MiB segment full of 16 complete 1 MiB objects, master defaults (eviction_high_watermark_ratio " +
				"0.90, eviction_ratio 0.05, default_kv_lease_ttl 10 s, no object read so no lease held): a 17th start answers " +
				"NO_AVAILABLE_HANDLE at once, and the refusal makes the master's eviction thread drop the oldest objects, so " +
				"starts after 1, 4 and 14 s succeed; which of the 16 objects are still there at the end",
			Config: Config{Segment: 16 << 20},
			Bufs:   []Buf{{Name: "mib", Client: A, Len: 1 << 20, Fill: "m"}},
			Steps: steps(fill16, start("start-when-full", A, "new", 1<<20), advance("to-1s", time.Second),
				start("start-at-1s", A, "new1", 1<<20), advance("to-4s", 3*time.Second),
				start("start-at-4s", A, "new4", 1<<20), advance("to-14s", 10*time.Second),
				start("start-at-14s", A, "new14", 1<<20), exist("exist-all", A, keys16...),
				revoke("revoke-new", A, "new")),
		},
		{
			Name:  "b6-empty-key",
			About: "probe b6: a start of the empty key",
			Steps: steps(start("start-empty", A, "", Row)),
		},
		{
			Name:  "c1c2-never-started",
			About: "probe c1/c2: end and revoke of a key never started; the master is never asked",
			Steps: steps(end("end", A, "k"), revoke("revoke", A, "k")),
		},
		{
			Name:   "c3-other-clients-session",
			About:  "probe c3: end and revoke of a key another client holds",
			Config: Config{Clients: 2},
			Steps:  steps(start("b-start", B, "k", Row), end("end", A, "k"), revoke("revoke", A, "k"), revoke("b-revoke", B, "k")),
		},
		{
			Name:  "c4c5-after-own-end",
			About: "probe c4/c5: end and revoke after this client's own successful end",
			Bufs:  []Buf{src},
			Steps: steps(put("", A, "k", Row, "src"), end("end-again", A, "k"), revoke("revoke", A, "k")),
		},
		{
			Name:  "d2-scatter-larger-than-declared",
			About: "probe d2: a scatter of more bytes than the session declared is refused whole; the session can still end",
			Bufs:  []Buf{{Name: "big", Client: A, Len: 2 * Row, Fill: "k"}, dst},
			Steps: steps(start("start", A, "k", Row), scatter("scatter-larger", A, "k", ref("big")),
				end("end", A, "k"), get("get", A, "k", ref("dst"))),
		},
		{
			Name:  "d6-short-write-stale-tail",
			About: "probe d6: a short write then end, in space a revoked session wrote: the tail holds the other key's stale bytes",
			Bufs: []Buf{{Name: "old", Client: A, Len: Row, Fill: "old"}, {Name: "new", Client: A, Len: Row / 2, Fill: "new"},
				dst},
			Steps: steps(start("start-old", A, "old", Row), scatter("scatter-old", A, "old", ref("old")), revoke("revoke-old", A, "old"),
				start("start-new", A, "new", Row), scatter("scatter-short", A, "new", ref("new")), end("end-new", A, "new"),
				get("get-new", A, "new", ref("dst"))),
		},
		{
			Name:  "a5-unregistered-memory",
			About: "probe a5: scatter and get through memory never registered, over tcp",
			Bufs:  []Buf{src, dst},
			Steps: steps(put("", A, "k", Row, "src"), get("get", A, "k", ref("dst"))),
		},
		{
			Name:  "r-registration",
			About: "probe r: the same buffer registered twice, and a range overlapping a registered one; two buffers side by side",
			Bufs:  []Buf{{Name: "mem", Client: A, Len: 4 * Row}},
			Steps: steps(
				Step{Name: "register", Op: OpRegister, Ref: Ref{Buf: "mem", Len: 2 * Row}},
				Step{Name: "register-again", Op: OpRegister, Ref: Ref{Buf: "mem", Len: 2 * Row}},
				Step{Name: "register-overlap", Op: OpRegister, Ref: Ref{Buf: "mem", Off: Row, Len: 2 * Row}},
				Step{Name: "register-beside", Op: OpRegister, Ref: Ref{Buf: "mem", Off: 2 * Row, Len: 2 * Row}},
				Step{Name: "unregister", Op: OpUnregister, Ref: Ref{Buf: "mem", Len: 2 * Row}},
				Step{Name: "unregister-beside", Op: OpUnregister, Ref: Ref{Buf: "mem", Off: 2 * Row, Len: 2 * Row}}),
		},
		{
			Name:   "h5-start-timed-out-applied",
			About:  "probe h5: a start times out against a frozen master, which applies it on thaw: an orphan session until the discard timeout",
			Config: Config{Clients: 2, RPCTimeout: 3 * time.Second},
			Steps: steps(envStep(OpFreezeMaster), async(start("start-timed-out", A, "k", Row)),
				advance("past-rpc-timeout", 3*time.Second), wait("wait-start", "start-timed-out"), envStep(OpThawMaster),
				start("start-again", A, "k", Row), revoke("revoke", A, "k"), start("b-start", B, "k", Row),
				advance("past-discard", 31*time.Second), start("start-after-discard", A, "k", Row), revoke("revoke-after-discard", A, "k")),
		},
		{
			Name:   "h11-end-timed-out-applied",
			About:  "probe h11-15: an end times out against a frozen master, which applies it on thaw",
			Config: Config{RPCTimeout: 3 * time.Second},
			Bufs:   []Buf{src, dst},
			Steps: steps(start("start", A, "k", Row), scatter("scatter", A, "k", ref("src")), envStep(OpFreezeMaster),
				async(end("end-timed-out", A, "k")), advance("past-rpc-timeout", 3*time.Second), wait("wait-end", "end-timed-out"),
				envStep(OpThawMaster), revoke("revoke", A, "k"), revoke("revoke-again", A, "k"), exist("exist", A, "k"),
				end("end-again", A, "k"), revoke("revoke-after-end", A, "k"), get("get", A, "k", ref("dst"))),
		},
		{
			Name:   "g1-discard-takeover",
			About:  "probe g1: another client starts a key whose session outlived the discard timeout",
			Config: Config{Clients: 2},
			Bufs:   []Buf{src, {Name: "b-src", Client: B, Len: Row, Fill: "b"}, dst},
			Steps: steps(start("start", A, "k", Row), advance("past-discard", 31*time.Second), start("b-start", B, "k", Row),
				scatter("scatter", A, "k", ref("src")), end("end", A, "k"), revoke("revoke", A, "k"), revoke("revoke-again", A, "k"),
				end("end-again", A, "k"), scatter("b-scatter", B, "k", ref("b-src")), end("b-end", B, "k"),
				get("get", A, "k", ref("dst"))),
		},
		{
			Name:  "m-master-killed",
			About: "master faults: killed; metadata calls fail after the connect retries, a get at once, a scatter into an open session still works",
			Bufs:  []Buf{src, {Name: "src1", Client: A, Len: Row, Fill: "k1"}, dst},
			Steps: steps(put("", A, "k", Row, "src"), start("start-k1", A, "k1", Row), envStep(OpKillMaster),
				start("start-down", A, "k2", Row), end("end-down", A, "k1"), exist("exist-down", A, "k"),
				get("get-down", A, "k", ref("dst")), scatter("scatter-down", A, "k1", ref("src1"))),
		},
		{
			Name:  "m-master-restarted",
			About: "master faults: killed and restarted; starts find no space for ~1 s, every object is gone, a pre-kill session cannot end but revokes",
			Bufs:  []Buf{src, {Name: "src1", Client: A, Len: Row, Fill: "k1"}, dst},
			Steps: steps(put("", A, "k", Row, "src"), start("start-k1", A, "k1", Row), scatter("scatter-k1", A, "k1", ref("src1")),
				envStep(OpKillMaster), envStep(OpRestartMaster), start("start-after-restart", A, "k2", Row),
				advance("remount", 2*time.Second), start("start-remounted", A, "k3", Row), get("get", A, "k", ref("dst")),
				end("end-pre-kill", A, "k1"), revoke("revoke-pre-kill", A, "k1"), revoke("revoke-k3", A, "k3")),
		},
		{
			Name:   "m-master-frozen",
			About:  "master faults: SIGSTOP; a metadata call times out after MC_RPC_TIMEOUT_MS=3000",
			Config: Config{RPCTimeout: 3 * time.Second},
			Steps: steps(envStep(OpFreezeMaster), async(start("start-frozen", A, "k", Row)), advance("past-rpc-timeout", 3*time.Second),
				wait("wait-start", "start-frozen"), envStep(OpThawMaster)),
		},
		{
			Name:  "m-master-frozen-default",
			About: "master faults: SIGSTOP; a metadata call times out after the default 30 s",
			Steps: steps(envStep(OpFreezeMaster), async(start("start-frozen", A, "k", Row)), advance("past-rpc-timeout", 30*time.Second),
				wait("wait-start", "start-frozen"), envStep(OpThawMaster)),
		},
		{
			Name:   "s1-get-peer-frozen",
			About:  "stalls: a get from a frozen peer, default env: TRANSFER_FAIL at the status timeout, nothing lands after thaw",
			Config: stall,
			Bufs:   []Buf{src, dst},
			Steps: steps(put("", A, "k", Row, "src"), envStep(OpFreezePeer), async(get("get-frozen", A, "k", ref("dst"))),
				advance("status-timeout", 30*time.Second), wait("wait-get", "get-frozen"), envStep(OpThawPeer),
				advance("after-thaw", 2*time.Second), look("look-after-thaw", ref("dst"))),
		},
		{
			Name:   "s2-get-peer-frozen-status-2s",
			About:  "stalls: a get from a frozen peer, MC_TCP_STATUS_TIMEOUT_SEC=2; a get after thaw answers whole",
			Config: Config{Clients: 2, PoolOn: B, StatusTimeout: 2 * time.Second},
			Bufs:   []Buf{src, dst, {Name: "dst2", Client: A, Len: Row}},
			Steps: steps(put("", A, "k", Row, "src"), envStep(OpFreezePeer), async(get("get-frozen", A, "k", ref("dst"))),
				advance("status-timeout", 2*time.Second), wait("wait-get", "get-frozen"), envStep(OpThawPeer),
				get("get-after-thaw", A, "k", ref("dst2"))),
		},
		{
			Name:   "s3-get-transfer-wait-lands-late",
			About:  "stalls: a get from a frozen peer, MC_TCP_STATUS_TIMEOUT_SEC=120: TRANSFER_FAIL at the 60 s transfer wait, the bytes land after thaw (access unproven)",
			Config: Config{Clients: 2, PoolOn: B, StatusTimeout: 120 * time.Second},
			Bufs:   []Buf{src, dst},
			Steps: steps(put("", A, "k", Row, "src"), envStep(OpFreezePeer), async(get("get-frozen", A, "k", ref("dst"))),
				advance("transfer-wait", 60*time.Second), wait("wait-get", "get-frozen"), envStep(OpThawPeer),
				advance("after-thaw", 2*time.Second), look("look-after-thaw", ref("dst"))),
		},
		{
			Name:   "s4-get-256mib-frozen-midway",
			About:  "stalls: a 256 MiB get, the peer frozen at its first byte: a prefix at return, the rest after thaw",
			Config: Config{Clients: 2, PoolOn: B, Segment: 512 << 20, StatusTimeout: 120 * time.Second},
			Bufs:   []Buf{{Name: "big", Client: A, Len: 256 << 20, Fill: "k"}, {Name: "bigdst", Client: A, Len: 256 << 20}},
			Steps: steps(put("", A, "k", 256<<20, "big"), async(get("get", A, "k", ref("bigdst"))), envStep(OpFreezePeer),
				advance("transfer-wait", 60*time.Second), wait("wait-get", "get"), envStep(OpThawPeer),
				advance("after-thaw", 2*time.Second), look("look-after-thaw", ref("bigdst"))),
			FakeCannot: "the prefix that lands before the freeze depends on socket buffers and on when the SIGSTOP lands mid-transfer; the fake's transfers are atomic",
		},
		{
			Name:   "s5-get-after-client-ttl",
			About:  "stalls: the peer frozen longer than client_ttl is expired and its segment unmounted",
			Config: stall,
			Bufs:   []Buf{src, dst},
			Steps: steps(put("", A, "k", Row, "src"), envStep(OpFreezePeer), advance("past-client-ttl", 11*time.Second),
				envStep(OpThawPeer), get("get", A, "k", ref("dst"))),
		},
		{
			Name:   "s6-lease-expired-reread",
			About:  "stalls: lease 1000 ms, peer frozen 3 s: LEASE_EXPIRED with the destination written whole; a reread answers whole",
			Config: Config{Clients: 2, PoolOn: B, Lease: time.Second},
			Bufs:   []Buf{src, dst, {Name: "dst2", Client: A, Len: Row}},
			Steps: steps(put("", A, "k", Row, "src"), envStep(OpFreezePeer), async(get("get-frozen", A, "k", ref("dst"))),
				advance("frozen", 3*time.Second), envStep(OpThawPeer), wait("wait-get", "get-frozen"),
				get("reread", A, "k", ref("dst2"))),
		},
		{
			Name:   "s7-scatter-peer-frozen",
			About:  "stalls: a 4 KiB scatter into a frozen peer, status timeout 3 s: TRANSFER_FAIL, then the peer applies it on thaw and the end completes it",
			Config: Config{Clients: 2, PoolOn: B, StatusTimeout: 3 * time.Second},
			Bufs:   []Buf{src, dst},
			Steps: steps(put("warm-", A, "w", Row, "src"), start("start", A, "k", Row), envStep(OpFreezePeer),
				async(scatter("scatter-frozen", A, "k", ref("src"))), advance("status-timeout", 3*time.Second), wait("wait-scatter", "scatter-frozen"),
				fill("overwrite-source", ref("src"), "z"), envStep(OpThawPeer), end("end", A, "k"), get("get", A, "k", ref("dst"))),
		},
		{
			Name:   "s8-scatter-64mib-peer-frozen",
			About:  "stalls: a 64 MiB scatter into a peer frozen 8 s blocks the whole freeze and succeeds after thaw",
			Config: Config{Clients: 2, PoolOn: B, Segment: 128 << 20},
			Bufs:   []Buf{{Name: "big", Client: A, Len: 64 << 20, Fill: "k"}},
			Steps: steps(start("start", A, "k", 64<<20), envStep(OpFreezePeer), async(scatter("scatter-frozen", A, "k", ref("big"))),
				advance("frozen", 8*time.Second), envStep(OpThawPeer), wait("wait-scatter", "scatter-frozen"),
				end("end", A, "k")),
		},
		{
			Name:   "s9-scatter-peer-expired",
			About:  "stalls: a 4 KiB scatter into a frozen peer, default 30 s status timeout, the peer expired meanwhile",
			Config: stall,
			Bufs:   []Buf{src, dst},
			Steps: steps(put("warm-", A, "w", Row, "src"), start("start", A, "k", Row), envStep(OpFreezePeer),
				async(scatter("scatter-frozen", A, "k", ref("src"))), advance("status-timeout", 30*time.Second), wait("wait-scatter", "scatter-frozen"), envStep(OpThawPeer),
				end("end", A, "k"), revoke("revoke", A, "k"), get("get", A, "k", ref("dst"))),
		},
		{
			Name: "s10-process-exit-blocked-call",
			About: "stalls: a client killed while blocked in a get: its objects exist but cannot be read until client_ttl, " +
				"its open sessions hold their keys until the discard timeout",
			Config: Config{Clients: 2, PoolOn: B},
			Bufs:   []Buf{src, {Name: "b-src", Client: B, Len: Row, Fill: "b"}, {Name: "b-dst", Client: B, Len: Row}, dst},
			Steps: steps(put("b-", B, "kb", Row, "b-src"), start("b-start-open", B, "ko", Row), envStep(OpFreezeMaster),
				async(get("b-get-blocked", B, "kb", ref("b-dst"))), envStep(OpKillPeer), envStep(OpThawMaster),
				exist("exist", A, "kb"), get("get", A, "kb", ref("dst")), advance("past-client-ttl", 12*time.Second),
				exist("exist-after-ttl", A, "kb"), start("start-open-key", A, "ko", Row), advance("past-discard", 30*time.Second),
				start("start-after-discard", A, "ko", Row), revoke("revoke", A, "ko")),
			FakeCannot: "fakesdk runs every client in the test's process: a client cannot die with a call blocked in it, " +
				"and a dead client's segment answering TRANSFER_FAIL until client_ttl needs one segment per client",
		},
		{
			Name: "p1-get-peer-frozen-teardown",
			About: "a get from a frozen peer, MC_TCP_STATUS_TIMEOUT_SEC=120, answers TRANSFER_FAIL at the 60 s transfer wait " +
				"with its transfer still running (s3: it lands after thaw); client A is then torn down (Close: tearDownAll and " +
				"destroy) and the peer thawed: the bytes must not land, so the teardown ended the get's access",
			Config: Config{Clients: 2, PoolOn: B, StatusTimeout: 120 * time.Second},
			Bufs:   []Buf{src, dst},
			Steps: steps(put("", A, "k", Row, "src"), envStep(OpFreezePeer), async(get("get-frozen", A, "k", ref("dst"))),
				advance("transfer-wait", 60*time.Second), wait("wait-get", "get-frozen"), look("look-at-return", ref("dst")),
				Step{Name: "close-a", Client: A, Op: OpClose}, envStep(OpThawPeer),
				advance("after-thaw", 3*time.Second), look("look-after-thaw", ref("dst"))),
		},
		{
			Name: "p2-get-peer-killed-teardown",
			About: "the peer holding the only replica is killed: a get answers TRANSFER_FAIL at once (nothing can " +
				"write any more: the process is gone); client A's teardown returns and the destination stays untouched",
			Config: Config{Clients: 2, PoolOn: B},
			Bufs:   []Buf{src, dst},
			Steps: steps(put("", A, "k", Row, "src"), get("get-warm", A, "k", ref("dst")), fill("refill", ref("dst"), ""),
				envStep(OpKillPeer), get("get-dead", A, "k", ref("dst")), Step{Name: "close-a", Client: A, Op: OpClose},
				look("look-after-close", ref("dst"))),
		},
		{
			Name:   "x-get-answers",
			About:  "agreeing: absent key, another client's open session, a shorter object, a longer object",
			Config: Config{Clients: 2},
			Bufs: []Buf{{Name: "half", Client: A, Len: Row / 2, Fill: "short"}, {Name: "double", Client: A, Len: 2 * Row, Fill: "long"},
				dst},
			Steps: steps(get("get-absent", A, "absent", ref("dst")), start("b-start", B, "open", Row),
				get("get-open", A, "open", ref("dst")), put("", A, "short", Row/2, "half"), put("", A, "long", 2*Row, "double"),
				get("get-long", A, "long", ref("dst")), get("get-short", A, "short", ref("dst")), revoke("b-revoke", B, "open")),
		},
		{
			Name:   "x-start-answers",
			About:  "agreeing: start on a complete key and on another client's open session; scatter with no session",
			Config: Config{Clients: 2},
			Bufs:   []Buf{src},
			Steps: steps(put("", A, "k", Row, "src"), start("start-complete", A, "k", Row), start("b-start", B, "open", Row),
				start("start-open", A, "open", Row), scatter("scatter-no-session", A, "none", ref("src")), revoke("b-revoke", B, "open")),
		},
		{
			Name:   "x-pool-full-of-sessions",
			About:  "agreeing: a segment full of open sessions answers NO_AVAILABLE_HANDLE at once",
			Config: Config{Segment: 16 << 20},
			Steps:  steps(open16, start("start-when-full", A, "new", 1<<20)),
		},
		{
			Name:  "x-exist-lifecycle",
			About: "agreeing: batch_is_exist 0 while open, 1 after end, 0 after revoke",
			Bufs:  []Buf{src},
			Steps: steps(start("start", A, "k", Row), exist("exist-open", A, "k"), scatter("scatter", A, "k", ref("src")),
				end("end", A, "k"), exist("exist-ended", A, "k"), start("start-r", A, "r", Row), revoke("revoke-r", A, "r"),
				exist("exist-revoked", A, "r")),
		},
	}
}
