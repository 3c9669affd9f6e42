package gym

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/tpucost/tpucost/compiler/opt"
	"github.com/tpucost/tpucost/compiler/zoo"
	"github.com/tpucost/tpucost/internal/stablehash"
)

// EvalOptions configure Evaluate.
type EvalOptions struct {
	Programs []string // required; none may be a variant the agent trained on (Variant)
	// MaxSteps is the agent's episode limit (default: the one it trained with).
	MaxSteps int
	// RandomSeeds is the number of random sequences per program (default 5).
	RandomSeeds int
	// Seed seeds the random sequences.
	Seed int64
	// Verify runs hlo.Verify after every pass of the agent's episode.
	Verify bool
	// Progress, if set, is called after each program.
	Progress func(ProgramEval)
}

// ProgramEval compares pass orders on one program. Reductions are fractions of the
// initial op count (opt.OpCount) removed.
type ProgramEval struct {
	Program    string `json:"program"`
	InitialOps int    `json:"initial_ops"`
	// The agent's greedy sequence (its most likely action at every step, until it stops
	// or reaches the step limit); AgentSteps counts the passes, not the stop.
	AgentOps       int      `json:"agent_ops"`
	AgentSteps     int      `json:"agent_steps"`
	AgentSequence  []string `json:"agent_sequence"`
	AgentReduction float64  `json:"agent_reduction"`
	// The default pipeline (opt.Default: every pass in order, iterated to a fixed
	// point), and how many passes it ran.
	DefaultOps       int     `json:"default_ops"`
	DefaultSteps     int     `json:"default_steps"`
	DefaultReduction float64 `json:"default_reduction"`
	// One iteration of the default pipeline: every pass once, in order (XLA runs a
	// pipeline once; only some of its passes are fixed-point loops).
	DefaultOnceOps       int     `json:"default_once_ops"`
	DefaultOnceSteps     int     `json:"default_once_steps"`
	DefaultOnceReduction float64 `json:"default_once_reduction"`
	// The default order cut to the agent's number of passes.
	DefaultSameStepsOps       int     `json:"default_same_steps_ops"`
	DefaultSameStepsReduction float64 `json:"default_same_steps_reduction"`
	// Uniformly random passes, as many as the agent ran: mean and standard deviation
	// over the seeds.
	RandomReduction   float64 `json:"random_reduction"`
	RandomReductionSD float64 `json:"random_reduction_sd"`
}

// EvalReport is Evaluate's result: per program, and the means over programs.
type EvalReport struct {
	Programs []ProgramEval `json:"programs"`
	// Means over programs of the reductions.
	AgentReduction            float64 `json:"mean_agent_reduction"`
	DefaultReduction          float64 `json:"mean_default_reduction"`
	DefaultOnceReduction      float64 `json:"mean_default_once_reduction"`
	DefaultSameStepsReduction float64 `json:"mean_default_same_steps_reduction"`
	RandomReduction           float64 `json:"mean_random_reduction"`
	// AgentVsDefaultPct is 100 · (agent − default) / default of the mean reductions: the
	// paper's "better op-count reduction than the default ordering" (negative: worse).
	AgentVsDefaultPct float64 `json:"agent_vs_default_pct"`
	// AgentVsDefaultOncePct is the same against one iteration of the default pipeline.
	AgentVsDefaultOncePct float64 `json:"agent_vs_default_once_pct"`
	MeanAgentSteps        float64 `json:"mean_agent_steps"`
	MeanDefaultSteps      float64 `json:"mean_default_steps"`
	RandomSeeds           int     `json:"random_seeds"`
	MaxSteps              int     `json:"max_steps"`
}

