package gym

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/compiler/opt"
	"github.com/tpucost/tpucost/internal/stablehash"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/zoo"
)

// EvalOptions configure Evaluate.
type EvalOptions struct {
	Programs []string // required; none may be a variant the agent trained on (Variant)
	// MaxSteps is the episode limit of the agent and of the searches' sequences
	// (default: the one the agent trained with).
	MaxSteps int
	// Budget is the number of compiler calls (pass runs) each of random search, greedy
	// search and the agent may spend on a program (default: NumPasses × MaxSteps, what
	// one greedy episode of one-step lookahead costs).
	Budget int
	// Seed seeds random search and the agent's sampled episodes.
	Seed int64
	// Chip is the tpusim chip preset sim_ns is simulated on (default tpusim.DefaultChip).
	Chip string
	// Verify runs hlo.Verify after every pass of the agent's episodes.
	Verify bool
	// Judge is what random search, greedy search and the agent's best prefix minimise:
	// RewardOps (the op count) or RewardTime (the simulated time on Chip); "" is the
	// measure the agent trained for (AgentMeta.Reward; ops for agents that record none).
	Judge string
	// AgentSearch is how the agent spends its budget: AgentSearchBeam (the default: a
	// beam search whose pass order is its policy's) or AgentSearchSample (its most
	// likely sequence, then sequences sampled from its policy).
	AgentSearch string
	// BeamWidth and BeamChildren configure the beam searches, the `beam` baseline's and
	// the agent's (0: DefaultBeamWidth, DefaultBeamChildren).
	BeamWidth, BeamChildren int
	// BeamLookahead is both beam searches' BeamOptions.Lookahead (0: none; gym eval's
	// default is DefaultBeamLookahead).
	BeamLookahead int
	// Progress, if set, is called after each program.
	Progress func(ProgramEval)
}

// The agent's searches (EvalOptions.AgentSearch).
const (
	AgentSearchBeam   = "beam"
	AgentSearchSample = "sample"
)

// Outcome is the result of one way of ordering the passes on a program: the op count
// (opt.OpCount) of the module it reaches, the module's simulated step time (compiled
// without further simplification and simulated on the chip), the compiler calls (pass
// runs) spent finding it and the passes of the result, in order.
type Outcome struct {
	OpCount       int      `json:"op_count"`
	SimNs         float64  `json:"sim_ns"`
	CompilerCalls int      `json:"compiler_calls"`
	Sequence      []string `json:"sequence"`
}

// ProgramEval compares the orders on one program. GainVsDefault is XLA Gym's
// "improvement in op-count reduction": (ops the agent removed − ops the default removed)
// ÷ |ops the default removed| (the magnitude, so that a default that grows the program
// gives a positive gain to an agent that shrinks it); null when the default removed
// none. SimGainVsDefault is (default sim_ns − agent sim_ns) ÷ default sim_ns.
type ProgramEval struct {
	Program        string  `json:"program"`
	InitialOpCount int     `json:"initial_op_count"`
	InitialSimNs   float64 `json:"initial_sim_ns"`
	Default        Outcome `json:"default"`
	Random         Outcome `json:"random"`
	Greedy         Outcome `json:"greedy"`
	// Beam is beam search with a random pass order (BeamSearch, RandomOrder): the
	// agent's beam search without its policy.
	Beam             Outcome  `json:"beam"`
	Agent            Outcome  `json:"agent"`
	GainVsDefault    *float64 `json:"gain_vs_default"`
	SimGainVsDefault float64  `json:"sim_gain_vs_default"`
	// DefaultWithoutCanonicalization is XLA's order without its canonicalizers
	// (opt.XLAPipelineWithoutCanonicalization: no dot-decomposer, no scatter-simplifier),
	// and GainVsDefaultWithoutCanonicalization the agent's gain over it (null when it
	// removed none): the part of the agent's gain that is not leaving dots and scatters
	// in their general forms.
	DefaultWithoutCanonicalization       Outcome  `json:"default_without_canonicalization"`
	GainVsDefaultWithoutCanonicalization *float64 `json:"gain_vs_default_without_canonicalization"`
}

