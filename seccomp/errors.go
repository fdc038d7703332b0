package seccomp

import "errors"

// errUnsupported is wrapped by every error that means "this build or this
// host cannot run the filter at all", as opposed to a bad policy.
var errUnsupported = errors.New("seccomp filtering is not supported here")

// IsUnsupported reports whether err means that this build or host cannot
// compile or install the filter (no cgo/libseccomp, not x86_64, kernel
// without user notification), so that `agentjail check` can say what is
// missing.
func IsUnsupported(err error) bool { return errors.Is(err, errUnsupported) }
