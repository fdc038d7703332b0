//go:build linux

package seccomp

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Every number below adoptTestedNr is evaluated; allSet is every argument
// with every bit set. (compile_test.go's own need libseccomp; these do not.)
const adoptTestedNr = 1024

var allSet = [6]uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}

// adoptArgs are the arguments each number is evaluated with: none, all
// bits, a malloc's mmap, and each single bit of each argument (so that a
// check of the wrong argument, or of its high word, shows: MAP_HUGETLB
// alone in args[3], or in its high word, or in another argument).
func adoptArgs() [][6]uint64 {
	out := [][6]uint64{{}, allSet, {0, 4096, 3, 0x22, ^uint64(0), 0}}
	for i := range 6 {
		for b := range 64 {
			var a [6]uint64
			a[i] = 1 << b
			out = append(out, a)
		}
		a := allSet
		a[i] &^= mapHugetlb
		out = append(out, a)
	}
	return out
}

// TestAdoptProgramAllowsOnlyItsCalls evaluates the warm run init's filter
// for every number, x32's and other architectures' included: exactly
// AdoptCalls are allowed, whatever their arguments; everything else fails
// with ENOSYS.
func TestAdoptProgramAllowsOnlyItsCalls(t *testing.T) {
	var p Program
	require.NoError(t, p.UnmarshalBinary(AdoptProgramBytes()))
	require.Equal(t, adoptProgram().Instructions, p.Instructions)
	allowed := map[int]bool{}
	for _, name := range AdoptCalls {
		nr, ok := syscallNumber(name)
		require.True(t, ok, name)
		allowed[nr] = true
	}
	require.Len(t, allowed, len(AdoptCalls))
	eval := func(arch uint32, nr int32, args [6]uint64) string {
		r, err := run(p.Instructions, input{nr: nr, arch: arch, args: args})
		require.NoError(t, err, "nr %d arch %#x", nr, arch)
		return retString(r)
	}
	mmap, _ := syscallNumber("mmap")
	for nr := range adoptTestedNr {
		for _, args := range adoptArgs() {
			want := "ERRNO(ENOSYS)"
			if allowed[nr] && (nr != mmap || args[3]&mapHugetlb == 0) {
				want = "ALLOW"
			}
			require.Equal(t, want, eval(auditArchX86_64, int32(nr), args), "%s (%d) %#x", SyscallName(nr), nr, args)
		}
		require.Equal(t, "ERRNO(ENOSYS)", eval(auditArchX86_64, int32(nr|x32SyscallBit), [6]uint64{}), "x32 %d", nr)
		require.Equal(t, "ERRNO(ENOSYS)", eval(auditArchI386, int32(nr), [6]uint64{}), "i386 %d", nr)
	}
	require.Equal(t, "ERRNO(ENOSYS)", eval(auditArchX86_64, -1, [6]uint64{}))
}

// TestAdoptCallsAreTheProgramsToo: a warm run's init may do nothing its
// program may not. Wherever the init's filter allows a call (every
// number, with no arguments, all ones, and the arguments of a malloc's
// mmap), the program's filter allows it too.
func TestAdoptCallsAreTheProgramsToo(t *testing.T) {
	prog, err := DefaultProgram()
	require.NoError(t, err)
	adopt := adoptProgram().Instructions
	for nr := range adoptTestedNr {
		for _, args := range adoptArgs() {
			in := input{nr: int32(nr), arch: auditArchX86_64, args: args}
			a, err := run(adopt, in)
			require.NoError(t, err)
			if retString(a) != "ALLOW" {
				continue
			}
			p, err := run(prog.Instructions, in)
			require.NoError(t, err)
			require.Equal(t, "ALLOW", retString(p), "%s (%d) %#x", SyscallName(nr), nr, args)
		}
	}
	require.Len(t, adopt, 24)
}
