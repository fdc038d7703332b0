package daemon

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// limitBodies are bodies at a shape limit (ok) and one past it (the
// message wanted): each limit is named in its 400.
func limitBodies() []struct{ body, want string } {
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	items := func(n int, item string) string {
		s := make([]string, n)
		for i := range s {
			s[i] = strings.ReplaceAll(item, "%d", fmt.Sprint(i))
		}
		return strings.Join(s, ",")
	}
	const tests = `{"code":"def f(*a, **k): pass","tests":{"function":"f","cases":[`
	return []struct{ body, want string }{
		// The request's object, tests, cases, the case, expected: 4 levels before the value.
		{tests + `{"expected":` + nest(MaxRequestDepth-4) + `}]}}`, ""},
		{tests + `{"expected":` + nest(MaxRequestDepth-3) + `}]}}`, "tests.cases[0].expected: nested deeper than 256 levels (the limit on a request's nesting depth is 256)"},
		{tests + `{"args":[` + nest(MaxRequestDepth-5) + `]}]}}`, ""},
		{tests + `{"args":[` + nest(MaxRequestDepth-4) + `]}]}}`, "tests.cases[0].args[0]: nested deeper than 256"},
		{`{"code":` + nest(MaxRequestDepth) + `}`, "code: nested deeper than 256"},
		{tests + items(1000, `{}`) + `]}}`, ""},
		{tests + items(1001, `{}`) + `]}}`, "tests.cases: more than 1000 cases (the limit on test cases is 1000)"},
		{`{"code":"","files":[` + items(4080, `{"path":"f%d","content":""}`) + `]}`, ""},
		{`{"code":"","files":[` + items(4081, `{}`) + `]}`, "files: more than 4080 files (the limit on files is 4080)"},
		{`{"code":"","env":{` + items(4096, `"K%d":""`) + `}}`, ""},
		{`{"code":"","env":{` + items(4097, `"K%d":""`) + `}}`, "env: more than 4096 variables (the limit on environment variables is 4096)"},
		{`{"code":"","collect":[` + items(64, `"a%d"`) + `]}`, ""},
		{`{"code":"","collect":[` + items(65, `"a"`) + `]}`, "collect: more than 64 patterns (the limit on collect patterns is 64)"},
		// The root object's 2 members, tests' 2, the case's 1.
		{tests + `{"args":[` + items(MaxRequestElements-6, "0") + `]}]}}`, ""},
		{tests + `{"args":[` + items(MaxRequestElements-5, "0") + `]}]}}`, "body: more than 65536 array items and object members, not counting those inside a test's values (the limit on a request's elements is 65536)"},
		// Inside a test's values, elements are not counted: they are not built.
		{tests + `{"args":[[` + items(MaxRequestElements, "0") + `]]}]}}`, ""},
	}
}

// TestDecodeShapeLimits: each shape limit takes a request at it and
// refuses one past it with a message that names the limit, before the
// values are built (TestDecodeCostBounded measures that).
func TestDecodeShapeLimits(t *testing.T) {
	for _, c := range limitBodies() {
		_, err := decodeRequest(strings.NewReader(c.body), -1)
		if c.want == "" {
			require.NoError(t, err, "%.100s", c.body)
			continue
		}
		require.Error(t, err, "%.100s", c.body)
		assert.True(t, strings.HasPrefix(err.Error(), c.want), "%s\n%.100s", err, c.body)
	}
}

// TestDecodeTestsShapeLimits: `agentjail run --tests FILE` reads the
// tests with the same limits, and the same paths.
func TestDecodeTestsShapeLimits(t *testing.T) {
	_, err := DecodeTests([]byte(`{"function":"f","cases":[` + strings.Repeat(`{},`, 1000) + `{}]}`))
	require.Error(t, err)
	assert.Equal(t, "tests.cases: more than 1000 cases (the limit on test cases is 1000)", err.Error())
	_, err = DecodeTests([]byte(`{"function":"f","cases":[{"expected":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}]}`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "tests.cases[0].expected: nested deeper than 256 levels")
}
