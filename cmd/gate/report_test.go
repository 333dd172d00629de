package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/generated/memoryspec/memorycases"
)

// The JUnit shape the test reads back, with encoding/xml, as a CI would.
type xmlSuites struct {
	XMLName  xml.Name   `xml:"testsuites"`
	Tests    int        `xml:"tests,attr"`
	Failures int        `xml:"failures,attr"`
	Errors   int        `xml:"errors,attr"`
	Skipped  int        `xml:"skipped,attr"`
	Suites   []xmlSuite `xml:"testsuite"`
}

type xmlSuite struct {
	Name     string    `xml:"name,attr"`
	Tests    int       `xml:"tests,attr"`
	Failures int       `xml:"failures,attr"`
	Errors   int       `xml:"errors,attr"`
	Skipped  int       `xml:"skipped,attr"`
	Cases    []xmlCase `xml:"testcase"`
}

type xmlCase struct {
	Classname  string `xml:"classname,attr"`
	Name       string `xml:"name,attr"`
	File       string `xml:"file,attr"`
	Line       int    `xml:"line,attr"`
	Properties []struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	} `xml:"properties>property"`
	Failure *struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	} `xml:"failure"`
	Skipped *struct {
		Message string `xml:"message,attr"`
	} `xml:"skipped"`
}

func (c xmlCase) property(name string) string {
	for _, p := range c.Properties {
		if p.Name == name {
			return p.Value
		}
	}
	return ""
}

// tableCounts reads PASSED, FAILED and SKIPPED of each store from the
// table the gate prints, by the columns its header line sets.
func tableCounts(t *testing.T, out string) map[string][3]int {
	t.Helper()
	rows := map[string][3]int{}
	var cols []int
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "STORE ") {
			cols = []int{strings.Index(l, "PASSED"), strings.Index(l, "FAILED"), strings.Index(l, "SKIPPED")}
			continue
		}
		if cols == nil || strings.HasPrefix(l, " ") || len(l) <= cols[2] {
			continue
		}
		var n [3]int
		for i, c := range cols {
			v, err := strconv.Atoi(strings.Fields(l[c:])[0])
			require.NoError(t, err, "table line %q", l)
			n[i] = v
		}
		rows[strings.Fields(l)[0]] = n
	}
	require.NotNil(t, cols, "no table in %q", out)
	return rows
}

func caseID(t *testing.T, id string) string {
	t.Helper()
	for _, c := range memorycases.All() {
		if c.ID == id {
			return c.Pos
		}
	}
	t.Fatalf("generated/memoryspec has no case %s", id)
	return ""
}

// TestJUnitCarriesEachFailureWithItsSpecPosition runs the gate over the
// sound memory store and the broken one this test binary registers: the
// gate exits 1, the JUnit XML parses, each store's counts are the table's,
// and the broken store's failing generated case is a <failure> carrying
// its spec position (as a property and as file and line).
func TestJUnitCarriesEachFailureWithItsSpecPosition(t *testing.T) {
	dir := t.TempDir()
	xmlFile, jsonFile := filepath.Join(dir, "gate.xml"), filepath.Join(dir, "gate.json")
	code, out, stderr := runCLI("-spec", "../../spec", "-out", "../../generated", "--store", "memory", "--store", "broken",
		"--junit", xmlFile, "--json", jsonFile)
	require.Equal(t, 1, code, "%s\n%s", out, stderr)
	assert.Contains(t, out, "gate: FAILED")

	b, err := os.ReadFile(xmlFile)
	require.NoError(t, err)
	var got xmlSuites
	require.NoError(t, xml.Unmarshal(b, &got))

	table := tableCounts(t, out)
	require.Contains(t, table, "memory")
	require.Contains(t, table, "broken")
	suites := map[string]xmlSuite{}
	sum := 0
	for _, s := range got.Suites {
		suites[s.Name] = s
		sum += len(s.Cases)
		if s.Name == "generated" {
			continue
		}
		row := table[s.Name]
		assert.Equal(t, [3]int{s.Tests - s.Failures - s.Errors - s.Skipped, s.Failures + s.Errors, s.Skipped}, row, "suite %s against the table", s.Name)
		assert.Len(t, s.Cases, s.Tests, "suite %s", s.Name)
	}
	assert.Equal(t, sum, got.Tests)
	assert.Zero(t, suites["memory"].Failures)

	// The broken store fails the check its twin breaks, and the generated
	// case that pins NOT_FOUND => MISS, at that rule's spec position.
	pos := caseID(t, "store_get/NOT_FOUND")
	var sawCheck, sawCase bool
	for _, c := range suites["broken"].Cases {
		assert.Equal(t, "broken", c.Classname)
		switch c.Name {
		case brokenCheck:
			sawCheck = c.Failure != nil
		case "store_get/NOT_FOUND":
			require.NotNil(t, c.Failure, "the failing case is no <failure>")
			assert.Equal(t, pos, c.property("spec"))
			assert.Equal(t, "case", c.property("kind"))
			file, line, _ := strings.Cut(pos, ":")
			line, _, _ = strings.Cut(line, ":")
			assert.Equal(t, file, c.File)
			assert.Equal(t, line, strconv.Itoa(c.Line))
			assert.Contains(t, c.Failure.Text, pos)
			assert.Contains(t, c.Failure.Text, "want MISS")
			sawCase = true
		}
	}
	assert.True(t, sawCheck, "the broken check is not a failure in the report")
	assert.True(t, sawCase, "the failing case is not in the report")

	// The JSON report holds the same facts.
	jb, err := os.ReadFile(jsonFile)
	require.NoError(t, err)
	var rep report
	require.NoError(t, json.Unmarshal(jb, &rep))
	assert.Equal(t, 1, rep.ExitCode)
	assert.Equal(t, got.Failures, rep.Failed)
	assert.Equal(t, got.Skipped, rep.Skipped)
	for _, s := range rep.Stores {
		assert.Equal(t, [3]int{s.Passed, s.Failed + s.Errors, s.Skipped}, table[s.Store], "JSON store %s against the table", s.Store)
		for _, c := range s.Checks {
			if c.Name == "store_get/NOT_FOUND" && s.Store == "broken" {
				assert.Equal(t, statusFailed, c.Status)
				assert.Equal(t, pos, c.Spec)
			}
		}
	}
}

