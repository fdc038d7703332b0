package nsjail

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	// (seccomp.Program.MarshalBinary); nil: the default policy's.
	Seccomp []byte
	// Log, when set, hears about each jail's handshake at debug level:
	// every message, both ways (what a failing set-up did last).
	Log *slog.Logger
	// ShareEtc: each environment's whole /etc (agentjail's own files and
	// the Etc's entries) is written once, into a tmpfs of its own that is
	// mounted nowhere (etcTree), and each jail attaches a read-only copy
	// of that mount: one mount where it would write some hundred files and
	// links, and one dentry to release at its end instead of as many.
	// Off (local mode, one jail a process): each jail writes its own.
	ShareEtc bool
	// ScratchNoexec mounts every jail's scratch tmpfs (/workspace, /tmp,
	// /dev/shm) noexec (the daemon's jail.scratch_noexec): a program
	// then cannot execute a file it wrote. Off by default: it can, and
	// the mount stays nosuid and nodev (docs/security.md).
	ScratchNoexec bool

	etcMu    sync.Mutex
	etcTrees map[*Etc]*os.File

	poolMu sync.Mutex
	pools  map[string]*preparedPool // KeepPrepared, by template name; none: every run starts its own jail
	warm   map[string]*warmRuntime  // KeepWarm, by environment name

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
	if !hasCapability(unix.CAP_KILL) {
		return nil, ErrNoKillCap
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

// CheckPythonIn tells whether py can be the interpreter of a jail that
// also binds these read-only mounts (Spec.ReadOnlyMounts).
func CheckPythonIn(py string, mounts []string) error {
	return checkPython(py, binds(&Spec{ReadOnlyMounts: mounts}))
}

// pythonOK caches the interpreters that passed checkPython, keyed by path
// and binds. Failures are not cached: an operator may fix the path while a
// daemon runs.
var pythonOK sync.Map

// checkPython makes sure the interpreter resolves, on the host, to an
// executable file inside the directories the jail binds, through links
// that each lie inside them too (so that it resolves the same way inside:
// a virtualenv's bin/python is a link to /usr/bin/python3.11).
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
	inside := func(p string) bool {
		return slices.ContainsFunc(binds, func(b string) bool { return within(p, b) })
	}
	// Each link of the chain py -> ... -> real (as far as 40 links).
	hop := py
	for range 40 {
		if !inside(hop) {
			break
		}
		target, err := os.Readlink(hop)
		if err != nil { // not a link: the chain ends here
			if inside(real) {
				pythonOK.Store(key, true)
				return nil
			}
			hop = real
			break
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(hop), target)
		}
		hop = filepath.Clean(target)
	}
	return fmt.Errorf("python %q resolves through %s, outside the directories bound into the jail (%s); add its directory to the read-only mounts", py, hop, strings.Join(binds, ", "))
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

// baseEnv is the whole environment of the program before the
// environment's and the request's own variables: nothing of the caller's
// environment ever enters. The libraries' part (libraryEnv) follows it.
var baseEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/workspace", "TMPDIR=/tmp", "LANG=C.UTF-8"}

// libraryEnv are defaults that keep common libraries within a jail: a
// display-less matplotlib whose configuration and cache are on the
// scratch tmpfs (never a failing write to a read-only home), and BLAS and
// OpenMP thread pools as large as the jail's CPU bandwidth, not the
// host's CPU count (a library's own start-up must not meet the pids
// limit on a many-core host). The environment and the request may set
// each of them otherwise.
func libraryEnv(cpus float64) []string {
	threads := strconv.Itoa(max(1, int(math.Ceil(cpus))))
	return []string{"MPLBACKEND=Agg", "MPLCONFIGDIR=/tmp/matplotlib",
		"OPENBLAS_NUM_THREADS=" + threads, "OMP_NUM_THREADS=" + threads, "MKL_NUM_THREADS=" + threads}
}

