// The standalone init: the jail's bootstrap and init stage
// (bootstrap_linux.c, init_*_linux.c) as a program of their own, built by
// scripts/build with musl (static, about 80 KB) and embedded in the
// daemon's binary (standalone.go). Executing it instead of the daemon's
// own static binary saves glibc's start (its CPU-feature probes, each a
// trap to the hypervisor in a VM) and the mapping and faults of a large
// binary: about 0.8 ms of machine CPU a jail (BENCHMARKS.md, "Cuts").
// musl calls constructors without arguments, so the bootstrap is called
// from main here; anything but the init stage's argv[0] is refused.

#include <string.h>
#include <unistd.h>

#include "../bootstrap_linux.h"

int main(int argc, char **argv, char **envp)
{
	aj_bootstrap_main(argc, argv, envp); // returns only when argv[0] is not the init stage's
	static const char msg[] = "agentjail-init: only the agentjail daemon starts this program\n";
	if (write(2, msg, sizeof msg - 1) < 0)
		return 2;
	return 2;
}
