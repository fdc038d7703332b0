package daemon

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"agentjail/nsjail"
)

// The limits table: every field of nsjail.Limits and all it is called
// outside the jail. It drives the configuration's [limits.default] and
// [limits.max] (their keys, defaults, maxima, the check that a default is
// not above its maximum), the request's "limits" (RequestLimits.apply) and
// the limit flags of `agentjail run`, and which limits a session and a
// call of it take (Scope). A new limit is a field of
// nsjail.Limits (with its default and validation there), a row here, and
// the field of that key in LimitValues and, when a request may set it, in
// RequestLimits: TestLimitTable fails until all of them are there.
var limitTable = []Limit{
	{Key: "memory_bytes", Scope: ScopeRun | ScopeSession, Unit: UnitBytes, Flag: "memory", Help: "memory limit, swap off (e.g. 256MiB)", max: 4 << 30,
		jail: func(l *nsjail.Limits) any { return &l.MemoryBytes }},
	{Key: "wall_time_ms", Scope: ScopeRun | ScopeCall, Unit: UnitMs, Flag: "timeout", Help: "wall-clock limit (e.g. 10s)", max: 300_000,
		jail: func(l *nsjail.Limits) any { return &l.WallTime }},
	{Key: "cpu_time_ms", Scope: ScopeRun | ScopeSession | ScopeCall, Unit: UnitMs, Flag: "cpu-time", Help: "CPU time of all processes (e.g. 5s)", max: 300_000,
		jail: func(l *nsjail.Limits) any { return &l.CPUTime }},
	{Key: "pids", Scope: ScopeRun | ScopeSession, Unit: UnitCount, Flag: "pids", Help: "processes and threads (e.g. 64)", max: 1024,
		jail: func(l *nsjail.Limits) any { return &l.Pids }},
	{Key: "output_bytes", Scope: ScopeRun | ScopeCall, Unit: UnitBytes, Flag: "output-limit", Help: "stdout+stderr captured before the jail is killed (e.g. 1MiB)", max: 64 << 20,
		jail: func(l *nsjail.Limits) any { return &l.OutputBytes }},
	{Key: "tmp_bytes", Scope: ScopeRun | ScopeSession, Unit: UnitBytes, Flag: "tmp-size", Help: "size of /workspace, /tmp and /dev/shm together (e.g. 64MiB)", max: 1 << 30,
		jail: func(l *nsjail.Limits) any { return &l.TmpBytes }},
	{Key: "open_files", Scope: ScopeRun | ScopeSession, Unit: UnitCount, Flag: "open-files", Help: "open file descriptors per process (e.g. 256)", max: 4096,
		jail: func(l *nsjail.Limits) any { return &l.OpenFiles }},
	{Key: "file_size_bytes", Scope: ScopeRun | ScopeSession, Unit: UnitBytes, Flag: "file-size", Help: "largest file a process may write (e.g. 32MiB)", max: 1 << 30,
		jail: func(l *nsjail.Limits) any { return &l.FileSizeBytes }},
	{Key: "display_bytes", Scope: ScopeRun | ScopeCall, Unit: UnitBytes, Flag: "display-bytes", Help: "rich outputs (figures, HTML) kept in the result (e.g. 2MiB)", max: nsjail.MaxDisplayBytes,
		jail: func(l *nsjail.Limits) any { return &l.DisplayBytes }},
	// No flag and no request field: docs/contract.md has none, and the
	// daemon's limits.default.cpus is every jail's share of the host. Its
	// maximum only bounds limits.default.cpus.
	{Key: "cpus", Scope: ScopeRun, Unit: UnitCPUs, max: 1024,
		jail: func(l *nsjail.Limits) any { return &l.CPUs }},
}

// LimitTable returns the limits table (a copy), in the order of
// docs/contract.md §3.
func LimitTable() []Limit { return append([]Limit(nil), limitTable...) }

// A Limit is one row of the limits table.
type Limit struct {
	// Key is the limit's key in the request's "limits" and in the
	// configuration's [limits.default] and [limits.max]; its unit is in
	// its name.
	Key  string
	Unit LimitUnit
	// Scope says what the limit bounds: a run, a session as a whole (its
	// CPU time: all its calls together), a call of a session.
	Scope LimitScope
	// Flag is the flag of `agentjail run` that sets it, and Help that
	// flag's help; "" when a request cannot set the limit.
	Flag, Help string
	// max is the default of limits.max, in Unit: generous for one
	// program, and small enough that a few jails at the maximum cannot
	// take the host down. (The default of limits.default is
	// nsjail.DefaultLimits', docs/contract.md §3's.)
	max float64
	// jail points at the limit's field in nsjail.Limits: an *int64 for
	// bytes and counts, a *time.Duration for milliseconds, a *float64 for
	// CPUs.
	jail func(*nsjail.Limits) any
}

// LimitUnit is the unit of a limit, which says how it is written: an
// integer in the request and the configuration (CPUs may be fractional,
// in the configuration only), and on the command line a size, a duration
// or a count.
type LimitUnit int

