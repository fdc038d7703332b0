package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// This file holds the pure parsers of the kernel files the package reads.
// They take the bytes of one read and never touch the file system, so they
// are unit-tested on fake contents on any machine.

// errNoKey reports that a flat-keyed file lacks the wanted key.
var errNoKey = errors.New("key not found")

// keyedValue returns the value of key in a flat-keyed file ("key value\n"
// lines: memory.oom_control, memory.events, pids.events, cpu.stat, ...).
func keyedValue(data []byte, key string) (int64, error) {
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		sp := bytes.IndexByte(line, ' ')
		if sp < 0 || string(line[:sp]) != key {
			continue
		}
		v, err := strconv.ParseInt(string(bytes.TrimSpace(line[sp+1:])), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing %q: %w", key, err)
		}
		return v, nil
	}
	return 0, fmt.Errorf("%q: %w", key, errNoKey)
}

// parseInt parses a single-value file (memory.max_usage_in_bytes,
// memory.peak, cpuacct.usage, pids.peak, pids.max, ...). The word "max"
// (v2 for "no limit") parses as -1.
func parseInt(data []byte) (int64, error) {
	s := string(bytes.TrimSpace(data))
	if s == "max" {
		return -1, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parsing %q: %w", s, err)
	}
	return v, nil
}

// parseOOMControl returns the oom_kill counter of a v1 memory.oom_control
// file (kernel ≥ 4.13).
func parseOOMControl(data []byte) (int64, error) {
	return keyedValue(data, "oom_kill")
}

// memEvents are the counters of a v2 memory.events file we care about.
type memEvents struct {
	OOMKill      int64 // processes killed by any OOM killer
	OOMGroupKill int64 // group kills (memory.oom.group); kernel ≥ 5.17
	HasGroupKill bool  // the file has an oom_group_kill line
}

// parseMemoryEvents parses a v2 memory.events file.
func parseMemoryEvents(data []byte) (memEvents, error) {
	var ev memEvents
	var err error
	if ev.OOMKill, err = keyedValue(data, "oom_kill"); err != nil {
		return ev, err
	}
	switch ev.OOMGroupKill, err = keyedValue(data, "oom_group_kill"); {
	case err == nil:
		ev.HasGroupKill = true
	case errors.Is(err, errNoKey):
	default:
		return ev, err
	}
	return ev, nil
}

// oomKillsSince counts OOM kills between two readings of memory.events.
// A group kill (memory.oom.group=1, which Create sets) kills every process
// of the group and bumps oom_kill once per process killed, the chosen
// victim twice (6.1: the victim is killed, then killed again with the rest
// of the group; one python3 alone gives oom_kill 2, as does /proc/vmstat),
// but oom_group_kill once: it counts as one kill. Kernels without
// oom_group_kill count oom_kill.
func oomKillsSince(base, now memEvents) int64 {
	if now.HasGroupKill {
		if d := now.OOMGroupKill - base.OOMGroupKill; d > 0 {
			return d
		}
	}
	return nonNegative(now.OOMKill - base.OOMKill)
}

// parsePidsEvents returns the "max" counter of a pids.events file: forks
// refused because the limit was hit (v1 and v2; v2 ≥ 6.10 counts hits of
// this group's own limit, which for a leaf jail is the same thing).
func parsePidsEvents(data []byte) (int64, error) {
	return keyedValue(data, "max")
}

// parseCPUStatUsage returns usage_usec of a v2 cpu.stat file.
func parseCPUStatUsage(data []byte) (int64, error) {
	return keyedValue(data, "usage_usec")
}

// parsePids parses cgroup.procs: one decimal pid per line.
func parsePids(data []byte) ([]int, error) {
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		p, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("parsing pid %q: %w", f, err)
		}
		pids = append(pids, p)
	}
	return pids, nil
}

// procCgroup is the content of /proc/<pid>/cgroup.
type procCgroup struct {
	V1         map[string]string // v1 controller (or "name=xxx") -> path
	Unified    string            // path in the v2 hierarchy ("0::/path")
	HasUnified bool
}

