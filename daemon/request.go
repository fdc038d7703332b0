package daemon

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"

	"agentjail/daemon/harness"
	"agentjail/egress"
	"agentjail/nsjail"
	"agentjail/seccomp"
)

// Request is the run request of docs/contract.md §3. Only Code is required.
type Request struct {
	Code               *string           `json:"code"`
	Command            []string          `json:"command,omitempty"` // an argv instead of code (command.go)
	Stdin              *string           `json:"stdin,omitempty"`
	Env                map[string]string `json:"env,omitempty"`
	Files              []RequestFile     `json:"files,omitempty"`
	Collect            []string          `json:"collect,omitempty"`
	Limits             *RequestLimits    `json:"limits,omitempty"`
	Tests              *harness.Tests    `json:"tests,omitempty"`
	OnForbiddenSyscall string            `json:"on_forbidden_syscall,omitempty"`
	// Environment names the environment to run in (the configuration's
	// [environments.NAME]); "" is "default".
	Environment string `json:"environment,omitempty"`
	// Start is "warm" or "cold"; "" takes the daemon's default.
	Start string `json:"start,omitempty"`
	// Stream asks for the answer as events, the output as it comes
	// (stream.go); so does Accept: application/x-ndjson.
	Stream bool `json:"stream,omitempty"`
	// Network asks for egress through the daemon's proxy (network.go).
	Network *RequestNetwork `json:"network,omitempty"`
}

// RequestFile is a file written into /workspace before the program starts.
type RequestFile struct {
	Path     string `json:"path"`
	Content  string `json:"content"`
	Encoding string `json:"encoding,omitempty"` // "utf-8" (default) or "base64"
}

// RequestLimits are the request's limits; a nil field takes the daemon's
// default. Units are in the names. A field for each row of the limits
// table (limits.go) that has a flag, named by its key.
type RequestLimits struct {
	MemoryBytes   *int64 `json:"memory_bytes,omitempty"`
	WallTimeMs    *int64 `json:"wall_time_ms,omitempty"`
	CPUTimeMs     *int64 `json:"cpu_time_ms,omitempty"`
	Pids          *int64 `json:"pids,omitempty"`
	OutputBytes   *int64 `json:"output_bytes,omitempty"`
	TmpBytes      *int64 `json:"tmp_bytes,omitempty"`
	OpenFiles     *int64 `json:"open_files,omitempty"`
	FileSizeBytes *int64 `json:"file_size_bytes,omitempty"`
	DisplayBytes  *int64 `json:"display_bytes,omitempty"`
	// No CPU bandwidth: docs/contract.md has none, and the daemon's
	// limits.default.cpus is every jail's share of the host.
}

// decodeRequest reads one request strictly: an unknown field, a name
// given twice or in another case, a wrong type or trailing data is an
// error that names what to fix. size is what the body declares (-1:
// unknown); the body is read into a buffer of that size at once.
func decodeRequest(r io.Reader, size int64) (*Request, error) { return decodeBody[Request](r, size) }

// decodeBody is decodeRequest for a body of type T (a session's request,
// a call's).
func decodeBody[T any](r io.Reader, size int64) (*T, error) {
	var buf bytes.Buffer
	if size >= 0 {
		buf.Grow(int(size) + bytes.MinRead) // ReadFrom's room for its last read
	}
	_, err := buf.ReadFrom(r)
	data := buf.Bytes()
	if err != nil {
		if readError(err) {
			return nil, err
		}
		if errors.Is(err, io.ErrUnexpectedEOF) && size >= 0 {
			return nil, &nsjail.FieldError{Field: "body", Msg: fmt.Sprintf("it ended after %d of the %d bytes its Content-Length declares", len(data), size)}
		}
		return nil, &nsjail.FieldError{Field: "body", Msg: "reading it: " + err.Error()}
	}
	var req T
	if !json.Valid(data) {
		return nil, jsonError(json.Unmarshal(data, &req))
	}
	if err := checkKeys(data, reflect.TypeFor[T]()); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &req); err != nil {
		return nil, jsonError(err)
	}
	return &req, nil
}

