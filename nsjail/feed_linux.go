package nsjail

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Feeds: how a session's call gets its bytes (its payload, its stdin).
// A run's stdin is a sealed memfd this process writes, whose pages are
// charged to this process's cgroup; that is bounded by the run, which
// ends. A session lives on, and its program could keep such a memfd
// (a dup of the fd, a shared mapping of it) across calls: memory charged
// to the daemon, never to the session, that only the session's end
// frees. So a call's bytes come through a feed instead: a SOCK_SEQPACKET
// socketpair whose one end the program gets, and whose other end this
// process writes in messages of at most feedChunk bytes, then closes (the
// program reads EOF). The program copies what it reads into memory of its
// own, charged to the session's cgroup (session.py: the files to
// /workspace, stdin to a memfd it makes). Nothing of a feed can outlive
// its call: a unix seqpacket socket has no splice_read of its own (the
// kernel copies what is spliced from it), and at the call's end this
// process closes its end and drains, through a dup it kept of the
// program's end, whatever the program left unread.

// feedChunk is the most bytes of one message of a feed; session.py reads
// with a buffer of twice that. The default socket buffer (net.core.wmem_default,
// 208 KiB) holds several.
const feedChunk = 32 << 10

// feed is one feed of a call.
type feed struct {
	child *childFD // the program's end: sent, then closed here
	w     *os.File // this process's end, in the runtime's poller
	peer  int      // a dup of the program's end: drained at the call's end
	wrote sync.WaitGroup
	once  sync.Once
}

// newFeed makes a feed of data and starts writing it.
func newFeed(data []byte) (*feed, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socketpair", err)
	}
	peer, err := unix.FcntlInt(uintptr(fds[1]), unix.F_DUPFD_CLOEXEC, 0)
	if err == nil {
		err = unix.SetNonblock(fds[0], true)
	}
	if err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		if peer > 0 {
			unix.Close(peer)
		}
		return nil, os.NewSyscallError("feed", err)
	}
	f := &feed{child: &childFD{fds[1]}, w: os.NewFile(uintptr(fds[0]), "feed"), peer: peer}
	f.wrote.Go(func() {
		for b := data; len(b) > 0; {
			n := min(len(b), feedChunk)
			if _, err := f.w.Write(b[:n]); err != nil {
				break // closed by stop, or the program closed its end
			}
			b = b[n:]
		}
		f.w.Close() // the program reads EOF after the last message
	})
	return f, nil
}

// stop ends the feed: the writing stops, and what the program did not
// read is dropped. Once; a nil feed is nothing.
func (f *feed) stop() {
	if f == nil {
		return
	}
	f.once.Do(func() {
		f.child.Close()
		f.w.Close() // a write waiting in the poller returns
		f.wrote.Wait()
		buf := make([]byte, feedChunk)
		for {
			n, _, err := unix.Recvfrom(f.peer, buf, unix.MSG_DONTWAIT)
			if err == unix.EINTR {
				continue
			}
			if err != nil || n <= 0 {
				break
			}
		}
		unix.Close(f.peer)
	})
}

// feedFD is a call's feed of data (kept in feeds, to be stopped at the
// call's end); nil data is /dev/null.
func feedFD(data []byte, feeds *[]*feed) (*childFD, error) {
	if data == nil {
		return stdinFD(nil)
	}
	f, err := newFeed(data)
	if err != nil {
		return nil, err
	}
	*feeds = append(*feeds, f)
	return f.child, nil
}
