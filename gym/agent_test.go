package gym

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/tpucost/tpucost/compiler/opt"
)

// logitTol bounds the difference between the plain-Go and the Gorgonia logits: both
// compute in float32 inputs, Go accumulates in float64 and Gorgonia in float32 over at
// most a few thousand terms.
const logitTol = 1e-3

// TestLogitsMatchGraph: the plain-Go forward pass that acting uses computes the same
// logits as the Gorgonia graph that training differentiates.
func TestLogitsMatchGraph(t *testing.T) {
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
		want := a.logits(x)
		for j, w := range want {
			if d := math.Abs(float64(got[s*NumActions()+j]) - w); d > logitTol {
				t.Fatalf("step %d action %d: graph logit %g, Go %g", s, j, got[s*NumActions()+j], w)
			}
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
		dir := filepath.Join(t.TempDir(), "agent")
		if err := SaveAgent(dir, a); err != nil {
			t.Fatal(err)
		}
		if files[i], err = os.ReadFile(filepath.Join(dir, AgentFile)); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(files[0], files[1]) {
		t.Fatal("two trainings with the same seed wrote different checkpoints")
	}
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
	a.params[0].shape = [2]int{1, 1}
	a.params[0].data = []float32{0}
	if err := SaveAgent(dir, a); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadAgent(dir); !errors.Is(err, ErrAgentMismatch) {
		t.Fatalf("other dimensions: %v, want ErrAgentMismatch", err)
	}
}

// TestEvaluate: the report's numbers are what the baselines give (the default pipeline's
// op count is opt.Default's, the default once is one run of opt.DefaultPasses; the
// same-steps default runs as many passes as the agent), means are over programs, and a
// program of a model variant the agent trained on is refused.
func TestEvaluate(t *testing.T) {
	a, err := Train(context.Background(), TrainOptions{Programs: []string{"bench:graphsage_tf"}, Seed: 2, Iterations: 2, Samples: 2, MaxSteps: 5})
	if err != nil {
		t.Fatal(err)
	}
	progs := []string{"mlp_96x2_b1_train", "bench:bench_scan_N2000_M3"}
	rep, err := Evaluate(context.Background(), a, EvalOptions{Programs: progs, RandomSeeds: 3, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Programs) != 2 || rep.MaxSteps != 5 {
		t.Fatalf("report: %+v", rep)
	}
	mean := 0.0
	for _, p := range rep.Programs {
		m, err := Load(p.Program)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := opt.Default().Run(m); err != nil {
			t.Fatal(err)
		}
		if p.DefaultOps != opt.OpCount(m) || p.DefaultSteps%len(opt.All()) != 0 {
			t.Errorf("%s: default %d ops in %d steps, opt.Default leaves %d", p.Program, p.DefaultOps, p.DefaultSteps, opt.OpCount(m))
		}
		once, err := Load(p.Program)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := opt.Run(once, opt.DefaultPasses()...); err != nil {
			t.Fatal(err)
		}
		if p.DefaultOnceOps != opt.OpCount(once) || p.DefaultOnceSteps != len(opt.DefaultPasses()) || p.DefaultOnceOps < p.DefaultOps ||
			p.DefaultOnceReduction != reduction(p.InitialOps, p.DefaultOnceOps) {
			t.Errorf("%s: default once %d ops in %d steps, one run of the default passes leaves %d (fixed point %d)",
				p.Program, p.DefaultOnceOps, p.DefaultOnceSteps, opt.OpCount(once), p.DefaultOps)
		}
		if p.AgentSteps > 5 || len(p.AgentSequence) < p.AgentSteps || p.AgentReduction != reduction(p.InitialOps, p.AgentOps) {
			t.Errorf("%s: agent %+v", p.Program, p)
		}
		mean += p.AgentReduction / 2
	}
	if math.Abs(rep.AgentReduction-mean) > rewardTol {
		t.Errorf("mean agent reduction %g, want %g", rep.AgentReduction, mean)
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
			p := softmax(a.logits(x), x.mask)
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