// EvalReport is Evaluate's result: per program, and the means over programs.
type EvalReport struct {
	Programs []ProgramEval `json:"programs"`
	// MeanGainVsDefault is the mean of gain_vs_default over the programs where it is
	// defined; PooledGainVsDefault the same ratio of the sums over programs.
	MeanGainVsDefault    float64 `json:"mean_gain_vs_default"`
	PooledGainVsDefault  float64 `json:"pooled_gain_vs_default"`
	MeanSimGainVsDefault float64 `json:"mean_sim_gain_vs_default"`
	// The same two over DefaultWithoutCanonicalization.
	MeanGainVsDefaultWithoutCanonicalization   float64 `json:"mean_gain_vs_default_without_canonicalization"`
	PooledGainVsDefaultWithoutCanonicalization float64 `json:"pooled_gain_vs_default_without_canonicalization"`
	// The mean fraction of the initial ops each order removed.
	MeanDefaultReduction float64 `json:"mean_default_reduction"`
	MeanRandomReduction  float64 `json:"mean_random_reduction"`
	MeanGreedyReduction  float64 `json:"mean_greedy_reduction"`
	MeanBeamReduction    float64 `json:"mean_beam_reduction"`
	MeanAgentReduction   float64 `json:"mean_agent_reduction"`
	// MeanBeamGainVsDefault is mean_gain_vs_default of the `beam` baseline.
	MeanBeamGainVsDefault float64 `json:"mean_beam_gain_vs_default"`
	// JudgedBy is what the searches and the agent's best prefix minimised: "ops" or "time".
	JudgedBy string `json:"judged_by"`
	Budget   int    `json:"budget"`
	MaxSteps int    `json:"max_steps"`
	// AgentSearch is how the agent searched (EvalOptions.AgentSearch), BeamWidth and
	// BeamChildren the beam searches' settings.
	AgentSearch   string `json:"agent_search"`
	BeamWidth     int    `json:"beam_width"`
	BeamChildren  int    `json:"beam_children"`
	BeamLookahead int    `json:"beam_lookahead"`
	Chip          string `json:"chip"`
	// DefaultPipeline names the default order: XLA's CPU pipeline at XLACommit.
	DefaultPipeline string `json:"default_pipeline"`
}

