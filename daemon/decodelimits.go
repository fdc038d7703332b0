package daemon

import (
	"fmt"
	"strings"

	"agentjail/daemon/harness"
	"agentjail/nsjail"
)

// Limits on the shape of a request's JSON (a run's, a session's, a
// call's). The key walker (checkKeys) checks them while it checks names,
// before json.Unmarshal builds a value: a value costs the decoder tens of
// bytes for each byte of "{}," that asks for it, so a body of many small
// elements must be refused before it is built. With them, decoding a
// body costs a few times its size and a bounded sum besides (see
// docs/security.md, "What the daemon spends").
const (
	// MaxRequestDepth is how deep a request's JSON may nest, the
	// request's own object and a test's values included.
	MaxRequestDepth = 256
	// MaxRequestElements caps the array items and object members the
	// daemon decodes into values: all of them but those inside a test's
	// args, kwargs and expected values (which go to the harness as they
	// came, as one value each).
	MaxRequestElements = 1 << 16
	// MaxEnvVars caps the variables of a request's env.
	MaxEnvVars = 4096
)

// elementCost is what one element may cost the decoder and the request's
// validation, in bytes allocated: at most about 310 measured, for an
// object member of a test's kwargs (TestDecodeCostAtTheLimits).
const elementCost = 512

// decodeShare is the part of the decoding bound (Server.decoding) a body
// of size bytes takes while it is read and decoded: its bytes, and what
// the elements it may hold may cost (each takes two bytes at least, and
// there are MaxRequestElements at most). Bodies of many small elements
// decoded at once would otherwise take tens of times their bytes
// together.
func decodeShare(size int64) int64 {
	return size + min(size/2, MaxRequestElements)*elementCost
}

// countLimit is the most items (or members) one array (or object) of a
// request may hold, by its path without indexes.
type countLimit struct {
	max  int
	what string // what one item is, plural
	name string // the limit's name, for the message
}

var countLimits = map[string]countLimit{
	"tests.cases": {harness.MaxTestCases, "cases", "test cases"},
	"files":       {nsjail.MaxFiles, "files", "files"},
	"env":         {MaxEnvVars, "variables", "environment variables"},
	"collect":     {nsjail.MaxCollectPatterns, "patterns", "collect patterns"},
}

// limitHere is the count limit of the array or object the walk is in,
// if it has one.
func (w *keyWalker) limitHere() (countLimit, bool) {
	if len(w.path) == 0 || w.path[len(w.path)-1].index {
		return countLimit{}, false // the body, or an array's item
	}
	var b strings.Builder
	for _, s := range w.path {
		if s.index {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		if b.Len()+len(s.name) > len("tests.cases") {
			return countLimit{}, false
		}
		b.WriteString(s.name)
	}
	l, ok := countLimits[b.String()]
	return l, ok
}

// overCount is the error for the n-th item of the array or object the
// walk is in (its path is the walk's less its last segment), or nil.
func (w *keyWalker) overCount(l countLimit, ok bool, n int) error {
	if !ok || n < l.max {
		return nil
	}
	return &nsjail.FieldError{Field: w.parentAt(), Msg: fmt.Sprintf("more than %d %s (the limit on %s is %d)", l.max, l.what, l.name, l.max)}
}

// element counts one more array item or object member, and refuses one
// past MaxRequestElements.
func (w *keyWalker) element() error {
	if w.elements++; w.elements > MaxRequestElements {
		return &nsjail.FieldError{Field: "body", Msg: fmt.Sprintf("more than %d array items and object members, not counting those inside a test's values (the limit on a request's elements is %d)", MaxRequestElements, MaxRequestElements)}
	}
	return nil
}

// tooDeep is the error for a value nested deeper than MaxRequestDepth.
func (w *keyWalker) tooDeep() error {
	return &nsjail.FieldError{Field: w.at(), Msg: fmt.Sprintf("nested deeper than %d levels (the limit on a request's nesting depth is %d)", MaxRequestDepth, MaxRequestDepth)}
}

// parentAt is at() for the array or object that holds the walk's last
// segment.
func (w *keyWalker) parentAt() string {
	saved := w.path
	w.path = w.path[:len(w.path)-1]
	defer func() { w.path = saved }()
	return w.at()
}
