package nsjail

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A message with more fds than maxMsgFds is refused whole: the kernel
// would otherwise cut the list (MSG_CTRUNC), and the init stage would
// take the fds it got for others (the cgroup files for stdio).
func TestMessageWithTooManyFdsIsRefused(t *testing.T) {
	for _, n := range []int{maxMsgFds, maxMsgFds + 1} {
		sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		require.NoError(t, err)
		send, recv := os.NewFile(uintptr(sp[0]), "send"), fdConn(sp[1])
		null, err := os.Open(os.DevNull)
		require.NoError(t, err)
		fds := make([]int, n)
		for i := range fds {
			fds[i] = int(null.Fd())
		}
		before := countFds()
		require.NoError(t, sendMsgFds(send, msgConfig, []byte("{}"), fds))
		typ, payload, got, err := recv.readMsgFds()
		if n <= maxMsgFds {
			require.NoError(t, err)
			assert.Equal(t, msgConfig, typ)
			assert.Equal(t, "{}", string(payload))
			assert.Len(t, got, n)
			closeFds(got)
		} else {
			assert.ErrorContains(t, err, "more than")
			assert.Empty(t, got)
		}
		assert.Equal(t, before, countFds(), "no received fd left open (%d sent)", n)
		null.Close()
		send.Close()
		unix.Close(sp[1])
	}
}

// warmConfig must still be a runConfig, with every field set: a field it
// lacks is decoded cold by the request.
func TestWarmConfigSetsEveryField(t *testing.T) {
	d := json.NewDecoder(strings.NewReader(warmConfig))
	d.DisallowUnknownFields()
	var cfg runConfig
	require.NoError(t, d.Decode(&cfg))
	v := reflect.ValueOf(cfg)
	for i := range v.NumField() {
		assert.False(t, v.Field(i).IsZero(), "warmConfig leaves runConfig.%s unset", v.Type().Field(i).Name)
	}
}
