// Package jsontext writes JSON the way the daemon's answers carry it:
// encoding/json's output without HTML escaping (a program's `<` stays
// `<`, as `agentjail run --json` prints it), and JSON strings written
// straight from their bytes, for the result's large strings and for the
// quoted names of feedback sentences.
package jsontext

import (
	"bytes"
	"encoding/json"
	"io"
	"unicode/utf8"
)

// Marshal is v as encoding/json writes it, without HTML escaping,
// newline included.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Writer is what WriteString writes to: a bufio.Writer, a
// strings.Builder, or a counter of bytes.
type Writer interface {
	io.Writer
	io.ByteWriter
	io.StringWriter
}

const hexDigits = "0123456789abcdef"

// WriteString writes s as a JSON string the way encoding/json does
// without HTML escaping: invalid UTF-8 becomes U+FFFD, control characters,
// quotes, backslashes, U+2028 and U+2029 are escaped.
func WriteString(w Writer, s string) {
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
