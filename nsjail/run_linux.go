package nsjail

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"agentjail/cgroup"
	"agentjail/seccomp"
)

// Runner starts jails. One Runner serves any number of concurrent runs.
type Runner struct {
	Cgroups *cgroup.Manager
	UIDs    *UIDRange
	// Exe is the binary re-executed as the init stage; its main must
	// dispatch IsInit first, and it must hold the bootstrap
	// (bootstrap_linux.c: any binary that imports this package with cgo
	// does). Its first instructions run as this process's user (root)
	// with all of its capabilities, until the bootstrap enters the jail's
	// user namespace: it must be as trusted as this binary (root's, not
	// writable by others). Default /proc/self/exe.
	Exe string
	// ExeFile, when set, is executed instead of Exe: a sealed copy of the
	// binary (SealedExe) that nothing can rewrite between two jails. It is
	// passed to the child as fd execFd and executed through
	// /proc/self/fd/execFd: the number it has in this process may be
	// reused in the child before execve looks the path up.
	ExeFile *os.File
	// RootDir is a host directory on which each jail mounts its root tmpfs,
	// inside the jail's private mount namespace only (the host's mount
	// table never changes). Every jail uses the same one.
	RootDir string
	// Seccomp is the compiled filter every jail gets
	// (seccomp.Program.MarshalBinary). NewRunner sets the default policy's.
	Seccomp []byte

	poolMu sync.Mutex
	pool   *preparedPool // KeepPrepared; nil: every run starts its jail

	teardowns pending // jails' mount namespaces being released (jail.cleanup)
}

// pending counts work running on its own goroutines that Close waits for.
// Unlike a sync.WaitGroup, work may be added while Wait waits (a run that
// ends while the Runner closes).
type pending struct {
	mu      sync.Mutex
	done    sync.Cond
	n       int
	started int // Go calls so far
}

// Go runs f on a goroutine of its own.
func (p *pending) Go(f func()) {
	p.mu.Lock()
	p.n++
	p.started++
	p.mu.Unlock()
	go func() {
		defer func() {
			p.mu.Lock()
			if p.n--; p.n == 0 {
				p.cond().Broadcast()
			}
			p.mu.Unlock()
		}()
		f()
	}()
}

// Wait returns once no work is running: a steady stream of Go calls would
// keep it waiting (Close calls it once the runs have ended).
func (p *pending) Wait() {
	p.mu.Lock()
	for p.n > 0 {
		p.cond().Wait()
	}
	p.mu.Unlock()
}

func (p *pending) cond() *sync.Cond { // p.mu held
	if p.done.L == nil {
		p.done.L = &p.mu
	}
	return &p.done
}

// DefaultRootDir is where jail roots are mounted (privately) by default.
const DefaultRootDir = "/run/agentjail/root"

// NewRunner opens the cgroup subtree "agentjail" below the caller's own
// cgroup and prepares the root mount point. Only root can run jails.
func NewRunner() (*Runner, error) {
	if os.Geteuid() != 0 {
		return nil, ErrNotRoot
	}
	if !bootstrapBuilt {
		return nil, ErrBuiltWithoutCgo
	}
	cg, err := cgroup.Open("agentjail")
	if err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	r := &Runner{Cgroups: cg, UIDs: &UIDRange{Base: DefaultUIDBase, Size: DefaultUIDSize}, Exe: "/proc/self/exe", RootDir: DefaultRootDir}
	if err := r.UIDs.Validate(os.Getuid()); err != nil {
		return nil, err
	}
	if err := PrepareRootDir(r.RootDir); err != nil {
		return nil, err
	}
	return r, nil
}

// PrepareRootDir creates the mount point for jail roots. The init stage
// runs as an unprivileged host uid, so every directory on the way must be
// searchable by others.
func PrepareRootDir(dir string) error {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return fmt.Errorf("create jail root mount point: %w", err)
	}
	for d := dir; d != "/"; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("jail root mount point: %w", err)
		}
		if st.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("jail root mount point: %s is not searchable by other users (mode %v); jails run as unprivileged uids", d, st.Mode().Perm())
		}
	}
	return nil
}

// runtimeBinds are the host directories every jail sees read-only: Debian's
// python3, its standard library, dist-packages and the shared libraries it
// links all live under /usr.
var runtimeBinds = []string{"/usr"}

// CheckPython tells whether py can be a jail's interpreter with the
// default binds.
func CheckPython(py string) error { return checkPython(py, runtimeBinds) }

// pythonOK caches the interpreters that passed checkPython, keyed by path
// and binds. Failures are not cached: an operator may fix the path while a
// daemon runs.
var pythonOK sync.Map

