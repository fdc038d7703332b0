package daemon

import (
	"context"
	"encoding/base64"
	"unicode/utf8"

	"agentjail/daemon/harness"
	"agentjail/nsjail"
)

// Jailer runs one jail (nsjail.Runner; a fake in tests).
type Jailer interface {
	Run(ctx context.Context, s *nsjail.Spec) (*nsjail.Result, error)
}

// Run runs the job and composes the contract's result: the jail's
// evidence, the harness's report (exception, test observations), the
// verdicts computed here, feedback and the collected files. The error is
// the jail's set-up error (no result), or nsjail.ErrCleanup beside a valid
// result.
func (j *Job) Run(ctx context.Context, jl Jailer) (*Result, *nsjail.Result, error) {
	var nr *netRun
	if j.network != nil {
		nr = j.egress.newRun(j.network)
		j.Spec.Network = nr.hook
	}
	jr, err := jl.Run(ctx, &j.Spec)
	if nr != nil {
		defer nr.close() // on every path: the listener pins the namespace
	}
	if jr == nil {
		return nil, nil, err
	}
	res := j.result(jr)
	if nr != nil {
		res.Network = nr.close()
		res.Feedback = append(res.Feedback, networkFeedback(res.Network, j.network)...)
	}
	return res, jr, err
}

func (j *Job) result(jr *nsjail.Result) *Result {
	res := fromJail(jr)
	res.Environment = j.Environment
	if j.command != nil {
		return j.commandResult(res, jr)
	}
	rep := harness.ParseReport(jr.Report, jr.ReportTruncated, j.Tests)
	res.Exception = rep.UncaughtException(jr)
	res.Tests = rep.Verdicts(j.Tests, jr)
	res.Display, res.DisplayTruncated = rep.Display(j.Spec.Limits.DisplayBytes)
	// What the program did wrong first, then what the jail did to it.
	var env *harness.Installed
	if e := j.env; e != nil && e.PythonVersion != "" { // probed: its packages are known
		env = &harness.Installed{Environment: e.Name, Packages: e.Packages}
	}
	res.Feedback = append(append([]string{}, harness.ProgramFeedback(res.Exception, res.Tests, j.Tests, env)...), res.Feedback...)
	if harness.Succeeded(res.Status, res.Tests) {
		res.Feedback = []string{}
	}
	for _, f := range jr.Files {
		res.Files = append(res.Files, resultFile(f))
	}
	return res
}

// ResultFile is one collected file of the result (docs/contract.md §3).
type ResultFile struct {
	Path     string  `json:"path"`
	Size     int64   `json:"size"`
	Encoding string  `json:"encoding,omitempty"`
	Content  *string `json:"content,omitempty"` // nil only beside Error
	Error    string  `json:"error,omitempty"`
}

// resultFile gives text files as utf-8 and everything else as base64.
func resultFile(f nsjail.CollectedFile) ResultFile {
	rf := ResultFile{Path: f.Path, Size: f.Size, Error: f.Error}
	if f.Error != "" {
		return rf
	}
	c := string(f.Content)
	rf.Encoding = "utf-8"
	if !utf8.ValidString(c) {
		rf.Encoding, c = "base64", base64.StdEncoding.EncodeToString(f.Content)
	}
	rf.Content = &c
	return rf
}
