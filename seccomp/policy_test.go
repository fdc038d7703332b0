//go:build linux

package seccomp

import (
	"encoding/json"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestDefaultPolicyIsValid(t *testing.T) {
	require.NoError(t, DefaultPolicy().Validate())
	// Every call the table knows up to KnownThrough has an explicit rule, so
	// that raising KnownThrough forces a decision for each new call.
	p := DefaultPolicy()
	for nr := 0; nr <= p.KnownThrough; nr++ {
		if name := SyscallName(nr); name != "" {
			require.NotEmpty(t, p.rulesFor(name), "%d %s has no rule", nr, name)
		}
	}
}

func TestValidateRejects(t *testing.T) {
	base := func(extra ...Rule) *Policy {
		return &Policy{KnownThrough: 471, Rules: append([]Rule{{Syscall: "read", Action: Allow}}, extra...)}
	}
	for _, tc := range []struct {
		name string
		p    *Policy
		want string
	}{
		{"unknown name", base(Rule{Syscall: "frobnicate", Action: Allow}), "unknown x86_64 system call"},
		{"above KnownThrough", &Policy{KnownThrough: 400, Rules: []Rule{{Syscall: "mseal", Action: Allow}}}, "above KnownThrough"},
		{"KnownThrough outside table", &Policy{KnownThrough: 5000}, "outside the syscall table"},
		{"allowed and forbidden", base(Rule{Syscall: "read", Action: Forbid}), "second unconditional rule"},
		{"unconditional swallows conditional", base(Rule{Syscall: "socket", Action: Allow},
			Rule{Syscall: "socket", Action: Allow, When: []Cond{{Arg: 0, Mask: 0xff, Value: 1}}}), "together with other rules"},
		{"conditional then forbid", base(Rule{Syscall: "socket", Action: Allow, When: []Cond{{Arg: 0, Mask: 0xff, Value: 1}}},
			Rule{Syscall: "socket", Action: Forbid}), "together with other rules"},
		{"condition on forbid", base(Rule{Syscall: "socket", Action: Forbid, When: []Cond{{Arg: 0, Mask: 1, Value: 1}}}), "only Allow, Succeed and Errno rules"},
		{"errno and allow overlap", base(Rule{Syscall: "preadv2", Action: Allow, When: []Cond{{Arg: 5, Mask: 8, Value: 0}}},
			Rule{Syscall: "preadv2", Action: Errno, Errno: syscall.EOPNOTSUPP, When: []Cond{{Arg: 5, Mask: 1, Value: 1}}}), "overlap"},
		{"mask 0", base(Rule{Syscall: "socket", Action: Allow, When: []Cond{{Arg: 0, Mask: 0, Value: 0}}}), "mask 0"},
		{"value outside mask", base(Rule{Syscall: "socket", Action: Allow, When: []Cond{{Arg: 0, Mask: 0xf, Value: 0x10}}}), "can never hold"},
		{"arg 6", base(Rule{Syscall: "socket", Action: Allow, When: []Cond{{Arg: 6, Mask: 1, Value: 1}}}), "argument index 6"},
		{"two conds one arg", base(Rule{Syscall: "socket", Action: Allow, When: []Cond{{Arg: 0, Mask: 1, Value: 1}, {Arg: 0, Mask: 2, Value: 2}}}), "two conditions"},
		{"errno 0", base(Rule{Syscall: "clone3", Action: Errno}), "errno 0"},
		{"errno on allow", base(Rule{Syscall: "clone3", Action: Allow, Errno: syscall.EPERM}), "Errno set"},
		{"errno on succeed", base(Rule{Syscall: "fsync", Action: Succeed, Errno: syscall.EPERM}), "Errno set"},
		{"except on succeed", base(Rule{Syscall: "fsync", Action: Succeed, Except: &Except{Arg: 0, Values: []uint32{1}}}), "Except on a succeed"},
		{"succeed and allow overlap", base(Rule{Syscall: "msync", Action: Allow, When: []Cond{{Arg: 2, Mask: 4, Value: 0}}},
			Rule{Syscall: "msync", Action: Succeed, When: []Cond{{Arg: 2, Mask: 1, Value: 1}}}), "overlap"},
		{"succeed and allow on different arguments", base(Rule{Syscall: "msync", Action: Allow, When: []Cond{{Arg: 2, Mask: 4, Value: 0}}},
			Rule{Syscall: "msync", Action: Succeed, When: []Cond{{Arg: 1, Mask: 4, Value: 4}}}), "overlap"},
		{"except on forbid", base(Rule{Syscall: "ioctl", Action: Forbid, Except: &Except{Arg: 1, Values: []uint32{1}}}), "Except on a forbid"},
		{"except without values", base(Rule{Syscall: "ioctl", Action: Allow, Except: &Except{Arg: 1}}), "Except needs"},
		{"bad action", base(Rule{Syscall: "ioctl", Action: Action(7)}), "invalid action"},
		{"nothing allowed", &Policy{KnownThrough: 471, Rules: []Rule{{Syscall: "read", Action: Forbid}}}, "allows nothing"},
	} {
		err := tc.p.Validate()
		require.Error(t, err, tc.name)
		require.ErrorContains(t, err, tc.want, tc.name)
	}
}

func TestDecide(t *testing.T) {
	p := DefaultPolicy()
	nr := func(n string) int { v, _ := syscallNumber(n); return v }
	require.Equal(t, uint32(retAllow), p.decide(nr("read"), [6]uint64{}))
	require.Equal(t, uint32(retForbid), p.decide(nr("ptrace"), [6]uint64{}))
	require.Equal(t, uint32(retForbid), p.decide(nr("tuxcall"), [6]uint64{}), "known without a rule")
	require.Equal(t, uint32(retErrno|uint32(syscall.ENOSYS)), p.decide(nr("clone3"), [6]uint64{}))
	require.Equal(t, uint32(retErrno|uint32(syscall.ENOSYS)), p.decide(400, [6]uint64{}), "hole")
	require.Equal(t, uint32(retErrno|uint32(syscall.ENOSYS)), p.decide(p.KnownThrough+1, [6]uint64{}), "newer")
	require.Equal(t, uint32(retForbid), p.decide(nr("ioctl"), [6]uint64{0, 7<<32 | tiocsti}))
	require.Equal(t, uint32(retAllow), p.decide(nr("ioctl"), [6]uint64{0, 0x5401}))
	require.Equal(t, uint32(retAllow), p.decide(nr("socket"), [6]uint64{afInet6, sockStream | 0x800, ipprotoTCP}))
	require.Equal(t, uint32(retForbid), p.decide(nr("socket"), [6]uint64{afInet6, 3, ipprotoTCP}))
	// Succeed: ERRNO with errno 0.
	require.Equal(t, uint32(retErrno), p.decide(nr("fsync"), [6]uint64{}))
	require.Equal(t, uint32(retErrno), p.decide(nr("msync"), [6]uint64{0, 0, msSync}))
	require.Equal(t, uint32(retAllow), p.decide(nr("msync"), [6]uint64{0, 0, 1 /* MS_ASYNC */}))
	require.Equal(t, uint32(retForbid), p.decide(nr("io_setup"), [6]uint64{4096}))
	require.Equal(t, uint32(retForbid), p.decide(nr("sync"), [6]uint64{}))
}

func TestValidateAcceptsDisjointActions(t *testing.T) {
	p := &Policy{KnownThrough: 471, Rules: []Rule{
		{Syscall: "read", Action: Allow},
		{Syscall: "msync", Action: Allow, When: []Cond{{Arg: 2, Mask: 4, Value: 0}}},
		{Syscall: "msync", Action: Succeed, When: []Cond{{Arg: 2, Mask: 4, Value: 4}, {Arg: 0, Mask: 1, Value: 0}}},
		{Syscall: "fsync", Action: Succeed},
	}}
	require.NoError(t, p.Validate())
	require.Equal(t, "succeed", Succeed.String())
}

func TestMode(t *testing.T) {
	for _, m := range []Mode{ModeErrno, ModeKill} {
		b, err := json.Marshal(m)
		require.NoError(t, err)
		var back Mode
		require.NoError(t, json.Unmarshal(b, &back))
		require.Equal(t, m, back)
	}
	b, _ := json.Marshal(ModeKill)
	require.Equal(t, `"kill"`, string(b))
	_, err := ParseMode("trap")
	require.Error(t, err)
	_, err = json.Marshal(Mode(9))
	require.Error(t, err)
	require.Equal(t, ModeErrno, Mode(0), "the zero value is the contract's default")
}

func TestCollectorReport(t *testing.T) {
	var c Collector
	require.Nil(t, c.Report())
	b, _ := json.Marshal(c.Report())
	require.Equal(t, "null", string(b))

	c.Add(101)
	c.Add(321)
	c.Add(101)
	b, err := json.Marshal(c.Report())
	require.NoError(t, err)
	require.JSONEq(t, `{"syscall":"ptrace","number":101,"calls":[{"syscall":"ptrace","number":101,"count":2},{"syscall":"bpf","number":321,"count":1}]}`, string(b))

	c.Add(999) // a number the table does not know
	r := c.Report()
	require.Equal(t, CallCount{Syscall: "", Number: 999, Count: 1}, r.Calls[2])
	r.Calls[0].Count = 100
	require.Equal(t, 2, c.Report().Calls[0].Count, "Report returns a copy")

	var wg sync.WaitGroup
	var cc Collector
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				cc.Add(i % 3)
			}
		}()
	}
	wg.Wait()
	total := 0
	for _, x := range cc.Report().Calls {
		total += x.Count
	}
	require.Equal(t, 8000, total)
}

