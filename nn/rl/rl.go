// Package rl is the project's one reinforcement-learning stack: the Policy and Env
// interfaces that the gym's pass-ordering agent and tune's layout and fusion policy both
// implement, the one REINFORCE training loop on top of them (Train, with the
// per-(problem, step) moving-average baselines and the clipped Adam step of
// nn/reinforce), and the one checkpoint codec of policies (Codec), which records the
// action list a policy was trained on and refuses a checkpoint of another list.
//
// What stays with each owner is what differs between them: how an episode is acted out
// (the gym: many steps, one pass each; tune: one step, every decision of a program at
// once), the surrogate loss and its gradient, and the report of an iteration.
package rl

import (
	"context"
	"fmt"
	"math"

	"github.com/tpucost/tpucost/nn"
	"github.com/tpucost/tpucost/nn/reinforce"
)

// Policy is a trainable policy whose episodes are of type E (the owner's record of one
// episode: its observations and actions). Train updates Params in place.
type Policy[E any] interface {
	// Params are the policy's parameters, in the order Grads returns their gradients.
	Params() nn.Params
	// Actions is the action list the policy's outputs index (recorded in its checkpoint).
	Actions() []string
	// Grads returns the REINFORCE surrogate loss of a batch of episodes of one problem,
	// episode k's step t weighted by its advantage adv[k][t], and the gradient of that
	// loss per parameter, as one or more parts that Train sums in order (an owner may
	// return one part per episode).
	Grads(episodes []E, adv [][]float64) ([]Part, error)
}

// Part is one part of a batch's surrogate loss and its gradient per parameter.
type Part struct {
	Loss  float64
	Grads [][]float32
}

// Env is a set of training problems (programs) that a policy acts on.
type Env[E any] interface {
	// Problems is the number of problems; Sample's problem is in [0, Problems).
	Problems() int
	// Sample acts out a batch of episodes of problem with the policy being trained
	// (iteration iter, 1-based, picks the sampling seed): the episodes, each one's reward
	// per step, and the rewards of the policy's greedy episode (reported, not trained
	// on). A batch without episodes (a problem with nothing to decide) is skipped.
	Sample(ctx context.Context, iter, problem int) (Batch[E], error)
}

// Batch is one problem's sampled episodes in one iteration.
type Batch[E any] struct {
	Episodes []E
	Rewards  [][]float64 // per episode, per step
	Greedy   []float64   // the greedy episode's rewards per step
}

// Trained is one problem's batch in an iteration with what Train made of it.
type Trained[E any] struct {
	Problem int
	Batch[E]
	Returns [][]float64 // per episode, per step: the return to go
	Parts   []Part      // Policy.Grads of the batch
}

// Options configure Train.
type Options[E any] struct {
	Iterations int     // > 0; each samples every problem once, then takes one step
	LR         float64 // Adam's learning rate, > 0
	Baseline   float64 // decay of the moving-average baselines, in [0, 1)
	// Progress, if set, is called after each iteration's update with the iteration
	// (1-based) and its batches in problem order (those without episodes left out).
	Progress func(iter int, batches []Trained[E]) error
}

// Train trains p on env by REINFORCE: each iteration samples a batch of episodes of every
// problem (Env.Sample), takes each step's return to go minus the problem's moving-average
// baseline at that step (reinforce.Baselines) as its advantage, sums the batches'
// gradients (Policy.Grads) in problem order and takes one clipped Adam step
// (reinforce.Optimizer, fresh for this call). The result depends only on p, env and o.
func Train[E any](ctx context.Context, p Policy[E], env Env[E], o Options[E]) error {
	if o.Iterations <= 0 {
		return fmt.Errorf("iterations must be positive, got %d", o.Iterations)
	}
	if !(o.LR > 0) || math.IsInf(o.LR, 0) {
		return fmt.Errorf("learning rate must be positive, got %g", o.LR)
	}
	baselines, err := reinforce.NewBaselines(env.Problems(), o.Baseline)
	if err != nil {
		return err
	}
	var opt reinforce.Optimizer
	for it := 1; it <= o.Iterations; it++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		var done []Trained[E]
		for i := range env.Problems() {
			b, err := env.Sample(ctx, it, i)
			if err != nil {
				return err
			}
			if len(b.Episodes) == 0 {
				continue
			}
			rtg := ReturnsToGo(b.Rewards)
			done = append(done, Trained[E]{Problem: i, Batch: b, Returns: rtg})
		}
		// Advantages after every batch is sampled: the baselines are per problem, and the
		// policy does not change before the step.
		var sum [][]float32
		for k := range done {
			t := &done[k]
			adv := baselines.Advantages(t.Problem, t.Returns)
			parts, err := p.Grads(t.Episodes, adv)
			if err != nil {
				return err
			}
			t.Parts = parts
			for _, pt := range parts {
				sum = reinforce.AddGrads(sum, pt.Grads)
			}
		}
		if sum != nil {
			opt.Step(p.Params(), sum, o.LR)
		}
		if o.Progress != nil {
			if err := o.Progress(it, done); err != nil {
				return err
			}
		}
	}
	return nil
}

// ReturnsToGo returns, per episode, the sum of its rewards from each step to its end.
func ReturnsToGo(rewards [][]float64) [][]float64 {
	out := make([][]float64, len(rewards))
	for k, rs := range rewards {
		rtg := make([]float64, len(rs))
		acc := 0.0
		for t := len(rs) - 1; t >= 0; t-- {
			acc += rs[t]
			rtg[t] = acc
		}
		out[k] = rtg
	}
	return out
}
