package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"agentjail/cgroup"
	"agentjail/daemon"
	"agentjail/daemon/harness"
	"agentjail/nsjail"
)

// checkItem is one line of `agentjail check`.
type checkItem struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

type checkReport struct {
	OK           bool               `json:"ok"`
	Kernel       string             `json:"kernel"`
	Cgroup       string             `json:"cgroup"`
	Controllers  []string           `json:"controllers"`
	Python       string             `json:"python"`
	Config       string             `json:"config"` // the configuration whose environments were checked ("" for the built-in one)
	Environments []environmentCheck `json:"environments"`
	Checks       []checkItem        `json:"checks"`
}

// environmentCheck is what `agentjail check` found of one environment.
type environmentCheck struct {
	Name           string            `json:"name"`
	Python         string            `json:"python"`
	PythonVersion  string            `json:"python_version"`   // "" when it did not run
	ReadOnlyMounts []string          `json:"read_only_mounts"` // each checked as the daemon does at start-up
	Imports        map[string]string `json:"imports"`          // module -> "" when it imported, else its error: the preload modules and numpy
	Error          string            `json:"error,omitempty"`  // why the environment cannot run, if it cannot
}

// checkedImports are imported in every environment's trial besides its
// preload: the library agents use most, to say whether it works.
var checkedImports = []string{"numpy"}

func cmdCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agentjail check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	python := fs.String("python", nsjail.DefaultPython, "interpreter to check")
	config := fs.String("config", "", "the configuration whose environments to check (default "+daemon.DefaultConfigPath+" when it exists)")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agentjail check: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	cfg, path, err := localConfig(*config)
	if err != nil {
		fmt.Fprintf(stderr, "agentjail check: %v\n", err)
		return exitUsage
	}
	rep := runChecks(*python)
	rep.Config = path
	addApparmorCheck(rep)
	rep.Checks = append(rep.Checks, pidsCheck(cfg))
	if rep.OK {
		checkEnvironments(rep, cfg, path)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		for _, c := range rep.Checks {
			mark := "ok  "
			if !c.OK {
				mark = "FAIL"
			}
			fmt.Fprintf(stdout, "%s %-22s %s\n", mark, c.Name, c.Detail)
			if c.Fix != "" {
				fmt.Fprintf(stdout, "     %-22s fix: %s\n", "", c.Fix)
			}
		}
		envFailed := slices.ContainsFunc(rep.Environments, func(e environmentCheck) bool { return e.Error != "" || !importsOK(e) })
		switch {
		case rep.OK:
			fmt.Fprintln(stdout, "this host can run jails")
		case envFailed && hostOK(rep):
			fmt.Fprintln(stdout, "this host can run jails, but not every environment works: see the FAIL lines")
		default:
			fmt.Fprintln(stdout, "this host cannot run jails yet: see the FAIL lines")
		}
	}
	if !rep.OK {
		return 1
	}
	return 0
}

