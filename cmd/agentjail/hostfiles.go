package main

import (
	"encoding/base64"
	"os"
	"strings"

	"agentjail/daemon"
	"agentjail/nsjail"
)

// hostFiles reads the --file NAME=HOSTPATH flags (of run, session start
// and session run): each host file, read with the caller's rights, as a
// request's file at /workspace/NAME.
func hostFiles(flags []string) ([]daemon.RequestFile, error) {
	var out []daemon.RequestFile
	for _, f := range flags {
		name, host, ok := strings.Cut(f, "=")
		if !ok || name == "" || host == "" {
			return nil, usagef("--file %q: want NAME=HOSTPATH", f)
		}
		clean, err := nsjail.CleanRelPath(name)
		if err != nil {
			return nil, usagef("--file %q: %v", f, err)
		}
		b, err := os.ReadFile(host)
		if err != nil {
			return nil, usagef("--file %s: %v", name, err)
		}
		out = append(out, daemon.RequestFile{Path: clean, Content: base64.StdEncoding.EncodeToString(b), Encoding: "base64"})
	}
	return out, nil
}