// programEnv is the program's environment: baseEnv, libraryEnv, then the
// environment's variables, then the request's, a later one replacing an
// earlier one of the same name (Spec.Validate keeps the request from
// replacing baseEnv's).
func programEnv(s *Spec) []string {
	env := append(append([]string{}, baseEnv...), libraryEnv(s.Limits.CPUs)...)
	at := make(map[string]int, len(env))
	for i, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		at[k] = i
	}
	for _, m := range []map[string]string{s.DefaultEnv, s.Env} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if i, ok := at[k]; ok {
				env[i] = k + "=" + m[k]
				continue
			}
			at[k] = len(env)
			env = append(env, k+"="+m[k])
		}
	}
	return env
}

// binds are the host directories a spec's jail binds read-only.
func binds(s *Spec) []string { return append(append([]string{}, runtimeBinds...), s.ReadOnlyMounts...) }

// codeFiles are everything a spec puts under /code: the program first.
func codeFiles(s *Spec) []File {
	return append([]File{{Path: s.programName(), Content: s.Program}}, s.CodeFiles...)
}

// built is a jail's msgBuild: its plan (buildPlan), and the size of the
// scratch tmpfs that plan mounts, which a request's plan resizes when it
// asks for another.
type built struct {
	plan     []byte
	tmpBytes int64
	noexec   bool     // the scratch tmpfs is noexec (buildConfig.ScratchNoexec)
	etc      *os.File // the /etc tree a clone of which goes with the plan (opAttach); nil: none
}

// jailBase is what every jail of one runtime shares, known before any
// request: the host directories it binds, its /etc, and the files under
// /code that every run has (the daemon's harness).
type jailBase struct {
	binds  []string
	etc    *Etc
	shared []File
	filter []byte // the seccomp filter; nil: the Runner's
}

// seccomp is the base's filter, or the Runner's.
func (b jailBase) seccomp(r *Runner) []byte {
	if b.filter != nil {
		return b.filter
	}
	return r.seccomp()
}

func (r *Runner) build(b jailBase, tmpBytes int64) built {
	cfg := r.buildConfig(b, tmpBytes)
	var etc *os.File
	if r.ShareEtc {
		if etc = r.etcTree(b.etc); etc != nil {
			cfg.EtcTree = true
		}
	}
	return built{plan: buildPlan(cfg), tmpBytes: tmpBytes, noexec: cfg.ScratchNoexec, etc: etc}
}

// etcTree is the detached mount (fsmount: in no mount table) that holds
// a jail's whole /etc with e's entries, made on its first use; nil when it
// cannot be made (the jails then write their own; logged).
func (r *Runner) etcTree(e *Etc) *os.File {
	r.etcMu.Lock()
	defer r.etcMu.Unlock()
	if t, ok := r.etcTrees[e]; ok {
		return t
	}
	t, err := makeEtcTree(e)
	if err != nil && r.Log != nil {
		r.Log.Warn("jails write their own /etc: it could not be made once for them", "err", err)
	}
	if r.etcTrees == nil {
		r.etcTrees = map[*Etc]*os.File{}
	}
	r.etcTrees[e] = t
	return t
}

// makeEtcTree is newEtcTree; a test makes it fail to see the jails
// write their own /etc.
var makeEtcTree = newEtcTree

// newEtcTree makes a tmpfs, mounted nowhere, and writes a jail's /etc
// into it: agentjail's own files and e's entries, root's, read-only to
// everyone else. Jails attach clones of it (etcClone): the kernel keeps
// it as long as a jail or this process holds one.
func newEtcTree(e *Etc) (*os.File, error) {
	fs, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("fsopen tmpfs", err)
	}
	defer unix.Close(fs)
	if err := unix.FsconfigSetString(fs, "mode", "0755"); err != nil {
		return nil, os.NewSyscallError("fsconfig mode", err)
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return nil, os.NewSyscallError("fsconfig create", err)
	}
	mfd, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("fsmount", err)
	}
	t := os.NewFile(uintptr(mfd), "etc-tree")
	if err := writeEtcTree(mfd, e); err != nil {
		t.Close()
		return nil, err
	}
	// Read-only the file system itself, not only this mount: a jail's
	// copy attached in its own namespace does not have its mount flags
	// locked (only a copied namespace's are), so whoever held
	// CAP_SYS_ADMIN there could remount it read-write; the superblock's
	// flag only CAP_SYS_ADMIN of the host's user namespace can change.
	// With it, no read updates a shared atime either.
	if err := readOnlySuperblock(mfd); err != nil {
		t.Close()
		return nil, err
	}
	if err := unix.MountSetattr(mfd, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		t.Close()
		return nil, os.NewSyscallError("mount_setattr", err)
	}
	// A copy of a mount that is in no mount table is refused (EINVAL) by
	// kernels older than about 6.15 (Debian 12's 6.1 among them): each
	// jail then writes its own /etc, as it did before the tree.
	fd, err := etcClone(t)
	if err != nil {
		t.Close()
		return nil, fmt.Errorf("this kernel cannot copy a mount that is in no mount table: %w", err)
	}
	unix.Close(fd)
	return t, nil
}