// Evaluate compares, on every program, the op-count reduction of a's greedy pass
// sequence with the default pipeline's (iterated to a fixed point, and run once), with
// the default order cut to the same number of passes, and with random sequences of the
// same length. A program of a model variant the agent trained on (Variant: the same
// model as inference graph or training step, at any batch size) is an error: evaluation
// is on programs never trained on.
func Evaluate(ctx context.Context, a *Agent, o EvalOptions) (*EvalReport, error) {
	if len(o.Programs) == 0 {
		return nil, fmt.Errorf("evaluating a gym agent: no programs")
	}
	for _, p := range o.Programs {
		if t, ok := zoo.SeenVariant(a.Meta.Programs, p); ok {
			if t == p {
				return nil, fmt.Errorf("evaluating a gym agent: the agent trained on %s (evaluate on programs it never saw)", p)
			}
			return nil, fmt.Errorf("evaluating a gym agent: the agent trained on %s, the same model variant (%s) as %s (evaluate on variants it never saw)", t, zoo.Variant(p), p)
		}
	}
	if o.MaxSteps == 0 {
		o.MaxSteps = a.Meta.MaxSteps
	}
	if o.MaxSteps == 0 {
		o.MaxSteps = DefaultMaxSteps
	}
	if o.RandomSeeds == 0 {
		o.RandomSeeds = 5
	}
	if o.RandomSeeds < 1 {
		return nil, fmt.Errorf("evaluating a gym agent: random seeds must be positive, got %d", o.RandomSeeds)
	}
	env, err := New(Options{MaxSteps: o.MaxSteps, Verify: o.Verify})
	if err != nil {
		return nil, err
	}
	rep := &EvalReport{RandomSeeds: o.RandomSeeds, MaxSteps: o.MaxSteps}
	for _, prog := range o.Programs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		pe, err := evalProgram(env, a, prog, o)
		if err != nil {
			return nil, fmt.Errorf("evaluating a gym agent on %s: %w", prog, err)
		}
		rep.Programs = append(rep.Programs, pe)
		if o.Progress != nil {
			o.Progress(pe)
		}
	}
	n := float64(len(rep.Programs))
	for _, p := range rep.Programs {
		rep.AgentReduction += p.AgentReduction / n
		rep.DefaultReduction += p.DefaultReduction / n
		rep.DefaultOnceReduction += p.DefaultOnceReduction / n
		rep.DefaultSameStepsReduction += p.DefaultSameStepsReduction / n
		rep.RandomReduction += p.RandomReduction / n
		rep.MeanAgentSteps += float64(p.AgentSteps) / n
		rep.MeanDefaultSteps += float64(p.DefaultSteps) / n
	}
	if rep.DefaultReduction > 0 {
		rep.AgentVsDefaultPct = 100 * (rep.AgentReduction - rep.DefaultReduction) / rep.DefaultReduction
	}
	if rep.DefaultOnceReduction > 0 {
		rep.AgentVsDefaultOncePct = 100 * (rep.AgentReduction - rep.DefaultOnceReduction) / rep.DefaultOnceReduction
	}
	return rep, nil
}

func reduction(initial, ops int) float64 {
	if initial == 0 {
		return 0
	}
	return float64(initial-ops) / float64(initial)
}

func evalProgram(env *Env, a *Agent, prog string, o EvalOptions) (ProgramEval, error) {
	obs, err := env.Reset(prog)
	if err != nil {
		return ProgramEval{}, err
	}
	pe := ProgramEval{Program: prog, InitialOps: obs.InitialOpCount, AgentSequence: []string{}}
	for {
		act := a.Act(obs)
		next, _, done, err := env.Step(act)
		if err != nil {
			return pe, err
		}
		if act != Stop() {
			pe.AgentSteps++
		}
		pe.AgentSequence = append(pe.AgentSequence, Actions()[act])
		obs = next
		if done {
			break
		}
	}
	pe.AgentOps = obs.OpCount
	pe.AgentReduction = reduction(pe.InitialOps, pe.AgentOps)

	base := env.cache[prog] // loaded by Reset; never mutated
	m := base.Clone()
	iters, err := opt.RunToFixedPoint(m, opt.DefaultPasses(), opt.DefaultMaxIterations)
	if err != nil {
		return pe, fmt.Errorf("default pipeline: %w", err)
	}
	pe.DefaultOps = opt.OpCount(m)
	pe.DefaultSteps = iters * len(opt.DefaultPasses())
	pe.DefaultReduction = reduction(pe.InitialOps, pe.DefaultOps)

	m = base.Clone()
	if _, err := opt.Run(m, opt.DefaultPasses()...); err != nil {
		return pe, fmt.Errorf("default pipeline once: %w", err)
	}
	pe.DefaultOnceOps = opt.OpCount(m)
	pe.DefaultOnceSteps = len(opt.DefaultPasses())
	pe.DefaultOnceReduction = reduction(pe.InitialOps, pe.DefaultOnceOps)

	all := opt.All()
	run := func(seq func(i int) opt.Pass) (int, error) {
		m := base.Clone()
		for i := range pe.AgentSteps {
			p := seq(i)
			if _, err := p.Run(m); err != nil {
				return 0, fmt.Errorf("pass %s: %w", p.Name, err)
			}
		}
		return opt.OpCount(m), nil
	}
	if pe.DefaultSameStepsOps, err = run(func(i int) opt.Pass { return all[i%len(all)] }); err != nil {
		return pe, err
	}
	pe.DefaultSameStepsReduction = reduction(pe.InitialOps, pe.DefaultSameStepsOps)
	var rs []float64
	for s := range o.RandomSeeds {
		rng := rand.New(rand.NewPCG(stablehash.Seeded(o.Seed).Str("gym-random").Str(prog).Uint64(uint64(s)).Sum64(), 1))
		ops, err := run(func(int) opt.Pass { return all[rng.IntN(len(all))] })
		if err != nil {
			return pe, err
		}
		rs = append(rs, reduction(pe.InitialOps, ops))
	}
	pe.RandomReduction, pe.RandomReductionSD = meanSD(rs)
	return pe, nil
}

func meanSD(xs []float64) (float64, float64) {
	m := 0.0
	for _, x := range xs {
		m += x / float64(len(xs))
	}
	if len(xs) < 2 {
		return m, 0
	}
	v := 0.0
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return m, math.Sqrt(v / float64(len(xs)-1))
}
