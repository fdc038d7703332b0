//go:build linux

package nsjail

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"agentjail/nsjail/internal/wire"
)

// A plan is what the init stage carries out (wire.Plan encodes it: its
// format is there). Every decision about the jail is made here, in Go:
// which steps, in which order, with which arguments; the C side only
// checks that the plan is well formed.
type plan struct{ wire.Plan }

// The op codes this file writes itself, under this package's names (their
// arguments: wire's; wire.Plan's Mount and Mkdir write the other two).
const (
	opUnshare    = wire.OpUnshare
	opBindRO     = wire.OpBindRO
	opSymlink    = wire.OpSymlink
	opWrite      = wire.OpWrite
	opChmod      = wire.OpChmod
	opIfExists   = wire.OpIfExists
	opUmount     = wire.OpUmount
	opRmdir      = wire.OpRmdir
	opPivotRoot  = wire.OpPivotRoot
	opHostname   = wire.OpHostname
	opDomainname = wire.OpDomainname
	opLoopbackUp = wire.OpLoopbackUp
	opChdir      = wire.OpChdir
	opSeccomp    = wire.OpSeccomp
	opStdio      = wire.OpStdio
	opRlimit     = wire.OpRlimit
	opExec       = wire.OpExec
	opKeepCaps   = wire.OpKeepCaps
	opAdopt      = wire.OpAdopt
	opAttach     = wire.OpAttach
	opSetattr    = wire.OpSetattr
	opLast       = wire.OpLast
)

// bindReadOnly binds src at dst (not recursively: host submounts below src
// are not exposed) and makes the bind read-only, nosuid and nodev (extra
// adds e.g. MS_NOEXEC) with mount_setattr, which leaves the flags the
// source mount already has, and a user namespace may not clear (they are
// locked), as they are.
func (p *plan) bindReadOnly(src, dst string, extra uintptr) {
	var cleared uint64
	if strings.HasPrefix(src, "/dev/") {
		cleared = unix.MS_NODEV
	}
	p.Op(opBindRO, "bind "+src).Str(src).Str(dst).U64(uint64(extra)).U64(cleared)
}

// writeTree writes files below dir, creating it and the directories on
// the way as needed. The paths were checked by Spec.Validate, and dir is
// inside the jail's own tmpfs; still the C side resolves every path
// beneath dir's fd (openat2: no "..", no symbolic or magic link, no other
// mount), so a path that tried to leave dir fails.
func (p *plan) writeTree(dir string, files []File, mode uint32) {
	p.Mkdir("mkdir "+dir, dir, 0o755, true)
	p.writeFiles(dir, files, mode)
}

// writeFiles is writeTree into a directory that exists.
func (p *plan) writeFiles(dir string, files []File, mode uint32) {
	for _, f := range files {
		p.Op(opWrite, "write "+f.Path).Str(dir).Str(f.Path).U32(mode).Blob(f.Content)
	}
}

// buildConfig is what every jail of a Runner shares, known before any
// request: buildPlan turns it into msgBuild's plan.
type buildConfig struct {
	RootDir  string     // host directory the new root tmpfs is mounted on (in the jail's private mount namespace only)
	RootSize int64      // bytes of the root tmpfs: /etc, /code (read-only once the program is in)
	Binds    []string   // host directories bound read-only at the same path (always /usr)
	Links    []initLink // symlinks in the new root, e.g. /bin -> usr/bin
	Etc      *Etc       // /etc beyond agentjail's own files; nil: none
	// EtcTree: the whole /etc comes as a detached mount with msgBuild
	// (Runner.etcTree), attached instead of written.
	EtcTree bool
	// RootTree: the whole root but /code, /dev/pts, /proc and the
	// scratch tmpfs comes as a detached tree with msgBuild
	// (Runner.rootTree), attached instead of built; EtcTree is then unset.
	RootTree bool
	TmpBytes int64 // scratch tmpfs for /workspace, /tmp, /dev/shm; requestConfig may resize it
	// ScratchNoexec mounts the scratch tmpfs noexec (Runner.ScratchNoexec).
	ScratchNoexec bool
	Code          []File // read-only files under /code that every run has (the daemon's harness)
	Seccomp       []byte // the filter (seccomp.Program.MarshalBinary); always present
}

