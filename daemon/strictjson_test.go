package daemon

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/nsjail"
)

// The key walker follows JSON's own rules: names are compared decoded
// (escapes included), strings may hold quotes, backslashes and braces,
// and a map's keys (env) are the client's, any case.
func TestDecodeRequestNames(t *testing.T) {
	for body, want := range map[string]string{
		`{"code":"a\"}\\","env":{"K\"":"v"}}`:                   "",
		`{"code":"x","env":{"CODE":"1","Code":"2","code":"3"}}`: "",
		`{"cod\u0065":"x"}`:                                     "",
		" \n{ \"code\" : \"x\" , \"stdin\" : null } \n":         "",
		`{"code":"x","tests":{"function":"f","cases":[{"args":[[1,{"b":[]}]],"kwargs":{"A":{},"a":[]},"expected":{"x":"}"}}]}}`: "",
		`{"code":"x","cod\u0065":"y"}`:                                               "code: is given twice",
		`{"code":"x","env":{"A":"1","A":"2"}}`:                                       "env.A: is given twice",
		`{"code":"x","files":[{"path":"a","content":""},{"path":"b","Content":""}]}`: `files[1].Content: unknown field; did you mean "content"?`,
		`{"code":"x","tests":{"function":"f","cases":[{"kwargs":{"k":1,"k":2}}]}}`:   "tests.cases[0].kwargs.k: is given twice",
		`{"code":"x","zzz":1}`:                                                       "zzz: unknown field (see CONTRACT.md",
		`{"code":"x"} {"code":"y"}`:                                                  "body: one JSON object only",
		`{"code":"x"`:                                                                "body: empty or incomplete JSON object",
		``:                                                                           "body: empty or incomplete JSON object",
		`{"code":"x",}`:                                                              "body: invalid JSON at byte 13",
		strings.Repeat("[", 20000) + strings.Repeat("]", 20000):                      "body: invalid JSON",
	} {
		req, err := DecodeRequest(strings.NewReader(body))
		if want == "" {
			require.NoError(t, err, "%.80s", body)
			assert.NotNil(t, req.Code, "%.80s", body)
			continue
		}
		require.Error(t, err, "%.80s", body)
		assert.Contains(t, err.Error(), want, "%.80s", body)
	}
}

// checkKeys runs only on valid JSON, and must never fail on it except
// with a FieldError (never panic, never read past the end).
func FuzzCheckKeys(f *testing.F) {
	for _, s := range []string{`{"code":"a\"}\\","env":{"K\"":"v"}}`, `[1,{"a":[]}]`, `"x"`, `{"tests":{"cases":[{"args":[{"a":1}]}]}}`, ` {"limits":{"memory_bytes":1e3}} `, `{"a":{"b":{"c":[true,false,null]}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		if err := checkKeys(data, reflect.TypeFor[Request]()); err != nil {
			var fe *nsjail.FieldError
			require.ErrorAs(t, err, &fe)
		}
	})
}
