package gym

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/tpucost/tpucost/internal/stablehash"
	"github.com/tpucost/tpucost/nn/rl"
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
	// Algorithm is AlgoREINFORCE (default) or AlgoPPO (nn/rl's Train).
	Algorithm string
	// Epochs and Clip are PPO's epochs per iteration and ratio clip ε (0: rl.DefaultEpochs,
	// rl.DefaultClip); REINFORCE refuses values but 0.
	Epochs int
	Clip   float64
	// Advantages is AdvantagesAuto (""; normalized under PPO, raw under REINFORCE),
	// AdvantagesNormalized (divided by their standard deviation per iteration) or
	// AdvantagesRaw.
	Advantages string
	// Progress, if set, is called after each iteration.
	Progress func(IterReport)
}

// The algorithms of TrainOptions.Algorithm, and the advantage modes of
// TrainOptions.Advantages.
const (
	AlgoREINFORCE = rl.REINFORCE
	AlgoPPO       = rl.PPO
	// AlgoEffect is a pass-effect model's (TrainEffect), not a TrainOptions algorithm.
	AlgoEffect           = "effect"
	AdvantagesAuto       = "auto"
	AdvantagesNormalized = "normalized"
	AdvantagesRaw        = "raw"
)

// IterReport is one training iteration. Returns are episode returns (the fraction of the
// initial op count removed), averaged over programs.
type IterReport struct {
	Iteration int `json:"iteration"` // 1-based
	// Loss is the REINFORCE surrogate loss (with the entropy term), summed over episodes;
	// under PPO the same form with the last epoch's weights rl.PPOWeights; for a pass-effect
	// model (AlgoEffect) the epoch's mean squared error.
	Loss         float64 `json:"loss"`
	MeanReturn   float64 `json:"mean_return"`
	GreedyReturn float64 `json:"greedy_return"` // the return of the greedy policy before the update
	Entropy      float64 `json:"mean_entropy_nats"`
	MeanSteps    float64 `json:"mean_steps"`
	// PPO only (absent under REINFORCE), at the last epoch before its step, averaged over
	// the programs: the fraction of steps whose ratio π/π_old was clipped, the mean
	// log π_old − log π of the taken actions (approximate KL), and the largest |r − 1|.
	ClipFraction float64 `json:"clip_fraction,omitempty"`
	ApproxKL     float64 `json:"approx_kl,omitempty"`
	MaxRatioDev  float64 `json:"max_ratio_deviation,omitempty"`
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
	switch o.Algorithm {
	case "", AlgoREINFORCE:
		o.Algorithm = AlgoREINFORCE
		if o.Epochs != 0 || o.Clip != 0 {
			return o, fmt.Errorf("epochs (%d) and clip (%g) are PPO's: want 0 under REINFORCE", o.Epochs, o.Clip)
		}
	case AlgoPPO:
		if o.Epochs == 0 {
			o.Epochs = rl.DefaultEpochs
		}
		if o.Epochs < 1 {
			return o, fmt.Errorf("PPO epochs must be positive, got %d", o.Epochs)
		}
		if o.Clip == 0 {
			o.Clip = rl.DefaultClip
		}
		if !(o.Clip > 0 && o.Clip < 1) {
			return o, fmt.Errorf("PPO clip must be in (0, 1), got %g", o.Clip)
		}
	default:
		return o, fmt.Errorf("unknown algorithm %q: want %s or %s", o.Algorithm, AlgoREINFORCE, AlgoPPO)
	}
	switch o.Advantages {
	case "", AdvantagesAuto:
		o.Advantages = AdvantagesRaw
		if o.Algorithm == AlgoPPO {
			o.Advantages = AdvantagesNormalized
		}
	case AdvantagesNormalized, AdvantagesRaw:
	default:
		return o, fmt.Errorf("unknown advantage mode %q: want %s, %s or %s", o.Advantages, AdvantagesAuto, AdvantagesNormalized, AdvantagesRaw)
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

// trainEnv is the gym's programs as an rl.Env of the agent being trained: a batch is a
// program's greedy episode (reported) and Samples episodes sampled with a seed of
// (seed, iteration, program).
type trainEnv struct {
	a        *Agent
	env      *Env
	programs []string
	samples  int
	seed     int64
	beta     float32
}

func (t *trainEnv) Problems() int { return len(t.programs) }

func (t *trainEnv) Sample(_ context.Context, iter, pi int) (rl.Batch[*episodeBatch], error) {
	var out rl.Batch[*episodeBatch]
	prog := t.programs[pi]
	_, grs, _, err := t.a.rollout(t.env, prog, nil)
	if err != nil {
		return out, err
	}
	out.Greedy = grs
	rng := rand.New(rand.NewPCG(stablehash.Seeded(t.seed).Str("gym-train").Uint64(uint64(iter)).Str(prog).Sum64(), 1))
	for range t.samples {
		b, rs, ent, err := t.a.rollout(t.env, prog, rng)
		if err != nil {
			return out, err
		}
		b.episodes, b.beta, b.entropy = len(t.programs)*t.samples, t.beta, ent
		out.Episodes = append(out.Episodes, b)
		out.Rewards = append(out.Rewards, rs)
	}
	return out, nil
}

// report is the iteration's IterReport from its trained batches.
func (t *trainEnv) report(it int, done []rl.Trained[*episodeBatch]) IterReport {
	rep := IterReport{Iteration: it}
	n := float64(len(t.programs) * t.samples)
	for _, b := range done {
		for _, r := range b.Greedy {
			rep.GreedyReturn += r / float64(len(t.programs))
		}
		for k, e := range b.Episodes {
			acc := 0.0
			if len(b.Returns[k]) > 0 {
				acc = b.Returns[k][0]
			}
			rep.MeanReturn += acc / n
			rep.Entropy += e.entropy / n
			rep.MeanSteps += float64(len(b.Rewards[k])) / n
		}
	}
	for _, b := range done {
		for _, p := range b.Parts {
			rep.Loss += p.Loss
		}
		rep.ClipFraction += b.Clipped / float64(len(done))
		rep.ApproxKL += b.KL / float64(len(done))
		rep.MaxRatioDev = math.Max(rep.MaxRatioDev, b.MaxRatioDev)
	}
	return rep
}

// Train trains a pass-ordering agent (nn/rl's loop, shared with tune's policy): each
// iteration runs Samples episodes per program with actions sampled from the policy and
// takes each step's return to go minus a per-(program, step) moving-average baseline as
// its advantage (divided by their standard deviation over the iteration under
// AdvantagesNormalized). REINFORCE weighs each step's log-probability by its advantage,
// adds an entropy bonus and takes one Adam step on the sum over the episodes; PPO takes
// Epochs Adam steps on the clipped surrogate of the same samples (rl.Train), the entropy
// bonus in each. The result depends only on the options.
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
	a.Meta = AgentMeta{Programs: append([]string(nil), o.Programs...), Seed: o.Seed, Iterations: o.Iterations, Samples: o.Samples, MaxSteps: o.MaxSteps, Reward: env.Options().Reward,
		Algorithm: o.Algorithm, Epochs: o.Epochs, Clip: o.Clip, NormalizedAdvantages: o.Advantages == AdvantagesNormalized}
	te := &trainEnv{a: a, env: env, programs: o.Programs, samples: o.Samples, seed: o.Seed, beta: float32(o.Entropy)}
	err = rl.Train(ctx, rl.Policy[*episodeBatch](a), rl.Env[*episodeBatch](te), rl.Options[*episodeBatch]{
		Iterations: o.Iterations, LR: o.LR, Baseline: o.Baseline,
		Algorithm: o.Algorithm, Epochs: o.Epochs, Clip: o.Clip, NormalizeAdvantages: o.Advantages == AdvantagesNormalized,
		Progress: func(it int, done []rl.Trained[*episodeBatch]) error {
			rep := te.report(it, done)
			a.Meta.History = append(a.Meta.History, rep)
			if o.Progress != nil {
				o.Progress(rep)
			}
			return nil
		},
	})
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil, err
		}
		return nil, fmt.Errorf("training a gym agent: %w", err)
	}
	return a, nil
}
