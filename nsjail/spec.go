package nsjail

import (
	"fmt"
	"os"

	"agentjail/seccomp"
	"path"
	"regexp"
	"strings"
	"time"
)

// Limits bound one run. Every field is required to be positive after
// defaults are applied; DefaultLimits gives the values of docs/contract.md.
type Limits struct {
	MemoryBytes   int64         // cgroup memory limit, swap off; default 256 MiB, at least MinMemoryBytes
	WallTime      time.Duration // wall clock from the exec of python3; default 10 s
	CPUTime       time.Duration // CPU time of all processes in the jail (cgroup accounting); default 10 s
	Pids          int64         // tasks (processes and threads); default 64
	OutputBytes   int64         // stdout+stderr captured; the jail is killed past it; default 1 MiB
	TmpBytes      int64         // size of the scratch tmpfs shared by /workspace, /tmp and /dev/shm; default 64 MiB
	OpenFiles     int64         // RLIMIT_NOFILE; default 256
	FileSizeBytes int64         // RLIMIT_FSIZE; default 32 MiB
	CPUs          float64       // CPU bandwidth in CPUs (cgroup quota); default 1
	DisplayBytes  int64         // the result's display entries, in decoded bytes (the daemon's, not the jail's); default 2 MiB, at most MaxDisplayBytes
}

// MaxDisplayBytes bounds DisplayBytes: the display entries travel on the
// report channel (base64: 4/3 of their bytes), which holds MaxReportBytes,
// with room left there for the test records.
const MaxDisplayBytes = 8 << 20

// MinMemoryBytes is the smallest memory limit accepted: below it python3
// cannot even start, and the answer would be a kill that explains nothing.
const MinMemoryBytes = 16 << 20

// DefaultLimits are the limits of docs/contract.md §3.
func DefaultLimits() Limits {
	return Limits{
		MemoryBytes:   256 << 20,
		WallTime:      10 * time.Second,
		CPUTime:       10 * time.Second,
		Pids:          64,
		OutputBytes:   1 << 20,
		TmpBytes:      64 << 20,
		OpenFiles:     256,
		FileSizeBytes: 32 << 20,
		CPUs:          1,
		DisplayBytes:  2 << 20,
	}
}

// FieldError is a validation error that names the offending field by its
// JSON name in docs/contract.md (e.g. "limits.memory_bytes"), so that the daemon
// can answer 400 with it and the command line can name its flag instead.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

func fieldErr(field, format string, a ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, a...)}
}

// withDefaults fills each zero field with its default (docs/contract.md §3:
// omitted limits take the defaults); a negative one stays, for Validate.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	for _, f := range []struct{ v, def *int64 }{
		{&l.MemoryBytes, &d.MemoryBytes}, {&l.Pids, &d.Pids}, {&l.OutputBytes, &d.OutputBytes}, {&l.TmpBytes, &d.TmpBytes},
		{&l.OpenFiles, &d.OpenFiles}, {&l.FileSizeBytes, &d.FileSizeBytes}, {&l.DisplayBytes, &d.DisplayBytes},
	} {
		if *f.v == 0 {
			*f.v = *f.def
		}
	}
	if l.WallTime == 0 {
		l.WallTime = d.WallTime
	}
	if l.CPUTime == 0 {
		l.CPUTime = d.CPUTime
	}
	if l.CPUs == 0 {
		l.CPUs = d.CPUs
	}
	return l
}

