package gen

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// HeaderCode is one enumerator of a C or C++ enum, as a header declares it.
type HeaderCode struct {
	Name  string
	Value int64
	File  string
	Line  int
}

// Pos is "file:line" of the enumerator.
func (c HeaderCode) Pos() string { return fmt.Sprintf("%s:%d", c.File, c.Line) }

// MaxHeaderBytes bounds a header file ParseEnum reads from disk.
const MaxHeaderBytes = 4 << 20

// ParseEnum returns the enumerators of the enum called name in src (a C or
// C++ header named file), in order, each with its value and line. It reads
//
//	enum class ErrorCode : int32_t {
//	    OK = 0,              // comments anywhere
//	    INTERNAL_ERROR = -1,
//	    NEXT,                // the previous value plus one
//	    ALIAS = INTERNAL_ERROR,
//	};
//
// and plain enum, enum struct and typedef enum { ... } name; alike. A value
// is an integer literal (decimal, hex, octal or binary, with digit
// separators and suffixes) or an earlier enumerator, combined with
// parentheses, unary - + ~, * / % + - << >> & ^ |. Preprocessor lines
// inside the body are ignored. An enum declared twice in src, or a value it
// cannot read, is an error naming the line.
func ParseEnum(file string, src []byte, name string) ([]HeaderCode, error) {
	text := stripC(string(src))
	bodies := enumBodies(text, name)
	if len(bodies) == 0 {
		return nil, fmt.Errorf("%s: declares no enum %s (want enum [class] %s [: type] { ... })", file, name, name)
	}
	if len(bodies) > 1 {
		return nil, fmt.Errorf("%s:%d: enum %s is declared again here (first at %s:%d); cannot tell which one the SDK uses",
			file, lineAt(text, bodies[1][0]), name, file, lineAt(text, bodies[0][0]))
	}
	return parseEnumBody(file, text, bodies[0][0], bodies[0][1], name)
}

// stripC blanks out comments, string and character literals and
// preprocessor lines of C source, keeping every newline, so offsets keep
// their line numbers.
func stripC(s string) string {
	b := []byte(s)
	blank := func(i, j int) {
		for k := i; k < j && k < len(b); k++ {
			if b[k] != '\n' {
				b[k] = ' '
			}
		}
	}
	lineStart := true
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case lineStart && c == '#':
			j := i
			for j < len(b) && !(b[j] == '\n' && (j == 0 || b[j-1] != '\\')) {
				j++
			}
			blank(i, j)
			i = j
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			j := i
			for j < len(b) && b[j] != '\n' {
				j++
			}
			blank(i, j)
			i = j
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			j := strings.Index(string(b[i+2:]), "*/")
			end := len(b)
			if j >= 0 {
				end = i + 2 + j + 2
			}
			blank(i, end)
			i = end
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(b) && b[j] != c && b[j] != '\n' {
				if b[j] == '\\' {
					j++
				}
				j++
			}
			if c == '\'' && isDigitSeparated(b, i) {
				// 1'000'000: a digit separator, not a character literal.
				i++
				continue
			}
			blank(i, j+1)
			i = j + 1
		default:
			i++
		}
		if i > 0 && i <= len(b) {
			prev := b[i-1]
			if prev == '\n' {
				lineStart = true
			} else if prev != ' ' && prev != '\t' {
				lineStart = false
			}
		}
	}
	return string(b)
}

// isDigitSeparated reports whether the quote at b[i] sits between two
// alphanumeric characters, as a C++14 digit separator does.
func isDigitSeparated(b []byte, i int) bool {
	alnum := func(c byte) bool {
		return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == 'x' || c == 'X'
	}
	return i > 0 && i+1 < len(b) && b[i-1] >= '0' && b[i-1] <= '9' && alnum(b[i+1])
}

