package daemon

import (
	"strings"

	"agentjail/nsjail"
)

// LimitScope is what a limit bounds (a set of them).
type LimitScope int

const (
	ScopeRun     LimitScope = 1 << iota // a run (POST /v1/run, agentjail run)
	ScopeSession                        // a session as a whole, set when it is created
	ScopeCall                           // one call of a session
)

// LimitKeys are the keys of the limits a request of scope may set, in the
// table's order.
func LimitKeys(scope LimitScope) []string {
	var keys []string
	for i := range limitTable {
		d := &limitTable[i]
		if d.Scope&scope != 0 && d.request(&RequestLimits{}) != nil {
			keys = append(keys, d.Key)
		}
	}
	return keys
}

// callLimits are the nsjail limits of a call, from its limits in full.
func callLimits(l nsjail.Limits) nsjail.CallLimits {
	return nsjail.CallLimits{WallTime: l.WallTime, CPUTime: l.CPUTime, OutputBytes: l.OutputBytes, DisplayBytes: l.DisplayBytes}
}

// only refuses a limit that r sets and that is not of scope: the first in
// the table's order, with msg and the keys of scope.
func (r *RequestLimits) only(scope LimitScope, msg string) error {
	if r == nil {
		return nil
	}
	for i := range limitTable {
		d := &limitTable[i]
		if p := d.request(r); p != nil && *p != nil && d.Scope&scope == 0 {
			return &nsjail.FieldError{Field: "limits." + d.Key, Msg: msg + "; " + scopeWords[scope] + " " + keyList(LimitKeys(scope))}
		}
	}
	return nil
}

// scopeWords name the limits of a scope, in the error of only.
var scopeWords = map[LimitScope]string{ScopeRun: "a run has", ScopeSession: "a session has", ScopeCall: "a call has"}

// keyList is "a, b and c".
func keyList(keys []string) string {
	if len(keys) < 2 {
		return strings.Join(keys, "")
	}
	return strings.Join(keys[:len(keys)-1], ", ") + " and " + keys[len(keys)-1]
}
