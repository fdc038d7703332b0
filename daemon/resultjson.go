package daemon

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"unicode/utf8"
)

// The result's stdout and stderr are written as JSON strings straight
// from the captured bytes: encoding/json would build the whole answer in
// memory, twice (its own buffer, then the caller's), and a program's
// output can grow six times there (a NUL byte is "\u0000"). With
// limits.max.output_bytes at 64 MiB that was more than 700 MiB of the
// daemon's memory, which its jails share, for one answer.

// resultRest is the result without stdout and stderr: the outer fields
// shadow the embedded ones, and nil with omitempty leaves them out.
type resultRest struct {
	*Result
	Stdout any `json:"stdout,omitempty"`
	Stderr any `json:"stderr,omitempty"`
}

// encodeRest is the JSON object of the result without stdout and stderr,
// without its opening brace, as encoding/json writes it (no HTML escaping,
// as `agentjail run --json` prints it), newline included.
func (r *Result) encodeRest() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(resultRest{Result: r}); err != nil {
		return nil, err
	}
	return b.Bytes()[1:], nil // {"id":... → "id":...
}

// jsonLen is the length of what writeResult writes for r with rest.
func (r *Result) jsonLen(rest []byte) int64 {
	var c countingWriter
	bw := bufio.NewWriterSize(&c, 4096)
	r.writeJSON(bw, rest)
	_ = bw.Flush()
	return c.n
}

// WriteJSON writes the result as one line of JSON: the contract's object,
// stdout and stderr first.
func (r *Result) WriteJSON(w io.Writer) error {
	rest, err := r.encodeRest()
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	r.writeJSON(bw, rest)
	return bw.Flush()
}

func (r *Result) writeJSON(w *bufio.Writer, rest []byte) {
	w.WriteString(`{"stdout":`)
	writeJSONString(w, r.Stdout)
	w.WriteString(`,"stderr":`)
	writeJSONString(w, r.Stderr)
	if len(rest) > 0 && rest[0] != '}' {
		w.WriteByte(',')
	}
	w.Write(rest)
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

const hexDigits = "0123456789abcdef"

// writeJSONString writes s as a JSON string the way encoding/json does
// without HTML escaping: invalid UTF-8 becomes U+FFFD, control characters,
// quotes, backslashes, U+2028 and U+2029 are escaped.
func writeJSONString(w *bufio.Writer, s string) {
	w.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			w.WriteString(s[start:i])
			switch b {
			case '"', '\\':
				w.WriteByte('\\')
				w.WriteByte(b)
			case '\b':
				w.WriteString(`\b`)
			case '\f':
				w.WriteString(`\f`)
			case '\n':
				w.WriteString(`\n`)
			case '\r':
				w.WriteString(`\r`)
			case '\t':
				w.WriteString(`\t`)
			default:
				w.WriteString(`\u00`)
				w.WriteByte(hexDigits[b>>4])
				w.WriteByte(hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			w.WriteString(s[start:i])
			w.WriteString(`\ufffd`)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			w.WriteString(s[start:i])
			w.WriteString(`\u202`)
			w.WriteByte(hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	w.WriteString(s[start:])
	w.WriteByte('"')
}
