package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"agentjail/nsjail"
)

// probeProgram runs in one trial jail of each environment when the daemon
// starts. It reads the modules to preload (JSON, stdin), imports each, and
// prints what it found: python's version, each module's import error ("":
// none), the top-level modules beyond the standard library, and whether it
// left matplotlib's font cache in /workspace for the daemon to share.
const probeProgram = `import importlib, json, os, pkgutil, shutil, sys
want = json.loads(sys.stdin.read())
out = {"python": "%d.%d.%d" % sys.version_info[:3], "preload": {}, "fontlist": ""}
for m in want:
    try:
        importlib.import_module(m)
        out["preload"][m] = ""
    except BaseException as e:
        out["preload"][m] = ("%s: %s" % (type(e).__name__, e))[:1000]
std = set(sys.stdlib_module_names)
out["packages"] = sorted({m.name for m in pkgutil.iter_modules() if m.name not in std and not m.name.startswith("_")})
if "matplotlib" in out["packages"]:
    try:
        import matplotlib, matplotlib.font_manager as fm
        name = "fontlist-v%s.json" % fm.FontManager.__version__
        shutil.copyfile(os.path.join(matplotlib.get_cachedir(), name), "/workspace/fontlist.json")
        out["fontlist"] = name
    except Exception as e:
        out["fontlist_error"] = "%s: %s" % (type(e).__name__, e)
print(json.dumps(out))
`

// probeReport is what probeProgram prints.
type probeReport struct {
	Python        string            `json:"python"`
	Preload       map[string]string `json:"preload"`
	Packages      []string          `json:"packages"`
	Fontlist      string            `json:"fontlist"`
	FontlistError string            `json:"fontlist_error"`
}

// maxFontlistBytes bounds the font cache shared through /etc.
const maxFontlistBytes = 1 << 20

// Probe runs a trial jail of the environment (cold, with the limits l;
// a zygote's memory is fair: what it finds is what a zygote will hold),
// and records what it found: python's version, the packages beyond the
// standard library, and matplotlib's font cache, built once here and
// shared read-only through its jails' /etc from now on (e.Etc is
// replaced: call Probe before any jail of it is started). It fails, naming
// the module and the error, when a preload module does not import.
func (e *Environment) Probe(ctx context.Context, jl Jailer, l nsjail.Limits) error {
	rep, files, err := e.trial(ctx, jl, l, e.Preload)
	if err != nil {
		return err
	}
	var bad []string
	for _, m := range e.Preload {
		if msg := rep.Preload[m]; msg != "" {
			bad = append(bad, fmt.Sprintf("%q does not import: %s", m, msg))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("preload: %s (install it where the environment's python finds it, or remove it from preload)", strings.Join(bad, "; "))
	}
	e.PythonVersion, e.Packages = rep.Python, rep.Packages
	if rep.Fontlist != "" && len(files) == 1 && files[0].Error == "" && !strings.ContainsAny(rep.Fontlist, "/\x00") {
		e.Etc = withFontlist(e.Etc, rep.Fontlist, files[0].Content)
	}
	return nil
}

// TryImports runs a trial jail of the environment that imports each of
// modules (`agentjail check`): python's version, and each module's import
// error ("" when it imported).
func (e *Environment) TryImports(ctx context.Context, jl Jailer, l nsjail.Limits, modules []string) (version string, errs map[string]string, err error) {
	rep, _, err := e.trial(ctx, jl, l, modules)
	if err != nil {
		return "", nil, err
	}
	return rep.Python, rep.Preload, nil
}

// trial runs probeProgram in a jail of the environment.
func (e *Environment) trial(ctx context.Context, jl Jailer, l nsjail.Limits, modules []string) (*probeReport, []nsjail.CollectedFile, error) {
	preload, _ := json.Marshal(append([]string{}, modules...))
	spec := &nsjail.Spec{
		Program: []byte(probeProgram), ProgramName: "agentjail_probe.py",
		Python: e.Python, ReadOnlyMounts: e.ReadOnlyMounts, Etc: e.Etc, DefaultEnv: e.Env,
		Stdin: preload, Limits: l, Start: nsjail.StartCold,
		Collect: []string{"fontlist.json"}, CollectLimits: nsjail.CollectLimits{FileBytes: maxFontlistBytes, TotalBytes: maxFontlistBytes, Files: 1},
	}
	res, err := jl.Run(ctx, spec)
	if err != nil {
		return nil, nil, fmt.Errorf("its trial jail could not start: %w", err)
	}
	var rep probeReport
	if res.Status != nsjail.StatusOK || res.ExitCode != 0 || json.Unmarshal(res.Stdout, &rep) != nil || rep.Python == "" {
		what := fmt.Sprintf("exit code %d", res.ExitCode)
		if res.KillReason != nsjail.KillNone {
			what = "killed: " + string(res.KillReason)
		}
		return nil, nil, fmt.Errorf("python did not run in its trial jail (%s): %s", what, lastLines(res.Stderr, 5))
	}
	return &rep, res.Files, nil
}

// withFontlist is etc with matplotlib's font cache added (a new Etc:
// one in use never changes).
func withFontlist(etc *nsjail.Etc, name string, content []byte) *nsjail.Etc {
	n := &nsjail.Etc{MatplotlibCache: name}
	if etc != nil {
		n.Entries = slices.Clone(etc.Entries)
	}
	n.Entries = append(n.Entries, nsjail.EtcEntry{Path: "matplotlib", Dir: true}, nsjail.EtcEntry{Path: "matplotlib/" + name, Content: content})
	return n
}

// lastLines is the end of a program's stderr, for a message.
func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	s := strings.Join(lines, " | ")
	if s == "" {
		return "(no output)"
	}
	return s
}

// TrialLimits are the limits of an environment's trial jail: a zygote's
// memory, time for heavy imports.
func (c *Config) TrialLimits() nsjail.Limits {
	l := c.defaultLimits()
	l.MemoryBytes = max(l.MemoryBytes, c.Jail.ZygoteMemoryBytes)
	l.WallTime, l.CPUTime = max(l.WallTime, 2*time.Minute), max(l.CPUTime, time.Minute)
	return l
}

// ProbeAll probes every environment (Probe), one after another, and
// returns every failure at once, each naming its environment's key.
func (c *Config) ProbeAll(ctx context.Context, jl Jailer, envs map[string]*Environment) error {
	l := c.TrialLimits()
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(envs)) {
		if err := envs[name].Probe(ctx, jl, l); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.envKey(name), err))
		}
	}
	return errors.Join(errs...)
}