// readError tells an error of the body's reading, which the caller
// answers itself: too large (413), or not there in time.
func readError(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe) || errors.Is(err, os.ErrDeadlineExceeded)
}

// jsonError turns encoding/json's errors into field errors.
func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "body"
		}
		return &nsjail.FieldError{Field: field, Msg: fmt.Sprintf("must be %s, got JSON %s", jsonKind(te.Type.Kind().String()), te.Value)}
	case errors.As(err, &se) && strings.Contains(se.Error(), "after top-level value"):
		return &nsjail.FieldError{Field: "body", Msg: "one JSON object only"}
	case errors.As(err, &se) && strings.Contains(se.Error(), "unexpected end of JSON input"):
		return &nsjail.FieldError{Field: "body", Msg: "empty or incomplete JSON object"}
	case errors.As(err, &se):
		return &nsjail.FieldError{Field: "body", Msg: fmt.Sprintf("invalid JSON at byte %d: %v", se.Offset, err)}
	}
	return &nsjail.FieldError{Field: "body", Msg: err.Error()}
}

func jsonKind(k string) string {
	switch k {
	case "int64":
		return "a whole number of 64 bits"
	case "int", "uint32":
		return "a whole number"
	case "float64":
		return "a number"
	case "ptr":
		return "of another type"
	case "map", "struct":
		return "an object"
	case "slice":
		return "an array"
	}
	return "a " + k
}

// Policy is what the daemon's configuration decides for every request.
type Policy struct {
	Defaults nsjail.Limits  // for omitted limits
	Max      *nsjail.Limits // nil: no maximum (local mode, run by root)
	// Environments are the runtimes a request may name; nil is one,
	// "default", the default python with nothing added.
	Environments       map[string]*Environment
	Start              nsjail.StartMode // a request's that says none; "" is cold
	OnForbiddenSyscall seccomp.Mode
	Collect            nsjail.CollectLimits
	// Network is the egress requests may ask for; nil: none may.
	Network *Egress
}

// environment is the request's environment, or an error that lists the
// names there are.
func (p *Policy) environment(name string) (*Environment, error) {
	if name == "" {
		name = DefaultEnvironment
	}
	if p.Environments == nil && name == DefaultEnvironment {
		return &Environment{Name: DefaultEnvironment}, nil
	}
	if e, ok := p.Environments[name]; ok {
		return e, nil
	}
	names := slices.Sorted(maps.Keys(p.Environments))
	if p.Environments == nil {
		names = []string{DefaultEnvironment}
	}
	return nil, &nsjail.FieldError{Field: "environment", Msg: fmt.Sprintf("unknown environment %q; this daemon has: %s", name, strings.Join(names, ", "))}
}

// Job is a validated request, ready to run.
type Job struct {
	Spec        nsjail.Spec
	Tests       *harness.Tests
	Environment string // its name
	env         *Environment
	command     []string       // the request's command, nil for code
	network     *egress.Policy // the egress it asked for; nil: none
	egress      *Egress
}