// requestConfig is one request's part: requestPlan turns it into
// msgRequest's plan, which goes with the program's stdio fds.
type requestConfig struct {
	TmpBytes int64 // scratch tmpfs size; remounted when it differs from buildConfig's
	// ScratchNoexec is buildConfig's: a resize repeats the scratch
	// tmpfs's flags.
	ScratchNoexec bool
	Code          []File // the rest of /code: the program and its own code files
	// KeepCaps are the capabilities (bits of 1<<CAP_*) the program keeps
	// in its user namespace, as ambient ones across its exec: a zygote's
	// CAP_SETUID and CAP_SETGID, with which its forks become their runs'
	// uids, and CAP_SYS_ADMIN, with which they enter their runs'
	// namespaces. Every other program keeps none.
	KeepCaps uint64
	Files    []File   // written into /workspace
	Report   bool     // keep reportFd open for the program
	Collect  bool     // send a directory fd of /workspace with the listener
	Argv     []string // argv of python3; Argv[0] is the path inside the jail
	Env      []string
	Rlimits  []initRlimit
}

type initLink struct{ Path, Target string }

type initRlimit struct {
	Resource int
	Cur, Max uint64
}

// nsUnshared are the namespaces the init stage makes for itself; the user
// and pid namespaces come from the bootstrap (bootstrap_linux.c).
const nsUnshared = unix.CLONE_NEWNS | unix.CLONE_NEWNET | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS

