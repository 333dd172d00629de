package main

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The JUnit report must be valid against junit-10.xsd (testdata/junit),
// the schema strict consumers (the Jenkins xUnit plugin) validate with. Go
// has no XSD validator, so xsdSchema reads the schema file itself and
// checks a document by its rules: the root is one of its elements; each
// element carries only the attributes its type declares, every required
// one, each value matching its simple type's pattern; holds only the
// child elements its content model names; and holds text only when its
// type is mixed or a string. It does not check the order or the number of
// children: every content model of junit-10.xsd the gate's elements use is
// a repeated choice (testcase, testsuite) or a sequence of one repeated
// element (testsuites, properties), which order and counts do not
// restrict; the one ordered sequence (rerunType) belongs to elements the
// gate never writes, and xsdSchema refuses them if they appear. A schema
// construct it does not know is an error, not a pass.

// xsdType is what the schema says of one element.
type xsdType struct {
	attrs    map[string]xsdAttr
	children map[string]*xsdType // by element name; nil value: a global element of that name
	mixed    bool                // text allowed beside the children
	simple   bool                // xs:string: text only
	ordered  bool                // its content model is an ordered sequence of several elements
}

type xsdAttr struct {
	typ      string
	required bool
}

type xsdSchema struct {
	elements map[string]*xsdType
	patterns map[string]*regexp.Regexp
}

// xmlNode is any XML element, as encoding/xml decodes it.
type xmlNode struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []xmlNode  `xml:",any"`
	Text    string     `xml:",chardata"`
}

func (n xmlNode) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// loadXSD reads an XML schema of the constructs junit-10.xsd uses.
func loadXSD(file string) (*xsdSchema, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var root xmlNode
	if err := xml.Unmarshal(b, &root); err != nil {
		return nil, err
	}
	s := &xsdSchema{elements: map[string]*xsdType{}, patterns: map[string]*regexp.Regexp{}}
	named := map[string]xmlNode{} // complexType by name
	var elems []xmlNode
	for _, n := range root.Nodes {
		switch n.XMLName.Local {
		case "simpleType":
			var pattern string
			for _, r := range n.Nodes {
				for _, p := range r.Nodes {
					if r.XMLName.Local == "restriction" && r.attr("base") == "xs:string" && p.XMLName.Local == "pattern" {
						pattern = p.attr("value")
					}
				}
			}
			if pattern == "" {
				return nil, fmt.Errorf("simpleType %s: want a restriction of xs:string by one pattern", n.attr("name"))
			}
			re, err := regexp.Compile("^(?:" + pattern + ")$") // an XSD pattern matches the whole value
			if err != nil {
				return nil, err
			}
			s.patterns[n.attr("name")] = re
		case "complexType":
			named[n.attr("name")] = n
		case "element":
			elems = append(elems, n)
		default:
			return nil, fmt.Errorf("schema: unknown construct %s", n.XMLName.Local)
		}
	}
	for _, e := range elems {
		t, err := s.element(e, named)
		if err != nil {
			return nil, err
		}
		s.elements[e.attr("name")] = t
	}
	return s, nil
}

// element reads an element declaration: a string, a named complex type
// or an inline one.
func (s *xsdSchema) element(e xmlNode, named map[string]xmlNode) (*xsdType, error) {
	switch typ := e.attr("type"); {
	case typ == "xs:string":
		return &xsdType{simple: true}, nil
	case typ != "":
		ct, ok := named[typ]
		if !ok {
			return nil, fmt.Errorf("element %s: unknown type %s", e.attr("name"), typ)
		}
		return s.complexType(ct, named)
	}
	for _, n := range e.Nodes {
		if n.XMLName.Local == "complexType" {
			return s.complexType(n, named)
		}
	}
	return nil, fmt.Errorf("element %s: no type", e.attr("name"))
}

