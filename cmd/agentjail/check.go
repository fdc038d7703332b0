package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"agentjail/cgroup"
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
	OK          bool        `json:"ok"`
	Kernel      string      `json:"kernel"`
	Cgroup      string      `json:"cgroup"`
	Controllers []string    `json:"controllers"`
	Python      string      `json:"python"`
	Checks      []checkItem `json:"checks"`
}

func cmdCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agentjail check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	python := fs.String("python", nsjail.DefaultPython, "interpreter to check")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agentjail check: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	rep := runChecks(*python)
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
		if rep.OK {
			fmt.Fprintln(stdout, "this host can run jails")
		} else {
			fmt.Fprintln(stdout, "this host cannot run jails yet: see the FAIL lines")
		}
	}
	if !rep.OK {
		return 1
	}
	return 0
}

func runChecks(python string) *checkReport {
	rep := &checkReport{Python: python, Controllers: []string{}}
	add := func(name string, ok bool, detail, fix string) {
		rep.Checks = append(rep.Checks, checkItem{Name: name, OK: ok, Detail: detail, Fix: fix})
	}
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	rep.Kernel = unix.ByteSliceToString(uts.Release[:])
	add("kernel", true, "Linux "+rep.Kernel, "")

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
