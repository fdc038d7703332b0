//go:build linux

package nsjail

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

// chunkReader reads at most n bytes a call, as a socket may.
type chunkReader struct {
	r io.Reader
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

// streamRecv is recvMsg's recv over a byte stream without fds: a recvmsg
// at the end of the stream reads 0 bytes, no error.
func streamRecv(r io.Reader) func(p, oob []byte) (n, oobn, flags int, err error) {
	return func(p, _ []byte) (int, int, int, error) {
		n, err := r.Read(p)
		if errors.Is(err, io.EOF) {
			err = nil
		}
		return n, 0, 0, err
	}
}

// FuzzRecvMsg: whatever bytes come from the other end, recvMsg neither
// panics nor returns a payload over maxMsg, each message it returns is
// the frame that writeMsg makes of it, read whole from the stream, and a
// stream of whole frames is read to its end, then io.EOF.
func FuzzRecvMsg(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		// A header may declare up to maxMsg bytes, which recvMsg
		// allocates before it reads them: declared sizes far past the
		// input are cut to just past it (still a short payload), so that
		// the fuzzer does not spend its time allocating.
		in := bytes.Clone(data)
		off := 0 // the end of the last whole frame
		for off+5 <= len(in) {
			size := binary.LittleEndian.Uint32(in[off+1:])
			rest := uint32(len(in) - off - 5)
			if size <= maxMsg && size > rest+16 {
				size = rest + 16
				binary.LittleEndian.PutUint32(in[off+1:], size)
			}
			if size > rest {
				break
			}
			off += 5 + int(size)
		}
		whole := off == len(in) // nothing but whole frames under maxMsg
		r := &chunkReader{r: bytes.NewReader(in), n: int(chunk%16) + 1}
		var again bytes.Buffer // the stream again, from the messages read
		for {
			typ, payload, fds, err := recvMsg(r, streamRecv(r))
			if len(fds) > 0 {
				t.Fatalf("fds from a stream without any: %v", fds)
			}
			if len(payload) > maxMsg {
				t.Fatalf("a payload of %d bytes, over maxMsg", len(payload))
			}
			if err != nil {
				if whole && (!errors.Is(err, io.EOF) || !bytes.Equal(again.Bytes(), in)) {
					t.Fatalf("whole frames: %v after %d of %d bytes, not EOF at their end", err, again.Len(), len(in))
				}
				return
			}
			if err := writeMsg(&again, typ, payload); err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(in, again.Bytes()) {
				t.Fatalf("message %d (%d bytes) is not the frame it came in", typ, len(payload))
			}
		}
	})
}

// FuzzMsgRoundTrip: recvMsg reads back what writeMsg wrote, however the
// stream is cut, and then the end of the stream.
func FuzzMsgRoundTrip(f *testing.F) {
	f.Fuzz(func(t *testing.T, typ byte, payload []byte, chunk uint8) {
		var buf bytes.Buffer
		if err := writeMsg(&buf, msgType(typ), payload); err != nil {
			t.Fatal(err)
		}
		if buf.Len() != 5+len(payload) {
			t.Fatalf("a frame of %d bytes for a payload of %d", buf.Len(), len(payload))
		}
		r := &chunkReader{r: &buf, n: int(chunk%16) + 1}
		gotTyp, got, fds, err := recvMsg(r, streamRecv(r))
		if err != nil || gotTyp != msgType(typ) || !bytes.Equal(got, payload) || len(fds) > 0 {
			t.Fatalf("read back type %d, %d bytes, fds %v, err %v; wrote type %d, %d bytes", gotTyp, len(got), fds, err, typ, len(payload))
		}
		if _, _, _, err := recvMsg(r, streamRecv(r)); !errors.Is(err, io.EOF) {
			t.Fatalf("after the one message: %v, not EOF", err)
		}
	})
}