func (s *xsdSchema) complexType(ct xmlNode, named map[string]xmlNode) (*xsdType, error) {
	t := &xsdType{attrs: map[string]xsdAttr{}, children: map[string]*xsdType{}, mixed: ct.attr("mixed") == "true"}
	var walk func(n xmlNode) error
	walk = func(n xmlNode) error {
		for _, c := range n.Nodes {
			switch c.XMLName.Local {
			case "attribute":
				t.attrs[c.attr("name")] = xsdAttr{typ: c.attr("type"), required: c.attr("use") == "required"}
			case "sequence", "choice":
				if c.XMLName.Local == "sequence" && len(c.Nodes) > 1 {
					t.ordered = true
				}
				if err := walk(c); err != nil {
					return err
				}
			case "element":
				if ref := c.attr("ref"); ref != "" {
					t.children[ref] = nil
					continue
				}
				local, err := s.element(c, named)
				if err != nil {
					return err
				}
				t.children[c.attr("name")] = local
			default:
				return fmt.Errorf("complexType: unknown construct %s", c.XMLName.Local)
			}
		}
		return nil
	}
	return t, walk(ct)
}

// validate returns every way doc breaks the schema, each at its element's
// path (/testsuites/testsuite[2]/testcase[5]).
func (s *xsdSchema) validate(doc []byte) []string {
	var root xmlNode
	if err := xml.Unmarshal(doc, &root); err != nil {
		return []string{err.Error()}
	}
	t, ok := s.elements[root.XMLName.Local]
	if !ok {
		return []string{fmt.Sprintf("/%s: no such element in the schema", root.XMLName.Local)}
	}
	var errs []string
	s.check(root, t, "/"+root.XMLName.Local, &errs)
	return errs
}

func (s *xsdSchema) check(n xmlNode, t *xsdType, path string, errs *[]string) {
	bad := func(format string, args ...any) { *errs = append(*errs, path+": "+fmt.Sprintf(format, args...)) }
	if t.ordered {
		bad("its content model is an ordered sequence, which this check does not read")
	}
	for _, a := range n.Attrs {
		if a.Name.Space == "xmlns" || a.Name.Local == "xmlns" {
			continue
		}
		d, ok := t.attrs[a.Name.Local]
		switch {
		case !ok:
			bad("attribute %q is not allowed", a.Name.Local)
		case s.patterns[d.typ] != nil && !s.patterns[d.typ].MatchString(a.Value):
			bad("attribute %s=%q does not match type %s", a.Name.Local, a.Value, d.typ)
		}
	}
	for name, d := range t.attrs {
		if d.required && n.attr(name) == "" && !hasAttr(n, name) {
			bad("required attribute %q is missing", name)
		}
	}
	if strings.TrimSpace(n.Text) != "" && !t.mixed && !t.simple {
		bad("text is not allowed here")
	}
	count := map[string]int{}
	for _, c := range n.Nodes {
		name := c.XMLName.Local
		count[name]++
		cpath := fmt.Sprintf("%s/%s[%d]", path, name, count[name])
		ct, ok := t.children[name]
		if !ok || t.simple {
			*errs = append(*errs, cpath+": element is not allowed here")
			continue
		}
		if ct == nil {
			ct = s.elements[name]
		}
		if ct == nil {
			*errs = append(*errs, cpath+": the schema declares no such element")
			continue
		}
		s.check(c, ct, cpath, errs)
	}
}

func hasAttr(n xmlNode, name string) bool {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return true
		}
	}
	return false
}

// junitXSD is the schema's path, taken before any test changes the
// working directory.
var junitXSD, _ = filepath.Abs(filepath.Join("testdata", "junit", "junit-10.xsd"))

// assertValidJUnit fails t when the JUnit report b breaks junit-10.xsd.
func assertValidJUnit(t *testing.T, b []byte) {
	t.Helper()
	s, err := loadXSD(junitXSD)
	require.NoError(t, err)
	assert.Empty(t, s.validate(b), "the JUnit report is not valid against junit-10.xsd:\n%s", b)
}

