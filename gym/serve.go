package gym

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/tpucost/tpucost/internal/jsonerr"
)

// The serve protocol: line-delimited JSON over a reader and a writer (stdin and stdout of
// `tpucost gym serve`), so an agent in any language can drive an Env. Each request is one
// JSON object on one line; each gets exactly one response line, in order. Blank lines
// are ignored. The server ends at EOF (or when ctx is cancelled, checked between lines).
//
// Requests:
//
//	{"op":"actions"}
//	{"op":"reset","program":"gpt2_tiny_s128_b8_train","seed":1,"max_steps":20,"graph":true}
//	{"op":"step","action":3}
//
// reset's program may be omitted to pick one of the server's programs with the seed;
// seed (default 0), max_steps (default DefaultMaxSteps) and graph (default true:
// include the graph tensors in observations, which can be megabytes for large programs;
// with false its arrays are null)
// are optional.
//
// Responses: {"ok":true, ...} with, for actions, "actions" (names by index) and "stop"
// (the stop action's index); for reset and step, "observation" (Observation), "reward",
// "done" and "info" ({"action", "action_name", "return"} — return is the episode's reward
// so far). A request that cannot be served — malformed JSON, an unknown op or field, a
// missing or invalid action, a program that does not load, a failing pass — gets
// {"ok":false,"error":"line N: ...","line":N} and the server keeps going (a failed pass
// ends its episode: reset again).

// Request is one line of the serve protocol.
type Request struct {
	Op       string `json:"op"`
	Program  string `json:"program,omitempty"`
	Seed     int64  `json:"seed,omitempty"`
	MaxSteps int    `json:"max_steps,omitempty"`
	Graph    *bool  `json:"graph,omitempty"`
	Action   *int   `json:"action,omitempty"`
}

// Response is one line the server writes.
type Response struct {
	OK          bool         `json:"ok"`
	Error       string       `json:"error,omitempty"`
	Line        int          `json:"line,omitempty"`
	Actions     []string     `json:"actions,omitempty"`
	Stop        *int         `json:"stop,omitempty"`
	Observation *Observation `json:"observation,omitempty"`
	Reward      *float64     `json:"reward,omitempty"`
	Done        *bool        `json:"done,omitempty"`
	Info        *StepInfo    `json:"info,omitempty"`
}

// StepInfo is a reset or step response's info.
type StepInfo struct {
	Action     int     `json:"action"`      // the action taken; -1 after reset
	ActionName string  `json:"action_name"` // its name ("" after reset)
	Return     float64 `json:"return"`      // the episode's rewards so far
}

// ServeOptions configure Serve.
type ServeOptions struct {
	// Programs are what a reset without a program picks from.
	Programs []string
	// Verify runs hlo.Verify after every pass.
	Verify bool
}

// Serve runs the serve protocol, reading requests from r and writing responses to w,
// until EOF. It returns an error only when reading or writing fails or ctx is cancelled;
// bad requests get error responses.
func Serve(ctx context.Context, r io.Reader, w io.Writer, o ServeOptions) error {
	br := bufio.NewReader(r)
	bw := bufio.NewWriter(w)
	s := &server{o: o}
	for line := 1; ; line++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		b, rerr := br.ReadBytes('\n')
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return fmt.Errorf("gym serve: reading line %d: %w", line, rerr)
		}
		if len(bytes.TrimSpace(b)) > 0 {
			resp := s.handle(b)
			if !resp.OK {
				resp.Error = fmt.Sprintf("line %d: %s", line, resp.Error)
				resp.Line = line
			}
			out, err := json.Marshal(resp)
			if err != nil {
				return fmt.Errorf("gym serve: encoding the response to line %d: %w", line, err)
			}
			if _, err := bw.Write(append(out, '\n')); err != nil {
				return fmt.Errorf("gym serve: %w", err)
			}
			if err := bw.Flush(); err != nil {
				return fmt.Errorf("gym serve: %w", err)
			}
		}
		if rerr != nil { // EOF
			return nil
		}
	}
}

type server struct {
	o     ServeOptions
	env   *Env
	graph bool
	ret   float64
}

func fail(format string, args ...any) Response {
	return Response{Error: fmt.Sprintf(format, args...)}
}

func (s *server) handle(line []byte) Response {
	var req Request
	if err := jsonerr.UnmarshalStrict("request", line, &req); err != nil {
		// Said for people (field paths and columns, never Go types): the line number is
		// the response's.
		var je *jsonerr.Error
		switch {
		case !errors.As(err, &je):
			return fail("malformed request: %v", err)
		case je.Field != "":
			return fail("malformed request: field %s: %s", je.Field, je.Msg)
		case je.Col > 0:
			return fail("malformed request: column %d: %s", je.Col, je.Msg)
		}
		return fail("malformed request: %s", je.Msg)
	}
	switch req.Op {
	case "actions":
		if req.Program != "" || req.Action != nil || req.Seed != 0 || req.MaxSteps != 0 || req.Graph != nil {
			return fail("op actions takes no other fields")
		}
		st := Stop()
		return Response{OK: true, Actions: Actions(), Stop: &st}
	case "reset":
		if req.Action != nil {
			return fail("op reset takes no action")
		}
		if req.MaxSteps < 0 {
			return fail("max_steps must be positive, got %d", req.MaxSteps)
		}
		env, err := New(Options{MaxSteps: req.MaxSteps, Seed: req.Seed, Programs: s.o.Programs, Verify: s.o.Verify})
		if err != nil {
			return fail("%v", err)
		}
		obs, err := env.Reset(req.Program)
		if err != nil {
			// The previous session, if any, goes on: a bad reset discards nothing.
			return fail("%v (the previous episode, if any, continues)", err)
		}
		s.env, s.graph, s.ret = env, req.Graph == nil || *req.Graph, 0
		return s.respond(obs, 0, false, -1)
	case "step":
		if req.Action == nil {
			return fail(`op step needs an integer "action" (0..%d, %d = stop)`, Stop(), Stop())
		}
		if req.Program != "" || req.Seed != 0 || req.MaxSteps != 0 || req.Graph != nil {
			return fail("op step takes only an action")
		}
		if s.env == nil {
			return fail("step before a successful reset")
		}
		obs, r, done, err := s.env.Step(*req.Action)
		if err != nil {
			return fail("%v", err)
		}
		s.ret += r
		return s.respond(obs, r, done, *req.Action)
	case "":
		return fail(`request has no "op" (ops: actions, reset, step)`)
	}
	return fail("unknown op %q (ops: actions, reset, step)", req.Op)
}

func (s *server) respond(obs Observation, r float64, done bool, action int) Response {
	if !s.graph {
		obs.Graph = Graph{}
	}
	info := &StepInfo{Action: action, Return: s.ret}
	if action >= 0 {
		info.ActionName = Actions()[action]
	}
	return Response{OK: true, Observation: &obs, Reward: &r, Done: &done, Info: info}
}
