// Package codesize holds one test: no Go or C file of the repository
// over maxLines lines and no function over maxFuncLines, outside the
// allowlist below (scripts/test's "code size" step; docs/testing.md).
package codesize

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const (
	maxLines     = 700
	maxFuncLines = 100
)

// The allowlists: each entry says why. An entry whose file or function is
// no longer too long fails the test, so the lists only shrink. The only
// reason left is a table: one literal list of cases or rules, read row by
// row.
const table = "a table"

// allowedFiles may be longer than maxLines.
var allowedFiles = map[string]string{}

// allowedFuncs may be longer than maxFuncLines, keyed by file and function.
var allowedFuncs = map[string]string{
	"nsjail/attacks_cases_fs_test.go:attacksFilesystem":       table,
	"nsjail/attacks_cases_privilege_test.go:attacksPrivilege": table,
	"nsjail/attacks_cases_resource_test.go:attacksResource":   table,
	"seccomp/policy.go:DefaultPolicy":                         table,
}

func TestNoFileOrFunctionTooLong(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	seenFiles, seenFuncs := map[string]bool{}, map[string]bool{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		isC := strings.HasSuffix(name, ".c") || strings.HasSuffix(name, ".h")
		if !strings.HasSuffix(name, ".go") && !isC {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if isC {
			if !strings.Contains("/"+rel, "/testdata/") { // test inputs, not formatted (scripts/ci/checks)
				problems = append(problems, checkC(rel, string(src), seenFiles, seenFuncs)...)
			}
			return nil
		}
		if n := strings.Count(string(src), "\n"); n > maxLines {
			if _, ok := allowedFiles[rel]; ok {
				seenFiles[rel] = true
			} else {
				problems = append(problems, fmt.Sprintf("%s: %d lines, over %d: split it by topic into new files", rel, n, maxLines))
			}
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if n <= maxFuncLines {
				continue
			}
			key := rel + ":" + funcName(fn)
			if _, ok := allowedFuncs[key]; ok {
				seenFuncs[key] = true
				continue
			}
			problems = append(problems, fmt.Sprintf("%s: %d lines, over %d: split it", key, n, maxFuncLines))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// An entry that no longer needs its place is taken off the list.
	for f := range allowedFiles {
		if !seenFiles[f] {
			problems = append(problems, fmt.Sprintf("%s is on allowedFiles but is not over %d lines (or is gone): take it off", f, maxLines))
		}
	}
	for f := range allowedFuncs {
		if !seenFuncs[f] {
			problems = append(problems, fmt.Sprintf("%s is on allowedFuncs but is not over %d lines (or is gone): take it off", f, maxFuncLines))
		}
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
}

func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	if s, ok := typ.(*ast.StarExpr); ok {
		typ = s.X
	}
	if g, ok := typ.(*ast.IndexExpr); ok {
		typ = g.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}
