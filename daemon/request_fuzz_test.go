package daemon

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"agentjail/nsjail"
)

// requestFieldNames are the fields an error about a request may name
// first: the request's own, "body" for the body as a whole, and
// "program", nsjail's name for the code when the code is over
// nsjail.MaxCodeBytes.
func requestFieldNames() map[string]bool {
	names := map[string]bool{"body": true, "program": true}
	for f := range reflect.TypeFor[Request]().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		names[name] = true
	}
	return names
}

// FuzzDecodeRequest: whatever a client sends, decoding and validating it
// never panics, every refusal is a *nsjail.FieldError that names a field
// of the request, or the unknown name the client gave (the 400 the client
// gets), and a request taken is a job whose spec holds the code as sent.
func FuzzDecodeRequest(f *testing.F) {
	fields := requestFieldNames()
	policies := []Policy{DefaultConfig().Policy(), localPolicy()}
	checkErr := func(t *testing.T, step string, err error) {
		var fe *nsjail.FieldError
		if !errors.As(err, &fe) || err != error(fe) {
			t.Fatalf("%s: %T %v, not a *nsjail.FieldError", step, err, err)
		}
		if fe.Msg == "" {
			t.Fatalf("%s: %q says nothing", step, err)
		}
		if strings.HasPrefix(fe.Msg, "unknown field") {
			return // it names the client's own name, whatever it is ("" too)
		}
		first, _, _ := strings.Cut(fe.Field, ".")
		first, _, _ = strings.Cut(first, "[")
		if !fields[first] {
			t.Fatalf("%s: %q names no field of the request", step, err)
		}
	}
	// Bodies at a shape limit and one past it (decodelimits_test.go),
	// and the review's flood of empty cases.
	for _, c := range limitBodies() {
		if len(c.body) < 8<<10 { // larger ones slow the fuzzer's mutations down
			f.Add([]byte(c.body), true, false)
		}
	}
	f.Add(repeated(`{"code":"def f(): pass","tests":{"function":"f","cases":[`, `{}`, ",", `]}}`, 4<<10), false, true)
	f.Fuzz(func(t *testing.T, body []byte, declared, local bool) {
		size := int64(-1)
		if declared {
			size = int64(len(body))
		}
		req, err := decodeRequest(bytes.NewReader(body), size)
		if err != nil {
			checkErr(t, "decode", err)
			return
		}
		p := policies[0]
		if local {
			p = policies[1]
		}
		job, err := req.Job(p)
		if err != nil {
			checkErr(t, "validate", err)
			return
		}
		if userCode(&job.Spec) != *req.Code {
			t.Fatal("the job's main.py is not the request's code")
		}
		if err := job.Spec.Validate(); err != nil {
			t.Fatalf("a job whose spec does not validate: %v", err)
		}
	})
}

// localPolicy is `agentjail run`'s without a daemon: no maximum.
func localPolicy() Policy {
	p := DefaultConfig().Policy()
	p.Max = nil
	return p
}
