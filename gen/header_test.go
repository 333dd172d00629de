package gen

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/internal/bound"
)

func loadHeaderSpec(t *testing.T) *Spec {
	t.Helper()
	data, err := os.ReadFile("testdata/header/hdr-1.yaml")
	require.NoError(t, err)
	s, err := Load("testdata/header/hdr-1.yaml", data)
	require.NoError(t, err)
	return s
}

// TestParseEnumReadsAHeaderAsTheCompilerWould: comments, a forward
// declaration, a string, another enum and a commented-out enum of the same
// name are not the enum; hex, parentheses, implicit values, references,
// attributes and preprocessor lines in the body are read.
func TestParseEnumReadsAHeaderAsTheCompilerWould(t *testing.T) {
	codes, err := findEnum(t, "testdata/header/ok/sdk.h", "ErrorCode")
	require.NoError(t, err)
	var got []string
	for _, c := range codes {
		got = append(got, c.Name+"="+itoa(c.Value)+"@"+itoa(int64(c.Line)))
	}
	assert.Equal(t, []string{
		"OK=0@18", "INTERNAL_ERROR=-1@19", "BUFFER_OVERFLOW=-10@21",
		"OBJECT_NOT_FOUND=-704@25", "OBJECT_ALREADY_EXISTS=-703@26", "LEASE_EXPIRED=-707@27",
	}, got)
	assert.Empty(t, CheckHeader(loadHeaderSpec(t), codes, "ErrorCode"))
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// TestCheckHeaderNamesBothPositions: a renumbered code fails at the spec's
// position and names the header's line and value.
func TestCheckHeaderNamesBothPositions(t *testing.T) {
	codes, err := findEnum(t, "testdata/header/renumbered", "ErrorCode")
	require.NoError(t, err)
	errs := CheckHeader(loadHeaderSpec(t), codes, "ErrorCode")
	want := filepath.Join("testdata/header/renumbered", "sdk.h")
	assert.Equal(t, "testdata/header/hdr-1.yaml:13:3: code LEASE_EXPIRED is -707 here, but "+want+":8 declares LEASE_EXPIRED = -708", errs.Error())
}

// TestCheckHeaderNamesMissingAndExtraCodes: a code only the spec lists, and
// one only the header declares, each fail; the header's is placed after
// the code it follows in the header.
func TestCheckHeaderNamesMissingAndExtraCodes(t *testing.T) {
	src := `enum ErrorCode {
  OK = 0,
  INTERNAL_ERROR = -1,
  BUFFER_OVERFLOW = -10,
  BUFFER_UNDERFLOW = -11,
  OBJECT_NOT_FOUND = -704,
  OBJECT_ALREADY_EXISTS = -703
};`
	codes, err := parseEnum(t, "x.h", []byte(src), "ErrorCode")
	require.NoError(t, err)
	errs := CheckHeader(loadHeaderSpec(t), codes, "ErrorCode")
	assert.Equal(t, strings.Join([]string{
		"testdata/header/hdr-1.yaml:10:3: x.h:5 declares BUFFER_UNDERFLOW = -11, which the spec's code table does not list",
		"testdata/header/hdr-1.yaml:13:3: code LEASE_EXPIRED = -707 is not in the SDK's enum ErrorCode (x.h)",
	}, "\n"), errs.Error())
}

func TestParseEnumRefusesWhatItCannotRead(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"absent", "enum class Other { A = 1 };", "x.h: declares no enum ErrorCode"},
		{"twice", "enum ErrorCode { A = 1 };\nenum ErrorCode { A = 2 };", "x.h:2: enum ErrorCode is declared again here (first at x.h:1)"},
		{"macro", "enum ErrorCode {\n  A = 1,\n  B = SDK_BASE - 1,\n};", "x.h:3: B = SDK_BASE - 1: SDK_BASE is no earlier enumerator"},
		{"garbage", "enum ErrorCode {\n  A = 1,\n  B C,\n};", `x.h:3: cannot read "B C" as an enumerator of ErrorCode`},
		{"repeated", "enum ErrorCode {\n  A = 1,\n  A = 2,\n};", "x.h:3: A is declared twice in enum ErrorCode"},
		{"empty", "enum ErrorCode {\n};", "x.h:1: enum ErrorCode has no enumerators"},
	}
	for _, c := range cases {
		_, err := parseEnum(t, "x.h", []byte(c.src), "ErrorCode")
		if assert.Error(t, err, c.name) {
			assert.Contains(t, err.Error(), c.want, c.name)
		}
	}
}

