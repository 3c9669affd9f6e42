// Package rl is the project's one reinforcement-learning stack: the Policy and Env
// interfaces that the gym's pass-ordering agent and tune's layout and fusion policy both
// implement, the one training loop on top of them (Train: REINFORCE, or PPO's clipped
// surrogate for a policy that also reports its log-probabilities (LogProber), with the
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

// LogProber is a Policy that PPO can train (Options.Algorithm PPO): it reports the
// log-probability of the actions its episodes took under its current parameters.
type LogProber[E any] interface {
	// LogProbs returns, per episode of episodes (one problem's batch), per step, the
	// natural log of the probability that the policy with its current Params gives the
	// action the episode took at that step. It may refresh what the episodes cache for
	// Grads (e.g. a numerical shift of the logits) but not what they record.
	LogProbs(episodes []E) ([][]float64, error)
}

// The algorithms of Options.Algorithm.
const (
	REINFORCE = "reinforce"
	PPO       = "ppo"
)

// PPO's defaults (Schulman et al. 2017, "Proximal Policy Optimization Algorithms": K
// epochs over each iteration's samples, the ratio clipped at 1 ± ε with ε = 0.2).
const (
	DefaultEpochs = 4
	DefaultClip   = 0.2
)

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
	// Parts are Policy.Grads of the batch: REINFORCE's, or PPO's last epoch's (its
	// per-step weights r·A·[unclipped], see Train).
	Parts []Part
	// PPO only (zero under REINFORCE), measured at the last epoch before its step, over
	// the batch's steps: the fraction whose ratio r = π/π_old is outside [1−ε, 1+ε]
	// (Clipped), the mean of log π_old − log π (KL, an estimate of KL(π_old ‖ π) on
	// the sampled actions) and the largest |r − 1| (MaxRatioDev).
	Clipped, KL, MaxRatioDev float64
}

// Options configure Train.
type Options[E any] struct {
	Iterations int     // > 0; each samples every problem once, then takes one step
	LR         float64 // Adam's learning rate, > 0
	Baseline   float64 // decay of the moving-average baselines, in [0, 1)
	// Algorithm is REINFORCE ("" too) or PPO; PPO needs a policy that is a LogProber.
	Algorithm string
	// Epochs is PPO's passes over an iteration's batches, one Adam step each (0:
	// DefaultEpochs); REINFORCE takes one step and refuses another value but 0 and 1.
	Epochs int
	// Clip is PPO's ε, in (0, 1) (0: DefaultClip); REINFORCE refuses a value but 0.
	Clip float64
	// NormalizeAdvantages divides every advantage of an iteration by their standard
	// deviation over the iteration's steps (every batch, episode and step; the
	// baselines already centre them); with a deviation of 0 they stay as they are.
	NormalizeAdvantages bool
	// Progress, if set, is called after each iteration's update with the iteration
	// (1-based) and its batches in problem order (those without episodes left out).
	Progress func(iter int, batches []Trained[E]) error
}

// Train trains p on env. Each iteration samples a batch of episodes of every problem
// (Env.Sample) and takes each step's return to go minus the problem's moving-average
// baseline at that step (reinforce.Baselines) as its advantage A, divided by the
// advantages' standard deviation over the iteration with NormalizeAdvantages. Then, by
// Algorithm:
//
//   - REINFORCE: the batches' gradients (Policy.Grads with the advantages) are summed in
//     problem order and one clipped Adam step is taken (reinforce.Optimizer, fresh for
//     this call).
//   - PPO (Schulman et al. 2017): the log-probability of every taken action under the
//     sampling policy, logp_old, is kept (LogProber.LogProbs before the first step);
//     then Epochs times, over every batch: the current log-probabilities logp, the ratio
//     r = exp(logp − logp_old), and the gradient of the clipped surrogate
//     −Σ_t min(r_t·A_t, clip(r_t, 1−ε, 1+ε)·A_t) (ε = Clip), which is
//     −Σ_t [unclipped_t] r_t·A_t·∇log π(a_t|s_t): Policy.Grads with per-step weights
//     PPOWeights (r·A where the min takes the unclipped term, 0 where it takes the
//     clipped constant), summed over the batches in problem order; one clipped Adam step
//     per epoch on the whole iteration's batches. Full-batch, not per-problem
//     minibatches: each step then follows the gradient of the whole iteration's
//     surrogate, at the scale of REINFORCE's one step (the same gradient-norm clip and
//     learning rate mean the same thing under both), and no step depends on the order
//     of the problems; the problems' batches are few and of very different sizes, so
//     minibatches of one problem would each pull toward that problem alone.
//
// The result depends only on p, env and o.
func Train[E any](ctx context.Context, p Policy[E], env Env[E], o Options[E]) error {
	if o.Iterations <= 0 {
		return fmt.Errorf("iterations must be positive, got %d", o.Iterations)
	}
	if !(o.LR > 0) || math.IsInf(o.LR, 0) {
		return fmt.Errorf("learning rate must be positive, got %g", o.LR)
	}
	lp, epochs, clip, err := o.algorithm(p)
	if err != nil {
		return err
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
		advs := make([][][]float64, len(done))
		for k := range done {
			advs[k] = baselines.Advantages(done[k].Problem, done[k].Returns)
		}
		if o.NormalizeAdvantages {
			NormalizeAdvantages(advs)
		}
		if lp == nil {
			if err := step(p, done, advs, &opt, o.LR); err != nil {
				return err
			}
		} else if err := ppoEpochs(p, lp, done, advs, epochs, clip, &opt, o.LR); err != nil {
			return err
		}
		if o.Progress != nil {
			if err := o.Progress(it, done); err != nil {
				return err
			}
		}
	}
	return nil
}