// Job validates the request against the policy and builds the jail's spec.
// Every error is a *nsjail.FieldError naming the request field.
func (r *Request) Job(p Policy) (*Job, error) {
	if err := checkProgram(r.Code, r.Command, r.Tests); err != nil {
		return nil, err
	}
	limits, err := r.Limits.apply(p.Defaults, p.Max)
	if err != nil {
		return nil, err
	}
	mode := p.OnForbiddenSyscall
	if r.OnForbiddenSyscall != "" {
		if mode, err = seccomp.ParseMode(r.OnForbiddenSyscall); err != nil {
			return nil, &nsjail.FieldError{Field: "on_forbidden_syscall", Msg: fmt.Sprintf("must be \"errno\" or \"kill\", got %q", r.OnForbiddenSyscall)}
		}
	}
	if r.Tests != nil {
		if err := r.Tests.Validate(); err != nil {
			return nil, err
		}
	}
	env, err := p.environment(r.Environment)
	if err != nil {
		return nil, err
	}
	start := p.Start
	switch r.Start {
	case "":
	case string(nsjail.StartWarm), string(nsjail.StartCold):
		start = nsjail.StartMode(r.Start)
	default:
		return nil, &nsjail.FieldError{Field: "start", Msg: fmt.Sprintf("must be \"warm\" or \"cold\", got %q", r.Start)}
	}
	j := &Job{Tests: r.Tests, Environment: env.Name, env: env, command: r.Command}
	if r.Network != nil {
		if j.network, err = p.Network.policyFor(r.Network); err != nil {
			return nil, err
		}
		j.egress = p.Network
	}
	s := &j.Spec
	s.Start = start
	if r.Command != nil {
		commandSpec(s, r.Command)
	} else {
		s.Program, s.ProgramName, s.CodeFiles = harness.Program([]byte(*r.Code), r.Tests)
	}
	s.Report = true
	s.Python = env.Python
	s.ReadOnlyMounts = env.ReadOnlyMounts
	s.Etc = env.CurrentEtc()
	s.DefaultEnv = env.Env
	s.Limits = limits
	s.OnForbiddenSyscall = mode
	s.Env = r.Env
	if j.network != nil {
		s.Env = withProxyEnv(r.Env)
	}
	s.Collect = r.Collect
	s.CollectLimits = p.Collect
	if r.Stdin != nil {
		s.Stdin = []byte(*r.Stdin)
	}
	if s.Files, err = decodeFiles(r.Files); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return j, nil
}

// decodeFiles is the request's files with their contents decoded; an
// error names the file.
func decodeFiles(files []RequestFile) ([]nsjail.File, error) {
	var out []nsjail.File
	for i, f := range files {
		content, err := f.decode()
		if err != nil {
			return nil, &nsjail.FieldError{Field: fmt.Sprintf("files[%d].content", i), Msg: err.Error()}
		}
		out = append(out, nsjail.File{Path: f.Path, Content: content})
	}
	return out, nil
}

func (f RequestFile) decode() ([]byte, error) {
	switch f.Encoding {
	case "", "utf-8":
		return []byte(f.Content), nil
	case "base64":
		b, err := base64.StdEncoding.DecodeString(f.Content)
		if err != nil {
			return nil, fmt.Errorf("not valid base64: %v", err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("encoding must be \"utf-8\" or \"base64\", got %q", f.Encoding)
}

// maxLimitValue bounds every limit before unit conversion (2^40 ms is 34
// years; 2^40 bytes is 1 TiB).
const maxLimitValue = 1 << 40

// apply fills the limits from the request, the defaults for what it
// omits, and checks each against the maximum.
func (rl *RequestLimits) apply(def nsjail.Limits, max *nsjail.Limits) (nsjail.Limits, error) {
	l := def
	if rl == nil {
		return l, l.Validate()
	}
	var m nsjail.Limits
	if max != nil {
		m = *max
	}
	for _, d := range limitTable {
		p := d.request(rl)
		if p == nil || *p == nil {
			continue
		}
		v, ceil, field := **p, d.get(&m).n, "limits."+d.Key
		if max != nil && v > ceil {
			return l, &nsjail.FieldError{Field: field, Msg: fmt.Sprintf("%s is above this daemon's maximum of %s", d.Human(v), d.Human(ceil))}
		}
		if v > maxLimitValue {
			return l, &nsjail.FieldError{Field: field, Msg: fmt.Sprintf("%s is absurdly large", d.Human(v))}
		}
		if v <= 0 {
			return l, &nsjail.FieldError{Field: field, Msg: fmt.Sprintf("must be positive, got %d", v)}
		}
		d.set(&l, limitValue{n: v})
	}
	return l, l.Validate()
}
