package nsjail

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"agentjail/seccomp"
)

// nsUnshared are the namespaces the init stage makes for itself; the user
// and pid namespaces come from the bootstrap (bootstrap_linux.c).
const nsUnshared = unix.CLONE_NEWNS | unix.CLONE_NEWNET | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS

// initArg0 is argv[0] of the re-executed binary when it must run as the
// jail's init stage. It shows in the jail's /proc/1/cmdline only until the
// exec of python3 replaces it.
const initArg0 = "agentjail-init"

// IsInit reports whether this process was started as a jail's init stage.
// main must check it before anything else and then call Init.
func IsInit() bool { return len(os.Args) > 0 && os.Args[0] == initArg0 }

// Init is the jail's init stage: PID 1 of fresh user and pid namespaces
// (its first step makes fresh mount, net, ipc and uts namespaces for its
// locked thread), running as uid 1000 of its user namespace (a dedicated
// unprivileged host uid) with CAP_SYS_ADMIN, CAP_NET_ADMIN and CAP_SETPCAP of
// that namespace only. It follows the protocol of protocol.go and never
// returns: every path ends in execve(python3) or exit.
func Init() {
	// Capabilities, the cgroup namespace and the seccomp filter are
	// per-thread: everything from here to execve runs on this one thread.
	runtime.LockOSThread()
	// The parent-death signal the bootstrap set belongs to the process's
	// first thread; the thread that execs python3 carries the process on,
	// and Go does not promise that this goroutine runs on the first
	// thread: this thread gets it too (the signal ends the whole process,
	// whichever thread holds it).
	_ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0)
	// Nothing of the jail may read or ptrace this stage while it holds
	// capabilities (CVE-2019-5736's lesson; python3's exec resets it).
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	// The jail's own umask, whatever the parent's was at the fork (the
	// daemon changes its own while it binds its socket): the modes of
	// /etc, /code and the request's files, and the program's default.
	unix.Umask(0o022)
	c := fdConn(syncFd)
	var prep prepareConfig
	if err := readJSON(c, msgPrepare, &prep); err != nil {
		initFail(c, err)
	}
	filter, err := prepare(&prep)
	if err != nil {
		initFail(c, err)
	}
	preparedTmp := prep.TmpBytes
	if prep.Ahead {
		_ = json.Unmarshal([]byte(warmConfig), new(runConfig))
	}
	if err := writeMsg(c, msgReady, nil); err != nil {
		os.Exit(1)
	}
	// A prepared jail may wait here for as long as the daemon runs; the
	// end of the socket (a daemon that stops, or drops the jail) ends it.
	typ, payload, fds, err := c.readMsgFds()
	if errors.Is(err, io.EOF) {
		os.Exit(0)
	}
	if err != nil { // e.g. a message with too many fds: say so
		initFail(c, stageErr("read config", err))
	}
	if typ != msgConfig {
		initFail(c, &StageError{Stage: "read config", Msg: fmt.Sprintf("unexpected message %d", typ)})
	}
	var cfg runConfig
	if err := json.Unmarshal(payload, &cfg); err != nil {
		initFail(c, stageErr("decode config", err))
	}
	payload = nil
	if err := apply(&cfg, fds, preparedTmp); err != nil {
		initFail(c, err)
	}
	if err := writeMsg(c, msgReady, nil); err != nil {
		os.Exit(1)
	}
	typ, _, join, err := c.readMsgFds()
	if err != nil || typ != msgGo {
		// The parent went away or gave up: nothing to report to.
		os.Exit(1)
	}
	initFail(c, execPython(c, &cfg, filter, join))
}

