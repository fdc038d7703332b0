package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/nsjail"
)

// zeroClaims finds what the comments of a configuration file say a 0
// means ("0 = none", "0 means ...", "0 turns ... off"), by key: a claim
// in a trailing comment is its line's key's, one in a comment block the
// next key's (a commented-out "# key = 2" counts as that key).
func zeroClaims(t *testing.T, file string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	claimRe := regexp.MustCompile(`\b0 (?:=|means|turns) ([^;.]*)`)
	keyRe := regexp.MustCompile(`^#?\s*([a-z_]+)\s*=`)
	tableRe := regexp.MustCompile(`^\[([a-z_.]+)\]`)
	claims := map[string]string{}
	table, pending := "", ""
	for _, l := range strings.Split(string(b), "\n") {
		if m := tableRe.FindStringSubmatch(l); m != nil {
			table = m[1]
			continue
		}
		code, comment, _ := strings.Cut(l, "#")
		if strings.TrimSpace(code) == "" {
			comment = strings.TrimSpace(l) // a whole-line comment, maybe "# key = 2"
		}
		claim := ""
		if m := claimRe.FindStringSubmatch(comment); m != nil {
			claim = strings.TrimSpace(m[1])
		}
		if m := keyRe.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			key := table + "." + m[1]
			if claim == "" {
				claim = pending
			}
			if claim != "" {
				claims[key] = claim
			}
			pending = ""
			continue
		}
		if claim != "" {
			pending = claim
		}
		if strings.TrimSpace(l) == "" {
			pending = ""
		}
	}
	return claims
}

// The shipped file's comments say what 0 means for some keys; each claim
// is checked against what the parser and the daemon do with a 0 there. A
// claim that is not in this table (a new comment, or a changed one) fails
// until a check for it is added.
func TestConfigZeroComments(t *testing.T) {
	parse := func(t *testing.T, doc string) *Config {
		t.Helper()
		c, err := parseConfig([]byte(doc))
		require.NoError(t, err, doc)
		return c
	}
	checks := map[string]struct {
		claim string
		check func(t *testing.T)
	}{
		"admission.max_sessions": {"no sessions", func(t *testing.T) {
			c := parse(t, "[admission]\nmax_sessions = 0\n")
			o := testOptions()
			o.MaxSessions = c.Admission.MaxSessions
			started := false
			_, _, client := startServer(t, o, &sessionsOnly{started: &started})
			code, body := do(t, client, http.MethodPost, "/v1/sessions", map[string]any{})
			assert.Equal(t, http.StatusTooManyRequests, code, "%s", body)
			assert.Contains(t, string(body), "admission.max_sessions = 0")
			assert.False(t, started, "a session was started")
		}},
		"jail.warm_ahead": {"none", func(t *testing.T) {
			c := parse(t, "[jail]\nwarm_ahead = 0\n")
			e := &Environment{Name: DefaultEnvironment}
			assert.Zero(t, c.ZygoteSpec(e).Ahead, "runs forked ahead")
		}},
		"jail.prepared_jails": {"off", func(t *testing.T) {
			c := parse(t, "[jail]\nstart = \"cold\"\nprepared_jails = 0\n")
			assert.Zero(t, c.Prepared())
			assert.NotZero(t, parse(t, "[jail]\nstart = \"cold\"\n").Prepared(), "the default, which 0 is not")
		}},
		"collect.files": {"the default, 100", func(t *testing.T) {
			c := parse(t, "[collect]\nfiles = 0\n")
			dir := t.TempDir()
			for i := range 101 {
				require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d", i)), []byte("x"), 0o644))
			}
			root, err := os.Open(dir)
			require.NoError(t, err)
			defer root.Close()
			got := nsjail.Collect(root, []string{"*"}, c.Policy().Collect)
			require.Len(t, got, 101, "100 files and one entry for the rest")
			assert.Empty(t, got[99].Error, "the 100th file is collected")
			assert.Contains(t, got[100].Error, "past the limit of 100 files")
		}},
	}
	claims := zeroClaims(t, "../scripts/packaging/config.toml")
	for key, claim := range claims {
		c, ok := checks[key]
		if !assert.True(t, ok, "scripts/packaging/config.toml says 0 of %s means %q: add a check of that to this test", key, claim) {
			continue
		}
		if !assert.Equal(t, c.claim, claim, "scripts/packaging/config.toml's comment on 0 of %s changed: check the new claim", key) {
			continue
		}
		t.Run(key, c.check)
	}
	for key := range checks {
		assert.Contains(t, claims, key, "scripts/packaging/config.toml no longer says what 0 of %s means", key)
	}
}

// sessionsOnly is a jailer that could start sessions, and records it.
type sessionsOnly struct {
	fakeJailer
	started *bool
}

func (s *sessionsOnly) StartSession(context.Context, *nsjail.Spec) (*nsjail.Session, error) {
	*s.started = true
	return nil, errors.New("not in this test")
}
