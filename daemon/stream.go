package daemon

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"agentjail/daemon/internal/jsontext"
	"agentjail/nsjail"
)

// A streamed answer (docs/contract.md, "Streamed output"): a run or a
// session's call asked with "stream": true, or with Accept:
// application/x-ndjson, is answered with one JSON event a line, the
// program's output as it comes, then the result. The streamer is the
// request's http.ResponseWriter as the handler sees it: the handler
// answers as it always does (s.fail, writeEncoded), and the streamer
// makes that answer an ordinary HTTP answer while nothing was streamed
// (an error before the run started stays a 400, 429, ...), the last
// event once something was: {"event":"result",...} or
// {"event":"error","http_status":N,"error":{...}}.
//
// The output is not copied: the capture's tap (nsjail.OutputTap) hands
// over slices of the capture's own buffer, whose bytes never change, and
// the streamer keeps only where each event ends. A client that stops
// reading is found by a write deadline (streamStall) and its run is
// cancelled, as if it had gone away.

// ndjson is the streamed answer's media type.
const ndjson = "application/x-ndjson"

// defaultStreamStall bounds how long a write of a streamed answer may
// block before its run is cancelled.
const defaultStreamStall = 30 * time.Second

// maxEventData is the most output bytes one event carries.
const maxEventData = 16 << 10

// maxMarks bounds the events waiting to be written: past it, output that
// alternates between stdout and stderr faster than the client reads is
// sent a stream at a time, whole but in coarser order.
const maxMarks = 1024

// errStalled is the cause of a run cancelled because its client stopped
// reading its stream.
var errStalled = errors.New("the client stopped reading its streamed answer")

// wantsStream tells whether r asks for a streamed answer: "stream": true
// in its body, or Accept: application/x-ndjson.
func wantsStream(r *http.Request, asked bool) bool {
	if asked {
		return true
	}
	for _, a := range r.Header.Values("Accept") {
		if !strings.Contains(a, "ndjson") { // the usual case: no work
			continue
		}
		for _, part := range strings.Split(a, ",") {
			mt, _, _ := strings.Cut(part, ";")
			if strings.EqualFold(strings.TrimSpace(mt), ndjson) {
				return true
			}
		}
	}
	return false
}

// mark is where one event ends: stream's bytes up to end.
type mark struct {
	stream int
	end    int
}

// streamer is a streamed answer; its zero value is unusable, and a nil
// *streamer is "not streaming" for bind and close.
type streamer struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	stall time.Duration

	mu      sync.Mutex
	all     [2][]byte // each stream as the tap last showed it
	marks   []mark
	started bool  // the 200 and its header are written
	broken  error // a write failed: nothing more is written
	cancel  context.CancelCauseFunc

	wake   chan struct{} // cap 1: output waits
	quit   chan struct{} // closed by stop
	done   chan struct{} // closed when the writer has ended
	once   sync.Once
	sent   [2]int      // bytes of each stream written (the writer's own)
	header http.Header // what the handler sets once the stream started: unused

	final string // the last event's prefix, set by WriteHeader
	first bool   // the next Write is the last event's first
}

