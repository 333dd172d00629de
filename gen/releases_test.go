package gen

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// releasesDir holds, per tagged Mooncake release (and main at 3b5a594, the
// build spec/mooncake-0.3.13.yaml was verified on), its enum ErrorCode as
// name=value lines, read from the public repository's
// mooncake-store/include/types.h with ParseEnum (v0.2.0 has no
// mooncake-store, so no enum). Facts, not code: no header is committed.
const releasesDir = "testdata/mooncake-releases"

// readRelease reads one extract as the codes a header declares, each at
// its line of the extract.
func readRelease(t *testing.T, file string) []HeaderCode {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	var codes []HeaderCode
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		l := sc.Text()
		if strings.HasPrefix(l, "#") || l == "" {
			continue
		}
		name, v, ok := strings.Cut(l, "=")
		require.True(t, ok, "%s:%d: want name=value", file, line)
		n, err := strconv.ParseInt(v, 10, 64)
		require.NoError(t, err, "%s:%d", file, line)
		codes = append(codes, HeaderCode{Name: name, Value: n, File: file, Line: line})
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, codes, file)
	return codes
}

var (
	lacksRE  = regexp.MustCompile(`code (\w+) = -?\d+ is not in the SDK's enum`)
	renumRE  = regexp.MustCompile(`code (\w+) is (-?\d+) here, but \S+ declares \w+ = (-?\d+)`)
	extraRE  = regexp.MustCompile(`declares (\w+) = (-?\d+), which the spec's code table does not list( \(the spec has -?\d+ as (\w+)\))?`)
	releases = filepath.Join(releasesDir, "SUMMARY")
)

// TestTheHeaderCheckOverEveryMooncakeRelease runs the gate's header check
// (CheckHeader, as codes_match_sdk_headers and 'drivergen validate
// -header' run it) of spec/mooncake-0.3.13.yaml over the enum of every
// release, and pins what it finds in testdata/mooncake-releases/SUMMARY
// (-update rewrites it): which releases agree with the spec, and how the
// others differ. The facts it holds: only main at 3b5a594 agrees; every
// release lacks codes added later; two codes were renamed
// (AVAILABLE_SEGMENT_EMPTY became SEGMENT_NOT_FOUND at -101 after
// v0.3.3.post2, KEYS_ULTRA_BUCKET_LIMIT became KEYS_EXCEED_BUCKET_LIMIT at
// -1202 after v0.3.7.post2); no release gives a code of the spec another
// value.
func TestTheHeaderCheckOverEveryMooncakeRelease(t *testing.T) {
	data, err := os.ReadFile("../spec/mooncake-0.3.13.yaml")
	require.NoError(t, err)
	s, err := Load("spec/mooncake-0.3.13.yaml", data)
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(releasesDir, "*.txt"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 29, "one extract per tag v0.3.0 ... v0.3.12.post1, and main")
	sort.Slice(files, func(i, j int) bool { return releaseLess(files[i], files[j]) })
	var b strings.Builder
	fmt.Fprintf(&b, "# The header check of spec/mooncake-0.3.13.yaml over the enum ErrorCode of each\n# Mooncake release (gen/releases_test.go; go test ./gen -run TestTheHeaderCheckOverEveryMooncakeRelease -update).\n")
	for _, f := range files {
		codes := readRelease(t, f)
		errs := CheckHeader(s, codes, "ErrorCode")
		var lacks, renum, extra []string
		for _, e := range errs {
			switch m := e.Msg; {
			case lacksRE.MatchString(m):
				lacks = append(lacks, lacksRE.FindStringSubmatch(m)[1])
			case renumRE.MatchString(m):
				g := renumRE.FindStringSubmatch(m)
				renum = append(renum, fmt.Sprintf("%s %s here, %s there", g[1], g[2], g[3]))
			case extraRE.MatchString(m):
				g := extraRE.FindStringSubmatch(m)
				x := g[1] + " = " + g[2]
				if g[4] != "" {
					x += " (the spec's " + g[4] + ")"
				}
				extra = append(extra, x)
			default:
				t.Errorf("%s: a header check error of no known form: %s", f, e)
			}
		}
		name := strings.TrimSuffix(filepath.Base(f), ".txt")
		if len(errs) == 0 {
			fmt.Fprintf(&b, "%s: %d codes: agrees\n", name, len(codes))
			continue
		}
		fmt.Fprintf(&b, "%s: %d codes: differs\n", name, len(codes))
		if len(renum) > 0 {
			fmt.Fprintf(&b, "  renumbers %d: %s\n", len(renum), strings.Join(renum, ", "))
		}
		if len(extra) > 0 {
			fmt.Fprintf(&b, "  declares %d the spec does not name: %s\n", len(extra), strings.Join(extra, ", "))
		}
		if len(lacks) > 0 {
			fmt.Fprintf(&b, "  lacks %d of the spec's: %s\n", len(lacks), strings.Join(lacks, ", "))
		}
	}
	if *update {
		require.NoError(t, os.WriteFile(releases, []byte(b.String()), 0o644))
		return
	}
	want, err := os.ReadFile(releases)
	require.NoError(t, err)
	assert.Equal(t, string(want), b.String(), "the header check over the releases differs from %s; run 'go test ./gen -run TestTheHeaderCheckOverEveryMooncakeRelease -update' and review the diff", releases)
}

// releaseLess orders extracts by release: v0.3.2 before v0.3.10, a
// pre-release (-alpha, -rc1) before its release, a .postN after it, main
// last.
func releaseLess(a, b string) bool {
	ka, kb := releaseKey(a), releaseKey(b)
	for i := range min(len(ka), len(kb)) {
		if ka[i] != kb[i] {
			return ka[i] < kb[i]
		}
	}
	return len(ka) < len(kb)
}

// preReleases are the pre-release names in their order.
var preReleases = []string{"alpha", "beta", "rc"}

func releaseKey(file string) []int {
	name := strings.TrimSuffix(filepath.Base(file), ".txt")
	if strings.HasPrefix(name, "main") {
		return []int{1 << 30}
	}
	name = strings.TrimPrefix(name, "v")
	rel, pre, isPre := strings.Cut(name, "-")
	var key []int
	for _, p := range strings.Split(rel, ".") {
		n, err := strconv.Atoi(strings.TrimPrefix(p, "post"))
		if err != nil {
			n = 0
		}
		key = append(key, n)
	}
	for len(key) < 4 {
		key = append(key, 0)
	}
	// A pre-release sorts before its release (-1), the release itself at 0.
	if isPre {
		rank := len(preReleases)
		for i, p := range preReleases {
			if strings.HasPrefix(pre, p) {
				rank = i
			}
		}
		key = append(key, -1, rank)
	} else {
		key = append(key, 0)
	}
	return key
}
