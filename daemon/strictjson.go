package daemon

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"agentjail/nsjail"
)

// checkKeys walks valid JSON data as the Go type t would decode it and
// refuses what encoding/json lets pass silently: a name given twice in
// one object (it keeps the last, while a proxy or validator in front of
// the daemon may read the first), and a field name that matches a
// struct field only without regard to case ("Code" for "code"). It also
// names an unknown field with its whole path ("limits.memroy_bytes"),
// and the field meant when the name is close to one. Values are skipped
// without being copied: only names are decoded.
func checkKeys(data []byte, t reflect.Type) error {
	w := keyWalker{data: data}
	return w.value(t, "")
}

type keyWalker struct {
	data []byte
	i    int
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

func (w *keyWalker) space() {
	for w.i < len(w.data) {
		switch w.data[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// value walks the value at w.i; t is the type it decodes into (nil: any).
func (w *keyWalker) value(t reflect.Type, path string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessageType {
		t = nil
	}
	w.space()
	switch w.data[w.i] {
	case '{':
		return w.object(t, path)
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		w.i++
		for n := 0; ; n++ {
			w.space()
			if w.data[w.i] == ']' {
				w.i++
				return nil
			}
			if err := w.value(elem, fmt.Sprintf("%s[%d]", path, n)); err != nil {
				return err
			}
			w.space()
			if w.data[w.i] == ',' {
				w.i++
			}
		}
	case '"':
		w.skipString()
	default: // a number, true, false or null
		for w.i < len(w.data) && !strings.ContainsRune(",]} \t\n\r", rune(w.data[w.i])) {
			w.i++
		}
	}
	return nil
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

func (w *keyWalker) object(t reflect.Type, path string) error {
	var fields map[string]reflect.Type // of a struct; nil for a map or any
	var elem reflect.Type
	if t != nil {
		switch t.Kind() {
		case reflect.Struct:
			fields = jsonFields(t)
		case reflect.Map:
			elem = t.Elem()
		}
	}
	seen := map[string]bool{}
	w.i++
	for {
		w.space()
		if w.data[w.i] == '}' {
			w.i++
			return nil
		}
		start := w.i
		w.skipString()
		var name string
		if err := json.Unmarshal(w.data[start:w.i], &name); err != nil {
			return err
		}
		at := name
		if path != "" {
			at = path + "." + name
		}
		if seen[name] {
			return &nsjail.FieldError{Field: at, Msg: "is given twice; give each name once"}
		}
		seen[name] = true
		vt := elem
		if fields != nil {
			ft, ok := fields[name]
			if !ok {
				return &nsjail.FieldError{Field: at, Msg: unknownField(name, fields)}
			}
			vt = ft
		}
		w.space()
		w.i++ // the colon
		if err := w.value(vt, at); err != nil {
			return err
		}
		w.space()
		if w.data[w.i] == ',' {
			w.i++
		}
	}
}

// jsonFields maps a struct's JSON names to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	m := map[string]reflect.Type{}
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
	if best := nearest(strings.ToLower(name), slices.Sorted(maps.Keys(fields))); best != "" {
		return fmt.Sprintf("unknown field; did you mean %q? (names are case-sensitive; see CONTRACT.md §3)", best)
	}
	return "unknown field (see CONTRACT.md §3 for the request's fields)"
}
