package gen

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/kvblob/kvblob/runtime/rules"
)

// Load parses and validates one spec. file names it in errors; data is its
// content. Every error found is returned at once as an ErrorList: schema
// errors and, for what the schema could read, the validator's errors.
func Load(file string, data []byte) (*Spec, error) {
	d := &decoder{file: file, ok: map[string]bool{}, bad: map[Pos]bool{}}
	if pos, b, ok := firstNonUTF8(data); !ok {
		d.errs = append(d.errs, Error{Pos: Pos{file, pos.Line, pos.Col},
			Msg: fmt.Sprintf("byte 0x%02x is not UTF-8; a spec is UTF-8 text", b)})
		return nil, d.errs
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil && !errors.Is(err, io.EOF) {
		d.errs = append(d.errs, yamlError(file, "", err))
		return nil, d.errs
	}
	if root.Kind != yaml.DocumentNode || len(root.Content) != 1 {
		d.errs = append(d.errs, Error{Pos: Pos{file, 1, 1}, Msg: "the spec is empty; want a mapping with store, sdk, capabilities, codes, calls and admission"})
		return nil, d.errs
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		d.errorf(&next, "a second YAML document starts here; a spec is one document: remove this \"---\" and what follows, or move it to a file of its own")
	} else if !errors.Is(err, io.EOF) {
		d.errs = append(d.errs, yamlError(file, " after the first document (a spec is one document)", err))
	}
	s := &Spec{File: file, Comment: fileComment(&root)}
	d.spec(root.Content[0], s)
	d.validate(s)
	if len(d.errs) > 0 {
		d.errs.sort()
		return nil, d.errs
	}
	return s, nil
}

// firstNonUTF8 finds the first byte of data that is not UTF-8, and its
// line and column (in characters, as yaml.v3 counts them).
func firstNonUTF8(data []byte) (pos Pos, b byte, ok bool) {
	if utf8.Valid(data) {
		return Pos{}, 0, true
	}
	line, col := 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			return Pos{Line: line, Col: col}, data[i], false
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += size
	}
	return Pos{}, 0, true
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlError turns a yaml.v3 syntax error ("yaml: line N: msg") into one
// with the file and line; where says where it was found.
func yamlError(file, where string, err error) Error {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return Error{Pos: Pos{file, line, 1}, Msg: "invalid YAML" + where + ": " + m[2]}
	}
	return Error{Pos: Pos{file, 1, 1}, Msg: "invalid YAML" + where + ": " + strings.TrimPrefix(msg, "yaml: ")}
}

type decoder struct {
	file string
	errs ErrorList
	// ok holds the top-level keys that were present and read without
	// error, and bad the positions of calls, outcomes and codes that were
	// not: the validator checks only what the schema could read, so a
	// schema error neither hides its errors nor makes it invent others.
	ok  map[string]bool
	bad map[Pos]bool
}

// track runs decode and reports whether it added no error.
func (d *decoder) track(decode func()) bool {
	n := len(d.errs)
	decode()
	return len(d.errs) == n
}

func (d *decoder) pos(n *yaml.Node) Pos { return Pos{d.file, n.Line, n.Column} }

func (d *decoder) errorf(n *yaml.Node, format string, args ...any) {
	d.errs = append(d.errs, Error{Pos: d.pos(n), Msg: fmt.Sprintf(format, args...)})
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "a document"
}

// field is one key a mapping may hold.
type field struct {
	name     string
	required bool
	decode   func(*yaml.Node)
}

// fields decodes mapping n of what (e.g. "call batch_get_into") strictly:
// unknown keys, repeated keys and missing required keys are errors.
func (d *decoder) fields(n *yaml.Node, what string, fs ...field) {
	if n.Kind != yaml.MappingNode {
		d.errorf(n, "%s must be a mapping, found %s", what, kindName(n))
		return
	}
	byName := map[string]field{}
	names := make([]string, len(fs))
	for i, f := range fs {
		byName[f.name] = f
		names[i] = f.name
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !d.plainKey(k, what) {
			continue
		}
		f, ok := byName[k.Value]
		if !ok {
			d.errorf(k, "unknown key %q in %s; want %s", k.Value, what, quoteList(names))
			continue
		}
		if seen[k.Value] {
			d.errorf(k, "key %q repeated in %s", k.Value, what)
			continue
		}
		seen[k.Value] = true
		f.decode(v)
	}
	for _, f := range fs {
		if f.required && !seen[f.name] {
			d.errorf(n, "%s has no %q; it is required", what, f.name)
		}
	}
}