func TestParseEnumValues(t *testing.T) {
	src := "typedef enum {\n A = 0x10, B = 1 << 4 | 1, C = ~0, D = (A + B) * 2, E = 0b101, F = 1'000u, G\n} ErrorCode;"
	codes, err := parseEnum(t, "x.h", []byte(src), "ErrorCode")
	require.NoError(t, err)
	got := map[string]int64{}
	for _, c := range codes {
		got[c.Name] = c.Value
	}
	assert.Equal(t, map[string]int64{"A": 16, "B": 17, "C": -1, "D": 66, "E": 5, "F": 1000, "G": 1001}, got)
}

func TestFindEnumNeedsExactlyOneHeader(t *testing.T) {
	dir := t.TempDir()
	_, err := findEnum(t, dir, "ErrorCode")
	assert.ErrorContains(t, err, "no header")
	for _, n := range []string{"a.h", "b.hpp"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte("enum ErrorCode { OK = 0 };"), 0o644))
	}
	_, err = findEnum(t, dir, "ErrorCode")
	assert.ErrorContains(t, err, "defined in 2 headers")
}

// TestEvalCFollowsCsPrecedenceAndAssociativity: each operator computes
// what C's does; of two operators of adjacent levels, the higher binds
// first whichever comes first; operators of one level bind left to right;
// literals are read in every base, with separators and suffixes; a name
// is an earlier enumerator, qualified or not. Each expression's value
// differs from what a wrong precedence or associativity would give.
func TestEvalCFollowsCsPrecedenceAndAssociativity(t *testing.T) {
	known := map[string]int64{"A": 3, "B": -2}
	for _, c := range []struct {
		expr string
		want int64
	}{
		// each operator
		{"6 | 3", 7}, {"6 ^ 3", 5}, {"6 & 3", 2}, {"1 << 3", 8}, {"-16 >> 2", -4},
		{"6 + 3", 9}, {"6 - 3", 3}, {"6 * 3", 18}, {"7 / 2", 3}, {"-7 / 2", -3}, {"7 % 3", 1}, {"-7 % 3", -1},
		// adjacent levels, the higher one second and first
		{"1 | 2 ^ 3", 1}, {"1 ^ 1 | 1", 1},
		{"6 ^ 3 & 5", 7}, {"3 & 5 ^ 6", 7},
		{"6 & 1 << 2", 4}, {"1 << 2 & 3", 0}, {"6 & 16 >> 2", 4},
		{"1 << 1 + 1", 4}, {"1 + 1 << 1", 4}, {"16 >> 1 + 1", 4}, {"1 - 1 << 1", 0},
		{"1 + 2 * 3", 7}, {"2 * 3 + 1", 7}, {"7 - 6 / 2", 4}, {"7 - 5 % 3", 5},
		// one level, left to right
		{"1 << 4 >> 2", 4}, {"10 - 2 - 3", 5}, {"1 - 2 + 3", 2}, {"64 / 4 / 2", 8}, {"7 * 3 % 4", 1}, {"7 % 4 * 2", 6},
		{"2 * 3 / 4", 1}, {"9 % 5 / 2", 2}, {"9 / 2 % 3", 1},
		// unary operators and parentheses
		{"-5", -5}, {"+5", 5}, {"~5", -6}, {"- -5", 5}, {"-(2 + 3)", -5}, {"(1 + 2) * 3", 9}, {"~0", -1}, {"-1 << 4", -16},
		// literals
		{"0x1F", 31}, {"0XfF", 255}, {"010", 8}, {"0b101", 5}, {"0B11", 3}, {"1'000'000", 1000000}, {"0x1'0", 16},
		{"10u", 10}, {"10UL", 10}, {"10ll", 10}, {"0", 0},
		// names
		{"A", 3}, {"A + B", 1}, {"ErrorCode::A", 3}, {"sdk::ErrorCode::B", -2}, {"_x", 7},
	} {
		k := map[string]int64{"_x": 7}
		for n, v := range known {
			k[n] = v
		}
		got, err := evalC(c.expr, k)
		if assert.NoError(t, err, c.expr) {
			assert.Equal(t, c.want, got, c.expr)
		}
	}
	for _, c := range []struct{ expr, want string }{
		{"1 / 0", "division by zero"}, {"1 % 0", "division by zero"},
		{"(1 + 2", "missing )"}, {"(1 + 2 3", "missing )"}, {"1 +", "the value ends early"}, {"", "the value ends early"},
		{"1 2", `unexpected "2"`}, {"@", `unexpected "@"`}, {"1 @", `unexpected "@"`},
		{"sizeof(int)", "sizeof is no earlier enumerator (macros and casts are not read)"},
		{"99999999999999999999", `cannot read "99999999999999999999" as an integer`},
	} {
		_, err := evalC(c.expr, map[string]int64{})
		if assert.Error(t, err, c.expr) {
			assert.Equal(t, c.want, err.Error(), c.expr)
		}
	}
}

