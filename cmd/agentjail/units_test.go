package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"256MiB": 256 << 20, "1MiB": 1 << 20, "64k": 64 << 10, "1.5GiB": 3 << 29, "1000": 1000, "2MB": 2e6, "16 MiB": 16 << 20} {
		got, err := parseSize(in)
		assert.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"0", "-5MiB", "10XB", "", "MiB", "abc", "0.1"} {
		_, err := parseSize(bad)
		assert.Error(t, err, bad)
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"10s": 10 * time.Second, "500ms": 500 * time.Millisecond, "2": 2 * time.Second, "1m30s": 90 * time.Second} {
		got, err := parseDuration(in)
		assert.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"0", "-1s", "soon", ""} {
		_, err := parseDuration(bad)
		assert.Error(t, err, bad)
	}
}

func TestParseCount(t *testing.T) {
	n, err := parseCount("64")
	assert.NoError(t, err)
	assert.Equal(t, int64(64), n)
	for _, bad := range []string{"0", "-1", "1.5", "x"} {
		_, err := parseCount(bad)
		assert.Error(t, err, bad)
	}
}
