package tune_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/gym"
	"github.com/tpucost/tpucost/tune"
)

// TestPolicyCheckpointsAcrossGymAndTune: the gym's agent and tune's rl policy share one
// checkpoint codec (nn/rl), which records the action list. Their action lists differ
// (the passes and stop; layout and fusion), so each refuses the other's checkpoint, in
// both directions, with one line naming both lists and the Mismatch error of the loader,
// while each loads its own. (Where two kinds' action lists agree, the codec reads across
// kinds: nn/rl's TestCodecAcrossKinds.)
func TestPolicyCheckpointsAcrossGymAndTune(t *testing.T) {
	agentDir, policyDir := t.TempDir(), t.TempDir()
	if err := gym.SaveAgent(agentDir, gym.NewAgent(1)); err != nil {
		t.Fatal(err)
	}
	if err := tune.SavePolicy(policyDir, tune.NewPolicy(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := gym.LoadAgent(agentDir); err != nil {
		t.Fatalf("the agent's own checkpoint: %v", err)
	}
	if _, err := tune.LoadPolicy(policyDir); err != nil {
		t.Fatalf("the policy's own checkpoint: %v", err)
	}
	pol := tune.NewPolicy(1).Actions()
	ag := gym.NewAgent(1).Actions()
	if strings.Join(pol, ",") != "layout,fusion" || len(ag) != len(gym.Actions()) || ag[len(ag)-1] != "stop" {
		t.Fatalf("action lists: policy %v, agent %v", pol, ag)
	}
	_, err := tune.LoadPolicy(agentDir)
	if !errors.Is(err, tune.ErrPolicyMismatch) || strings.Contains(err.Error(), "\n") ||
		!strings.Contains(err.Error(), "gym agent checkpoint (agent.json) trained on "+itoa(len(ag))+" actions") || !strings.Contains(err.Error(), "2 actions (layout, fusion)") {
		t.Errorf("tune loading a gym agent: %v; want a one-line ErrPolicyMismatch naming both action lists", err)
	}
	_, err = gym.LoadAgent(policyDir)
	if !errors.Is(err, gym.ErrAgentMismatch) || strings.Contains(err.Error(), "\n") ||
		!strings.Contains(err.Error(), "tune rl policy checkpoint (policy.json) trained on 2 actions (layout, fusion)") || !strings.Contains(err.Error(), itoa(len(ag))+" actions") {
		t.Errorf("gym loading a tune policy: %v; want a one-line ErrAgentMismatch naming both action lists", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
