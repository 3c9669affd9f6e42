package gym

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler/opt"
)

// beamTestBudget is gym eval's default budget for 20-step episodes (39 passes × 20).
const beamTestBudget = 39 * 20

// TestBeamSearchGoesThroughEnablingMoves: on the real MaxText training step (held out),
// greedy search stops where no single pass removes an op (1101 ops at 780 calls); beam
// search at the same budget keeps modules that removed nothing yet and goes through the
// moves that open the next passes (while-loop-invariant-code-motion before cse and
// while-loop-simplifier, convert-mover before algsimp: docs/gym.md), ending below greedy
// with a step in its sequence that removed no op. Keeping only the children that
// improve on their parent, the beam ends at greedy's count or above, and the test fails.
func TestBeamSearchGoesThroughEnablingMoves(t *testing.T) {
	base, err := Load("bench:maxtext_1n1g_train_step")
	if err != nil {
		t.Fatal(err)
	}
	passes := opt.All()
	g, err := GreedySearch(base, passes, beamTestBudget, DefaultMaxSteps)
	if err != nil {
		t.Fatal(err)
	}
	b, err := BeamSearch(base, passes, BeamOptions{Width: DefaultBeamWidth, Children: DefaultBeamChildren, Budget: beamTestBudget,
		MaxSteps: DefaultMaxSteps, Order: RandomOrder(len(passes), rand.New(rand.NewPCG(1, 2)))})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("greedy %d ops %v, beam %d ops (%d calls) %v", g.OpCount, names(passes, g.Sequence), b.OpCount, b.Calls, names(passes, b.Sequence))
	if b.Calls > beamTestBudget {
		t.Errorf("beam spent %d calls, budget %d", b.Calls, beamTestBudget)
	}
	if b.OpCount >= g.OpCount {
		t.Fatalf("beam search ends at %d ops, greedy at %d: it should go through the moves greedy stops at", b.OpCount, g.OpCount)
	}
	// The result replays, and some step of it removed nothing by itself.
	m := base.Clone()
	enabling := false
	prev := opt.OpCount(m)
	for _, a := range b.Sequence {
		if _, err := passes[a].Run(m); err != nil {
			t.Fatal(err)
		}
		ops := opt.OpCount(m)
		if ops >= prev {
			enabling = true
		}
		prev = ops
	}
	if prev != b.OpCount {
		t.Errorf("the sequence replays to %d ops, the search reported %d", prev, b.OpCount)
	}
	if !enabling {
		t.Errorf("every step of %v removed ops: no move that only enables the next", names(passes, b.Sequence))
	}
}

// TestBeamSearchContract: deterministic for a seeded order, within its budget, and its
// options are checked.
func TestBeamSearchContract(t *testing.T) {
	base, err := Load("lstm_lm_h256_t16_b32_train")
	if err != nil {
		t.Fatal(err)
	}
	passes := opt.All()
	run := func(seed uint64, budget int) SearchResult {
		t.Helper()
		r, err := BeamSearch(base, passes, BeamOptions{Width: 2, Children: 3, Budget: budget, MaxSteps: 8,
			Order: RandomOrder(len(passes), rand.New(rand.NewPCG(seed, 0)))})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b := run(7, 200), run(7, 200)
	if a.OpCount != b.OpCount || !slices.Equal(a.Sequence, b.Sequence) || a.Calls != b.Calls {
		t.Errorf("same seed, different results: %+v and %+v", a, b)
	}
	if a.Calls > 200 || len(a.Sequence) > 8 {
		t.Errorf("%d calls (budget 200), %d steps (max 8)", a.Calls, len(a.Sequence))
	}
	if small := run(7, 5); small.Calls > 5 {
		t.Errorf("budget 5: %d calls", small.Calls)
	}
	for _, o := range []BeamOptions{{Width: 0, Children: 1, Budget: 1, MaxSteps: 1}, {Width: 1, Children: 1, Budget: 0, MaxSteps: 1}, {Width: 1, Children: 1, Budget: 1, MaxSteps: 1, Lookahead: -1}} {
		o.Order = RandomOrder(len(passes), rand.New(rand.NewPCG(1, 0)))
		if _, err := BeamSearch(base, passes, o); err == nil || !strings.Contains(err.Error(), "beam search: ") || !strings.Contains(err.Error(), " must ") {
			t.Errorf("%+v: error %v", o, err)
		}
	}
	short := func(*BeamState) ([]int, error) { return []int{0}, nil }
	if _, err := BeamSearch(base, passes, BeamOptions{Width: 1, Children: 1, Budget: 10, MaxSteps: 2, Order: short}); err == nil || !strings.Contains(err.Error(), "ranks 1 passes") {
		t.Errorf("short order: %v", err)
	}
}

// TestAgentBeamOrderIsThePolicys: the agent's beam search tries passes in the order of
// its policy's probabilities on the state's observation (idle passes masked, stop left
// out), and gym eval's agent uses it by default.
func TestAgentBeamOrderIsThePolicys(t *testing.T) {
	a := NewAgent(3)
	a.Meta = AgentMeta{Programs: []string{"mlp_96x2_b1_train"}, MaxSteps: 5}
	base, err := Load("mlp_768x3_b8_train")
	if err != nil {
		t.Fatal(err)
	}
	idle := make([]bool, passCount())
	idle[2] = true
	s := &BeamState{Module: base, Idle: idle, Ops: opt.OpCount(base), Seq: []int{4}}
	order, err := a.beamOrder("mlp_768x3_b8_train", s.Ops, 5)(s)
	if err != nil {
		t.Fatal(err)
	}
	g, err := BuildGraph(base)
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Probs(Observation{Program: "mlp_768x3_b8_train", Step: 1, MaxSteps: 5, OpCount: s.Ops, InitialOpCount: s.Ops,
		Histogram: Histogram(base), Graph: g, History: []int{4}, Idle: append(slices.Clone(idle), false)})
	if err != nil {
		t.Fatal(err)
	}
	if len(order) != passCount() {
		t.Fatalf("order of %d passes, want %d", len(order), passCount())
	}
	for i := 1; i < len(order); i++ {
		if p[order[i]] > p[order[i-1]] {
			t.Fatalf("order %v is not by the policy's probabilities %v", order, p)
		}
	}
	if order[len(order)-1] != 2 && p[order[len(order)-1]] != 0 {
		t.Errorf("the idle pass 2 (probability %g) is not last", p[2])
	}
	rep, err := Evaluate(context.Background(), a, EvalOptions{Programs: []string{"mlp_768x3_b8_train"}, Budget: 60})
	if err != nil {
		t.Fatal(err)
	}
	if rep.AgentSearch != AgentSearchBeam || rep.BeamWidth != DefaultBeamWidth || rep.BeamChildren != DefaultBeamChildren {
		t.Errorf("agent search %q, width %d, children %d", rep.AgentSearch, rep.BeamWidth, rep.BeamChildren)
	}
	pe := rep.Programs[0]
	if pe.Beam.CompilerCalls > 60 || pe.Agent.CompilerCalls > 60 || pe.Beam.OpCount > pe.InitialOpCount {
		t.Errorf("beam %+v, agent %+v", pe.Beam, pe.Agent)
	}
	if _, err := Evaluate(context.Background(), a, EvalOptions{Programs: []string{"mlp_768x3_b8_train"}, AgentSearch: "mcts"}); err == nil || !strings.Contains(err.Error(), `agent search "mcts": want beam or sample`) {
		t.Errorf("unknown agent search: %v", err)
	}
}
