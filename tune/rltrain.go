package tune

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/internal/stablehash"
	"github.com/tpucost/tpucost/nn/rl"
	"github.com/tpucost/tpucost/tpusim"
)

// TrainPolicyOptions configure TrainPolicy.
type TrainPolicyOptions struct {
	Chip     tpusim.Chip // the target and the simulator; required
	Seed     int64       // initial weights and action sampling
	Episodes int         // required > 0; one episode samples every program once
	// Kinds are the decisions the policy trains on: layout, fusion or both (default
	// both, RLKinds).
	Kinds []compiler.Kind
	// Samples is the number of configs sampled per program per episode (default 8).
	Samples int
	// LR is Adam's learning rate (default 0.01).
	LR float64
	// Baseline is the decay of the per-program moving-average reward baseline (default 0.8).
	Baseline float64
	// Workers compile and simulate samples in parallel (default GOMAXPROCS); results do
	// not depend on it.
	Workers int
	// Progress, if set, is called after each episode.
	Progress func(EpisodeReport)
}

// EpisodeReport is one episode of policy training. Rewards are log(default_ns /
// sample_ns), averaged over the episode's samples of every program.
type EpisodeReport struct {
	Episode     int     `json:"episode"` // 1-based
	Loss        float64 `json:"loss"`    // REINFORCE surrogate loss, summed over programs
	MeanReward  float64 `json:"mean_reward"`
	GreedyMean  float64 `json:"greedy_reward"`     // reward of the policy's most likely config, mean over programs
	MeanEntropy float64 `json:"mean_entropy_nats"` // per decision (layout and fusion)
}

func (o TrainPolicyOptions) withDefaults() (TrainPolicyOptions, error) {
	if err := o.Chip.Validate(); err != nil {
		return o, err
	}
	if o.Episodes <= 0 {
		return o, fmt.Errorf("episodes must be positive, got %d", o.Episodes)
	}
	if o.Kinds == nil {
		o.Kinds = RLKinds()
	}
	if err := checkRLKinds(o.Kinds); err != nil {
		return o, err
	}
	if o.Samples == 0 {
		o.Samples = 8
	}
	if o.Samples < 2 {
		return o, fmt.Errorf("samples per episode must be at least 2, got %d", o.Samples)
	}
	if o.LR == 0 {
		o.LR = 0.01
	}
	if o.LR < 0 || math.IsNaN(o.LR) {
		return o, fmt.Errorf("learning rate must be positive, got %g", o.LR)
	}
	if o.Baseline == 0 {
		o.Baseline = 0.8
	}
	if o.Baseline < 0 || o.Baseline >= 1 {
		return o, fmt.Errorf("baseline decay must be in [0, 1), got %g", o.Baseline)
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	return o, nil
}

// rlEnv is one training problem: a program's decisions and a reward for sampled actions
// (K at a time, evaluated in parallel by the environment).
type rlEnv interface {
	decisions() *decisions
	rewards(ctx context.Context, acts []action) ([]float64, error)
}

// simEnv is a zoo program on the simulator: reward log(default_ns / ns), ns the
// simulator's noiseless time of the sampled config compiled with candidate repair from
// the default compile.
type simEnv struct {
	cc      *compilerCtx
	chip    tpusim.Chip
	base    *candidate
	d       *decisions
	defNs   float64
	workers int
	cache   map[string]float64 // program fingerprint -> ns
}

func newSimEnv(m *hlo.Module, chip tpusim.Chip, kinds []compiler.Kind, workers int) (*simEnv, error) {
	cc := &compilerCtx{mod: m, opts: compiler.Options{Target: chip.Target, Kernels: &compiler.KernelCache{}}, sim: tpusim.Version, chip: chip.Name}
	base, err := cc.compile(nil)
	if err != nil {
		return nil, fmt.Errorf("%s: default compile: %w", m.Name, err)
	}
	g, err := programGraph(cc, base.cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.Name, err)
	}
	d, err := newDecisions(g, base.space, newKindSet(kinds), chip.Target)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.Name, err)
	}
	pt, err := tpusim.Simulate(base.prog, chip)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.Name, err)
	}
	return &simEnv{cc: cc, chip: chip, base: base, d: d, defNs: pt.TotalNs, workers: workers, cache: map[string]float64{}}, nil
}

func (e *simEnv) decisions() *decisions { return e.d }

