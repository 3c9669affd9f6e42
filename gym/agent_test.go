package gym

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/tpucost/tpucost/nn"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/tpucost/tpucost/compiler/opt"
)

// logitTol bounds the difference between logits computed alone and in a batch of
// observations (float32 sums over other blockings).
const logitTol = 1e-5

// TestBatchedLogitsMatchSingle: the graph training differentiates, over several
// observations side by side, gives each observation the logits acting computes for it
// alone (node offsets, neighbour lists and pooling do not mix observations).
func TestBatchedLogitsMatchSingle(t *testing.T) {
	e := newEnv(t, Options{})
	a := NewAgent(3)
	var xs []input
	o, err := e.Reset("bench:bench_scan_N2000_M3")
	if err != nil {
		t.Fatal(err)
	}
	xs = append(xs, encode(o))
	for _, act := range []int{0, 13, 2} {
		if o, _, _, err = e.Step(act); err != nil {
			t.Fatal(err)
		}
		xs = append(xs, encode(o))
	}
	if o, err = e.Reset("mlp_96x2_b1_train"); err != nil {
		t.Fatal(err)
	}
	xs = append(xs, encode(o))
	g := G.NewGraph()
	z, _, err := a.graphLogits(g, xs)
	if err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	got := z.Value().Data().([]float32)
	for s, x := range xs {
		want, err := a.logits(x)
		if err != nil {
			t.Fatal(err)
		}
		for j, w := range want {
			if d := math.Abs(float64(got[s*NumActions()+j]) - w); d > logitTol*(1+math.Abs(w)) {
				t.Fatalf("step %d action %d: batched logit %g, alone %g", s, j, got[s*NumActions()+j], w)
			}
		}
	}
}

// TestEncoderIsSAGE: the agent's graph embedding is the mean over nodes of one nn.SAGE
// layer, computed here by hand (every node of the small MLP has at most agentMaxDegree
// operands and users, so no neighbour is dropped).
func TestEncoderIsSAGE(t *testing.T) {
	e := newEnv(t, Options{})
	o, err := e.Reset("mlp_96x2_b1")
	if err != nil {
		t.Fatal(err)
	}
	x := encode(o)
	a := NewAgent(4)
	// Hand: h_v = relu(x_v Ws + mean_in x Wi + mean_out x Wo + b); g = mean_v h_v; then the head.
	F, H := NodeWidth, agentHidden
	par := map[string][]float32{}
	for _, p := range a.params {
		par[p.Name] = p.Data
	}
	ins, outs := make([][]int, x.n), make([][]int, x.n)
	for j := range x.src {
		ins[x.dst[j]] = append(ins[x.dst[j]], int(x.src[j]))
		outs[x.src[j]] = append(outs[x.src[j]], int(x.dst[j]))
	}
	mean := func(l []int, k int) float64 {
		if len(l) == 0 {
			return 0
		}
		s := 0.0
		for _, u := range l {
			s += float64(x.x[u*F+k])
		}
		return s / float64(len(l))
	}
	pool := make([]float64, H)
	for v := range x.n {
		if len(ins[v]) > agentMaxDegree || len(outs[v]) > agentMaxDegree {
			t.Fatalf("node %d has more than %d neighbours: pick a smaller program", v, agentMaxDegree)
		}
		for j := range H {
			h := float64(par["sage1.b"][j])
			for k := range F {
				h += float64(x.x[v*F+k])*float64(par["sage1.w_self"][k*H+j]) +
					mean(ins[v], k)*float64(par["sage1.w_in"][k*H+j]) + mean(outs[v], k)*float64(par["sage1.w_out"][k*H+j])
			}
			pool[j] += math.Max(h, 0) / float64(x.n)
		}
	}
	in2 := append(pool, make([]float64, len(x.glob))...)
	for i, v := range x.glob {
		in2[H+i] = float64(v)
	}
	A := NumActions()
	want := make([]float64, A)
	for j := range A {
		want[j] = float64(par["b3"][j])
	}
	for k := range H {
		u := float64(par["b2"][k])
		for i, v := range in2 {
			u += v * float64(par["w2"][i*H+k])
		}
		for j := range A {
			want[j] += math.Max(u, 0) * float64(par["w3"][k*A+j])
		}
	}
	got, err := a.logits(x)
	if err != nil {
		t.Fatal(err)
	}
	for j := range want {
		if math.Abs(got[j]-want[j]) > 1e-4*(1+math.Abs(want[j])) {
			t.Fatalf("action %d: logit %g, by hand %g", j, got[j], want[j])
		}
	}
}

