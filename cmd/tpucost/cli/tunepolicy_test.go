package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestTuneRLEndToEnd: train a policy, tune an unseen program with it within the budget
// exactly, deciding layout and fusion by default; a model variant of a training program
// is tuned with a warning and policy_trained_on; --strategy rl without --policy, with
// kinds it does not decide or did not train on, and train-policy flags out of range are
// one clear error, not a fallback.
func TestTuneRLEndToEnd(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "policy")
	if _, errs, code := runTuneCmd("train-policy", "--programs", "mlp_96x2_b1", "--out", dir, "--episodes", "2", "--samples", "4"); code != 0 {
		t.Fatalf("train-policy: exit %d: %s", code, errs)
	}
	out, errs, code := runTuneCmd("mlp_lenet300_b32", "--strategy", "rl", "--policy", dir, "--budget", "13", "--json")
	if code != 0 {
		t.Fatalf("tune rl: exit %d: %s", code, errs)
	}
	var r struct {
		Strategy     string `json:"strategy"`
		Measurements int    `json:"measurements"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if r.Strategy != "rl" || r.Measurements != 13 {
		t.Errorf("strategy %q, %d measurements; want rl, 13", r.Strategy, r.Measurements)
	}
	if _, errs, code := runTuneCmd("mlp_lenet300_b32", "--strategy", "rl", "--policy", dir, "--kinds", "layout", "--budget", "5"); code != 0 {
		t.Errorf("tune rl --kinds layout: exit %d: %s", code, errs)
	}
	fusionDir := filepath.Join(t.TempDir(), "fusion")
	if _, errs, code := runTuneCmd("train-policy", "--programs", "mlp_96x2_b1", "--out", fusionDir, "--episodes", "1", "--samples", "2", "--kinds", "fusion"); code != 0 {
		t.Fatalf("train-policy --kinds fusion: exit %d: %s", code, errs)
	}
	// A program of a model variant the policy trained on (the training step of its
	// training program) is tuned, with a warning and policy_trained_on in the report: the
	// result is not a held-out one.
	out, errs, code = runTuneCmd("mlp_96x2_b1_train", "--strategy", "rl", "--policy", dir, "--budget", "5", "--json")
	var seen struct {
		PolicyTrainedOn string `json:"policy_trained_on"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &seen) != nil || seen.PolicyTrainedOn != "mlp_96x2_b1" ||
		!strings.Contains(errs, "WARNING: the rl policy trained on mlp_96x2_b1, the same model variant as") {
		t.Errorf("rl on a trained variant: exit %d, policy_trained_on %q, stderr %q", code, seen.PolicyTrainedOn, errs)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"mlp_lenet300_b32", "--strategy", "rl", "--budget", "13"}, "needs a trained policy"},
		{[]string{"mlp_lenet300_b32", "--strategy", "rl", "--policy", dir, "--kinds", "fusion,tile", "--budget", "5"}, "decides layout and fusion"},
		{[]string{"mlp_lenet300_b32", "--strategy", "rl", "--policy", fusionDir, "--budget", "5"}, "trained on fusion decisions only"},
		{[]string{"train-policy", "--programs", "mlp_96x2_b1", "--out", fusionDir, "--episodes", "1", "--kinds", "tile"}, "decides layout and fusion"},
		// No quiet defaults: each flag out of range is an error naming it.
		{[]string{"train-policy", "--programs", "mlp_96x2_b1", "--out", fusionDir, "--episodes", "0"}, `--episodes "0": want an integer >= 1`},
		{[]string{"train-policy", "--programs", "mlp_96x2_b1", "--out", fusionDir, "--samples", "0"}, `--samples "0": want an integer >= 2`},
		{[]string{"train-policy", "--programs", "mlp_96x2_b1", "--out", fusionDir, "--lr", "0"}, `--lr "0": want a number in (0, 1]`},
		{[]string{"train-policy", "--programs", "mlp_96x2_b1", "--out", fusionDir, "--workers", "-2"}, "--workers -2: want an integer in [0,"},
		{[]string{"train-policy", "--programs", "mlp_96x2_b1,", "--out", fusionDir}, "--programs"},
	} {
		_, errs, code := runTuneCmd(c.args...)
		if code == 0 || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q, want one line containing %q", c.args, code, errs, c.want)
		}
	}
}

// TestTrainPolicyInterrupted: train-policy runs under the command's context (it ignored
// Ctrl-C): cancelled, it exits with ExitInterrupted, writes nothing and says so.
func TestTrainPolicyInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	dir := filepath.Join(t.TempDir(), "policy")
	var out, errb bytes.Buffer
	code := MainContext(ctx, []string{"tune", "train-policy", "--programs", "mlp_96x2_b1", "--out", dir}, strings.NewReader(""), &out, &errb)
	if code != ExitInterrupted || out.Len() != 0 || !strings.Contains(errb.String(), "no policy was written") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}