// entries calls fn for each key of mapping n, in file order, refusing
// repeated keys.
func (d *decoder) entries(n *yaml.Node, what string, fn func(k, v *yaml.Node)) {
	if n.Kind != yaml.MappingNode {
		d.errorf(n, "%s must be a mapping, found %s", what, kindName(n))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !d.plainKey(k, what) {
			continue
		}
		if seen[k.Value] {
			d.errorf(k, "%q repeated in %s", k.Value, what)
			continue
		}
		seen[k.Value] = true
		fn(k, n.Content[i+1])
	}
}

// plainKey reports whether key k is a plain scalar name, reporting it if
// not (YAML allows a list, a mapping or an alias as a key; a spec does not).
func (d *decoder) plainKey(k *yaml.Node, what string) bool {
	if k.Kind == yaml.ScalarNode {
		return true
	}
	d.errorf(k, "a key in %s is %s; keys are plain names", what, kindName(k))
	return false
}

// quotedAs reports whether n is a string scalar (quoted or tagged !!str)
// whose text, written plain, would read as tag: "-5" or !!str -5 where an
// integer is wanted.
func quotedAs(n *yaml.Node, tag string) bool {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		return false
	}
	var plain yaml.Node
	if err := yaml.Unmarshal([]byte(n.Value), &plain); err != nil || len(plain.Content) != 1 {
		return false
	}
	return plain.Content[0].Kind == yaml.ScalarNode && plain.Content[0].Tag == tag
}

func (d *decoder) str(dst *string, what string) func(*yaml.Node) {
	return func(n *yaml.Node) {
		if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
			d.errorf(n, "%s must be a string, found %s", what, kindName(n))
			return
		}
		*dst = n.Value
	}
}

func (d *decoder) enum(dst *string, what string, allowed []string) func(*yaml.Node) {
	return func(n *yaml.Node) {
		if n.Kind != yaml.ScalarNode || n.Tag != "!!str" || !oneOf(n.Value, allowed) {
			d.errorf(n, "%s is %s; want %s", what, kindName(n), quoteList(allowed))
			return
		}
		*dst = n.Value
	}
}

func (d *decoder) boolean(dst *bool, what string) func(*yaml.Node) {
	return func(n *yaml.Node) {
		if quotedAs(n, "!!bool") {
			d.errorf(n, "%s must be true or false, found a string; write %s without quotes or a !!str tag", what, n.Value)
			return
		}
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			d.errorf(n, "%s must be true or false, found %s", what, kindName(n))
			return
		}
		*dst = n.Value == "true"
	}
}

// integer reads an integer from min to max; why, if set, says where the
// bound comes from.
func (d *decoder) integer(dst *int64, what string, min, max int64, why string) func(*yaml.Node) {
	return func(n *yaml.Node) {
		if quotedAs(n, "!!int") {
			d.errorf(n, "%s must be an integer, found a string; write %s without quotes or a !!str tag", what, n.Value)
			return
		}
		// yaml.v3 reads an integer too large for 64 bits as a float.
		tooLarge := n.Kind == yaml.ScalarNode && n.Tag == "!!float" && decimalRE.MatchString(n.Value)
		if !tooLarge && (n.Kind != yaml.ScalarNode || n.Tag != "!!int") {
			d.errorf(n, "%s must be an integer, found %s", what, kindName(n))
			return
		}
		want := fmt.Sprintf("want at least %d", min)
		if max != math.MaxInt64 {
			want = fmt.Sprintf("want %d to %d", min, max)
		}
		if why != "" {
			want += " (" + why + ")"
		}
		v, err := strconv.ParseInt(n.Value, 0, 64)
		if err == nil && v < min || max != math.MaxInt64 && (err != nil || v > max) {
			d.errorf(n, "%s is %s; %s", what, n.Value, want)
			return
		}
		if err != nil {
			d.errorf(n, "%s is %s; want at most %d", what, n.Value, int64(math.MaxInt64))
			return
		}
		*dst = v
	}
}

func (d *decoder) strings(dst *[]string, what string) func(*yaml.Node) {
	return func(n *yaml.Node) {
		if n.Kind != yaml.SequenceNode {
			d.errorf(n, "%s must be a list of strings, found %s", what, kindName(n))
			return
		}
		*dst = []string{}
		for _, e := range n.Content {
			var s string
			d.str(&s, what+" entry")(e)
			*dst = append(*dst, s)
		}
	}
}

