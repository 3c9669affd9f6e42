package tune

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler"
)

// TestGenericRefusalsFollowRegistry checks that the shape-generic searches (RunShapes,
// RunRagged) ask the strategy registry (Methods) what to refuse rather than naming
// strategies: a strategy with a per-program policy (rl) and one that starts from
// partition fusion (partition) are refused, every other registered strategy is accepted,
// the schedule strategies run as annealing, and the rl refusal names every
// SearchStrategies entry, so the list in the message cannot drift from the registry.
func TestGenericRefusalsFollowRegistry(t *testing.T) {
	var refusedPolicy, refusedFusion []Strategy
	for _, m := range Methods() {
		st := m.Name()
		errFusion, errPolicy := genericRefusal("ragged tuning", "the default compile", Options{Strategy: st})
		if errPolicy != nil {
			refusedPolicy = append(refusedPolicy, st)
			for _, s := range SearchStrategies() {
				if !strings.Contains(errPolicy.Error(), string(s)) {
					t.Errorf("%s: the refusal does not name the search strategy %s: %v", st, s, errPolicy)
				}
			}
			if !strings.Contains(errPolicy.Error(), "the "+string(st)+" strategy") {
				t.Errorf("%s: the refusal does not name the strategy: %v", st, errPolicy)
			}
		}
		if errFusion != nil {
			refusedFusion = append(refusedFusion, st)
			if !strings.Contains(errFusion.Error(), "--strategy "+string(st)) {
				t.Errorf("%s: the refusal does not name --strategy %s: %v", st, st, errFusion)
			}
		}
		want := st
		if m.Schedule() {
			want = Annealing
		}
		if got := genericStrategy(st); got != want {
			t.Errorf("genericStrategy(%s) = %s, want %s", st, got, want)
		}
	}
	if !slices.Equal(refusedPolicy, []Strategy{RL}) {
		t.Errorf("strategies refused as per-program: %v, want [rl]", refusedPolicy)
	}
	if !slices.Equal(refusedFusion, []Strategy{Partition}) {
		t.Errorf("strategies refused for their fusion: %v, want [partition]", refusedFusion)
	}
	if got := genericStrategy(""); got != Annealing {
		t.Errorf("genericStrategy(\"\") = %s, want %s (the default, xtat, runs as annealing)", got, Annealing)
	}
	if errFusion, _ := genericRefusal("ragged tuning", "the default compile", Options{Fusion: compiler.FusionPartition}); errFusion == nil {
		t.Error("--fusion partition is not refused")
	}
	if got, want := searchChoices(), "exhaustive, random, sa, evo or mbo"; got != want {
		t.Errorf("searchChoices() = %q, want %q", got, want)
	}
}

// TestRLKindMessagesNameRLKinds checks that the rl strategy's kind errors (checkRLKinds,
// a train-policy request without kinds) name every kind of RLKinds and the strategy.
func TestRLKindMessagesNameRLKinds(t *testing.T) {
	errs := map[string]error{"checkRLKinds(none)": checkRLKinds(nil), "checkRLKinds(tile)": checkRLKinds([]compiler.Kind{compiler.KindTile})}
	q := policyRequest(filepath.Join(t.TempDir(), "policy"))
	q.Kinds = ","
	_, _, errs["train-policy --kinds ,"] = q.options(t.Context())
	for what, err := range errs {
		if err == nil {
			t.Errorf("%s: no error", what)
			continue
		}
		for _, k := range RLKinds() {
			if !strings.Contains(err.Error(), string(k)) {
				t.Errorf("%s: the error does not name the rl kind %s: %v", what, k, err)
			}
		}
	}
}