// enumBodies returns, for each definition of enum name in text, the
// offsets just inside its braces.
func enumBodies(text, name string) [][2]int {
	q := regexp.QuoteMeta(name)
	named := regexp.MustCompile(`\benum\s+(?:(?:class|struct)\s+)?(?:\[\[[^\]]*\]\]\s*)?` + q + `\s*(?::\s*[A-Za-z_][\w:\s]*)?\{`)
	anon := regexp.MustCompile(`\btypedef\s+enum\s*(?:[A-Za-z_]\w*\s*)?\{`)
	var out [][2]int
	for _, m := range named.FindAllStringIndex(text, -1) {
		if end := matchBrace(text, m[1]); end >= 0 {
			out = append(out, [2]int{m[1], end})
		}
	}
	after := regexp.MustCompile(`^\s*` + q + `\s*;`)
	for _, m := range anon.FindAllStringIndex(text, -1) {
		end := matchBrace(text, m[1])
		if end >= 0 && after.MatchString(text[end+1:]) {
			out = append(out, [2]int{m[1], end})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// matchBrace returns the offset of the '}' closing the brace opened just
// before start, or -1.
func matchBrace(text string, start int) int {
	depth := 1
	for i := start; i < len(text); i++ {
		switch text[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

func lineAt(text string, off int) int { return strings.Count(text[:off], "\n") + 1 }

var (
	attrRE       = regexp.MustCompile(`\[\[[^\]]*\]\]|__attribute__\s*\(\([^)]*\)\)`)
	enumeratorRE = regexp.MustCompile(`^([A-Za-z_]\w*)\s*(?:=\s*([\s\S]+))?$`)
)

func parseEnumBody(file, text string, start, end int, enum string) ([]HeaderCode, error) {
	var out []HeaderCode
	known := map[string]int64{}
	next := int64(0)
	depth := 0
	from := start
	var errs []error
	entry := func(a, b int) {
		raw := text[a:b]
		trimmed := strings.TrimSpace(attrRE.ReplaceAllString(raw, " "))
		if trimmed == "" {
			return
		}
		line := lineAt(text, a+len(raw)-len(strings.TrimLeft(raw, " \t\r\n")))
		m := enumeratorRE.FindStringSubmatch(trimmed)
		if m == nil {
			errs = append(errs, fmt.Errorf("%s:%d: cannot read %q as an enumerator of %s (want NAME or NAME = value)", file, line, oneLine(trimmed), enum))
			return
		}
		v := next
		if m[2] != "" {
			var err error
			v, err = evalC(m[2], known)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s:%d: %s = %s: %v", file, line, m[1], oneLine(m[2]), err))
				return
			}
		}
		if _, dup := known[m[1]]; dup {
			errs = append(errs, fmt.Errorf("%s:%d: %s is declared twice in enum %s", file, line, m[1], enum))
			return
		}
		known[m[1]] = v
		next = v + 1
		out = append(out, HeaderCode{Name: m[1], Value: v, File: file, Line: line})
	}
	for i := start; i < end; i++ {
		switch text[i] {
		case '(', '[':
			depth++
		case ')', ']':
			if depth > 0 {
				depth--
			}
		case ',':
			if depth == 0 {
				entry(from, i)
				from = i + 1
			}
		}
	}
	entry(from, end)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s:%d: enum %s has no enumerators", file, lineAt(text, start), enum)
	}
	return out, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// evalC evaluates a C integer constant expression over known enumerators.
func evalC(expr string, known map[string]int64) (int64, error) {
	p := &cExpr{toks: tokenizeC(expr), known: known}
	v, err := p.binary(0)
	if err != nil {
		return 0, err
	}
	if p.i < len(p.toks) {
		return 0, fmt.Errorf("unexpected %q", p.toks[p.i])
	}
	return v, nil
}

var cTokenRE = regexp.MustCompile(`0[xX][0-9a-fA-F']+[uUlL]*|0[bB][01']+[uUlL]*|[0-9][0-9']*[uUlL]*|[A-Za-z_][\w]*(?:::[A-Za-z_]\w*)*|<<|>>|\S`)

func tokenizeC(s string) []string { return cTokenRE.FindAllString(s, -1) }

type cExpr struct {
	toks  []string
	i     int
	known map[string]int64
}

var cPrec = map[string]int{"|": 1, "^": 2, "&": 3, "<<": 4, ">>": 4, "+": 5, "-": 5, "*": 6, "/": 6, "%": 6}

func (p *cExpr) binary(min int) (int64, error) {
	x, err := p.unary()
	if err != nil {
		return 0, err
	}
	for p.i < len(p.toks) {
		op := p.toks[p.i]
		prec, ok := cPrec[op]
		if !ok || prec <= min {
			break
		}
		p.i++
		y, err := p.binary(prec)
		if err != nil {
			return 0, err
		}
		switch op {
		case "|":
			x |= y
		case "^":
			x ^= y
		case "&":
			x &= y
		case "<<":
			x <<= uint64(y)
		case ">>":
			x >>= uint64(y)
		case "+":
			x += y
		case "-":
			x -= y
		case "*":
			x *= y
		case "/", "%":
			if y == 0 {
				return 0, errors.New("division by zero")
			}
			if op == "/" {
				x /= y
			} else {
				x %= y
			}
		}
	}
	return x, nil
}

func (p *cExpr) unary() (int64, error) {
	if p.i >= len(p.toks) {
		return 0, errors.New("the value ends early")
	}
	t := p.toks[p.i]
	p.i++
	switch {
	case t == "-" || t == "+" || t == "~":
		v, err := p.unary()
		switch t {
		case "-":
			v = -v
		case "~":
			v = ^v
		}
		return v, err
	case t == "(":
		v, err := p.binary(0)
		if err != nil {
			return 0, err
		}
		if p.i >= len(p.toks) || p.toks[p.i] != ")" {
			return 0, errors.New("missing )")
		}
		p.i++
		return v, nil
	case t[0] >= '0' && t[0] <= '9':
		// Base 0 reads C's prefixes: 0x, 0b, and 0 for octal.
		u, err := strconv.ParseUint(strings.TrimRight(strings.ReplaceAll(t, "'", ""), "uUlL"), 0, 64)
		if err != nil {
			return 0, fmt.Errorf("cannot read %q as an integer", t)
		}
		return int64(u), nil
	case t[0] == '_' || t[0] >= 'A' && t[0] <= 'Z' || t[0] >= 'a' && t[0] <= 'z':
		name := t
		if k := strings.LastIndex(t, "::"); k >= 0 {
			name = t[k+2:]
		}
		if v, ok := p.known[name]; ok {
			return v, nil
		}
		return 0, fmt.Errorf("%s is no earlier enumerator (macros and casts are not read)", t)
	}
	return 0, fmt.Errorf("unexpected %q", t)
}

// headerExts are the file names FindEnum reads.
var headerExts = []string{".h", ".hh", ".hpp", ".hxx", ".h++", ".inc"}

// FindEnum looks for enum name in the headers under dir (or in dir itself,
// when it is a file) and parses it. Exactly one header may define it: none,
// or two, is an error naming them.
func FindEnum(dir, name string) ([]HeaderCode, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return parseEnumFile(dir, name)
	}
	var found []string
	var results [][]HeaderCode
	var errs []error
	q := []byte(name)
	err = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() || !hasExt(p) {
			return nil
		}
		data, err := readHeader(p)
		if err != nil {
			return err
		}
		if !strings.Contains(string(data), string(q)) || len(enumBodies(stripC(string(data)), name)) == 0 {
			return nil
		}
		found = append(found, p)
		codes, err := ParseEnum(p, data, name)
		if err != nil {
			errs = append(errs, err)
		}
		results = append(results, codes)
		return nil
	})
	if err != nil {
		return nil, err
	}
	switch {
	case len(found) == 0:
		return nil, fmt.Errorf("%s: no header (%s) defines enum %s", dir, strings.Join(headerExts, " "), name)
	case len(found) > 1:
		return nil, fmt.Errorf("enum %s is defined in %d headers under %s (%s); name one", name, len(found), dir, strings.Join(found, ", "))
	case len(errs) > 0:
		return nil, errors.Join(errs...)
	}
	return results[0], nil
}

func hasExt(p string) bool {
	for _, e := range headerExts {
		if strings.HasSuffix(p, e) {
			return true
		}
	}
	return false
}

func parseEnumFile(p, name string) ([]HeaderCode, error) {
	data, err := readHeader(p)
	if err != nil {
		return nil, err
	}
	return ParseEnum(p, data, name)
}

func readHeader(p string) ([]byte, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %s, not a regular file", p, fileKind(info.Mode()))
	}
	if info.Size() > MaxHeaderBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes; not a header", p, MaxHeaderBytes)
	}
	return os.ReadFile(p)
}

