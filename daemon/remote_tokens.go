package daemon

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Bearer tokens of the remote listener: a file of "NAME TOKEN" lines.
// Several lines (the same NAME or not) are valid at once, for rotation.
// The file is read again, at most once a second, when a request comes:
// its content is compared, so a Kubernetes Secret (a symbolic link swap
// of ..data), a rename over it or an edit in place are all seen.

// minTokenBytes is the shortest token taken: a guessable one is refused.
const minTokenBytes = 16

// maxTokensFile bounds what is read of the tokens file.
const maxTokensFile = 1 << 20

var tokenNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$`)

type tokenEntry struct {
	name string
	hash [sha256.Size]byte
}

// TokenStore checks bearer tokens against the tokens file.
type TokenStore struct {
	path  string
	log   *slog.Logger
	every time.Duration // the file is read at most this often

	mu      sync.Mutex
	checked time.Time
	content []byte
	entries []tokenEntry
}

// OpenTokens reads the tokens file: a missing, unreadable, empty or
// malformed file is an error that says what to fix. A file that others
// may read is taken, with a warning.
func OpenTokens(path string, log *slog.Logger) (*TokenStore, error) {
	if log == nil {
		log = slog.Default()
	}
	t := &TokenStore{path: path, log: log, every: time.Second}
	b, entries, err := readTokens(path)
	if err != nil {
		return nil, fmt.Errorf("remote.tokens_file: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o004 != 0 {
		log.Warn("remote.tokens_file may be read by every user of this host: chmod 0400 it (Kubernetes: defaultMode: 0400 on the Secret's volume)", "path", path, "mode", fmt.Sprintf("%04o", fi.Mode().Perm()))
	}
	t.content, t.entries, t.checked = b, entries, time.Now()
	return t, nil
}

// readTokens reads and parses the tokens file.
func readTokens(path string) ([]byte, []tokenEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTokensFile+1))
	if err != nil {
		return nil, nil, err
	}
	if len(b) > maxTokensFile {
		return nil, nil, fmt.Errorf("%s is larger than %d bytes", path, maxTokensFile)
	}
	entries, err := parseTokens(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, entries, nil
}

// parseTokens parses "NAME TOKEN" lines; blank lines and lines starting
// with # are skipped.
func parseTokens(b []byte) ([]tokenEntry, error) {
	var entries []tokenEntry
	seen := map[[sha256.Size]byte]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		switch {
		case len(f) != 2:
			return nil, fmt.Errorf("line %d: want \"NAME TOKEN\" (two words), got %d words", n, len(f))
		case !tokenNameRe.MatchString(f[0]):
			return nil, fmt.Errorf("line %d: name %q: use letters, digits, '_', '.', '@' and '-', at most 64", n, f[0])
		case len(f[1]) < minTokenBytes:
			return nil, fmt.Errorf("line %d: the token of %s is %d bytes; at least %d (make one with: head -c 32 /dev/urandom | base64)", n, f[0], len(f[1]), minTokenBytes)
		}
		h := sha256.Sum256([]byte(f[1]))
		if other, dup := seen[h]; dup && other != f[0] {
			return nil, fmt.Errorf("line %d: the token of %s is also %s's: each NAME needs its own", n, f[0], other)
		}
		seen[h] = f[0]
		entries = append(entries, tokenEntry{name: f[0], hash: h})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, errors.New("has no \"NAME TOKEN\" line: a remote listener without a token would let nobody in")
	}
	return entries, nil
}

// refresh reads the file again when the last read is older than t.every.
// A file that has become unreadable or invalid keeps the last good tokens
// (logged): a half-written file never locks everyone out, nor lets anyone
// in.
func (t *TokenStore) refresh() []tokenEntry {
	t.mu.Lock()
	defer t.mu.Unlock()
	if time.Since(t.checked) < t.every {
		return t.entries
	}
	t.checked = time.Now()
	b, entries, err := readTokens(t.path)
	switch {
	case err != nil:
		if t.content != nil { // log each bad state once
			t.log.Error("remote.tokens_file cannot be read again; the last good tokens stay valid", "err", err)
		}
		t.content = nil
	case !bytes.Equal(b, t.content):
		t.log.Info("remote.tokens_file changed: its tokens replace the old ones", "tokens", len(entries))
		t.content, t.entries = b, entries
	}
	return t.entries
}

// Check tells whose token tok is. Its time does not depend on tok: the
// token's hash is compared with every entry's, in constant time, without
// an early exit, and a missing token ("") goes through the same steps.
func (t *TokenStore) Check(tok string) (name string, ok bool) {
	entries := t.refresh()
	h := sha256.Sum256([]byte(tok))
	found := -1
	for i := range entries {
		eq := subtle.ConstantTimeCompare(h[:], entries[i].hash[:])
		found = subtle.ConstantTimeSelect(eq, i, found)
	}
	if found < 0 || tok == "" {
		return "", false
	}
	return entries[found].name, true
}
