package metrics_test

import (
	"go/ast"
	"go/parser"
	"go/types"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/internal/srccheck"
)

const zerologPath = "github.com/rs/zerolog"

// zerologGlobalReaders are the zerolog functions and *Event/*Context
// methods whose output depends on a zerolog global an embedder may set
// for its own logs: durations (DurationFieldUnit, DurationFieldInteger),
// times (TimeFieldFormat, TimestampFunc), errors (ErrorFieldName,
// ErrorMarshalFunc, ErrorStackMarshaler), floats
// (FloatingPointPrecision), interfaces (InterfaceMarshalFunc), callers,
// and the global level and context logger.
var zerologGlobalReaders = map[string]bool{
	"Dur": true, "Durs": true, "TimeDiff": true, "Timestamp": true, "Time": true, "Times": true,
	"Err": true, "AnErr": true, "Errs": true, "Stack": true, "Caller": true, "CallerWithSkipFrameCount": true,
	"Float32": true, "Float64": true, "Floats32": true, "Floats64": true, "Interface": true, "Any": true,
	"GlobalLevel": true, "SetGlobalLevel": true, "Ctx": true, "DisableSampling": true,
}

// TestTheLibraryReadsNoZerologGlobal: what the library logs never depends
// on a zerolog global an embedder may set (a duration's unit, the error
// field's name, the time format): every package outside cmd/ is
// type-checked, and a read of a zerolog package variable, a call of a
// function or method that reads one, or an import of the global logger
// (zerolog/log) fails, naming the file and line. Durations are logged
// as integers in a field named for the unit (age_ms), errors as
// Str(FieldError, err.Error()).
func TestTheLibraryReadsNoZerologGlobal(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	l, err := srccheck.Load(root, "./...")
	require.NoError(t, err)
	checked := 0
	for path, p := range l.Packages {
		if !strings.HasPrefix(path, "github.com/kvblob/kvblob/") || strings.HasPrefix(path, "github.com/kvblob/kvblob/cmd/") {
			continue
		}
		var files []*ast.File
		for _, name := range p.Files() {
			f, err := parser.ParseFile(l.Fset, name, nil, 0)
			require.NoError(t, err)
			files = append(files, f)
		}
		_, info, errs := l.Check(path, files)
		require.Empty(t, errs, "type-checking %s", path)
		checked++
		for _, f := range files {
			for _, imp := range f.Imports {
				if imp.Path.Value == `"`+zerologPath+`/log"` {
					t.Errorf("%s: imports zerolog/log, the global logger: take a zerolog.Logger instead", l.Fset.Position(imp.Pos()))
				}
			}
		}
		for id, obj := range info.Uses {
			if obj.Pkg() == nil || obj.Pkg().Path() != zerologPath {
				continue
			}
			where := l.Fset.Position(id.Pos())
			if rel, err := filepath.Rel(root, where.Filename); err == nil {
				where.Filename = rel
			}
			switch o := obj.(type) {
			case *types.Var:
				if o.Parent() == o.Pkg().Scope() {
					t.Errorf("%s: reads zerolog.%s, a global an embedder may set", where, o.Name())
				}
			case *types.Func:
				if zerologGlobalReaders[o.Name()] {
					t.Errorf("%s: calls zerolog's %s, whose output depends on a zerolog global; log a field whose name carries the unit (age_ms) or Str(FieldError, err.Error())", where, o.Name())
				}
			}
		}
	}
	require.Greater(t, checked, 10, "the library's packages were found")
}
