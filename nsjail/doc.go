// Package nsjail runs one program in a jail of its own and says what
// happened. "nsjail" here means namespace jail: it is agentjail's own code
// and has nothing to do with Google's tool of that name.
//
// A jail is fresh user, pid, net, mount, ipc, uts and cgroup namespaces,
// a cgroup with the run's memory, pids and CPU limits, a root file system
// that holds only the Python runtime (read-only) and a size-limited tmpfs
// for /workspace, /tmp and /dev/shm, a dedicated host uid, no capabilities,
// no_new_privs and a seccomp filter. Spec says what to run and with which
// limits; Result is what happened, from kernel evidence: the exit or
// signal, the kill reason, peak memory, CPU and wall time, the forbidden
// system calls, the output and the collected files.
//
// # The life of one run
//
//	Runner.Run(ctx, spec)                       run_linux.go
//	  Spec.Validate, the interpreter checked on the host
//	  a prepared jail (prepared_linux.go), or one started now:
//	    coldFlow.start: vfork+exec of this binary        flow_linux.go
//	      as "agentjail-init" (jail.launch); its C bootstrap
//	      (bootstrap_linux.c) makes the user and pid namespaces, the
//	      jail's pid 1 is cloned as this process's child (childInit,
//	      pid1_linux.go); msgBuild: the file system (jail.sendBuild)
//	  coldFlow.run
//	    startProgram: the cgroup, stdio pipes, msgRequest (program,
//	      files, rlimits), msgGo (v1: the group's tasks files), msgSeccomp
//	      (the filter's listener)                        deliver_linux.go
//	    supervise: msgExec (the exec's time); the seccomp supervisor; the
//	      watchdog (wall, CPU, output, cancel) and what ends the whole
//	      jail (OOM, the guard: a warm run's zygote)     watchdog_linux.go
//	      the wait for pid 1; msgExit (the program's wait status); cgroup
//	      figures; collected files; Result.decide: status and kill
//	      reason                                         supervise_linux.go, result.go
//	    settle, cleanup: what is left killed, pid 1's handle and the
//	      guard given back, the mount namespace released, the cgroup
//	      removed                                        jail_linux.go
//
// A warm run (runWarm) is a jail whose flow is a warmFlow
// (warm_run_linux.go): its own start, prepare, startProgram and run,
// written top to bottom there, with the same shared steps. A flow is one
// small interface (jailFlow: start, prepare, startProgram, run); the
// shared steps never call back into it. A session (session_linux.go:
// open, life, End; its calls in session_call_linux.go) holds a jail of
// either flow for its life: its flow's startProgram, then the same
// seccomp supervisor, guard and watchdog.
//
// # Where Go ends and C begins
//
// Every decision about a jail is made in Go. The jail's own side is C
// (nsjail/boot: bootstrap_linux.c, init_*_linux.c) that runs before the Go
// runtime would start, so no Go runtime ever starts in a jail: the bootstrap because
// unshare(CLONE_NEWUSER) needs a process of one thread, the init stage
// because it saves the runtime's start on every run. The init stage
// carries out plans (plan.go): lists of steps, each a system call or a
// small fixed sequence of them, with the name a failure reports; it checks
// that a plan is well formed before it runs any step of it, and decides
// nothing else. It then stays as the jail's pid 1: it starts the program
// (vfork, exec), reaps every child, forwards signals to the program,
// reports the program's exact end, and exits when the program ends, upon
// which the kernel kills whatever is left in the jail. It holds no
// capability and runs under the same seccomp filter as the program.
//
// # Where the protocol and the plans are drawn
//
// protocol.go draws the conversation between the parent and the init
// stage, message by message, and frames the messages; handshake_linux.go
// is the parent's side of it. plan.go holds the build plan (the file
// system, the identity, the network: the same for every run of a Runner)
// and the request plan (the program, its files, stdio and rlimits);
// internal/wire's Plan encodes them, for plan.go and for the tests of the
// C decoder alike. boot/bootstrap_linux.h holds the C side's constants,
// which boot/boot_linux.go checks at compile time against internal/wire's,
// the Go names of this package's own.
//
// # No process-wide side effects
//
// The C stages run from a constructor (or, in the standalone init that
// scripts/build embeds, from its main: Runner.ExeFile), and slack_linux.c
// wraps pthread_create: both in nsjail/boot, which only a binary that runs jails
// imports (cmd/agentjail's main.go; the tests of nsjail and daemon, in a
// _test.go file). A program that imports this package alone gets neither,
// and NewRunner says ErrNoBootstrap (nsjail/internal/noboot's test).
package nsjail
