package nsjail

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

type recordTap struct{ chunks []string }

func (r *recordTap) Output(stream int, all []byte, from int) {
	r.chunks = append(r.chunks, []string{"out:", "err:"}[stream]+string(all[from:]))
}

// The capture shows its tap each chunk it keeps, in order, and nothing
// past the output limit.
func TestCaptureTap(t *testing.T) {
	tap := &recordTap{}
	hits := 0
	c := &capture{limit: 6, onLimit: func() { hits++ }, tap: tap}
	c.add(0, []byte("ab"))
	c.add(1, []byte("cd"))
	c.add(0, []byte("efgh"))
	c.add(0, []byte("more"))
	assert.Equal(t, []string{"out:ab", "err:cd", "out:ef"}, tap.chunks)
	assert.Equal(t, 1, hits)
	assert.Equal(t, "abef", string(c.buf[0]))
}
