package daemon

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every bad [network] value is an error that names its key and says what
// a good one looks like.
func TestNetworkConfigErrors(t *testing.T) {
	for doc, want := range map[string]string{
		"[network]\nprivate_allow = [\"10.0.0.5/8\"]\n":                 `network.private_allow: private_allow entry "10.0.0.5/8"`,
		"[network]\nresolver = \"dns.example:53\"\n":                    `network.resolver: "dns.example:53" is not IP:PORT`,
		"[network]\nmax_connections = 0\n":                              "network.max_connections: must be from 1 to 100000",
		"[network]\nmax_bytes = -1\n":                                   "network.max_bytes: must be at least 1",
		"[network]\nidle_timeout_ms = 0\n":                              "network.idle_timeout_ms: must be from 1",
		"[network.policies.pypi]\nallow = [\"pypi.org\"]\n":             `network.policies.pypi.allow: allow entry "pypi.org" has no port (write host:port); valid entries look like "pypi.org:443"`,
		"[network.policies.pypi]\nallow = [\"pypi.*.org:443\"]\n":       "not the whole leftmost label",
		"[network.policies.\"bad name\"]\nallow = [\"pypi.org:443\"]\n": `network.policies.bad name: "bad name" is not a policy name`,
		"[network.policies.pypi]\nalow = [\"pypi.org:443\"]\n":          `unknown key "network.policies.pypi.alow" (did you mean "network.policies.pypi.allow"?)`,
		"[network]\npolicies = 3\n":                                     "network.policies: must be a table of tables",
		"[network.policies.pypi]\nallow = [\"10.0.0.1/24:80\"]\n":       "write 10.0.0.0/24",
	} {
		c, err := parseConfig([]byte(doc))
		if err == nil {
			err = c.Validate()
		}
		if assert.Error(t, err, doc) {
			assert.Contains(t, err.Error(), want, doc)
		}
	}
	c, err := parseConfig([]byte("[network]\nresolver = \"[2001:db8::53]:53\"\nprivate_allow = [\"10.0.0.5\"]\n[network.policies.pypi]\nallow = [\"pypi.org:443\"]\n[network.policies.api]\nallow = [\"api.example.com:443\", \"203.0.113.0/24:80\"]\n"))
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	pols, err := c.Network.policies()
	require.NoError(t, err)
	assert.Equal(t, []string{"api.example.com:443", "203.0.113.0/24:80"}, pols["api"].Entries())
	opts, err := c.Network.proxyOptions()
	require.NoError(t, err)
	assert.Equal(t, "[2001:db8::53]:53", opts.Resolver)
	assert.True(t, strings.HasPrefix(opts.Guard.Check(mustAddr("10.0.0.6")), "private"))
	assert.Equal(t, "", opts.Guard.Check(mustAddr("10.0.0.5")))
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }
