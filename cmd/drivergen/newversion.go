package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/kvblob/kvblob/gen"
)

// runNewCmd is 'drivergen new': with --from, it starts a new SDK version's
// spec as a copy of an existing one (runNewVersion); otherwise it
// scaffolds a new store (runNew).
func runNewCmd(args []string, stdout, stderr io.Writer) int {
	for _, a := range args {
		if a == "--" {
			break
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && name == "from" {
			return runNewVersion(args, stdout, stderr)
		}
	}
	return runNew(args, stdout, stderr)
}

// runNewVersion is 'drivergen new --from SPEC --version V [-o FILE]': a
// copy of SPEC, comments and all, whose sdk.versions is [V] (and
// sdk.verified, when given, empty), named STORE-V.yaml beside SPEC. Its
// store's package (generated/STORE) holds it beside SPEC once generated,
// so the copy is validated, with SPEC, as one store's specs before it is
// written, and never overwrites a file.
func runNewVersion(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("new", "new --from SPEC --version V [-o FILE]", stderr)
	from := fs.String("from", "", "the spec of the last SDK version")
	version := fs.String("version", "", "the new SDK version")
	out := fs.String("o", "", "the file to write (default: STORE-VERSION.yaml beside --from)")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if extraArgs(fs, stderr) {
		return 2
	}
	if *from == "" || *version == "" {
		fmt.Fprintln(stderr, "drivergen new: --from needs --version V, the SDK version the new spec holds for")
		return 2
	}
	if err := plainSegment("--version", *version); err != nil {
		fmt.Fprintf(stderr, "drivergen new: %v\n", err)
		return 2
	}
	old, data, ok := loadSpecFile(*from, stderr)
	if !ok {
		return 1
	}
	if *out == "" {
		// old.Store is a package name (the spec's validation holds it to
		// lower-case letters and digits) and *version a plain segment, so
		// the file lands beside --from, never elsewhere.
		*out = filepath.Join(filepath.Dir(*from), old.Store+"-"+*version+".yaml")
	}
	text, err := respec(data, *version)
	if err != nil {
		fmt.Fprintf(stderr, "drivergen new: %s: %v\n", *from, err)
		return 1
	}
	text = append([]byte(fmt.Sprintf("# Started from %s by 'drivergen new --from': read the SDK's changes since\n# %v, edit what they change, then 'drivergen diff %s %s'.\n", *from, old.SDK.Versions, *from, *out)), text...)
	s, err := gen.Load(*out, text)
	if err == nil {
		if errs := gen.CheckSet([]*gen.Spec{old, s}); len(errs) > 0 {
			err = errs
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "drivergen new: the copy does not load:\n%v\n", err)
		return 1
	}
	f, err := createSpec(*out)
	if errors.Is(err, os.ErrExist) {
		fmt.Fprintf(stderr, "drivergen new: %s exists; refusing to overwrite it\n", *out)
		return 1
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	_, err = f.Write(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(*out)
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s (store %s, %s in generated/%s, SDK %s %s)\n", *out, old.Store, s.GoName(), gen.StorePackage(old.Store), old.SDK.Name, *version)
	fmt.Fprintf(stdout, "next: edit it for the SDK's changes, 'drivergen diff %s %s', 'make generate', then the gate\n", *from, *out)
	return 0
}

// createSpec is createSpecFile; tests replace it to fail the write.
var createSpec = createSpecFile

// createSpecFile creates the new spec's file, never over an existing one.
func createSpecFile(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
}

// respec returns data with sdk.versions set to [version] and sdk.verified
// (when given) set to [], every other byte (comments included) as it was.
func respec(data []byte, version string) ([]byte, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, err
	}
	if len(root.Content) != 1 || root.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("not a spec mapping")
	}
	value := func(m *yaml.Node, key string) (k, v *yaml.Node) {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == key {
				return m.Content[i], m.Content[i+1]
			}
		}
		return nil, nil
	}
	_, sdk := value(root.Content[0], "sdk")
	if sdk == nil || sdk.Kind != yaml.MappingNode {
		return nil, errors.New("no sdk to rewrite")
	}
	vk, vv := value(sdk, "versions")
	if vv == nil || vv.Kind != yaml.SequenceNode {
		return nil, errors.New("no sdk.versions list to rewrite")
	}
	lines := strings.SplitAfter(string(data), "\n")
	type edit struct {
		line, col, end int // 1-based line; byte columns [col, end) of that line
		with           string
	}
	var edits []edit
	// replace adds the edits that write the list v (of key k, named name)
	// as with: a flow list's brackets and what they hold, on its one line;
	// a block list's lines, with "key: with" written on its key's line.
	replace := func(k, v *yaml.Node, name, with string) error {
		if v.Style&yaml.FlowStyle != 0 {
			start := v.Column - 1
			list, _, closed := strings.Cut(lines[v.Line-1][start:], "]")
			if !closed {
				return fmt.Errorf("line %d: %s spans lines; write it on one line", v.Line, name)
			}
			edits = append(edits, edit{v.Line, start, start + len(list) + 1, with})
			return nil
		}
		for l := v.Content[len(v.Content)-1].Line; l >= v.Content[0].Line; l-- {
			edits = append(edits, edit{l, 0, len(lines[l-1]), ""})
		}
		colon := strings.IndexByte(lines[k.Line-1][k.Column-1:], ':') + k.Column
		edits = append(edits, edit{k.Line, colon, colon, " " + with})
		return nil
	}
	if err := replace(vk, vv, "sdk.versions", "["+strconv.Quote(version)+"]"); err != nil {
		return nil, err
	}
	// A new release was verified on no commit yet: sdk.verified starts
	// empty, so every build of it is unverified until the gate passed on
	// it and its commit is added.
	if vk, vf := value(sdk, "verified"); vf != nil {
		if vf.Kind != yaml.SequenceNode {
			return nil, errors.New("sdk.verified is not a list")
		}
		if err := replace(vk, vf, "sdk.verified", "[]"); err != nil {
			return nil, err
		}
	}
	// Each line is its own string, so only edits of one line touch each
	// other's positions: apply them from the line's end, so earlier
	// positions stay true.
	slices.SortFunc(edits, func(a, b edit) int { return cmp.Compare(b.col, a.col) })
	for _, e := range edits {
		l := lines[e.line-1]
		lines[e.line-1] = l[:e.col] + e.with + l[e.end:]
	}
	return []byte(strings.Join(lines, "")), nil
}

// plainSegment refuses a name that is not one plain file-name segment:
// drivergen builds a file's name from it (STORE-VERSION.yaml beside the
// spec it started from), so a '/', a backslash or a leading '.' ("../", a
// hidden file) would put the file somewhere else. A plain segment is
// letters, digits and '.', '_', '+', '-', starting with a letter or a
// digit: every SDK version the specs hold ("0.3.12.post1", "v1.109.1",
// "8.1.x", "2.0-rc1") is one.
func plainSegment(flag, s string) error {
	ok := s != "" && isAlnum(rune(s[0]))
	for _, r := range s {
		ok = ok && (isAlnum(r) || strings.ContainsRune("._+-", r))
	}
	if !ok {
		return fmt.Errorf("%s %q is not one plain file-name segment; want letters, digits and '.', '_', '+', '-', starting with a letter or a digit (no '/', no '..'), since it names the new spec's file", flag, s)
	}
	return nil
}

func isAlnum(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}
