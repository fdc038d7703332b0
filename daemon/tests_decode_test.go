package daemon

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A --tests file gets the daemon's own messages: the field's path in the
// request, the field meant, where a syntax error is.
func TestDecodeTestsMessages(t *testing.T) {
	for in, want := range map[string]string{
		`{"function":"f","cases":[{"args":[1],"expect":2}]}`: `tests.cases[0].expect: unknown field; did you mean "expected"?`,
		`[{"args":[1]}]`: `tests: must be an object, got JSON array`,
		"{\"function\":\"f\",\n\"cases\":[{\"args\":[1]\n": `tests: incomplete JSON: it ends at byte 37 (line 2) before the object does`,
		"{\"function\": \"f\",\n \"cases\": [}\n":          `tests: invalid JSON at byte 30 (line 2, column 12): invalid character '}' looking for beginning of value`,
		`{"function":"f","Cases":[]}`:                      `tests.Cases: unknown field; did you mean "cases"?`,
		`{"function":"f","function":"g"}`:                  `tests.function: is given twice`,
		`{"function":5}`:                                   `tests.function: must be a string, got JSON number 5`,
		`{"function":"f","cases":[{"name":1}]}`:            `tests.cases[0].name: must be a string, got JSON number 1`,
		`{"function":"f"} {}`:                              `tests: one JSON object only`,
		`null`:                                             `tests: must be an object, got JSON null`,
		``:                                                 `tests: empty or incomplete JSON object`,
	} {
		_, err := DecodeTests([]byte(in))
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), want, in)
	}
	tests, err := DecodeTests([]byte(`{"function":"f","cases":[{"args":[1],"expected":null},{"args":[2]}]}`))
	require.NoError(t, err)
	assert.Equal(t, "f", tests.Function)
	assert.Equal(t, "null", string(tests.Cases[0].Expected), "null expects None")
	assert.Nil(t, tests.Cases[1].Expected, "absent: not checked")
}

// Tests read from a file and sent on as a request's (what `agentjail run
// --tests` and `agentjail session run --tests` do through a daemon) reach
// the daemon as the file had them: a field the file left out is still
// absent, and "expected": null still expects None.
func TestTestsSentOnKeepAbsentFields(t *testing.T) {
	file := `{"function":"f","cases":[
		{"name":"value","args":[1],"expected":2},
		{"name":"type","args":[1],"expected_type":"int"},
		{"name":"raises","args":[0],"expected_exception":"ZeroDivisionError"},
		{"name":"nothing","args":[1]},
		{"name":"none","args":[1],"expected":null},
		{"name":"kw","kwargs":{"x":1},"expected":2}]}`
	tests, err := DecodeTests([]byte(file))
	require.NoError(t, err)
	code := "pass"
	body, err := json.Marshal(&Request{Code: &code, Tests: tests})
	require.NoError(t, err)
	req, err := decodeRequest(bytes.NewReader(body), -1)
	require.NoError(t, err, "%s", body)
	require.NoError(t, req.Tests.Validate(), "%s", body)
	assert.Equal(t, tests, req.Tests, "%s", body)
	got := req.Tests.Cases
	assert.Nil(t, got[1].Expected, "absent expected is not checked: %s", body)
	assert.Nil(t, got[3].Expected, "absent expected is not checked: %s", body)
	assert.Equal(t, "null", string(got[4].Expected), "null expects None")
	for _, absent := range []string{`"expected":null,"expected_type"`, `"kwargs":null`, `"expected_type":""`, `"expected_exception":""`} {
		assert.NotContains(t, string(body), absent)
	}
}
