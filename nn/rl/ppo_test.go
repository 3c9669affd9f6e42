package rl

import (
	"context"
	"math"
	"strings"
	"testing"
)

// ppoBandit is the bandit with its log-probabilities reported (a LogProber): PPO can
// train it.
type ppoBandit struct{ *bandit }

func (b ppoBandit) LogProbs(eps [][]int) ([][]float64, error) {
	p := b.probs()
	out := make([][]float64, len(eps))
	for k, acts := range eps {
		for _, a := range acts {
			out[k] = append(out[k], math.Log(p[a]))
		}
	}
	return out, nil
}

// TestPPOWeightsClip: which steps PPO's clipped surrogate keeps (its gradient
// r·A·∇log π) and which it clips (weight 0), at ε = 0.2, computed by hand: a positive
// advantage stops pulling once the ratio passes 1+ε, a negative one once it falls below
// 1−ε; inside the range, and on the side where the min takes the unclipped term, the
// weight is r·A. The surrogate's value is −min(r·A, clip(r)·A) summed.
func TestPPOWeightsClip(t *testing.T) {
	const eps = 0.2
	ratios := []float64{0.5, 0.9, 1, 1.1, 1.5, 0.5, 0.9, 1.1, 1.5}
	adv := [][]float64{{1, 1, 1, 1, 1, -1, -1, -1, -1}}
	old := [][]float64{make([]float64, len(ratios))}
	logp := [][]float64{make([]float64, len(ratios))}
	for i, r := range ratios {
		logp[0][i] = math.Log(r)
	}
	// A>0: r=0.5 (below 1−ε: min is r·A, still pulling up), 0.9, 1, 1.1 kept; 1.5 clipped.
	// A<0: r=0.5 clipped (min is the clipped (1−ε)·A); 0.9, 1.1, 1.5 kept (1.5: the min
	// is r·A, which keeps pushing the ratio down).
	want := []float64{0.5, 0.9, 1, 1.1, 0, 0, -0.9, -1.1, -1.5}
	wantLoss := -(0.5 + 0.9 + 1 + 1.1 + 1.2 - 0.8 - 0.9 - 1.1 - 1.5)
	// 1e-12: exp(log r) rounds in the last bits only.
	const tol = 1e-12
	w := PPOWeights(adv, old, logp, eps)
	for i := range want {
		if math.Abs(w[0][i]-want[i]) > tol {
			t.Errorf("ratio %g, advantage %g: weight %g, want %g", ratios[i], adv[0][i], w[0][i], want[i])
		}
	}
	if got := PPOSurrogate(adv, old, logp, eps); math.Abs(got-wantLoss) > tol {
		t.Errorf("surrogate %g, want %g", got, wantLoss)
	}
}

// blindBandit reports the log-probabilities of its first LogProbs call forever after:
// every ratio stays 1, so PPO never clips and every epoch is a full REINFORCE step (the
// clip removed).
type blindBandit struct {
	*bandit
	first [][]float64
}

func (b *blindBandit) LogProbs(eps [][]int) ([][]float64, error) {
	if b.first == nil {
		b.first, _ = ppoBandit{b.bandit}.LogProbs(eps)
	}
	return b.first, nil
}

// TestPPOClipBoundsTheStep: one iteration of PPO with a learning rate and an epoch count
// far too large (40 Adam steps of 0.2 on every logit) moves the policy only as far as
// the clip lets it: once every sampled action's ratio is past 1 ± ε its gradient is
// zero, and only Adam's decaying momentum moves it further. With the clip removed (the
// ratios reported as 1, so every step keeps its weight A) the same epochs keep pulling
// the logits apart. Measured as KL(π_before ‖ π_after) over the arms.
func TestPPOClipBoundsTheStep(t *testing.T) {
	run := func(blind bool) float64 {
		b := newBandit("a", "b", "c", "d")
		env := &banditEnv{b: b, reward: []float64{0, 0.2, 1, 0.1}, steps: 1, samples: 8}
		var p Policy[[]int] = ppoBandit{b}
		if blind {
			p = &blindBandit{bandit: b}
		}
		before := b.probs()
		err := Train(context.Background(), p, Env[[]int](env), Options[[]int]{Iterations: 1, LR: 0.2, Baseline: 0.8,
			Algorithm: PPO, Epochs: 40, NormalizeAdvantages: true})
		if err != nil {
			t.Fatal(err)
		}
		kl := 0.0
		for i, q := range b.probs() {
			kl += before[i] * math.Log(before[i]/q)
		}
		return kl
	}
	clipped, loose := run(false), run(true)
	t.Logf("KL(before || after) of one iteration of 40 epochs: clipped %.4f, clip removed %.4f", clipped, loose)
	// The bound: measured 0.89 with the clip (ε = 0.2 stops the gradient once the ratios
	// pass 1 ± 0.2; Adam's momentum, β1 = 0.9, carries the logits about ten steps
	// further), 1.5 with a margin; with the clip removed 7.3 (40 steps of 0.2 move a
	// logit by about 8), so it must exceed twice the bound.
	const bound = 1.5
	if clipped > bound {
		t.Errorf("with the clip one iteration moved the policy by KL %.4f, want <= %g", clipped, bound)
	}
	if loose <= 2*bound {
		t.Errorf("with the clip removed KL = %.4f: the test does not tell clipped from unclipped", loose)
	}
}