func TestCollectorForeignAndTotal(t *testing.T) {
	var c Collector
	require.Zero(t, c.Total())
	c.Add(20) // writev
	require.Equal(t, 2, c.AddViolation(Violation{Number: 20, Arch: auditArchI386, Foreign: true}))
	c.AddViolation(Violation{Number: x32SyscallBit | 272, Arch: auditArchX86_64, Foreign: true})
	c.AddViolation(Violation{Number: 20, Arch: auditArchI386, Foreign: true})
	c.AddViolation(Violation{Number: 5, Arch: 0xc00000b7, Foreign: true})
	require.Equal(t, 5, c.Total())
	require.Equal(t, 4, c.Foreign())
	b, err := json.Marshal(c.Report())
	require.NoError(t, err)
	require.JSONEq(t, `{"syscall":"writev","number":20,"calls":[
		{"syscall":"writev","number":20,"count":1},
		{"syscall":"","number":20,"count":2,"abi":"i386"},
		{"syscall":"","number":1073742096,"count":1,"abi":"x32"},
		{"syscall":"","number":5,"count":1,"abi":"arch 0xc00000b7"}]}`, string(b))

	var f Collector
	f.AddViolation(Violation{Number: 20, Arch: auditArchI386, Foreign: true})
	r := f.Report()
	require.Equal(t, &Report{Syscall: "", Number: 20, ABI: "i386", Calls: []CallCount{{"", 20, 1, "i386", ""}}}, r)
	require.Equal(t, "", Violation{Number: 39, Arch: auditArchX86_64}.ABI())
}