// checkPython makes sure the interpreter resolves, on the host, to an
// executable file inside the directories the jail binds (so that it
// resolves the same way inside).
func checkPython(py string, binds []string) error {
	key := py + "\x00" + strings.Join(binds, "\x00")
	if _, ok := pythonOK.Load(key); ok {
		return nil
	}
	if !filepath.IsAbs(py) {
		return fmt.Errorf("python %q: must be an absolute path", py)
	}
	real, err := filepath.EvalSymlinks(py)
	if err != nil {
		return fmt.Errorf("python %q: %w", py, err)
	}
	st, err := os.Stat(real)
	if err != nil {
		return fmt.Errorf("python %q: %w", py, err)
	}
	if !st.Mode().IsRegular() || st.Mode().Perm()&0o001 == 0 {
		return fmt.Errorf("python %q: %s is not a file executable by others", py, real)
	}
	for _, b := range binds {
		if within(py, b) && within(real, b) {
			pythonOK.Store(key, true)
			return nil
		}
	}
	return fmt.Errorf("python %q (%s) is outside the directories bound into the jail (%s); add its directory to the read-only mounts", py, real, strings.Join(binds, ", "))
}

func within(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// hostLinks mirrors the host's top-level links into /usr (merged /usr:
// /bin -> usr/bin, ...), so that #! lines and ld.so paths work.
func hostLinks() []initLink {
	var links []initLink
	for _, n := range []string{"bin", "sbin", "lib", "lib32", "lib64", "libx32"} {
		t, err := os.Readlink("/" + n)
		if err == nil && within(filepath.Join("/", t), "/usr") {
			links = append(links, initLink{Path: "/" + n, Target: t})
		}
	}
	return links
}

var hostLinksOnce = sync.OnceValue(hostLinks)

// baseEnv is the whole environment of the program before the request's
// own variables: nothing of the caller's environment ever enters.
var baseEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/workspace", "TMPDIR=/tmp", "LANG=C.UTF-8"}

// binds are the host directories a spec's jail binds read-only.
func binds(s *Spec) []string { return append(append([]string{}, runtimeBinds...), s.ReadOnlyMounts...) }

// codeFiles are everything a spec puts under /code: the program first.
func codeFiles(s *Spec) []File {
	return append([]File{{Path: s.programName(), Content: s.Program}}, s.CodeFiles...)
}

// preparation is a jail's msgPrepare: its plan (preparePlan), and the size
// of the scratch tmpfs that plan mounts, which a request's plan resizes
// when it asks for another.
type preparation struct {
	plan     []byte
	tmpBytes int64
}

func (r *Runner) preparation(binds []string, shared []File, tmpBytes int64) preparation {
	return preparation{plan: preparePlan(r.prepareConfig(binds, shared, tmpBytes)), tmpBytes: tmpBytes}
}

// prepareConfig is the part of a jail that does not depend on a request:
// binds, links, /etc, the shared code, the filter.
func (r *Runner) prepareConfig(binds []string, shared []File, tmpBytes int64) *prepareConfig {
	// The root is read-only once the program is in: its size only has to
	// hold what the run plan writes, and a run plan is at most maxMsg.
	rootSize := int64(1<<20) + maxMsg
	for _, f := range shared {
		rootSize += int64(len(f.Content)) + 4096
	}
	return &prepareConfig{
		RootDir:  r.RootDir,
		RootSize: rootSize,
		Binds:    binds,
		Links:    hostLinksOnce(),
		TmpBytes: tmpBytes,
		Code:     shared,
		Seccomp:  r.seccomp(),
	}
}

// runConfig is the request's part: code holds the files of /code the
// prepared jail does not have yet.
func runConfigFor(s *Spec, code []File) *runConfig {
	env := append([]string{}, baseEnv...)
	for k, v := range s.Env {
		env = append(env, k+"="+v)
	}
	l := s.Limits
	cpuSoft := uint64(math.Ceil(l.CPUTime.Seconds())) + 1 // a per-process backstop: the cgroup watchdog is the real limit
	return &runConfig{
		TmpBytes: l.TmpBytes,
		Code:     code,
		Files:    s.Files,
		Report:   s.Report,
		Collect:  len(s.Collect) > 0,
		Argv:     []string{s.Python, "-I", "-u", "/code/" + s.programName()},
		Env:      env,
		Rlimits: []initRlimit{
			{unix.RLIMIT_NOFILE, uint64(l.OpenFiles), uint64(l.OpenFiles)},
			{unix.RLIMIT_FSIZE, uint64(l.FileSizeBytes), uint64(l.FileSizeBytes)},
			{unix.RLIMIT_CORE, 0, 0},
			{unix.RLIMIT_CPU, cpuSoft, cpuSoft + 1},
		},
	}
}

// seccomp is the filter for every jail: the Runner's, or the default.
func (r *Runner) seccomp() []byte {
	if r.Seccomp != nil {
		return r.Seccomp
	}
	return seccomp.DefaultProgramBytes()
}

// setupTimeout bounds the init stage's set-up (a few milliseconds normally).
const setupTimeout = 10 * time.Second

// ErrCleanup marks a run whose result is valid but whose cgroup could not
// be removed; a later start-up sweep (Manager.Stale) removes it.
var ErrCleanup = errors.New("jail cleanup failed")

// Run runs one program and returns its result. A program that fails or is
// killed is a Result, not an error; an error means the jail could not be
// set up (a *StageError or a *FieldError). When ctx is cancelled the jail is
// killed with KillCancelled, or with the KillReason given as the cause.
func (r *Runner) Run(ctx context.Context, s *Spec) (*Result, error) {
	spec := *s
	if spec.ID == "" {
		spec.ID = NewID()
	}
	if spec.Python == "" {
		spec.Python = DefaultPython
	}
	spec.Limits = spec.Limits.withDefaults()
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	b := binds(&spec)
	if err := checkPython(spec.Python, b); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	code := codeFiles(&spec)
	if pj, rest := r.takePrepared(b, code); pj != nil {
		res, err := pj.run(ctx, &spec, rest)
		// Not delivered means that nothing of the program ran (python3 is
		// exec'd only after msgGo), and finish has removed the jail and
		// its cgroup: a retry has nothing of this one to clean.
		if !errors.Is(err, errNotDelivered) {
			return res, err
		}
		// The prepared jail was gone before it got the request (killed
		// while it waited): nothing of the request ran; start afresh.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return r.runCold(ctx, &spec, b, code)
}

// runCold starts a jail for this spec alone and runs it.
func (r *Runner) runCold(ctx context.Context, spec *Spec, binds []string, code []File) (*Result, error) {
	uid, err := r.UIDs.Acquire()
	if err != nil {
		return nil, err
	}
	defer r.UIDs.Release(uid)
	// The jail dies with this thread (Pdeathsig): it stays locked until
	// the jail has been waited for.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	j := &jail{runner: r, uid: uid}
	if err := j.start(r.preparation(binds, nil, spec.Limits.TmpBytes)); err != nil {
		return nil, errors.Join(err, j.cleanup())
	}
	return j.finish(ctx, spec, runConfigFor(spec, code))
}

// afterExecHook, set by a test only, runs once the program has been
// exec'd: a place to fail a run in. afterGoHook runs when msgGo has been
// sent (v1) or would be next (v2), before msgReady is read.
var (
	afterExecHook func()
	afterGoHook   func(*jail)
)

// finish runs the request in the started jail and cleans up after it. A
// panic on the way still kills, waits for and removes the jail before it
// goes on: the caller's locked thread, and the uid, must outlive the jail.
func (j *jail) finish(ctx context.Context, spec *Spec, cfg *runConfig) (*Result, error) {
	j.spec = spec
	defer func() {
		if v := recover(); v != nil {
			_ = j.cleanup()
			panic(v)
		}
	}()
	res, err := j.run(ctx, cfg)
	if cerr := j.cleanup(); cerr != nil {
		cerr = fmt.Errorf("%w: %v", ErrCleanup, cerr)
		if err == nil && res != nil {
			return res, cerr
		}
		err = errors.Join(err, cerr)
	}
	return res, err
}

// jail is the parent's view of one run.
type jail struct {
	runner *Runner
	spec   *Spec
	uid    uint32

	cg        *cgroup.Group
	join      []int            // v1: cg's tasks files, when cg was made ahead (cgroupAhead)
	proc      *os.Process      // the jail's pid 1 (the init stage, then python3)
	state     *os.ProcessState // proc's end, once waited for
	workspace *os.File         // /workspace of the jail, for Collect; nil unless asked
	sync      *os.File         // parent's end of the socketpair
	closers   []io.Closer

	// mntns is the jail's mount namespace, sent with msgPrepare's
	// msgReady. Received close-on-exec (recvMsg), so no child of this
	// process holds it; nothing of the jail can reach its mounts through
	// it either: only this process has it. The jail's uid goes back to
	// the pool when Run returns, possibly before a light jail's mntns is
	// closed, with its tmpfs files still owned by that uid: safe because
	// no process of the jail is left and nothing may setns into mntns or
	// pass it on.
	mntns *os.File
	// lightTeardown: the jail stored little (lightTeardown): cleanup may
	// release mntns after its return.
	lightTeardown bool
	preparing     bool  // msgPrepare sent, its msgReady not read yet
	tmpBytes      int64 // the size of the scratch tmpfs msgPrepare mounted

	mu     sync.Mutex
	reason KillReason // the first evidence that ended the jail
}

// kill ends the whole jail: SIGKILL to its PID 1 makes the kernel kill
// every process of its pid namespace. The first reason recorded wins.
func (j *jail) kill(reason KillReason) {
	j.mu.Lock()
	first := j.reason == ""
	if first {
		j.reason = reason
	}
	j.mu.Unlock()
	if first && j.proc != nil {
		_ = j.proc.Signal(syscall.SIGKILL)
	}
}

func (j *jail) killReason() KillReason {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.reason
}

func (j *jail) cleanup() error {
	for _, c := range j.closers {
		c.Close()
	}
	j.closers = nil
	closeFds(j.join)
	j.join = nil
	if j.proc != nil && j.state == nil {
		// Set-up failed after the start: the init stage must not outlive us.
		_ = j.proc.Kill()
		_ = j.wait()
	}
	// The file system goes before the cgroup: a heavy jail's tmpfs pages
	// are uncharged from a live group, not left to a dying one.
	if f := j.mntns; f != nil {
		// The last reference: the kernel unmounts the jail's file system
		// now, which waits for an expedited RCU grace period. Off the
		// caller's way to its answer (Runner.Close waits for it), but only
		// for a jail that stored little: what is left in its tmpfs is
		// freed with it, and must not outlive the run by much.
		j.mntns = nil
		if j.lightTeardown {
			j.runner.teardowns.Go(func() { f.Close() })
		} else {
			f.Close()
		}
	}
	var err error
	if j.cg != nil {
		err = j.cg.Delete()
		j.cg = nil
	}
	return err
}

// lightTeardownBytes: a jail that stored at most this much has its mount
// namespace released after the answer (jail.cleanup). An empty program's
// memory peaks at about 3 MiB.
const lightTeardownBytes = 16 << 20

// lightTeardown tells whether a jail whose cgroup's memory peaked at peak
// bytes (-1: unknown) stored at most lightTeardownBytes. The request's
// files and code were written before the init stage joined the group
// and charged to the caller (MaxFilesBytes), so the peak does not count
// them: they are added.
func lightTeardown(peak int64, s *Spec) bool {
	return peak >= 0 && peak+s.writtenBytes() <= lightTeardownBytes
}

// start starts the init stage and has it prepare the jail; prepared
// waits for the end of it, so that the caller may do its own part of the
// set-up meanwhile. The caller's
// OS thread must stay locked until the jail has been waited for: the
// init stage's Pdeathsig is tied to it.
func (j *jail) start(prep preparation) error {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return stageErr("socketpair", err)
	}
	childSync := os.NewFile(uintptr(fds[1]), "sync-child")
	defer childSync.Close()                                // on the early returns; closed at the start below
	if err := unix.SetNonblock(fds[0], true); err != nil { // pollable: deadlines work
		unix.Close(fds[0])
		return stageErr("socketpair", err)
	}
	j.sync = os.NewFile(uintptr(fds[0]), "sync")
	j.closers = append(j.closers, j.sync)
	// The program's stdio arrives with its request (msgConfig); until
	// then the init stage has /dev/null.
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return stageErr("open /dev/null", err)
	}
	defer null.Close()

	// fd 3 (reportFd) holds /dev/null until msgConfig brings the report
	// channel (or nothing, and it closes at the exec), so that no fd the
	// init stage receives can take that number. fd 4 = syncFd. Every fd of
	// this process without close-on-exec reaches the bootstrap, which
	// closes all above 4 first thing: Go opens all of its own files
	// close-on-exec, and so must any code linked into the daemon.
	exe, extra := j.runner.Exe, []*os.File{null, childSync}
	if j.runner.ExeFile != nil {
		exe, extra = fmt.Sprintf("/proc/self/fd/%d", execFd), append(extra, j.runner.ExeFile)
	}
	// A plain vfork and exec: the bootstrap (bootstrap_linux.c) makes the
	// user and pid namespaces itself, so this process's page tables are
	// not copied (Go forks in full for a clone with CLONE_NEWUSER).
	boot, err := os.StartProcess(exe, []string{initArg0}, &os.ProcAttr{
		Env:   []string{}, // no Go runtime starts there: init_linux.c
		Files: append([]*os.File{null, null, null}, extra...),
		// If this thread dies (the daemon crashed), the bootstrap dies;
		// the jail's pid 1 ties its own parent-death signal to this same
		// thread, which the caller holds locked until the jail has been
		// waited for.
		Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	// Closed now, not at return: a bootstrap that dies without a record
	// must give EOF at once, not leave bootstrap waiting for setupTimeout.
	childSync.Close()
	if err != nil {
		return stageErr("start init stage", err)
	}
	_ = j.sync.SetDeadline(time.Now().Add(setupTimeout))
	if j.proc, err = bootstrap(j.sync, boot, j.uid); err != nil {
		return err
	}
	j.tmpBytes = prep.tmpBytes
	if err := writeMsg(j.sync, msgPrepare, prep.plan); err != nil {
		return j.initFailure("send prepare", err)
	}
	j.preparing = true
	return nil
}

// prepared waits for the end of the init stage's preparation, if start's
// msgPrepare is still unanswered.
func (j *jail) prepared() error {
	if !j.preparing {
		return nil
	}
	j.preparing = false
	fds, err := j.expectFds(msgReady, 1)
	if err != nil {
		return err
	}
	// Taken for the jail's mount namespace unchecked: only the init stage
	// can send it, before any of the request's code has run.
	j.mntns = os.NewFile(uintptr(fds[0]), "mntns")
	return nil
}

// cgroupAhead makes a prepared jail's cgroup before its request, with
// the limits of l, and opens its tasks files (JoinFiles), so that the
// request's run has no cgroup to make on its way to the exec: on cgroup
// v1 only, where the group can take the request's ID as its name then
// (v2 cannot rename, and moves the process from here anyway). The group is
// empty until the exec'ing thread joins it: nothing is counted before.
func (j *jail) cgroupAhead(l Limits) error {
	m := j.runner.Cgroups
	if m.Version() != cgroup.V1 {
		return nil
	}
	res := cgroupResources(l)
	g, err := m.Create("prepared-"+NewID(), res)
	if err != nil {
		return stageErr("create cgroup", err)
	}
	j.cg = g
	if j.join, err = g.JoinFiles(); err != nil {
		return stageErr("join cgroup", err)
	}
	return nil
}

// cgroupResources are the cgroup's part of l.
func cgroupResources(l Limits) cgroup.Resources {
	return cgroup.Resources{MemoryBytes: l.MemoryBytes, Pids: l.Pids, CPUs: l.CPUs}
}

// errNotDelivered marks a prepared jail that was gone before its request
// reached it.
var errNotDelivered = errors.New("the prepared jail ended before it got the request")

// run gives the started jail its request (j.spec, cfg) and runs it to the
// end.
func (j *jail) run(ctx context.Context, cfg *runConfig) (*Result, error) {
	l := j.spec.Limits
	// The cgroup is created while the init stage works: during its
	// preparation for a cold jail, during its run plan for a prepared one
	// whose group was not made ahead (cgroupAhead) with these limits. A
	// group made ahead takes the request's ID as its name.
	createCgroup := func() error {
		res := cgroupResources(l)
		if j.cg != nil {
			if j.cg.Resources() == res && j.cg.Rename(j.spec.ID) == nil {
				return nil
			}
			closeFds(j.join)
			j.join = nil
			err := j.cg.Delete()
			j.cg = nil
			if err != nil {
				return stageErr("delete the cgroup made ahead", err)
			}
		}
		g, err := j.runner.Cgroups.Create(j.spec.ID, res)
		if err != nil {
			return stageErr("create cgroup", err)
		}
		j.cg = g
		return nil
	}
	cold := j.preparing
	if cold {
		if err := createCgroup(); err != nil {
			return nil, err
		}
	}

	stdin, err := stdinFile(j.spec.Stdin)
	if err != nil {
		return nil, stageErr("stdin", err)
	}
	j.closers = append(j.closers, stdin)
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, stageErr("stdout pipe", err)
	}
	j.closers = append(j.closers, outR, outW)
	errR, errW, err := os.Pipe()
	if err != nil {
		return nil, stageErr("stderr pipe", err)
	}
	j.closers = append(j.closers, errR, errW)
	// The jail's user owns its ends of the pipes, so that a program may
	// reopen them (open("/dev/stdout", "w") goes through /proc/self/fd/1
	// and checks the pipe's owner and mode 0600, as runc's setupIO knows).
	for _, w := range []*os.File{outW, errW} {
		if err := unix.Fchown(int(w.Fd()), int(j.uid), int(j.uid)); err != nil {
			return nil, stageErr("chown stdio pipe", err)
		}
	}
	stdio := []int{int(stdin.Fd()), int(outW.Fd()), int(errW.Fd())}
	// A cold jail has prepared itself while the above was done here.
	if err := j.prepared(); err != nil {
		return nil, err
	}
	var reportR, reportW *os.File // no report: fd 3 is closed in the jail
	if j.spec.Report {
		if reportR, reportW, err = os.Pipe(); err != nil {
			return nil, stageErr("report pipe", err)
		}
		j.closers = append(j.closers, reportR, reportW)
		stdio = append(stdio, int(reportW.Fd()))
	}
	_ = j.sync.SetDeadline(time.Now().Add(setupTimeout))
	if err := sendMsgFds(j.sync, msgConfig, runPlan(cfg, j.tmpBytes), stdio); err != nil {
		if errors.Is(err, errTooLarge) { // the same in any jail: no retry
			return nil, j.initFailure("send config", err)
		}
		return nil, fmt.Errorf("%w: %w", errNotDelivered, j.initFailure("send config", err))
	}
	// The init stage holds its own copies now.
	for _, f := range []*os.File{stdin, outW, errW, reportW} {
		if f != nil {
			f.Close()
		}
	}
	if !cold {
		if err := createCgroup(); err != nil {
			return nil, err
		}
	}
	// On cgroup v1 the thread that will exec python3 moves itself into
	// the jail's cgroup, through the files sent with msgGo (JoinFiles: a
	// move by pid from here waits an RCU grace period after a quiet
	// spell), and msgGo goes at once: the init stage reads it when its
	// run plan is done, and nothing waits for a round trip. On v2 this
	// process moves the init stage once its run plan is done, then sends
	// msgGo.
	join := j.join
	j.join = nil
	if join == nil {
		if join, err = j.cg.JoinFiles(); err != nil {
			return nil, stageErr("join cgroup", err)
		}
	}
	if len(join) > maxMsgFds { // a message with more is refused whole
		closeFds(join)
		return nil, &StageError{Stage: "join cgroup", Msg: fmt.Sprintf("%d tasks files, more than one message carries (%d)", len(join), maxMsgFds)}
	}
	var goErr error
	if join != nil {
		goErr = sendMsgFds(j.sync, msgGo, nil, join)
		closeFds(join)
	}
	if afterGoHook != nil {
		afterGoHook(j)
	}
	if err := j.expect(msgReady); err != nil {
		// A prepared jail killed while it waited can take the request
		// (the send succeeds) and end before it answers. Only an end
		// without msgReady says so: the init stage writes msgReady before
		// it reads msgGo (queued already on v1), so a deadline that
		// passed with msgReady unread may have let the program run.
		var ended *initEndedError
		if !cold && errors.As(err, &ended) && !ended.timedOut {
			err = fmt.Errorf("%w: %w", errNotDelivered, err)
		}
		return nil, err
	}
	if join == nil {
		if err := j.cg.Attach(j.proc.Pid); err != nil {
			return nil, stageErr("attach to cgroup", err)
		}
		goErr = writeMsg(j.sync, msgGo, nil)
	}
	if goErr != nil {
		return nil, j.initFailure("send go", goErr)
	}
	listener, err := j.awaitExec()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	violations := &seccomp.Collector{}
	supervised := make(chan struct{})
	supCtx, stopSupervising := context.WithCancel(context.Background())
	defer stopSupervising()
	mode := j.spec.OnForbiddenSyscall
	go func() {
		defer close(supervised)
		_ = seccomp.Supervise(supCtx, listener, mode, violations, func(seccomp.Violation) {
			if mode == seccomp.ModeKill {
				j.kill(KillSeccomp)
			}
		})
	}()
	// After the supervisor took the listener: it closes it on a panic.
	if afterExecHook != nil {
		afterExecHook()
	}

	// From here on every path waits for the jail to end.
	out := &capture{limit: l.OutputBytes, onLimit: func() { j.kill(KillOutputLimit) }}
	out.start(0, outR)
	out.start(1, errR)
	// The report channel is drained like stdout, capped on its own and
	// never a reason to kill: a harness past the cap just gets cut.
	var report *capture
	if reportR != nil {
		report = &capture{limit: MaxReportBytes, onLimit: func() {}}
		report.start(0, reportR)
	}
	done := make(chan struct{})
	// The watchers read the jail's cgroup: none may outlive this call,
	// whose caller deletes the cgroup.
	var watchers sync.WaitGroup
	wall := time.AfterFunc(l.WallTime, func() { j.kill(KillWallTimeout) })
	watchers.Go(func() { j.watchCPU(l.CPUTime, l.CPUs, done) })
	go func() {
		select {
		case <-ctx.Done():
			reason := KillCancelled
			if errors.Is(context.Cause(ctx), KillShutdown) {
				reason = KillShutdown
			}
			j.kill(reason)
		case <-done:
		}
	}()
	if j.runner.Cgroups.Version() == cgroup.V1 {
		// cgroup v1 has no memory.oom.group: when the OOM killer picks
		// any process of the jail, end the whole jail.
		if oom, err := j.cg.OOMEvents(); err == nil {
			watchers.Go(func() { j.watchOOM(oom, done) })
		}
	}

	werr := j.wait()
	end := time.Now()
	wall.Stop()
	close(done)
	watchers.Wait()
	if werr != nil {
		return nil, stageErr("wait", werr)
	}
	stats, err := j.cg.Stats()
	if err != nil {
		return nil, stageErr("read cgroup", err)
	}
	j.lightTeardown = lightTeardown(stats.PeakMemoryBytes, j.spec)
	out.wait(time.Second, outR, errR)
	if report != nil {
		report.wait(time.Second, reportR)
	}
	// The supervisor ends by itself once the filter's last process is
	// reaped; the grace only bounds a kernel that never says so.
	select {
	case <-supervised:
	case <-time.After(time.Second):
		stopSupervising()
		<-supervised
	}

	res := &Result{
		ID:               j.spec.ID,
		Stdout:           out.buf[0],
		Stderr:           out.buf[1],
		StdoutTruncated:  out.truncated[0],
		StderrTruncated:  out.truncated[1],
		WallTime:         end.Sub(start),
		CPUTime:          stats.CPUTime,
		PeakMemoryBytes:  stats.PeakMemoryBytes,
		PeakMemorySource: stats.PeakMemorySource,
		MemoryLimitBytes: l.MemoryBytes,
		OOMKills:         stats.OOMKills,
		PidsPeak:         stats.PidsPeak,
		PidsMaxHits:      stats.PidsMaxHits,
		CgroupVersion:    string(j.runner.Cgroups.Version()),
		HostUID:          j.uid,
		Seccomp:          violations.Report(),
	}
	if report != nil {
		res.Report, res.ReportTruncated = report.buf[0], report.truncated[0]
	}
	if j.workspace != nil {
		// Every process of the jail is gone: nothing writes any more, and
		// Collect follows no link the program may have left.
		res.Files = Collect(j.workspace, j.spec.Collect, j.spec.CollectLimits)
	}
	ws := j.state.Sys().(syscall.WaitStatus)
	res.decide(ws, j.killReason())
	return res, nil
}

// decide sets status, exit code, signal and kill reason from the wait
// status and the evidence gathered during the run. A reason recorded by
// this process (timer, watchdog, output cap, cancel, OOM notification) is
// trusted only if the jail did die of SIGKILL: a program that exited on its
// own just before the kill landed ended by itself. The first recorded
// reason wins a race between two causes.
func (res *Result) decide(ws syscall.WaitStatus, recorded KillReason) {
	switch {
	case ws.Exited():
		res.ExitCode = ws.ExitStatus()
		res.Status = StatusOK
		if res.ExitCode != 0 {
			res.Status = StatusError
		}
		return
	case !ws.Signaled():
		res.Status, res.ExitCode = StatusError, -1
		return
	}
	res.Signal = ws.Signal()
	res.ExitCode = 128 + int(res.Signal)
	res.Status = StatusSignaled
	switch {
	case res.Signal == syscall.SIGKILL && recorded != KillNone:
		res.KillReason = recorded
	case res.Signal == syscall.SIGKILL && res.OOMKills > 0:
		// The kernel's OOM killer (cgroup v2 memory.oom.group) ended the
		// jail before we saw an event.
		res.KillReason = KillMemoryLimit
	case res.Signal == syscall.SIGSYS:
		// Only the seccomp filter's KILL_PROCESS (a foreign-ABI call) can
		// end PID 1 of a pid namespace with SIGSYS: the signal is forced,
		// while a SIGSYS sent by a process of the jail is dropped for PID 1.
		res.KillReason = KillSeccomp
	case res.Signal == syscall.SIGXFSZ:
		res.KillReason = KillFileSizeLimit
	case res.Signal == syscall.SIGXCPU:
		// RLIMIT_CPU, the per-process backstop of the cgroup watchdog.
		res.KillReason = KillCPUTimeout
	}
	if res.KillReason != KillNone {
		res.Status = StatusKilled
	}
}

// watchOOM ends the whole jail once the kernel's OOM killer has killed a
// process of it (cgroup v1). The event fires when the group enters OOM,
// before the killer acts; killing at once would beat the kernel, which then
// skips its kill, and "memory_limit" would rest on no OOM kill at all. So it
// waits for the kernel's counter to rise. If it does not (the group left OOM
// without a kill), nothing is killed: only the kernel's kill is evidence.
func (j *jail) watchOOM(oom <-chan struct{}, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case _, ok := <-oom:
			if !ok {
				return
			}
		}
		for deadline := time.Now().Add(200 * time.Millisecond); time.Now().Before(deadline); {
			if n, err := j.cg.OOMKills(); err != nil {
				return
			} else if n > 0 {
				j.kill(KillMemoryLimit)
				return
			}
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}
}