// versions reads sdk.versions: strings that rules.CheckVersion accepts,
// each refused at its own position.
func (d *decoder) versions(dst *[]string) func(*yaml.Node) {
	return func(n *yaml.Node) {
		d.strings(dst, "sdk.versions")(n)
		if n.Kind != yaml.SequenceNode || len(*dst) != len(n.Content) {
			return
		}
		for i, v := range *dst {
			if why := rules.CheckVersion(v); why != "" {
				d.errorf(n.Content[i], "sdk.versions entry %q %s", v, why)
			}
		}
	}
}

// verified reads sdk.verified: the commits the spec was verified on, each
// an abbreviated git hash (rules.CheckCommit), none twice, each refused at
// its own position.
func (d *decoder) verified(sdk *SDK) func(*yaml.Node) {
	return func(n *yaml.Node) {
		sdk.HasVerified = true
		d.strings(&sdk.Verified, "sdk.verified")(n)
		if n.Kind != yaml.SequenceNode || len(sdk.Verified) != len(n.Content) {
			return
		}
		for i, c := range sdk.Verified {
			if n.Content[i].Kind != yaml.ScalarNode || n.Content[i].Tag != "!!str" {
				continue // refused as no string
			}
			if why := rules.CheckCommit(c); why != "" {
				d.errorf(n.Content[i], "sdk.verified entry %q %s", c, why)
				continue
			}
			for j, prev := range sdk.Verified[:i] {
				if rules.SameCommit(prev, c) {
					d.errorf(n.Content[i], "sdk.verified entry %q names the commit of entry %q (%s); list each commit once", c, prev, d.pos(n.Content[j]))
					break
				}
			}
		}
	}
}

// minKeyBytes is the least keys.max_bytes: the keys the generated
// admission cases submit have up to 9 bytes ("a b/v1/00"), and the shortest
// key of all, a/v1/00, has 7.
const minKeyBytes = 9

var decimalRE = regexp.MustCompile(`^[-+]?[0-9][0-9_]*$`)
var identRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
var codeNameRE = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

