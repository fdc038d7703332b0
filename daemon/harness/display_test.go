package harness

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"agentjail/nsjail"
)

func displayLine(mime, data string) string {
	return fmt.Sprintf(`{"t":"display","mime":%q,"data":%q}`+"\n", mime, data)
}

// The display records come back in order, each counted by the daemon
// (an image's decoded bytes); what is not an entry the harness sends is
// ignored; the limit keeps the entries up to the first that does not fit.
func TestReportDisplay(t *testing.T) {
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\n0123456789"))
	rep := displayLine("image/png", png) +
		displayLine("text/html", "<table>é</table>") +
		displayLine("image/png", "not base64!") + // ignored
		displayLine("application/x-evil", "AAAA") + // ignored
		`{"t":"display","mime":"image/png","data":1}` + "\n" + // a wrong type: ignored
		displayLine("text/markdown", "**b**")
	r := ParseReport([]byte(rep), false, nil)
	got, cut := r.Display(1 << 20)
	assert.False(t, cut)
	assert.Equal(t, []Display{{"image/png", png, 18}, {"text/html", "<table>é</table>", 17}, {"text/markdown", "**b**", 5}}, got)

	got, cut = r.Display(18 + 17)
	assert.True(t, cut, "the markdown is past the limit")
	assert.Len(t, got, 2)
	got, cut = r.Display(10)
	assert.True(t, cut)
	assert.Equal(t, []Display{}, got)

	got, cut = r.Display(0)
	assert.Len(t, got, 3, "0: the default limit, 2 MiB")
	assert.False(t, cut)

	got, cut = ParseReport(nil, false, nil).Display(1 << 20)
	assert.Equal(t, []Display{}, got, "never nil: [] in the result")
	assert.False(t, cut)

	// The harness sends only the size of an entry past its bounds.
	r = ParseReport([]byte(displayLine("text/html", "x")+`{"t":"display","mime":"image/png","bytes":99999999}`+"\n"), false, nil)
	got, cut = r.Display(1 << 20)
	assert.Len(t, got, 1)
	assert.True(t, cut)
}

// Whatever the jail sends, the daemon keeps at most MaxDisplayEntries
// entries and nsjail.MaxDisplayBytes bytes of them.
func TestReportDisplayBounds(t *testing.T) {
	var b strings.Builder
	for range MaxDisplayEntries + 5 {
		b.WriteString(displayLine("text/html", "x"))
	}
	got, cut := ParseReport([]byte(b.String()), false, nil).Display(nsjail.MaxDisplayBytes)
	assert.Len(t, got, MaxDisplayEntries)
	assert.True(t, cut)

	big := base64.StdEncoding.EncodeToString(make([]byte, 3<<20))
	rep := strings.Repeat(displayLine("image/png", big), 4) // 12 MiB, past the 8 MiB bound
	got, cut = ParseReport([]byte(rep), false, nil).Display(nsjail.MaxDisplayBytes)
	assert.Len(t, got, 2)
	assert.True(t, cut)
}
