package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
)

// The process and file attacks of the catalogue (nsjail/attacks_test.go),
// as shell commands through a run's command: each tries to break the jail
// and must fail, and nothing of its jail is left on the host. They run in
// every start mode of the suite (a command itself always runs cold).
func TestCommandAttacks(t *testing.T) {
	j := &recordingJailer{r: realRunner(t)}
	mounts := systest.MountCount()
	_, _, c := startServer(t, testOptions(), j)
	secret := filepath.Join(t.TempDir(), "host-secret")
	require.NoError(t, os.WriteFile(secret, []byte("HOST-SECRET-7f3a"), 0o644))

	t.Run("fork bomb", func(t *testing.T) {
		res := runCommand(t, c, []string{"bash", "-c", "b(){ b | b & }; b; sleep 10"}, `,"limits":{"wall_time_ms":3000,"pids":64}`)
		assert.NotEqual(t, "ok", res.Status)
		assert.Positive(t, res.PidsLimitHits, "the pids limit refused forks")
		require.NotNil(t, res.PidsPeak)
		assert.LessOrEqual(t, *res.PidsPeak, int64(64))
	})
	t.Run("write outside workspace", func(t *testing.T) {
		res := runCommand(t, c, []string{"bash", "-c", `for p in /x /usr/x /usr/bin/x /etc/x /code/x /bin/x /proc/sys/kernel/hostname /sys/kernel/x /dev/x; do
			(echo pwned > "$p") 2>/dev/null && echo "WROTE $p"; done
			chmod 777 /usr/bin/bash 2>/dev/null && echo WROTE chmod
			touch /workspace/ok /tmp/ok && echo done`}, "")
		assert.Equal(t, "done\n", res.Stdout, res.Stderr)
	})
	t.Run("read shadow", func(t *testing.T) {
		res := runCommand(t, c, []string{"bash", "-c", "cat /etc/shadow /etc/gshadow /usr/../etc/shadow /proc/1/root/etc/shadow"}, "")
		assert.Equal(t, "error", res.Status)
		assert.Empty(t, res.Stdout)
		assert.NotContains(t, res.Stderr, "root:")
	})
	t.Run("proc 1 root escape", func(t *testing.T) {
		res := runCommand(t, c, []string{"bash", "-c", "cat /proc/1/root" + secret + " /proc/self/root" + secret + " " + secret +
			"; for p in /proc/[0-9]*/root /proc/[0-9]*/cwd; do cat $p" + secret + "; ls $p/root $p/home; done; ls -la /proc/1/root/"}, "")
		assert.NotContains(t, res.Stdout+res.Stderr, "HOST-SECRET")
		assert.NotContains(t, res.Stdout, "host-secret")
	})
	t.Run("setuid", func(t *testing.T) {
		res := runCommand(t, c, []string{"bash", "-c", `su -c "id -u" root </dev/null; mount -t tmpfs none /tmp; umount /workspace
			cp /usr/bin/bash /tmp/b && chmod u+s /tmp/b; /tmp/b -p -c "id -u"; newgrp root </dev/null; id -u; id -G`}, "")
		lines := strings.Fields(res.Stdout)
		for _, l := range lines {
			assert.NotEqual(t, "0", l, "a process of the jail got uid or gid 0: %s\n%s", res.Stdout, res.Stderr)
		}
		assert.NotEmpty(t, lines, res.Stderr)
		assert.Contains(t, res.Stderr, "mount")
	})
	j.noLeftovers(t, mounts)
	res := runCommand(t, c, []string{"bash", "-c", "echo still fine"}, "")
	assert.Equal(t, "still fine\n", res.Stdout)
}
