package systest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Another tenant's mounts (a Kubernetes node's pods, a CI runner's
// containers) come and go while the tests run: the leftover check counts
// only the mounts below agentjail's state directory.
func TestAgentjailMountsIgnoresOtherTenants(t *testing.T) {
	mountinfo := []byte(`22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 0:25 / /run rw,nosuid,nodev shared:5 - tmpfs tmpfs rw,size=1000k
41 30 0:40 / /run/agentjail/root rw,nosuid,nodev - tmpfs tmpfs rw,size=64k
42 22 0:41 / /var/lib/kubelet/pods/0c1d/volumes/kubernetes.io~projected/kube-api-access rw - tmpfs tmpfs rw
43 22 0:42 / /run/containerd/io.containerd.runtime.v2.task/k8s.io/ab12/rootfs rw - overlay overlay rw,lowerdir=/x
44 22 0:43 / /run/agentjail2 rw - tmpfs tmpfs rw
45 30 0:44 / /run/agentjail/with\040space rw - tmpfs tmpfs rw
46 30 0:45 / /run/agentjail rw - tmpfs tmpfs rw
`)
	got := AgentjailMounts(mountinfo)
	assert.Len(t, got, 3, "%q", got)
	for _, l := range got {
		assert.Contains(t, l, "/run/agentjail")
		assert.NotContains(t, l, "/run/agentjail2")
	}
	assert.Equal(t, "/run/agentjail/with space", unescapeMountinfo(`/run/agentjail/with\040space`))
	assert.Equal(t, `/a\b`, unescapeMountinfo(`/a\134b`))
}

// FilesOf finds what a uid left on a host file system, within its depth.
func TestFilesOf(t *testing.T) {
	Require(t, Root)
	dir := t.TempDir()
	deep := filepath.Join(dir, "a", "b", "c")
	require.NoError(t, os.MkdirAll(deep, 0o755))
	for _, p := range []string{filepath.Join(dir, "a", "f"), filepath.Join(deep, "g")} {
		require.NoError(t, os.WriteFile(p, nil, 0o644))
		require.NoError(t, os.Chown(p, 2000000999, 2000000999))
	}
	assert.Equal(t, []string{filepath.Join(dir, "a", "f")}, FilesOf(2000000999, 2, dir))
	assert.Len(t, FilesOf(2000000999, 4, dir), 2)
	assert.Empty(t, FilesOf(2000000998, 4, dir))
}
