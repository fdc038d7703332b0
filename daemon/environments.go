package daemon

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"

	"agentjail/nsjail"
)

// Environments. A configuration names Python runtimes, [environments.NAME]:
// an interpreter, the host directories it needs bound read-only, the
// variables every run of it gets, and the modules its warm interpreter
// imports ahead. A request names one ("environment", default "default").
// The older [jail] python and read_only_mounts are the environment
// "default" when the file has no [environments.default]; a file that sets
// both is refused, and says which to keep.

// DefaultEnvironment is the environment of a request that names none.
const DefaultEnvironment = "default"

var (
	environmentName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	moduleName      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)
	envVarName      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// normalizeEnvironments makes the environment "default" of the older
// [jail] keys where the file has no [environments.default]; set tells
// whether the file set a key (so that a default of jail.python does not
// count as set).
func (c *Config) normalizeEnvironments(set func(key string) bool) []*ConfigError {
	old := set("jail.python") || set("jail.read_only_mounts")
	if _, ok := c.Environments[DefaultEnvironment]; ok {
		if old {
			return []*ConfigError{{Key: "jail.python", Msg: "the file sets both [jail] python/read_only_mounts and [environments.default]: they are the same " +
				"environment; keep [environments.default] and remove jail.python and jail.read_only_mounts (their older spelling)"}}
		}
		return nil
	}
	if c.Environments == nil {
		c.Environments = map[string]EnvironmentConfig{}
	}
	c.Environments[DefaultEnvironment] = EnvironmentConfig{Python: c.Jail.Python, ReadOnlyMounts: c.Jail.ReadOnlyMounts, Env: map[string]string{}, Preload: []string{}}
	c.oldSpelling = old
	return nil
}