// Validate checks that every limit is usable.
func (l Limits) Validate() error {
	switch {
	case l.MemoryBytes < MinMemoryBytes:
		return fieldErr("limits.memory_bytes", "must be at least 16 MiB (python3 needs about 10 MiB to start), got %d bytes", l.MemoryBytes)
	case l.WallTime < time.Millisecond:
		return fieldErr("limits.wall_time_ms", "must be at least 1 ms, got %v", l.WallTime)
	case l.CPUTime < time.Millisecond:
		return fieldErr("limits.cpu_time_ms", "must be at least 1 ms, got %v", l.CPUTime)
	case l.Pids < 1:
		return fieldErr("limits.pids", "must be at least 1, got %d", l.Pids)
	case l.OutputBytes < 1:
		return fieldErr("limits.output_bytes", "must be at least 1, got %d", l.OutputBytes)
	case l.TmpBytes < 4096:
		return fieldErr("limits.tmp_bytes", "must be at least 4096, got %d", l.TmpBytes)
	case l.OpenFiles < 16:
		return fieldErr("limits.open_files", "must be at least 16 (python3 needs a few to start), got %d", l.OpenFiles)
	case l.FileSizeBytes < 1:
		return fieldErr("limits.file_size_bytes", "must be at least 1, got %d", l.FileSizeBytes)
	case l.DisplayBytes < 1 || l.DisplayBytes > MaxDisplayBytes:
		return fieldErr("limits.display_bytes", "must be at least 1 and at most %d (8 MiB), got %d", MaxDisplayBytes, l.DisplayBytes)
	case !(l.CPUs > 0) || l.CPUs > 1024:
		return fieldErr("limits.cpus", "must be above 0 and at most 1024, got %v", l.CPUs)
	}
	return nil
}

// File is a file written into /workspace before the program starts.
type File struct {
	Path    string // relative to /workspace; no "..", not absolute
	Content []byte
}

// Spec is one run: pure data. Run fills in defaults for zero fields.
type Spec struct {
	ID          string // job id; Run assigns one when empty
	Python      string // host path of the interpreter; default /usr/bin/python3
	Program     []byte // the Python source to run as __main__
	ProgramName string // its file name inside the jail, under /code; default "main.py"
	// CodeFiles are more read-only files under /code, beside the program
	// (the daemon's harness runs the submitted code from /code/main.py).
	CodeFiles []File
	// Report gives the program a private channel to the caller: fd 3 is
	// the write end of a pipe whose content (at most MaxReportBytes) comes
	// back in Result.Report. Without it the program has fds 0, 1, 2 only.
	Report bool
	// Collect are globs of files (relative to /workspace) read after the
	// program ended, without following any symbolic link (Collect).
	Collect       []string
	CollectLimits CollectLimits
	Stdin         []byte // nil: stdin is /dev/null
	Env           map[string]string
	Files         []File
	Limits        Limits // zero fields take DefaultLimits' values
	// OnForbiddenSyscall is what a forbidden system call does: fail with
	// EPERM and be reported (seccomp.ModeErrno, the default), or end the
	// jail with KillSeccomp (seccomp.ModeKill).
	OnForbiddenSyscall seccomp.Mode
	// ReadOnlyMounts are extra host directories bound read-only, nosuid,
	// nodev at the same path (for example a virtualenv). /usr is always bound.
	ReadOnlyMounts []string
	// Etc is what the jail's /etc holds beyond agentjail's own files: what
	// the runtime's libraries resolve through (HostEtc). nil: nothing more.
	Etc *Etc
	// DefaultEnv are the environment's variables: the program gets them
	// unless Env sets the same name. They may set PATH, not HOME or TMPDIR.
	DefaultEnv map[string]string
	// Args are more arguments of the program, after its path.
	Args []string
	// Start is how the interpreter starts: StartWarm, a fork of the zygote
	// of the spec's runtime (Runner.KeepWarm), when one is up; otherwise,
	// and for "" or StartCold, a fresh python3 in a fresh jail.
	Start StartMode
	// Network, when set, is called once the jail's network namespace
	// exists and before the program starts, with that namespace open (a
	// session's: once, at its start); its error fails the set-up. The
	// caller opens the egress proxy's listener there (package egress)
	// and closes it after the run. Without it nothing more is done.
	Network func(netns *os.File) error
}

// DefaultPython is Debian's interpreter; the python3 on a developer's PATH
// may live under /root or /home, which a jail never sees.
const DefaultPython = "/usr/bin/python3"

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// reservedEnv are set by the jail itself and may not be overridden.
var reservedEnv = map[string]bool{"HOME": true, "PATH": true, "TMPDIR": true}

// MaxFilesBytes caps the total size of Spec.Files (they live in tmpfs
// charged to the caller until the jail ends).
const MaxFilesBytes = 64 << 20

