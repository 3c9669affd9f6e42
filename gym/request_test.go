package gym

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseProgramList: sets expand, repeats are dropped, an empty list is nil unless
// required; errors name --programs.
func TestParseProgramList(t *testing.T) {
	got, err := ParseProgramList("mlp_96x2_b1, heldout ,mlp_96x2_b1", false)
	if err != nil {
		t.Fatal(err)
	}
	held, err := Programs("heldout")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1+len(held) || got[0] != "mlp_96x2_b1" || got[1] != held[0] {
		t.Errorf("got %v", got)
	}
	if got, err := ParseProgramList(" ", false); got != nil || err != nil {
		t.Errorf("empty, optional: %v, %v", got, err)
	}
	if _, err := ParseProgramList(" ", true); err == nil || !strings.HasPrefix(err.Error(), "--programs: no program named") {
		t.Errorf("empty, required: %v", err)
	}
	if _, err := ParseProgramList("a,,b", true); err == nil || !strings.HasPrefix(err.Error(), "--programs: ") {
		t.Errorf("stray comma: %v", err)
	}
}

// TestTrainRequestRefusals: every bad value is one error naming its flag, before the
// agent directory is created.
func TestTrainRequestRefusals(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	agent := filepath.Join(dir, "agent")
	for _, tc := range []struct {
		name string
		edit func(*TrainRequest)
		want string
	}{
		{"no agent", func(q *TrainRequest) { q.Agent = "" }, "--agent: an agent directory is required"},
		{"iterations", func(q *TrainRequest) { q.Iterations = 0 }, "--iterations \"0\": want at least 1"},
		{"samples", func(q *TrainRequest) { q.Samples = 1 }, "--samples \"1\": want at least 2"},
		{"max steps", func(q *TrainRequest) { q.MaxSteps = 0 }, "--max-steps \"0\": want at least 1"},
		{"lr", func(q *TrainRequest) { q.LR = -1 }, "--lr \"-1\": want a positive number"},
		{"entropy", func(q *TrainRequest) { q.Entropy = -1 }, "--entropy \"-1\": want a finite number >= 0 (0: no entropy bonus)"},
		{"reward", func(q *TrainRequest) { q.Reward = "flops" }, "--reward \"flops\": want ops or time"},
		{"algo", func(q *TrainRequest) { q.Algorithm = "a2c" }, "--algo \"a2c\": want reinforce, ppo or effect"},
		{"effect-time", func(q *TrainRequest) { q.Algorithm = AlgoEffect; q.Reward = RewardTime }, "--reward \"time\": a pass-effect model (--algo effect) learns op counts, want ops"},
		{"epochs", func(q *TrainRequest) { q.Algorithm, q.Epochs = AlgoPPO, -2 }, "--epochs \"-2\": want a number >= 0 (0: 4)"},
		{"clip", func(q *TrainRequest) { q.Algorithm, q.Clip = AlgoPPO, 1.5 }, "--clip \"1.5\": want a number in (0, 1), or 0 for 0.2"},
		{"epochs under reinforce", func(q *TrainRequest) { q.Epochs = 4 }, "--epochs \"4\": PPO's setting, want 0 (or --algo ppo)"},
		{"clip under reinforce", func(q *TrainRequest) { q.Algorithm, q.Clip = AlgoREINFORCE, 0.1 }, "--clip \"0.1\": PPO's setting, want 0 (or --algo ppo)"},
		{"advantages", func(q *TrainRequest) { q.Advantages = "whitened" }, "--advantages \"whitened\": want auto, normalized or raw"},
		{"agent unwritable", func(q *TrainRequest) { q.Agent = filepath.Join(file, "a") }, "--agent: "},
	} {
		q := TrainRequest{Agent: agent, Programs: "train", Seed: 1, Iterations: 30, Samples: 4, MaxSteps: 20, LR: 0.01, Entropy: 0.01}
		tc.edit(&q)
		res, err := q.Run(t.Context())
		if err == nil || res != nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: result %v, error %v; want %q", tc.name, res, err, tc.want)
		}
		if _, err := os.Stat(agent); err == nil {
			t.Fatalf("%s: the agent directory was created before a refusal", tc.name)
		}
	}
}

// TestTrainEvalRequests: a short training logs a line per iteration and saves an agent
// whose record is the result's JSON; evaluating it logs a line per program; an
// evaluation's bad values are errors naming their flags.
func TestTrainEvalRequests(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "agent")
	var log bytes.Buffer
	q := TrainRequest{Agent: dir, Programs: "mlp_96x2_b1", Seed: 1, Iterations: 2, Samples: 2, MaxSteps: 3, LR: 0.01, Log: &log}
	res, err := q.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(log.String(), "\n") != 2 || !strings.HasPrefix(log.String(), "iteration 1/2: mean return ") {
		t.Errorf("log %q: want a line per iteration", log.String())
	}
	a, err := LoadAgent(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(a.Meta)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("JSON %s, want the saved record %s", got, want)
	}
	log.Reset()
	e := EvalRequest{Agent: dir, Programs: "mlp_lenet300_b32", Seed: 1, Budget: 20, Log: &log}
	rep, err := e.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Programs) != 1 || !strings.HasPrefix(log.String(), "mlp_lenet300_b32: ") {
		t.Errorf("%d programs, log %q", len(rep.Programs), log.String())
	}
	for _, tc := range []struct {
		edit func(*EvalRequest)
		want string
	}{
		{func(q *EvalRequest) { q.Agent = "" }, "--agent: an agent directory is required"},
		{func(q *EvalRequest) { q.Budget = -1 }, "--budget \"-1\": want at least 1"},
		{func(q *EvalRequest) { q.MaxSteps = -1 }, "--max-steps \"-1\": want at least 1 (or 0: the agent's)"},
		{func(q *EvalRequest) { q.Programs = "" }, "--programs: no program named"},
		{func(q *EvalRequest) { q.Judge = "flops" }, "--judge \"flops\": want ops or time"},
		{func(q *EvalRequest) { q.AgentSearch = "mcts" }, "--agent-search \"mcts\": want beam or sample"},
		{func(q *EvalRequest) { q.BeamWidth = -1 }, "--beam-width \"-1\": want at least 1 (or 0: 3)"},
		{func(q *EvalRequest) { q.BeamChildren = -2 }, "--beam-children \"-2\": want at least 1 (or 0: 4)"},
		{func(q *EvalRequest) { q.BeamLookahead = -1 }, "--beam-lookahead \"-1\": want a number >= 0 (0: none)"},
		{func(q *EvalRequest) { q.Agent = filepath.Join(dir, "missing") }, "--agent: "},
	} {
		q := e
		tc.edit(&q)
		if _, err := q.Run(t.Context()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}

// TestServeRequest: the program list is checked before serving; a served request is
// answered.
func TestServeRequest(t *testing.T) {
	var out bytes.Buffer
	if err := (ServeRequest{Programs: ","}).Run(t.Context(), strings.NewReader(""), &out); err == nil || !strings.HasPrefix(err.Error(), "--programs: ") {
		t.Errorf("bad list: %v", err)
	}
	if err := (ServeRequest{}).Run(t.Context(), strings.NewReader(`{"op":"actions"}`+"\n"), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"ok":true`) {
		t.Errorf("response %q", out.String())
	}
}