// buildPlan is the part of the jail every run shares, carried out while
// the init stage holds its namespace capabilities: the file system up to
// pivot_root, the identity, the network, and the seccomp filter (decoded
// here, installed at the program's start). The root stays writable for
// the request's plan.
func buildPlan(cfg *buildConfig) []byte {
	p := &plan{}
	// First: a jail never runs without its filter.
	p.Op(opSeccomp, "decode seccomp filter").Blob(cfg.Seccomp)
	p.Op(opUnshare, "unshare namespaces").U32(nsUnshared)
	// Nothing done here may propagate to the host's mount namespace.
	p.Mount("make mounts private", "", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")
	root := cfg.RootDir
	if cfg.RootTree {
		p.rootFromTree(cfg)
	} else {
		p.rootOfItsOwn(cfg)
	}
	p.matplotlibCache(root, cfg.Etc)
	p.Op(opPivotRoot, "pivot_root").Str(root)
	p.Op(opHostname, "sethostname").Str("sandbox")
	p.Op(opDomainname, "setdomainname").Str("(none)")
	// lo is the only interface of the jail's network namespace: up, so
	// that programs can use localhost among themselves.
	p.Op(opLoopbackUp, "bring lo up")
	p.Op(opChdir, "chdir /workspace").Str("/workspace")
	return p.Bytes()
}

// rootOfItsOwn builds the root in the jail: a tmpfs, the binds, links,
// /etc, /code, /dev, /proc and the scratch tmpfs.
func (p *plan) rootOfItsOwn(cfg *buildConfig) {
	root := cfg.RootDir
	p.Mount("mount root tmpfs", "tmpfs", root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC,
		fmt.Sprintf("size=%d,nr_inodes=1024,mode=0755", cfg.RootSize))
	for _, b := range cfg.Binds {
		p.Mkdir("mkdir "+b, root+b, 0o755, true)
		p.bindReadOnly(b, root+b, 0)
	}
	for _, l := range cfg.Links {
		p.Op(opSymlink, "symlink "+l.Path).Str(l.Target).Str(root + l.Path)
	}
	if cfg.EtcTree {
		p.Mkdir("mkdir /etc", root+"/etc", 0o755, false)
		p.Op(opAttach, "attach /etc").Str(root + "/etc")
	} else {
		p.writeTree(root+"/etc", etcFiles, 0o444)
		p.etc(root, cfg.Etc)
	}
	p.Mkdir("mkdir /code", root+"/code", 0o755, false)
	p.code(cfg)
	p.dev(root)
	p.Mkdir("mkdir /proc", root+"/proc", 0o555, false)
	p.proc(root) // after /dev: masks bind its /dev/null
	p.scratch(root, cfg.TmpBytes, cfg.ScratchNoexec)
}

// rootFromTree attaches the root tree (Runner.rootTree: read-only, with
// the binds, links, /etc and /dev every jail of the Runner shares, made
// once), then mounts what is the jail's own on its mount points: /code,
// /dev/pts, the scratch tmpfs and /proc. The tree's /proc is empty until
// proc covers it: the scratch tmpfs is mounted there while its three
// directories are bound out of it, so that no other mount point is
// needed.
func (p *plan) rootFromTree(cfg *buildConfig) {
	root := cfg.RootDir
	// The "make mounts private" step before this covers only the mounts
	// the namespace had: the tree's own are private already, made so by
	// the daemon before any jail gets a clone (newRootTree, tested by
	// TestRootTreeSharesNoMountEvents), and a clone of a private mount is
	// private. So no mount event crosses between a jail and the daemon.
	p.Op(opAttach, "attach the root tree").Str(root)
	p.code(cfg)
	p.ptys(root + "/dev")
	s := root + "/proc"
	p.Mount("mount scratch tmpfs", "tmpfs", s, "tmpfs", uint64(scratchFlags(cfg.ScratchNoexec)),
		fmt.Sprintf("size=%d,nr_inodes=%d,mode=0755", cfg.TmpBytes, scratchInodes))
	p.scratchBinds(s, root, false)
	p.Op(opUmount, "detach scratch").Str(s).U32(unix.MNT_DETACH)
	p.proc(root)
}

// code mounts /code, a tmpfs of the jail's own (the root is read-only
// once the program is in, or from the start), and writes the files every
// run has into it; the request's plan adds its own, then makes it
// read-only.
func (p *plan) code(cfg *buildConfig) {
	p.Mount("mount /code tmpfs", "tmpfs", cfg.RootDir+"/code", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC,
		fmt.Sprintf("size=%d,nr_inodes=1024,mode=0755", cfg.RootSize))
	p.writeFiles(cfg.RootDir+"/code", cfg.Code, 0o444)
}

// matplotlibCache makes matplotlib's cache directory (MPLCONFIGDIR,
// libraryEnv) on the scratch tmpfs, the program's own, with a link to the
// font cache built once for the environment (Etc.MatplotlibCache):
// read-only and shared, never rebuilt per run.
func (p *plan) matplotlibCache(root string, e *Etc) {
	if e == nil || e.MatplotlibCache == "" {
		return
	}
	p.Mkdir("mkdir /tmp/matplotlib", root+"/tmp/matplotlib", 0o755, false)
	p.Op(opSymlink, "symlink the matplotlib font cache").Str("/etc/matplotlib/" + e.MatplotlibCache).
		Str(root + "/tmp/matplotlib/" + e.MatplotlibCache)
}

// requestPlan adds one request to a built jail (whose scratch tmpfs has
// builtTmp bytes): its stdio, its program, its scratch size, files and
// rlimits, and what to exec. The message carries stdin, stdout, stderr and
// the report channel when the request has one.
func requestPlan(cfg *requestConfig, builtTmp int64) []byte {
	p := &plan{}
	p.stdio(cfg)
	p.files(cfg, builtTmp)
	p.rlimits(cfg)
	if cfg.KeepCaps != 0 {
		p.Op(opKeepCaps, "keep capabilities").U64(cfg.KeepCaps)
	}
	p.exec(cfg)
	return p.Bytes()
}

// adoptPlan is requestPlan for a warm run's init (a nested jail): the
// request's files only. Its program is forked into the jail by the zygote
// (programPlan), and the init adopts it.
func adoptPlan(cfg *requestConfig, builtTmp int64) []byte {
	p := &plan{}
	p.files(cfg, builtTmp)
	p.Op(opAdopt, "adopt the program")
	return p.Bytes()
}

// programPlan is the rest of requestPlan, for a warm run's program, which
// zygote.py's fork carries out in the jail's namespaces: its stdio (the
// message's fds after the namespaces'), rlimits, working directory,
// filter and what to run. zygote.py refuses every other step.
func programPlan(cfg *requestConfig, filter []byte) []byte {
	p := &plan{}
	p.stdio(cfg)
	p.rlimits(cfg)
	p.Op(opChdir, "chdir /workspace").Str("/workspace")
	p.Op(opSeccomp, "decode seccomp filter").Blob(filter)
	p.exec(cfg)
	return p.Bytes()
}

func (p *plan) stdio(cfg *requestConfig) {
	n := uint32(3)
	if cfg.Report {
		n = 4
	}
	p.Op(opStdio, "stdio").U32(n)
}

// files writes the program and the request's files, makes the root
// read-only and resizes the scratch tmpfs (whose size is builtTmp) when the
// request asks for another size.
func (p *plan) files(cfg *requestConfig, builtTmp int64) {
	p.writeFiles("/code", cfg.Code, 0o444) // the build mounted it
	// Nothing in /code or the root (mount points and /etc) is ever
	// written again. A root tree is read-only already: its remount only
	// repeats its flags.
	p.Op(opSetattr, "make /code read-only").Str("/code").U64(unix.MOUNT_ATTR_RDONLY).Bool(false)
	p.Mount("remount / read-only", "", "/", "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	if cfg.TmpBytes != builtTmp {
		// The scratch tmpfs (behind /workspace, /tmp and /dev/shm) is
		// empty: resizing its superblock is one call. A non-bind remount
		// also sets the mount's flags, so they are repeated.
		p.Mount("resize scratch tmpfs", "", "/workspace", "", uint64(unix.MS_REMOUNT|scratchFlags(cfg.ScratchNoexec)),
			fmt.Sprintf("size=%d", cfg.TmpBytes))
	}
	p.writeFiles("/workspace", cfg.Files, 0o644) // the scratch tmpfs's
}

func (p *plan) rlimits(cfg *requestConfig) {
	for _, r := range cfg.Rlimits {
		p.Op(opRlimit, fmt.Sprintf("setrlimit %d", r.Resource)).U32(uint32(r.Resource)).U64(r.Cur).U64(r.Max)
	}
}

func (p *plan) exec(cfg *requestConfig) {
	p.Op(opExec, "exec").Bool(cfg.Report).Bool(cfg.Collect).U32(uint32(len(cfg.Argv)))
	for _, a := range cfg.Argv {
		p.Str(a)
	}
	p.U32(uint32(len(cfg.Env)))
	for _, e := range cfg.Env {
		p.Str(e)
	}
}

// etc writes an environment's /etc entries (Etc) into the root's /etc.
func (p *plan) etc(root string, e *Etc) {
	if e == nil {
		return
	}
	for _, en := range e.Entries {
		switch {
		case en.Dir:
			p.Mkdir("mkdir /etc/"+en.Path, root+"/etc/"+en.Path, 0o755, false)
		case en.Link != "":
			p.Op(opSymlink, "symlink /etc/"+en.Path).Str(en.Link).Str(root + "/etc/" + en.Path)
		default:
			p.Op(opWrite, "write /etc/"+en.Path).Str(root + "/etc").Str(en.Path).U32(0o444).Blob(en.Content)
		}
	}
}

// The jail's /etc: its own user and host names, and name lookups from
// files only, so that no lookup ever tries a DNS server.
var etcFiles = []File{
	{Path: "passwd", Content: []byte("root:x:0:0:root:/nonexistent:/usr/sbin/nologin\nsandbox:x:1000:1000:sandbox:/workspace:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")},
	{Path: "group", Content: []byte("root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n")},
	{Path: "hosts", Content: []byte("127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n")},
	{Path: "hostname", Content: []byte("sandbox\n")},
	{Path: "nsswitch.conf", Content: []byte("passwd: files\ngroup: files\nhosts: files\n")},
}

// /proc entries that leak host information or reach kernel knobs, after
// runc's defaults (libcontainer/specconv): masked files get /dev/null,
// masked directories an empty read-only tmpfs, the rest is read-only.
var (
	procMaskedFiles = []string{"kcore", "keys", "latency_stats", "timer_list", "timer_stats", "sched_debug"}
	procMaskedDirs  = []string{"acpi", "asound", "scsi", "driver"}
	procReadOnly    = []string{"bus", "fs", "irq", "sys", "sysrq-trigger"}
)

// proc mounts a proc of the jail's pid namespace at root/proc (a
// directory that exists), with runc's masks.
func (p *plan) proc(root string) {
	d := root + "/proc"
	// Read-only: a program has nothing to write there (its writable
	// entries, like /proc/self/comm, are knobs, not data); opening
	// /proc/self/fd/N for writing still works because it reaches the file
	// behind the link, not procfs.
	p.Mount("mount /proc", "proc", d, "proc", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	for _, f := range procMaskedFiles {
		t := d + "/" + f
		p.Op(opIfExists, "lstat /proc/"+f).Str(t)
		// The jail's /dev/null is already a read-only bind, and a bind
		// copies its source's flags: one call gives a read-only mask.
		p.Mount("mask /proc/"+f, root+"/dev/null", t, "", unix.MS_BIND, "")
	}
	for _, m := range procMaskedDirs {
		t := d + "/" + m
		p.Op(opIfExists, "lstat /proc/"+m).Str(t)
		p.Mount("mask /proc/"+m, "tmpfs", t, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=0,nr_inodes=1")
	}
	for _, f := range procReadOnly {
		t := d + "/" + f
		p.Op(opIfExists, "lstat /proc/"+f).Str(t)
		p.bindReadOnly(t, t, unix.MS_NOEXEC)
	}
}

// devices are bound from the host's /dev: a user namespace cannot mknod.
var devices = []string{"null", "zero", "full", "random", "urandom"}

func (p *plan) dev(root string) {
	d := root + "/dev"
	p.Mkdir("mkdir /dev", d, 0o755, false)
	p.Mount("mount /dev", "tmpfs", d, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "size=64k,nr_inodes=64,mode=0755")
	for _, n := range devices {
		p.Op(opWrite, "create /dev/"+n).Str(d).Str(n).U32(0o666).Blob(nil)
	}
	for _, l := range [][2]string{{"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"}, {"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"}} {
		p.Op(opSymlink, "symlink /dev/"+l[0]).Str(l[1]).Str(d + "/" + l[0])
	}
	p.Mkdir("mkdir /dev/shm", d+"/shm", 0o755, false)
	p.Mkdir("mkdir /dev/pts", d+"/pts", 0o755, false)
	p.Op(opSymlink, "symlink /dev/ptmx").Str("pts/ptmx").Str(d + "/ptmx")
	for _, n := range devices {
		p.Mount("bind /dev/"+n, "/dev/"+n, d+"/"+n, "", unix.MS_BIND, "")
	}
	// /dev is complete but for its two mount points: it and the device
	// binds in it read-only, nosuid and noexec, in one call (the binds
	// keep the host's device nodes working: no nodev). /dev/pts is
	// mounted read-only itself, /dev/shm is the scratch tmpfs's (scratch).
	p.Op(opSetattr, "make /dev read-only").Str(d).U64(unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NOEXEC).Bool(true)
	p.ptys(d)
}

// jailPtys bounds the pseudo-terminals a jail's devpts holds at once.
// Every devpts but the host's own shares kernel.pty.max minus
// kernel.pty.reserve (4096 − 1024 by default): the host's ptys keep
// their reserve whatever the jails take.
const jailPtys = 16

// ptys gives the jail pseudo-terminals of its own: a devpts instance
// (newinstance) made in its mount namespace, whose ptys no other jail
// and not the host can see, at /dev/pts, with /dev/ptmx a link to its
// ptmx. Read-only: a pty is made by opening ptmx, never by writing the
// file system, and a device node's read-only mount does not stop its
// I/O; nothing can be created or renamed there.
func (p *plan) ptys(dev string) {
	p.Mount("mount /dev/pts", "devpts", dev+"/pts", "devpts", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NOEXEC,
		fmt.Sprintf("newinstance,ptmxmode=0666,mode=0620,max=%d", jailPtys))
}

// scratchBinds makes /workspace, /tmp and /dev/shm directories of the
// scratch tmpfs mounted at s and binds them at root's mount points.
func (p *plan) scratchBinds(s, root string, mkdirs bool) {
	for _, b := range []struct {
		dir, target string
		mode        uint32
	}{{"workspace", "/workspace", 0o755}, {"tmp", "/tmp", 0o1777}, {"shm", "/dev/shm", 0o1777}} {
		src := s + "/" + b.dir
		p.Mkdir("mkdir "+b.target, src, b.mode, false)
		p.Op(opChmod, "chmod "+b.target).Str(src).U32(b.mode) // not masked by the umask
		t := root + b.target
		if mkdirs && b.target != "/dev/shm" {
			p.Mkdir("mkdir "+b.target, t, 0o755, false)
		}
		p.Mount("bind "+b.target, src, t, "", unix.MS_BIND, "")
	}
}

// scratchFlags are the scratch tmpfs's mount flags: always nosuid and
// nodev (a file there never gains privileges, no device node works
// there); noexec only when the operator asks (jail.scratch_noexec). By
// default a program may run what it writes (its scripts, a venv's pip):
// it already runs anything under /usr, and Python can make executable
// memory without a file, so noexec would stop little (docs/security.md).
func scratchFlags(noexec bool) uintptr {
	f := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
	if noexec {
		f |= unix.MS_NOEXEC
	}
	return f
}

// scratch mounts one tmpfs of tmpBytes and binds three of its directories
// at /workspace, /tmp and /dev/shm, so that one limit bounds everything
// the program can store. Its pages are charged to the jail's memory
// cgroup as the program writes them.
func (p *plan) scratch(root string, tmpBytes int64, noexec bool) {
	s := root + "/.scratch"
	p.Mkdir("mkdir scratch", s, 0o700, false)
	p.Mount("mount scratch tmpfs", "tmpfs", s, "tmpfs", uint64(scratchFlags(noexec)),
		fmt.Sprintf("size=%d,nr_inodes=%d,mode=0755", tmpBytes, scratchInodes))
	p.scratchBinds(s, root, true)
	p.Op(opUmount, "detach scratch").Str(s).U32(unix.MNT_DETACH)
	p.Op(opRmdir, "rmdir scratch").Str(s)
}
