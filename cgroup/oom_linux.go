package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// oomWatch is the goroutine behind OOMEvents. Its fd (an eventfd on v1, an
// inotify instance on v2) is non-blocking and goes through the Go
// netpoller, so the goroutine costs no thread while it waits and closing
// the file ends it.
type oomWatch struct {
	f    *os.File
	ch   chan struct{}
	done chan struct{}
}

// notify sends without blocking; the buffer of one coalesces bursts.
func (w *oomWatch) notify() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// stop closes the fd, waits for the goroutine, which closes the channel.
func (w *oomWatch) stop() {
	w.f.Close()
	<-w.done
}

// OOMEvents returns a channel that receives when the kernel's OOM killer
// acts in this group (bursts coalesce into one receive); Delete closes it.
// v1: an eventfd registered through cgroup.event_control on
// memory.oom_control (v1 has no memory.oom.group, so the caller kills the
// whole jail when a child is OOM-killed). v2: inotify on memory.events,
// comparing oom_kill/oom_group_kill. An OOM kill between Attach and this
// call is reported at once. Calling it again returns the same channel.
func (g *Group) OOMEvents() (<-chan struct{}, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		return nil, fmt.Errorf("watching OOM events of group %s: %w", g.name, ErrDeleted)
	}
	if g.oom != nil {
		return g.oom.ch, nil
	}
	if g.memDir == "" {
		return nil, fmt.Errorf("watching OOM events of group %s: memory: %w", g.name, ErrNoController)
	}
	var w *oomWatch
	var err error
	if g.m.version == V1 {
		w, err = g.watchV1()
	} else {
		w, err = g.watchV2()
	}
	if err != nil {
		return nil, fmt.Errorf("watching OOM events of group %s: %w", g.name, err)
	}
	g.oom = w
	return w.ch, nil
}

func newWatch(fd int, name string) *oomWatch {
	return &oomWatch{
		f:    os.NewFile(uintptr(fd), name),
		ch:   make(chan struct{}, 1),
		done: make(chan struct{}),
	}
}

func (g *Group) watchV1() (*oomWatch, error) {
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	// The kept fd the baseline read it through (the kernel takes its own
	// reference to the file).
	ocfd, err := g.keptFD(g.memDir, "memory.oom_control")
	if err != nil {
		unix.Close(efd)
		return nil, fmt.Errorf("opening %s: %w", filepath.Join(g.memDir, "memory.oom_control"), err)
	}
	// "<event_fd> <fd of memory.oom_control>" (cgroup-v1/memory.rst §9)
	ctl := strconv.Itoa(efd) + " " + strconv.Itoa(ocfd)
	err = g.write(g.memDir, "cgroup.event_control", []byte(ctl))
	if err != nil {
		unix.Close(efd)
		return nil, fmt.Errorf("registering OOM eventfd in %s: %w", g.memDir, err)
	}
	w := newWatch(efd, "oom-eventfd")
	var b [smallBuf]byte
	if now, err := g.readOOM(b[:]); err == nil && oomKillsSince(g.baseOOM, now) > 0 {
		w.notify()
	}
	go func() {
		defer close(w.done)
		defer close(w.ch)
		var buf [8]byte
		for {
			// Each read returns (and clears) the count of OOM events since
			// the last; the kernel also signals once when the group is
			// removed, but Delete closes the fd before removing.
			if _, err := w.f.Read(buf[:]); err != nil {
				return
			}
			w.notify()
		}
	}()
	return w, nil
}

func (g *Group) watchV2() (*oomWatch, error) {
	ifd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	ev := filepath.Join(g.memDir, "memory.events")
	if _, err := unix.InotifyAddWatch(ifd, ev, unix.IN_MODIFY); err != nil {
		unix.Close(ifd)
		return nil, fmt.Errorf("watching %s: %w", ev, err)
	}
	// The goroutine below reads through this fd, without g.mu (Delete
	// holds it while it stops the goroutine): it stays open until then.
	evfd, err := g.keptFD(g.memDir, "memory.events")
	if err != nil {
		unix.Close(ifd)
		return nil, fmt.Errorf("opening %s: %w", ev, err)
	}
	w := newWatch(ifd, "oom-inotify")
	last := g.baseOOM
	var fb [smallBuf]byte
	check := func() { // an OOM kill since the last look (or the baseline) notifies
		now, err := parseAt(evfd, g.memDir, "memory.events", fb[:], parseMemoryEvents)
		if err != nil {
			return
		}
		if oomKillsSince(last, now) > 0 {
			w.notify()
		}
		last = now
	}
	check() // one before the watch began
	go func() {
		defer close(w.done)
		defer close(w.ch)
		var buf [4096]byte
		for {
			if _, err := w.f.Read(buf[:]); err != nil {
				return
			}
			check()
		}
	}()
	return w, nil
}
