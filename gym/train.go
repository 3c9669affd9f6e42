package gym

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/tpucost/tpucost/internal/stablehash"
	"github.com/tpucost/tpucost/nn/reinforce"
)

// TrainOptions configure Train.
type TrainOptions struct {
	Programs   []string // required: what the agent trains on
	Seed       int64    // initial weights and action sampling
	Iterations int      // required > 0; each samples Samples episodes per program, then one update
	// Samples is the number of episodes per program per iteration (default 4).
	Samples int
	// MaxSteps is the episode limit (default DefaultMaxSteps).
	MaxSteps int
	// Reward is RewardOps (default) or RewardTime (Options.Reward), simulated on Chip.
	Reward string
	Chip   string
	// LR is Adam's learning rate (default 0.01).
	LR float64
	// Baseline is the decay of the per-(program, step) moving-average baseline (default 0.8).
	Baseline float64
	// Entropy is the weight of the entropy bonus (default 0.01; negative: none).
	Entropy float64
	// Progress, if set, is called after each iteration.
	Progress func(IterReport)
}

// IterReport is one training iteration. Returns are episode returns (the fraction of the
// initial op count removed), averaged over programs.
type IterReport struct {
	Iteration    int     `json:"iteration"` // 1-based
	Loss         float64 `json:"loss"`      // REINFORCE surrogate loss (with the entropy term), summed over episodes
	MeanReturn   float64 `json:"mean_return"`
	GreedyReturn float64 `json:"greedy_return"` // the return of the greedy policy before the update
	Entropy      float64 `json:"mean_entropy_nats"`
	MeanSteps    float64 `json:"mean_steps"`
}

func (o TrainOptions) withDefaults() (TrainOptions, error) {
	if len(o.Programs) == 0 {
		return o, errors.New("no programs to train on")
	}
	if o.Iterations <= 0 {
		return o, fmt.Errorf("iterations must be positive, got %d", o.Iterations)
	}
	if o.Samples == 0 {
		o.Samples = 4
	}
	if o.Samples < 2 {
		return o, fmt.Errorf("samples per program must be at least 2, got %d", o.Samples)
	}
	if o.MaxSteps == 0 {
		o.MaxSteps = DefaultMaxSteps
	}
	if o.MaxSteps < 1 {
		return o, fmt.Errorf("max steps must be positive, got %d", o.MaxSteps)
	}
	if o.LR == 0 {
		o.LR = 0.01
	}
	if !(o.LR > 0) || math.IsInf(o.LR, 0) {
		return o, fmt.Errorf("learning rate must be positive, got %g", o.LR)
	}
	if o.Baseline == 0 {
		o.Baseline = 0.8
	}
	if o.Baseline < 0 || o.Baseline >= 1 || math.IsNaN(o.Baseline) {
		return o, fmt.Errorf("baseline decay must be in [0, 1), got %g", o.Baseline)
	}
	if o.Entropy == 0 {
		o.Entropy = 0.01
	}
	if o.Entropy < 0 {
		o.Entropy = 0
	}
	if math.IsNaN(o.Entropy) || math.IsInf(o.Entropy, 0) {
		return o, fmt.Errorf("entropy weight must be finite, got %g", o.Entropy)
	}
	return o, nil
}

// rollout runs one episode on program with the agent choosing actions: sampled with
// rng, or greedy when rng is nil. It returns the episode's inputs, actions, rewards and
// per-step max logits.
func (a *Agent) rollout(env *Env, program string, rng *rand.Rand) (*episodeBatch, []float64, float64, error) {
	obs, err := env.Reset(program)
	if err != nil {
		return nil, nil, 0, err
	}
	b := &episodeBatch{}
	var rs []float64
	ent := 0.0
	for {
		x := encode(obs)
		z, err := a.logits(x)
		if err != nil {
			return nil, nil, 0, err
		}
		p := softmax(z, x.mask)
		for _, q := range p {
			if q > 0 {
				ent -= q * math.Log(q)
			}
		}
		act := argmax(p)
		if rng != nil {
			act = sample(rng, p)
		}
		b.xs = append(b.xs, x)
		b.actions = append(b.actions, act)
		b.shift = append(b.shift, float32(maxLogit(z, x.mask)))
		o, r, done, err := env.Step(act)
		if err != nil {
			return nil, nil, 0, err
		}
		rs = append(rs, r)
		if done {
			break
		}
		obs = o
	}
	return b, rs, ent / float64(len(rs)), nil
}

