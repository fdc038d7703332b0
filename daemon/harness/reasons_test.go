package harness

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"agentjail/nsjail"
)

// Every way a session ends is said in words.
func TestEveryEndReasonIsExplained(t *testing.T) {
	for _, r := range nsjail.EndReasons() {
		assert.NotEmpty(t, endedWhy[r], "%s: add it to endedWhy", r)
	}
	assert.Len(t, endedWhy, len(nsjail.EndReasons()), "endedWhy has a reason nsjail does not")
}

// Every kill reason has its row in killSentences (nil only where another
// sentence says it).
func TestEveryKillReasonHasASentence(t *testing.T) {
	for _, k := range nsjail.KillReasons() {
		say, ok := killSentences[k]
		if !assert.True(t, ok, "%s: add it to killSentences", k) || say == nil {
			continue
		}
		s := say(&nsjail.Result{KillReason: k, Status: nsjail.StatusKilled})
		assert.True(t, strings.HasSuffix(s, "."), "%s: %q", k, s)
	}
	assert.Len(t, killSentences, len(nsjail.KillReasons()))
}

// A call of a session that names what no earlier call defined is told
// what a session keeps, in one sentence, and not that runs share no state
// (a run is told that).
func TestNameErrorFeedbackOfACallAndOfARun(t *testing.T) {
	exc := &Exception{Type: "NameError", Message: "name 'x' is not defined", Line: 1}
	run := ProgramFeedback(exc, nil, nil, nil)
	assert.Contains(t, strings.Join(run, "\n"), hintNoSharedState)
	call := CallFeedback(Call{Result: &nsjail.Result{Status: nsjail.StatusError, ExitCode: 1}, Exception: exc, Before: 2})
	all := strings.Join(call, "\n")
	assert.NotContains(t, all, "Runs share no state")
	assert.Contains(t, all, "In a session, names last from one call to the next")
	assert.Contains(t, all, "this session's 2 earlier calls")
	assert.Equal(t, 2, len(call), "the exception's sentence and the session's: %q", call)

	ended := CallFeedback(Call{Result: &nsjail.Result{Status: nsjail.StatusKilled, KillReason: nsjail.KillControlLost}, Ended: nsjail.EndControlLost})
	assert.Equal(t, []string{"The session has ended (control_lost): " + endedWhy[nsjail.EndControlLost] +
		"; its variables, imports and files are gone: start a new session (POST /v1/sessions) to go on."}, ended)
}