// TestPPONeedsLogProbs: PPO on a policy that does not report its log-probabilities is
// an error naming the policy's kind; PPO's settings under REINFORCE and bad PPO
// settings are errors.
func TestPPONeedsLogProbs(t *testing.T) {
	b := newBandit("a", "b")
	env := &banditEnv{b: b, reward: []float64{0, 1}, steps: 1, samples: 2}
	err := Train(context.Background(), Policy[[]int](b), Env[[]int](env), Options[[]int]{Iterations: 1, LR: 0.1, Algorithm: PPO})
	if err == nil || !strings.Contains(err.Error(), "*rl.bandit") || !strings.Contains(err.Error(), "LogProber") {
		t.Errorf("PPO on the plain bandit: %v, want an error naming *rl.bandit and LogProber", err)
	}
	for _, o := range []Options[[]int]{
		{Iterations: 1, LR: 0.1, Epochs: 4}, {Iterations: 1, LR: 0.1, Clip: 0.2}, {Iterations: 1, LR: 0.1, Algorithm: "a2c"},
		{Iterations: 1, LR: 0.1, Algorithm: PPO, Epochs: -1}, {Iterations: 1, LR: 0.1, Algorithm: PPO, Clip: 1}, {Iterations: 1, LR: 0.1, Algorithm: PPO, Clip: -0.1},
	} {
		if err := Train(context.Background(), Policy[[]int](ppoBandit{b}), Env[[]int](env), o); err == nil {
			t.Errorf("options %+v: no error", o)
		}
	}
}

// TestPPOLearnsBandit: PPO (4 epochs, ε 0.2, normalized advantages) learns the bandit's
// best arm from the uniform policy in far fewer iterations than REINFORCE's 150.
func TestPPOLearnsBandit(t *testing.T) {
	b := newBandit("a", "b", "c", "d")
	env := &banditEnv{b: b, reward: []float64{0, 0.2, 1, 0.1}, offset: 5, steps: 1, samples: 8}
	if err := Train(context.Background(), Policy[[]int](ppoBandit{b}), Env[[]int](env), Options[[]int]{Iterations: 40, LR: 0.05, Baseline: 0.8, Algorithm: PPO, NormalizeAdvantages: true}); err != nil {
		t.Fatal(err)
	}
	// 0.9, as TestTrainLearnsBandit asks of REINFORCE after 150 iterations.
	const learned = 0.9
	if p := b.probs(); p[2] < learned {
		t.Errorf("after 40 PPO iterations the best arm has probability %.3f (all %.3f), want >= %.2f", p[2], p, learned)
	}
}

// TestNormalizeAdvantages: the advantages are divided by their standard deviation over
// every batch, episode and step (not centred); all-equal ones stay as they are.
func TestNormalizeAdvantages(t *testing.T) {
	advs := [][][]float64{{{1, 3}, {5}}, {{7}}} // mean 4, variance (9+1+1+9)/4 = 5
	NormalizeAdvantages(advs)
	sd := math.Sqrt(5)
	want := [][][]float64{{{1 / sd, 3 / sd}, {5 / sd}}, {{7 / sd}}}
	// 1e-12: one division each.
	const tol = 1e-12
	for i := range want {
		for k := range want[i] {
			for s := range want[i][k] {
				if math.Abs(advs[i][k][s]-want[i][k][s]) > tol {
					t.Errorf("[%d][%d][%d] = %g, want %g", i, k, s, advs[i][k][s], want[i][k][s])
				}
			}
		}
	}
	same := [][][]float64{{{2, 2}}}
	NormalizeAdvantages(same)
	if same[0][0][0] != 2 || same[0][0][1] != 2 {
		t.Errorf("equal advantages changed: %v", same)
	}
}
