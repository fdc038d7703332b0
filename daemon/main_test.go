package daemon

import (
	"fmt"
	"os"
	"testing"

	"agentjail/nsjail"
	_ "agentjail/nsjail/boot" // the jail's C stages: this binary is also the init stage
)

// TestMain: the test binary is also the jail's init stage (the runner
// re-executes /proc/self/exe), which is C run before the Go runtime starts
// (nsjail/boot, imported here); the IsInit check is only what a binary built
// without cgo reaches. It is also a peer under another uid in
// TestPeerCredentials (AGENTJAIL_TEST_PEER names the socket to call).
func TestMain(m *testing.M) {
	if nsjail.IsInit() {
		nsjail.Init()
	}
	if sock, id := os.Getenv("AGENTJAIL_TEST_PEER"), os.Getenv("AGENTJAIL_TEST_PEER_SESSION"); sock != "" && id != "" {
		os.Exit(sessionPeer(sock, id)) // TestSessionBelongsToItsCreator
	}
	if sock := os.Getenv("AGENTJAIL_TEST_PEER"); sock != "" {
		resp, err := HTTPClient(sock).Get("http://agentjail/v1/health")
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(resp.StatusCode)
		os.Exit(0)
	}
	code := m.Run()
	if runner != nil {
		runner.Close() // its prepared jails, and their groups made ahead
	}
	os.Exit(code)
}