func (d *decoder) spec(n *yaml.Node, s *Spec) {
	// key marks a top-level key read without error in d.ok.
	key := func(name string, decode func(*yaml.Node)) func(*yaml.Node) {
		return func(n *yaml.Node) { d.ok[name] = d.track(func() { decode(n) }) }
	}
	d.fields(n, "the spec",
		field{"store", true, key("store", func(n *yaml.Node) {
			s.StorePos = d.pos(n)
			d.str(&s.Store, "store")(n)
		})},
		field{"variant", false, key("variant", func(n *yaml.Node) {
			s.VariantPos = d.pos(n)
			d.str(&s.Variant, "variant")(n)
		})},
		field{"sdk", true, key("sdk", func(n *yaml.Node) {
			d.fields(n, "sdk",
				field{"name", true, d.str(&s.SDK.Name, "sdk.name")},
				field{"versions", true, d.versions(&s.SDK.Versions)},
				field{"verified", false, d.verified(&s.SDK)})
		})},
		field{"capabilities", true, key("capabilities", func(n *yaml.Node) { d.capabilities(n, &s.Capabilities) })},
		field{"limits", false, key("limits", func(n *yaml.Node) {
			d.fields(n, "limits", field{"max_row_bytes", false, func(n *yaml.Node) {
				if n.Kind != yaml.MappingNode {
					d.integer(&s.MaxRowBytes, "limits.max_row_bytes", 1, math.MaxInt64, "")(n)
					return
				}
				// {bound: N, at_open: true}: the driver reads the limit at
				// open, and N bounds what it may read.
				d.fields(n, "limits.max_row_bytes",
					field{"bound", true, d.integer(&s.MaxRowBytes, "limits.max_row_bytes.bound", 1, math.MaxInt64, "")},
					field{"at_open", true, func(v *yaml.Node) {
						d.boolean(&s.MaxRowBytesAtOpen, "limits.max_row_bytes.at_open")(v)
						if v.Tag == "!!bool" && !s.MaxRowBytesAtOpen {
							d.errorf(v, "limits.max_row_bytes.at_open is false; write the limit as a number (max_row_bytes: N) when the spec fixes it")
						}
					}})
			}})
		})},
		field{"keys", false, key("keys", func(n *yaml.Node) {
			s.Keys.Pos = d.pos(n)
			d.fields(n, "keys",
				field{"max_bytes", false, func(n *yaml.Node) {
					s.Keys.MaxBytesPos = d.pos(n)
					d.integer(&s.Keys.MaxBytes, "keys.max_bytes", minKeyBytes, math.MaxInt32, "the generated cases submit keys of up to 9 bytes, such as a b/v1/00")(n)
				}},
				field{"refuse", false, func(n *yaml.Node) {
					if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
						d.errorf(n, "keys.refuse must be a list of byte classes (%s), found %s; leave it out to refuse none", quoteList(keyClasses), kindName(n))
						return
					}
					seen := map[string]bool{}
					for _, e := range n.Content {
						var c string
						if !d.track(func() { d.enum(&c, "keys.refuse entry", keyClasses)(e) }) {
							continue
						}
						if seen[c] {
							d.errorf(e, "keys.refuse lists %q twice", c)
							continue
						}
						seen[c] = true
						s.Keys.Refuse = append(s.Keys.Refuse, c)
						s.Keys.RefusePos = append(s.Keys.RefusePos, d.pos(e))
					}
				}},
				field{"well_formed", false, func(n *yaml.Node) {
					s.Keys.WellFormedPos = d.pos(n)
					d.boolean(&s.Keys.WellFormed, "keys.well_formed")(n)
				}})
		})},
		field{"codes", true, func(n *yaml.Node) {
			d.ok["codes"] = n.Kind == yaml.MappingNode
			d.codes(n, s)
		}},
		field{"calls", true, func(n *yaml.Node) {
			d.ok["calls"] = n.Kind == yaml.MappingNode
			d.entries(n, "calls", func(k, v *yaml.Node) {
				c := &Call{Name: k.Value, Pos: d.pos(k), Comment: entryComment(k, v, answerFields)}
				if !identRE.MatchString(k.Value) {
					d.errorf(k, "call name %q must be lower_snake_case", k.Value)
				}
				d.call(v, c)
				s.Calls = append(s.Calls, c)
			})
		}},
		field{"admission", true, key("admission", func(n *yaml.Node) {
			s.AdmissionPos = d.pos(n)
			if n.Kind != yaml.SequenceNode {
				d.errorf(n, "admission must be a list of rule names, found %s", kindName(n))
				return
			}
			for _, e := range n.Content {
				var r string
				d.enum(&r, "admission rule", admissionRules)(e)
				s.Admission = append(s.Admission, Rule{Name: r, Pos: d.pos(e)})
			}
		})},
		field{"environment", false, func(n *yaml.Node) {
			d.entries(n, "environment", func(k, v *yaml.Node) {
				e := EnvRule{Name: k.Value, Pos: d.pos(k)}
				d.fields(v, "environment "+k.Value,
					field{"allow", true, d.strings(&e.Allow, "allow")},
					field{"reason", true, d.str(&e.Reason, "reason")})
				s.Environment = append(s.Environment, e)
			})
		}},
		field{"config", false, func(n *yaml.Node) {
			d.fields(n, "config",
				field{"workers", false, d.integer(&s.Config.Workers, "config.workers", 1, math.MaxInt64, "")},
				field{"rows_per_batch", false, d.integer(&s.Config.RowsPerBatch, "config.rows_per_batch", 1, math.MaxInt64, "")},
				field{"bytes_per_batch", false, d.integer(&s.Config.BytesPerBatch, "config.bytes_per_batch", 1, math.MaxInt64, "")})
		}},
	)
}

func (d *decoder) capabilities(n *yaml.Node, c *Capabilities) {
	d.fields(n, "capabilities",
		field{"hints", false, d.boolean(&c.Hints, "capabilities.hints")},
		field{"absent_is_miss", false, d.boolean(&c.AbsentIsMiss, "capabilities.absent_is_miss")},
		field{"device_memory", false, d.boolean(&c.DeviceMemory, "capabilities.device_memory")},
		field{"multi_span", false, d.boolean(&c.MultiSpan, "capabilities.multi_span")},
		field{"probe", false, d.boolean(&c.Probe, "capabilities.probe")},
		field{"evicts", false, d.boolean(&c.Evicts, "capabilities.evicts")},
		field{"max_rows_per_op", false, d.integer(&c.MaxRowsPerOp, "capabilities.max_rows_per_op", 0, math.MaxInt64, "")})
}

// codeBound says why a code's value is bounded.
const codeBound = "an SDK code is a 32-bit signed integer"

