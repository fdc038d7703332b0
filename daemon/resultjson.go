package daemon

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"io"
	"unicode/utf8"

	"agentjail/daemon/internal/jsontext"
)

// The result's large strings (stdout, stderr, the content of collected
// files) are written as JSON strings straight from the captured bytes:
// encoding/json would build the whole answer in memory, twice (its own
// buffer, then the caller's), and a program's output can grow six times
// there (a NUL byte is "\u0000", and a file of NULs is valid UTF-8, so it
// is sent as text). With limits.max.output_bytes at 64 MiB that was more
// than 700 MiB of the daemon's memory, which its jails share, for one
// answer.
//
// Output is lossless (docs/contract.md §3.12): where stdout or stderr is not
// valid UTF-8, the JSON text has U+FFFD for each bad byte, and
// "stdout_base64" or "stderr_base64" beside it holds the exact bytes
// (standard base64, padded), streamed as well. A collected file whose name
// is not valid UTF-8 has "path_base64" beside its "path". A twin is absent
// when its text is valid UTF-8; DecodeResult reads the exact bytes back.

// resultRest is the result without stdout, stderr and files: the outer
// fields shadow the embedded ones, and nil with omitempty leaves them out.
type resultRest struct {
	*Result
	Stdout any `json:"stdout,omitempty"`
	Stderr any `json:"stderr,omitempty"`
	Files  any `json:"files,omitempty"`
}

// fileMeta is a collected file without its content, with the exact bytes
// of a name that is not valid UTF-8.
type fileMeta struct {
	*ResultFile
	Content    any    `json:"content,omitempty"`
	PathBase64 string `json:"path_base64,omitempty"`
}

// encoded is a result ready to be written: the small fields encoded, the
// large strings still where they are.
type encoded struct {
	r     *Result
	rest  []byte   // the other fields, without the object's opening brace
	files [][]byte // each file's other fields, without the closing brace
}

func (r *Result) encode() (*encoded, error) { return r.encodeWith(resultRest{Result: r}) }

// encodeWith is encode with the small fields of rest: a resultRest, or a
// struct that embeds one and adds fields (a session's call's).
func (r *Result) encodeWith(rest any) (*encoded, error) {
	b, err := jsontext.Marshal(rest)
	if err != nil {
		return nil, err
	}
	e := &encoded{r: r, rest: b[1:]} // {"id":... → "id":...
	for i := range r.Files {
		meta := fileMeta{ResultFile: &r.Files[i]}
		if p := r.Files[i].Path; !utf8.ValidString(p) {
			meta.PathBase64 = base64.StdEncoding.EncodeToString([]byte(p))
		}
		b, err := jsontext.Marshal(meta)
		if err != nil {
			return nil, err
		}
		e.files = append(e.files, bytes.TrimSuffix(b, []byte("}\n")))
	}
	return e, nil
}

// WriteJSON writes the result as one line of JSON: the contract's object,
// stdout, stderr and files first.
func (r *Result) WriteJSON(w io.Writer) error {
	e, err := r.encode()
	if err != nil {
		return err
	}
	return e.writeTo(w, 64<<10)
}

// writeTo writes the object through a buffer of bufSize bytes.
func (e *encoded) writeTo(w io.Writer, bufSize int) error {
	bw := bufio.NewWriterSize(w, bufSize)
	e.write(bw)
	return bw.Flush()
}

// len is the length of what write writes: the Content-Length.
func (e *encoded) len() int64 {
	var c counter
	e.write(&c)
	return c.n
}

// write writes the object to a bufio.Writer, or a counter.
func (e *encoded) write(w jsontext.Writer) {
	w.WriteString(`{"stdout":`)
	jsontext.WriteString(w, e.r.Stdout)
	writeTwin(w, "stdout_base64", e.r.Stdout)
	w.WriteString(`,"stderr":`)
	jsontext.WriteString(w, e.r.Stderr)
	writeTwin(w, "stderr_base64", e.r.Stderr)
	w.WriteString(`,"files":`)
	if e.r.Files == nil {
		w.WriteString("null")
	} else {
		w.WriteByte('[')
		for i, meta := range e.files {
			if i > 0 {
				w.WriteByte(',')
			}
			w.Write(meta)
			if c := e.r.Files[i].Content; c != nil {
				w.WriteString(`,"content":`)
				jsontext.WriteString(w, *c)
			}
			w.WriteByte('}')
		}
		w.WriteByte(']')
	}
	w.WriteByte(',')
	w.Write(e.rest)
}

// writeTwin writes `,"name":"…"` with the base64 of s when s is not valid
// UTF-8 (its JSON text lost bytes to U+FFFD), and nothing otherwise. The
// base64 is made a chunk at a time: the output may be 64 MiB.
func writeTwin(w jsontext.Writer, name, s string) {
	if utf8.ValidString(s) {
		return
	}
	w.WriteString(`,"`)
	w.WriteString(name)
	w.WriteString(`":"`)
	var src [3 << 10]byte // a multiple of 3: padding only at the end
	var dst [4 << 10]byte
	for len(s) > 0 {
		n := copy(src[:], s)
		s = s[n:]
		base64.StdEncoding.Encode(dst[:], src[:n])
		w.Write(dst[:base64.StdEncoding.EncodedLen(n)])
	}
	w.WriteByte('"')
}

// counter counts what is written to it.
type counter struct{ n int64 }

func (c *counter) Write(p []byte) (int, error)       { c.n += int64(len(p)); return len(p), nil }
func (c *counter) WriteString(s string) (int, error) { c.n += int64(len(s)); return len(s), nil }
func (c *counter) WriteByte(byte) error              { c.n++; return nil }
