package gym

import (
	"context"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler/opt"
	"github.com/tpucost/tpucost/tpusim"
)

// TestEvaluateJudgedByTime: an agent trained for simulated time (AgentMeta.Reward) is
// judged by it unless EvalOptions.Judge says otherwise: random search, greedy search and
// the agent keep the prefix of the lowest simulated time. Random search and the agent
// explore the same sequences under either judge (the seeds are the same and the agent
// does not read sim_ns; the agent's sampled episodes, AgentSearchSample: its beam search
// keeps other modules under another measure), so judged by time each ends no slower, and judged by ops with
// no more ops, than under the other judge; on these programs the fastest prefix random
// search finds is not the one of the fewest ops (mlp_96x2: 98 ops, 89.5 µs against 89
// ops, 95.8 µs), so judging by time is strictly faster there (the test fails when the
// time judge keeps the fewest ops).
func TestEvaluateJudgedByTime(t *testing.T) {
	a, err := Train(context.Background(), TrainOptions{Programs: []string{"bench:graphsage_tf"}, Seed: 2, Iterations: 2, Samples: 2, MaxSteps: 5})
	if err != nil {
		t.Fatal(err)
	}
	progs := []string{"mlp_96x2_b1_train", "lstm_lm_h256_t16_b32_train"}
	const budget = 40
	byOps, err := Evaluate(context.Background(), a, EvalOptions{Programs: progs, Budget: budget, Judge: RewardOps, AgentSearch: AgentSearchSample})
	if err != nil {
		t.Fatal(err)
	}
	a.Meta.Reward = RewardTime // as `gym train --reward time` records it
	byTime, err := Evaluate(context.Background(), a, EvalOptions{Programs: progs, Budget: budget, AgentSearch: AgentSearchSample})
	if err != nil {
		t.Fatal(err)
	}
	if byOps.JudgedBy != RewardOps || byTime.JudgedBy != RewardTime {
		t.Fatalf("judged by %q and %q, want ops (explicit) and time (the agent's reward)", byOps.JudgedBy, byTime.JudgedBy)
	}
	chip, err := tpusim.Preset(tpusim.DefaultChip)
	if err != nil {
		t.Fatal(err)
	}
	faster := 0
	for i, p := range byTime.Programs {
		q := byOps.Programs[i]
		m, err := Load(p.Program)
		if err != nil {
			t.Fatal(err)
		}
		for name, o := range map[string]Outcome{"random": p.Random, "greedy": p.Greedy, "beam": p.Beam, "agent": p.Agent} {
			r := m.Clone()
			ps, err := opt.LookupAll(o.Sequence)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := opt.Run(r, ps...); err != nil {
				t.Fatal(err)
			}
			ns, err := SimNs(r, chip)
			if err != nil {
				t.Fatal(err)
			}
			if ns != o.SimNs || opt.OpCount(r) != o.OpCount || o.CompilerCalls > budget {
				t.Errorf("%s: %s's sequence %v: %d ops, %g ns; the report says %d ops, %g ns (%d calls)", p.Program, name, o.Sequence, opt.OpCount(r), ns, o.OpCount, o.SimNs, o.CompilerCalls)
			}
		}
		for _, c := range []struct {
			name      string
			time, ops Outcome
		}{{"random", p.Random, q.Random}, {"agent", p.Agent, q.Agent}} {
			if c.time.SimNs > c.ops.SimNs || c.ops.OpCount > c.time.OpCount {
				t.Errorf("%s: %s judged by time %d ops %g ns, by ops %d ops %g ns: each judge should win its own measure",
					p.Program, c.name, c.time.OpCount, c.time.SimNs, c.ops.OpCount, c.ops.SimNs)
			}
			if c.time.SimNs < c.ops.SimNs {
				faster++
			}
		}
		t.Logf("%s: random %d ops %.0f ns by time, %d ops %.0f ns by ops; greedy %.0f vs %.0f ns", p.Program,
			p.Random.OpCount, p.Random.SimNs, q.Random.OpCount, q.Random.SimNs, p.Greedy.SimNs, q.Greedy.SimNs)
	}
	if faster == 0 {
		t.Error("judged by time, no search found a faster module than judged by ops")
	}
	var w strings.Builder
	if err := byTime.WriteText(&w); err != nil || !strings.Contains(w.String(), "best prefixes by simulated time") {
		t.Errorf("text %q (%v): want the judge named", w.String(), err)
	}
	if _, err := Evaluate(context.Background(), a, EvalOptions{Programs: progs[:1], Judge: "flops"}); err == nil || !strings.Contains(err.Error(), `judge "flops": want ops or time`) {
		t.Errorf("an unknown judge: %v", err)
	}
}
