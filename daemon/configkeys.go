package daemon

// The configuration file's keys and types, checked against Config before
// go-toml decodes it, so that every error names its key and its line in
// the file's own terms.

import (
	"encoding"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// decodeError turns an error of go-toml into a ConfigError.
func decodeError(err error) *ConfigError {
	var de *toml.DecodeError
	var se *toml.StrictMissingError
	switch {
	case errors.As(err, &se) && len(se.Errors) > 0:
		line, _ := se.Errors[0].Position()
		return &ConfigError{Key: strings.Join(se.Errors[0].Key(), "."), Line: line, Unknown: true}
	case errors.As(err, &de):
		line, _ := de.Position()
		return &ConfigError{Line: line, Msg: strings.TrimPrefix(de.Error(), "toml: ")}
	}
	return &ConfigError{Msg: strings.TrimPrefix(err.Error(), "toml: ")}
}

// keyLines maps every key the document sets, and every table it names,
// to the line where that happens first. It also reports a key set twice,
// which go-toml reports without a line.
func keyLines(data []byte) (map[string]int, *ConfigError) {
	lines := map[string]int{}
	var p unstable.Parser
	p.Reset(data)
	lineOf := func(n *unstable.Node) int { return p.Shape(n.Raw).Start.Line }
	parts := func(it unstable.Iterator) (ks []string, first *unstable.Node) {
		for it.Next() {
			if first == nil {
				first = it.Node()
			}
			ks = append(ks, string(it.Node().Data))
		}
		return ks, first
	}
	// record sets the line of key and of each table above it.
	record := func(ks []string, line int) {
		for i := 1; i <= len(ks); i++ {
			if k := strings.Join(ks[:i], "."); lines[k] == 0 {
				lines[k] = line
			}
		}
	}
	var dup *ConfigError
	seen := map[string]int{}
	var keyval func(prefix []string, kv *unstable.Node, inArray bool)
	keyval = func(prefix []string, kv *unstable.Node, inArray bool) {
		ks, first := parts(kv.Key())
		full := append(append([]string{}, prefix...), ks...)
		line := lineOf(first)
		k := strings.Join(full, ".")
		if prev, ok := seen[k]; ok && !inArray && dup == nil {
			dup = &ConfigError{Key: k, Line: line, Msg: fmt.Sprintf("is set twice (first on line %d)", prev)}
		}
		seen[k] = line
		record(full, line)
		if v := kv.Value(); v.Kind == unstable.InlineTable {
			for it := v.Children(); it.Next(); {
				keyval(full, it.Node(), inArray)
			}
		}
	}
	var table []string
	inArray := false
	headers := map[string]int{}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			ks, first := parts(e.Key())
			table, inArray = ks, e.Kind == unstable.ArrayTable
			line := lineOf(first)
			k := strings.Join(ks, ".")
			if prev, ok := headers[k]; ok && !inArray && dup == nil {
				dup = &ConfigError{Key: k, Line: line, Msg: fmt.Sprintf("table [%s] is given twice (first on line %d)", k, prev)}
			}
			headers[k] = line
			record(ks, line)
		case unstable.KeyValue:
			keyval(table, e, inArray)
		}
	}
	// A syntax error is left to go-toml, which reports it with its line.
	return lines, dup
}