// codes reads the code table: NAME: value, or NAME: {value: N, doc: "..."}.
func (d *decoder) codes(n *yaml.Node, s *Spec) {
	d.entries(n, "codes", func(k, v *yaml.Node) {
		c := Code{Name: k.Value, Pos: d.pos(k), Comment: entryComment(k, v, nil)}
		if !codeNameRE.MatchString(k.Value) {
			d.errorf(k, "code name %q must be UPPER_SNAKE_CASE", k.Value)
		}
		d.bad[c.Pos] = !d.track(func() {
			if v.Kind == yaml.MappingNode {
				d.fields(v, "code "+k.Value,
					field{"value", true, d.integer(&c.Value, "code "+k.Value+" value", math.MinInt32, math.MaxInt32, codeBound)},
					field{"doc", false, d.str(&c.Doc, "code "+k.Value+" doc")})
			} else {
				d.integer(&c.Value, "code "+k.Value, math.MinInt32, math.MaxInt32, codeBound)(v)
			}
		})
		s.Codes = append(s.Codes, c)
	})
}

func (d *decoder) call(n *yaml.Node, c *Call) {
	what := "call " + c.Name
	// own marks the call bad when one of its own fields fails: the
	// validator's call rules then skip it (its outcomes are tracked apart).
	own := func(decode func(*yaml.Node)) func(*yaml.Node) {
		return func(n *yaml.Node) {
			if !d.track(func() { decode(n) }) {
				d.bad[c.Pos] = true
			}
		}
	}
	keys := mappingKeys(n)
	touches := false
	defer func() {
		if c.Op == "" || c.Answers == "" || !touches {
			d.bad[c.Pos] = true // missing, or not a mapping at all
		}
	}()
	d.fields(n, what,
		field{"op", true, own(d.enum(&c.Op, what+" op", ops))},
		field{"doc", false, d.str(&c.Doc, what+" doc")},
		field{"touches_memory", true, own(func(n *yaml.Node) {
			touches = true
			d.boolean(&c.TouchesMemory, what+" touches_memory")(n)
		})},
		field{"access_end", false, own(d.enum(&c.AccessEnd, what+" access_end", accessEnds))},
		field{"answers", true, own(d.enum(&c.Answers, what+" answers", answerKinds))},
		field{"cases", false, func(n *yaml.Node) {
			withCases := true
			d.boolean(&withCases, what+" cases")(n)
			c.NoCases = !withCases
		}},
		field{"whole", false, func(n *yaml.Node) { c.Whole = d.answer(keys["whole"], n, what+" whole") }},
		field{"short", false, func(n *yaml.Node) { c.Short = d.answer(keys["short"], n, what+" short") }},
		field{"codes", false, func(n *yaml.Node) {
			d.entries(n, what+" codes", func(k, v *yaml.Node) {
				r := CodeRule{Code: k.Value, Pos: d.pos(k)}
				if o := d.answer(k, v, what+" code "+k.Value); o != nil {
					r.Meaning = *o
				}
				c.Codes = append(c.Codes, r)
			})
		}},
		field{"otherwise", false, func(n *yaml.Node) { c.Otherwise = d.answer(keys["otherwise"], n, what+" otherwise") }},
	)
}

// answer decodes one answer's outcome, value n of key k, with its comments.
func (d *decoder) answer(k, n *yaml.Node, what string) *Meaning {
	o := d.outcome(n, what)
	o.Comment = entryComment(k, n, nil)
	return o
}

func (d *decoder) outcome(n *yaml.Node, what string) *Meaning {
	o := &Meaning{Pos: d.pos(n), FollowUp: "none"}
	defer func(before int) { d.bad[o.Pos] = len(d.errs) > before }(len(d.errs))
	d.fields(n, what,
		field{"result", true, d.enum(&o.Result, what+" result", stepResults)},
		field{"written", false, d.enum(&o.Written, what+" written", writtenValues)},
		field{"follow_up", false, d.enum(&o.FollowUp, what+" follow_up", followUps)},
		field{"keeps_access", false, d.boolean(&o.KeepsAccess, what+" keeps_access")},
		field{"text", false, d.str(&o.Text, what+" text")},
		field{"if_exists", false, d.enum(&o.IfExists, what+" if_exists", results)},
		field{"if_absent", false, d.enum(&o.IfAbsent, what+" if_absent", results)},
		field{"if_other", false, d.enum(&o.IfOther, what+" if_other", results)},
		field{"stageable", false, d.boolean(&o.Stageable, what+" stageable")},
		field{"example", false, d.str(&o.Example, what+" example")},
	)
	return o
}