func TestProgramMarshalRoundTrip(t *testing.T) {
	p := &Program{Instructions: []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 4},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 1, Jf: 2, K: auditArchX86_64},
		{Code: unix.BPF_RET | unix.BPF_K, K: retAllow},
	}}
	b, err := p.MarshalBinary()
	require.NoError(t, err)
	require.Len(t, b, 24)
	var q Program
	require.NoError(t, q.UnmarshalBinary(b))
	require.Equal(t, p.Instructions, q.Instructions)

	require.Error(t, q.UnmarshalBinary(b[:23]), "partial instruction")
	require.Error(t, q.UnmarshalBinary(nil), "empty")
	require.Error(t, q.UnmarshalBinary(b[:16]), "no return at the end")
	require.Error(t, q.UnmarshalBinary(make([]byte, 8*(maxInstructions+1))), "too long")
	_, err = (&Program{}).MarshalBinary()
	require.Error(t, err)
}

// TestPrefix runs the hand-written prefix alone (followed by a return
// that stands for libseccomp's program) so that a wrong jump offset shows as
// the wrong decision, not as a lucky fall-through.
func TestPrefix(t *testing.T) {
	const rest = 0x7ffdead0 // stands for "libseccomp's program decides"
	const enosysRet = retErrno | uint32(unix.ENOSYS)
	prog := append(prefix(DefaultPolicy()), unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: rest})
	for _, tc := range []struct {
		in   input
		want uint32
	}{
		{input{nr: 16, arch: auditArchX86_64, args: [6]uint64{0, tiocsti}}, retForbid},
		{input{nr: 16, arch: auditArchX86_64, args: [6]uint64{0, tioclinux}}, retForbid},
		{input{nr: 16, arch: auditArchX86_64, args: [6]uint64{0, 5<<32 | tiocsti}}, retForbid},
		{input{nr: 16, arch: auditArchX86_64, args: [6]uint64{0, 0x5401}}, rest},
		{input{nr: 16, arch: auditArchX86_64, args: [6]uint64{tiocsti, 0}}, rest},
		{input{nr: 157, arch: auditArchX86_64, args: [6]uint64{prSetSeccomp}}, retForbid},
		{input{nr: 157, arch: auditArchX86_64, args: [6]uint64{9<<32 | prSetSeccomp}}, retForbid},
		{input{nr: 157, arch: auditArchX86_64, args: [6]uint64{38}}, rest},
		{input{nr: 157, arch: auditArchX86_64, args: [6]uint64{0, prSetSeccomp}}, rest},
		{input{nr: 16 | x32SyscallBit, arch: auditArchX86_64, args: [6]uint64{0, tiocsti}}, retForbid},
		{input{nr: 16, arch: auditArchI386, args: [6]uint64{0, tiocsti}}, retForbid},
		{input{nr: 31, arch: auditArchX86_64, args: [6]uint64{0, shmLock}}, retForbid},
		{input{nr: 31, arch: auditArchX86_64, args: [6]uint64{0, 1<<32 | shmLock}}, retForbid},
		{input{nr: 31, arch: auditArchX86_64, args: [6]uint64{0, 12 /* SHM_UNLOCK */}}, rest},
		{input{nr: 0, arch: auditArchX86_64}, rest},
		{input{nr: 336, arch: auditArchX86_64}, rest},
		{input{nr: 337, arch: auditArchX86_64}, enosysRet},
		{input{nr: 423, arch: auditArchX86_64}, enosysRet},
		{input{nr: 424, arch: auditArchX86_64}, rest},
		{input{nr: 471, arch: auditArchX86_64}, rest},
		{input{nr: 472, arch: auditArchX86_64}, enosysRet},
		{input{nr: 0x3fffffff, arch: auditArchX86_64}, enosysRet},
		{input{nr: -1, arch: auditArchX86_64}, enosysRet},
		{input{nr: 39 | x32SyscallBit, arch: auditArchX86_64}, retForbid},
		{input{nr: 500, arch: auditArchI386}, retForbid},
		{input{nr: 0, arch: 0xc00000b7 /* aarch64 */}, retForbid},
		{input{nr: -2, arch: auditArchX86_64}, retForbid},
	} {
		got, err := run(prog, tc.in)
		require.NoError(t, err)
		require.Equal(t, retString(tc.want), retString(got), "%+v", tc.in)
	}
	require.Equal(t, [][2]int{{337, 423}}, holes(471))
	require.Equal(t, [][2]int{{337, 423}, {472, 511}}, holes(511))
}