// Evaluate compares, on every program, five pass orders at an equal budget of compiler
// calls (CompilerGym's leaderboard measure): XLA's own default order (opt.XLAPipeline,
// whatever it costs), random search (random sequences of MaxSteps passes, the best
// prefix found), greedy search (at each step every pass is tried and the one removing
// the most ops kept, until none removes any), beam search in a random pass order
// (BeamSearch with RandomOrder) and the agent (by default the same beam search with its
// policy's pass order; with AgentSearchSample its most likely sequence, then sequences
// sampled from its policy, the best prefix found). The best is the fewest
// ops, or, judged by time (EvalOptions.Judge, by default what the agent trained for), the
// lowest simulated time: greedy then keeps the pass that lowers the simulated time most.
// A program of a model variant the agent trained on is an error: evaluation is on
// programs never trained on.
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
	if o.MaxSteps < 1 {
		return nil, fmt.Errorf("evaluating a gym agent: max steps must be positive, got %d", o.MaxSteps)
	}
	if o.Budget == 0 {
		o.Budget = passCount() * o.MaxSteps
	}
	if o.Budget < o.MaxSteps {
		return nil, fmt.Errorf("evaluating a gym agent: a budget of %d compiler calls is less than one episode (%d steps)", o.Budget, o.MaxSteps)
	}
	if o.Chip == "" {
		o.Chip = tpusim.DefaultChip
	}
	chip, err := tpusim.Preset(o.Chip)
	if err != nil {
		return nil, fmt.Errorf("evaluating a gym agent: %w", err)
	}
	switch o.AgentSearch {
	case "":
		o.AgentSearch = AgentSearchBeam
	case AgentSearchBeam, AgentSearchSample:
	default:
		return nil, fmt.Errorf("evaluating a gym agent: agent search %q: want %s or %s", o.AgentSearch, AgentSearchBeam, AgentSearchSample)
	}
	if o.BeamWidth == 0 {
		o.BeamWidth = DefaultBeamWidth
	}
	if o.BeamChildren == 0 {
		o.BeamChildren = DefaultBeamChildren
	}
	if o.BeamLookahead < 0 {
		return nil, fmt.Errorf("evaluating a gym agent: beam lookahead %d must not be negative", o.BeamLookahead)
	}
	if o.BeamWidth < 1 || o.BeamChildren < 1 {
		return nil, fmt.Errorf("evaluating a gym agent: beam width %d and children %d must be positive", o.BeamWidth, o.BeamChildren)
	}
	switch o.Judge {
	case "":
		o.Judge = a.Meta.Reward
		if o.Judge == "" {
			o.Judge = RewardOps
		}
	case RewardOps, RewardTime:
	default:
		return nil, fmt.Errorf("evaluating a gym agent: judge %q: want %s or %s", o.Judge, RewardOps, RewardTime)
	}
	// Judged by time, the agent's episodes run under the time reward: its observations
	// then carry the simulated time of every module it reaches.
	env, err := New(Options{MaxSteps: o.MaxSteps, Verify: o.Verify, Reward: o.Judge, Chip: o.Chip})
	if err != nil {
		return nil, err
	}
	rep := &EvalReport{Budget: o.Budget, MaxSteps: o.MaxSteps, Chip: o.Chip, JudgedBy: o.Judge,
		AgentSearch: o.AgentSearch, BeamWidth: o.BeamWidth, BeamChildren: o.BeamChildren, BeamLookahead: o.BeamLookahead,
		DefaultPipeline: "XLA CPU pipeline (xla/service/cpu/cpu_compiler.cc @ " + opt.XLACommit[:12] + ")"}
	for _, prog := range o.Programs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		pe, err := evalProgram(env, a, prog, o, chip)
		if err != nil {
			return nil, fmt.Errorf("evaluating a gym agent on %s: %w", prog, err)
		}
		rep.Programs = append(rep.Programs, pe)
		if o.Progress != nil {
			o.Progress(pe)
		}
	}
	n := float64(len(rep.Programs))
	defined, definedNC, definedBeam := 0, 0, 0
	var agentRemoved, defaultRemoved, noCanonRemoved float64
	for _, p := range rep.Programs {
		if p.GainVsDefault != nil {
			rep.MeanGainVsDefault += *p.GainVsDefault
			defined++
		}
		if g, ok := GainVsDefault(p.InitialOpCount, p.Default.OpCount, p.Beam.OpCount); ok {
			rep.MeanBeamGainVsDefault += g
			definedBeam++
		}
		if p.GainVsDefaultWithoutCanonicalization != nil {
			rep.MeanGainVsDefaultWithoutCanonicalization += *p.GainVsDefaultWithoutCanonicalization
			definedNC++
		}
		agentRemoved += float64(p.InitialOpCount - p.Agent.OpCount)
		defaultRemoved += float64(p.InitialOpCount - p.Default.OpCount)
		noCanonRemoved += float64(p.InitialOpCount - p.DefaultWithoutCanonicalization.OpCount)
		rep.MeanSimGainVsDefault += p.SimGainVsDefault / n
		rep.MeanDefaultReduction += reduction(p.InitialOpCount, p.Default.OpCount) / n
		rep.MeanRandomReduction += reduction(p.InitialOpCount, p.Random.OpCount) / n
		rep.MeanGreedyReduction += reduction(p.InitialOpCount, p.Greedy.OpCount) / n
		rep.MeanBeamReduction += reduction(p.InitialOpCount, p.Beam.OpCount) / n
		rep.MeanAgentReduction += reduction(p.InitialOpCount, p.Agent.OpCount) / n
	}
	if defined > 0 {
		rep.MeanGainVsDefault /= float64(defined)
	}
	if defaultRemoved != 0 {
		rep.PooledGainVsDefault = (agentRemoved - defaultRemoved) / math.Abs(defaultRemoved)
	}
	if definedBeam > 0 {
		rep.MeanBeamGainVsDefault /= float64(definedBeam)
	}
	if definedNC > 0 {
		rep.MeanGainVsDefaultWithoutCanonicalization /= float64(definedNC)
	}
	if noCanonRemoved != 0 {
		rep.PooledGainVsDefaultWithoutCanonicalization = (agentRemoved - noCanonRemoved) / math.Abs(noCanonRemoved)
	}
	return rep, nil
}

func reduction(initial, ops int) float64 {
	if initial == 0 {
		return 0
	}
	return float64(initial-ops) / float64(initial)
}

// GainVsDefault is XLA Gym's improvement in op-count reduction of a result of ops ops
// over the default's defaultOps, from initial ops (see ProgramEval); ok=false when the
// default removed none.
func GainVsDefault(initial, defaultOps, ops int) (float64, bool) {
	d := float64(initial - defaultOps)
	if d == 0 {
		return 0, false
	}
	return (float64(initial-ops) - d) / math.Abs(d), true
}