// toyOptions is a small training problem: two programs whose best short pass sequences
// differ (graphsage_tf needs dce, algsimp, cse and constant folding; the MLP's training
// step cse and algsimp), four steps per episode.
func toyOptions(iters int) TrainOptions {
	return TrainOptions{Programs: []string{"bench:graphsage_tf", "mlp_96x2_b1_train"}, Seed: 1, Iterations: iters, Samples: 6, MaxSteps: 4, LR: 0.03}
}

// TestTrainImprovesOnToy: on the toy problem the greedy policy's return after training
// beats its return at the start, and the mean sampled return over the last iterations
// beats the first ones.
func TestTrainImprovesOnToy(t *testing.T) {
	a, err := Train(context.Background(), toyOptions(40))
	if err != nil {
		t.Fatal(err)
	}
	h := a.Meta.History
	first, last := h[0], h[len(h)-1]
	early, late := 0.0, 0.0
	for i := range 5 {
		early += h[i].MeanReturn / 5
		late += h[len(h)-1-i].MeanReturn / 5
	}
	t.Logf("greedy %.4f -> %.4f, mean return (5 iterations) %.4f -> %.4f, entropy %.3f -> %.3f", first.GreedyReturn, last.GreedyReturn, early, late, first.Entropy, last.Entropy)
	if !(late > early) || !(last.GreedyReturn > first.GreedyReturn) {
		t.Fatalf("training did not improve: greedy %.4f -> %.4f, mean return %.4f -> %.4f", first.GreedyReturn, last.GreedyReturn, early, late)
	}
}

// TestTrainDeterministic: the same options give byte-identical checkpoints.
func TestTrainDeterministic(t *testing.T) {
	var files [2][]byte
	for i := range files {
		a, err := Train(context.Background(), toyOptions(3))
		if err != nil {
			t.Fatal(err)
		}
		files[i], _ = savedCheckpoint(t, a)
	}
	if !reflect.DeepEqual(files[0], files[1]) {
		t.Fatal("two trainings with the same seed wrote different checkpoints")
	}
}

// savedCheckpoint saves a in a fresh directory and returns the checkpoint's bytes and
// the agent loaded back from it.
func savedCheckpoint(t *testing.T, a *Agent) ([]byte, *Agent) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "agent")
	if err := SaveAgent(dir, a); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, AgentFile))
	if err != nil {
		t.Fatal(err)
	}
	back, err := LoadAgent(dir)
	if err != nil {
		t.Fatal(err)
	}
	return b, back
}

