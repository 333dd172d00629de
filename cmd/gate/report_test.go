package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The JUnit shape the test reads back, with encoding/xml, as a CI would.
type xmlSuites struct {
	XMLName  xml.Name   `xml:"testsuites"`
	Tests    int        `xml:"tests,attr"`
	Failures int        `xml:"failures,attr"`
	Errors   int        `xml:"errors,attr"`
	Suites   []xmlSuite `xml:"testsuite"`
}

type xmlSuite struct {
	Name     string    `xml:"name,attr"`
	File     string    `xml:"file,attr"`
	Tests    int       `xml:"tests,attr"`
	Failures int       `xml:"failures,attr"`
	Errors   int       `xml:"errors,attr"`
	Skipped  int       `xml:"skipped,attr"`
	Cases    []xmlCase `xml:"testcase"`
}

type xmlCase struct {
	Classname string `xml:"classname,attr"`
	Name      string `xml:"name,attr"`
	SystemOut string `xml:"system-out"`
	Failure   *struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	} `xml:"failure"`
	Skipped *struct {
		Message string `xml:"message,attr"`
	} `xml:"skipped"`
}

// property reads "name: value" from the case's system-out.
func (c xmlCase) property(name string) string {
	for _, l := range strings.Split(c.SystemOut, "\n") {
		if v, ok := strings.CutPrefix(l, name+": "); ok {
			return v
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

// TestReportsOnAStaleTree: a stale generated/ exits 1 and still writes a
// report whose one failure says so.
func TestReportsOnAStaleTree(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(dir, "generated"), os.DirFS("../../generated")))
	p := filepath.Join(dir, "generated", "memory", "store.go")
	require.NoError(t, os.Remove(p))
	xmlFile := filepath.Join(dir, "gate.xml")
	code, _, _ := runCLI("-spec", "../../spec", "-out", filepath.Join(dir, "generated"), "--store", "memory", "--junit", xmlFile)
	assert.Equal(t, 1, code)
	b, err := os.ReadFile(xmlFile)
	require.NoError(t, err)
	assertValidJUnit(t, b)
	var got xmlSuites
	require.NoError(t, xml.Unmarshal(b, &got))
	assert.Equal(t, 1, got.Tests)
	require.Len(t, got.Suites, 1)
	require.Len(t, got.Suites[0].Cases, 1)
	require.NotNil(t, got.Suites[0].Cases[0].Failure)
	assert.Contains(t, got.Suites[0].Cases[0].Failure.Text, p+" differs")
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
