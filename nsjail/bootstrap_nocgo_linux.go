//go:build linux && !cgo

package nsjail

import (
	"io"
	"os"
)

// bootstrapBuilt: without cgo there is no bootstrap_linux.c, and no jail.
const bootstrapBuilt = false

// bootstrap ends the process it cannot bootstrap and says why.
func bootstrap(_ io.ReadWriter, proc *os.Process, _ string) (*os.Process, error) {
	_ = proc.Kill()
	_, _ = proc.Wait()
	return nil, ErrBuiltWithoutCgo
}

// bootstrapNested ends the process it cannot bootstrap and says why.
func bootstrapNested(_ *os.File, proc *os.Process) (*os.Process, *os.File, error) {
	_ = proc.Kill()
	_, _ = proc.Wait()
	return nil, nil, ErrBuiltWithoutCgo
}
