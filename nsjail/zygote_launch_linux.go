package nsjail

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"agentjail/seccomp"
)

// A zygote's start (warmRuntime.launch): a cold jail of its own, whose
// program is zygote.py, kept alive after its imports to fork runs.

// launch starts a zygote's jail and waits until its imports are done. The
// caller's OS thread is locked; the jail is waited for on it (z.done).
func (w *warmRuntime) launch() (*zygote, error) {
	r, s := w.r, w.spec
	uid, err := r.UIDs.Acquire()
	if err != nil {
		return nil, err
	}
	spec, rc := w.zygoteRequest()
	// Its namespace maps its own uid, as 1000, and every other uid of the
	// range, which its runs' namespaces map to: only those are written by
	// this process, with the fork's own one-line map.
	j := newJail(r, uid)
	j.flow = &coldFlow{idMap: zygoteIDMap(uid, r.UIDs.Base, r.UIDs.Size)}
	z := &zygote{w: w, j: j, done: make(chan struct{})}
	fail := func(err error) (*zygote, error) {
		_ = j.cleanup()
		r.UIDs.Release(uid)
		return nil, err
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fail(stageErr("socketpair", err))
	}
	z.ctl = os.NewFile(uintptr(fds[0]), "zygote-control")
	control := os.NewFile(uintptr(fds[1]), "zygote-control-child")
	j.closers = append(j.closers, control)
	j.spec = spec
	if err := j.flow.start(j, r.build(jailBase{binds: w.base.binds, etc: s.Etc, shared: nil, filter: seccomp.ZygoteProgramBytes()}, s.Limits.TmpBytes)); err != nil {
		z.ctl.Close()
		return fail(err)
	}
	// The zygote's user and pid namespaces are its jail's pid 1's: each
	// run's bootstrap joins them through this pidfd (nestFd).
	nsRef, err := unix.PidfdOpen(j.proc.Pid, 0)
	if err != nil {
		z.ctl.Close()
		return fail(stageErr("pidfd of the zygote's jail", err))
	}
	z.nsRef = os.NewFile(uintptr(nsRef), "zygote-ns")
	j.closers = append(j.closers, zygoteNS{z})
	pio, listener, err := j.flow.startProgram(j, rc, control)
	if err != nil {
		z.ctl.Close()
		return fail(err)
	}
	control.Close() // the zygote holds its own copy
	if _, err := j.awaitExec(listener); err != nil {
		z.ctl.Close()
		return fail(err)
	}
	defer w.superviseImports(listener)()
	go logOutput(r.Log, s.Name, pio.out)
	go logOutput(r.Log, s.Name, pio.err)
	err = z.awaitReady()
	if err != nil {
		z.ctl.Close()
		_ = j.proc.Kill()
		_ = j.wait()
		return fail(fmt.Errorf("zygote of environment %q: %w", s.Name, err))
	}
	go func() {
		// The zygote's life: its end (it exits when its control socket
		// closes, or dies) ends its jail.
		_ = j.wait()
		z.ctl.Close()
		_ = j.cleanup()
		r.UIDs.Release(uid)
		close(z.done)
	}()
	return z, nil
}

// zygoteStartTimeout bounds a zygote's imports.
const zygoteStartTimeout = 2 * time.Minute

// entryPath is the entry's path in the zygote's jail ("" for none).
func entryPath(entry string) string {
	if entry == "" {
		return ""
	}
	return "/code/" + entry
}