const (
	UnitBytes LimitUnit = iota // "256MiB" on the command line
	UnitMs                     // a time.Duration in nsjail.Limits; "10s" on the command line
	UnitCount
	UnitCPUs
)

// A limitValue is one limit in its key's unit: n for bytes, milliseconds
// and counts, cpus for CPUs. The zero value is a limit not set.
type limitValue struct {
	n    int64
	cpus float64
}

func (v limitValue) zero() bool { return v == limitValue{} }

// get reads the limit from l.
func (d *Limit) get(l *nsjail.Limits) limitValue {
	switch p := d.jail(l).(type) {
	case *int64:
		return limitValue{n: *p}
	case *time.Duration:
		return limitValue{n: p.Milliseconds()}
	case *float64:
		return limitValue{cpus: *p}
	}
	panic("limit " + d.Key + ": a field type the limits table lacks")
}

// set writes the limit into l.
func (d *Limit) set(l *nsjail.Limits, v limitValue) {
	switch p := d.jail(l).(type) {
	case *int64:
		*p = v.n
	case *time.Duration:
		*p = time.Duration(v.n) * time.Millisecond
	case *float64:
		*p = v.cpus
	default:
		panic("limit " + d.Key + ": a field type the limits table lacks")
	}
}

// maxValue is the limit's default maximum.
func (d *Limit) maxValue() limitValue {
	if d.Unit == UnitCPUs {
		return limitValue{cpus: d.max}
	}
	return limitValue{n: int64(d.max)}
}

// milliCPUs is c in thousandths, the precision at which CPU limits are
// compared and shown.
func milliCPUs(c float64) int64 { return int64(math.Round(c * 1000)) }

// above tells whether a is more than b.
func (d *Limit) above(a, b limitValue) bool {
	if d.Unit == UnitCPUs {
		return milliCPUs(a.cpus) > milliCPUs(b.cpus)
	}
	return a.n > b.n
}

// format writes v as the configuration does.
func (d *Limit) format(v limitValue) string {
	if d.Unit == UnitCPUs {
		return strconv.FormatFloat(float64(milliCPUs(v.cpus))/1000, 'f', -1, 64)
	}
	return strconv.FormatInt(v.n, 10)
}

// Human writes n, in the limit's unit, as its flag takes it: 4GiB, 5m0s,
// 64. A size that is no whole number (below 10000) of KiB, MiB, GiB or
// TiB is written in bytes and, past 1 KiB, about in the largest of them:
// "4294967297 bytes (4.0GiB)". A number of milliseconds too large for
// Go's time.Duration is written in milliseconds.
func (d *Limit) Human(n int64) string {
	switch d.Unit {
	case UnitBytes:
		units := []struct {
			name string
			size int64
		}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}
		for _, u := range units {
			if n >= u.size && n%u.size == 0 && n/u.size < 10_000 {
				return fmt.Sprintf("%d%s", n/u.size, u.name)
			}
		}
		for _, u := range units {
			if n >= u.size {
				return fmt.Sprintf("%d bytes (%.1f%s)", n, float64(n)/float64(u.size), u.name)
			}
		}
		return fmt.Sprintf("%dB", n)
	case UnitMs:
		if n > math.MaxInt64/int64(time.Millisecond) || n < 0 {
			return fmt.Sprintf("%dms", n)
		}
		return (time.Duration(n) * time.Millisecond).String()
	}
	return strconv.FormatInt(n, 10)
}

// The fields of LimitValues and RequestLimits, by key (their TOML and JSON
// names).
var (
	configFields  = fieldsByTag(reflect.TypeFor[LimitValues](), "toml")
	requestFields = fieldsByTag(reflect.TypeFor[RequestLimits](), "json")
)

func fieldsByTag(t reflect.Type, tag string) map[string]int {
	m := map[string]int{}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get(tag), ",")
		m[name] = i
	}
	return m
}

// config reads the limit from v.
func (d *Limit) config(v *LimitValues) limitValue {
	f := reflect.ValueOf(v).Elem().Field(configFields[d.Key])
	if f.Kind() == reflect.Float64 {
		return limitValue{cpus: f.Float()}
	}
	return limitValue{n: f.Int()}
}

// setConfig writes the limit into v.
func (d *Limit) setConfig(v *LimitValues, x limitValue) {
	f := reflect.ValueOf(v).Elem().Field(configFields[d.Key])
	if f.Kind() == reflect.Float64 {
		f.SetFloat(x.cpus)
	} else {
		f.SetInt(x.n)
	}
}

// request is the limit's field in r; nil when a request cannot set it.
func (d *Limit) request(r *RequestLimits) **int64 {
	i, ok := requestFields[d.Key]
	if !ok {
		return nil
	}
	return reflect.ValueOf(r).Elem().Field(i).Addr().Interface().(**int64)
}

// Set sets the limit in r to v, in its key's unit (what its flag gives).
func (d *Limit) Set(r *RequestLimits, v int64) error {
	p := d.request(r)
	if p == nil {
		return fmt.Errorf("a request cannot set %s", d.Key)
	}
	*p = &v
	return nil
}
