package gen

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Load parses and validates one spec. file names it in errors; data is its
// content. Every error found is returned at once as an ErrorList.
func Load(file string, data []byte) (*Spec, error) {
	d := &decoder{file: file}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		d.errs = append(d.errs, yamlError(file, err))
		return nil, d.errs
	}
	if root.Kind != yaml.DocumentNode || len(root.Content) != 1 {
		d.errorf(&root, "the spec is empty; want a mapping with store, package, sdk, codes and calls")
		return nil, d.errs
	}
	s := &Spec{File: file}
	d.spec(root.Content[0], s)
	if len(d.errs) == 0 {
		d.validate(s)
	}
	if len(d.errs) > 0 {
		d.errs.sort()
		return nil, d.errs
	}
	return s, nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlError turns a yaml.v3 syntax error ("yaml: line N: msg") into one
// with the file and line.
func yamlError(file string, err error) Error {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return Error{Pos: Pos{file, line, 1}, Msg: "invalid YAML: " + m[2]}
	}
	return Error{Pos: Pos{file, 1, 1}, Msg: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

type decoder struct {
	file string
	errs ErrorList
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
		if seen[k.Value] {
			d.errorf(k, "%q repeated in %s", k.Value, what)
			continue
		}
		seen[k.Value] = true
		fn(k, n.Content[i+1])
	}
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
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			d.errorf(n, "%s must be true or false, found %s", what, kindName(n))
			return
		}
		*dst = n.Value == "true"
	}
}

func (d *decoder) integer(dst *int64, what string, min int64) func(*yaml.Node) {
	return func(n *yaml.Node) {
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			d.errorf(n, "%s must be an integer, found %s", what, kindName(n))
			return
		}
		v, err := strconv.ParseInt(n.Value, 0, 64)
		if err != nil {
			d.errorf(n, "%s %q does not fit in 64 bits", what, n.Value)
			return
		}
		if v < min {
			d.errorf(n, "%s is %d; want at least %d", what, v, min)
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

var identRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
var codeNameRE = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

func (d *decoder) spec(n *yaml.Node, s *Spec) {
	d.fields(n, "the spec",
		field{"store", true, d.str(&s.Store, "store")},
		field{"package", true, d.str(&s.Package, "package")},
		field{"sdk", true, func(n *yaml.Node) {
			d.fields(n, "sdk",
				field{"name", true, d.str(&s.SDK.Name, "sdk.name")},
				field{"versions", true, d.strings(&s.SDK.Versions, "sdk.versions")})
		}},
		field{"capabilities", true, func(n *yaml.Node) { d.capabilities(n, &s.Capabilities) }},
		field{"limits", false, func(n *yaml.Node) {
			d.fields(n, "limits", field{"max_row_bytes", false, d.integer(&s.MaxRowBytes, "limits.max_row_bytes", 1)})
		}},
		field{"codes", true, func(n *yaml.Node) { d.codes(n, s) }},
		field{"calls", true, func(n *yaml.Node) {
			d.entries(n, "calls", func(k, v *yaml.Node) {
				c := &Call{Name: k.Value, Pos: d.pos(k)}
				if !identRE.MatchString(k.Value) {
					d.errorf(k, "call name %q must be lower_snake_case", k.Value)
				}
				d.call(v, c)
				s.Calls = append(s.Calls, c)
			})
		}},
		field{"admission", true, func(n *yaml.Node) {
			if n.Kind != yaml.SequenceNode {
				d.errorf(n, "admission must be a list of rule names, found %s", kindName(n))
				return
			}
			for _, e := range n.Content {
				var r string
				d.enum(&r, "admission rule", admissionRules)(e)
				s.Admission = append(s.Admission, Rule{Name: r, Pos: d.pos(e)})
			}
		}},
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
				field{"workers", false, d.integer(&s.Config.Workers, "config.workers", 1)},
				field{"rows_per_batch", false, d.integer(&s.Config.RowsPerBatch, "config.rows_per_batch", 1)},
				field{"bytes_per_batch", false, d.integer(&s.Config.BytesPerBatch, "config.bytes_per_batch", 1)})
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
		field{"max_rows_per_op", false, d.integer(&c.MaxRowsPerOp, "capabilities.max_rows_per_op", 0)})
}

// codes reads the code table: NAME: value, or NAME: {value: N, doc: "..."}.
func (d *decoder) codes(n *yaml.Node, s *Spec) {
	d.entries(n, "codes", func(k, v *yaml.Node) {
		c := Code{Name: k.Value, Pos: d.pos(k)}
		if !codeNameRE.MatchString(k.Value) {
			d.errorf(k, "code name %q must be UPPER_SNAKE_CASE", k.Value)
		}
		if v.Kind == yaml.MappingNode {
			d.fields(v, "code "+k.Value,
				field{"value", true, d.integer(&c.Value, "code "+k.Value+" value", -1<<31)},
				field{"doc", false, d.str(&c.Doc, "code "+k.Value+" doc")})
		} else {
			d.integer(&c.Value, "code "+k.Value, -1<<31)(v)
		}
		s.Codes = append(s.Codes, c)
	})
}

func (d *decoder) call(n *yaml.Node, c *Call) {
	what := "call " + c.Name
	d.fields(n, what,
		field{"op", true, d.enum(&c.Op, what+" op", ops)},
		field{"doc", false, d.str(&c.Doc, what+" doc")},
		field{"touches_memory", true, d.boolean(&c.TouchesMemory, what+" touches_memory")},
		field{"access_end", false, d.enum(&c.AccessEnd, what+" access_end", accessEnds)},
		field{"answers", true, d.enum(&c.Answers, what+" answers", answerKinds)},
		field{"cases", false, func(n *yaml.Node) {
			withCases := true
			d.boolean(&withCases, what+" cases")(n)
			c.NoCases = !withCases
		}},
		field{"whole", false, func(n *yaml.Node) { c.Whole = d.outcome(n, what+" whole") }},
		field{"short", false, func(n *yaml.Node) { c.Short = d.outcome(n, what+" short") }},
		field{"codes", false, func(n *yaml.Node) {
			d.entries(n, what+" codes", func(k, v *yaml.Node) {
				r := CodeRule{Code: k.Value, Pos: d.pos(k)}
				if o := d.outcome(v, what+" code "+k.Value); o != nil {
					r.Outcome = *o
				}
				c.Codes = append(c.Codes, r)
			})
		}},
		field{"otherwise", false, func(n *yaml.Node) { c.Otherwise = d.outcome(n, what+" otherwise") }},
	)
}

func (d *decoder) outcome(n *yaml.Node, what string) *Outcome {
	o := &Outcome{Pos: d.pos(n), FollowUp: "none"}
	d.fields(n, what,
		field{"result", true, d.enum(&o.Result, what+" result", results)},
		field{"written", false, d.enum(&o.Written, what+" written", writtenValues)},
		field{"follow_up", false, d.enum(&o.FollowUp, what+" follow_up", followUps)},
		field{"keeps_access", false, d.boolean(&o.KeepsAccess, what+" keeps_access")},
		field{"text", false, d.str(&o.Text, what+" text")},
		field{"if_exists", false, d.enum(&o.IfExists, what+" if_exists", results)},
		field{"if_absent", false, d.enum(&o.IfAbsent, what+" if_absent", results)},
		field{"stageable", false, d.boolean(&o.Stageable, what+" stageable")},
		field{"example", false, d.str(&o.Example, what+" example")},
	)
	return o
}
