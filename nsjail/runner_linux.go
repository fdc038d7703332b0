package nsjail

import (
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
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
	// ExeFile, when set, is executed instead of Exe: a sealed memfd that
	// nothing can rewrite between two jails. NewRunner sets it to the
	// standalone init (SealedStandaloneInit: the same C as this binary's
	// bootstrap, built as a small static program) when this binary holds
	// a current one; the daemon sets a sealed copy of this binary
	// (SealedExe) when it holds none. It is passed to the child as fd
	// execFd and executed through /proc/self/fd/execFd: the number it has
	// in this process may be reused in the child before execve looks the
	// path up.
	ExeFile *os.File
	// ZygoteLoop, when set, is the zygotes' fork loop (ZygoteLoop's): each
	// zygote loads it and serves its forks from it, with no python run
	// between two forks (the zygote's CPU a warm run halves: BENCHMARKS.md).
	// NewRunner sets it when this binary holds a current one; without it
	// a zygote serves from its python loop, as before.
	ZygoteLoop []byte
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

	etcMu     sync.Mutex
	etcTrees  map[*Etc]*os.File
	rootTrees map[rootTreeKey]*os.File // by base (rootTree); under etcMu too

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
	if err := bootstrapBuilt(); err != nil {
		return nil, err
	}
	if !hasCapability(unix.CAP_KILL) {
		return nil, ErrNoKillCap
	}
	cg, err := cgroup.Open("agentjail")
	if err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	r := &Runner{Cgroups: cg, UIDs: &UIDRange{Base: DefaultUIDBase, Size: DefaultUIDSize}, Exe: "/proc/self/exe", RootDir: DefaultRootDir}
	// The standalone init when this binary holds a current one (about
	// 0.8 ms less CPU a jail); else this binary itself, whose constructor
	// runs the same C (SealedStandaloneInit says why).
	if f, err := sealedStandalone(); err == nil {
		r.ExeFile = f
	}
	if so, err := zygoteLoop(); err == nil {
		r.ZygoteLoop = so
	}
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
	etc      *os.File // the root tree (rootTree) or /etc tree a clone of which goes with the plan (opAttach); nil: none
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
		if etc = r.rootTree(b); etc != nil {
			cfg.RootTree = true
		} else if etc = r.etcTree(b.etc); etc != nil {
			cfg.EtcTree = true
		}
	}
	return built{plan: buildPlan(cfg), tmpBytes: tmpBytes, noexec: cfg.ScratchNoexec, etc: etc}
}

// makeEtcTree is newEtcTree; a test makes it fail to see the jails
// write their own /etc.
var makeEtcTree = newEtcTree

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