// warmConfig is a runConfig with every field set, decoded once by a jail
// prepared ahead of its request: encoding/json's decoders for the type
// are built and its code paged in before the request, whose decoding took
// 150 µs cold, 40 to 80 µs warm (traced). A collection after it (GOGC is
// off here) made the request's set-up and exec slower, not faster.
const warmConfig = `{"TmpBytes":1,"Code":[{"Path":"a","Content":"YQ=="}],"Files":[{"Path":"a","Content":"YQ=="}],` +
	`"Report":true,"Collect":true,"Argv":["a"],"Env":["a"],"Rlimits":[{"Resource":1,"Cur":1,"Max":1}]}`

// readJSON reads the next message, which must be of type want, into v.
func readJSON(c fdConn, want byte, v any) error {
	typ, payload, err := readMsg(c)
	if err != nil || typ != want {
		return &StageError{Stage: "read config", Msg: fmt.Sprintf("type %d: %v", typ, err)}
	}
	return step("decode config", json.Unmarshal(payload, v))
}

// initFail reports a set-up failure to the parent and exits.
func initFail(c fdConn, err error) {
	_ = writeJSON(c, msgError, stageErr("init", err))
	os.Exit(1)
}

// fdConn reads and writes a raw blocking fd, without the Go poller.
type fdConn int

func (c fdConn) Read(p []byte) (int, error) {
	for {
		n, err := unix.Read(int(c), p)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		if n == 0 && len(p) > 0 {
			return 0, io.EOF
		}
		return n, nil
	}
}