// TestReportsOnAStaleTree: a stale generated/ exits 1 and still writes a
// report whose one failure says so.
func TestReportsOnAStaleTree(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(dir, "generated"), os.DirFS("../../generated")))
	p := filepath.Join(dir, "generated", "memoryspec", "codes.go")
	require.NoError(t, os.Remove(p))
	xmlFile := filepath.Join(dir, "gate.xml")
	code, _, _ := runCLI("-spec", "../../spec", "-out", filepath.Join(dir, "generated"), "--store", "memory", "--junit", xmlFile)
	assert.Equal(t, 1, code)
	b, err := os.ReadFile(xmlFile)
	require.NoError(t, err)
	var got xmlSuites
	require.NoError(t, xml.Unmarshal(b, &got))
	assert.Equal(t, 1, got.Tests)
	require.Len(t, got.Suites, 1)
	require.Len(t, got.Suites[0].Cases, 1)
	require.NotNil(t, got.Suites[0].Cases[0].Failure)
	assert.Contains(t, got.Suites[0].Cases[0].Failure.Text, p+" differs")
}

// TestAReportThatCannotBeWrittenExits2.
func TestAReportThatCannotBeWrittenExits2(t *testing.T) {
	code, _, stderr := runCLI("-spec", "../../spec", "-out", "../../generated", "--store", "memory",
		"--junit", filepath.Join(t.TempDir(), "no", "such", "dir", "gate.xml"))
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "gate: writing the report")
}

// TestSDKHeadersAgainstTheSpec: a header that declares the spec's codes
// passes; one where a release renumbered a code fails (exit 1), naming the
// spec's position and the header's; a folder without the enum is an error
// (exit 2).
func TestSDKHeadersAgainstTheSpec(t *testing.T) {
	base := []string{"-spec", "../../spec", "-out", "../../generated", "--store", "memory", "--sdk-enum", "MemoryCode"}
	code, out, stderr := runCLI(base[:6]...)
	require.Equal(t, 0, code, "%s\n%s", out, stderr)
	without := tableCounts(t, out)["memory"]
	code, out, stderr = runCLI(append(base, "--sdk-include", "testdata/headers-ok")...)
	require.Equal(t, 0, code, "%s\n%s", out, stderr)
	with := tableCounts(t, out)["memory"]
	assert.Equal(t, [3]int{without[0] + 1, 0, 0}, with, "the header check is one more passed check")

	xmlFile := filepath.Join(t.TempDir(), "gate.xml")
	code, out, _ = runCLI(append(base, "--sdk-include", "testdata/headers-renumbered", "--junit", xmlFile)...)
	assert.Equal(t, 1, code)
	full := lineOf(t, "../../spec/memory.yaml", "  FULL:")
	want := "spec/memory.yaml:" + strconv.Itoa(full) + ":3: code FULL is -3 here, but testdata/headers-renumbered/memory_codes.h:7 declares FULL = -30"
	assert.Contains(t, out, "memory FAILED codes_match_sdk_headers: "+want)
	b, err := os.ReadFile(xmlFile)
	require.NoError(t, err)
	assert.Contains(t, string(b), want)

	code, out, _ = runCLI(append(base, "--sdk-include", t.TempDir())...)
	assert.Equal(t, 2, code)
	assert.Contains(t, out, "memory ERROR codes_match_sdk_headers")
	assert.Contains(t, out, "no header")
}

func lineOf(t *testing.T, file, prefix string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	for i, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, prefix) {
			return i + 1
		}
	}
	t.Fatalf("%s has no line starting %q", file, prefix)
	return 0
}