// algorithm checks o's algorithm settings against p: the LogProber for PPO (nil for
// REINFORCE), the epochs and the clip.
func (o Options[E]) algorithm(p Policy[E]) (LogProber[E], int, float64, error) {
	switch o.Algorithm {
	case "", REINFORCE:
		if o.Epochs != 0 && o.Epochs != 1 {
			return nil, 0, 0, fmt.Errorf("REINFORCE takes one step per iteration: epochs must be 0 or 1, got %d", o.Epochs)
		}
		if o.Clip != 0 {
			return nil, 0, 0, fmt.Errorf("REINFORCE has no ratio clip: clip must be 0, got %g", o.Clip)
		}
		return nil, 1, 0, nil
	case PPO:
		lp, ok := p.(LogProber[E])
		if !ok {
			return nil, 0, 0, fmt.Errorf("PPO needs a policy that reports the log-probabilities of its actions (rl.LogProber); a %T does not", p)
		}
		epochs, clip := o.Epochs, o.Clip
		if epochs == 0 {
			epochs = DefaultEpochs
		}
		if epochs < 1 {
			return nil, 0, 0, fmt.Errorf("PPO epochs must be positive, got %d", o.Epochs)
		}
		if clip == 0 {
			clip = DefaultClip
		}
		if !(clip > 0 && clip < 1) {
			return nil, 0, 0, fmt.Errorf("PPO clip must be in (0, 1), got %g", o.Clip)
		}
		return lp, epochs, clip, nil
	}
	return nil, 0, 0, fmt.Errorf("unknown algorithm %q: want %s or %s", o.Algorithm, REINFORCE, PPO)
}

// ppoEpochs takes PPO's epochs over one iteration's batches (see Train).
func ppoEpochs[E any](p Policy[E], lp LogProber[E], done []Trained[E], advs [][][]float64, epochs int, clip float64, opt *reinforce.Optimizer, lr float64) error {
	old := make([][][]float64, len(done))
	for k := range done {
		l, err := logProbs(lp, done[k].Episodes, advs[k])
		if err != nil {
			return err
		}
		old[k] = l
	}
	for ep := 1; ep <= epochs; ep++ {
		weights := make([][][]float64, len(done))
		for k := range done {
			t := &done[k]
			cur := old[k] // the policy has not changed before the first step
			if ep > 1 {
				l, err := logProbs(lp, t.Episodes, advs[k])
				if err != nil {
					return err
				}
				cur = l
			}
			if ep == epochs {
				t.Clipped, t.KL, t.MaxRatioDev = ratioStats(old[k], cur, clip)
			}
			weights[k] = PPOWeights(advs[k], old[k], cur, clip)
		}
		if err := step(p, done, weights, opt, lr); err != nil {
			return err
		}
	}
	return nil
}

