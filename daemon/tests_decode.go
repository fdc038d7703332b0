package daemon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"agentjail/daemon/harness"
	"agentjail/nsjail"
)

// DecodeTests reads a request's "tests" object given on its own (the file
// of `agentjail run --tests FILE`) as strictly as the daemon reads it in a
// request, with the daemon's own messages: each names the field by its
// path in the request ("tests.cases[0].expect: unknown field; did you mean
// "expected"? …"), and a syntax error says where it is (byte, line and
// column). Every error is a *nsjail.FieldError. The tests are not
// validated here: Request.Job does that, as for any request.
func DecodeTests(data []byte) (*harness.Tests, error) {
	var t harness.Tests
	if !json.Valid(data) {
		return nil, testsJSONError(json.Unmarshal(data, &t), data)
	}
	if v := bytes.TrimSpace(data); bytes.Equal(v, []byte("null")) {
		return nil, &nsjail.FieldError{Field: "tests", Msg: "must be an object, got JSON null"}
	}
	w := keyWalker{data: data, path: []pathSeg{{name: "tests"}}}
	if err := w.value(reflect.TypeFor[harness.Tests]()); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, testsJSONError(err, data)
	}
	return &t, nil
}

// testsJSONError is jsonError's field error for the tests object: its
// field is "tests" where the request's would be "body", and a syntax error
// also gives its line and column.
func testsJSONError(err error, data []byte) error {
	var fe *nsjail.FieldError
	if !errors.As(jsonError(err), &fe) {
		return err
	}
	out := *fe
	switch {
	case out.Field == "body":
		out.Field = "tests"
	case !strings.HasPrefix(out.Field, "tests"):
		out.Field = "tests." + out.Field
	}
	var se *json.SyntaxError
	if end := bytes.TrimRight(data, " \t\r\n"); len(end) > 0 && out.Msg == "empty or incomplete JSON object" {
		line, _ := position(data, int64(len(end)))
		out.Msg = fmt.Sprintf("incomplete JSON: it ends at byte %d (line %d) before the object does", len(end), line)
	}
	if errors.As(err, &se) && strings.HasPrefix(out.Msg, "invalid JSON at byte ") {
		line, col := position(data, se.Offset)
		out.Msg = fmt.Sprintf("invalid JSON at byte %d (line %d, column %d): %v", se.Offset, line, col, err)
	}
	return &out
}

// position is the line and column (from 1, in bytes) of the byte that
// encoding/json's syntax error at offset stopped on (the offset counts the
// bytes read, that one included).
func position(data []byte, offset int64) (line, col int) {
	i := int(min(max(offset-1, 0), int64(len(data))))
	before := data[:i]
	line = bytes.Count(before, []byte("\n")) + 1
	col = i - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}
