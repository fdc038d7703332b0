package codesize

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// cAttribute is a GNU attribute, as __attribute__((noreturn)).
var cAttribute = regexp.MustCompile(`__attribute__\(\([^()]*(\([^()]*\))?[^()]*\)\)`)

// cFunc is one function of a C file: its name, the line its declaration
// starts on, and its length in lines, declaration to closing brace.
type cFunc struct {
	name        string
	line, lines int
}

// cFuncs finds the functions of a C file laid out as .clang-format lays
// them out (the kernel's style, which scripts/ci/checks enforces outside
// testdata): a function's body opens with "{" alone at the start of a
// line and closes with "}" alone at the start of a line; its declaration
// is the lines just above the "{" up to a blank line, a comment, a
// preprocessor line or the end of a previous declaration.
func cFuncs(src string) []cFunc {
	lines := strings.Split(src, "\n")
	var funcs []cFunc
	for i := 0; i < len(lines); i++ {
		if lines[i] != "{" {
			continue
		}
		start := i
		for start > 0 && cDeclLine(lines[start-1]) {
			start--
		}
		end := i + 1
		for end < len(lines) && lines[end] != "}" {
			end++
		}
		decl := cAttribute.ReplaceAllString(strings.Join(lines[start:i], " "), "")
		name := decl
		if p := strings.Index(decl, "("); p >= 0 {
			f := strings.Fields(strings.ReplaceAll(decl[:p], "*", " "))
			if len(f) > 0 {
				name = f[len(f)-1]
			}
		}
		funcs = append(funcs, cFunc{name: name, line: start + 1, lines: end - start + 1})
		i = end
	}
	return funcs
}

// cDeclLine says whether l can be part of a function's declaration.
func cDeclLine(l string) bool {
	t := strings.TrimSpace(l)
	switch {
	case t == "", strings.HasPrefix(t, "//"), strings.HasPrefix(t, "/*"), strings.HasPrefix(t, "*"),
		strings.HasPrefix(t, "#"), strings.HasSuffix(t, ";"), strings.HasSuffix(t, "}"), strings.HasSuffix(t, "*/"):
		return false
	}
	return true
}

// checkC holds a C file (outside testdata) to the limits of Go files,
// with the same allowlists.
func checkC(rel, src string, seenFiles, seenFuncs map[string]bool) []string {
	var problems []string
	if n := strings.Count(src, "\n"); n > maxLines {
		if _, ok := allowedFiles[rel]; ok {
			seenFiles[rel] = true
		} else {
			problems = append(problems, fmt.Sprintf("%s: %d lines, over %d: split it by stage or topic into new files", rel, n, maxLines))
		}
	}
	for _, f := range cFuncs(src) {
		if f.lines <= maxFuncLines {
			continue
		}
		key := rel + ":" + f.name
		if _, ok := allowedFuncs[key]; ok {
			seenFuncs[key] = true
			continue
		}
		problems = append(problems, fmt.Sprintf("%s (line %d): %d lines, over %d: split it", key, f.line, f.lines, maxFuncLines))
	}
	return problems
}

// cFuncs measures what it should: declarations of one or more lines, with
// attributes and pointers, and nothing that is not a function.
func TestCFuncs(t *testing.T) {
	src := `// a comment
#include <x.h>

struct s {
	int a;
};

static const int t[] = {1, 2};

__attribute__((noreturn)) static void aj_a(int x)
{
	if (x) {
		x++;
	}
}

// aj_b's comment
static const char *aj_b(struct s *w, int op,
			const char **out)
{
	return 0;
}
`
	got := cFuncs(src)
	want := []cFunc{{"aj_a", 10, 6}, {"aj_b", 18, 5}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("cFuncs = %v, want %v", got, want)
	}
}
