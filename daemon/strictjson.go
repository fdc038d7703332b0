package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"agentjail/nsjail"
)

// checkKeys walks valid JSON data as the Go type t would decode it and
// refuses what encoding/json lets pass silently: a name given twice in
// one object (it keeps the last, while a proxy or validator in front of
// the daemon may read the first), and a field name that matches a
// struct field only without regard to case ("Code" for "code"). It also
// names an unknown field with its whole path ("limits.memroy_bytes"),
// and the field meant when the name is close to one, and a value of the
// wrong type with its whole path ("files[1].content"), which
// json.Unmarshal's errors lack. Only the objects and arrays that t gives
// a shape to are walked: a json.RawMessage (a test's arguments, expected
// value) goes to the harness as it came. So the walk's depth is the
// type's, and its cost one pass over the data: values are skipped
// without being copied, names decoded, and a path made into a string
// only for an error.
func checkKeys(data []byte, t reflect.Type) error {
	w := keyWalker{data: data}
	return w.value(t)
}

type keyWalker struct {
	data     []byte
	i        int
	path     []pathSeg // where the walk is, for errors
	depth    int       // the arrays and objects the walk is in
	elements int       // the items and members walked, outside raw values
}

// pathSeg is an object's field name, or an array's index.
type pathSeg struct {
	name  string
	idx   int
	index bool
}

var (
	rawMessageType = reflect.TypeFor[json.RawMessage]()
	fieldCache     sync.Map // reflect.Type → map[string]reflect.Type
)

func (w *keyWalker) space() {
	for w.i < len(w.data) && isSpace(w.data[w.i]) {
		w.i++
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// isEnd tells whether c ends a number or literal.
func isEnd(c byte) bool { return c == ',' || c == ']' || c == '}' || isSpace(c) }

// value walks the value at w.i, of Go type t.
func (w *keyWalker) value(t reflect.Type) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	w.space()
	c := w.data[w.i]
	switch {
	case t == nil || t == rawMessageType || c == 'n': // null: the zero value, as encoding/json
	case c == '{' && (t.Kind() == reflect.Struct || t.Kind() == reflect.Map):
		return w.object(t)
	case c == '[' && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
		return w.array(t.Elem())
	default:
		start := w.i
		if err := w.skipValue(); err != nil {
			return err
		}
		if !fits(t, w.data[start:w.i]) {
			// What json.Unmarshal would refuse, said with the value's
			// whole path (its own error has no array index).
			return &nsjail.FieldError{Field: w.at(), Msg: fmt.Sprintf("must be %s, got JSON %s", jsonKind(t.Kind().String()), jsonValueKind(w.data[start:w.i]))}
		}
		return nil
	}
	return w.skipValue()
}

// fits tells whether the JSON scalar v decodes into a value of type t
// (for the kinds of the request's types; any other is left to
// json.Unmarshal).
func fits(t reflect.Type, v []byte) bool {
	switch t.Kind() {
	case reflect.String:
		return v[0] == '"'
	case reflect.Bool:
		return v[0] == 't' || v[0] == 'f'
	case reflect.Int64, reflect.Int:
		_, err := strconv.ParseInt(string(v), 10, 64)
		return err == nil
	case reflect.Slice: // a []byte takes base64 in a string
		return v[0] == '"' && t.Elem().Kind() == reflect.Uint8
	case reflect.Struct, reflect.Map, reflect.Array:
		return false // a scalar where an object or array goes
	}
	return true
}

// jsonValueKind names a JSON value for a message, with a short number.
func jsonValueKind(v []byte) string {
	switch v[0] {
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	if len(v) <= 24 {
		return "number " + string(v)
	}
	return "number"
}

func (w *keyWalker) array(elem reflect.Type) error {
	w.i++
	lim, limited := w.limitHere()
	w.path = append(w.path, pathSeg{index: true})
	w.depth++
	defer func() { w.path, w.depth = w.path[:len(w.path)-1], w.depth-1 }()
	if w.depth > MaxRequestDepth {
		return w.tooDeep()
	}
	for n := 0; ; n++ {
		w.space()
		if w.data[w.i] == ']' {
			w.i++
			return nil
		}
		w.path[len(w.path)-1].idx = n
		if err := w.overCount(lim, limited, n); err != nil {
			return err
		}
		if err := w.element(); err != nil {
			return err
		}
		if err := w.value(elem); err != nil {
			return err
		}
		w.space()
		if w.data[w.i] == ',' {
			w.i++
		}
	}
}

func (w *keyWalker) object(t reflect.Type) error {
	var fields map[string]reflect.Type // of a struct; nil for a map
	var elem reflect.Type
	var seen map[string]bool // a map's keys so far
	var few [16]string
	seenFields := few[:0] // a struct's: a few at most (on the stack)
	if t.Kind() == reflect.Struct {
		fields = jsonFields(t)
	} else {
		elem = t.Elem()
		seen = map[string]bool{}
	}
	w.i++
	lim, limited := w.limitHere()
	w.path = append(w.path, pathSeg{})
	w.depth++
	defer func() { w.path, w.depth = w.path[:len(w.path)-1], w.depth-1 }()
	if w.depth > MaxRequestDepth {
		return w.tooDeep()
	}
	for n := 0; ; n++ {
		w.space()
		if w.data[w.i] == '}' {
			w.i++
			return nil
		}
		if err := w.overCount(lim, limited, n); err != nil {
			return err
		}
		if err := w.element(); err != nil {
			return err
		}
		name := w.name()
		w.path[len(w.path)-1] = pathSeg{name: name}
		twice := slices.Contains(seenFields, name)
		if seen != nil {
			twice = seen[name]
			seen[name] = true
		}
		if twice {
			return &nsjail.FieldError{Field: w.at(), Msg: "is given twice; give each name once"}
		}
		vt := elem
		if fields != nil {
			ft, ok := fields[name]
			if !ok {
				return &nsjail.FieldError{Field: w.at(), Msg: unknownField(name, fields)}
			}
			vt = ft
			seenFields = append(seenFields, name)
		}
		w.space()
		w.i++ // the colon
		if err := w.value(vt); err != nil {
			return err
		}
		w.space()
		if w.data[w.i] == ',' {
			w.i++
		}
	}
}

// name decodes the object name at w.i, as encoding/json does (escapes
// resolved, invalid UTF-8 replaced), and steps past it.
func (w *keyWalker) name() string {
	start := w.i
	w.skipString()
	raw := w.data[start+1 : w.i-1]
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw)
	}
	var name string
	_ = json.Unmarshal(w.data[start:w.i], &name) // valid: checked by json.Valid
	return name
}

