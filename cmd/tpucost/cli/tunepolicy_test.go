package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestTuneRLEndToEnd: train a policy, tune an unseen program with it within the budget
// exactly; --strategy rl without --policy is one clear error, not a fallback.
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
	_, errs, code = runTuneCmd("mlp_lenet300_b32", "--strategy", "rl", "--budget", "13")
	if code == 0 || !strings.Contains(errs, "needs a trained policy") || strings.Count(errs, "\n") != 1 {
		t.Errorf("rl without --policy: exit %d, stderr %q", code, errs)
	}
}