// TestTheSchemaCheckRefusesWhatJunit10Refuses: the check is no rubber
// stamp: each thing junit-10.xsd refuses, and the gate's reports once
// held, is refused, and a report of the gate's form passes.
func TestTheSchemaCheckRefusesWhatJunit10Refuses(t *testing.T) {
	s, err := loadXSD("testdata/junit/junit-10.xsd")
	require.NoError(t, err)
	ok := `<testsuites name="g" tests="1" failures="1" errors="0" time="1,234.020">
  <testsuite name="s" tests="1" failures="1" errors="0" skipped="0" time="0.010" file="spec/x.yaml">
    <properties><property name="sdk" value="x 1"></property></properties>
    <testcase classname="s" name="c" time="0.001"><failure message="m" type="case">text</failure><system-out>kind: case</system-out></testcase>
  </testsuite>
</testsuites>`
	assert.Empty(t, s.validate([]byte(ok)))
	for _, c := range []struct{ doc, want string }{
		{strings.Replace(ok, `<testsuites name="g"`, `<testsuites skipped="0" name="g"`, 1), `/testsuites: attribute "skipped" is not allowed`},
		{strings.Replace(ok, `<testcase classname="s"`, `<testcase file="spec/x.yaml" line="3" classname="s"`, 1), `/testsuites/testsuite[1]/testcase[1]: attribute "file" is not allowed`},
		{strings.Replace(ok, `<system-out>`, `<properties><property name="kind" value="case"></property></properties><system-out>`, 1), `/testsuites/testsuite[1]/testcase[1]/properties[1]: element is not allowed here`},
		{strings.Replace(ok, ` failures="1" errors="0" skipped`, ` skipped`, 1), `/testsuites/testsuite[1]: required attribute "failures" is missing`},
		{strings.Replace(ok, `time="0.010" file`, `time="1e-3" file`, 1), `/testsuites/testsuite[1]: attribute time="1e-3" does not match type SUREFIRE_TIME`},
		{strings.Replace(ok, `<system-out>kind: case</system-out>`, `<system-out><b>x</b></system-out>`, 1), `/testsuites/testsuite[1]/testcase[1]/system-out[1]/b[1]: element is not allowed here`},
		{strings.Replace(ok, `<properties>`, `stray<properties>`, 1), `/testsuites/testsuite[1]: text is not allowed here`},
		{`<testrun/>`, `/testrun: no such element in the schema`},
	} {
		assert.Contains(t, s.validate([]byte(c.doc)), c.want)
	}
}

// TestTheJUnitReportIsValid: a report with every kind of row (passed,
// failed, errored and skipped checks, a store skipped whole, extras on
// suites and cases) is valid against junit-10.xsd, and still carries its
// extras where the schema allows them.
func TestTheJUnitReportIsValid(t *testing.T) {
	r := &report{Generated: checkResult{Name: "up_to_date", Kind: kindGenerated, Status: statusPassed, Seconds: 0.04}}
	var s storeResult
	s.Store, s.SDK, s.RoundTrip, s.SpecFile = "mooncake", "mooncake-store 0.3.12.post1 (git: 3b5a59413) (fake)", "16 x 256 KiB in 3ms", "spec/mooncake-0.3.13.yaml"
	s.add(checkResult{Name: "round_trip", Kind: kindCheck, Status: statusPassed, Seconds: 1234.5678})
	s.add(checkResult{Name: "get/NIL", Kind: "case", Spec: "spec/mooncake-0.3.13.yaml:103:12", Status: statusFailed, Message: "got MISS\nwant FAULT <&>"})
	s.add(checkResult{Name: "codes_match_sdk_headers", Kind: kindSDK, Status: statusError, Message: "no enum"})
	s.add(checkResult{Name: "hold", Kind: kindCheck, Status: statusSkipped, Message: "no HoldAccess"})
	skipped := storeResult{Store: "redis", SDK: "redis-server 7.x", SkipReason: "no redis-server"}
	skipped.add(checkResult{Name: "setup", Kind: kindSetup, Status: statusSkipped, Message: "no redis-server"})
	r.Stores = []storeResult{s, skipped}
	r.finish()
	b, err := junit(r)
	require.NoError(t, err)
	assertValidJUnit(t, b)
	assert.Contains(t, string(b), `<testsuite name="mooncake" tests="4" failures="1" errors="1" skipped="1" time="0.000" file="spec/mooncake-0.3.13.yaml">`)
	assert.Contains(t, string(b), `<property name="sdk" value="mooncake-store 0.3.12.post1 (git: 3b5a59413) (fake)"></property>`)
	assert.Contains(t, string(b), `<system-out>kind: case&#xA;spec: spec/mooncake-0.3.13.yaml:103:12&#xA;</system-out>`)
	assert.Contains(t, string(b), `<failure message="got MISS" type="case">got MISS&#xA;want FAULT &lt;&amp;&gt;&#xA;spec: spec/mooncake-0.3.13.yaml:103:12</failure>`)
	assert.Contains(t, string(b), `<property name="skip_reason" value="no redis-server"></property>`)
}