func (c fdConn) Write(p []byte) (int, error) {
	written := 0
	for written < len(p) {
		n, err := unix.Write(int(c), p[written:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return written, err
		}
		written += n
	}
	return written, nil
}

// step runs one set-up system call and names it on failure.
func step(stage string, err error) error {
	if err != nil {
		return stageErr(stage, err)
	}
	return nil
}

// prepare builds the part of the jail every run shares, while the init
// stage holds its namespace capabilities: the file system up to
// pivot_root, the identity, the network, and the decoded seccomp filter.
// The root stays writable for apply.
func prepare(cfg *prepareConfig) (*seccomp.Program, error) {
	// Decoded now: no allocation after Install. A jail never runs without
	// its filter.
	filter := new(seccomp.Program)
	if err := filter.UnmarshalBinary(cfg.Seccomp); err != nil || len(filter.Instructions) == 0 {
		return nil, &StageError{Stage: "decode seccomp filter", Msg: fmt.Sprint("no usable filter: ", err)}
	}
	// The rest of the jail's namespaces, owned by its user namespace. They
	// are per thread: this locked thread, the one that execs python3, has
	// them; the Go runtime's other threads keep the parent's until the exec
	// ends them, and run none of this stage's code.
	if err := step("unshare namespaces", unix.Unshare(nsUnshared)); err != nil {
		return nil, err
	}
	root := cfg.RootDir
	// Nothing done here may propagate to the host's mount namespace.
	if err := step("make mounts private", unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")); err != nil {
		return nil, err
	}
	if err := step("mount root tmpfs", unix.Mount("tmpfs", root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC,
		fmt.Sprintf("size=%d,nr_inodes=1024,mode=0755", cfg.RootSize))); err != nil {
		return nil, err
	}
	for _, b := range cfg.Binds {
		t := root + b
		if err := step("mkdir "+b, os.MkdirAll(t, 0o755)); err != nil {
			return nil, err
		}
		if err := bindReadOnly(b, t, 0); err != nil {
			return nil, err
		}
	}
	for _, l := range cfg.Links {
		if err := step("symlink "+l.Path, os.Symlink(l.Target, root+l.Path)); err != nil {
			return nil, err
		}
	}
	if err := writeEtc(root); err != nil {
		return nil, err
	}
	if err := writeTree(root+"/code", cfg.Code, 0o444); err != nil {
		return nil, err
	}
	if err := mountDev(root); err != nil {
		return nil, err
	}
	if err := mountProc(root); err != nil { // after /dev: masks bind its /dev/null
		return nil, err
	}
	if err := mountScratch(root, cfg.TmpBytes); err != nil {
		return nil, err
	}
	if err := pivotRoot(root); err != nil {
		return nil, err
	}
	if err := step("sethostname", unix.Sethostname([]byte("sandbox"))); err != nil {
		return nil, err
	}
	if err := step("setdomainname", unix.Setdomainname([]byte("(none)"))); err != nil {
		return nil, err
	}
	if err := loopbackUp(); err != nil {
		return nil, err
	}
	return filter, step("chdir /workspace", unix.Chdir("/workspace"))
}

// apply adds one request to a prepared jail: its stdio, its program, its
// scratch size, files and rlimits. fds are stdin, stdout, stderr and the
// report channel when the request has one.
func apply(cfg *runConfig, fds []int, preparedTmp int64) error {
	want := 3
	if cfg.Report {
		want = 4
	}
	if len(fds) != want {
		closeFds(fds)
		return &StageError{Stage: "read config", Msg: fmt.Sprintf("%d fds with the config, want %d", len(fds), want)}
	}
	// The targets, 0 to 3, are held from the start (stdio and fd 3 on
	// /dev/null: run_linux.go start), so neither a received fd nor one the
	// Go runtime opened itself is a number that dup3 would replace.
	for i, fd := range fds {
		if fd <= reportFd {
			return &StageError{Stage: "stdio", Msg: fmt.Sprintf("received fd %d, below the ones this stage holds", fd)}
		}
		if err := step("dup stdio", unix.Dup3(fd, i, 0)); err != nil {
			return err
		}
		unix.Close(fd)
	}
	if err := writeTree("/code", cfg.Code, 0o444); err != nil {
		return err
	}
	// The root holds only mount points, /etc and /code: nothing in it is
	// ever written again.
	if err := step("remount / read-only", unix.Mount("", "/", "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")); err != nil {
		return err
	}
	if cfg.TmpBytes != preparedTmp {
		// The scratch tmpfs (behind /workspace, /tmp and /dev/shm) is
		// empty: resizing its superblock is one call. A non-bind remount
		// also sets the mount's flags, so they are repeated.
		if err := step("resize scratch tmpfs", unix.Mount("", "/workspace", "", unix.MS_REMOUNT|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC,
			fmt.Sprintf("size=%d", cfg.TmpBytes))); err != nil {
			return err
		}
	}
	if err := writeTree("/workspace", cfg.Files, 0o644); err != nil {
		return err
	}
	for _, r := range cfg.Rlimits {
		if err := step(fmt.Sprintf("setrlimit %d", r.Resource), unix.Setrlimit(r.Resource, &unix.Rlimit{Cur: r.Cur, Max: r.Max})); err != nil {
			return err
		}
	}
	return nil
}

// bindReadOnly binds src at dst (not recursively: host submounts below src
// are not exposed) and makes the bind read-only, nosuid and nodev (extra
// adds e.g. MS_NOEXEC). The flags the source mount already has are kept,
// because a user namespace may not clear them (they are locked).
func bindReadOnly(src, dst string, extra uintptr) error {
	if err := step("bind "+src, unix.Mount(src, dst, "", unix.MS_BIND, "")); err != nil {
		return err
	}
	var st unix.Statfs_t
	if err := step("statfs "+src, unix.Statfs(dst, &st)); err != nil {
		return err
	}
	flags := unix.MS_REMOUNT | unix.MS_BIND | unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | extra | lockedFlags(st.Flags)
	if strings.HasPrefix(src, "/dev/") {
		flags &^= unix.MS_NODEV
	}
	return step("remount "+src+" read-only", unix.Mount("", dst, "", flags, ""))
}

// lockedFlags are the per-mount flags of an existing mount that a remount
// inside a user namespace must repeat.
func lockedFlags(f int64) uintptr {
	var m uintptr
	for _, p := range statfsToMount {
		if f&p.st != 0 {
			m |= p.ms
		}
	}
	return m
}

var statfsToMount = []struct {
	st int64
	ms uintptr
}{
	{unix.ST_NOEXEC, unix.MS_NOEXEC}, {unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME},
	{unix.ST_RELATIME, unix.MS_RELATIME}, {unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV},
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

func writeEtc(root string) error { return writeTree(root+"/etc", etcFiles, 0o444) }

// writeTree writes files below dir, creating directories as needed. The
// paths were checked by Spec.Validate, and dir is inside the jail's own
// tmpfs; still every path is resolved beneath dir's fd (openat2: no "..",
// no symbolic or magic link, no other mount), because from mountProc to the
// exec of python3 this stage's other threads keep the host's root and
// /proc/1/task/*/root leads to it: a path that tried to leave dir fails.
func writeTree(dir string, files []File, mode os.FileMode) error {
	if err := step("mkdir "+dir, os.MkdirAll(dir, 0o755)); err != nil {
		return err
	}
	root, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return stageErr("open "+dir, err)
	}
	defer unix.Close(root)
	for _, f := range files {
		if err := writeBeneath(root, f.Path, f.Content, mode); err != nil {
			return stageErr("write "+f.Path, err)
		}
	}
	return nil
}

// writeBeneath writes one file at rel below the directory root. When its
// directory is missing, the directories on the way are made one level at
// a time, each beneath root.
func writeBeneath(root int, rel string, content []byte, mode os.FileMode) error {
	const flags = unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC
	fd, err := openBeneath(root, rel, flags, uint64(mode.Perm()))
	if err == unix.ENOENT && strings.Contains(rel, "/") {
		if err := mkdirsBeneath(root, rel); err != nil {
			return err
		}
		fd, err = openBeneath(root, rel, flags, uint64(mode.Perm()))
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, err = fdConn(fd).Write(content)
	return err
}

// mkdirsBeneath makes the directories of rel's path below root.
func mkdirsBeneath(root int, rel string) error {
	elems := strings.Split(rel, "/")
	for i := 1; i < len(elems); i++ {
		parent := "."
		if i > 1 {
			parent = strings.Join(elems[:i-1], "/")
		}
		pfd, err := openBeneath(root, parent, unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			return err
		}
		err = unix.Mkdirat(pfd, elems[i-1], 0o755)
		unix.Close(pfd)
		if err != nil && err != unix.EEXIST {
			return err
		}
	}
	return nil
}

// /proc entries that leak host information or reach kernel knobs, after
// runc's defaults (libcontainer/specconv): masked files get /dev/null,
// masked directories an empty read-only tmpfs, the rest is read-only.
var (
	procMaskedFiles = []string{"kcore", "keys", "latency_stats", "timer_list", "timer_stats", "sched_debug"}
	procMaskedDirs  = []string{"acpi", "asound", "scsi", "driver"}
	procReadOnly    = []string{"bus", "fs", "irq", "sys", "sysrq-trigger"}
)

func mountProc(root string) error {
	p := root + "/proc"
	if err := step("mkdir /proc", os.Mkdir(p, 0o555)); err != nil {
		return err
	}
	// Read-only: a program has nothing to write there (its writable
	// entries, like /proc/self/comm, are knobs, not data); opening
	// /proc/self/fd/N for writing still works because it reaches the file
	// behind the link, not procfs.
	if err := step("mount /proc", unix.Mount("proc", p, "proc", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")); err != nil {
		return err
	}
	for _, f := range procMaskedFiles {
		t := p + "/" + f
		if _, err := os.Lstat(t); err != nil {
			continue
		}
		// The jail's /dev/null is already a read-only bind, and a bind
		// copies its source's flags: one call gives a read-only mask.
		if err := step("mask /proc/"+f, unix.Mount(root+"/dev/null", t, "", unix.MS_BIND, "")); err != nil {
			return err
		}
	}
	for _, d := range procMaskedDirs {
		t := p + "/" + d
		if _, err := os.Lstat(t); err != nil {
			continue
		}
		if err := step("mask /proc/"+d, unix.Mount("tmpfs", t, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=0,nr_inodes=1")); err != nil {
			return err
		}
	}
	for _, f := range procReadOnly {
		t := p + "/" + f
		if _, err := os.Lstat(t); err != nil {
			continue
		}
		if err := bindReadOnly(t, t, unix.MS_NOEXEC); err != nil {
			return err
		}
	}
	return nil
}

// devices are bound from the host's /dev: a user namespace cannot mknod.
var devices = []string{"null", "zero", "full", "random", "urandom"}

func mountDev(root string) error {
	d := root + "/dev"
	if err := step("mkdir /dev", os.Mkdir(d, 0o755)); err != nil {
		return err
	}
	if err := step("mount /dev", unix.Mount("tmpfs", d, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "size=64k,nr_inodes=64,mode=0755")); err != nil {
		return err
	}
	for _, n := range devices {
		t := d + "/" + n
		if err := step("create /dev/"+n, os.WriteFile(t, nil, 0o666)); err != nil {
			return err
		}
		if err := bindReadOnly("/dev/"+n, t, unix.MS_NOEXEC); err != nil {
			return err
		}
	}
	for _, l := range [][2]string{{"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"}, {"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"}} {
		if err := step("symlink /dev/"+l[0], os.Symlink(l[1], d+"/"+l[0])); err != nil {
			return err
		}
	}
	return step("mkdir /dev/shm", os.Mkdir(d+"/shm", 0o755))
}

// mountScratch mounts one tmpfs of tmpBytes and binds three of its
// directories at /workspace, /tmp and /dev/shm, so that one limit bounds
// everything the program can store. Its pages are charged to the jail's
// memory cgroup as the program writes them.
func mountScratch(root string, tmpBytes int64) error {
	s := root + "/.scratch"
	if err := step("mkdir scratch", os.Mkdir(s, 0o700)); err != nil {
		return err
	}
	if err := step("mount scratch tmpfs", unix.Mount("tmpfs", s, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC,
		fmt.Sprintf("size=%d,nr_inodes=4096,mode=0755", tmpBytes))); err != nil {
		return err
	}
	for _, b := range []struct {
		dir, target string
		mode        os.FileMode
	}{{"workspace", "/workspace", 0o755}, {"tmp", "/tmp", 0o1777}, {"shm", "/dev/shm", 0o1777}} {
		src := s + "/" + b.dir
		if err := step("mkdir "+b.target, os.Mkdir(src, b.mode)); err != nil {
			return err
		}
		if err := step("chmod "+b.target, os.Chmod(src, b.mode)); err != nil { // not masked by the umask
			return err
		}
		t := root + b.target
		if b.target != "/dev/shm" {
			if err := step("mkdir "+b.target, os.Mkdir(t, 0o755)); err != nil {
				return err
			}
		}
		if err := step("bind "+b.target, unix.Mount(src, t, "", unix.MS_BIND, "")); err != nil {
			return err
		}
	}
	if err := step("detach scratch", unix.Unmount(s, unix.MNT_DETACH)); err != nil {
		return err
	}
	if err := step("rmdir scratch", os.Remove(s)); err != nil {
		return err
	}
	// /dev is complete: make it read-only (the device binds keep their own flags).
	return step("remount /dev read-only", unix.Mount("", root+"/dev", "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NOEXEC, ""))
}

// pivotRoot makes root the jail's / and detaches the host's root, so that
// nothing of the host's file system stays reachable (runc's
// pivot_root(".", ".") idiom needs no put_old directory).
func pivotRoot(root string) error {
	if err := step("chdir new root", unix.Chdir(root)); err != nil {
		return err
	}
	if err := step("pivot_root", unix.PivotRoot(".", ".")); err != nil {
		return err
	}
	if err := step("detach old root", unix.Unmount(".", unix.MNT_DETACH)); err != nil {
		return err
	}
	return step("chdir /", unix.Chdir("/"))
}

// loopbackUp brings up lo, the only interface of the jail's network
// namespace, so that programs can use localhost among themselves.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return stageErr("socket for lo", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return stageErr("lo", err)
	}
	ifr.SetUint16(unix.IFF_UP | unix.IFF_LOOPBACK | unix.IFF_RUNNING)
	return step("bring lo up", unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr))
}

// execPython ends the init stage. The order matters and each step is as
// late as it can be:
//  1. on cgroup v1, move this thread into the jail's cgroup by writing "0"
//     to each hierarchy's `tasks` file of join (opened by the parent:
//     cgroup.Group.JoinFiles; on v2 the parent has moved the process and
//     join is empty), then unshare(CLONE_NEWCGROUP), so that the program
//     sees that cgroup as its root;
//  2. drop every capability (bounding, ambient, then effective, permitted
//     and inheritable sets; the bounding set needs CAP_SETPCAP, so it goes
//     first);
//  3. mark every fd but 0, 1, 2 close-on-exec (the sync socket included:
//     its closing at exec is what tells the parent that the exec
//     succeeded), except the report channel on fd 3 when the spec has one;
//  4. no_new_privs, then the seccomp filter (it must be last: it may forbid
//     the calls above), whose listener goes to the parent;
//  5. execve.
//
// It returns only on failure.
func execPython(c fdConn, cfg *runConfig, filter *seccomp.Program, join []int) error {
	// Only this thread moves; the runtime's other threads, which run none
	// of this code, stay where they are until the exec ends them, and
	// python3's memory is charged to the group of the thread that execs it.
	// A jail never runs outside its cgroup: any failure ends the stage.
	// The fds were opened by root (the kernel checks the opener, not the
	// writer): each is closed here, before anything of the program runs
	// (they are close-on-exec as well), so the program never holds one.
	for _, fd := range join {
		_, err := fdConn(fd).Write([]byte("0"))
		unix.Close(fd)
		if err != nil {
			return stageErr("join cgroup", err)
		}
	}
	if err := step("unshare cgroup namespace", unix.Unshare(unix.CLONE_NEWCGROUP)); err != nil {
		return err
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	workspace := -1
	if cfg.Collect {
		// The parent reads the files out of it after the program ended;
		// an O_PATH fd gives it nothing but a starting point for openat2.
		fd, err := unix.Open("/workspace", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return stageErr("open /workspace", err)
		}
		workspace = fd
	}
	if err := step("close_range", unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)); err != nil {
		return err
	}
	if cfg.Report {
		// The one fd the program gets beyond stdio.
		if _, err := unix.FcntlInt(reportFd, unix.F_SETFD, 0); err != nil {
			return stageErr("keep report channel open", err)
		}
	}
	// no_new_privs and the filter (Install sets both). From here this
	// thread may only make calls the policy allows (sendmsg, close, execve:
	// seccomp's TestPolicyAllowsInitTail), and the listener must never
	// reach the jail: whoever holds it could let forbidden calls run.
	listener, err := seccomp.Install(filter)
	if err != nil {
		return stageErr("seccomp", err)
	}
	var hdr [5]byte
	hdr[0] = msgSeccomp
	fds := []int{listener}
	if workspace >= 0 {
		fds = append(fds, workspace)
	}
	err = unix.Sendmsg(int(c), hdr[:], unix.UnixRights(fds...), nil, 0)
	unix.Close(listener)
	if err != nil {
		return stageErr("send seccomp listener", err)
	}
	return step("exec "+cfg.Argv[0], unix.Exec(cfg.Argv[0], cfg.Argv, cfg.Env))
}

func dropCapabilities() error {
	for c := 0; c <= 63; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			if err == unix.EINVAL { // past the kernel's last capability
				break
			}
			return stageErr(fmt.Sprintf("drop capability %d from the bounding set", c), err)
		}
	}
	if err := step("clear ambient capabilities", unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)); err != nil {
		return err
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	return step("capset", unix.Capset(&hdr, &data[0]))
}