func (e *simEnv) rewards(ctx context.Context, acts []action) ([]float64, error) {
	cands := make([]*candidate, len(acts))
	ns := make([]float64, len(acts))
	err := parallel(ctx, e.workers, len(acts), func(i int) error {
		c, err := e.cc.compile(e.d.apply(e.base.cfg, acts[i]))
		if err != nil {
			return err
		}
		cands[i] = c
		ns[i] = math.NaN()
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, c := range cands {
		if v, ok := e.cache[c.fp]; ok {
			ns[i] = v
		}
	}
	err = parallel(ctx, e.workers, len(acts), func(i int) error {
		if !math.IsNaN(ns[i]) {
			return nil
		}
		pt, err := tpusim.Simulate(cands[i].prog, e.chip)
		if err != nil {
			return fmt.Errorf("simulating %s: %w", e.cc.mod.Name, err)
		}
		ns[i] = pt.TotalNs
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(acts))
	for i, c := range cands {
		e.cache[c.fp] = ns[i]
		out[i] = math.Log(e.defNs / ns[i])
	}
	return out, nil
}

// TrainPolicy trains a layout and fusion policy by REINFORCE with a per-program
// moving-average baseline on programs mods: each episode samples Samples configs (the
// decisions of o.Kinds) per program from the policy, simulates them (reward log(default_ns / ns)), and takes one Adam step on
// the surrogate loss summed over the programs. The result depends only on the inputs
// and the options, not on Workers.
func TrainPolicy(ctx context.Context, mods []*hlo.Module, o TrainPolicyOptions) (*Policy, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("training a policy: %w", err)
	}
	if len(mods) == 0 {
		return nil, errors.New("training a policy: no programs")
	}
	envs := make([]rlEnv, len(mods))
	var names []string
	for i, m := range mods {
		env, err := newSimEnv(m, o.Chip, o.Kinds, o.Workers)
		if err != nil {
			return nil, fmt.Errorf("training a policy: %w", err)
		}
		envs[i] = env
		names = append(names, m.Name)
	}
	p := NewPolicy(o.Seed)
	p.Meta = PolicyMeta{Programs: names, Kinds: slices.Clone(o.Kinds), Seed: o.Seed, Episodes: o.Episodes, Samples: o.Samples, Chip: o.Chip.Name}
	hist, err := trainPolicy(ctx, p, envs, o)
	if err != nil {
		return nil, fmt.Errorf("training a policy: %w", err)
	}
	p.Meta.History = hist
	return p, nil
}

// rlSample is one sampled config of a program's decisions: an episode of one step for
// the shared training loop (nn/rl).
type rlSample struct {
	d   *decisions
	pr  *dist // the policy's distribution it was drawn from
	act action
}

// policyEnvs are training problems as an rl.Env of the policy being trained: a batch is
// Samples configs sampled from the policy with a seed of (seed, episode, program), and
// the greedy config (reported), rewarded together by the problem's env.
type policyEnvs struct {
	p       *Policy
	envs    []rlEnv
	samples int
	seed    int64
}

func (t *policyEnvs) Problems() int { return len(t.envs) }

func (t *policyEnvs) Sample(ctx context.Context, ep, i int) (rl.Batch[*rlSample], error) {
	var out rl.Batch[*rlSample]
	env := t.envs[i]
	d := env.decisions()
	if d.n() == 0 {
		return out, nil
	}
	pr, err := t.p.probs(d)
	if err != nil {
		return out, err
	}
	rng := rand.New(rand.NewPCG(stablehash.Seeded(t.seed).Str("rl-train").Uint64(uint64(ep)).Uint64(uint64(i)).Sum64(), 1))
	acts := make([]action, t.samples+1)
	for k := range t.samples {
		acts[k] = sampleAction(rng, d, pr)
	}
	acts[t.samples] = greedyAction(d, pr)
	rs, err := env.rewards(ctx, acts)
	if err != nil {
		return out, err
	}
	out.Greedy = []float64{rs[t.samples]}
	for k := range t.samples {
		out.Episodes = append(out.Episodes, &rlSample{d: d, pr: pr, act: acts[k]})
		out.Rewards = append(out.Rewards, []float64{rs[k]})
	}
	return out, nil
}

// report is the episode's EpisodeReport from its trained batches.
func (t *policyEnvs) report(ep int, done []rl.Trained[*rlSample]) EpisodeReport {
	rep := EpisodeReport{Episode: ep}
	nDec := 0
	for _, b := range done {
		d := b.Episodes[0].d
		mean := 0.0
		for _, r := range b.Rewards {
			mean += r[0] / float64(len(b.Rewards))
		}
		for _, pt := range b.Parts {
			rep.Loss += pt.Loss
		}
		rep.MeanReward += mean
		rep.GreedyMean += b.Greedy[0]
		rep.MeanEntropy += d.entropy(b.Episodes[0].pr)
		nDec += d.n()
	}
	rep.MeanReward /= float64(len(t.envs))
	rep.GreedyMean /= float64(len(t.envs))
	if nDec > 0 {
		rep.MeanEntropy /= float64(nDec)
	}
	return rep
}

// trainPolicy runs o.Episodes episodes of REINFORCE on envs (nn/rl's loop, shared with
// the gym's agent), updating p in place.
func trainPolicy(ctx context.Context, p *Policy, envs []rlEnv, o TrainPolicyOptions) ([]EpisodeReport, error) {
	t := &policyEnvs{p: p, envs: envs, samples: o.Samples, seed: o.Seed}
	var hist []EpisodeReport
	err := rl.Train(ctx, rl.Policy[*rlSample](p), rl.Env[*rlSample](t), rl.Options[*rlSample]{
		Iterations: o.Episodes, LR: o.LR, Baseline: o.Baseline,
		Progress: func(ep int, done []rl.Trained[*rlSample]) error {
			rep := t.report(ep, done)
			hist = append(hist, rep)
			if o.Progress != nil {
				o.Progress(rep)
			}
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	return hist, nil
}

// entropy is the summed entropy of pr's decisions, in nats.
func (d *decisions) entropy(pr *dist) float64 {
	h := 0.0
	for _, q := range pr.fuse {
		if q > 0 && q < 1 {
			h -= q*math.Log(q) + (1-q)*math.Log(1-q)
		}
	}
	for _, q := range pr.layout {
		if q > 0 {
			h -= q * math.Log(q)
		}
	}
	return h
}