func runChecks(python string) *checkReport {
	rep := &checkReport{Python: python, Controllers: []string{}, Environments: []environmentCheck{}}
	add := func(name string, ok bool, detail, fix string) {
		rep.Checks = append(rep.Checks, checkItem{Name: name, OK: ok, Detail: detail, Fix: fix})
	}
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	rep.Kernel = unix.ByteSliceToString(uts.Release[:])
	add("kernel", true, "Linux "+rep.Kernel, "")
	rep.Checks = append(rep.Checks, archCheck(runtime.GOARCH))

	root := os.Geteuid() == 0
	add("root", root, fmt.Sprintf("euid %d", os.Geteuid()), map[bool]string{false: "run as root (a dedicated host uid is mapped for each jail)"}[root])

	n := strings.TrimSpace(readString("/proc/sys/user/max_user_namespaces"))
	add("user namespaces", n != "" && n != "0", "user.max_user_namespaces = "+n, map[bool]string{true: "sysctl -w user.max_user_namespaces=10000"}[n == "0" || n == ""])

	var cgOK bool
	if root {
		m, err := cgroup.Open("agentjail")
		if err != nil {
			add("cgroups", false, err.Error(), "run under a delegated cgroup (systemd Delegate=yes) or fix the error above")
		} else {
			rep.Cgroup = string(m.Version())
			rep.Controllers = m.Controllers()
			have := strings.Join(rep.Controllers, " ")
			cgOK = strings.Contains(have, "memory") && strings.Contains(have, "pids") && strings.Contains(have, "cpu")
			add("cgroups", cgOK, fmt.Sprintf("%s, controllers: %s", m.Version(), have), map[bool]string{false: "enable the memory, pids and cpu controllers"}[cgOK])
			peak := "memory.max_usage_in_bytes (resettable)"
			if m.Version() == cgroup.V2 {
				switch {
				case kernelAtLeast(rep.Kernel, 6, 12):
					peak = "memory.peak (resettable)"
				case kernelAtLeast(rep.Kernel, 5, 19):
					peak = "memory.peak (since the jail's cgroup was created; precise because the jail is attached just before exec)"
				default:
					peak = "none: this kernel has no memory.peak, results say peak_memory_bytes: null"
				}
			}
			add("peak memory", true, peak, "")
			if m.AttachWaits() {
				add("cgroup attach", true, "v2 without favordynmods: moving each jail into its cgroup waits an RCU grace period "+
					"(several ms) when jails are not started back to back",
					"mount -o remount,favordynmods /sys/fs/cgroup (Linux 6.0+; newer kernels also take cgroup_favordynmods=true at boot)")
			} else {
				add("cgroup attach", true, map[cgroup.Version]string{cgroup.V1: "v1: each jail's thread moves itself into its cgroup (no wait for the kernel's migration lock where the kernel has the single-thread migration optimisation)",
					cgroup.V2: "v2 with favordynmods: no wait for the kernel's migration lock"}[m.Version()], "")
			}
		}
	} else {
		add("cgroups", false, "not checked: needs root", "run as root")
	}

	actions := readString("/proc/sys/kernel/seccomp/actions_avail")
	seccompOK := strings.Contains(actions, "user_notif")
	add("seccomp", seccompOK, "actions: "+strings.TrimSpace(actions), map[bool]string{false: "a kernel with seccomp user notification (Linux 5.0+)"}[seccompOK])

	pyErr := nsjail.CheckPython(python)
	add("python", pyErr == nil, python+" "+errText(pyErr, "is an executable under /usr"), errText(pyErr, ""))

	rep.OK = true
	for _, c := range rep.Checks {
		rep.OK = rep.OK && c.OK
	}
	if rep.OK {
		ok, detail := trialRun(python)
		add("trial run", ok, detail, map[bool]string{false: "see the error; `agentjail run -c pass` shows the same"}[ok])
		rep.OK = ok
	}
	return rep
}