// CheckHeader compares s's code table with the codes an SDK header
// declares, and returns one error per name or value that differs, each at
// the spec's position and naming the header's: a code whose value differs,
// a code the header lacks, and a code the spec lacks (at the spec code the
// header lists just before it, where it would go).
func CheckHeader(s *Spec, header []HeaderCode, enum string) ErrorList {
	var errs ErrorList
	byName := map[string]HeaderCode{}
	byValue := map[int64]HeaderCode{}
	for _, h := range header {
		byName[h.Name] = h
		if _, ok := byValue[h.Value]; !ok {
			byValue[h.Value] = h
		}
	}
	specValue := map[int64]Code{}
	for _, c := range s.Codes {
		specValue[c.Value] = c
		h, ok := byName[c.Name]
		switch {
		case !ok:
			msg := fmt.Sprintf("code %s = %d is not in the SDK's enum %s (%s)", c.Name, c.Value, enum, header[0].File)
			if other, ok := byValue[c.Value]; ok {
				msg += fmt.Sprintf("; %s:%d declares %d as %s", other.File, other.Line, other.Value, other.Name)
			}
			errs = append(errs, Error{Pos: c.Pos, Msg: msg})
		case h.Value != c.Value:
			errs = append(errs, Error{Pos: c.Pos, Msg: fmt.Sprintf("code %s is %d here, but %s:%d declares %s = %d", c.Name, c.Value, h.File, h.Line, h.Name, h.Value)})
		}
	}
	var where Pos
	if len(s.Codes) > 0 {
		where = s.Codes[0].Pos
	}
	for _, h := range header {
		if c, ok := s.CodeByName(h.Name); ok {
			where = c.Pos
			continue
		}
		msg := fmt.Sprintf("%s:%d declares %s = %d, which the spec's code table does not list", h.File, h.Line, h.Name, h.Value)
		if c, ok := specValue[h.Value]; ok {
			msg += fmt.Sprintf(" (the spec has %d as %s)", h.Value, c.Name)
		}
		errs = append(errs, Error{Pos: where, Msg: msg})
	}
	errs.sort()
	return errs
}
