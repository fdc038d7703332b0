//go:build linux

package seccomp

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// AdoptCalls are the system calls a warm run's init makes once its filter
// is loaded (nsjail/boot/init_run_linux.c's aj_adopt): it reads msgAdopt (recvmsg,
// read, and malloc's brk, mmap, munmap, madvise, and mprotect, which musl's
// malloc calls on the pages it maps for its metadata once brk has failed:
// the standalone init is built with musl), reaps and waits for the
// program (wait4, ppoll), passes signals on to it (kill, and the handler's
// return), closes, sends an error record (sendto) and exits. The program's
// filter allows each of them too (TestAdoptCallsAreTheProgramsToo): the
// init may do less than its program, never more; TestKernelAdoptTail
// makes these calls under the filter, in the kernel.
var AdoptCalls = []string{
	"recvmsg", "read", "wait4", "ppoll", "kill", "rt_sigreturn", "restart_syscall",
	"close", "sendto", "brk", "mmap", "munmap", "madvise", "mprotect", "exit", "exit_group",
}

// adoptProgram is AdoptCalls as a filter: each allowed whatever its
// arguments (mmap without MAP_HUGETLB, as the program's filter has it),
// every other call, any x32 number and any other architecture fail with
// ENOSYS, as a forbidden call fails under the program's filter
// when no listener holds it (the init's filter has none).
//
// A warm run's init loaded the program's own filter before: some 500
// instructions, which the kernel checks, translates to eBPF, compiles and
// runs once per system call number (its action cache) at every load:
// 0.1 to 0.2 ms of the run's CPU (BENCHMARKS.md). This one is 24.
var adoptProgram = sync.OnceValue(func() *Program {
	const (
		ldW = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
	)
	var a assembler
	a.stmt(ldW, offArch)
	a.jump(jeq, auditArchX86_64, "", "enosys")
	a.stmt(ldW, offNr)
	for _, name := range AdoptCalls {
		nr, ok := syscallNumber(name)
		if !ok {
			panic(fmt.Sprintf("seccomp: adopt program: unknown system call %q", name))
		}
		to := "allow"
		if name == "mmap" {
			to = "mmap"
		}
		a.jump(jeq, uint32(nr), to, "")
	}
	a.label("enosys")
	a.stmt(ret, retErrno|uint32(unix.ENOSYS))
	// mmap as the program's filter has it: not with MAP_HUGETLB.
	a.label("mmap")
	a.stmt(ldW, offArgs+8*3)
	a.jump(unix.BPF_JMP|unix.BPF_JSET|unix.BPF_K, mapHugetlb, "enosys2", "")
	a.label("allow")
	a.stmt(ret, retAllow)
	a.label("enosys2")
	a.stmt(ret, retErrno|uint32(unix.ENOSYS))
	return &Program{Instructions: a.assemble()}
})

// AdoptProgramBytes is the filter of a warm run's init (adoptProgram), as
// MarshalBinary encodes it: what a warm run's build plan carries.
var AdoptProgramBytes = sync.OnceValue(func() []byte {
	b, err := adoptProgram().MarshalBinary()
	if err != nil {
		panic(err)
	}
	return b
})