// MaxCodeBytes caps the program and its code files together. With the
// other caps (MaxFiles, MaxCodeFiles, MaxEnvBytes, paths of at most
// maxPathBytes) a request always fits in one message to the init stage
// (maxMsg).
const MaxCodeBytes = 64 << 20

// scratchInodes is the inode count of the scratch tmpfs (/workspace, /tmp
// and /dev/shm): what the program may create there, less what the jail's
// set-up made.
const scratchInodes = 4096

// MaxFiles caps Spec.Files and the directories their paths make, together:
// the scratch tmpfs's inodes, less its root, the three directories and a
// reserve, so that every spec Validate passes can be written. MaxCodeFiles
// caps Spec.CodeFiles; the root file system (for /etc, /code and mount
// points) has 1024 inodes.
const (
	MaxFiles     = scratchInodes - 16
	MaxCodeFiles = 512
)

// MaxEnvBytes caps Spec.Env (names, values, "=" and NUL); maxEnvVarBytes
// caps one variable's "name=value", as the kernel does at exec
// (MAX_ARG_STRLEN, 128 KiB with its NUL).
const (
	MaxEnvBytes    = 1 << 20
	maxEnvVarBytes = 128<<10 - 1
)

// maxPathBytes is PATH_MAX less its NUL; maxNameBytes is NAME_MAX, the
// longest name of one file.
const (
	maxPathBytes = 4095
	maxNameBytes = 255
)

// writtenBytes is what the jail's set-up writes for the request: the
// program, its code files and Files.
func (s *Spec) writtenBytes() int64 {
	n := int64(len(s.Program))
	for _, fs := range [][]File{s.CodeFiles, s.Files} {
		for _, f := range fs {
			n += int64(len(f.Content))
		}
	}
	return n
}

