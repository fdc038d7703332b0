package cgroup

// What a group reads: its memory peak and usage, OOM kills, pids events,
// CPU time and the whole Stats of a run. group_linux.go makes, names,
// kills and deletes the group.

import (
	"fmt"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// ResetPeak starts the memory high-water mark afresh, so that the next
// Stats' peak counts from now: on v1 by writing 0 to
// memory.max_usage_in_bytes (the mark drops to the usage now), on v2
// (Linux 6.12+) through the group's own open memory.peak file, whose
// reset is seen through that file only. Where the kernel cannot reset it
// (v2 before 6.12), Stats' PeakMemorySource says "since creation". A
// session resets it before each call, for the call's own peak.
func (g *Group) ResetPeak() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		return fmt.Errorf("resetting the memory peak of group %s: %w", g.name, ErrDeleted)
	}
	return g.resetPeak()
}

// MemoryBytes is the group's memory usage now (v1
// memory.usage_in_bytes, v2 memory.current); -1 without the memory
// controller.
func (g *Group) MemoryBytes() (int64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		return -1, fmt.Errorf("reading memory of group %s: %w", g.name, ErrDeleted)
	}
	if g.memDir == "" {
		return -1, nil
	}
	file := "memory.current"
	if g.m.version == V1 {
		file = "memory.usage_in_bytes"
	}
	var b [smallBuf]byte
	return readParsed(g, g.memDir, file, b[:], parseInt)
}

func (g *Group) resetPeak() error {
	if g.memDir == "" {
		return nil
	}
	if g.m.version == V1 {
		// Through the fd the peak is read by (keptFD opens it for
		// writing too): one open for the reset and the reads.
		fd, err := g.keptFD(g.memDir, peakFileV1)
		if err == nil {
			err = retryEINTR(func() error { _, err := unix.Write(fd, []byte("0")); return err })
		}
		if err != nil {
			return fmt.Errorf("resetting %s: %w", filepath.Join(g.memDir, peakFileV1), err)
		}
		g.peakSrc = peakSourceV1
		return nil
	}
	g.peakSrc = ""
	if !g.m.feat.peak {
		return nil
	}
	g.peakSrc = peakSourceV2Create
	if !g.m.feat.peakReset {
		return nil
	}
	// 6.12+: a write resets the peak seen through this open file only.
	if g.peakFD < 0 {
		fd, err := g.open(g.memDir, "memory.peak", unix.O_RDWR)
		if err != nil {
			return nil // fall back to the peak since creation
		}
		g.peakFD = fd
	}
	if err := retryEINTR(func() error { _, err := unix.Write(g.peakFD, []byte("reset")); return err }); err != nil {
		unix.Close(g.peakFD)
		g.peakFD = -1
		return nil
	}
	g.peakSrc = peakSourceV2
	return nil
}

// readBaseline records the counters Stats reports deltas of. Reading
// them all (read) also opens every file Stats reads (keptFD), so that the
// run's end costs no opens: for a prepared jail's group this is done
// before its request.
func (g *Group) readBaseline() error {
	_, oom, pids, err := g.read()
	if err != nil {
		return err
	}
	g.baseOOM, g.basePids = oom, pids
	return nil
}

// readOOM reads the OOM counters: v1 memory.oom_control, v2 memory.events.
// OOMKills is the number of processes the kernel's OOM killer killed in the
// group since Attach: one small read, for a caller that saw OOMEvents fire
// and needs the kernel's own evidence (the event comes when the group
// enters OOM, before the killer has picked a victim).
func (g *Group) OOMKills() (int64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		return 0, fmt.Errorf("reading OOM kills of group %s: %w", g.name, ErrDeleted)
	}
	var buf [512]byte
	ev, err := g.readOOM(buf[:])
	if err != nil {
		return 0, err
	}
	return oomKillsSince(g.baseOOM, ev), nil
}

func (g *Group) readOOM(buf []byte) (memEvents, error) {
	if g.m.version == V1 {
		n, err := readParsed(g, g.memDir, "memory.oom_control", buf, parseOOMControl)
		return memEvents{OOMKill: n}, err
	}
	return readParsed(g, g.memDir, "memory.events", buf, parseMemoryEvents)
}

// readParsed is parse of file of dir, read through an fd opened by the
// first read and kept until Delete (keptFD: a pread, no open, no path
// walk; valid after Rename). g.mu is held.
func readParsed[T any](g *Group, dir, file string, buf []byte, parse func([]byte) (T, error)) (T, error) {
	fd, err := g.keptFD(dir, file)
	if err != nil {
		var v T
		return v, fmt.Errorf("reading %s: %w", filepath.Join(dir, file), err)
	}
	return parseAt(fd, dir, file, buf, parse)
}