// watchCPU kills the jail when the CPU time of all its processes passes
// limit. It sleeps until the earliest moment the limit could be reached at
// the jail's CPU quota, so a short run costs no reads at all.
func (j *jail) watchCPU(limit time.Duration, cpus float64, done <-chan struct{}) {
	t := time.NewTimer(time.Duration(float64(limit) / cpus))
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		used, err := j.cg.CPUTime()
		if err != nil {
			return
		}
		if used >= limit {
			j.kill(KillCPUTimeout)
			return
		}
		wait := time.Duration(float64(limit-used) / cpus)
		t.Reset(max(wait, time.Millisecond))
	}
}

// expect reads the next message from the init stage, which must be want.
// A msgError becomes the stage error it carries; an init stage that ended
// without an answer is an *initEndedError.
func (j *jail) expect(want byte) error {
	_, err := j.expectFds(want, 0)
	return err
}

// expectFds is expect for a message that carries n fds, which it returns.
func (j *jail) expectFds(want byte, n int) ([]int, error) {
	typ, payload, fds, err := readMsgFds(j.sync)
	if err != nil {
		closeFds(fds)
		return nil, &initEndedError{err: j.initFailure("wait for init stage", err), timedOut: errors.Is(err, os.ErrDeadlineExceeded)}
	}
	if typ == msgError {
		closeFds(fds)
		return nil, decodeStageError(payload)
	}
	if typ != want || len(fds) != n {
		closeFds(fds)
		return nil, &StageError{Stage: "init", Msg: fmt.Sprintf("unexpected message %d with %d fds", typ, len(fds))}
	}
	return fds, nil
}

