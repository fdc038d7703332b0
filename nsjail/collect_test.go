package nsjail

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// These tests build the jail's /workspace as a directory of the host's
// /tmp, next to a secret that stands for /etc/shadow: a file (and a
// directory) outside the root that the daemon, reading as root, must never
// return.
//
// Hard links are not tested: in a jail /workspace is a tmpfs of its own and
// link(2) never crosses file systems, so the jail cannot link a host file
// into it. Here the root and the secret share a file system, so a hard link
// would "leak" the secret; that is an artefact of the test set-up, not an
// attack a jail can make.

type collectTree struct {
	t       testing.TB
	dir     string   // the root, as the jail's /workspace
	secret  []byte   // content of every secret file
	secretF string   // a secret file outside the root
	secretD string   // a directory outside the root, full of secret files
	root    *os.File // O_PATH|O_DIRECTORY, as the init stage hands it over
}

func newCollectTree(t testing.TB) *collectTree {
	t.Helper()
	base := t.TempDir()
	tok := make([]byte, 16)
	_, _ = rand.Read(tok)
	ct := &collectTree{t: t, dir: filepath.Join(base, "workspace"), secret: []byte("SECRET-" + hex.EncodeToString(tok)),
		secretF: filepath.Join(base, "shadow"), secretD: filepath.Join(base, "secretdir")}
	require.NoError(t, os.Mkdir(ct.dir, 0o755))
	require.NoError(t, os.WriteFile(ct.secretF, ct.secret, 0o600))
	require.NoError(t, os.Mkdir(ct.secretD, 0o700))
	for _, n := range []string{"x.txt", "f.txt", "a.png", "result.json"} {
		require.NoError(t, os.WriteFile(filepath.Join(ct.secretD, n), ct.secret, 0o600))
	}
	fd, err := unix.Open(ct.dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	ct.root = os.NewFile(uintptr(fd), ct.dir)
	t.Cleanup(func() { ct.root.Close() })
	return ct
}

func (ct *collectTree) path(rel string) string { return filepath.Join(ct.dir, rel) }

func (ct *collectTree) write(rel, content string) {
	ct.t.Helper()
	require.NoError(ct.t, os.MkdirAll(filepath.Dir(ct.path(rel)), 0o755))
	require.NoError(ct.t, os.WriteFile(ct.path(rel), []byte(content), 0o644))
}

func (ct *collectTree) symlink(target, rel string) {
	ct.t.Helper()
	require.NoError(ct.t, os.MkdirAll(filepath.Dir(ct.path(rel)), 0o755))
	require.NoError(ct.t, os.Symlink(target, ct.path(rel)))
}

// collect runs Collect with a deadline (a FIFO must never block it), and
// checks the invariants every result must hold.
func (ct *collectTree) collect(globs []string, lim CollectLimits) []CollectedFile {
	ct.t.Helper()
	done := make(chan []CollectedFile, 1)
	go func() { done <- Collect(ct.root, globs, lim) }()
	var got []CollectedFile
	select {
	case got = <-done:
	case <-time.After(20 * time.Second):
		ct.t.Fatalf("Collect(%q) is still running after 20 s: it blocked", globs)
	}
	ct.check(got)
	return got
}

func (ct *collectTree) check(got []CollectedFile) {
	ct.t.Helper()
	for i, f := range got {
		if bytes.Contains(f.Content, ct.secret) || strings.Contains(f.Error, string(ct.secret)) {
			ct.t.Fatalf("the secret outside the root came back in %q (docs/security.md F04)", f.Path)
		}
		if (f.Error == "") == (f.Content == nil) {
			ct.t.Errorf("%q: exactly one of Content and Error must be set: %+v", f.Path, f)
		}
		if i > 0 && got[i-1].Path > f.Path {
			ct.t.Errorf("not sorted: %q before %q", got[i-1].Path, f.Path)
		}
	}
}

func byPath(files []CollectedFile) map[string]CollectedFile {
	m := map[string]CollectedFile{}
	for _, f := range files {
		m[f.Path] = f
	}
	return m
}

func TestCollectOrdinary(t *testing.T) {
	ct := newCollectTree(t)
	ct.write("result.json", `{"ok":true}`)
	ct.write("out/a.png", "A")
	ct.write("out/b.png", "BB")
	ct.write("out/c.txt", "c")
	ct.write("out/sub/d.png", "D")
	ct.write("empty.txt", "")

	got := ct.collect([]string{"out/*.png", "result.json", "*/a.png", "./empty.txt"}, CollectLimits{})
	require.Equal(t, []CollectedFile{
		{Path: "empty.txt", Size: 0, Content: []byte{}},
		{Path: "out/a.png", Size: 1, Content: []byte("A")}, // matched twice, listed once
		{Path: "out/b.png", Size: 2, Content: []byte("BB")},
		{Path: "result.json", Size: 11, Content: []byte(`{"ok":true}`)},
	}, got)
}

func TestCollectNested(t *testing.T) {
	ct := newCollectTree(t)
	ct.write("a/b/c/x.txt", "abc")
	ct.write("a/y/x.txt", "ay")
	ct.write("q/x.txt", "q")
	ct.write("a/b/c/z.txt", "z")

	paths := func(got []CollectedFile) (ps []string) {
		for _, f := range got {
			require.Empty(t, f.Error, f.Path)
			ps = append(ps, f.Path)
		}
		return ps
	}
	assert.Equal(t, []string{"a/b/c/x.txt", "a/y/x.txt", "q/x.txt"},
		paths(ct.collect([]string{"*/*/x.txt", "a/b/c/x.txt", "*/x.txt"}, CollectLimits{})))
	assert.Equal(t, []string{"a/b/c/x.txt", "a/b/c/z.txt"},
		paths(ct.collect([]string{"[ab]/?/c/*.txt"}, CollectLimits{})))
	assert.Equal(t, []string{"a/b/c/x.txt"}, paths(ct.collect([]string{"a/*/c/x.txt"}, CollectLimits{})))
	f := byPath(ct.collect([]string{"a/b/c/x.txt"}, CollectLimits{}))["a/b/c/x.txt"]
	assert.Equal(t, "abc", string(f.Content))
}

// A literal path that does not exist is reported as such; a pattern that
// matches nothing is one entry named by the pattern.
func TestCollectNothing(t *testing.T) {
	ct := newCollectTree(t)
	ct.write("out/a.png", "A")
	ct.write("result.json", "{}")

	got := byPath(ct.collect([]string{"missing.txt", "nothing/*.txt", "out/*.csv", "result.json/x", "result.json/*", "out/a.png/x"}, CollectLimits{}))
	require.Len(t, got, 6)
	assert.Equal(t, "no such file", got["missing.txt"].Error)
	assert.Equal(t, "no file matches", got["nothing/*.txt"].Error)
	assert.Equal(t, "no file matches", got["out/*.csv"].Error)
	assert.Equal(t, "no such file (a parent on its path is not a directory)", got["result.json/x"].Error)
	assert.Equal(t, "no file matches (result.json: not a directory)", got["result.json/*"].Error)
	assert.Contains(t, got["out/a.png/x"].Error, "no such file")

	assert.Empty(t, ct.collect(nil, CollectLimits{}))
	bad := ct.collect([]string{"../x"}, CollectLimits{})
	require.Len(t, bad, 1)
	assert.Contains(t, bad[0].Error, "invalid pattern")
}

// "." and ".." are never listed, so ".*" cannot climb out of the root.
func TestCollectDotPatterns(t *testing.T) {
	ct := newCollectTree(t)
	ct.write(".hidden", "h")
	ct.write("visible", "v")
	got := ct.collect([]string{".*", ".*/shadow", ".*/secretdir/*"}, CollectLimits{})
	assert.Equal(t, []CollectedFile{
		{Path: ".*/secretdir/*", Error: "no file matches"},
		{Path: ".*/shadow", Error: "no file matches"},
		{Path: ".hidden", Size: 1, Content: []byte("h")},
	}, got)
	// path.Match semantics: "*" matches a leading dot too.
	assert.Len(t, ct.collect([]string{"*"}, CollectLimits{}), 2)
}

// docs/security.md F04: the program plants symlinks where the collector looks;
// none is followed, whether it points outside the root (absolute, through
// ../.., through /proc's magic links) or inside it.
func TestCollectSymlinkAsFileF04(t *testing.T) {
	ct := newCollectTree(t)
	ct.write("out/a.txt", "public")
	ct.symlink(ct.secretF, "out/result.txt")
	ct.symlink("/proc/self/root"+ct.secretF, "out/r2.txt")
	ct.symlink("/proc/1/root/etc/hostname", "out/r3.txt")
	ct.symlink("../../../../../../../.."+ct.secretF, "out/r4.txt")
	ct.symlink("a.txt", "out/inside.txt")
	ct.symlink("result.txt", "out/chain.txt")
	ct.symlink(ct.secretF, "result.json")

	got := byPath(ct.collect([]string{"out/*", "out/result.txt", "result.json"}, CollectLimits{}))
	require.Len(t, got, 8)
	assert.Equal(t, "public", string(got["out/a.txt"].Content))
	for _, p := range []string{"out/result.txt", "out/r2.txt", "out/r3.txt", "out/r4.txt", "out/inside.txt", "out/chain.txt", "result.json"} {
		assert.Equal(t, "not a regular file (a symbolic link, not followed)", got[p].Error, p)
		assert.Nil(t, got[p].Content, p)
	}
	hostname, _ := os.ReadFile("/etc/hostname")
	for _, f := range got {
		if len(hostname) > 0 {
			assert.NotEqual(t, string(hostname), string(f.Content), f.Path)
		}
	}
}

// A symlink standing for a directory on the way is not followed either.
func TestCollectSymlinkAsDirF04(t *testing.T) {
	ct := newCollectTree(t)
	ct.write("d/x.txt", "public")
	ct.symlink(ct.secretD, "link")
	ct.symlink("../secretdir", "rel")
	ct.symlink("/proc/self/root"+ct.secretD, "magic")
	ct.write("out/keep.txt", "k")
	ct.symlink(ct.secretD, "out/sub")

	got := byPath(ct.collect([]string{"link/x.txt", "rel/x.txt", "magic/x.txt", "out/sub/f.txt", "link/*", "*/x.txt", "*/*/*", "out/*/a.png"}, CollectLimits{}))
	for _, p := range []string{"link/x.txt", "rel/x.txt", "magic/x.txt", "out/sub/f.txt"} {
		assert.Equal(t, "not collected: a directory on its path is a symbolic link, not followed", got[p].Error, p)
	}
	assert.Equal(t, "no file matches (link: a symbolic link, not followed)", got["link/*"].Error)
	assert.Equal(t, "public", string(got["d/x.txt"].Content), "*/x.txt still finds the real directory")
	assert.Equal(t, "no file matches", got["*/*/*"].Error)
	assert.Equal(t, "no file matches", got["out/*/a.png"].Error)
	assert.Len(t, got, 8)

	got = byPath(ct.collect([]string{"link/deeper/*", "d/x.txt/*"}, CollectLimits{}))
	assert.Equal(t, "no file matches (link/deeper: not collected: a directory on its path is a symbolic link, not followed)", got["link/deeper/*"].Error)
	assert.Equal(t, "no file matches (d/x.txt: not a directory)", got["d/x.txt/*"].Error)
}

// A FIFO must not block the daemon (no writer will ever come), nor any
// other special file be opened.
func TestCollectFIFO(t *testing.T) {
	ct := newCollectTree(t)
	require.NoError(t, os.MkdirAll(ct.path("out"), 0o755))
	require.NoError(t, unix.Mkfifo(ct.path("out/pipe"), 0o666))
	ct.write("out/z.txt", "after the pipe")

	got := byPath(ct.collect([]string{"out/pipe", "out/*"}, CollectLimits{}))
	require.Len(t, got, 2)
	assert.Equal(t, "not a regular file (a FIFO)", got["out/pipe"].Error)
	assert.Equal(t, "after the pipe", string(got["out/z.txt"].Content))
}

func TestCollectDirectoryAndSocket(t *testing.T) {
	ct := newCollectTree(t)
	ct.write("out/sub/x", "x")
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(s)
	require.NoError(t, unix.Bind(s, &unix.SockaddrUnix{Name: ct.path("out/sock")}))
	require.NoError(t, unix.Listen(s, 1))

	got := byPath(ct.collect([]string{"out", "out/*"}, CollectLimits{}))
	require.Len(t, got, 3)
	assert.Equal(t, "not a regular file (a directory)", got["out"].Error)
	assert.Equal(t, "not a regular file (a directory)", got["out/sub"].Error)
	assert.Equal(t, "not a regular file (a socket)", got["out/sock"].Error)
}

func TestCollectFileAndTotalCaps(t *testing.T) {
	ct := newCollectTree(t)
	ct.write("ten.bin", strings.Repeat("x", 10))
	ct.write("eleven.bin", strings.Repeat("x", 11))
	got := byPath(ct.collect([]string{"*.bin"}, CollectLimits{FileBytes: 10}))
	assert.Equal(t, 10, len(got["ten.bin"].Content))
	assert.Equal(t, CollectedFile{Path: "eleven.bin", Size: 11, Error: "larger than the 10-byte limit"}, got["eleven.bin"])

	ct = newCollectTree(t)
	ct.write("a", "aaaa")
	ct.write("b", strings.Repeat("b", 20)) // over the per-file limit: refused alone, uses no budget
	ct.write("c", "cccc")
	ct.write("d", "dddd")
	ct.write("e", "e")
	got2 := ct.collect([]string{"*"}, CollectLimits{FileBytes: 10, TotalBytes: 10})
	total := "not collected: the total limit of 10 bytes was reached"
	assert.Equal(t, []CollectedFile{
		{Path: "a", Size: 4, Content: []byte("aaaa")},
		{Path: "b", Size: 20, Error: "larger than the 10-byte limit"},
		{Path: "c", Size: 4, Content: []byte("cccc")},
		{Path: "d", Size: 4, Error: total},
		{Path: "e", Error: total}, // past the cap, even though it would fit
	}, got2)
}

// docs/security.md X03: a sparse file far above the limits and thousands of
// files. The big file is refused from its fstat size without being read,
// the count cap keeps the answer small, and the result is the same every
// time.
func TestCollectSizeBombX03(t *testing.T) {
	ct := newCollectTree(t)
	require.NoError(t, os.MkdirAll(ct.path("out"), 0o755))
	big, err := os.Create(ct.path("out/big.bin"))
	require.NoError(t, err)
	require.NoError(t, big.Truncate(30<<20))
	big.Close()
	for i := range 3000 {
		ct.write(fmt.Sprintf("out/f%d", i), "")
	}
	lim := CollectLimits{FileBytes: 1 << 20, TotalBytes: 4 << 20, Files: 100}
	start := time.Now()
	got := ct.collect([]string{"out/*"}, lim)
	t.Logf("3001 files: %v", time.Since(start))
	require.Len(t, got, 101)
	assert.Equal(t, CollectedFile{Path: "out/big.bin", Size: 30 << 20, Error: "larger than the 1048576-byte limit"}, got[0])
	assert.Equal(t, "out/f0", got[1].Path)
	assert.Equal(t, []byte{}, got[1].Content)
	last := got[100]
	assert.Equal(t, "out/f1087", last.Path, "the 101st in sorted order")
	assert.Equal(t, "not collected: past the limit of 100 files (this and 2900 more matching files)", last.Error)
	assert.Equal(t, got, ct.collect([]string{"out/*"}, lim), "deterministic")
}

func TestCollectLimitsDefaults(t *testing.T) {
	assert.Equal(t, DefaultCollectLimits(), CollectLimits{}.withDefaults())
	assert.Equal(t, DefaultCollectLimits(), CollectLimits{FileBytes: -1, TotalBytes: -1, Files: -1}.withDefaults())
	assert.Equal(t, CollectLimits{FileBytes: 1, TotalBytes: 2, Files: 3}, CollectLimits{FileBytes: 1, TotalBytes: 2, Files: 3}.withDefaults())
}

func TestValidateCollect(t *testing.T) {
	require.NoError(t, ValidateCollect(nil))
	require.NoError(t, ValidateCollect([]string{"out/*.png", "result.json", "*/x.txt", "./a//b", `a\*b`, "[a-z]?.txt"}))
	many := make([]string, MaxCollectPatterns)
	for i := range many {
		many[i] = "x"
	}
	require.NoError(t, ValidateCollect(many))

	for i, bad := range []string{"", "/etc/shadow", "../x", "a/../../x", "a/..", ".", "a\x00b", "out/[", `out/a\`, "[]a]/x[",
		strings.Repeat("a", MaxCollectPatternLen+1), strings.Repeat("a", 256) + "/x"} {
		err := ValidateCollect([]string{"ok.txt", bad})
		var fe *FieldError
		require.ErrorAs(t, err, &fe, "%d: %q", i, bad)
		assert.Equal(t, "collect[1]", fe.Field, "%q", bad)
	}
	var fe *FieldError
	require.ErrorAs(t, ValidateCollect(append(many, "x")), &fe)
	assert.Equal(t, "collect", fe.Field)
}

// exchange atomically swaps two names (renameat2 RENAME_EXCHANGE), as a
// program racing the collector would.
func exchange(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}

// docs/security.md F04 (and X03's "the collector must hold up against what the
// program leaves"), as a race: while Collect runs again and again, other
// goroutines keep swapping a regular file for a symlink to the secret and
// for a FIFO, and a real directory for a symlink to a secret directory,
// each swap atomic. Whatever instant a lookup lands on, the secret never
// comes back and nothing blocks.
func TestCollectRaceF04(t *testing.T) {
	ct := newCollectTree(t)
	ct.write("out/f.txt", "public")
	ct.symlink(ct.secretF, "out/.s-link")
	require.NoError(t, unix.Mkfifo(ct.path("out/.s-fifo"), 0o666))
	ct.write("d/x.txt", "public")
	ct.write("d/f.txt", "public")
	ct.symlink(ct.secretD, ".d-link")
	ct.symlink("../secretdir", "out/.rel-link")

	var stop atomic.Bool
	var swaps atomic.Int64
	var wg sync.WaitGroup
	swapper := func(pairs [][2]string) {
		defer wg.Done()
		for !stop.Load() {
			for _, p := range pairs {
				// Swap and swap back: both names always exist.
				if err := exchange(ct.path(p[0]), ct.path(p[1])); err != nil {
					t.Errorf("exchange %s %s: %v", p[0], p[1], err)
					return
				}
				if err := exchange(ct.path(p[0]), ct.path(p[1])); err != nil {
					t.Errorf("exchange %s %s: %v", p[0], p[1], err)
					return
				}
				swaps.Add(1)
			}
		}
	}
	wg.Add(3)
	go swapper([][2]string{{"out/f.txt", "out/.s-link"}, {"out/f.txt", "out/.s-fifo"}})
	go swapper([][2]string{{"d", ".d-link"}})
	go swapper([][2]string{{"out/f.txt", "out/.rel-link"}})

	globs := []string{"out/*", "out/f.txt", "d/x.txt", "*/x.txt", "d/*", "*/*", ".*/*", "*/f.txt"}
	const iterations = 5000
	var fileOK, fileRefused, dirOK, dirRefused int
	deadline := time.Now().Add(2 * time.Minute)
	for i := 0; i < iterations && time.Now().Before(deadline); i++ {
		got := Collect(ct.root, globs, CollectLimits{})
		ct.check(got)
		for _, f := range got {
			if f.Content != nil && string(f.Content) != "public" {
				t.Fatalf("%q: unexpected content %q", f.Path, f.Content)
			}
			switch f.Path {
			case "out/f.txt":
				if f.Content != nil {
					fileOK++
				} else {
					fileRefused++
				}
			case "d/x.txt":
				if f.Content != nil {
					dirOK++
				} else {
					dirRefused++
				}
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d swaps; out/f.txt collected %d times, refused %d; d/x.txt collected %d, refused %d", swaps.Load(), fileOK, fileRefused, dirOK, dirRefused)
	// The race must really have been run both ways, or this test proves
	// nothing.
	assert.Positive(t, fileOK)
	assert.Positive(t, fileRefused)
	assert.Positive(t, dirOK)
	assert.Positive(t, dirRefused)
	assert.Positive(t, swaps.Load())
}

func BenchmarkCollect(b *testing.B) {
	ct := newCollectTree(b)
	for i := range 20 {
		ct.write(fmt.Sprintf("out/f%02d.txt", i), strings.Repeat("x", 1000))
	}
	ct.write("result.json", `{"ok":true}`)
	for b.Loop() {
		Collect(ct.root, []string{"out/*.txt", "result.json"}, CollectLimits{})
	}
}