// streamAnswer returns w as the handler should use it, and the streamer
// (nil when r does not ask for a stream).
func (s *Server) streamAnswer(w http.ResponseWriter, r *http.Request, asked bool) (http.ResponseWriter, *streamer) {
	if !wantsStream(r, asked) {
		return w, nil
	}
	st := &streamer{w: w, rc: http.NewResponseController(w), stall: s.opts.streamStall,
		wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go st.writer()
	return st, st
}

// bind returns ctx carrying st as the run's output tap; a stalled client
// cancels the run through it.
func (st *streamer) bind(ctx context.Context) context.Context {
	if st == nil {
		return ctx
	}
	ctx, cancel := context.WithCancelCause(ctx)
	st.mu.Lock()
	st.cancel = cancel
	st.mu.Unlock()
	return nsjail.WithOutputTap(ctx, st)
}

// close ends the writer, if the handler did not answer (a panic).
func (st *streamer) close() {
	if st != nil {
		st.stop()
	}
}

// Output is the tap: it records where the event ends and wakes the
// writer. It never blocks on the client.
func (st *streamer) Output(stream int, all []byte, from int) {
	st.mu.Lock()
	st.all[stream] = all
	if n := len(st.marks); n > 0 && st.marks[n-1].stream == stream {
		st.marks[n-1].end = len(all)
	} else if n < maxMarks {
		st.marks = append(st.marks, mark{stream, len(all)})
	}
	st.mu.Unlock()
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// writer writes the output events until stop, then what is left.
func (st *streamer) writer() {
	defer close(st.done)
	bw := bufio.NewWriterSize(&deadlineWriter{st}, 32<<10)
	for {
		select {
		case <-st.wake:
			st.drain(bw, false)
		case <-st.quit:
			st.drain(bw, true)
			return
		}
	}
}

// deadlineWriter writes to the client, each write bounded by stall.
type deadlineWriter struct{ st *streamer }

func (d *deadlineWriter) Write(p []byte) (int, error) {
	_ = d.st.rc.SetWriteDeadline(time.Now().Add(d.st.stall))
	return d.st.w.Write(p)
}

// drain writes the events that wait; final writes every byte left (an
// incomplete UTF-8 sequence at a stream's end then becomes U+FFFD).
func (st *streamer) drain(bw *bufio.Writer, final bool) {
	st.mu.Lock()
	marks, all := st.marks, st.all
	st.marks = nil
	if st.broken != nil || (len(marks) == 0 && !final) {
		st.mu.Unlock()
		return
	}
	if !st.started && (len(marks) > 0 || final && (len(all[0]) > st.sent[0] || len(all[1]) > st.sent[1])) {
		st.startLocked()
	}
	started := st.started
	st.mu.Unlock()
	if !started { // nothing to write: the answer decides the status
		return
	}
	if final { // what a full list of marks left out, a stream at a time
		marks = append(marks, mark{0, len(all[0])}, mark{1, len(all[1])})
	}
	for _, m := range marks {
		st.event(bw, m.stream, all[m.stream][:m.end], final)
	}
	err := bw.Flush()
	if err == nil {
		err = st.rc.Flush()
	}
	if err != nil {
		st.fail(err)
	}
}

// startLocked writes the stream's 200 and header.
func (st *streamer) startLocked() {
	h := st.w.Header()
	h.Set("Content-Type", ndjson)
	h.Del("Content-Length")
	h.Set("X-Content-Type-Options", "nosniff")
	st.w.WriteHeader(http.StatusOK)
	st.started = true
}

// event writes the events of stream's bytes from what was sent up to
// the end of b, holding back an incomplete UTF-8 sequence at its end
// unless final.
func (st *streamer) event(bw *bufio.Writer, stream int, b []byte, final bool) {
	if len(b) <= st.sent[stream] {
		return
	}
	end := len(b)
	if !final {
		end = completeUTF8(b, st.sent[stream])
	}
	name := [2]string{`{"event":"stdout","data":`, `{"event":"stderr","data":`}[stream]
	for from := st.sent[stream]; from < end; {
		to := min(end, from+maxEventData)
		if to < end { // never split a sequence between two events
			to = completeUTF8(b[:to], from)
			if to == from {
				to = min(end, from+maxEventData)
			}
		}
		seg := b[from:to]
		bw.WriteString(name)
		jsontext.WriteString(bw, string(seg))
		if !utf8.Valid(seg) { // the exact bytes beside the text, as the result's twins
			bw.WriteString(`,"data_base64":"`)
			bw.WriteString(base64.StdEncoding.EncodeToString(seg))
			bw.WriteByte('"')
		}
		bw.WriteString("}\n")
		from = to
	}
	st.sent[stream] = end
}

// completeUTF8 is len(b) less an incomplete UTF-8 sequence at its end
// (at most 3 bytes, never before from).
func completeUTF8(b []byte, from int) int {
	for i := len(b) - 1; i >= from && i >= len(b)-3; i-- {
		c := b[i]
		if c < utf8.RuneSelf {
			return len(b)
		}
		if utf8.RuneStart(c) {
			if utf8.FullRune(b[i:]) {
				return len(b)
			}
			return i
		}
	}
	return len(b)
}

// fail records a failed write and cancels the run: the client went away
// or stopped reading.
func (st *streamer) fail(err error) {
	st.mu.Lock()
	if st.broken == nil {
		st.broken = err
	}
	cancel := st.cancel
	st.mu.Unlock()
	if cancel != nil {
		cancel(errStalled)
	}
}

// stop ends the writer once it wrote what waits.
func (st *streamer) stop() {
	st.once.Do(func() { close(st.quit) })
	<-st.done
}

// The handler's answer, through http.ResponseWriter: each call first
// stops the writer, so that the answer comes after every output event.

func (st *streamer) Header() http.Header {
	st.stop()
	if st.started {
		if st.header == nil {
			st.header = http.Header{}
		}
		return st.header
	}
	return st.w.Header()
}

func (st *streamer) WriteHeader(status int) {
	st.stop()
	if st.started { // the last write's deadline may be long past
		_ = st.rc.SetWriteDeadline(time.Now().Add(st.stall))
	}
	switch {
	case st.started && status == http.StatusOK:
		st.final, st.first = `{"event":"result",`, true
	case st.started:
		st.final, st.first = `{"event":"error","http_status":`+strconv.Itoa(status)+`,`, true
	case status == http.StatusOK: // nothing streamed yet: the result is the only event
		st.startLocked()
		st.final, st.first = `{"event":"result",`, true
	default: // an ordinary HTTP error
		st.w.WriteHeader(status)
	}
}

func (st *streamer) Write(p []byte) (int, error) {
	st.stop()
	if st.broken != nil {
		return 0, st.broken
	}
	if st.first && len(p) > 0 && p[0] == '{' {
		st.first = false
		if _, err := st.w.Write([]byte(st.final)); err != nil {
			return 0, err
		}
		n, err := st.w.Write(p[1:])
		return n + 1, err
	}
	return st.w.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (st *streamer) Unwrap() http.ResponseWriter { return st.w }
