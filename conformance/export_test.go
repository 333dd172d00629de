package conformance

// Verdict is how a check went on a recorder.
type Verdict = verdict

// RunRecorded runs c as Run does, on a recorder: how the pairing tests
// watch a check fail against a broken twin.
func RunRecorded(c Check, f Factory, s Suite) Verdict { return runRecorded(c, f, s) }

// Checked is one check's verdict and the facts it logged for the gate.
type Checked struct {
	Verdict
	Facts []string
}

// RunOnRecorders runs s as Run does, with the store and each check on a
// recorder in place of go test's subtests: the store's verdict, the facts
// it logged for the gate (FactLine lines, as "key: value"), and each
// check's verdict with its facts.
func RunOnRecorders(s Suite) (store Verdict, facts []string, checks []Checked) {
	var logs []string
	store = recordLogs(s.Name, &logs, func(t T) {
		s.run(t, func(name string, f func(T)) {
			var clogs []string
			v := recordLogs(name, &clogs, f)
			checks = append(checks, Checked{v, factsOf(clogs)})
		})
	})
	return store, factsOf(logs), checks
}

func recordLogs(name string, logs *[]string, run func(T)) Verdict {
	var r *recorder
	v := record(name, func(t T) {
		r = t.(*recorder)
		run(t)
	})
	*logs = r.logs
	return v
}

func factsOf(logs []string) []string {
	var out []string
	for _, l := range logs {
		if k, v, ok := ParseFact("    x.go:1: " + l); ok {
			out = append(out, k+": "+v)
		}
	}
	return out
}
