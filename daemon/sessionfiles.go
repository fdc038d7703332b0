package daemon

import (
	"context"
	"fmt"
	"time"

	"agentjail/daemon/harness"
	"agentjail/nsjail"
)

// A session's own files (POST /v1/sessions "files") are written by its
// session server, through a first call of its own that the session's
// calls do not count, and not by the jail's set-up as a run's are. The
// set-up writes them before the jail joins its cgroup, so their pages
// would be charged to the daemon's cgroup for the session's whole life
// (docs/security.md, "What a session can hold"); written by the session
// server they are the session's, and count against its memory limit.

// filesCallTime bounds the call that writes a session's files.
const filesCallTime = 30 * time.Second

// startSessionWithFiles starts spec's session, then has it write spec's
// files. A file that cannot be written, or files that do not fit the
// session's memory, are a *nsjail.FieldError; the session is ended then.
func startSessionWithFiles(ctx context.Context, starter sessionStarter, spec *nsjail.Spec) (*nsjail.Session, error) {
	files := spec.Files
	spec.Files = nil
	js, err := starter.StartSession(ctx, spec)
	if err != nil || len(files) == 0 {
		return js, err
	}
	c := &nsjail.CallSpec{Payload: harness.CallPayload("<files>", nil, nil, files),
		Limits: nsjail.CallLimits{WallTime: filesCallTime, CPUTime: filesCallTime, OutputBytes: 16 << 10}}
	cr, err := js.Call(ctx, c)
	if err == nil {
		err = filesRefused(cr, files, spec.Limits.MemoryBytes)
	}
	if err != nil {
		js.End(nsjail.EndDeleted)
		_ = js.Wait()
		return nil, err
	}
	return js, nil
}

// filesRefused is why the call that wrote a session's files failed; nil
// when it did not.
func filesRefused(cr *nsjail.CallResult, files []nsjail.File, memory int64) error {
	if f := harness.ParseCallEnd(cr.End).Refused; f != nil && f.I >= 0 && f.I < len(files) {
		return &nsjail.FieldError{Field: fmt.Sprintf("files[%d].path", f.I), Msg: f.Error}
	}
	var size int64
	for _, f := range files {
		size += int64(len(f.Content))
	}
	switch {
	case cr.Ended == nsjail.EndMemory:
		return &nsjail.FieldError{Field: "limits.memory_bytes", Msg: fmt.Sprintf("%d bytes is too little for the session's files (%d bytes, which count against its memory) and its interpreter: ask for more, or give fewer files", memory, size)}
	case cr.Ended != "":
		return &nsjail.StageError{Stage: "session files", Msg: fmt.Sprintf("the session ended (%s) while its files were written", cr.Ended)}
	case cr.Status != nsjail.StatusOK:
		return &nsjail.StageError{Stage: "session files", Msg: fmt.Sprintf("writing the files ended %s (%s): %s", cr.Status, cr.KillReason, cr.Stderr)}
	}
	return nil
}