// checkEnvironments checks each environment of cfg as the daemon does at
// start-up (its mounts, its python), then imports its preload modules and
// numpy in a trial jail of it: a preload module that does not import, or
// numpy installed but failing, is a failure; numpy not installed is not.
func checkEnvironments(rep *checkReport, cfg *daemon.Config, path string) {
	r, err := nsjail.NewRunner()
	if err != nil {
		rep.Checks = append(rep.Checks, checkItem{Name: "environments", Detail: err.Error()})
		rep.OK = false
		return
	}
	envs := cfg.Policy().Environments
	for _, name := range cfg.EnvironmentNames() {
		e := envs[name]
		ec := environmentCheck{Name: name, Python: e.Python, ReadOnlyMounts: nonNilStrings(e.ReadOnlyMounts), Imports: map[string]string{}}
		item := checkItem{Name: "environment " + name, OK: true}
		fail := func(detail, fix string) {
			item.OK, item.Detail, item.Fix, ec.Error = false, detail, fix, detail
		}
		if err := cfg.CheckEnvironment(name, path, ""); err != nil {
			fail(err.Error(), "fix the environment in "+cmp.Or(path, "the configuration"))
		} else if etc, err := nsjail.HostEtc(e.ReadOnlyMounts); err != nil {
			fail("the host's /etc: "+err.Error(), "")
		} else {
			e.Etc = etc
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			modules := append(slices.Clone(e.Preload), checkedImports...)
			version, imports, err := e.TryImports(ctx, r, cfg.TrialLimits(), modules)
			cancel()
			if err != nil {
				fail(err.Error(), "`agentjail run --config ... --environment "+name+" -c pass` shows the same")
			} else {
				ec.PythonVersion, ec.Imports = version, imports
				item.Detail = environmentDetail(e, version, imports)
				for _, m := range e.Preload {
					if msg := imports[m]; msg != "" {
						fail(item.Detail, fmt.Sprintf("preload %q does not import: install it where %s finds it, or remove it from preload", m, e.Python))
					}
				}
				if msg := imports["numpy"]; msg != "" && !strings.HasPrefix(msg, "ModuleNotFoundError") {
					fail(item.Detail, "numpy is installed but does not import in a jail: see its error")
				}
			}
		}
		rep.Environments = append(rep.Environments, ec)
		rep.Checks = append(rep.Checks, item)
		rep.OK = rep.OK && item.OK
	}
}

// hostOK tells whether every check but the environments' passed.
func hostOK(rep *checkReport) bool {
	for _, c := range rep.Checks {
		if !c.OK && !strings.HasPrefix(c.Name, "environment ") {
			return false
		}
	}
	return true
}

// importsOK tells whether an environment's imports all worked, numpy not
// being installed aside.
func importsOK(e environmentCheck) bool {
	for m, msg := range e.Imports {
		if msg != "" && !(slices.Contains(checkedImports, m) && strings.HasPrefix(msg, "ModuleNotFoundError")) {
			return false
		}
	}
	return true
}

// environmentDetail is one line about an environment that ran.
func environmentDetail(e *daemon.Environment, version string, imports map[string]string) string {
	mounts := "no mounts"
	if len(e.ReadOnlyMounts) > 0 {
		mounts = "mounts " + strings.Join(e.ReadOnlyMounts, ", ")
	}
	var parts []string
	for _, m := range slices.Sorted(maps.Keys(imports)) {
		switch msg := imports[m]; {
		case msg == "":
			parts = append(parts, m+" imports")
		case strings.HasPrefix(msg, "ModuleNotFoundError") && slices.Contains(checkedImports, m) && !slices.Contains(e.Preload, m):
			parts = append(parts, m+" not installed (Debian's python3-"+m+": scripts/deps --scientific)")
		default:
			parts = append(parts, m+": "+msg)
		}
	}
	return fmt.Sprintf("python %s (%s), %s; %s", version, e.Python, mounts, strings.Join(parts, "; "))
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// trialRun runs a tiny program in a real jail: the only proof that counts.
func trialRun(python string) (bool, string) {
	r, err := nsjail.NewRunner()
	if err != nil {
		return false, err.Error()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := r.Run(ctx, &nsjail.Spec{Python: python, Program: []byte("import os; print(os.getuid())"), Limits: nsjail.DefaultLimits()})
	if err != nil && res == nil {
		return false, err.Error()
	}
	if res.Status != nsjail.StatusOK || !bytes.Equal(res.Stdout, []byte("1000\n")) {
		return false, fmt.Sprintf("status %s, stdout %q, stderr %q", res.Status, res.Stdout, res.Stderr)
	}
	return true, fmt.Sprintf("print(os.getuid()) gave 1000 in %s wall, peak %s", harness.Duration(res.WallTime), harness.Bytes(res.PeakMemoryBytes))
}

func readString(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

func errText(err error, ok string) string {
	if err != nil {
		return err.Error()
	}
	return ok
}

// kernelAtLeast compares a release string like "6.1.0-18-amd64".
func kernelAtLeast(release string, major, minor int) bool {
	var a, b int
	fmt.Sscanf(release, "%d.%d", &a, &b)
	return a > major || a == major && b >= minor
}