// at is the walk's path, for an error; each name cut to 64 bytes.
func (w *keyWalker) at() string {
	if len(w.path) == 0 {
		return "body"
	}
	var b strings.Builder
	for i, s := range w.path {
		switch {
		case s.index:
			fmt.Fprintf(&b, "[%d]", s.idx)
		case i > 0:
			b.WriteByte('.')
			fallthrough
		default:
			b.WriteString(shortName(s.name))
		}
	}
	return b.String()
}

// shortName cuts a name for a message: a client's name may be megabytes.
func shortName(s string) string {
	if len(s) <= 64 {
		return s
	}
	cut := 61
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// skipValue steps past the value at w.i, nested or not, without
// recursion or copies; it refuses one that nests deeper than
// MaxRequestDepth with the walk's.
func (w *keyWalker) skipValue() error {
	w.space()
	depth := 0
	for {
		switch w.data[w.i] {
		case '"':
			w.skipString()
		case '{', '[':
			if depth++; w.depth+depth > MaxRequestDepth {
				return w.tooDeep()
			}
			w.i++
		case '}', ']':
			depth--
			w.i++
		case ',', ':', ' ', '\t', '\n', '\r':
			w.i++
		default: // a number, true, false or null
			for w.i < len(w.data) && !isEnd(w.data[w.i]) {
				w.i++
			}
		}
		if depth == 0 {
			return nil
		}
	}
}

func (w *keyWalker) skipString() {
	w.i++ // the opening quote
	for w.data[w.i] != '"' {
		if w.data[w.i] == '\\' {
			w.i++
		}
		w.i++
	}
	w.i++
}

// jsonFields maps a struct's JSON names to their types, made once per type.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := map[string]reflect.Type{}
	defer fieldCache.Store(t, m)
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		m[name] = f.Type
	}
	return m
}

// unknownField says that name is none of fields, and which it may have
// meant: one that differs only in case, or by at most two edits.
func unknownField(name string, fields map[string]reflect.Type) string {
	names := slices.Sorted(maps.Keys(fields))
	longest := 0
	for _, f := range names {
		longest = max(longest, len(f))
	}
	if len(name) > longest+2 { // two edits away from none; and a long name would cost len² to compare
		return "unknown field (see docs/contract.md §3 for the request's fields)"
	}
	if best := nearest(strings.ToLower(name), names); best != "" {
		return fmt.Sprintf("unknown field; did you mean %q? (names are case-sensitive; see docs/contract.md §3)", best)
	}
	return "unknown field (see docs/contract.md §3 for the request's fields)"
}