// TestAgentCheckpoint: a checkpoint round-trips; a flipped byte anywhere is refused as
// corrupt (never loaded); a checkpoint of other dimensions is refused as a mismatch.
func TestAgentCheckpoint(t *testing.T) {
	a := NewAgent(5)
	a.Meta = AgentMeta{Programs: []string{"x"}, Seed: 5, Iterations: 1}
	dir := filepath.Join(t.TempDir(), "agent")
	if err := SaveAgent(dir, a); err != nil {
		t.Fatal(err)
	}
	b, err := LoadAgent(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.params, b.params) || !reflect.DeepEqual(a.Meta, b.Meta) {
		t.Fatal("checkpoint did not round-trip")
	}
	path := filepath.Join(dir, AgentFile)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(orig); i += 97 {
		bad := append([]byte(nil), orig...)
		bad[i] ^= 0x04
		if err := os.WriteFile(path, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadAgent(dir); err == nil {
			t.Fatalf("a checkpoint with byte %d flipped loaded", i)
		}
	}
	a.params[0].Shape = []int{1, 1}
	a.params[0].Data = []float32{0}
	if err := SaveAgent(dir, a); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadAgent(dir); !errors.Is(err, ErrAgentMismatch) {
		t.Fatalf("other dimensions: %v, want ErrAgentMismatch", err)
	}
	// A format-1 checkpoint (the agent's own aggregation layer) is refused as an older
	// agent to retrain, not as a corrupt file.
	var old map[string]any
	if err := json.Unmarshal(orig, &old); err != nil {
		t.Fatal(err)
	}
	old["format"] = "tpucost-gym-agent/1"
	old["params"] = []map[string]any{{"name": "w1", "shape": []int{3 * NodeWidth, agentHidden}}}
	bad, _ := json.Marshal(old)
	if err := os.WriteFile(path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadAgent(dir); !errors.Is(err, ErrAgentMismatch) || !strings.Contains(err.Error(), "retrain") {
		t.Fatalf("format 1: %v, want ErrAgentMismatch saying to retrain", err)
	}
}

// TestEvaluate: the report's numbers are what the orders give (the default is
// opt.XLAPipeline's op count; random, greedy and the agent spend at most the budget and
// their sequences replay to their op counts), gains follow their definition, means are
// over programs, and a program of a model variant the agent trained on is refused.
func TestEvaluate(t *testing.T) {
	a, err := Train(context.Background(), TrainOptions{Programs: []string{"bench:graphsage_tf"}, Seed: 2, Iterations: 2, Samples: 2, MaxSteps: 5})
	if err != nil {
		t.Fatal(err)
	}
	progs := []string{"mlp_96x2_b1_train", "bench:bench_scan_N2000_M3"}
	const budget = 40
	rep, err := Evaluate(context.Background(), a, EvalOptions{Programs: progs, Budget: budget, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Programs) != 2 || rep.MaxSteps != 5 || rep.Budget != budget {
		t.Fatalf("report: %+v", rep)
	}
	mean := 0.0
	for _, p := range rep.Programs {
		m, err := Load(p.Program)
		if err != nil {
			t.Fatal(err)
		}
		if p.InitialOpCount != opt.OpCount(m) {
			t.Errorf("%s: initial %d ops, want %d", p.Program, p.InitialOpCount, opt.OpCount(m))
		}
		d := m.Clone()
		runs, err := opt.RunStages(d, opt.XLAPipeline(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if p.Default.OpCount != opt.OpCount(d) || p.Default.CompilerCalls != runs || len(p.Default.Sequence) != runs {
			t.Errorf("%s: default %+v, XLA's pipeline leaves %d ops in %d runs", p.Program, p.Default, opt.OpCount(d), runs)
		}
		for name, o := range map[string]Outcome{"random": p.Random, "greedy": p.Greedy, "agent": p.Agent} {
			if o.CompilerCalls > budget || o.SimNs <= 0 {
				t.Errorf("%s: %s spent %d calls (budget %d), sim %g ns", p.Program, name, o.CompilerCalls, budget, o.SimNs)
			}
			r := m.Clone()
			ps, err := opt.LookupAll(o.Sequence)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := opt.Run(r, ps...); err != nil {
				t.Fatal(err)
			}
			if opt.OpCount(r) != o.OpCount {
				t.Errorf("%s: %s's sequence %v leaves %d ops, the report says %d", p.Program, name, o.Sequence, opt.OpCount(r), o.OpCount)
			}
		}
		g, ok := GainVsDefault(p.InitialOpCount, p.Default.OpCount, p.Agent.OpCount)
		if ok != (p.GainVsDefault != nil) || ok && *p.GainVsDefault != g {
			t.Errorf("%s: gain %v, want %g (defined %v)", p.Program, p.GainVsDefault, g, ok)
		}
		nc := m.Clone()
		if _, err := opt.RunStages(nc, opt.XLAPipelineWithoutCanonicalization(), nil); err != nil {
			t.Fatal(err)
		}
		if p.DefaultWithoutCanonicalization.OpCount != opt.OpCount(nc) || slices.ContainsFunc(p.DefaultWithoutCanonicalization.Sequence, func(n string) bool { return slices.Contains(opt.Canonicalizers(), n) }) {
			t.Errorf("%s: default without canonicalization %+v, the pipeline leaves %d ops", p.Program, p.DefaultWithoutCanonicalization, opt.OpCount(nc))
		}
		g, ok = GainVsDefault(p.InitialOpCount, p.DefaultWithoutCanonicalization.OpCount, p.Agent.OpCount)
		if ok != (p.GainVsDefaultWithoutCanonicalization != nil) || ok && *p.GainVsDefaultWithoutCanonicalization != g {
			t.Errorf("%s: gain without canonicalization %v, want %g (defined %v)", p.Program, p.GainVsDefaultWithoutCanonicalization, g, ok)
		}
		mean += reduction(p.InitialOpCount, p.Agent.OpCount) / 2
	}
	if math.Abs(rep.MeanAgentReduction-mean) > rewardTol {
		t.Errorf("mean agent reduction %g, want %g", rep.MeanAgentReduction, mean)
	}
	if g, ok := GainVsDefault(100, 90, 80); !ok || math.Abs(g-1) > rewardTol {
		t.Errorf("gain of removing 20 where the default removed 10: %g, want 1", g)
	}
	if g, _ := GainVsDefault(100, 110, 90); math.Abs(g-2) > rewardTol {
		t.Errorf("gain of removing 10 where the default added 10: %g, want 2", g)
	}
	if _, err := Evaluate(context.Background(), a, EvalOptions{Programs: []string{"bench:graphsage_tf"}}); err == nil {
		t.Fatal("evaluation on a training program accepted")
	}
	// Held out by model variant: an agent trained on a zoo training step refuses its
	// inference graph and its other batch sizes, and accepts another size.
	a.Meta.Programs = []string{"mlp_96x2_b1_train"}
	for _, p := range []string{"mlp_96x2_b1", "mlp_96x2_b1_train", "mlp_96x2_b64"} {
		if _, err := Evaluate(context.Background(), a, EvalOptions{Programs: []string{"mlp_768x3_b8_train", p}}); err == nil || !strings.Contains(err.Error(), "mlp_96x2_b1_train") {
			t.Errorf("evaluation on %s of an agent trained on mlp_96x2_b1_train: %v, want an error naming it", p, err)
		}
	}
}

// TestNeverIdle: the agent never reruns a pass the observation marks idle, sampled or
// greedy, and once every pass is idle it stops.
func TestNeverIdle(t *testing.T) {
	a := NewAgent(9)
	e := newEnv(t, Options{MaxSteps: 40})
	for _, rng := range []*rand.Rand{nil, rand.New(rand.NewPCG(1, 2))} {
		o, err := e.Reset("bench:graphsage_tf")
		if err != nil {
			t.Fatal(err)
		}
		for {
			x := encode(o)
			z, err := a.logits(x)
			if err != nil {
				t.Fatal(err)
			}
			p := softmax(z, x.mask)
			act := argmax(p)
			if rng != nil {
				act = sample(rng, p)
			}
			if act < Stop() && o.Idle[act] {
				t.Fatalf("chose idle pass %s at step %d", Actions()[act], o.Step)
			}
			all := true
			for _, idle := range o.Idle {
				all = all && idle
			}
			if all && act != Stop() {
				t.Fatalf("every pass idle at step %d, chose %s", o.Step, Actions()[act])
			}
			var done bool
			if o, _, done, err = e.Step(act); err != nil {
				t.Fatal(err)
			}
			if done {
				break
			}
		}
	}
}

// TestSmallAgentBeatsDefault: an agent trained briefly on lstm_lm's training step, with
// one episode of evaluation budget (its most likely sequence only, no sampling), ends
// with fewer ops than the program had and fewer than XLA's default order leaves on
// lstm2_lm's training step, a model it never saw. XLA's order expands every logistic
// (logistic-expander: five ops more each) and runs CSE only once, at the end; the agent
// learns passes that shrink the program and not the expander.
func TestSmallAgentBeatsDefault(t *testing.T) {
	const steps = 4
	a, err := Train(context.Background(), TrainOptions{Programs: []string{"lstm_lm_h256_t16_b32_train"}, Seed: 1, Iterations: 10, Samples: 4, MaxSteps: steps, LR: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Evaluate(context.Background(), a, EvalOptions{Programs: []string{"lstm2_lm_h650_t20_b32_train"}, Budget: steps, Verify: true, AgentSearch: AgentSearchSample})
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Programs[0]
	if p.GainVsDefault == nil || *p.GainVsDefault <= 0 || p.Agent.OpCount >= p.Default.OpCount || p.Agent.OpCount >= p.InitialOpCount {
		t.Fatalf("agent %d ops (%v), XLA's default %d ops, from %d: the agent should beat the default", p.Agent.OpCount, p.Agent.Sequence, p.Default.OpCount, p.InitialOpCount)
	}
	t.Logf("agent %v: %d ops; default %d ops; from %d (gain %+.1f%%)", p.Agent.Sequence, p.Agent.OpCount, p.Default.OpCount, p.InitialOpCount, 100**p.GainVsDefault)
}

// TestAgentRefusesOtherPassList: an agent saved with another action list (a pass list
// of another build: one pass fewer, or two swapped) is refused with a message naming
// the difference, never loaded and remapped.
func TestAgentRefusesOtherPassList(t *testing.T) {
	a := NewAgent(3)
	for _, tc := range []struct {
		name    string
		actions func([]string) []string
		want    string
	}{
		{"one pass fewer", func(as []string) []string { return append(append([]string{}, as[:3]...), as[4:]...) }, "action 3 is"},
		{"two swapped", func(as []string) []string {
			bs := append([]string{}, as...)
			bs[0], bs[1] = bs[1], bs[0]
			return bs
		}, "action 0 is"},
		{"one more", func(as []string) []string { return append(append([]string{}, as...), "sort-simplifier") }, "actions there"},
	} {
		dir := t.TempDir()
		f := &agentFile{Format: AgentFormat, Hidden: agentHidden, Schema: agentSchema(), Actions: tc.actions(Actions()), Saved: nn.Save(a.params), Meta: a.Meta}
		if err := agentCheckpoint().Kind.Save(dir, f); err != nil { // as another build wrote it
			t.Fatal(err)
		}
		_, err := LoadAgent(dir)
		if !errors.Is(err, ErrAgentMismatch) || !strings.Contains(err.Error(), "another pass list") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrAgentMismatch naming the pass-list difference (%q)", tc.name, err, tc.want)
		}
	}
	dir := t.TempDir()
	if err := SaveAgent(dir, a); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadAgent(dir); err != nil {
		t.Fatalf("the same action list: %v", err)
	}
}

// checkAgentGradient compares gs, the gradient of loss at a's parameters, with central
// finite differences of loss (named what in errors) at four entries of each parameter,
// and returns how many entries it checked and how many move the loss by more than 0.01
// per unit. h = 1e-3; the tolerance 0.01 + 5% leaves room for the float32 forward
// passes' relative error (about 1e-7, 1e-4 in the quotient at these losses' scale) and
// for the curvature over 2h.
func checkAgentGradient(t *testing.T, a *Agent, gs [][]float32, loss func() float64, what string) (checked, moving int) {
	t.Helper()
	const h = 1e-3
	for i, p := range a.params {
		for _, j := range []int{0, len(p.Data) / 3, len(p.Data) / 2, len(p.Data) - 1} {
			orig := p.Data[j]
			p.Data[j] = orig + h
			lp := loss()
			p.Data[j] = orig - h
			lm := loss()
			p.Data[j] = orig
			num, got := (lp-lm)/(2*h), float64(gs[i][j])
			if math.Abs(num-got) > 0.01+0.05*math.Abs(num) {
				t.Errorf("%s[%d]: gradient %.5f, %s %.5f", p.Name, j, got, what, num)
			}
			checked++
			if math.Abs(num) > 0.01 {
				moving++
			}
		}
	}
	return checked, moving
}