// step takes one clipped Adam step on the sum, in problem order, of the gradients of
// every batch of done with its per-step weights (Policy.Grads), and records each
// batch's parts.
func step[E any](p Policy[E], done []Trained[E], weights [][][]float64, opt *reinforce.Optimizer, lr float64) error {
	var sum [][]float32
	for k := range done {
		t := &done[k]
		parts, err := p.Grads(t.Episodes, weights[k])
		if err != nil {
			return err
		}
		t.Parts = parts
		for _, pt := range parts {
			sum = reinforce.AddGrads(sum, pt.Grads)
		}
	}
	if sum != nil {
		opt.Step(p.Params(), sum, lr)
	}
	return nil
}

// logProbs is lp.LogProbs, checked to have one value per step of adv.
func logProbs[E any](lp LogProber[E], eps []E, adv [][]float64) ([][]float64, error) {
	l, err := lp.LogProbs(eps)
	if err != nil {
		return nil, err
	}
	if len(l) != len(adv) {
		return nil, fmt.Errorf("PPO: the policy reported log-probabilities of %d episodes, the batch has %d", len(l), len(adv))
	}
	for k := range l {
		if len(l[k]) != len(adv[k]) {
			return nil, fmt.Errorf("PPO: the policy reported %d log-probabilities for episode %d, it took %d steps", len(l[k]), k, len(adv[k]))
		}
	}
	return l, nil
}

// PPOWeights returns the per-step weights whose REINFORCE gradient (−Σ_t w_t ∇log π)
// is the gradient of PPO's clipped surrogate −Σ_t min(r_t·A_t, clip(r_t, 1−ε, 1+ε)·A_t),
// r_t = exp(logp[k][t] − old[k][t]), ε = clip: r·A where the unclipped term is the min
// and moves with r (A > 0 and r < 1+ε, or A < 0 and r > 1−ε), 0 elsewhere (the clipped
// term is a constant there).
func PPOWeights(adv, old, logp [][]float64, clip float64) [][]float64 {
	w := make([][]float64, len(adv))
	for k := range adv {
		w[k] = make([]float64, len(adv[k]))
		for t, a := range adv[k] {
			r := math.Exp(logp[k][t] - old[k][t])
			if (a > 0 && r < 1+clip) || (a < 0 && r > 1-clip) {
				w[k][t] = r * a
			}
		}
	}
	return w
}

// PPOSurrogate is PPO's clipped surrogate loss −Σ_k Σ_t min(r·A, clip(r, 1−ε, 1+ε)·A)
// over a batch (see PPOWeights).
func PPOSurrogate(adv, old, logp [][]float64, clip float64) float64 {
	s := 0.0
	for k := range adv {
		for t, a := range adv[k] {
			r := math.Exp(logp[k][t] - old[k][t])
			s -= math.Min(r*a, math.Min(math.Max(r, 1-clip), 1+clip)*a)
		}
	}
	return s
}

// ratioStats returns, over a batch's steps, the fraction whose ratio is outside
// [1−clip, 1+clip], the mean of old − logp and the largest |r − 1|.
func ratioStats(old, logp [][]float64, clip float64) (clipped, kl, maxDev float64) {
	n := 0
	for k := range old {
		for t := range old[k] {
			r := math.Exp(logp[k][t] - old[k][t])
			if r < 1-clip || r > 1+clip {
				clipped++
			}
			kl += old[k][t] - logp[k][t]
			maxDev = math.Max(maxDev, math.Abs(r-1))
			n++
		}
	}
	if n > 0 {
		clipped /= float64(n)
		kl /= float64(n)
	}
	return clipped, kl, maxDev
}

// NormalizeAdvantages divides every advantage (per batch, episode and step) by their
// standard deviation (about their mean, over all of them) in place; with a deviation of
// 0, or none, they stay as they are. The mean is not subtracted: the baselines centre
// the advantages per (problem, step), and subtracting one iteration-wide mean would
// undo that.
func NormalizeAdvantages(advs [][][]float64) {
	n, sum := 0.0, 0.0
	for _, b := range advs {
		for _, e := range b {
			for _, a := range e {
				sum += a
				n++
			}
		}
	}
	if n == 0 {
		return
	}
	mean, v := sum/n, 0.0
	for _, b := range advs {
		for _, e := range b {
			for _, a := range e {
				v += (a - mean) * (a - mean)
			}
		}
	}
	sd := math.Sqrt(v / n)
	if !(sd > 0) || math.IsInf(sd, 0) {
		return
	}
	for _, b := range advs {
		for _, e := range b {
			for t := range e {
				e[t] /= sd
			}
		}
	}
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
