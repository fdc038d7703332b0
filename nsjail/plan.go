//go:build linux

package nsjail

import (
	"encoding/binary"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"agentjail/nsjail/internal/wire"
)

// A plan is what the init stage (init_linux.c, C: no Go runtime starts in
// a jail) carries out: steps in order, each a system call or a small fixed
// sequence of them, with its arguments and the name a failure reports.
// Every decision about the jail is made here, in Go; the C side only
// checks that the plan is well formed. Encoding, little endian:
//
//	step:   op (1 byte) | stage (string) | arguments
//	string: length (4 bytes) | bytes | NUL (not counted)
//	u32, u64: 4 or 8 bytes
//
// The op codes must match bootstrap_linux.h's enum (bootstrap_linux.go
// checks each of them at compile time).
type plan struct{ b []byte }

const (
	opUnshare    = wire.OpUnshare    // flags u32
	opMount      = wire.OpMount      // source, target, fstype, flags u64, data ("" is NULL for source, fstype, data)
	opBindRO     = wire.OpBindRO     // source, target, extra flags u64, cleared flags u64
	opMkdir      = wire.OpMkdir      // path, mode u32, parents u32
	opSymlink    = wire.OpSymlink    // target, path
	opWrite      = wire.OpWrite      // directory, path below it, mode u32, content
	opChmod      = wire.OpChmod      // path, mode u32
	opIfExists   = wire.OpIfExists   // path: the next step only when it exists
	opUmount     = wire.OpUmount     // path, flags u32
	opRmdir      = wire.OpRmdir      // path
	opPivotRoot  = wire.OpPivotRoot  // new root
	opHostname   = wire.OpHostname   // name
	opDomainname = wire.OpDomainname // name
	opLoopbackUp = wire.OpLoopbackUp // -
	opChdir      = wire.OpChdir      // path
	opSeccomp    = wire.OpSeccomp    // the filter (seccomp.Program.MarshalBinary)
	opStdio      = wire.OpStdio      // count u32: the message's fds become 0 … count-1
	opRlimit     = wire.OpRlimit     // resource u32, soft u64, hard u64
	opExec       = wire.OpExec       // report u32, collect u32, argc u32, argv…, envc u32, env…
	opKeepCaps   = wire.OpKeepCaps   // mask u64: capabilities the program keeps (a zygote's)
	opAdopt      = wire.OpAdopt      // - : instead of opExec, a warm run's init adopts the program its zygote forks
	opAttach     = wire.OpAttach     // path: the message's one fd, a detached mount, is attached there
	opLast       = wire.OpLast
)

func (p *plan) op(code byte, stage string) *plan {
	p.b = append(p.b, code)
	return p.str(stage)
}

func (p *plan) u32(v uint32) *plan { p.b = binary.LittleEndian.AppendUint32(p.b, v); return p }
func (p *plan) u64(v uint64) *plan { p.b = binary.LittleEndian.AppendUint64(p.b, v); return p }

func (p *plan) bytes(b []byte) *plan { p.b = appendField(p.b, b); return p }

// str: the C side refuses a NUL inside (Spec.Validate refuses them first).
func (p *plan) str(s string) *plan { p.b = appendField(p.b, s); return p }

// appendField appends v as the plan's strings and bytes are: its length,
// itself, and a NUL the length does not count.
func appendField[T string | []byte](b []byte, v T) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(v)))
	return append(append(b, v...), 0)
}

