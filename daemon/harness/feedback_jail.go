package harness

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"agentjail/nsjail"
)

// Feedback about what a jail is, for a program that did not expect it:
// its own files are imported only when sent, and it has no network.

// notSentHint is said of a module that no environment has: it may be one
// of the program's own that the request did not send. The files of a
// request are in the working directory, /workspace, which is first on
// sys.path: a module sent there is imported.
func notSentHint(module string) string {
	path := strings.ReplaceAll(module, ".", "/") + ".py"
	return fmt.Sprintf("Nor is '%s' among the files sent with the request: a module of your own must be sent as a file, "+
		`e.g. files: [{"path": "%s", "content": "…"}] (--file %s=HOSTPATH on the command line), `+
		"and is imported from the working directory, /workspace.", module, path, path)
}

// hintNoNetwork is said of an error that shows the program tried the
// network. A jail has no network interface but its own loopback (no
// egress policy exists yet: when one does, this says how a request asks
// for one).
const hintNoNetwork = "The jail has no network access: it has only its own loopback interface, so host names do not resolve and connections to other hosts fail. Use only the data sent with the request (files, stdin)."

// noNetwork matches the text of the errors of a program that tried the
// network: socket.gaierror's (a name lookup), the errno of a connection
// with no route or refused (only the jail's loopback exists, where
// nothing listens unless the program serves), and what urllib.error.URLError,
// requests' ConnectionError (urllib3's NameResolutionError and
// NewConnectionError) and httpx say of them.
var noNetwork = regexp.MustCompile(`(?i)\bgaierror\b|\bConnectionRefusedError\b|name or service not known|temporary failure in name resolution|` +
	`no address associated with hostname|network is unreachable|no route to host|connection refused|` +
	`failed to establish a new connection|failed to resolve|NameResolutionError|` +
	`\[Errno (-2|-3|-5|101|111|113)\]`)

// hintNoPip is said of a run whose output shows pip failed to install.
const hintNoPip = "Packages cannot be installed in the jail: pip has no network access there, and the environment's Python is read-only (Debian's pip refuses with externally-managed-environment). Use the packages the environment has, or another environment, if the sandbox has one with the package."

// pipFailed tells whether a run's stderr (or stdout) shows pip's refusal
// to install, or its failure to reach an index.
func pipFailed(r *nsjail.Result) bool {
	for _, out := range [][]byte{r.Stderr, r.Stdout} {
		if bytes.Contains(out, []byte("externally-managed-environment")) ||
			bytes.Contains(out, []byte("No matching distribution found for")) ||
			bytes.Contains(out, []byte("Could not find a version that satisfies the requirement")) {
			return true
		}
	}
	return false
}