func evalProgram(env *Env, a *Agent, prog string, o EvalOptions, chip tpusim.Chip) (ProgramEval, error) {
	if _, err := env.Reset(prog); err != nil {
		return ProgramEval{}, err
	}
	base := env.cache[prog] // loaded by Reset; never mutated
	pe := ProgramEval{Program: prog, InitialOpCount: opt.OpCount(base)}
	var err error
	if pe.InitialSimNs, err = SimNs(base, chip); err != nil {
		return pe, err
	}
	// the default: XLA's pipeline, and the same without its canonicalizers
	for _, d := range []struct {
		stages []opt.Stage
		out    *Outcome
	}{{opt.XLAPipeline(), &pe.Default}, {opt.XLAPipelineWithoutCanonicalization(), &pe.DefaultWithoutCanonicalization}} {
		m := base.Clone()
		var seq []string
		runs, err := opt.RunStages(m, d.stages, func(p opt.Pass) error { seq = append(seq, p.Name); return nil })
		if err != nil {
			return pe, fmt.Errorf("default pipeline: %w", err)
		}
		*d.out = Outcome{OpCount: opt.OpCount(m), CompilerCalls: runs, Sequence: seq}
		if d.out.SimNs, err = SimNs(m, chip); err != nil {
			return pe, err
		}
	}
	passes := opt.All()
	rng := func(what string) *rand.Rand {
		return rand.New(rand.NewPCG(stablehash.Seeded(o.Seed).Str("gym-eval").Str(what).Str(prog).Sum64(), 1))
	}
	measure := OpsMeasure()
	if o.Judge == RewardTime {
		measure = TimeMeasure(chip)
	}
	r, err := RandomSearchBy(base, passes, o.Budget, o.MaxSteps, rng("random"), measure)
	if err != nil {
		return pe, fmt.Errorf("random search: %w", err)
	}
	g, err := GreedySearchBy(base, passes, o.Budget, o.MaxSteps, measure)
	if err != nil {
		return pe, fmt.Errorf("greedy search: %w", err)
	}
	beamOpts := func(order PassOrder) BeamOptions {
		return BeamOptions{Width: o.BeamWidth, Children: o.BeamChildren, Lookahead: o.BeamLookahead, Budget: o.Budget, MaxSteps: o.MaxSteps, Order: order, Measure: measure}
	}
	b, err := BeamSearch(base, passes, beamOpts(RandomOrder(len(passes), rng("beam"))))
	if err != nil {
		return pe, fmt.Errorf("beam search: %w", err)
	}
	var ag SearchResult
	if o.AgentSearch == AgentSearchSample {
		ag, err = agentSearch(env, a, prog, o.Budget, rng("agent"), o.Judge == RewardTime)
	} else {
		ag, err = BeamSearch(base, passes, beamOpts(a.beamOrder(prog, pe.InitialOpCount, o.MaxSteps)))
	}
	if err != nil {
		return pe, fmt.Errorf("agent: %w", err)
	}
	for _, x := range []struct {
		s   SearchResult
		out *Outcome
	}{{r, &pe.Random}, {g, &pe.Greedy}, {b, &pe.Beam}, {ag, &pe.Agent}} {
		m, err := replay(base, passes, x.s.Sequence)
		if err != nil {
			return pe, err
		}
		*x.out = Outcome{OpCount: opt.OpCount(m), CompilerCalls: x.s.Calls, Sequence: names(passes, x.s.Sequence)}
		if x.out.SimNs, err = SimNs(m, chip); err != nil {
			return pe, err
		}
	}
	if g, ok := GainVsDefault(pe.InitialOpCount, pe.Default.OpCount, pe.Agent.OpCount); ok {
		pe.GainVsDefault = &g
	}
	if g, ok := GainVsDefault(pe.InitialOpCount, pe.DefaultWithoutCanonicalization.OpCount, pe.Agent.OpCount); ok {
		pe.GainVsDefaultWithoutCanonicalization = &g
	}
	if pe.Default.SimNs > 0 {
		pe.SimGainVsDefault = (pe.Default.SimNs - pe.Agent.SimNs) / pe.Default.SimNs
	}
	return pe, nil
}

// SimNs is the simulated time of one execution of m on chip: m compiled with no
// further simplification (the passes under study already ran) and simulated by tpusim.
func SimNs(m *hlo.Module, chip tpusim.Chip) (float64, error) {
	p, err := compiler.Compile(m, nil, compiler.Options{Target: chip.Target, Simplify: compiler.Simplify{None: true}})
	if err != nil {
		return 0, fmt.Errorf("compiling for the simulator: %w", err)
	}
	r, err := tpusim.Simulate(p, chip)
	if err != nil {
		return 0, fmt.Errorf("simulating: %w", err)
	}
	return r.TotalNs, nil
}

func names(passes []opt.Pass, seq []int) []string {
	out := make([]string, len(seq))
	for i, a := range seq {
		out[i] = passes[a].Name
	}
	return out
}
