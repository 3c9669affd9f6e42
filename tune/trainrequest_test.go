package tune

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/tpusim"
)

// policyRequest is a TrainPolicyRequest as `tpucost tune train-policy` fills it with its
// flags' defaults, on one small program.
func policyRequest(out string) TrainPolicyRequest {
	return TrainPolicyRequest{Programs: "mlp_96x2_b1", Out: out, Chip: tpusim.ChipSpec{Preset: tpusim.DefaultChip},
		Seed: 1, Episodes: 50, Samples: 8, LR: 0.01, Kinds: "layout,fusion"}
}

// TestTrainPolicyRequestRefusals: every bad value is one error naming its flag, before
// training and before the directory is created.
func TestTrainPolicyRequestRefusals(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "policy")
	for _, tc := range []struct {
		name string
		edit func(*TrainPolicyRequest)
		want string
	}{
		{"no out", func(q *TrainPolicyRequest) { q.Out = "" }, "--out: a policy directory is required"},
		{"episodes", func(q *TrainPolicyRequest) { q.Episodes = 0 }, "--episodes \"0\": want an integer >= 1"},
		{"samples", func(q *TrainPolicyRequest) { q.Samples = 1 }, "--samples \"1\": want an integer >= 2 (REINFORCE compares samples)"},
		{"lr", func(q *TrainPolicyRequest) { q.LR = 2 }, "--lr \"2\": want a number in (0, 1]"},
		{"lr zero", func(q *TrainPolicyRequest) { q.LR = 0 }, "--lr \"0\": want a number in (0, 1]"},
		{"workers", func(q *TrainPolicyRequest) { q.Workers = -3 }, "--workers"},
		{"no programs", func(q *TrainPolicyRequest) { q.Programs = "" }, "--programs: "},
		{"unknown program", func(q *TrainPolicyRequest) { q.Programs = "nosuch" }, "--programs: "},
		{"unknown kind", func(q *TrainPolicyRequest) { q.Kinds = "bogus" }, `--kinds "bogus": want one or more of`},
		{"no kind", func(q *TrainPolicyRequest) { q.Kinds = "," }, "--kinds: no kind named (layout, fusion or both)"},
		{"kind rl does not decide", func(q *TrainPolicyRequest) { q.Kinds = "tile" }, "--kinds tile: strategy rl decides layout and fusion"},
		{"chip", func(q *TrainPolicyRequest) { q.Chip.Preset = "v9" }, "unknown chip"},
		{"out unwritable", func(q *TrainPolicyRequest) { q.Out = filepath.Join(file, "p") }, "--out: "},
	} {
		q := policyRequest(out)
		tc.edit(&q)
		res, err := q.Run(t.Context())
		if err == nil || res != nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: result %v, error %v; want %q", tc.name, res, err, tc.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("%s: the policy directory was created before a refusal", tc.name)
		}
	}
}

// TestTrainPolicyRequestRun: a short training logs a line per episode and saves a policy
// LoadPolicy reads; the result's JSON is its record and its text names the directory.
func TestTrainPolicyRequestRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "policy")
	q := policyRequest(out)
	q.Episodes, q.Samples = 2, 2
	var log bytes.Buffer
	q.Log = &log
	res, err := q.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(log.String(), "\n") != 2 || !strings.HasPrefix(log.String(), "episode 1/2: mean reward ") {
		t.Errorf("log %q: want a line per episode", log.String())
	}
	p, err := LoadPolicy(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(p.Meta)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("JSON %s, want the saved record %s", got, want)
	}
	var text bytes.Buffer
	if err := res.WriteText(&text); err != nil || !strings.HasSuffix(text.String(), "written to "+out+"\n") {
		t.Errorf("text %q, %v", text.String(), err)
	}
}

// TestTrainPolicyRequestInterrupted: a cancelled training saves nothing and says so.
func TestTrainPolicyRequestInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	out := filepath.Join(t.TempDir(), "policy")
	_, err := policyRequest(out).Run(ctx)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "no policy was written to "+out+"; re-run the same command") {
		t.Errorf("error %v", err)
	}
	if _, err := LoadPolicy(out); err == nil {
		t.Error("a policy was saved")
	}
}
