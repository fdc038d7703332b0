package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
	"agentjail/nsjail"
)

var (
	runnerOnce sync.Once
	runner     *nsjail.Runner
	runnerErr  error
	// realEnvs are the environments realRunner opened, as the daemon
	// does: testOptions' when a test has called realRunner first.
	realEnvs map[string]*Environment
	realCfg  *Config
)

// realRunner is the shared jail runner of the integration tests.
func realRunner(t testing.TB) *nsjail.Runner {
	t.Helper()
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python, systest.Seccomp)
	runnerOnce.Do(func() {
		runner, runnerErr = nsjail.NewRunner()
		if runnerErr == nil { // as the daemon does
			cfg := DefaultConfig()
			cfg.Admission.MaxConcurrent = 2
			cfg.Jail.Start = string(testStart())
			envs := cfg.Policy().Environments
			_, runnerErr = OpenEnvironments(cfg, envs, runner, slog.New(slog.NewTextHandler(io.Discard, nil)))
			realEnvs, realCfg = envs, cfg
			if runnerErr == nil {
				runnerErr = awaitSettled(runner, envs)
			}
		}
	})
	require.NoError(t, runnerErr)
	return runner
}

// awaitSettled waits until the font cache work of OpenEnvironments is
// over and each environment's zygote is up (unless the tests run cold):
// a test that wants a warm run then gets one, not a cold one while a
// zygote is replaced.
func awaitSettled(r *nsjail.Runner, envs map[string]*Environment) error {
	deadline := time.Now().Add(3 * time.Minute)
	for _, e := range envs {
		select {
		case <-e.fontDone:
		case <-time.After(time.Until(deadline)):
			return fmt.Errorf("environment %s: its font cache work did not end in 3 minutes", e.Name)
		}
		for testStart() == nsjail.StartWarm {
			if _, up := r.WarmInfo(e.Name); up {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("environment %s: no zygote up in 3 minutes", e.Name)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return nil
}

// recordingJailer remembers every jail (not its output: the load test
// measures the daemon's memory), for host-side checks.
type recordingJailer struct {
	r *nsjail.Runner

	mu      sync.Mutex
	results []jailRecord
	ended   []time.Time
}

type jailRecord struct {
	ID         string
	HostUID    uint32
	KillReason nsjail.KillReason
	Prepared   bool
}

func (j *recordingJailer) Run(ctx context.Context, s *nsjail.Spec) (*nsjail.Result, error) {
	res, err := j.r.Run(ctx, s)
	j.mu.Lock()
	defer j.mu.Unlock()
	if res != nil {
		j.results = append(j.results, jailRecord{res.ID, res.HostUID, res.KillReason, res.Prepared})
		j.ended = append(j.ended, time.Now())
	}
	return res, err
}

func (j *recordingJailer) prepared() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := 0
	for _, r := range j.results {
		if r.Prepared {
			n++
		}
	}
	return n
}

func (j *recordingJailer) noLeftovers(t *testing.T, mounts int) {
	t.Helper()
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, r := range j.results {
		systest.NoLeftovers(t, r.HostUID, r.ID, mounts)
	}
}

func runJSON(t *testing.T, c *http.Client, req map[string]any) *Result {
	t.Helper()
	b, err := json.Marshal(req)
	require.NoError(t, err)
	resp, body := post(t, c, string(b))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var res Result
	require.NoError(t, json.Unmarshal(body, &res))
	return &res
}

func TestDaemonRunsRealJails(t *testing.T) {
	j := &recordingJailer{r: realRunner(t)}
	mounts := systest.MountCount()
	_, _, c := startServer(t, testOptions(), j)
	res := runJSON(t, c, map[string]any{"code": "import sys; print(sum(range(10))); print(sys.stdin.read(), open('d/in.txt').read())",
		"stdin": "IN", "files": []map[string]string{{"path": "d/in.txt", "content": "FILE"}}})
	assert.Equal(t, "ok", res.Status, res.Stderr)
	assert.Equal(t, "45\nIN FILE\n", res.Stdout)
	require.NotNil(t, res.PeakMemoryBytes)
	// A cold python3 writes a few MiB; a warm fork (the daemon's default)
	// its copies of the zygote's pages, some hundreds of KiB.
	assert.Greater(t, *res.PeakMemoryBytes, int64(256<<10))

	res = runJSON(t, c, map[string]any{"code": "x = bytearray(200 << 20)", "limits": map[string]any{"memory_bytes": 64 << 20}})
	assert.Equal(t, "killed", res.Status)
	assert.Equal(t, "memory_limit", res.KillReason)
	assert.NotEmpty(t, res.Feedback)
	j.noLeftovers(t, mounts)
}

// TestDaemonCancelsRealJail: the client hangs up mid-run; the jail is dead
// within 100 ms, with kill_reason "cancelled", and nothing is left.
func TestDaemonCancelsRealJail(t *testing.T) {
	j := &recordingJailer{r: realRunner(t)}
	mounts := systest.MountCount()
	_, sock, _ := startServer(t, testOptions(), j)
	body := `{"code":"import time; print('up', flush=True); time.sleep(60)"}`
	conn := rawPost(t, sock, len(body), body)
	time.Sleep(500 * time.Millisecond) // python3 is running
	closed := time.Now()
	conn.Close()
	require.Eventually(t, func() bool { j.mu.Lock(); defer j.mu.Unlock(); return len(j.results) == 1 }, 5*time.Second, time.Millisecond)
	j.mu.Lock()
	res, ended := j.results[0], j.ended[0]
	j.mu.Unlock()
	assert.Equal(t, nsjail.KillCancelled, res.KillReason)
	assert.Less(t, ended.Sub(closed), 100*time.Millisecond, "the jail outlived its client by too much")
	t.Logf("jail ended %v after the client hung up", ended.Sub(closed))
	j.noLeftovers(t, mounts)
}

// TestConcurrentJobsDoNotSeeEachOther runs two jobs at once: the second
// must not see the first's files, processes, abstract sockets or SysV IPC
// (docs/security.md A.1: one namespace set per job), nor, run afterwards, its
// files (F03).
func TestConcurrentJobsDoNotSeeEachOther(t *testing.T) {
	j := &recordingJailer{r: realRunner(t)}
	mounts := systest.MountCount()
	_, _, c := startServer(t, testOptions(), j)
	const first = `import os, socket, ctypes, time
for p in ("/tmp/m", "/workspace/m", "/dev/shm/m"):
    open(p, "w").write("x")
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.bind("\0agentjail-f03"); s.listen()
libc = ctypes.CDLL(None, use_errno=True)
print("shm", libc.shmget(0x4a41494c, 4096, 0o1666), "msg", libc.msgget(0x4a41494c, 0o1666))
print("F03 w", flush=True)
time.sleep(3)`
	const second = `import os, socket, ctypes
print("F03 r", [p for p in ("/tmp/m", "/workspace/m", "/dev/shm/m", os.path.expanduser("~/.pythonrc")) if os.path.exists(p)])
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect("\0agentjail-f03"); print("abstract: connected")
except OSError as e:
    print("abstract:", type(e).__name__)
libc = ctypes.CDLL(None, use_errno=True)
print("shm", libc.shmget(0x4a41494c, 4096, 0), "msg", libc.msgget(0x4a41494c, 0))
print("procs", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))`
	var wg sync.WaitGroup
	var firstRes *Result
	wg.Add(1)
	go func() {
		defer wg.Done()
		firstRes = runJSON(t, c, map[string]any{"code": first})
	}()
	time.Sleep(1500 * time.Millisecond) // the first job is in its sleep
	res := runJSON(t, c, map[string]any{"code": second})
	assert.Equal(t, "ok", res.Status, res.Stderr)
	assert.Equal(t, "F03 r []\nabstract: ConnectionRefusedError\nshm -1 msg -1\nprocs [1, 2]\n", res.Stdout)
	wg.Wait()
	require.NotNil(t, firstRes)
	assert.Equal(t, "ok", firstRes.Status, firstRes.Stderr)
	assert.Regexp(t, `^shm \d+ msg \d+\nF03 w\n$`, firstRes.Stdout, "the first job did create everything")
	// And sequentially: a fresh job sees nothing of the last one.
	res = runJSON(t, c, map[string]any{"code": second})
	assert.Contains(t, res.Stdout, "F03 r []\n")
	j.noLeftovers(t, mounts)
}

// TestPeerCredentials: a client running under another uid is refused with
// 403, while the allowed uid (root) is served. The peer is this test
// binary re-executed as nobody.
func TestPeerCredentials(t *testing.T) {
	systest.Require(t, systest.Root)
	dir, err := os.MkdirTemp("", "agentjail-peer-") // reachable by nobody, unlike t.TempDir's parent
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	require.NoError(t, os.Chmod(dir, 0o755))
	o := testOptions()
	o.AllowUIDs = []uint32{0}
	sock := filepath.Join(dir, "peer.sock")
	l, err := Listen(sock, 0o666, -1)
	require.NoError(t, err)
	s := NewServer(o, &fakeJailer{})
	go func() { _ = s.Serve(l) }()
	defer s.Shutdown(context.Background())

	peer := func(uid uint32) string {
		cmd := exec.Command("/proc/self/exe", "-test.run=^$")
		cmd.Env = []string{"AGENTJAIL_TEST_PEER=" + sock}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		return strings.TrimSpace(string(out))
	}
	assert.Equal(t, "403", peer(65534), "nobody is refused")
	assert.Equal(t, "200", peer(0), "root is allowed")
}

// TestLoad sends 1,000 mixed runs from 16 clients to a daemon with two
// slots: every request gets its right answer (no 500, no 429 with a queue
// that fits every client), and afterwards the daemon's fds, goroutines and
// memory are back near their baseline and no jail is left.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test: not in -short")
	}
	j := &recordingJailer{r: realRunner(t)}
	mounts := systest.MountCount()
	o := testOptions()
	o.MaxConcurrent, o.QueueLength = 2, 16
	s, _, c := startServer(t, o, j)

	// Warm up, then take the baseline with every prepared jail and warm
	// run waiting (each holds fds: its socket, and on cgroup v1 its
	// cgroup's locks and tasks files), as at the end.
	runJSON(t, c, map[string]any{"code": "pass"})
	poolFull := func() {
		require.Eventually(t, func() bool {
			ready, _ := j.r.PreparedStats()
			up, ahead, _, _ := j.r.WarmStats()
			return ready == realCfg.Prepared() && up == 1 && ahead == realCfg.WarmAhead()
		}, 10*time.Second, 5*time.Millisecond, "every prepared jail and warm run waiting")
	}
	poolFull()
	debug.FreeOSMemory()
	fds0, gor0, rss0 := systest.FdCount(), runtime.NumGoroutine(), systest.SelfRSS()

	const total, clients = 1000, 16
	start := time.Now()
	failures := sendLoad(c, total, clients)
	took := time.Since(start)
	t.Logf("%d runs from %d clients with 2 slots in %v (%.1f runs/s), %d in prepared jails", total, clients, took, total/took.Seconds(), j.prepared())
	// The daemon's jails come prepared, with the harness in place, unless
	// every prepared one is taken at the moment a request arrives.
	assert.Greater(t, j.prepared(), total/2)
	assert.Empty(t, failures, "%d of %d runs went wrong", len(failures), total)
	c.CloseIdleConnections()

	assert.Equal(t, 0, s.Running())
	assert.Equal(t, 0, s.Queued())
	// Back near the baseline: a leak of one fd, goroutine or 10 KiB per run
	// would show as 1,000 of them.
	require.Eventually(t, func() bool { return runtime.NumGoroutine() <= gor0+8 }, 5*time.Second, 50*time.Millisecond,
		"goroutines: %d before, %d after", gor0, runtime.NumGoroutine())
	poolFull()
	assert.LessOrEqual(t, systest.FdCount(), fds0+8, "fds: %d before", fds0)
	debug.FreeOSMemory() // what the heap holds, not what the runtime has yet to return
	rss1 := systest.SelfRSS()
	t.Logf("baseline fds %d goroutines %d rss %.1f MiB; after fds %d goroutines %d rss %.1f MiB",
		fds0, gor0, float64(rss0)/(1<<20), systest.FdCount(), runtime.NumGoroutine(), float64(rss1)/(1<<20))
	assert.Less(t, rss1, rss0+16<<20, "RSS grew by %d MiB", (rss1-rss0)>>20)
	j.noLeftovers(t, mounts)
}