// parseAt is parse of what fd, file of dir, holds; an error names the
// file (the path is only built then: Stats and the CPU watchdog read
// often).
func parseAt[T any](fd int, dir, file string, buf []byte, parse func([]byte) (T, error)) (T, error) {
	data, err := readAt(fd, buf)
	var v T
	if err == nil {
		v, err = parse(data)
	}
	if err != nil {
		return v, fmt.Errorf("reading %s: %w", filepath.Join(dir, file), err)
	}
	return v, nil
}

// keptFD is the fd readParsed reads file of dir through, opened now if it
// is not yet; it stays valid until Delete. File names are unique across
// the group's controllers. g.mu is held.
func (g *Group) keptFD(dir, file string) (int, error) {
	if fd, ok := g.kept[file]; ok {
		return fd, nil
	}
	flags := unix.O_RDONLY
	if file == peakFileV1 { // resetPeak writes 0 to it
		flags = unix.O_RDWR
	}
	fd, err := g.open(dir, file, flags)
	if err != nil {
		return -1, err
	}
	if g.kept == nil {
		g.kept = make(map[string]int, 6)
	}
	g.kept[file] = fd
	return fd, nil
}

func (g *Group) readPidsEvents(buf []byte) (int64, error) {
	return readParsed(g, g.pidsDir, "pids.events", buf, parsePidsEvents)
}

// CPUTime is the user+system CPU time of all processes in the group (v1
// cpuacct.usage, v2 cpu.stat usage_usec). The file stays open: each call
// after the first is a single pread.
func (g *Group) CPUTime() (time.Duration, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		return 0, fmt.Errorf("reading cpu time of group %s: %w", g.name, ErrDeleted)
	}
	return g.cpuTime()
}

func (g *Group) cpuTime() (time.Duration, error) {
	if g.cpuDir == "" {
		return 0, fmt.Errorf("reading cpu time of group %s: cpuacct: %w", g.name, ErrNoController)
	}
	var b [smallBuf]byte
	if g.m.version == V1 {
		ns, err := readParsed(g, g.cpuDir, "cpuacct.usage", b[:], parseInt)
		return time.Duration(ns), err
	}
	us, err := readParsed(g, g.cpuDir, "cpu.stat", b[:], parseCPUStatUsage)
	return time.Duration(us) * time.Microsecond, err
}

// Stats reads the figures of the run from the kernel.
func (g *Group) Stats() (Stats, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		return Stats{PeakMemoryBytes: -1, PidsPeak: -1, MemoryLimitBytes: g.limit},
			fmt.Errorf("reading stats of group %s: %w", g.name, ErrDeleted)
	}
	st, oom, pids, err := g.read()
	if err != nil {
		return st, fmt.Errorf("reading stats of group %s: %w", g.name, err)
	}
	st.OOMKills = oomKillsSince(g.baseOOM, oom)
	st.PidsMaxHits = nonNegative(pids - g.basePids)
	return st, nil
}

// read reads every figure the group's files give, the OOM and pids.events
// counters as they are (Stats and readBaseline make deltas and baselines
// of them). g.mu is held.
func (g *Group) read() (st Stats, oom memEvents, pidsEvents int64, err error) {
	st = Stats{PeakMemoryBytes: -1, PidsPeak: -1, MemoryLimitBytes: g.limit}
	var b [smallBuf]byte
	if g.memDir != "" {
		if err = g.readPeak(&st, b[:]); err != nil {
			return
		}
		if oom, err = g.readOOM(b[:]); err != nil {
			return
		}
	}
	if g.cpuDir != "" {
		if st.CPUTime, err = g.cpuTime(); err != nil {
			return
		}
	}
	if g.pidsDir != "" {
		if g.m.feat.pidsPeak {
			if st.PidsPeak, err = readParsed(g, g.pidsDir, "pids.peak", b[:], parseInt); err != nil {
				return
			}
		}
		if pidsEvents, err = g.readPidsEvents(b[:]); err != nil {
			return
		}
	}
	return
}

func (g *Group) readPeak(st *Stats, buf []byte) error {
	var file string
	switch {
	case g.m.version == V1:
		file = peakFileV1
	case g.peakFD >= 0: // the fd the reset was written to
		n, err := parseAt(g.peakFD, g.memDir, "memory.peak", buf, parseInt)
		if err != nil {
			return err
		}
		st.PeakMemoryBytes, st.PeakMemorySource = n, g.peakSrc
		return nil
	case g.m.feat.peak:
		file = "memory.peak"
	default:
		return nil // kernel < 5.19: unknown
	}
	n, err := readParsed(g, g.memDir, file, buf, parseInt)
	if err != nil {
		return err
	}
	st.PeakMemoryBytes = n
	st.PeakMemorySource = g.peakSrc
	if st.PeakMemorySource == "" { // Stats before any Attach
		st.PeakMemorySource = peakSourceV1
		if g.m.version == V2 {
			st.PeakMemorySource = peakSourceV2Create
		}
	}
	return nil
}