// readOnlySuperblock makes the file system of the mount fd mfd
// read-only (fspick and a reconfiguration with "ro").
func readOnlySuperblock(mfd int) error {
	fd, err := unix.Fspick(mfd, "", unix.FSPICK_EMPTY_PATH|unix.FSPICK_CLOEXEC)
	if err != nil {
		return os.NewSyscallError("fspick /etc", err)
	}
	defer unix.Close(fd)
	if err := unix.FsconfigSetFlag(fd, "ro"); err != nil {
		return os.NewSyscallError("fsconfig ro", err)
	}
	if err := unix.FsconfigReconfigure(fd); err != nil {
		return os.NewSyscallError("fsconfig reconfigure", err)
	}
	return nil
}

// writeEtcTree writes agentjail's own /etc files and e's entries below the
// directory fd root, each directory before what it holds, each beneath
// root (no "..", no link followed on the way).
func writeEtcTree(root int, e *Etc) error {
	entries := make([]EtcEntry, 0, len(etcFiles))
	for _, f := range etcFiles {
		entries = append(entries, EtcEntry{Path: f.Path, Content: f.Content})
	}
	if e != nil {
		entries = append(entries, e.Entries...)
	}
	for _, en := range entries {
		if err := writeEtcEntry(root, en); err != nil {
			return os.NewSyscallError("write /etc/"+en.Path, err)
		}
	}
	return nil
}

func writeEtcEntry(root int, en EtcEntry) error {
	dir, name := filepath.Split(en.Path)
	parent := root
	if dir != "" {
		fd, err := unix.Openat2(root, dir, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		parent = fd
	}
	// The modes are set, not left to this process's umask (the daemon
	// narrows its own while it binds its socket): a jail reads /etc as
	// "others".
	switch {
	case en.Dir:
		if err := unix.Mkdirat(parent, name, 0o755); err != nil {
			return err
		}
		return unix.Fchmodat(parent, name, 0o755, 0)
	case en.Link != "":
		return unix.Symlinkat(en.Link, parent, name)
	default:
		return writeNew(parent, name, en.Content)
	}
}

func writeNew(dir int, name string, b []byte) error {
	fd, err := unix.Openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o444)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Fchmod(fd, 0o444); err != nil {
		return err
	}
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// etcClone is a read-only copy of the /etc tree t for one jail, which its
// init attaches at its /etc (opAttach); the jail owns it once sent.
func etcClone(t *os.File) (int, error) {
	fd, err := unix.OpenTree(int(t.Fd()), "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err != nil {
		return -1, os.NewSyscallError("open_tree /etc", err)
	}
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, attr); err != nil {
		unix.Close(fd)
		return -1, os.NewSyscallError("mount_setattr /etc", err)
	}
	return fd, nil
}

// closeEtcTrees lets the kernel free the /etc trees once no jail holds
// a copy.
func (r *Runner) closeEtcTrees() {
	r.etcMu.Lock()
	defer r.etcMu.Unlock()
	for e, t := range r.etcTrees {
		if t != nil {
			t.Close()
		}
		delete(r.etcTrees, e)
	}
}