// initEndedError is an init stage that ended (or broke the socket)
// instead of answering, or that did not answer in time (timedOut: it may
// have been about to); it reads as the error it wraps.
type initEndedError struct {
	err      error
	timedOut bool
}

func (e *initEndedError) Error() string { return e.err.Error() }
func (e *initEndedError) Unwrap() error { return e.err }

// decodeStageError is the StageError a msgError carries.
func decodeStageError(payload []byte) *StageError {
	var se StageError
	if json.Unmarshal(payload, &se) != nil {
		return &StageError{Stage: "init", Msg: string(payload)}
	}
	return &se
}

// awaitExec waits for the exec of python3: EOF on the sync socket. Before
// it the init stage sends the seccomp filter's listener (SCM_RIGHTS on
// msgSeccomp), which it returns, and the /workspace fd for Collect.
//
// Security: both fds are trusted because only agentjail's own code can
// send them. The sync socket is close-on-exec, so no jail process ever
// holds it; after EOF nothing more is read from it.
func (j *jail) awaitExec() (listener int, err error) {
	listener = -1
	defer func() {
		if err != nil && listener >= 0 {
			unix.Close(listener)
			listener = -1
		}
	}()
	for {
		typ, payload, fds, err := readMsgFds(j.sync)
		if len(fds) > 0 {
			want := 1
			if len(j.spec.Collect) > 0 {
				want = 2
			}
			if typ != msgSeccomp || listener >= 0 || len(fds) != want {
				closeFds(fds)
				return -1, &StageError{Stage: "init", Msg: fmt.Sprintf("unexpected %d fds with message %d", len(fds), typ)}
			}
			listener = fds[0]
			if want == 2 {
				j.workspace = os.NewFile(uintptr(fds[1]), "workspace")
				j.closers = append(j.closers, j.workspace)
			}
			continue
		}
		switch {
		case errors.Is(err, io.EOF):
			if listener < 0 {
				return listener, &StageError{Stage: "seccomp", Msg: "the init stage exec'd without sending the filter's listener"}
			}
			return listener, nil
		case err != nil:
			return listener, j.initFailure("wait for exec", err)
		case typ == msgError:
			return listener, decodeStageError(payload)
		default:
			return listener, &StageError{Stage: "init", Msg: fmt.Sprintf("unexpected message %d", typ)}
		}
	}
}

