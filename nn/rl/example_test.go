package rl_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/tpucost/tpucost/nn"
	"github.com/tpucost/tpucost/nn/rl"
)

// arms is a softmax policy over three arms, one logit each; an episode is one pull (its
// arm's index).
type arms struct{ ps nn.Params }

func (a *arms) Params() nn.Params { return a.ps }
func (a *arms) Actions() []string { return []string{"left", "middle", "right"} }

func (a *arms) probs() []float64 {
	z, s := a.ps[0].Data, 0.0
	p := make([]float64, len(z))
	for i, v := range z {
		p[i] = math.Exp(float64(v))
		s += p[i]
	}
	for i := range p {
		p[i] /= s
	}
	return p
}

// Grads of L = −Σ_k adv_k log π(a_k) / K: dL/dz_j = −Σ_k adv_k (1[a_k = j] − π_j) / K.
func (a *arms) Grads(eps []int, adv [][]float64) ([]rl.Part, error) {
	p, g := a.probs(), make([]float32, 3)
	for k, arm := range eps {
		for j := range g {
			ind := 0.0
			if j == arm {
				ind = 1
			}
			g[j] -= float32(adv[k][0] * (ind - p[j]) / float64(len(eps)))
		}
	}
	return []rl.Part{{Grads: [][]float32{g}}}, nil
}

// pulls is one problem: 8 pulls sampled from the policy per iteration; the middle arm
// pays 1, the others 0.
type pulls struct{ a *arms }

func (e pulls) Problems() int { return 1 }

func (e pulls) Sample(_ context.Context, iter, _ int) (rl.Batch[int], error) {
	rng := rand.New(rand.NewPCG(uint64(iter), 0))
	var b rl.Batch[int]
	for range 8 {
		arm, u := 2, rng.Float64()
		for i, q := range e.a.probs() {
			if u -= q; u < 0 {
				arm = i
				break
			}
		}
		b.Episodes = append(b.Episodes, arm)
		b.Rewards = append(b.Rewards, []float64{float64(arm % 2)})
	}
	return b, nil
}

// Train a three-armed bandit with the loop the gym's agent and tune's policy share.
func ExampleTrain() {
	a := &arms{ps: nn.Params{nn.NewParam("logits", 3)}}
	err := rl.Train(context.Background(), rl.Policy[int](a), rl.Env[int](pulls{a}), rl.Options[int]{Iterations: 100, LR: 0.05, Baseline: 0.8})
	if err != nil {
		fmt.Println(err)
		return
	}
	p := a.probs()
	fmt.Printf("p(middle) > 0.9: %v\n", p[1] > 0.9)
	// Output: p(middle) > 0.9: true
}
