package seccomp

import (
	"fmt"
	"syscall"
)

// Validate reports the first rule that is malformed or that contradicts
// another one (e.g. a call both allowed and forbidden).
func (p *Policy) Validate() error {
	if p.KnownThrough < 0 || p.KnownThrough >= len(syscallNames) {
		return fmt.Errorf("seccomp: policy: KnownThrough %d outside the syscall table (0..%d)", p.KnownThrough, len(syscallNames)-1)
	}
	type seen struct {
		uncond      *Rule
		conditional []*Rule
		rules       int
	}
	bySyscall := map[string]*seen{}
	for i := range p.Rules {
		r := &p.Rules[i]
		where := fmt.Sprintf("seccomp: policy: rule %d (%s)", i, r.Syscall)
		nr, ok := syscallNumber(r.Syscall)
		if !ok {
			return fmt.Errorf("%s: unknown x86_64 system call", where)
		}
		if nr > p.KnownThrough {
			return fmt.Errorf("%s: number %d is above KnownThrough %d", where, nr, p.KnownThrough)
		}
		switch r.Action {
		case Forbid, Allow, Succeed:
			if r.Errno != 0 {
				return fmt.Errorf("%s: Errno set on a %s rule", where, r.Action)
			}
		case Errno:
			if r.Errno <= 0 || r.Errno > 4095 {
				return fmt.Errorf("%s: errno %d outside 1..4095", where, int(r.Errno))
			}
		default:
			return fmt.Errorf("%s: invalid action %d", where, int(r.Action))
		}
		if len(r.When) > 0 && r.Action == Forbid {
			return fmt.Errorf("%s: conditions on a %s rule (only Allow, Succeed and Errno rules may have them)", where, r.Action)
		}
		if len(r.When) > 0 && r.Except != nil {
			return fmt.Errorf("%s: both When and Except", where)
		}
		args := map[uint]bool{}
		for _, c := range r.When {
			if c.Arg > 5 {
				return fmt.Errorf("%s: argument index %d > 5", where, c.Arg)
			}
			if args[c.Arg] {
				return fmt.Errorf("%s: two conditions on argument %d", where, c.Arg)
			}
			args[c.Arg] = true
			if c.Mask == 0 {
				return fmt.Errorf("%s: condition on argument %d has mask 0 (always true)", where, c.Arg)
			}
			if c.Value&^c.Mask != 0 {
				return fmt.Errorf("%s: condition on argument %d can never hold (value %#x outside mask %#x)", where, c.Arg, c.Value, c.Mask)
			}
		}
		if e := r.Except; e != nil {
			if r.Action != Allow {
				return fmt.Errorf("%s: Except on a %s rule", where, r.Action)
			}
			if e.Arg > 5 || len(e.Values) == 0 {
				return fmt.Errorf("%s: Except needs an argument index 0..5 and values", where)
			}
		}

		s := bySyscall[r.Syscall]
		if s == nil {
			s = &seen{}
			bySyscall[r.Syscall] = s
		}
		s.rules++
		if len(r.When) > 0 {
			// Conditional rules with different actions must be disjoint:
			// which one libseccomp tries first is its business, so an
			// argument value that met both would have no one meaning.
			for _, o := range s.conditional {
				if o.Action != r.Action && !disjoint(o.When, r.When) {
					return fmt.Errorf("%s: a %s rule whose conditions overlap those of a %s rule", where, r.Action, o.Action)
				}
			}
			s.conditional = append(s.conditional, r)
		} else if s.uncond != nil {
			return fmt.Errorf("%s: a second unconditional rule (already %s)", where, s.uncond.Action)
		} else {
			s.uncond = r
		}
		// libseccomp lets an unconditional rule swallow the conditional
		// ones of the same call, so a mix never means what it says.
		if s.uncond != nil && s.rules > 1 {
			return fmt.Errorf("%s: %s together with other rules for the same call", where, s.uncond.Action)
		}
	}
	for _, r := range p.Rules {
		if r.Action == Allow {
			return nil
		}
	}
	return errEmptyPolicy
}

// disjoint reports whether no argument values can meet both condition
// lists: some argument has a condition in each that wants different values
// of a bit both look at.
func disjoint(a, b []Cond) bool {
	for _, x := range a {
		for _, y := range b {
			if x.Arg == y.Arg && (x.Value^y.Value)&x.Mask&y.Mask != 0 {
				return true
			}
		}
	}
	return false
}

// rulesFor returns the rules of one system call.
func (p *Policy) rulesFor(name string) []Rule {
	var out []Rule
	for _, r := range p.Rules {
		if r.Syscall == name {
			out = append(out, r)
		}
	}
	return out
}

// decide is the policy's meaning for a native x86_64 call, as the seccomp
// return value; the compiled filter must agree with it (compile_test.go).
func (p *Policy) decide(nr int, args [6]uint64) uint32 {
	name := SyscallName(nr)
	if name == "" || nr > p.KnownThrough {
		return retErrno | uint32(syscall.ENOSYS)
	}
	rules := p.rulesFor(name)
	if len(rules) == 0 {
		return retForbid
	}
	for _, r := range rules {
		var ret uint32
		switch r.Action {
		case Forbid:
			return retForbid
		case Errno:
			ret = retErrno | uint32(r.Errno)
		case Succeed:
			ret = retSucceed
		default:
			ret = retAllow
		}
		if r.Except != nil {
			for _, v := range r.Except.Values {
				if uint32(args[r.Except.Arg]) == v {
					return retForbid
				}
			}
		}
		ok := true
		for _, c := range r.When {
			if args[c.Arg]&c.Mask != c.Value {
				ok = false
			}
		}
		if ok {
			return ret
		}
	}
	return retForbid
}