// loadKind is one kind of run TestLoad sends, and its right answer.
type loadKind struct {
	req        map[string]any
	status     string
	killReason string
	check      func(*Result) string
}

// loadKinds are the kinds of runs TestLoad mixes.
var loadKinds = []loadKind{
	{map[string]any{"code": "print('ok')"}, "ok", "", func(r *Result) string { return eq(r.Stdout, "ok\n") }},
	{map[string]any{"code": "raise ValueError('boom')"}, "error", "", func(r *Result) string { return contains(r.Stderr, "ValueError: boom") }},
	{map[string]any{"code": "x = bytearray(100 << 20)", "limits": map[string]any{"memory_bytes": 32 << 20}}, "killed", "memory_limit", nil},
	{map[string]any{"code": "while True: pass", "limits": map[string]any{"wall_time_ms": 150}}, "killed", "wall_timeout", nil},
	{map[string]any{"code": "import sys\nwhile True: sys.stdout.write('x' * 65536)", "limits": map[string]any{"output_bytes": 100000}}, "killed", "output_limit",
		func(r *Result) string { return eq(strconv.Itoa(len(r.Stdout)), "100000") }},
}

// sendLoad sends total runs of loadKinds, in turn, from clients
// goroutines through c; it returns what went wrong.
func sendLoad(c *http.Client, total, clients int) []string {
	var mu sync.Mutex
	var failures []string
	work := make(chan int, total)
	for i := range total {
		work <- i
	}
	close(work)
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if msg := sendLoadRun(c, i); msg != "" {
					mu.Lock()
					failures = append(failures, msg)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return failures
}

// sendLoadRun sends run i, of kind i%len(loadKinds), and says what is
// wrong with its answer, if anything.
func sendLoadRun(c *http.Client, i int) string {
	k := loadKinds[i%len(loadKinds)]
	b, _ := json.Marshal(k.req)
	resp, err := c.Post("http://agentjail/v1/run", "application/json", strings.NewReader(string(b)))
	if err != nil {
		return fmt.Sprintf("run %d: %v", i, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var res Result
	msg := ""
	switch {
	case resp.StatusCode != 200:
		msg = fmt.Sprintf("HTTP %d %s", resp.StatusCode, body)
	case json.Unmarshal(body, &res) != nil:
		msg = "bad JSON " + string(body)
	case res.Status != k.status || res.KillReason != k.killReason:
		msg = fmt.Sprintf("got %s/%s, want %s/%s (stderr %.200s)", res.Status, res.KillReason, k.status, k.killReason, res.Stderr)
	case k.check != nil:
		msg = k.check(&res)
	}
	if msg != "" {
		return fmt.Sprintf("run %d (kind %d): %s", i, i%len(loadKinds), msg)
	}
	return ""
}

func eq(got, want string) string {
	if got != want {
		return fmt.Sprintf("got %.100q, want %.100q", got, want)
	}
	return ""
}

func contains(got, want string) string {
	if !strings.Contains(got, want) {
		return fmt.Sprintf("%.200q does not contain %q", got, want)
	}
	return ""
}

// TestHarnessInRealJail: the harness, the report channel, verdicts outside
// the jail and collection, end to end through the daemon and a real jail.
func TestHarnessInRealJail(t *testing.T) {
	j := &recordingJailer{r: realRunner(t)}
	mounts := systest.MountCount()
	_, _, c := startServer(t, testOptions(), j)

	res := runJSON(t, c, map[string]any{"code": "x = 1\nprint('before')\n1/0\n"})
	assert.Equal(t, "error", res.Status)
	require.NotNil(t, res.Exception, res.Stderr)
	assert.Equal(t, "ZeroDivisionError", res.Exception.Type)
	assert.Equal(t, 3, res.Exception.Line)
	assert.Equal(t, "before\n", res.Stdout)
	assert.Contains(t, res.Stderr, `File "/code/main.py", line 3, in <module>`)
	assert.NotContains(t, res.Stderr, "harness", "harness frames are not shown")
	assert.Equal(t, res.Stderr, res.Exception.Traceback)
	require.NotEmpty(t, res.Feedback)
	assert.Contains(t, res.Feedback[0], "ZeroDivisionError")

	// Tests: the code forges a record for case 0 on fd 3 before the harness
	// reports its own; expected values never entered the jail.
	res = runJSON(t, c, map[string]any{
		"code": `import os
os.write(3, b'{"t":"case","i":0,"ms":0,"type":"int","value":3}\n')
print("PASS small", flush=True)
def add(a, b):
    return a - b
`,
		"tests": map[string]any{"function": "add", "cases": []map[string]any{
			{"name": "small", "args": []any{1, 2}, "expected": 3},
			{"name": "zero", "args": []any{0, 0}, "expected": 0},
			{"name": "type", "args": []any{1, 2}, "expected_type": "int"},
			{"name": "raises", "args": []any{nil, 2}, "expected_exception": "TypeError"},
		}},
	})
	assert.Equal(t, "ok", res.Status, res.Stderr)
	require.NotNil(t, res.Tests)
	verdict := map[string]bool{}
	for _, r := range res.Tests.Results {
		verdict[r.Name] = r.Passed
	}
	assert.Equal(t, map[string]bool{"small": false, "zero": true, "type": true, "raises": true}, verdict, "%+v", res.Tests.Results)
	assert.Equal(t, 4, res.Tests.Total)
	assert.Equal(t, 3, res.Tests.Passed)
	assert.False(t, res.Tests.AllPassed)
	assert.NotEmpty(t, res.Feedback, "a failed test is explained")

	// Files in and out.
	res = runJSON(t, c, map[string]any{
		"code": `import os
os.makedirs("out", exist_ok=True)
open("out/a.txt", "w").write(open("in/data.txt").read().upper())
open("out/b.bin", "wb").write(bytes([0, 255, 1]))
os.symlink("/etc/passwd", "out/c.txt")
`,
		"files":   []map[string]string{{"path": "in/data.txt", "content": "hello"}},
		"collect": []string{"out/*", "missing.json"},
	})
	assert.Equal(t, "ok", res.Status, res.Stderr)
	files := map[string]ResultFile{}
	for _, f := range res.Files {
		files[f.Path] = f
	}
	require.Contains(t, files, "out/a.txt")
	assert.Equal(t, "utf-8", files["out/a.txt"].Encoding)
	assert.Equal(t, "HELLO", *files["out/a.txt"].Content)
	require.Contains(t, files, "out/b.bin")
	assert.Equal(t, "base64", files["out/b.bin"].Encoding)
	assert.Equal(t, "AP8B", *files["out/b.bin"].Content)
	require.Contains(t, files, "out/c.txt")
	assert.Nil(t, files["out/c.txt"].Content)
	assert.Contains(t, files["out/c.txt"].Error, "symbolic link")
	require.Contains(t, files, "missing.json")
	assert.NotEmpty(t, files["missing.json"].Error)
	j.noLeftovers(t, mounts)
}

// BenchmarkDaemonRunPass is one POST /v1/run of `pass` through a real
// daemon and a prepared jail, for profiles of the daemon's side:
// go test -bench DaemonRunPass -cpuprofile cpu.out ./daemon. Its
// process-cpu-ms/op counts the in-process client too; scripts/bench and
// scripts/benchmarks/bench_ab.py measure a daemon process alone.
func BenchmarkDaemonRunPass(b *testing.B) {
	r := realRunner(b)
	_, _, c := startServer(b, testOptions(), r)
	for range 5 {
		post(b, c, `{"code":"pass"}`)
	}
	cpu0 := systest.SelfCPU()
	for b.Loop() {
		resp, body := post(b, c, `{"code":"pass"}`)
		if resp.StatusCode != http.StatusOK {
			b.Fatal(string(body))
		}
	}
	b.ReportMetric(float64(systest.SelfCPU()-cpu0)/float64(time.Millisecond)/float64(b.N), "process-cpu-ms/op")
}
