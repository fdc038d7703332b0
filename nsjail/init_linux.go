package nsjail

import (
	"os"

	"agentjail/nsjail/internal/wire"
)

// initArg0 is argv[0] of the re-executed binary when it must run as the
// jail's init stage. It shows in the jail's /proc/1/cmdline only until the
// exec of python3 replaces it.
const initArg0 = wire.InitArg0

// IsInit reports whether this process was started as a jail's init stage.
// main must check it before anything else and then call Init.
func IsInit() bool { return len(os.Args) > 0 && os.Args[0] == initArg0 }

// Init is reached only by a binary without the C init stage (built
// without cgo): the jail's init stage is init_linux.c, which the bootstrap
// (bootstrap_linux.c) enters before the Go runtime starts, and which
// never returns. Such a binary cannot run jails (ErrBuiltWithoutCgo), and
// its parent has already given up on this process.
func Init() { os.Exit(1) }
