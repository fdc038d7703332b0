package jsontext

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// WriteString writes byte for byte what encoding/json writes.
func TestWriteStringIsEncodingJSON(t *testing.T) {
	for _, s := range []string{
		"", "plain", `a"b\c`, "\x00\x01\x08\x0c\x1f\x7f", "\n\r\t", "\xff\xfe", "cut \xe2\x82", "\u2028\u2029",
		"<script>&amp;</script>", "emoji 😀 and ü", strings.Repeat("\x00", 1000),
	} {
		want, err := Marshal(s)
		require.NoError(t, err)
		var std bytes.Buffer
		enc := json.NewEncoder(&std)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(s))
		assert.Equal(t, std.String(), string(want), "Marshal is encoding/json without HTML escaping")
		var got bytes.Buffer
		bw := bufio.NewWriter(&got)
		WriteString(bw, s)
		require.NoError(t, bw.Flush())
		assert.Equal(t, strings.TrimSuffix(string(want), "\n"), got.String(), "%q", s)
	}
}