// validateEnvironments checks what can be checked without the host: the
// names, and each value's form. CheckHost checks the rest.
func (c *Config) validateEnvironments(bad func(key, format string, a ...any)) {
	for _, name := range slices.Sorted(maps.Keys(c.Environments)) {
		e := c.Environments[name]
		key := c.envKey(name)
		if !environmentName.MatchString(name) {
			bad(key, "%q is not an environment name: lower-case letters, digits, _ and -, at most 64, starting with a letter or digit", name)
			continue
		}
		if e.Python == "" && e.ReadOnlyMounts == nil && e.Env == nil && e.Preload == nil {
			bad(key, "is empty: set python (and read_only_mounts, env, preload as needed), or remove the table")
			continue
		}
		if py := e.python(); !path.IsAbs(py) || path.Clean(py) != py {
			bad(key+".python", "%q must be a clean absolute path", py)
		}
		for i, m := range e.ReadOnlyMounts {
			if !path.IsAbs(m) || path.Clean(m) != m || m == "/" {
				bad(fmt.Sprintf("%s.read_only_mounts[%d]", key, i), "%q must be a clean absolute path other than /", m)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(e.Env)) {
			v := e.Env[k]
			switch {
			case !envVarName.MatchString(k):
				bad(key+".env", "%q is not a variable name", k)
			case k == "HOME" || k == "TMPDIR":
				bad(key+".env", "%s is the jail's own (HOME=/workspace, TMPDIR=/tmp) and cannot be set", k)
			case strings.IndexByte(v, 0) >= 0:
				bad(key+".env", "the value of %s holds a NUL byte", k)
			case len(k)+1+len(v) > 128<<10-1:
				bad(key+".env", "%s is longer than a variable may be (128 KiB with its name)", k)
			}
		}
		for i, m := range e.Preload {
			if !moduleName.MatchString(m) {
				bad(fmt.Sprintf("%s.preload[%d]", key, i), "%q is not a module name (e.g. \"numpy\" or \"matplotlib.pyplot\")", m)
			}
		}
	}
}

// envKey is the key of environment name's table in the file: "jail" for
// the environment "default" of the older spelling.
func (c *Config) envKey(name string) string {
	if name == DefaultEnvironment && c.oldSpelling {
		return "jail"
	}
	return "environments." + name
}

func (e EnvironmentConfig) python() string {
	if e.Python == "" {
		return nsjail.DefaultPython
	}
	return e.Python
}

// Environment is one environment as the daemon serves it: its
// configuration, and what start-up found (Probe).
type Environment struct {
	Name           string
	Python         string
	ReadOnlyMounts []string
	Env            map[string]string
	Preload        []string
	// Etc is the /etc of its jails from the start (nsjail.HostEtc); nil
	// is agentjail's own files only. CurrentEtc is the one in use, which
	// gains matplotlib's font cache once it is built (OpenEnvironments).
	// The same pointer for every jail of it: prepared and warm jails are
	// kept per Etc.
	Etc    *nsjail.Etc
	etcNow atomic.Pointer[nsjail.Etc]
	// fontDone is closed once OpenEnvironments' font cache work for it
	// has ended (built and its jails replaced, failed, or not needed).
	fontDone chan struct{}
	// fontCache is what GET /v1/environments says of its font cache
	// (FontCacheState); empty: the daemon did not start that work.
	fontCache atomic.Value
	// What Probe found: python's version ("3.11.2") and the top-level
	// modules it can import beyond the standard library.
	PythonVersion string
	Packages      []string
}

// CurrentEtc is the /etc of the environment's jails now: Etc, or the one
// that replaced it (with the font cache).
func (e *Environment) CurrentEtc() *nsjail.Etc {
	if etc := e.etcNow.Load(); etc != nil {
		return etc
	}
	return e.Etc
}

// The states of an environment's matplotlib font cache (GET
// /v1/environments "font_cache").
const (
	FontCacheNone     = "none"     // no matplotlib, or the cache could not be built: each run that draws builds its own
	FontCacheBuilding = "building" // being built; the jails are replaced once it is
	FontCacheBuilt    = "built"    // built; the jails from now on share it
)

// FontCacheState is one of the FontCache* states ("" before
// OpenEnvironments).
func (e *Environment) FontCacheState() string {
	s, _ := e.fontCache.Load().(string)
	return s
}

// setEtc replaces the environment's /etc for the jails from now on.
func (e *Environment) setEtc(etc *nsjail.Etc) { e.etcNow.Store(etc) }

// environments are the configured environments, not yet probed; a Config
// without any (a zero one) has "default", from [jail].
func (c *Config) environments() map[string]*Environment {
	envs := map[string]*Environment{}
	for name, e := range c.Environments {
		envs[name] = &Environment{Name: name, Python: e.python(), ReadOnlyMounts: e.ReadOnlyMounts, Env: e.Env, Preload: e.Preload}
	}
	if len(envs) == 0 {
		envs[DefaultEnvironment] = &Environment{Name: DefaultEnvironment, Python: cmp.Or(c.Jail.Python, nsjail.DefaultPython), ReadOnlyMounts: c.Jail.ReadOnlyMounts}
	}
	return envs
}

// EnvironmentNames are the configured environments' names, sorted.
func (c *Config) EnvironmentNames() []string { return slices.Sorted(maps.Keys(c.Environments)) }

// forbiddenMounts are host directories no environment may bind, nor
// anything below them: the kernel's and the host's live state (/proc,
// /sys, /dev, /run), everyone's scratch space (/tmp, /var/tmp), the
// host's configuration and secrets (/etc), people's homes (/root,
// /home) and the boot files (/boot). A jail reaches every Unix socket of
// what it binds (read-only is no barrier to connect), and reads every
// file it may.
var forbiddenMounts = []string{"/proc", "/sys", "/dev", "/run", "/tmp", "/var/tmp", "/etc", "/root", "/home", "/boot"}

// CheckHost checks what the environments need from this host, every
// problem at once, each naming its key, the path and the rule: each
// read_only_mounts entry exists, is a directory, is not /, nor is or lies
// below a forbidden one (forbiddenMounts), holds neither the daemon's
// configuration file nor its socket (configPath, socketPath: "" when
// there is none), and neither it nor a directory above it may be written
// by a user other than root (that user could change what every jail
// runs); and each python resolves, on this host, to an executable file
// inside /usr or one of its environment's mounts.
func (c *Config) CheckHost(configPath, socketPath string) error {
	var errs []*ConfigError
	for _, name := range c.EnvironmentNames() {
		errs = append(errs, c.checkEnvironment(name, configPath, socketPath)...)
	}
	return joinErrors(errs)
}

// CheckEnvironment is CheckHost for environment name alone (local mode
// checks the one it runs).
func (c *Config) CheckEnvironment(name, configPath, socketPath string) error {
	return joinErrors(c.checkEnvironment(name, configPath, socketPath))
}

func (c *Config) checkEnvironment(name, configPath, socketPath string) []*ConfigError {
	var errs []*ConfigError
	bad := func(key, format string, a ...any) {
		errs = append(errs, &ConfigError{Key: key, Msg: fmt.Sprintf(format, a...)})
	}
	e := c.Environments[name]
	key := c.envKey(name)
	ok := true
	for i, m := range e.ReadOnlyMounts {
		if err := checkMount(m, configPath, socketPath); err != nil {
			bad(fmt.Sprintf("%s.read_only_mounts[%d]", key, i), "%q: %v", m, err)
			ok = false
		}
	}
	if ok {
		if err := nsjail.CheckPythonIn(e.python(), e.ReadOnlyMounts); err != nil {
			bad(key+".python", "%v", err)
		}
	}
	return errs
}

// checkMount says what is wrong with binding host directory m into every
// jail (CheckHost's rules).
func checkMount(m, configPath, socketPath string) error {
	if !path.IsAbs(m) || path.Clean(m) != m || m == "/" {
		return errors.New("must be a clean absolute path other than /")
	}
	real, err := filepath.EvalSymlinks(m)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("cannot be bound: %w", err)
	}
	for _, p := range []string{m, real} {
		for _, f := range forbiddenMounts {
			if p == f || strings.HasPrefix(p, f+"/") {
				return fmt.Errorf("is or lies below %s, which no jail may see (the host's state, scratch, configuration, homes or boot files)", f)
			}
		}
		if p == "/" {
			return errors.New("resolves to /, the host's whole file system")
		}
	}
	st, err := os.Stat(real)
	if err != nil {
		return fmt.Errorf("cannot be bound: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("is not a directory (a read-only mount binds a directory at the same path)")
	}
	for _, own := range []struct{ what, p string }{{"configuration file", configPath}, {"socket", socketPath}} {
		if own.p == "" {
			continue
		}
		if rp, err := filepath.EvalSymlinks(filepath.Dir(own.p)); err == nil {
			rp = filepath.Join(rp, filepath.Base(own.p))
			if rp == real || strings.HasPrefix(rp, real+"/") {
				return fmt.Errorf("holds the daemon's %s %s", own.what, own.p)
			}
		}
	}
	// The directory and every one above it: a user who may write one of
	// them could replace what it holds under every jail.
	for d := real; ; d = filepath.Dir(d) {
		if err := ownedByRoot(d); err != nil {
			return err
		}
		if d == "/" {
			return nil
		}
	}
}

// ownedByRoot says how directory d may be written by a user other than
// root (or this daemon's): its owner, its group's write bit, its mode's
// other write bit (unless sticky, as /tmp's).
func ownedByRoot(d string) error {
	st, err := os.Stat(d)
	if err != nil {
		return fmt.Errorf("cannot check %s: %w", d, err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	mode := st.Mode().Perm()
	switch {
	case !TrustedOwner(sys.Uid):
		return fmt.Errorf("%s is owned by uid %d, not root: that user could change what every jail of the environment runs", d, sys.Uid)
	case mode&0o020 != 0 && sys.Gid != 0:
		return fmt.Errorf("%s is writable by group %d (mode %04o): its members could change what every jail runs (chmod g-w, or chgrp root)", d, sys.Gid, mode)
	case mode&0o002 != 0 && st.Mode()&os.ModeSticky == 0:
		return fmt.Errorf("%s is writable by every user (mode %04o)", d, mode)
	case mode&0o002 != 0 && d != filepath.Dir(d):
		return fmt.Errorf("%s is writable by every user (mode %04o, sticky): another user could put a directory of their own where the mount is", d, mode)
	}
	return nil
}
