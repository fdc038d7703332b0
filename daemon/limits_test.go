package daemon

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/nsjail"
)

// The limits table is complete and agrees with every struct it drives: a
// field of nsjail.Limits without a row, or a row without its field in
// LimitValues (and, when it has a flag, in RequestLimits), fails here.
func TestLimitTable(t *testing.T) {
	var l nsjail.Limits
	lv := reflect.ValueOf(&l).Elem()
	fieldOf := map[uintptr]string{} // address in l → field name
	for i := range lv.NumField() {
		fieldOf[lv.Field(i).Addr().Pointer()] = lv.Type().Field(i).Name
	}
	wantType := map[LimitUnit]reflect.Type{
		UnitBytes: reflect.TypeFor[*int64](), UnitCount: reflect.TypeFor[*int64](),
		UnitMs: reflect.TypeFor[*time.Duration](), UnitCPUs: reflect.TypeFor[*float64](),
	}
	covered := map[string]string{} // nsjail.Limits field → key
	keys, flags := map[string]bool{}, map[string]bool{}
	for _, d := range limitTable {
		p := d.jail(&l)
		name, ok := fieldOf[reflect.ValueOf(p).Pointer()]
		require.True(t, ok, "%s: its accessor points outside nsjail.Limits", d.Key)
		assert.NotContains(t, covered, name, "%s: nsjail.Limits.%s has another row", d.Key, name)
		covered[name] = d.Key
		assert.Equal(t, wantType[d.Unit], reflect.TypeOf(p), "%s: nsjail.Limits.%s's type is not its unit's", d.Key, name)

		assert.False(t, keys[d.Key], "key %s twice", d.Key)
		keys[d.Key] = true
		switch d.Unit { // the unit is in the name
		case UnitBytes:
			assert.True(t, strings.HasSuffix(d.Key, "_bytes"), d.Key)
		case UnitMs:
			assert.True(t, strings.HasSuffix(d.Key, "_ms"), d.Key)
		case UnitCPUs:
			assert.Equal(t, "cpus", d.Key)
		}
		if d.Flag != "" {
			assert.False(t, flags[d.Flag], "flag --%s twice", d.Flag)
			flags[d.Flag] = true
			assert.NotEmpty(t, d.Help, "--%s has no help", d.Flag)
			assert.NotEqual(t, UnitCPUs, d.Unit, "--%s: a request's limits are integers", d.Flag)
		}
		assert.Greater(t, d.max, 0.0, d.Key)
	}
	for i := range lv.NumField() {
		assert.Contains(t, covered, lv.Type().Field(i).Name, "nsjail.Limits.%s has no row in the limits table", lv.Type().Field(i).Name)
	}

	// LimitValues (the configuration): a field for every row, in the
	// table's order, and nothing else.
	ct := reflect.TypeFor[LimitValues]()
	require.Equal(t, len(limitTable), ct.NumField(), "LimitValues has a field for each row, and no other")
	for i, d := range limitTable {
		f := ct.Field(i)
		assert.Equal(t, d.Key, f.Tag.Get("toml"), "LimitValues.%s", f.Name)
		want := reflect.TypeFor[int64]()
		if d.Unit == UnitCPUs {
			want = reflect.TypeFor[float64]()
		}
		assert.Equal(t, want, f.Type, "LimitValues.%s", f.Name)
	}

	// RequestLimits: a field for every row with a flag, in the table's
	// order, and nothing else.
	rt := reflect.TypeFor[RequestLimits]()
	var withFlag []string
	for _, d := range limitTable {
		if d.Flag != "" {
			withFlag = append(withFlag, d.Key)
		}
	}
	var fields []string
	for f := range rt.Fields() {
		fields = append(fields, strings.TrimSuffix(f.Tag.Get("json"), ",omitempty"))
		assert.Equal(t, reflect.TypeFor[*int64](), f.Type, "RequestLimits.%s", f.Name)
	}
	assert.Equal(t, withFlag, fields, "RequestLimits has a field for each row with a flag, and no other")
}

// Each row reads and writes its own field, both ways, in its key's unit.
func TestLimitTableConverts(t *testing.T) {
	def := nsjail.DefaultLimits()
	v := limitsOf(def)
	assert.Equal(t, LimitValues{MemoryBytes: 256 << 20, WallTimeMs: 10000, CPUTimeMs: 10000, Pids: 64, OutputBytes: 1 << 20,
		TmpBytes: 64 << 20, OpenFiles: 256, FileSizeBytes: 32 << 20, DisplayBytes: 2 << 20, CPUs: 1}, v)
	assert.Equal(t, def, v.nsjail(LimitValues{}))
	assert.Equal(t, def, LimitValues{}.nsjail(v), "a zero field takes the default's")

	var r RequestLimits
	for i, d := range limitTable {
		if d.Flag == "" {
			assert.Error(t, d.Set(&r, 1), d.Key)
			continue
		}
		require.NoError(t, d.Set(&r, testLimit(d, i)))
		assert.Equal(t, testLimit(d, i), **d.request(&r), d.Key)
	}
	l, err := r.apply(def, nil)
	require.NoError(t, err)
	for i, d := range limitTable {
		if d.Flag != "" {
			assert.Equal(t, limitValue{n: testLimit(d, i)}, d.get(&l), d.Key)
		}
	}
	assert.Equal(t, def.CPUs, l.CPUs)
}

// testLimit is a value for row i that no other row has and that its
// limit accepts: display_bytes is at most 8 MiB.
func testLimit(d Limit, i int) int64 {
	if d.Key == "display_bytes" {
		return int64(1+i) << 10
	}
	return int64(100+i) << 20
}
