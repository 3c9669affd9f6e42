package gnn

import (
	"strings"
	"testing"

	"github.com/tpucost/tpucost/dataset"
)

// TestDefaultLossesFollowDefaultLoss checks the --loss help's defaults (DefaultLosses)
// against DefaultLoss: every task is named after its default loss, and the per-node
// models' default is named too, so the help cannot drift from the rule.
func TestDefaultLossesFollowDefaultLoss(t *testing.T) {
	got := DefaultLosses()
	if want := "rank-hinge-gap for tile/flags, mse for fusion/layout, listmle for per-node configuration models"; got != want {
		t.Errorf("DefaultLosses() = %q, want %q", got, want)
	}
	for _, part := range strings.Split(got, ", ") {
		loss, what, ok := strings.Cut(part, " for ")
		if !ok {
			t.Fatalf("part %q is not \"LOSS for WHAT\"", part)
		}
		if what == "per-node configuration models" {
			perNode := DefaultConfig()
			perNode.NodeConfigWidth = 1
			if l := DefaultLoss(dataset.TaskLayout, perNode); string(l) != loss {
				t.Errorf("help says %s for per-node models, DefaultLoss says %s", loss, l)
			}
			continue
		}
		for _, task := range strings.Split(what, "/") {
			if l := DefaultLoss(dataset.Task(task), DefaultConfig()); string(l) != loss {
				t.Errorf("help says %s for %s, DefaultLoss says %s", loss, task, l)
			}
		}
	}
	for _, task := range dataset.Tasks() {
		if !strings.Contains(got, string(task)) {
			t.Errorf("DefaultLosses() does not name the task %s: %q", task, got)
		}
	}
}
