// Package boot is the C that runs before the Go runtime starts: the
// jail's bootstrap and init stage (bootstrap_linux.c, init_*_linux.c,
// entered from a constructor when argv[0] is the init stage's; the same C
// is also built with musl as the standalone init, which this package
// embeds when scripts/build made it: standalone/README.md), and the
// timer slack every thread of the Go runtime sets as it starts
// (slack_linux.c, through the link flag -Wl,--wrap=pthread_create).
//
// Each has effects on the whole process, so only a binary that runs
// jails imports this package, for its side effects, as runc imports
// libcontainer/nsenter:
//
//	import _ "agentjail/nsjail/boot"
//
// cmd/agentjail does, and so do the tests of the packages that start
// jails (nsjail, daemon; cmd/agentjail's through main.go): the runner
// re-executes the test binary as the jail's init stage. A binary that
// imports nsjail without this package gets nsjail.ErrNoBootstrap from
// NewRunner, and none of its side effects.
//
// The constants the C shares with nsjail's Go side are in
// nsjail/internal/wire; this package checks each against bootstrap_linux.h
// at compile time.
package boot
