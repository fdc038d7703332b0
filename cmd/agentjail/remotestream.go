package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// liveOutput is where a streamed answer's output goes as it comes: the
// command's own stdout and stderr.
type liveOutput struct{ stdout, stderr io.Writer }

// streamEvent is one line of a streamed answer (docs/contract.md,
// "Streamed output").
type streamEvent struct {
	Event      string  `json:"event"`
	Data       string  `json:"data"`
	DataBase64 *string `json:"data_base64"`
	HTTPStatus int     `json:"http_status"`
}

// remoteStream is remoteDo for a run or a call whose body asks for a
// stream: it writes each output event's exact bytes to out as it comes,
// and returns what remoteDo would have: the status and the result (the
// last event, whose "event" key the result's readers skip), or the
// status and error object of an error, refused at once or at the end.
func remoteStream(ctx context.Context, sock, path string, body any, out *liveOutput) (int, []byte, error) {
	resp, err := remoteSend(ctx, sock, http.MethodPost, path, body)
	if err != nil {
		return 0, nil, err
	}
	return readStream(ctx, resp, "daemon on "+sock, out)
}

// httpStream is remoteStream with client, for the daemon named where
// (agentjail mcp's backends).
func httpStream(ctx context.Context, client *http.Client, where, path string, body any, out *liveOutput) (int, []byte, error) {
	hr, err := jsonRequest(ctx, http.MethodPost, "http://agentjail"+path, body)
	if err != nil {
		return 0, nil, err
	}
	resp, err := client.Do(hr)
	if err != nil {
		return 0, nil, transportError(ctx, where, err)
	}
	return readStream(ctx, resp, where, out)
}

// readStream reads a streamed answer (or a plain one: an error), writing
// the output to out as it comes, and closes it.
func readStream(ctx context.Context, resp *http.Response, where string, out *liveOutput) (int, []byte, error) {
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return 0, nil, fmt.Errorf("%s: reading the answer: %w", where, err)
		}
		return resp.StatusCode, b, nil
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			if ctx.Err() != nil {
				return 0, nil, fmt.Errorf("cancelled: %w", context.Cause(ctx))
			}
			if errors.Is(err, io.EOF) {
				err = errors.New("the answer ended before its result")
			}
			return 0, nil, fmt.Errorf("%s: reading the streamed answer: %w", where, err)
		}
		var e streamEvent
		if err := json.Unmarshal(line, &e); err != nil {
			return 0, nil, fmt.Errorf("%s: bad event in the streamed answer: %w", where, err)
		}
		switch e.Event {
		case "stdout", "stderr":
			data := []byte(e.Data)
			if e.DataBase64 != nil { // not UTF-8: the exact bytes
				if data, err = base64.StdEncoding.DecodeString(*e.DataBase64); err != nil {
					return 0, nil, fmt.Errorf("%s: bad data_base64 in the streamed answer: %w", where, err)
				}
			}
			w := out.stdout
			if e.Event == "stderr" {
				w = out.stderr
			}
			_, _ = w.Write(data)
		case "result":
			return http.StatusOK, line, nil
		case "error":
			return e.HTTPStatus, line, nil
		}
		// Another kind of event, from a newer daemon: skipped.
	}
}

// transportError is a request that got no answer: cancelled by the
// caller, no daemon on the socket (said as such), or the transport's own
// error, named by where it went.
func transportError(ctx context.Context, where string, err error) error {
	var de *daemonAbsent
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("cancelled: %w", context.Cause(ctx))
	case errors.As(err, &de):
		return de
	}
	return fmt.Errorf("%s: %w", where, err)
}