// buildConfig is the part of a jail that does not depend on a request:
// binds, links, /etc, the shared code, the filter.
func (r *Runner) buildConfig(b jailBase, tmpBytes int64) *buildConfig {
	// The root is read-only once the program is in: its size only has to
	// hold what the request's plan writes, at most maxMsg.
	rootSize := int64(1<<20) + maxMsg + b.etc.bytes()
	for _, f := range b.shared {
		rootSize += int64(len(f.Content)) + 4096
	}
	return &buildConfig{
		RootDir:  r.RootDir,
		RootSize: rootSize,
		Binds:    b.binds,
		Links:    hostLinksOnce(),
		Etc:      b.etc,
		TmpBytes: tmpBytes,
		Code:     b.shared,
		Seccomp:  b.seccomp(r),

		ScratchNoexec: r.ScratchNoexec,
	}
}

// requestConfigFor is the request's part: code holds the files of /code
// the jail does not have yet.
func requestConfigFor(s *Spec, code []File) *requestConfig {
	l := s.Limits
	cpuSoft := uint64(math.Ceil(l.CPUTime.Seconds())) + 1 // a per-process backstop: the cgroup watchdog is the real limit
	return &requestConfig{
		TmpBytes: l.TmpBytes,
		Code:     code,
		Files:    s.Files,
		Report:   s.Report,
		Collect:  len(s.Collect) > 0,
		Argv:     append([]string{s.Python, "-I", "-u", "/code/" + s.programName()}, s.Args...),
		Env:      programEnv(s),
		Rlimits: append([]initRlimit{
			{unix.RLIMIT_NOFILE, uint64(l.OpenFiles), uint64(l.OpenFiles)},
			{unix.RLIMIT_FSIZE, uint64(l.FileSizeBytes), uint64(l.FileSizeBytes)},
			{unix.RLIMIT_CORE, 0, 0},
			{unix.RLIMIT_CPU, cpuSoft, cpuSoft + 1},
		}, userRlimits...),
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
	spec, b, err := checkedSpec(s, NewID)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	code := codeFiles(&spec)
	if spec.Start == StartWarm {
		if res, err, ok := r.runWarm(ctx, &spec, b, code); ok {
			return res, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	if pj, rest := r.takePrepared(b, spec.Etc, code); pj != nil {
		res, err := pj.run(ctx, &spec, rest)
		// Not delivered means that nothing of the program ran (it is
		// started only after msgGo), and finish has removed the jail and
		// its cgroup: a retry has nothing of this one to clean.
		if !errors.Is(err, errNotDelivered) {
			return markCold(res), err
		}
		// The prepared jail was gone before it got the request (killed
		// while it waited): nothing of the request ran; start afresh.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	res, err := r.runCold(ctx, &spec, b, code)
	return markCold(res), err
}

// checkedSpec is a copy of s with its defaults filled in (an ID from
// newID), validated, its interpreter checked on the host; b are the
// directories its jail binds.
func checkedSpec(s *Spec, newID func() string) (spec Spec, b []string, err error) {
	spec = *s
	if spec.ID == "" {
		spec.ID = newID()
	}
	if spec.Python == "" {
		spec.Python = DefaultPython
	}
	spec.Limits = spec.Limits.withDefaults()
	if err := spec.Validate(); err != nil {
		return spec, nil, err
	}
	b = binds(&spec)
	return spec, b, checkPython(spec.Python, b)
}

func markCold(res *Result) *Result {
	if res != nil {
		res.Start = StartCold
	}
	return res
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
	j := newJail(r, uid)
	if err := j.start(r.build(jailBase{binds: binds, etc: spec.Etc}, spec.Limits.TmpBytes)); err != nil {
		return nil, errors.Join(err, j.cleanup())
	}
	return j.finish(ctx, spec, requestConfigFor(spec, code))
}

// hasCapability tells whether this process has capability c in its
// effective set.
func hasCapability(c int) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if unix.Capget(&hdr, &data[0]) != nil {
		return false
	}
	return data[c/32].Effective&(1<<(uint(c)%32)) != 0
}
