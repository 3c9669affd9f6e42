package rl

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tpucost/tpucost/nn"
)

// bandit is a softmax policy over len(Actions) arms with one logit each (gradients by
// hand, no graph): an episode is one pull.
type bandit struct {
	params nn.Params
	arms   []string
	adv    [][][]float64 // the advantages Grads received, per call
}

func newBandit(arms ...string) *bandit {
	return &bandit{params: nn.Params{nn.NewParam("logits", len(arms))}, arms: arms}
}

func (b *bandit) Params() nn.Params { return b.params }
func (b *bandit) Actions() []string { return b.arms }
func (b *bandit) probs() []float64 {
	z := b.params[0].Data
	m := float64(slices.Max(z))
	p := make([]float64, len(z))
	s := 0.0
	for i, v := range z {
		p[i] = math.Exp(float64(v) - m)
		s += p[i]
	}
	for i := range p {
		p[i] /= s
	}
	return p
}

// Grads: L = −Σ_k Σ_t adv[k][t] log π(a_kt) / K, dL/dz_j = −Σ adv (1[a=j] − π_j) / K.
func (b *bandit) Grads(eps [][]int, adv [][]float64) ([]Part, error) {
	b.adv = append(b.adv, adv)
	p := b.probs()
	g := make([]float32, len(p))
	loss := 0.0
	k := float64(len(eps))
	for e, acts := range eps {
		for t, a := range acts {
			loss -= adv[e][t] * math.Log(p[a]) / k
			for j := range g {
				ind := 0.0
				if j == a {
					ind = 1
				}
				g[j] -= float32(adv[e][t] * (ind - p[j]) / k)
			}
		}
	}
	return []Part{{Loss: loss, Grads: [][]float32{g}}}, nil
}

// banditEnv: problems whose episodes pull steps arms in a row; a pull of arm i rewards
// reward[i] (plus offset, the same for every arm).
type banditEnv struct {
	b       *bandit
	reward  []float64
	offset  float64
	steps   int
	samples int
}

func (e *banditEnv) Problems() int { return 2 }

func (e *banditEnv) Sample(_ context.Context, iter, problem int) (Batch[[]int], error) {
	rng := rand.New(rand.NewPCG(uint64(iter), uint64(problem)))
	p := e.b.probs()
	var out Batch[[]int]
	for range e.samples {
		var acts []int
		var rs []float64
		for range e.steps {
			u, a := rng.Float64(), len(p)-1
			for i, q := range p {
				if u -= q; u < 0 {
					a = i
					break
				}
			}
			acts = append(acts, a)
			rs = append(rs, e.reward[a]+e.offset)
		}
		out.Episodes = append(out.Episodes, acts)
		out.Rewards = append(out.Rewards, rs)
	}
	best := 0
	for i, q := range p {
		if q > p[best] {
			best = i
		}
	}
	out.Greedy = []float64{e.reward[best] + e.offset}
	return out, nil
}

// TestTrainLearnsBandit: the shared loop learns the best arm of a 4-armed bandit whose
// rewards all carry a large constant offset (only the advantage against the baseline
// tells the arms apart), from the uniform policy (p = 0.25) to nearly certain.
func TestTrainLearnsBandit(t *testing.T) {
	b := newBandit("a", "b", "c", "d")
	env := &banditEnv{b: b, reward: []float64{0, 0.2, 1, 0.1}, offset: 5, steps: 1, samples: 8}
	var greedy []float64
	err := Train(context.Background(), Policy[[]int](b), Env[[]int](env), Options[[]int]{Iterations: 150, LR: 0.05, Baseline: 0.8,
		Progress: func(_ int, done []Trained[[]int]) error {
			greedy = append(greedy, done[0].Greedy[0])
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	// 0.9: the best arm's probability after training; the uniform start is 0.25, and the
	// clipped Adam steps at LR 0.05 move its logit by about 0.05 per iteration.
	const learned = 0.9
	t.Logf("arm probabilities after training: %.3f", b.probs())
	if p := b.probs(); p[2] < learned {
		t.Errorf("after 150 iterations the best arm has probability %.3f (all %.3f), want >= %.2f", p[2], p, learned)
	}
	if len(greedy) != 150 || greedy[len(greedy)-1] != 6 {
		t.Errorf("progress: %d iterations, last greedy reward %v; want 150, 6", len(greedy), greedy[len(greedy)-1])
	}
}

// TestTrainAdvantages: Grads receives, for every step, its return to go minus the
// problem's moving-average baseline at that step: a problem's first batch is centred on
// its mean, the next is taken against decay·mean₁ + (1−decay)·mean₂ ... as
// reinforce.Baselines defines it; computed by hand here for two 3-step episodes.
func TestTrainAdvantages(t *testing.T) {
	b := newBandit("a", "b")
	env := &banditEnv{b: b, reward: []float64{1, 2}, steps: 3, samples: 2}
	if err := Train(context.Background(), Policy[[]int](b), Env[[]int](env), Options[[]int]{Iterations: 2, LR: 1e-9, Baseline: 0.5}); err != nil {
		t.Fatal(err)
	}
	if len(b.adv) != 4 {
		t.Fatalf("Grads was called %d times, want 4 (2 iterations x 2 problems)", len(b.adv))
	}
	// Rebuild each call's expectation from the rewards the env gives (deterministic):
	// the same sampling with the same (iteration, problem) seeds.
	base := map[int][]float64{}
	call := 0
	for it := 1; it <= 2; it++ {
		for pr := range 2 {
			batch, _ := env.Sample(context.Background(), it, pr)
			rtg := ReturnsToGo(batch.Rewards)
			mean := make([]float64, 3)
			for _, r := range rtg {
				for s := range r {
					mean[s] += r[s] / 2
				}
			}
			bl := base[pr]
			if bl == nil {
				bl = slices.Clone(mean)
			}
			for k, r := range rtg {
				for s := range r {
					want := r[s] - bl[s]
					// 1e-12: the loop computes the same sums in the same order; only the
					// tiny learning rate's change of the sampling could differ, and it does not.
					if got := b.adv[call][k][s]; math.Abs(got-want) > 1e-12 {
						t.Errorf("iteration %d problem %d episode %d step %d: advantage %g, want %g (return to go %g, baseline %g)", it, pr, k, s, got, want, r[s], bl[s])
					}
				}
			}
			for s := range bl {
				bl[s] = 0.5*bl[s] + 0.5*mean[s]
			}
			base[pr] = bl
			call++
		}
	}
}

// TestReturnsToGo: the return to go sums the rewards from each step on.
func TestReturnsToGo(t *testing.T) {
	got := ReturnsToGo([][]float64{{1, 2, 3}, {}, {-1}})
	want := [][]float64{{6, 5, 3}, {}, {-1}}
	for k := range want {
		if !slices.Equal(got[k], want[k]) {
			t.Errorf("episode %d: %v, want %v", k, got[k], want[k])
		}
	}
}

// TestTrainRefusesBadOptions: invalid options are errors, never defaults.
func TestTrainRefusesBadOptions(t *testing.T) {
	b := newBandit("a", "b")
	env := &banditEnv{b: b, reward: []float64{0, 1}, steps: 1, samples: 2}
	for _, o := range []Options[[]int]{{Iterations: 0, LR: 0.1}, {Iterations: 1, LR: 0}, {Iterations: 1, LR: math.Inf(1)}, {Iterations: 1, LR: 0.1, Baseline: 1}} {
		if err := Train(context.Background(), Policy[[]int](b), Env[[]int](env), o); err == nil {
			t.Errorf("options %+v: no error", o)
		}
	}
}
