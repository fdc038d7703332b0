package systest

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// Threads are this process's thread ids.
func Threads(t testing.TB) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	var tids []int
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids
}

// ThreadsInSyscall are the threads of this process that are in system
// call nr now (their /proc/self/task/*/syscall; one that ends meanwhile is
// left out).
func ThreadsInSyscall(t testing.TB, nr int) []int {
	t.Helper()
	prefix := strconv.Itoa(nr) + " "
	var in []int
	for _, tid := range Threads(t) {
		b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/syscall")
		if err == nil && strings.HasPrefix(string(b), prefix) {
			in = append(in, tid)
		}
	}
	return in
}