// Validate checks the spec without touching the host (Runner.Run checks the
// python path on the host).
func (s *Spec) Validate() error {
	if err := s.Limits.Validate(); err != nil {
		return err
	}
	if s.OnForbiddenSyscall != seccomp.ModeErrno && s.OnForbiddenSyscall != seccomp.ModeKill {
		return fieldErr("on_forbidden_syscall", "must be \"errno\" or \"kill\"")
	}
	if s.ProgramName != "" && !validFileName(s.ProgramName) {
		return fieldErr("program name", "%q must be a plain file name", s.ProgramName)
	}
	if len(s.CodeFiles) > MaxCodeFiles {
		return fieldErr("code files", "%d files, at most %d", len(s.CodeFiles), MaxCodeFiles)
	}
	codeNames := map[string]bool{s.programName(): true}
	code := int64(len(s.Program))
	for _, f := range s.CodeFiles {
		if !validFileName(f.Path) || codeNames[f.Path] {
			return fieldErr("code files", "%q must be a plain file name, given once, other than the program's", f.Path)
		}
		codeNames[f.Path] = true
		code += int64(len(f.Content))
	}
	if code > MaxCodeBytes {
		return fieldErr("program", "the program and its code files are %d bytes together, above the limit (%d bytes)", code, int64(MaxCodeBytes))
	}
	if err := ValidateCollect(s.Collect); err != nil {
		return err
	}
	env := 0
	for k, v := range s.Env {
		if env += len(k) + len(v) + 2; env > MaxEnvBytes {
			return fieldErr("env", "%d bytes or more of variables, at most %d", env, MaxEnvBytes)
		}
		if len(k)+1+len(v) > maxEnvVarBytes {
			return fieldErr("env", "%s is %d bytes with its value, at most %d", k, len(k)+1+len(v), maxEnvVarBytes)
		}
		if !envName.MatchString(k) {
			return fieldErr("env", "%q is not a valid variable name", k)
		}
		if reservedEnv[k] {
			return fieldErr("env", "%s is set by the jail and cannot be overridden", k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return fieldErr("env", "value of %s contains a NUL byte", k)
		}
	}
	if err := ValidateFiles(s.Files, s.Limits.TmpBytes); err != nil {
		return err
	}
	for i, m := range s.ReadOnlyMounts {
		if !path.IsAbs(m) || path.Clean(m) != m || m == "/" {
			return fieldErr(fmt.Sprintf("read_only_mounts[%d]", i), "%q must be a clean absolute path other than /", m)
		}
	}
	return nil
}

// ValidateFiles checks files to be written into /workspace (a Spec's, or a
// session call's): each path relative, without "..", at most 4095 bytes
// and 255 a name, given once, no file where another's path needs a
// directory; at most MaxFiles files and directories together; at most
// MaxFilesBytes and tmpBytes of content. Errors are *FieldError
// "files[i].path" or "files".
func ValidateFiles(files []File, tmpBytes int64) error {
	if len(files) > MaxFiles {
		return fieldErr("files", "%d files, at most %d", len(files), MaxFiles)
	}
	var total int64
	seen := map[string]bool{}
	dirs := map[string]bool{} // the directories the files' paths make
	for i, f := range files {
		field := fmt.Sprintf("files[%d].path", i)
		p, err := CleanRelPath(f.Path)
		if err != nil {
			return fieldErr(field, "%v", err)
		}
		if len(p) > maxPathBytes {
			return fieldErr(field, "%d bytes long, at most %d", len(p), maxPathBytes)
		}
		for _, el := range strings.Split(p, "/") {
			if len(el) > maxNameBytes {
				return fieldErr(field, "a name of %d bytes, at most %d", len(el), maxNameBytes)
			}
		}
		if seen[p] {
			return fieldErr(field, "%q is given twice", f.Path)
		}
		if strings.HasSuffix(f.Path, "/") {
			return fieldErr(field, "%q ends in /: a file needs a name (e.g. %q)", f.Path, p+"/data.txt")
		}
		if dirs[p] {
			return fieldErr(field, "%q is a file here, and a directory of another file's path (files[%d])", f.Path, firstBelow(files[:i], p))
		}
		seen[p] = true
		for d := path.Dir(p); d != "." && !dirs[d]; d = path.Dir(d) {
			if seen[d] {
				return fieldErr(field, "%q needs %q to be a directory, but files[%d] is a file of that name", f.Path, d, firstNamed(files[:i], d))
			}
			dirs[d] = true
		}
		if n := len(seen) + len(dirs); n > MaxFiles {
			return fieldErr("files", "%d files and the %d directories of their paths so far, more than the %d that fit together", len(seen), len(dirs), MaxFiles)
		}
		total += int64(len(f.Content))
	}
	if total > MaxFilesBytes || total > tmpBytes {
		return fieldErr("files", "total size %d bytes is above the limit (%d bytes, and at most limits.tmp_bytes)", total, int64(MaxFilesBytes))
	}
	return nil
}

// programName is the program's file name under /code.
func (s *Spec) programName() string {
	if s.ProgramName == "" {
		return "main.py"
	}
	return s.ProgramName
}

func validFileName(n string) bool {
	return n != "" && n != "." && n != ".." && !strings.ContainsAny(n, "/\x00") && len(n) <= maxNameBytes
}

// CleanRelPath checks a path relative to /workspace given by a client and
// returns it cleaned: not empty, not absolute, no ".." element, no NUL.
func CleanRelPath(p string) (string, error) {
	switch {
	case p == "":
		return "", fmt.Errorf("path is empty")
	case strings.IndexByte(p, 0) >= 0:
		return "", fmt.Errorf("path %q contains a NUL byte", p)
	case path.IsAbs(p):
		return "", fmt.Errorf("path %q must be relative to /workspace", p)
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return "", fmt.Errorf("path %q must not have a \"..\" element", p)
		}
	}
	c := path.Clean(p)
	if c == "." {
		return "", fmt.Errorf("path %q names the workspace itself", p)
	}
	return c, nil
}

// firstBelow is the index of the first of files whose cleaned path lies
// below dir (-1: none).
func firstBelow(files []File, dir string) int {
	for i, f := range files {
		if p, err := CleanRelPath(f.Path); err == nil && strings.HasPrefix(p, dir+"/") {
			return i
		}
	}
	return -1
}

// firstNamed is the index of the first of files whose cleaned path is p
// (-1: none).
func firstNamed(files []File, p string) int {
	for i, f := range files {
		if c, err := CleanRelPath(f.Path); err == nil && c == p {
			return i
		}
	}
	return -1
}
