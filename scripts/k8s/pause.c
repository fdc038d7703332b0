/* The pod sandbox ("pause") process of scripts/k8stest's containerds: it
 * holds the pod's namespaces, reaps orphans, and exits on SIGINT/SIGTERM.
 * Built static, so the image needs nothing else. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig)
{
	(void)sig;
	_exit(0);
}
static void reap(int sig)
{
	(void)sig;
	while (waitpid(-1, 0, WNOHANG) > 0) {
	}
}

int main(void)
{
	struct sigaction s = {0};
	s.sa_handler = stop;
	sigaction(SIGINT, &s, 0);
	sigaction(SIGTERM, &s, 0);
	s.sa_handler = reap;
	s.sa_flags = SA_NOCLDSTOP;
	sigaction(SIGCHLD, &s, 0);
	for (;;)
		pause();
}