// TestParseEnumSkipsWhatIsNotCode: a digit separator after a 0, an empty
// block comment, a preprocessor line continued with a backslash (even
// one holding an enum), and one that ends the file without a newline are
// read as the compiler reads them.
func TestParseEnumSkipsWhatIsNotCode(t *testing.T) {
	for _, c := range []struct {
		src  string
		want int64
	}{
		{"enum ErrorCode { A = 10'0 };", 100},
		{"enum ErrorCode { A = 0x1'0 };", 16},
		{"/**/ enum ErrorCode { A = 1 };", 1},
		{"enum ErrorCode { A = /**/ 2 };", 2},
		{"#define OLD \\\n  enum ErrorCode { A = 5 };\nenum ErrorCode { A = 3 };", 3},
		{"  # pragma once\nenum ErrorCode { A = 4 };", 4},
		{"enum ErrorCode { A = 6 };\n#endif", 6}, // a last line with no newline
	} {
		codes, err := parseEnum(t, "x.h", []byte(c.src), "ErrorCode")
		if assert.NoError(t, err, "%q", c.src) && assert.Len(t, codes, 1, "%q", c.src) {
			assert.Equal(t, c.want, codes[0].Value, "%q", c.src)
		}
	}
}

// TestFindEnumReadsHeadersOnly: under a folder, only files named as
// headers are read, whichever of the names.
func TestFindEnumReadsHeadersOnly(t *testing.T) {
	for _, ext := range headerExts {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "sdk"+ext), []byte("enum ErrorCode { OK = 0 };"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "sdk.c"), []byte("enum ErrorCode { OK = 1 };"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("enum ErrorCode { OK = 2 };"), 0o644))
		codes, err := findEnum(t, dir, "ErrorCode")
		if assert.NoError(t, err, ext) && assert.Len(t, codes, 1, ext) {
			assert.Equal(t, filepath.Join(dir, "sdk"+ext), codes[0].File)
		}
	}
}

// enumBound bounds a parse in these tests: a header of a few lines parses
// in microseconds, and a broken stripC that never moves past a line would
// otherwise hold the test binary to its -timeout (minutes, naming no
// rule) instead of failing here in seconds.
const enumBound = 30 * time.Second

type enumResult struct {
	codes []HeaderCode
	err   error
}

// parseEnum is ParseEnum, bounded by enumBound.
func parseEnum(t *testing.T, file string, src []byte, name string) ([]HeaderCode, error) {
	t.Helper()
	r := bound.Value(t, enumBound, "ParseEnum of "+file, func() enumResult {
		c, err := ParseEnum(file, src, name)
		return enumResult{c, err}
	})
	return r.codes, r.err
}

// findEnum is FindEnum, bounded by enumBound.
func findEnum(t *testing.T, dir, name string) ([]HeaderCode, error) {
	t.Helper()
	r := bound.Value(t, enumBound, "FindEnum in "+dir, func() enumResult {
		c, err := FindEnum(dir, name)
		return enumResult{c, err}
	})
	return r.codes, r.err
}
