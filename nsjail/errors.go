package nsjail

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"agentjail/nsjail/internal/wire"
)

// ErrNotRoot is returned when the host cannot map a dedicated uid for the
// jail: that needs CAP_SETUID in the initial user namespace.
var ErrNotRoot = errors.New("running jails needs root (to map a dedicated host uid per jail)")

// ErrNoKillCap is returned when this process cannot signal processes of
// other users: a jail runs as a host uid of its own, in a user namespace
// that uid owns, and every limit ends a jail with a signal.
var ErrNoKillCap = errors.New("running jails needs CAP_KILL: each jail runs as a host uid of its own, and agentjail must be able to end it (add CAP_KILL to the service's CapabilityBoundingSet)")

// ErrBuiltWithoutCgo is returned by a binary built with CGO_ENABLED=0: the
// jail's bootstrap (bootstrap_linux.c) is C that must run before the Go
// runtime starts.
// ErrNoBootstrap: the binary imports nsjail but not the C stages that
// start a jail (nsjail/boot), which only a binary that runs jails imports.
var ErrNoBootstrap = errors.New(`this binary does not import agentjail/nsjail/boot, the C that starts a jail before Go does: add import _ "agentjail/nsjail/boot" to its main package (or, for a test binary, to a _test.go file)`)

var ErrBuiltWithoutCgo = errors.New("this agentjail was built without cgo, so it has no jail bootstrap: build it with scripts/build (CGO_ENABLED=1, gcc)")

// StageError is a failure of the jail's set-up, reported by the stage that
// failed: "init: pivot_root: operation not permitted". It is an internal
// error of the jail (HTTP 500, exit 125), never a program failure.
type StageError struct {
	Stage string        // e.g. "mount /proc", "pivot_root", "exec python3", "cgroup attach"
	Errno syscall.Errno // 0 when the failure was not a system call
	Msg   string
}

func (e *StageError) Error() string {
	switch {
	case e.Errno != 0 && e.Msg != "":
		return fmt.Sprintf("jail setup failed at %s: %s: %v", e.Stage, e.Msg, e.Errno)
	case e.Errno != 0:
		return fmt.Sprintf("jail setup failed at %s: %v", e.Stage, e.Errno)
	default:
		return fmt.Sprintf("jail setup failed at %s: %s", e.Stage, e.Msg)
	}
}

func (e *StageError) Unwrap() error {
	if e.Errno != 0 {
		return e.Errno
	}
	return nil
}

func stageErr(stage string, err error) *StageError {
	var se *StageError
	if errors.As(err, &se) {
		return se
	}
	e := &StageError{Stage: stage}
	if errno, ok := err.(syscall.Errno); ok {
		e.Errno = errno
		return e
	}
	errors.As(err, &e.Errno)
	e.Msg = err.Error()
	return e
}

// The failure record both C stages send (struct aj_record of
// bootstrap_linux.h): the bootstrap on its own exchange, the init stage as
// msgError's payload.
const (
	recordSize      = wire.RecordSize
	recError   byte = wire.RecError
)

// decodeRecord is the StageError a failure record carries: its stage, its
// errno (0: none) and its message, each NUL-terminated in a field of its
// own. A record of another size is itself the error.
func decodeRecord(rec []byte) *StageError {
	if len(rec) != recordSize {
		return &StageError{Stage: "init", Msg: fmt.Sprintf("a failure record of %d bytes, not %d", len(rec), recordSize)}
	}
	cstr := func(b []byte) string {
		if i := bytes.IndexByte(b, 0); i >= 0 {
			b = b[:i]
		}
		return string(b)
	}
	return &StageError{
		Stage: cstr(rec[8:128]),
		Errno: syscall.Errno(binary.NativeEndian.Uint32(rec[4:8])),
		Msg:   cstr(rec[128:256]),
	}
}
