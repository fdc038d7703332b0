package main

import (
	"encoding/base64"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/daemon"
	"agentjail/daemon/harness"
)

// A tool's answer carries each figure as image content (its bytes), the
// HTML as text that names it, and says when the display was cut.
func TestMCPDisplayContent(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nfigure")
	r := &daemon.Result{Display: []harness.Display{
		{Mime: "image/png", Data: base64.StdEncoding.EncodeToString(png), Bytes: int64(len(png))},
		{Mime: "text/html", Data: "<table></table>", Bytes: 15},
	}, DisplayTruncated: true}
	out := withDisplay(textResult("summary"), r)
	require.Len(t, out.Content, 4)
	img, ok := out.Content[1].(*mcp.ImageContent)
	require.True(t, ok, "%T", out.Content[1])
	assert.Equal(t, png, img.Data)
	assert.Equal(t, "image/png", img.MIMEType)
	assert.Equal(t, "display 2 (text/html):\n<table></table>", out.Content[2].(*mcp.TextContent).Text)
	assert.Contains(t, out.Content[3].(*mcp.TextContent).Text, "display_bytes")

	out = withDisplay(textResult("summary"), &daemon.Result{Display: []harness.Display{}})
	assert.Len(t, out.Content, 1, "no display: the text alone")
}