// parseProcCgroup parses /proc/<pid>/cgroup: "hierarchy-ID:controllers:path"
// lines. v1 lines list comma-separated controllers (co-mounted hierarchies
// give one line for several controllers); the v2 line is "0::/path".
func parseProcCgroup(data []byte) (procCgroup, error) {
	pc := procCgroup{V1: map[string]string{}}
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" {
			continue
		}
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || !strings.HasPrefix(parts[2], "/") {
			return pc, fmt.Errorf("parsing cgroup line %q: malformed", line)
		}
		if parts[0] == "0" && parts[1] == "" {
			pc.Unified, pc.HasUnified = parts[2], true
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c != "" {
				pc.V1[c] = parts[2]
			}
		}
	}
	return pc, nil
}

// mount is one cgroup file system of /proc/self/mountinfo.
type mount struct {
	Point       string   // where it is mounted, e.g. /sys/fs/cgroup/memory
	Root        string   // the cgroup of the hierarchy it shows, usually "/"
	Type        string   // "cgroup" (v1) or "cgroup2"
	Controllers []string // v1: controllers of the hierarchy (from super options)
	// FavorDynmods: mounted with favordynmods (Linux 6.0+), which keeps
	// the kernel's global cgroup migration lock in the mode whose writers
	// do not wait for an RCU grace period.
	FavorDynmods bool
}

// parseMountinfo returns the cgroup and cgroup2 mounts of a
// /proc/self/mountinfo file (see proc(5): the optional fields end with a
// "-" separator, followed by fstype, source and super options).
func parseMountinfo(data []byte) ([]mount, error) {
	var out []mount
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" {
			continue
		}
		fields := strings.Split(line, " ")
		sep := -1
		for i := 6; i < len(fields); i++ {
			if fields[i] == "-" {
				sep = i
				break
			}
		}
		if len(fields) < 10 || sep < 0 || sep+3 >= len(fields) {
			return nil, fmt.Errorf("parsing mountinfo line %q: malformed", line)
		}
		typ := fields[sep+1]
		if typ != "cgroup" && typ != "cgroup2" {
			continue
		}
		m := mount{Point: unescapeMount(fields[4]), Root: unescapeMount(fields[3]), Type: typ}
		for _, o := range strings.Split(fields[sep+3], ",") {
			switch {
			case o == "favordynmods":
				m.FavorDynmods = true
			case typ != "cgroup", o == "rw", o == "ro", o == "":
			case !strings.Contains(o, "=") || strings.HasPrefix(o, "name="):
				m.Controllers = append(m.Controllers, o)
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// unescapeMount undoes the octal escapes (\040 for space...) of mountinfo.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cgroupDir maps a cgroup path (from /proc/self/cgroup) to its directory
// under a mount whose root is mountRoot (not "/" inside some containers).
func cgroupDir(m mount, cgPath string) (string, error) {
	root := strings.TrimSuffix(m.Root, "/")
	switch {
	case root == "":
		return filepath.Join(m.Point, cgPath), nil
	case cgPath == root:
		return filepath.Clean(m.Point), nil
	case strings.HasPrefix(cgPath, root+"/"):
		return filepath.Join(m.Point, strings.TrimPrefix(cgPath, root)), nil
	}
	return "", fmt.Errorf("locating cgroup %q: not below the root %q of the mount at %s", cgPath, m.Root, m.Point)
}

func nonNegative(v int64) int64 {
	if v < 0 {
		return 0
	}
	return v
}

// subsystemPath is the path containerd's cgroup1 needs for directory dir
// of controller name mounted at mountPoint: its subsystems are rooted at
// <dir(mountPoint)>/<name> and join the path to that. For the usual
// /sys/fs/cgroup/<name> mounts it is the plain cgroup path; for a
// co-mounted /sys/fs/cgroup/cpu,cpuacct it climbs out with "..", which
// filepath.Join resolves.
func subsystemPath(mountPoint, name, dir string) (string, error) {
	rel, err := filepath.Rel(filepath.Join(filepath.Dir(mountPoint), name), dir)
	if err != nil {
		return "", err
	}
	return "/" + rel, nil
}