// zygoteRequest is the zygote's own request: zygote.py, with the
// environment's preload and entry, its code, its limits, and the
// capabilities and rlimits it keeps to fork runs.
func (w *warmRuntime) zygoteRequest() (*Spec, *requestConfig) {
	s := w.spec
	zcfg := map[string]any{"preload": s.Preload, "entry": entryPath(s.Entry)}
	code := s.Code
	// The loop goes to the zygote's /code only (a run's is w.base.shared),
	// and not over a file of the environment's of the same name: the
	// zygote then serves from python, and awaitReady warns.
	named := func(f File) bool { return f.Path == zygoteLoopName }
	if so := w.r.ZygoteLoop; so != nil && !slices.ContainsFunc(code, named) {
		zcfg["loop"] = "/code/" + zygoteLoopName
		code = append(slices.Clip(code), File{Path: zygoteLoopName, Content: so})
	}
	cfg, _ := json.Marshal(zcfg)
	// A library sizes its thread pools when it is imported, in the
	// zygote: as for its runs (libraryEnv of their CPUs), not for the
	// zygote's own bandwidth, unless the environment says otherwise.
	env := maps.Clone(s.Env)
	if env == nil {
		env = map[string]string{}
	}
	for _, kv := range libraryEnv(s.RunLimits.withDefaults().CPUs) {
		k, v, _ := strings.Cut(kv, "=")
		if _, set := env[k]; !set {
			env[k] = v
		}
	}
	spec := &Spec{
		ID: "zygote-" + NewID(), Python: s.Python, Program: zygotePy, ProgramName: zygoteName, CodeFiles: code,
		Args: []string{string(cfg)}, DefaultEnv: env, ReadOnlyMounts: s.ReadOnlyMounts, Etc: s.Etc,
		Limits: s.Limits, OnForbiddenSyscall: seccomp.ModeErrno,
		Report: true, // fd 3: its control socket (startProgram's control)
	}
	rc := requestConfigFor(spec, codeFiles(spec))
	rc.KeepCaps = 1<<unix.CAP_SETUID | 1<<unix.CAP_SETGID | 1<<unix.CAP_SYS_ADMIN
	// Its runs set their own rlimits, lower: none can raise one above the
	// zygote's (that needs CAP_SYS_RESOURCE of the host). So the zygote's
	// are this process's own hard limit of open files, and no limit of
	// file size or CPU time (it lives long, and writes nothing).
	var nofile unix.Rlimit
	_ = unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile)
	// Its namespace was made with no per-user bound (bootstrap_linux.c):
	// the zygote itself takes a jail's (userRlimits), and each run's
	// bootstrap makes the run's namespace with them.
	rc.Rlimits = append([]initRlimit{
		{unix.RLIMIT_NOFILE, nofile.Max, nofile.Max},
		{unix.RLIMIT_FSIZE, unix.RLIM_INFINITY, unix.RLIM_INFINITY},
		{unix.RLIMIT_CORE, 0, 0},
		{unix.RLIMIT_CPU, unix.RLIM_INFINITY, unix.RLIM_INFINITY},
	}, userRlimits...)
	return spec, rc
}

// awaitReady waits for the zygote's zReady, the end of its imports, and
// takes its report; an error when it cannot serve.
func (z *zygote) awaitReady() error {
	s := z.w.spec
	_ = z.ctl.SetReadDeadline(time.Now().Add(zygoteStartTimeout))
	defer z.ctl.SetReadDeadline(time.Time{})
	typ, payload, fds, err := readMsgFds(z.ctl)
	closeFds(fds)
	if err == nil && typ != zReady {
		err = fmt.Errorf("the zygote sent %v instead of its readiness", typ)
	}
	if err == nil {
		err = json.Unmarshal(payload, &z.info)
	}
	if err == nil && z.info.Entry != "" {
		err = fmt.Errorf("the zygote could not load its entry %s: %s", s.Entry, z.info.Entry)
	}
	if err == nil && z.info.Error != "" {
		err = errors.New(z.info.Error)
	}
	if l := z.w.r.Log; err == nil && l != nil && z.w.r.ZygoteLoop != nil && z.info.Loop != "c" {
		l.Warn("zygote serves its forks from python, at about twice its CPU a warm run",
			"environment", s.Name, "why", z.info.Loop)
	}
	return err
}

// superviseImports answers the zygote's forbidden calls while it imports,
// until the returned stop. They are ours to know of (a zygote makes
// none): logged, never killed. Then its listener is closed: the kernel
// lets a process install a filter with a listener of its own (each
// run's) only when no filter above it has one open. A forbidden call of
// the zygote's fails with ENOSYS from then on.
func (w *warmRuntime) superviseImports(listener int) (stop func()) {
	supCtx, cancel := context.WithCancel(context.Background())
	supervised := make(chan struct{})
	go func() {
		defer close(supervised)
		_ = seccomp.Supervise(supCtx, listener, seccomp.ModeErrno, nil, func(v seccomp.Violation) {
			if l := w.r.Log; l != nil {
				l.Warn("zygote made a forbidden system call", "environment", w.spec.Name, "syscall", v.Syscall, "number", v.Number)
			}
		})
	}()
	return func() {
		cancel()
		<-supervised
	}
}