// quoteHints are for the string keys whose values look like numbers.
var quoteHints = map[string]string{
	"socket.mode":              `write it quoted, e.g. "0660"`,
	"socket.group":             `write it quoted, e.g. "agentjail" or "1001"`,
	"admission.shutdown_grace": `write it quoted, e.g. "10s"`,
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// checkTable checks the untyped table m against struct type t, key by key.
func checkTable(m map[string]any, t reflect.Type, prefix string, lines map[string]int, errs *[]*ConfigError) {
	fields := map[string]reflect.Type{}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("toml"), ","); name != "" && name != "-" {
			fields[name] = f.Type
			names = append(names, name)
		}
	}
	for k, v := range m {
		key := prefix + k
		ft, ok := fields[k]
		if !ok {
			e := &ConfigError{Key: key, Line: lines[key], Unknown: true}
			if s := nearest(k, names); s != "" {
				e.Msg = fmt.Sprintf("(did you mean %q?)", prefix+s)
			}
			*errs = append(*errs, e)
			continue
		}
		if ft.Kind() == reflect.Struct {
			sub, ok := v.(map[string]any)
			if !ok {
				*errs = append(*errs, &ConfigError{Key: key, Line: lines[key], Msg: "must be a table ([" + key + "]), got " + describe(v)})
				continue
			}
			checkTable(sub, ft, key+".", lines, errs)
			continue
		}
		if ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Struct {
			// A table of named tables ([environments.NAME]): each is
			// checked as one of its struct.
			sub, ok := v.(map[string]any)
			if !ok {
				*errs = append(*errs, &ConfigError{Key: key, Line: lines[key], Msg: "must be a table of tables ([" + key + ".NAME]), got " + describe(v)})
				continue
			}
			for name, el := range sub {
				t, ok := el.(map[string]any)
				if !ok {
					*errs = append(*errs, &ConfigError{Key: key + "." + name, Line: lines[key+"."+name], Msg: "must be a table ([" + key + "." + name + "]), got " + describe(el)})
					continue
				}
				checkTable(t, ft.Elem(), key+"."+name+".", lines, errs)
			}
			continue
		}
		if msg := checkValue(v, ft); msg != "" {
			if h := quoteHints[key]; h != "" {
				if _, isString := v.(string); !isString {
					msg += "; " + h
				}
			}
			*errs = append(*errs, &ConfigError{Key: key, Line: lines[key], Msg: msg})
		}
	}
}

// checkValue says what is wrong with the untyped value v for a field of
// type t, or "" when go-toml will decode it without loss.
func checkValue(v any, t reflect.Type) string {
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		s, ok := v.(string)
		if !ok {
			return "must be a string, got " + describe(v)
		}
		if err := reflect.New(t).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			return err.Error()
		}
		return ""
	}
	switch t.Kind() {
	case reflect.Pointer: // an optional value: absent means "derived from others"
		return checkValue(v, t.Elem())
	case reflect.String:
		if _, ok := v.(string); !ok {
			return "must be a string, got " + describe(v)
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return "must be true or false, got " + describe(v)
		}
	case reflect.Int, reflect.Int64:
		n, ok := v.(int64)
		if !ok {
			return "must be an integer, got " + describe(v)
		}
		if reflect.New(t).Elem().OverflowInt(n) {
			return fmt.Sprintf("%d is out of range", n)
		}
	case reflect.Uint32:
		n, ok := v.(int64)
		if !ok {
			return "must be an integer, got " + describe(v)
		}
		if n < 0 || n > math.MaxUint32 {
			return fmt.Sprintf("%d is out of range (0 to %d)", n, uint32(math.MaxUint32))
		}
	case reflect.Float64:
		switch v.(type) {
		case int64, float64:
		default:
			return "must be a number, got " + describe(v)
		}
	case reflect.Slice:
		a, ok := v.([]any)
		if !ok {
			return "must be an array, got " + describe(v)
		}
		for i, el := range a {
			if msg := checkValue(el, t.Elem()); msg != "" {
				return fmt.Sprintf("element %d: %s", i, msg)
			}
		}
	case reflect.Map: // of strings: a table of names to values
		m, ok := v.(map[string]any)
		if !ok {
			return "must be a table (e.g. { NAME = \"value\" }), got " + describe(v)
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if msg := checkValue(m[k], t.Elem()); msg != "" {
				return fmt.Sprintf("%s: %s", k, msg)
			}
		}
	default:
		return "has a type the configuration cannot hold" // a field type this function lacks: a bug
	}
	return ""
}

// describe names the TOML type of an untyped value, with the value when short.
func describe(v any) string {
	switch x := v.(type) {
	case string:
		if len(x) > 40 {
			return "a string"
		}
		return fmt.Sprintf("a string (%q)", x)
	case int64:
		return fmt.Sprintf("an integer (%d)", x)
	case float64:
		return fmt.Sprintf("a float (%v)", x)
	case bool:
		return fmt.Sprintf("a boolean (%v)", x)
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return "a date or time"
}
