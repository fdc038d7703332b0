// Package wire holds the constants that the jail's C stages
// (agentjail/nsjail/boot: the bootstrap and the init stage, which run
// before the Go runtime starts) share with nsjail's Go side: the fds,
// message types, plan op codes, record kinds, environment variables and
// bounds of their conversation. nsjail names them under its own
// (unexported) names; boot checks each against its C twin at compile
// time, so both sides agree wherever this package is the source.
package wire

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

// The steps of a plan (plan.go's op codes).
const (
	OpUnshare = iota + 1
	OpMount
	OpBindRO
	OpMkdir
	OpSymlink
	OpWrite
	OpChmod
	OpIfExists
	OpUmount
	OpRmdir
	OpPivotRoot
	OpHostname
	OpDomainname
	OpLoopbackUp
	OpChdir
	OpSeccomp
	OpStdio
	OpRlimit
	OpExec
	OpKeepCaps
	OpAdopt
	OpAttach
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
