package main

import (
	"errors"
	"strings"
)

// The daemon's messages about sessions name its HTTP requests ("start a
// new one (POST /v1/sessions)"); `agentjail session` says its own
// commands instead, which are what its user types.
var sessionWords = strings.NewReplacer( // the longer first: compared in this order
	"POST /v1/sessions/{id}/run", "agentjail session run ID",
	"DELETE /v1/sessions/{id}", "agentjail session end ID",
	"GET /v1/sessions/{id}", "agentjail session show ID",
	"POST /v1/sessions", "agentjail session start",
	"GET /v1/sessions", "agentjail session list",
)

// sessionFailure is remoteFailure for a session command: the daemon's
// refusal, its message in the command line's words.
func sessionFailure(status int, b []byte) error {
	err := remoteFailure("session request", status, b)
	var re *remoteError
	var ue *usageError
	switch {
	case errors.As(err, &re):
		re.Message = sessionWords.Replace(re.Message)
	case errors.As(err, &ue):
		ue.msg = sessionWords.Replace(ue.msg)
	}
	return err
}

// sessionFeedback is a call's feedback in the command line's words.
func sessionFeedback(fb []string) []string {
	out := make([]string, len(fb))
	for i, s := range fb {
		out[i] = sessionWords.Replace(s)
	}
	return out
}
