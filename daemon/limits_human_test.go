package daemon

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/nsjail"
)

// A limit in a message is written as its flag takes it, not in raw bytes
// or milliseconds (issue 31 item 7).
func TestLimitHuman(t *testing.T) {
	row := func(key string) *Limit {
		for i := range limitTable {
			if limitTable[i].Key == key {
				return &limitTable[i]
			}
		}
		t.Fatalf("no limit %s", key)
		return nil
	}
	mem, wall, pids := row("memory_bytes"), row("wall_time_ms"), row("pids")
	for n, want := range map[int64]string{
		100 << 30: "100GiB", 4 << 30: "4GiB", 256 << 20: "256MiB", 512 << 10: "512KiB", 2 << 40: "2TiB", 1000: "1000B",
		4<<30 + 1: "4294967297 bytes (4.0GiB)", 1e11: "100000000000 bytes (93.1GiB)", 1536 << 20: "1536MiB",
	} {
		assert.Equal(t, want, mem.Human(n), "%d", n)
	}
	assert.Equal(t, "5m0s", wall.Human(300_000))
	assert.Equal(t, "1.5s", wall.Human(1500))
	assert.Equal(t, "9223372036854775807ms", wall.Human(1<<63-1), "too long for a time.Duration")
	assert.Equal(t, "64", pids.Human(64))

	max := nsjail.DefaultLimits()
	max.MemoryBytes = 4 << 30
	big := int64(100 << 30)
	_, err := (&RequestLimits{MemoryBytes: &big}).apply(nsjail.DefaultLimits(), &max)
	require.Error(t, err)
	assert.Equal(t, "limits.memory_bytes: 100GiB is above this daemon's maximum of 4GiB", err.Error())
	huge := int64(2 << 40)
	_, err = (&RequestLimits{MemoryBytes: &huge}).apply(nsjail.DefaultLimits(), nil)
	assert.EqualError(t, err, "limits.memory_bytes: 2TiB is absurdly large")
}
