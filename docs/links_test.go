package docs_test

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// textRoots are the parts of the tree a user reads: the README, the docs,
// the specs, the generated code and every package's source and test data.
var textRoots = []string{"README.md", "docs", "spec", "generated", "runtime", "stores", "internal", "cmd", "conformance", "gen"}

// outside matches text that points where a clone of the repository cannot
// follow: the notes folder beside the checkout, and the tracker's issue
// numbers. A user has neither, so the text must say the fact itself.
var outside = regexp.MustCompile(`(?i)\.\./shared/|issue [0-9]+`)

// wrapped matches an issue number a line break split from its word: a
// line that ends in "issue" (foldedIssue), then one whose text, after a
// comment's or quote's marks, starts with a number (foldedNumber).
var (
	foldedIssue  = regexp.MustCompile(`(?i)\bissue\s*$`)
	foldedNumber = regexp.MustCompile(`^\s*(//|#|>|\*)*\s*[0-9]+`)
)

// mdLink matches a Markdown link's target: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestTextStaysInsideTheRepository: no file a user reads links the notes
// beside the checkout or names an issue, and every relative link of a
// Markdown file names a file or folder that the repository holds.
func TestTextStaysInsideTheRepository(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, top := range textRoots {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				return nil
			}
			rel, _ := filepath.Rel(root, path)
			checkText(t, root, rel)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// checkText reports each line of one file that points outside the
// repository.
func checkText(t *testing.T, root, rel string) {
	t.Helper()
	f, err := os.Open(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	prev := ""
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.ContainsRune(line, 0) {
			return // a binary file
		}
		if m := outside.FindString(line); m != "" {
			t.Errorf("%s:%d: %q points outside the repository (a clone has neither the notes beside it nor the issue tracker): say the fact itself", rel, n, m)
		}
		if foldedIssue.MatchString(prev) && foldedNumber.MatchString(line) {
			t.Errorf("%s:%d: an issue number folded onto this line points outside the repository (a clone has no issue tracker): say the fact itself", rel, n)
		}
		prev = line
		if !strings.HasSuffix(rel, ".md") {
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			abs := filepath.Join(root, filepath.Dir(rel), filepath.FromSlash(target))
			if r, err := filepath.Rel(root, abs); err != nil || strings.HasPrefix(r, "..") {
				t.Errorf("%s:%d: link %q leaves the repository", rel, n, m[1])
				continue
			}
			if _, err := os.Stat(abs); err != nil {
				t.Errorf("%s:%d: link %q names nothing in the repository", rel, n, m[1])
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
}