func closeFds(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// initFailure explains a broken conversation with the init stage, with
// its exit status when it died.
func (j *jail) initFailure(stage string, err error) error {
	_ = j.proc.Kill()
	if werr := j.wait(); werr != nil {
		return &StageError{Stage: stage, Msg: fmt.Sprintf("%v (init stage: %v)", err, werr)}
	}
	if !j.state.Success() {
		return &StageError{Stage: stage, Msg: fmt.Sprintf("%v (init stage: %v)", err, j.state)}
	}
	return stageErr(stage, err)
}

// wait waits for the jail's pid 1 once, recording its end.
func (j *jail) wait() error {
	if j.state != nil {
		return nil
	}
	awaitExit(j.proc.Pid)
	st, err := j.proc.Wait()
	if err != nil {
		return err
	}
	j.state = st
	return nil
}

// awaitExit parks the calling goroutine in the runtime's poller until
// process pid (a child not yet waited for, so the pid names it) has ended,
// so that the Wait after it returns at once. A Wait alone blocks its
// thread in waitid for the whole run: the runtime's sysmon then takes the
// thread's P away and goes back to waking every 20 µs: dozens of sleeps
// and thread hand-offs, about 0.4 ms of the daemon's CPU per run on the
// test host (BENCHMARKS.md, 2026-11-24). A pidfd becomes readable when its
// process ends. Any failure here only leaves the work to Wait.
func awaitExit(pid int) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	// Each call asks the kernel (poll, no wait): the poller forgets a
	// readiness that came between the registration and the read (it
	// resets its state first), so assuming "not yet" once can wait for ever.
	_ = rc.Read(func(fd uintptr) bool {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(p, 0)
		return err != nil || n > 0
	})
}

// stdinFile is the program's stdin: /dev/null, or a sealed memfd holding
// the request's bytes (no writer goroutine, and a program that never reads
// its stdin blocks nothing).
func stdinFile(data []byte) (*os.File, error) {
	if data == nil {
		return os.Open(os.DevNull)
	}
	fd, err := unix.MemfdCreate("stdin", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, os.NewSyscallError("memfd_create", err)
	}
	f := os.NewFile(uintptr(fd), "stdin")
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE|unix.F_SEAL_SEAL); err != nil {
		f.Close()
		return nil, os.NewSyscallError("seal stdin", err)
	}
	return f, nil
}