// Train trains a pass-ordering agent by REINFORCE: each iteration runs Samples episodes
// per program with actions sampled from the policy, weighs each step's log-probability
// by its return to go minus a per-(program, step) moving-average baseline, adds an
// entropy bonus, and takes one Adam step on the sum over the episodes. The result
// depends only on the options.
func Train(ctx context.Context, o TrainOptions) (*Agent, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("training a gym agent: %w", err)
	}
	env, err := New(Options{MaxSteps: o.MaxSteps, Seed: o.Seed, Reward: o.Reward, Chip: o.Chip})
	if err != nil {
		return nil, err
	}
	for _, p := range o.Programs { // load every program before the first update
		if _, err := env.Reset(p); err != nil {
			return nil, fmt.Errorf("training a gym agent: %w", err)
		}
	}
	a := NewAgent(o.Seed)
	a.Meta = AgentMeta{Programs: append([]string(nil), o.Programs...), Seed: o.Seed, Iterations: o.Iterations, Samples: o.Samples, MaxSteps: o.MaxSteps, Reward: env.Options().Reward}
	baselines, err := reinforce.NewBaselines(len(o.Programs), o.Baseline)
	if err != nil {
		return nil, fmt.Errorf("training a gym agent: %w", err)
	}
	for it := 1; it <= o.Iterations; it++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rep := IterReport{Iteration: it}
		type ep struct {
			b   *episodeBatch
			rtg []float64
			pi  int
		}
		var eps []ep
		for pi, prog := range o.Programs {
			_, grs, _, err := a.rollout(env, prog, nil)
			if err != nil {
				return nil, fmt.Errorf("training a gym agent: %w", err)
			}
			for _, r := range grs {
				rep.GreedyReturn += r / float64(len(o.Programs))
			}
			rng := rand.New(rand.NewPCG(stablehash.Seeded(o.Seed).Str("gym-train").Uint64(uint64(it)).Str(prog).Sum64(), 1))
			var batch []ep
			for range o.Samples {
				b, rs, ent, err := a.rollout(env, prog, rng)
				if err != nil {
					return nil, fmt.Errorf("training a gym agent: %w", err)
				}
				rtg := make([]float64, len(rs))
				acc := 0.0
				for t := len(rs) - 1; t >= 0; t-- {
					acc += rs[t]
					rtg[t] = acc
				}
				rep.MeanReturn += acc / float64(len(o.Programs)*o.Samples)
				rep.Entropy += ent / float64(len(o.Programs)*o.Samples)
				rep.MeanSteps += float64(len(rs)) / float64(len(o.Programs)*o.Samples)
				batch = append(batch, ep{b, rtg, pi})
			}
			// Advantages against the per-(program, step) moving-average baseline of the
			// return to go (a program's first batch sets it), updated after them.
			rtgs := make([][]float64, len(batch))
			for k, e := range batch {
				rtgs[k] = e.rtg
			}
			for k, adv := range baselines.Advantages(pi, rtgs) {
				batch[k].b.weights = make([]float32, len(adv))
				for t, a := range adv {
					batch[k].b.weights[t] = float32(a)
				}
			}
			eps = append(eps, batch...)
		}
		var sum [][]float32
		for _, e := range eps {
			for t := range e.b.weights {
				e.b.weights[t] /= float32(len(eps))
			}
			loss, gs, err := a.grads(e.b, float32(o.Entropy), len(eps))
			if err != nil {
				return nil, fmt.Errorf("training a gym agent: %w", err)
			}
			rep.Loss += loss
			sum = reinforce.AddGrads(sum, gs)
		}
		a.step(sum, o.LR)
		a.Meta.History = append(a.Meta.History, rep)
		if o.Progress != nil {
			o.Progress(rep)
		}
	}
	return a, nil
}
