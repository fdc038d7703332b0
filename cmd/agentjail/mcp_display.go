package main

import (
	"encoding/base64"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentjail/daemon"
)

// withDisplay adds the result's display to a tool's answer, after its
// text: each figure as image content, each HTML or Markdown entry as text
// that names its kind. An entry whose base64 does not decode (the daemon
// checks it; this build does not rely on that) is named and left out.
func withDisplay(out *mcp.CallToolResult, r *daemon.Result) *mcp.CallToolResult {
	for i, d := range r.Display {
		if d.Mime == "image/png" {
			b, err := base64.StdEncoding.DecodeString(d.Data)
			if err != nil {
				out.Content = append(out.Content, &mcp.TextContent{Text: fmt.Sprintf("display %d (%s): unreadable", i+1, d.Mime)})
				continue
			}
			out.Content = append(out.Content, &mcp.ImageContent{Data: b, MIMEType: d.Mime})
			continue
		}
		out.Content = append(out.Content, &mcp.TextContent{Text: fmt.Sprintf("display %d (%s):\n%s", i+1, d.Mime, d.Data)})
	}
	if r.DisplayTruncated {
		out.Content = append(out.Content, &mcp.TextContent{Text: "The display was cut: more figures or rich output than limits.display_bytes allows."})
	}
	return out
}
