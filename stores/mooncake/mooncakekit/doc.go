// Package mooncakekit is the Mooncake store's test kit. It wires the
// Mooncake driver over the fake 0.3.13 SDK into the conformance suite (a
// factory, the scenarios the fake can stage, and the stager of
// generated/mooncake/mooncakecases), and it holds the script of scenarios
// that holds the fake SDK to the real one: scenarios against the Mooncake
// SDK (the mooncake.SDK interface of one or two clients) and the
// environment they run in, and the recording of what the SDK answered.
// Its subpackage realkit is the kit over the real SDK, behind the mooncake
// build tag.
//
// # Scenarios
//
// A scenario is a list of steps: SDK calls on client A (0) or B (1), and
// environment actions (kill, restart, freeze and thaw the master; freeze
// and thaw the process whose segment holds the pool; let time pass). Run
// plays one through an Env and records, per call step, the answers, which
// bytes of each destination changed and the timing class. The same script
// runs against the real SDK (a recorder behind the mooncake build tag,
// with an Env over real processes and real time) and against fakesdk
// (FakeEnv, on the fake's clock); the replay test compares the fake with
// the recordings in stores/mooncake/testdata/mcscenario.
//
// # Recording format
//
// One JSON file per scenario, <name>.json, written by Write (two-space
// indent, fields in the order below, a final newline):
//
//	{
//	  "scenario": "b3-second-start-held",       // Scenario.Name
//	  "source": "mooncake-real.md (3b5a594)",   // where the answers come from
//	  "sdk": "0.3.12.post1 (git: 3b5a59413)",   // the build's own version string
//	  "note": "...",                            // optional
//	  "steps": [
//	    {"step": "start-again",                 // Step.Name
//	     "answers": [-600],                     // one per key; absent: not recorded
//	     "error": "…",                          // the call raised (answers absent)
//	     "bytes": [[{"at": 0, "len": 4096, "is": "k"}]], // per destination: runs
//	     "timing": "at_once"}                   // a Timing; absent: not recorded
//	  ]
//	}
//
// A step's "timing" is the set of timing classes the real SDK was seen to
// take over the runs recorded: one class is written as a string, several
// as a sorted list (["after_retries", "at_once"]), and a replay accepts any
// member (Compare). A recorder runs each scenario at least MinRuns times
// and merges the runs (Merge): the SDK's answers, raises and bytes must be
// the same in every run, since a recording states what the SDK does every
// time; only a timing may vary (m-master-killed's exist-down answered at
// once in 3 of 5 real runs and after the connect retries in 2).
//
// A run of bytes is labelled "untouched" (the canary the runner filled),
// "zero", a key's name (the bytes that key's source held at those offsets),
// or "other". A recording need not name every step nor every field:
// recordings transcribed from docs/mooncake-sdk.md hold only what
// that document states exactly, and Compare checks only what a recording
// holds. A recorder writes every step and field.
package mooncakekit
