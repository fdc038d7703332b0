// Package wire holds the constants that the jail's C stages
// (agentjail/nsjail/boot: the bootstrap and the init stage, which run
// before the Go runtime starts) share with nsjail's Go side: the fds,
// message types, plan op codes, record kinds, environment variables and
// bounds of their conversation, and the plan's encoding (Plan). nsjail
// names the constants under its own (unexported) names; boot checks each
// against its C twin at compile time, so both sides agree wherever this
// package is the source.
package wire

import "io/fs"

// The init stage's fds and ids (protocol.go, ids.go).
const (
	ReportFD = 3
	SyncFD   = 4
	NestFD   = 6
	JailID   = 1000
)

// MaxMsg bounds a message of the init stage's conversation; MaxMsgFDs the
// fds one message carries.
const (
	MaxMsg    = 256 << 20
	MaxMsgFDs = 8
)

// The message types of the init stage's conversation (protocol.go's
// msgType).
const (
	MsgBuild = iota + 1
	MsgReady
	MsgRequest
	MsgGo
	MsgSeccomp
	MsgExec
	MsgExit
	MsgError
	MsgAdopt
)

// The steps of a plan (Plan encodes them; nsjail's plan.go chooses
// them), each with its arguments after its stage; bootstrap_linux.h's
// enum, which init_plan_linux.c decodes, has the same codes.
const (
	OpUnshare    = iota + 1 // flags u32
	OpMount                 // source, target, fstype, flags u64, data ("" is NULL for source, fstype, data)
	OpBindRO                // source, target, extra flags u64, cleared flags u64
	OpMkdir                 // path, mode u32, parents u32
	OpSymlink               // target, path
	OpWrite                 // directory, path below it, mode u32, content
	OpChmod                 // path, mode u32
	OpIfExists              // path: the next step only when it exists
	OpUmount                // path, flags u32
	OpRmdir                 // path
	OpPivotRoot             // new root
	OpHostname              // name
	OpDomainname            // name
	OpLoopbackUp            // -
	OpChdir                 // path
	OpSeccomp               // the filter (seccomp.Program.MarshalBinary)
	OpStdio                 // count u32: the message's fds become 0 … count-1
	OpRlimit                // resource u32, soft u64, hard u64
	OpExec                  // report u32, collect u32, argc u32, argv…, envc u32, env…
	OpKeepCaps              // mask u64: capabilities the program keeps (a zygote's)
	OpAdopt                 // - : instead of OpExec, a warm run's init adopts the program its zygote forks
	OpAttach                // path: the message's one fd, a detached mount, is attached there
	OpSetattr               // path, attributes u64 (MOUNT_ATTR_RDONLY, _NOSUID, _NODEV, _NOEXEC), recursive u32
	OpLast
)

// The bootstrap's records (struct aj_record): their size and kinds, and
// the byte the parent answers a zygote's RecUserns with once it has
// written the maps.
const (
	RecordSize      = 256
	RecError   byte = 'E'
	RecUserns  byte = 'U'
	RecPID     byte = 'P'
	Mapped     byte = 'M'
)

// InitArg0 is argv[0] of a jail's init stage; the environment variables
// give the bootstrap the jail's host uid (UIDEnv), have it wait for its
// maps (ZygoteEnv) or nest the jail in its zygote's namespaces (NestEnv).
const (
	InitArg0  = "agentjail-init"
	UIDEnv    = "AGENTJAIL_JAIL_UID"
	ZygoteEnv = "AGENTJAIL_ZYGOTE"
	NestEnv   = "AGENTJAIL_NEST_UID"
)

// The per-user rlimits a jail's namespace is made with (soft and hard).
const (
	RlimitSigpending = 1024
	RlimitNproc      = 4096
	RlimitMsgqueue   = 102400
	RlimitMemlock    = 8 << 20
)

// SysmonSlackNS is the timer slack of the Go runtime's sysmon thread,
// in nanoseconds (boot/slack_linux.c).
const SysmonSlackNS = 2_000_000

// Boot says whether this binary has the C stages: boot sets it in its
// init, to BootLinked with cgo, to BootNoCgo without. Left at BootMissing,
// the binary does not import agentjail/nsjail/boot.
var Boot = BootMissing

// The values of Boot.
const (
	BootMissing = iota
	BootNoCgo
	BootLinked
)

// StandaloneInit, when boot sets it, opens the standalone init
// (boot/standalone/agentjail-init): the bootstrap and init stage as a
// small static program that a jail executes instead of this binary. It
// returns an error saying why when the binary holds none, or one built
// from other C than the binary's own.
var StandaloneInit func() (fs.File, error)
