package gym

import (
	"context"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/tpucost/tpucost/nn/rl"
)

// TestPPOGradient: the gradient PPO trains the agent with (Grads with rl.PPOWeights:
// the REINFORCE graph, step t weighted by r_t·A_t where the clip leaves it active)
// matches central finite differences of PPO's clipped surrogate
// −Σ min(r·A, clip(r, 1−ε, 1+ε)·A) / E computed from the agent's log-probabilities
// (LogProbs), with the policy moved away from the one that sampled the episodes so that
// some steps are clipped and some are not.
func TestPPOGradient(t *testing.T) {
	const clip = rl.DefaultClip
	e := newEnv(t, Options{MaxSteps: 4})
	a := NewAgent(2)
	te := &trainEnv{a: a, env: e, programs: []string{"mlp_96x2_b1_train"}, samples: 3, seed: 1}
	b, err := te.Sample(context.Background(), 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	eps := b.Episodes
	old, err := a.LogProbs(eps)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, p := range a.params { // the policy after some updates
		for i := range p.Data {
			p.Data[i] += float32(0.15 * rng.NormFloat64())
		}
	}
	cur, err := a.LogProbs(eps)
	if err != nil {
		t.Fatal(err)
	}
	adv := make([][]float64, len(eps))
	for k := range eps {
		for range eps[k].actions {
			adv[k] = append(adv[k], rng.NormFloat64())
		}
	}
	w := rl.PPOWeights(adv, old, cur, clip)
	active, clipped := 0, 0
	for k := range w {
		for s := range w[k] {
			r := math.Exp(cur[k][s] - old[k][s])
			t.Logf("episode %d step %d: r %.3f A %+.3f weight %+.3f", k, s, r, adv[k][s], w[k][s])
			if (adv[k][s] > 0 && r > 1+clip) || (adv[k][s] < 0 && r < 1-clip) {
				clipped++ // the min takes the clipped constant
			} else {
				active++
			}
		}
	}
	if active == 0 || clipped == 0 {
		t.Fatalf("%d active and %d clipped steps: the case must have both", active, clipped)
	}
	parts, err := a.Grads(eps, w)
	if err != nil {
		t.Fatal(err)
	}
	var gs [][]float32
	for _, p := range parts {
		if gs == nil {
			gs = make([][]float32, len(p.Grads))
			for i := range p.Grads {
				gs[i] = make([]float32, len(p.Grads[i]))
			}
		}
		for i := range p.Grads {
			for j := range p.Grads[i] {
				gs[i][j] += p.Grads[i][j]
			}
		}
	}
	E := float64(eps[0].episodes)
	surrogate := func() float64 {
		l, err := a.LogProbs(eps)
		if err != nil {
			t.Fatal(err)
		}
		return rl.PPOSurrogate(adv, old, l, clip) / E
	}
	// h: float32 logits carry about 1e-7 relative error, so the difference quotient
	// carries about 1e-7·Σ|A|/E/h ≈ 1e-4; the tolerance (as tune's TestRLLayoutGradient)
	// leaves room for that and for the curvature of exp over 2h (checkAgentGradient).
	checked, _ := checkAgentGradient(t, a, gs, surrogate, "finite differences of the clipped surrogate")
	if checked != 4*len(a.params) {
		t.Fatalf("checked %d", checked)
	}
}

// ppoToy is toyOptions under PPO.
func ppoToy(iters int) TrainOptions {
	o := toyOptions(iters)
	o.Algorithm = AlgoPPO
	return o
}

// TestPPODeterministic: the same options give byte-identical PPO checkpoints, and the
// checkpoint records the algorithm and its settings.
func TestPPODeterministic(t *testing.T) {
	var files [2][]byte
	for i := range files {
		a, err := Train(context.Background(), ppoToy(3))
		if err != nil {
			t.Fatal(err)
		}
		var b *Agent
		files[i], b = savedCheckpoint(t, a)
		m := b.Meta
		if m.Algorithm != AlgoPPO || m.Epochs != rl.DefaultEpochs || m.Clip != rl.DefaultClip || !m.NormalizedAdvantages {
			t.Fatalf("checkpoint records algorithm %q, epochs %d, clip %g, normalized %v; want ppo, %d, %g, true", m.Algorithm, m.Epochs, m.Clip, m.NormalizedAdvantages, rl.DefaultEpochs, rl.DefaultClip)
		}
	}
	if !reflect.DeepEqual(files[0], files[1]) {
		t.Fatal("two PPO trainings with the same seed wrote different checkpoints")
	}
}

// TestTrainOptionsAlgorithm: REINFORCE records itself with raw advantages by default;
// PPO's settings under REINFORCE, unknown algorithms and advantage modes are errors.
func TestTrainOptionsAlgorithm(t *testing.T) {
	o, err := toyOptions(1).withDefaults()
	if err != nil || o.Algorithm != AlgoREINFORCE || o.Advantages != AdvantagesRaw {
		t.Fatalf("REINFORCE defaults: %+v, %v", o, err)
	}
	for _, bad := range []func(*TrainOptions){
		func(o *TrainOptions) { o.Epochs = 2 },
		func(o *TrainOptions) { o.Clip = 0.1 },
		func(o *TrainOptions) { o.Algorithm = "a2c" },
		func(o *TrainOptions) { o.Advantages = "whitened" },
		func(o *TrainOptions) { o.Algorithm, o.Epochs = AlgoPPO, -1 },
		func(o *TrainOptions) { o.Algorithm, o.Clip = AlgoPPO, 1.5 },
	} {
		o := toyOptions(1)
		bad(&o)
		if _, err := o.withDefaults(); err == nil {
			t.Errorf("options %+v: no error", o)
		}
	}
}

// TestSmallPPOAgentBeatsDefault: TestSmallAgentBeatsDefault's agent trained by PPO
// instead: trained briefly on lstm_lm's training step, with one episode of evaluation
// budget (its most likely sequence only), it ends below the initial op count and below
// XLA's default order on lstm2_lm's training step, which it never saw.
func TestSmallPPOAgentBeatsDefault(t *testing.T) {
	const steps = 4
	a, err := Train(context.Background(), TrainOptions{Programs: []string{"lstm_lm_h256_t16_b32_train"}, Seed: 1, Iterations: 10, Samples: 4, MaxSteps: steps, LR: 0.05, Algorithm: AlgoPPO})
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
