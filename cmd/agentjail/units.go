package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// parseSize reads a positive size: "256MiB", "1.5GiB", "64k", "1048576".
// K/M/G are 1024-based, like the MiB they abbreviate; KB/MB/GB are 1000-based.
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return !(r >= '0' && r <= '9' || r == '.' || r == '-' || r == '+') })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.TrimSpace(t[i:])
	}
	mult, ok := map[string]float64{
		"": 1, "b": 1,
		"k": 1 << 10, "ki": 1 << 10, "kib": 1 << 10, "kb": 1e3,
		"m": 1 << 20, "mi": 1 << 20, "mib": 1 << 20, "mb": 1e6,
		"g": 1 << 30, "gi": 1 << 30, "gib": 1 << 30, "gb": 1e9,
		"t": 1 << 40, "ti": 1 << 40, "tib": 1 << 40, "tb": 1e12,
	}[strings.ToLower(unit)]
	if !ok {
		return 0, fmt.Errorf("%q: unknown unit %q (use B, KiB, MiB, GiB, or KB, MB, GB)", s, unit)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return 0, fmt.Errorf("%q is not a size (e.g. 256MiB)", s)
	}
	v := f * mult
	if !(v >= 1) || v > 1<<62 {
		return 0, fmt.Errorf("%q must be a positive size", s)
	}
	return int64(v), nil
}

// parseDuration reads a positive duration: "10s", "500ms", "1m30s", or a
// bare number of seconds.
func parseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	d, err := time.ParseDuration(t)
	if err != nil {
		f, ferr := strconv.ParseFloat(t, 64)
		if ferr != nil {
			return 0, fmt.Errorf("%q is not a duration (e.g. 10s, 500ms)", s)
		}
		d = time.Duration(f * float64(time.Second))
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q must be a positive duration", s)
	}
	return d, nil
}

// parseCount reads a positive whole number.
func parseCount(s string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a whole number", s)
	}
	if n < 1 {
		return 0, fmt.Errorf("%q must be positive", s)
	}
	return n, nil
}
