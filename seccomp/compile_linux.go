//go:build linux && cgo && !agentjail_nolibseccomp

package seccomp

import (
	"fmt"
	"io"
	"os"

	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// Compile turns the policy into a seccomp program with libseccomp. It runs
// once per process (daemon or CLI start), never per jail: the result is plain
// data that any number of jails install. The program is the same for both
// Modes.
//
// What the program does, in order:
//  1. prefix (program.go): a foreign architecture or an x32 number →
//     USER_NOTIF; ERRNO(ENOSYS) for numbers the policy does not know; the
//     Except rules (TIOCSTI/TIOCLINUX, PR_SET_SECCOMP, SHM_LOCK) → USER_NOTIF;
//  2. libseccomp's program: each rule → ALLOW, ERRNO (ERRNO(0) for
//     Succeed) or its argument checks; anything else → USER_NOTIF (Forbid).
func (p *Policy) Compile() (*Program, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	arch, err := libseccomp.GetNativeArch()
	if err != nil {
		return nil, fmt.Errorf("seccomp: native architecture: %w", err)
	}
	if arch != libseccomp.ArchAMD64 {
		return nil, fmt.Errorf("seccomp: the policy is written for x86_64, this is %v: %w", arch, errUnsupported)
	}

	f, err := libseccomp.NewFilter(libseccomp.ActNotify)
	if err != nil {
		// libseccomp checks that the kernel supports the action.
		return nil, fmt.Errorf("seccomp: new filter with the user-notification action (Linux 5.0+, libseccomp 2.5+): %w (%w)", err, errUnsupported)
	}
	defer f.Release()
	// A foreign architecture or x32 number is notified like any forbidden
	// call (the prefix already sends both there; this is libseccomp's own
	// check, which the prefix makes unreachable): the supervisor sees it,
	// names it Foreign and answers EPERM, and never lets it run.
	if err := f.SetBadArchAction(libseccomp.ActNotify); err != nil {
		return nil, fmt.Errorf("seccomp: bad-arch action NOTIFY: %w", err)
	}
	// A binary tree of syscall numbers instead of a ~300-long chain: fewer
	// instructions per call, and Install costs half as much, because the
	// kernel runs the filter for every number when it loads it, to fill its
	// action cache (5.11+; calls allowed whatever their arguments then skip
	// the filter entirely).
	if err := f.SetOptimize(2); err != nil {
		return nil, fmt.Errorf("seccomp: optimize: %w", err)
	}

	for _, r := range p.Rules {
		if r.Action == Forbid {
			continue // the default action; libseccomp refuses to repeat it
		}
		nr, _ := syscallNumber(r.Syscall)
		if err := addRule(f, libseccomp.ScmpSyscall(nr), r); err != nil {
			return nil, fmt.Errorf("seccomp: rule for %s: %w", r.Syscall, err)
		}
	}

	body, err := exportBPF(f)
	if err != nil {
		return nil, err
	}
	prog := &Program{Instructions: append(prefix(p), body...)}
	if err := prog.check(); err != nil {
		return nil, err
	}
	return prog, nil
}

func addRule(f *libseccomp.ScmpFilter, call libseccomp.ScmpSyscall, r Rule) error {
	var act libseccomp.ScmpAction
	switch r.Action {
	case Allow:
		act = libseccomp.ActAllow
	case Errno:
		act = libseccomp.ActErrno.SetReturnCode(int16(r.Errno))
	case Succeed:
		act = libseccomp.ActErrno.SetReturnCode(0) // SECCOMP_RET_ERRNO|0: returns 0, the call does not run
	}
	if len(r.When) == 0 {
		// r.Except is compiled into the prefix; here the call is allowed.
		return f.AddRuleExact(call, act)
	}
	conds := make([]libseccomp.ScmpCondition, len(r.When))
	for i, c := range r.When {
		cond, err := libseccomp.MakeCondition(c.Arg, libseccomp.CompareMaskedEqual, c.Mask, c.Value)
		if err != nil {
			return err
		}
		conds[i] = cond
	}
	return f.AddRuleConditionalExact(call, act, conds)
}

// exportBPF runs seccomp_export_bpf into a memfd (it wants a file
// descriptor) and decodes the result.
func exportBPF(f *libseccomp.ScmpFilter) ([]unix.SockFilter, error) {
	fd, err := unix.MemfdCreate("agentjail-seccomp-bpf", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("seccomp: export: %w", os.NewSyscallError("memfd_create", err))
	}
	file := os.NewFile(uintptr(fd), "agentjail-seccomp-bpf")
	defer file.Close()
	if err := f.ExportBPF(file); err != nil {
		return nil, fmt.Errorf("seccomp: export BPF: %w", err)
	}
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("seccomp: export: %w", err)
	}
	b, err := io.ReadAll(file)
	if err != nil {
		return nil, fmt.Errorf("seccomp: export: %w", err)
	}
	var body Program
	if err := body.UnmarshalBinary(b); err != nil {
		return nil, fmt.Errorf("seccomp: libseccomp's output: %w", err)
	}
	return body.Instructions, nil
}