func boolU32(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

func (p *plan) mount(stage, source, target, fstype string, flags uintptr, data string) {
	p.op(opMount, stage).str(source).str(target).str(fstype).u64(uint64(flags)).str(data)
}

// bindReadOnly binds src at dst (not recursively: host submounts below src
// are not exposed) and remounts the bind read-only, nosuid and nodev
// (extra adds e.g. MS_NOEXEC), repeating the flags the source mount
// already has, which a user namespace may not clear (they are locked).
func (p *plan) bindReadOnly(src, dst string, extra uintptr) {
	var cleared uint64
	if strings.HasPrefix(src, "/dev/") {
		cleared = unix.MS_NODEV
	}
	p.op(opBindRO, "bind "+src).str(src).str(dst).u64(uint64(extra)).u64(cleared)
}

func (p *plan) mkdir(stage, path string, mode uint32, parents bool) {
	p.op(opMkdir, stage).str(path).u32(mode).u32(boolU32(parents))
}

// writeTree writes files below dir, creating it and the directories on
// the way as needed. The paths were checked by Spec.Validate, and dir is
// inside the jail's own tmpfs; still the C side resolves every path
// beneath dir's fd (openat2: no "..", no symbolic or magic link, no other
// mount), so a path that tried to leave dir fails.
func (p *plan) writeTree(dir string, files []File, mode uint32) {
	p.mkdir("mkdir "+dir, dir, 0o755, true)
	p.writeFiles(dir, files, mode)
}

// writeFiles is writeTree into a directory that exists.
func (p *plan) writeFiles(dir string, files []File, mode uint32) {
	for _, f := range files {
		p.op(opWrite, "write "+f.Path).str(dir).str(f.Path).u32(mode).bytes(f.Content)
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
	EtcTree  bool
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
	p.op(opSeccomp, "decode seccomp filter").bytes(cfg.Seccomp)
	p.op(opUnshare, "unshare namespaces").u32(nsUnshared)
	// Nothing done here may propagate to the host's mount namespace.
	p.mount("make mounts private", "", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")
	root := cfg.RootDir
	p.mount("mount root tmpfs", "tmpfs", root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC,
		fmt.Sprintf("size=%d,nr_inodes=1024,mode=0755", cfg.RootSize))
	for _, b := range cfg.Binds {
		p.mkdir("mkdir "+b, root+b, 0o755, true)
		p.bindReadOnly(b, root+b, 0)
	}
	for _, l := range cfg.Links {
		p.op(opSymlink, "symlink "+l.Path).str(l.Target).str(root + l.Path)
	}
	if cfg.EtcTree {
		p.mkdir("mkdir /etc", root+"/etc", 0o755, false)
		p.op(opAttach, "attach /etc").str(root + "/etc")
	} else {
		p.writeTree(root+"/etc", etcFiles, 0o444)
		p.etc(root, cfg.Etc)
	}
	p.writeTree(root+"/code", cfg.Code, 0o444)
	p.dev(root)
	p.mkdir("mkdir /proc", root+"/proc", 0o555, false)
	p.proc(root) // after /dev: masks bind its /dev/null
	p.scratch(root, cfg.TmpBytes, cfg.ScratchNoexec)
	p.matplotlibCache(root, cfg.Etc)
	p.op(opPivotRoot, "pivot_root").str(root)
	p.op(opHostname, "sethostname").str("sandbox")
	p.op(opDomainname, "setdomainname").str("(none)")
	// lo is the only interface of the jail's network namespace: up, so
	// that programs can use localhost among themselves.
	p.op(opLoopbackUp, "bring lo up")
	p.op(opChdir, "chdir /workspace").str("/workspace")
	return p.b
}

// matplotlibCache makes matplotlib's cache directory (MPLCONFIGDIR,
// libraryEnv) on the scratch tmpfs, the program's own, with a link to the
// font cache built once for the environment (Etc.MatplotlibCache):
// read-only and shared, never rebuilt per run.
func (p *plan) matplotlibCache(root string, e *Etc) {
	if e == nil || e.MatplotlibCache == "" {
		return
	}
	p.mkdir("mkdir /tmp/matplotlib", root+"/tmp/matplotlib", 0o755, false)
	p.op(opSymlink, "symlink the matplotlib font cache").str("/etc/matplotlib/" + e.MatplotlibCache).
		str(root + "/tmp/matplotlib/" + e.MatplotlibCache)
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
		p.op(opKeepCaps, "keep capabilities").u64(cfg.KeepCaps)
	}
	p.exec(cfg)
	return p.b
}

// adoptPlan is requestPlan for a warm run's init (a nested jail): the
// request's files only. Its program is forked into the jail by the zygote
// (programPlan), and the init adopts it.
func adoptPlan(cfg *requestConfig, builtTmp int64) []byte {
	p := &plan{}
	p.files(cfg, builtTmp)
	p.op(opAdopt, "adopt the program")
	return p.b
}

// programPlan is the rest of requestPlan, for a warm run's program, which
// zygote.py's fork carries out in the jail's namespaces: its stdio (the
// message's fds after the namespaces'), rlimits, working directory,
// filter and what to run. zygote.py refuses every other step.
func programPlan(cfg *requestConfig, filter []byte) []byte {
	p := &plan{}
	p.stdio(cfg)
	p.rlimits(cfg)
	p.op(opChdir, "chdir /workspace").str("/workspace")
	p.op(opSeccomp, "decode seccomp filter").bytes(filter)
	p.exec(cfg)
	return p.b
}

func (p *plan) stdio(cfg *requestConfig) {
	n := uint32(3)
	if cfg.Report {
		n = 4
	}
	p.op(opStdio, "stdio").u32(n)
}

// files writes the program and the request's files, makes the root
// read-only and resizes the scratch tmpfs (whose size is builtTmp) when the
// request asks for another size.
func (p *plan) files(cfg *requestConfig, builtTmp int64) {
	p.writeFiles("/code", cfg.Code, 0o444) // the build made it
	// The root holds only mount points, /etc and /code: nothing in it is
	// ever written again.
	p.mount("remount / read-only", "", "/", "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	if cfg.TmpBytes != builtTmp {
		// The scratch tmpfs (behind /workspace, /tmp and /dev/shm) is
		// empty: resizing its superblock is one call. A non-bind remount
		// also sets the mount's flags, so they are repeated.
		p.mount("resize scratch tmpfs", "", "/workspace", "", unix.MS_REMOUNT|scratchFlags(cfg.ScratchNoexec),
			fmt.Sprintf("size=%d", cfg.TmpBytes))
	}
	p.writeFiles("/workspace", cfg.Files, 0o644) // the scratch tmpfs's
}

func (p *plan) rlimits(cfg *requestConfig) {
	for _, r := range cfg.Rlimits {
		p.op(opRlimit, fmt.Sprintf("setrlimit %d", r.Resource)).u32(uint32(r.Resource)).u64(r.Cur).u64(r.Max)
	}
}

func (p *plan) exec(cfg *requestConfig) {
	p.op(opExec, "exec").u32(boolU32(cfg.Report)).u32(boolU32(cfg.Collect)).u32(uint32(len(cfg.Argv)))
	for _, a := range cfg.Argv {
		p.str(a)
	}
	p.u32(uint32(len(cfg.Env)))
	for _, e := range cfg.Env {
		p.str(e)
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
			p.mkdir("mkdir /etc/"+en.Path, root+"/etc/"+en.Path, 0o755, false)
		case en.Link != "":
			p.op(opSymlink, "symlink /etc/"+en.Path).str(en.Link).str(root + "/etc/" + en.Path)
		default:
			p.op(opWrite, "write /etc/"+en.Path).str(root + "/etc").str(en.Path).u32(0o444).bytes(en.Content)
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
	p.mount("mount /proc", "proc", d, "proc", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	for _, f := range procMaskedFiles {
		t := d + "/" + f
		p.op(opIfExists, "lstat /proc/"+f).str(t)
		// The jail's /dev/null is already a read-only bind, and a bind
		// copies its source's flags: one call gives a read-only mask.
		p.mount("mask /proc/"+f, root+"/dev/null", t, "", unix.MS_BIND, "")
	}
	for _, m := range procMaskedDirs {
		t := d + "/" + m
		p.op(opIfExists, "lstat /proc/"+m).str(t)
		p.mount("mask /proc/"+m, "tmpfs", t, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=0,nr_inodes=1")
	}
	for _, f := range procReadOnly {
		t := d + "/" + f
		p.op(opIfExists, "lstat /proc/"+f).str(t)
		p.bindReadOnly(t, t, unix.MS_NOEXEC)
	}
}

// devices are bound from the host's /dev: a user namespace cannot mknod.
var devices = []string{"null", "zero", "full", "random", "urandom"}

func (p *plan) dev(root string) {
	d := root + "/dev"
	p.mkdir("mkdir /dev", d, 0o755, false)
	p.mount("mount /dev", "tmpfs", d, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "size=64k,nr_inodes=64,mode=0755")
	for _, n := range devices {
		p.op(opWrite, "create /dev/"+n).str(d).str(n).u32(0o666).bytes(nil)
		p.bindReadOnly("/dev/"+n, d+"/"+n, unix.MS_NOEXEC)
	}
	for _, l := range [][2]string{{"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"}, {"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"}} {
		p.op(opSymlink, "symlink /dev/"+l[0]).str(l[1]).str(d + "/" + l[0])
	}
	p.mkdir("mkdir /dev/shm", d+"/shm", 0o755, false)
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
	p.mkdir("mkdir /dev/pts", dev+"/pts", 0o755, false)
	p.mount("mount /dev/pts", "devpts", dev+"/pts", "devpts", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NOEXEC,
		fmt.Sprintf("newinstance,ptmxmode=0666,mode=0620,max=%d", jailPtys))
	p.op(opSymlink, "symlink /dev/ptmx").str("pts/ptmx").str(dev + "/ptmx")
}

// scratchBinds makes /workspace, /tmp and /dev/shm directories of the
// scratch tmpfs mounted at s and binds them at root's mount points.
func (p *plan) scratchBinds(s, root string) {
	for _, b := range []struct {
		dir, target string
		mode        uint32
	}{{"workspace", "/workspace", 0o755}, {"tmp", "/tmp", 0o1777}, {"shm", "/dev/shm", 0o1777}} {
		src := s + "/" + b.dir
		p.mkdir("mkdir "+b.target, src, b.mode, false)
		p.op(opChmod, "chmod "+b.target).str(src).u32(b.mode) // not masked by the umask
		t := root + b.target
		if root != "" && b.target != "/dev/shm" {
			p.mkdir("mkdir "+b.target, t, 0o755, false)
		}
		p.mount("bind "+b.target, src, t, "", unix.MS_BIND, "")
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
	p.mkdir("mkdir scratch", s, 0o700, false)
	p.mount("mount scratch tmpfs", "tmpfs", s, "tmpfs", scratchFlags(noexec),
		fmt.Sprintf("size=%d,nr_inodes=%d,mode=0755", tmpBytes, scratchInodes))
	p.scratchBinds(s, root)
	p.op(opUmount, "detach scratch").str(s).u32(unix.MNT_DETACH)
	p.op(opRmdir, "rmdir scratch").str(s)
	// /dev is complete: make it read-only (the device binds keep their own flags).
	p.mount("remount /dev read-only", "", root+"/dev", "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NOEXEC, "")
}
