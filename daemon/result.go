package daemon

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"golang.org/x/sys/unix"

	"agentjail/daemon/harness"
	"agentjail/egress"
	"agentjail/nsjail"
	"agentjail/seccomp"
)

// Result is the result object of docs/contract.md §3, as both `agentjail run`
// and POST /v1/run return it. Stdout, Stderr and the Path of each file hold
// the exact bytes, which need not be UTF-8: WriteJSON adds their base64
// twins (resultjson.go) where the JSON text cannot carry them, and
// DecodeResult reads them back. (encoding/json, either way, gives and
// takes only the text, with U+FFFD for each byte that is not UTF-8.)
type Result struct {
	ID              string          `json:"id"`
	Status          string          `json:"status"`
	ExitCode        int             `json:"exit_code"`
	Signal          string          `json:"signal"`
	KillReason      string          `json:"kill_reason"`
	Seccomp         *seccomp.Report `json:"seccomp"`
	Stdout          string          `json:"stdout"`
	Stderr          string          `json:"stderr"`
	StdoutTruncated bool            `json:"stdout_truncated"`
	StderrTruncated bool            `json:"stderr_truncated"`

	WallTimeMs float64 `json:"wall_time_ms"`
	CPUTimeMs  float64 `json:"cpu_time_ms"`

	// PeakMemoryBytes is null when the kernel cannot tell (cgroup v2
	// before Linux 5.19); PeakMemorySource names the kernel file it came from.
	PeakMemoryBytes  *int64 `json:"peak_memory_bytes"`
	PeakMemorySource string `json:"peak_memory_source"`
	MemoryLimitBytes int64  `json:"memory_limit_bytes"`
	OOMKills         int64  `json:"oom_kills"`
	PidsPeak         *int64 `json:"pids_peak"`     // null when the kernel has no pids.peak
	PidsLimitHits    int64  `json:"pids_max_hits"` // forks refused by the pids limit

	Exception *harness.Exception   `json:"exception"`
	Tests     *harness.TestsResult `json:"tests"`
	Feedback  []string             `json:"feedback"`
	Files     []ResultFile         `json:"files"`

	// Display is what a notebook would show (figures, the trailing
	// value's rich form), at most limits.display_bytes of it;
	// DisplayTruncated says entries were dropped.
	Display          []harness.Display `json:"display"`
	DisplayTruncated bool              `json:"display_truncated"`

	// Environment is the environment that ran it; Start how its
	// interpreter started: "warm" (a fork of the environment's zygote) or
	// "cold" (a fresh python3).
	Environment string `json:"environment"`
	Start       string `json:"start"`

	// Network is what the run did through the egress proxy
	// (docs/contract.md §8); null when it had no egress.
	Network *egress.Report `json:"network"`
}

// fromJail converts a jail's result into the contract's result object.
func fromJail(r *nsjail.Result) *Result {
	out := &Result{
		ID:               r.ID,
		Status:           string(r.Status),
		ExitCode:         r.ExitCode,
		KillReason:       string(r.KillReason),
		Seccomp:          r.Seccomp,
		Stdout:           string(r.Stdout),
		Stderr:           string(r.Stderr),
		StdoutTruncated:  r.StdoutTruncated,
		StderrTruncated:  r.StderrTruncated,
		WallTimeMs:       ms(r.WallTime),
		CPUTimeMs:        ms(r.CPUTime),
		Start:            string(cmp.Or(r.Start, nsjail.StartCold)),
		PeakMemorySource: r.PeakMemorySource,
		MemoryLimitBytes: r.MemoryLimitBytes,
		OOMKills:         r.OOMKills,
		PidsLimitHits:    r.PidsMaxHits,
		Feedback:         harness.JailFeedback(r),
		Files:            []ResultFile{},
		Display:          []harness.Display{},
	}
	if r.Signal != 0 {
		out.Signal = unix.SignalName(r.Signal)
	}
	if r.PeakMemoryBytes >= 0 {
		out.PeakMemoryBytes = &r.PeakMemoryBytes
	}
	if r.PidsPeak >= 0 {
		out.PidsPeak = &r.PidsPeak
	}
	return out
}

// ms is a duration in milliseconds, to 0.1 ms.
func ms(d time.Duration) float64 { return math.Round(float64(d)/1e5) / 10 }

// DecodeResult reads a result object as WriteJSON writes it (the answer of
// POST /v1/run), with the exact bytes of stdout, stderr and the collected
// files' names from their base64 twins, where the object has them.
func DecodeResult(data []byte) (*Result, error) {
	// One pass: the outer Files shadows Result's own.
	type plain Result
	var in struct {
		plain
		StdoutBase64 *string `json:"stdout_base64"`
		StderrBase64 *string `json:"stderr_base64"`
		Files        []struct {
			ResultFile
			PathBase64 *string `json:"path_base64"`
		} `json:"files"`
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, err
	}
	r := Result(in.plain)
	for _, t := range []struct {
		name string
		b64  *string
		dst  *string
	}{{"stdout_base64", in.StdoutBase64, &r.Stdout}, {"stderr_base64", in.StderrBase64, &r.Stderr}} {
		if err := exact(t.name, t.b64, t.dst); err != nil {
			return nil, err
		}
	}
	if in.Files != nil {
		r.Files = make([]ResultFile, len(in.Files))
		for i, f := range in.Files {
			r.Files[i] = f.ResultFile
			if err := exact(fmt.Sprintf("files[%d].path_base64", i), f.PathBase64, &r.Files[i].Path); err != nil {
				return nil, err
			}
		}
	}
	return &r, nil
}

// exact sets *dst to the bytes of a base64 twin, when there is one.
func exact(name string, b64, dst *string) error {
	if b64 == nil {
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(*b64)
	if err != nil {
		return fmt.Errorf("%s: not valid base64: %v", name, err)
	}
	*dst = string(b)
	return nil
}
