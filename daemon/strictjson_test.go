package daemon

import (
	"encoding/json"
	"reflect"
	"runtime"
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
		// A test's values go to the harness as they came (Python's json
		// keeps the last of two names, as encoding/json would).
		`{"code":"x","tests":{"function":"f","cases":[{"args":[{"a":1,"a":2}],"kwargs":{"k":{"b":1,"b":2}},"expected":{"c":[{"d":1,"d":1}]}}]}}`: "",
		`{"code":"x","files":[{"path":"a","content":""},{"Path":"b","content":""}]}`:                                                             `files[1].Path: unknown field; did you mean "path"?`,
		`{"code":"x","env":{"":"1","":"2"}}`:                           "env.: is given twice",
		`{"code":"x","limits":{"` + strings.Repeat("m", 100) + `":1}}`: "limits." + strings.Repeat("m", 61) + "...: unknown field (see docs/contract.md",
		`{"code":"x","zzz":1}`:                                         "zzz: unknown field (see docs/contract.md",
		`{"code":"x"} {"code":"y"}`:                                    "body: one JSON object only",
		`{"code":"x"`:                                                  "body: empty or incomplete JSON object",
		``:                                                             "body: empty or incomplete JSON object",
		`{"code":"x",}`:                                                "body: invalid JSON at byte 13",
		strings.Repeat("[", 20000) + strings.Repeat("]", 20000): "body: invalid JSON",
	} {
		req, err := decodeRequest(strings.NewReader(body), -1)
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
// with a FieldError (never panic, never read past the end); what it
// passes, json.Unmarshal decodes (its type checks are the same).
func FuzzCheckKeys(f *testing.F) {
	for _, s := range []string{`{"code":"a\"}\\","env":{"K\"":"v"}}`, `{"limits":{"memory_bytes":-0,"pids":null},"files":[{"path":"a","content":"b"}],"collect":["x"]}`, `{"tests":{"function":"f","cases":[{"name":"n","args":[1],"kwargs":{"a":{}},"expected":null}]}}`, `[1,{"a":[]}]`, `"x"`, `{"tests":{"cases":[{"args":[{"a":1}]}]}}`, ` {"limits":{"memory_bytes":1e3}} `, `{"a":{"b":{"c":[true,false,null]}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		if err := checkKeys(data, reflect.TypeFor[Request]()); err != nil {
			var fe *nsjail.FieldError
			require.ErrorAs(t, err, &fe)
			return
		}
		var req Request
		require.NoError(t, json.Unmarshal(data, &req), "passed by checkKeys")
	})
}

// The walk costs one pass over the body whatever its shape: deep nesting
// where the request's types give no shape (a test's values, a value of
// the wrong type) is skipped, not walked, and paths become strings only
// for an error. (When each level built its path, a small body of nested
// objects took memory quadratic in its depth.) And a long unknown name is
// not compared with every field (len² each).
func TestDecodeRequestCostIsLinear(t *testing.T) {
	name := strings.Repeat("k", 40)
	deep := strings.Repeat(`{"`+name+`":`, 9000) + "1" + strings.Repeat("}", 9000)
	for what, body := range map[string]string{
		"nested objects in args":     `{"code":"x","tests":{"function":"f","cases":[{"args":[` + deep + `]}]}}`,
		"nested arrays in limits":    `{"code":"x","limits":` + strings.Repeat("[", 9000) + strings.Repeat("]", 9000) + `}`,
		"a long flat array":          `{"code":"x","tests":{"function":"f","cases":[{"args":[` + strings.Repeat("0,", 1<<20) + `0]}]}}`,
		"a long unknown name":        `{"code":"x","` + strings.Repeat("a", 8<<20) + `":1}`,
		"many files (walked, typed)": `{"code":"x","files":[` + strings.Repeat(`{"path":"a","content":""},`, 1<<16) + `{"path":"b","content":""}]}`,
	} {
		data := []byte(body)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_ = checkKeys(data, reflect.TypeFor[Request]())
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: %d bytes, %d allocated", what, len(body), alloc)
		assert.Less(t, alloc, uint64(len(body))+1<<20, what)
	}
	_, err := decodeRequest(strings.NewReader(`{"code":"x","`+strings.Repeat("a", 8<<20)+`":1}`), -1)
	assert.Less(t, len(err.Error()), 200, "the message carries a cut name")
}
