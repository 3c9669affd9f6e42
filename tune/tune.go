// Package tune autotunes tpucost's compiler: search spaces over the per-pass configs of
// a program, search strategies, evaluators (the simulator as hardware, or a learned model
// whose top-k candidates alone are measured), the XTAT schedule, a global config store in
// SQLite, and reports.
//
// # Candidates
//
// A candidate is a compiler.Config. It is made well-formed by compiling it without Strict
// (candidate repair): entries naming nodes the program lacks are ignored, missing ones come
// from the global config store, else the defaults; the compiled program's effective
// config is the candidate from then on. Neighbours change one to three choices of the
// space around a candidate (its program's compiler.Space); crossover takes each choice
// from either parent; sampling draws every choice uniformly (layout and fusion first,
// then the tiles and flags of the kernels they make); enumeration walks the space in
// mixed radix from the incumbent.
//
// # Measurements
//
// A measurement times a whole program (tpusim.Simulator.Measure) or one kernel with one
// tile and flags (MeasureKernel). Every strategy stops at the measurement budget exactly,
// and uses all of it unless its space runs out. No program is measured twice in a run:
// programs are identified by a fingerprint of the simulator version, the chip and their
// kernels' keys, tiles and flags, and kernel measurements by kernel key, tile and flags;
// a repeat takes the cached value for free. Measurements run in parallel on
// Options.Workers goroutines; proposals are built in fixed-size batches, each with a
// random stream derived from the seed and its position, and each measurement's noise salt
// is derived from the seed and the candidate's identity, so a run's results do not depend
// on the number of workers.
//
// # Confirmation
//
// Before reporting, the search's best program, the starting program and (when a store
// made the start differ from it) the default compile are re-measured with more runs, and
// the best is kept only if it is faster beyond the noise (see Confirmation): a run never
// hands back a program slower than the default compile, or than where it started.
//
// # The XTAT schedule
//
// The default schedule (after Phothilimthana et al., PACT 2021) tunes layout and fusion
// jointly by simulated annealing on whole-program measurements, then each kernel's tile
// exhaustively, then each kernel's flags exhaustively, on single-kernel measurements,
// heaviest kernels first. The other strategies search the joint space of all four passes
// (Options.Kinds) on whole-program measurements.
//
// # Model-guided tuning
//
// With a model, strategies search on the model's predictions (Options.ModelEvals
// distinct programs), and only the top k (TopKGraph) are measured; the best measured is
// kept. Kernel-level phases rank every option of a kernel with the kernel model and
// measure its top TopKKernel. The learned model is reached only through Model.
package tune

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/internal/workers"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/zoo"
)

// Options configure a tuning run. In Run, a zero in a field that has a default (see
// Defaults) takes the default; Chip and Budget are required. Every other value must be
// valid (Validate): Run never substitutes a default for an invalid value.
type Options struct {
	Chip     tpusim.Chip // the target and the simulated hardware; required
	Strategy Strategy    // default XTAT
	Budget   int         // simulator measurements (program and kernel); required > 0
	Seed     int64       // seeds the search and the measurement noise
	Workers  int         // measurement and compile goroutines; 0 (valid): GOMAXPROCS
	// Fusion is the fusion rule of the starting program: "" or compiler.FusionXLA, the
	// default compile (the store-repaired one with a store); compiler.FusionPartition, the
	// partition-fusion config (compiler.PartitionConfig), which then leads the start
	// (the default compile competes with it, and confirmation compares against both).
	Fusion compiler.FusionRule
	// Shapes sizes the dynamic dimensions of every source RunMany resolves (a --shapes
	// value, zoo.ResolveShapes); empty: each source's own shape.
	Shapes string

	// Measurement noise of the simulated hardware (tpusim.Options): a run takes
	// true * (1 + |N(0, Noise)|) and a measurement is the min of Runs runs (default 3).
	Noise float64
	Runs  int

	// Kinds are the passes whose configs the non-XTAT strategies search; default all.
	Kinds []compiler.Kind
	// Staging is the compiler's staging mode for every compile of the run, the default
	// compile included (zero value: off, no staging edges to search). Under on or auto
	// the staging edges are searched with the other kinds (XTAT: with layout and
	// fusion, in its annealing).
	Staging compiler.StagingMode
	// GraphShare is the share of the budget XTAT gives to layout and fusion (default
	// 0.4); kernel phases get the rest, tiles and flags in proportion to their options.
	GraphShare float64
	// Batch is the number of candidates proposed and measured in parallel per step
	// (default 8). It shapes the search, so results depend on it, not on Workers.
	Batch int

	// Store is the global config store: read once (a snapshot) for candidate repair
	// before the run, and given the run's results after it. Nil for none.
	Store ConfigStore

	// GraphModel scores whole programs (an absolute model); KernelModel ranks a
	// kernel's options (absolute or relative). Either may be nil: that level is then
	// tuned on the simulator alone.
	GraphModel, KernelModel Model
	// TopKGraph and TopKKernel are how many of the model's best candidates are measured
	// (defaults 10 and 5). ModelEvals bounds the programs a model-guided search scores
	// (default DefaultModelEvals).
	TopKGraph, TopKKernel, ModelEvals int
	// UncertainSpread is the spread of a kernel model's pick (an ensemble's, see
	// SpreadModel) above which the kernel counts as uncertain and twice TopKKernel of its
	// options are measured (default 0.25: a quarter of the spread of the kernel's
	// scores).
	UncertainSpread float64
	// Policy is the layout and fusion policy of the rl strategy (LoadPolicy); required by it.
	Policy *Policy

	// Progress, if set, is called from the run's goroutine at the start of each phase,
	// after each batch of measurements and, in a search on a learned model's predictions,
	// after each batch of programs the model scores.
	Progress func(Progress)

	// measured, if set (tests), is called with the identity of every measurement taken.
	measured func(id string)
}

// Progress is a snapshot of a running search.
type Progress struct {
	Program      string
	Phase        string
	Measurements int // taken so far, all phases
	Budget       int
	BestNs       float64 // best program time measured so far (estimated in kernel phases)
	// Scored and ScoreBudget: while a search runs on a learned model's predictions
	// (Options.GraphModel), the programs (shape-generic: configs) the model has scored in
	// it so far and the most it will score; both 0 otherwise.
	Scored, ScoreBudget int
}

// PhaseReport summarizes one phase of a run.
type PhaseReport struct {
	Name             string  `json:"name"`
	Strategy         string  `json:"strategy"`
	Measurements     int     `json:"measurements"`
	ModelEvaluations int     `json:"model_evaluations,omitempty"`
	BestNs           float64 `json:"best_ns"` // measured (or estimated for kernel phases)
}

// Report is the result of tuning one program. DefaultNs and TunedNs are the simulator's
// noiseless times of the default compile (no store) and of the tuned config: an
// evaluation outside the budget, not measurements. The tuned config is the search's best
// program only if the final confirmation found it faster than the starting program (and
// the default compile) beyond the measurement noise; otherwise it is the starting
// program's, or the default compile's (see Confirmation).
type Report struct {
	Program     string  `json:"program"`
	Chip        string  `json:"chip"`
	Simulator   string  `json:"simulator"`
	Strategy    string  `json:"strategy"`
	ModelGuided bool    `json:"model_guided"`
	Seed        int64   `json:"seed"`
	Budget      int     `json:"budget"`
	Kernels     int     `json:"kernels"`
	DefaultNs   float64 `json:"default_ns"`
	StartNs     float64 `json:"start_ns"` // the store-repaired starting point
	TunedNs     float64 `json:"tuned_ns"`
	Speedup     float64 `json:"speedup"` // DefaultNs / TunedNs; 1 when NothingToTune
	// NothingToTune: the program compiles to no kernels, so no config changes it; nothing
	// was measured and the result is the default compile (0 ns, speedup 1).
	NothingToTune bool `json:"nothing_to_tune,omitempty"`
	// PolicyTrainedOn names the program of the rl policy's training set that is the same
	// model variant as this one (zoo.Variant), when there is one: the result then shows
	// the policy on a program it trained on, not on an unseen one.
	PolicyTrainedOn  string `json:"policy_trained_on,omitempty"`
	Measurements     int    `json:"measurements"`
	ProgramMeasures  int    `json:"program_measurements"`
	KernelMeasures   int    `json:"kernel_measurements"`
	ModelEvaluations int    `json:"model_evaluations"`
	// Infeasible counts the proposals dropped because the compiler could not tile them
	// (a layout or fusion choice that leaves a kernel no tile fitting VMEM): points
	// outside the space, which spend no budget.
	Infeasible int `json:"infeasible"`
	// ModelKernels counts the kernels an ensemble kernel model ranked (with a spread), and
	// UncertainKernels those of them whose pick's spread exceeded UncertainSpread, for
	// which twice TopKKernel options were measured.
	ModelKernels     int           `json:"model_kernels,omitempty"`
	UncertainKernels int           `json:"uncertain_kernels,omitempty"`
	HardwareS        float64       `json:"hardware_s"` // modelled cost of the measurements
	WallS            float64       `json:"wall_s"`
	StoreRecords     int           `json:"store_records"`
	Phases           []PhaseReport `json:"phases"`
	// Confirmation is the final check that the result is not slower than the start or
	// the default compile.
	Confirmation Confirmation `json:"confirmation"`
	// BestAt is the number of measurements the search had taken when it last measured a
	// faster program: what a search that knew when to stop would have spent (the
	// shape-generic comparison's per-shape cost, ShapesReport).
	BestAt int `json:"-"`
	// Config is the tuned program's effective config: compiling with it (Strict, no
	// store) reproduces the tuned program.
	Config *compiler.Config `json:"-"`
}

// defaultUncertainSpread is Options.UncertainSpread's default: a quarter of the spread of a
// kernel's standardized scores. On the demo's tile data an ensemble of 3 had a mean
// spread of 0.06 at its picks; the kernels above 0.25 are its few unsure ones.
const defaultUncertainSpread = 0.25

// Limits of the options (Validate). They bound what a run can be asked for, not what is
// useful: a run takes Budget measurements of Runs runs each.
const (
	maxRuns = 1000 // runs per measurement (the confirmation takes 10× that)
	// MaxWorkers bounds Workers (0, all cores, is valid too): the one rule of every
	// --workers (internal/workers).
	MaxWorkers = workers.Max
	maxBatch   = 4096
	maxNoise   = 1.0 // σ of the multiplicative noise: runs up to ~4× their true time
)

// OptionError is an invalid option: the Options field, the value given and what is valid.
type OptionError struct {
	Field string // the Options field, e.g. "TopKGraph"
	Value string // the value given
	Want  string // the valid values, e.g. "an integer >= 1"
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("%s: got %s, want %s", e.Field, e.Value, e.Want)
}

// Defaults returns the documented defaults of every option that has one (Strategy XTAT,
// Workers GOMAXPROCS, Runs 3, Kinds all, GraphShare 0.4, Batch 8, TopKGraph 10, TopKKernel
// 5, ModelEvals DefaultModelEvals; Noise 0). Chip and Budget have none and are left zero.
func Defaults() Options {
	return Options{Strategy: XTAT, Workers: runtime.GOMAXPROCS(0), Runs: 3, Kinds: compiler.Kinds(),
		GraphShare: 0.4, Batch: 8, TopKGraph: 10, TopKKernel: 5, ModelEvals: DefaultModelEvals}
}

// DefaultModelEvals is how many programs a model-guided search scores by default. A
// model's score costs milliseconds of CPU where a measurement costs seconds of hardware,
// so the search on the model runs far longer than one on the simulator could: on 12 zoo
// programs none trained on (scripts/quality.sh, budget 60, XTAT), 500 / 2,000 / 5,000
// scored programs gave a mean speedup of 1.260 / 1.318 / 1.338 (simulator-only XTAT at
// budget 300: 1.167) for 17 / 72 / 200 s of CPU in all, against 660 s of modelled
// hardware time; 2,000 is where the gain per CPU second flattens, and the first count at
// which every program reached 90% of simulator-only XTAT's gain (docs/training.md).
const DefaultModelEvals = 2000

// withDefaults gives every zero field that has a default its default (see Defaults).
// Other values, valid or not, are kept for Validate.
func (o Options) withDefaults() Options {
	d := Defaults()
	if o.Strategy == "" {
		o.Strategy = d.Strategy
	}
	if o.Workers == 0 {
		o.Workers = d.Workers
	}
	if o.Runs == 0 {
		o.Runs = d.Runs
	}
	if o.Kinds == nil {
		o.Kinds = d.Kinds
	}
	if o.GraphShare == 0 {
		o.GraphShare = d.GraphShare
	}
	if o.Batch == 0 {
		o.Batch = d.Batch
	}
	if o.TopKGraph == 0 {
		o.TopKGraph = d.TopKGraph
	}
	if o.TopKKernel == 0 {
		o.TopKKernel = d.TopKKernel
	}
	if o.UncertainSpread == 0 {
		o.UncertainSpread = defaultUncertainSpread
	}
	if o.ModelEvals == 0 {
		o.ModelEvals = d.ModelEvals
	}
	return o
}

// Validate checks every option as given, with no defaults applied: a zero where Run would
// substitute a default is invalid here, so a caller that sets every field (a command line,
// starting from Defaults) learns of a bad value instead of running with another. The one
// exception is Workers, where 0 means all cores (GOMAXPROCS), as for every command's
// --workers. An invalid numeric option or strategy is reported as an *OptionError.
func (o Options) Validate() error {
	intAtLeast1 := func(field string, v, hi int) error {
		if v >= 1 && v <= hi {
			return nil
		}
		want := "an integer >= 1"
		if hi < math.MaxInt {
			want = fmt.Sprintf("an integer in [1, %d]", hi)
		}
		return &OptionError{Field: field, Value: fmt.Sprint(v), Want: want}
	}
	for _, c := range []struct {
		field string
		v, hi int
	}{
		{"Budget", o.Budget, math.MaxInt},
		{"Runs", o.Runs, maxRuns},
		{"Batch", o.Batch, maxBatch},
		{"TopKGraph", o.TopKGraph, math.MaxInt},
		{"TopKKernel", o.TopKKernel, math.MaxInt},
		{"ModelEvals", o.ModelEvals, math.MaxInt},
	} {
		if err := intAtLeast1(c.field, c.v, c.hi); err != nil {
			return err
		}
	}
	if !(o.UncertainSpread >= 0) || math.IsInf(o.UncertainSpread, 0) {
		return &OptionError{Field: "UncertainSpread", Value: fmt.Sprint(o.UncertainSpread), Want: "a finite number >= 0"}
	}
	if o.Workers < 0 || o.Workers > MaxWorkers { // 0 is valid: all cores, as for every --workers
		return &OptionError{Field: "Workers", Value: fmt.Sprint(o.Workers), Want: workers.Want}
	}
	if !(o.Noise >= 0 && o.Noise <= maxNoise) { // also rejects NaN
		return &OptionError{Field: "Noise", Value: fmt.Sprint(o.Noise), Want: fmt.Sprintf("a number in [0, %g]", float64(maxNoise))}
	}
	if !(o.GraphShare > 0 && o.GraphShare <= 1) {
		return &OptionError{Field: "GraphShare", Value: fmt.Sprint(o.GraphShare), Want: "a number in (0, 1]"}
	}
	if _, err := ParseStrategy(string(o.Strategy)); err != nil || o.Strategy == "" {
		var names []string
		for _, st := range Strategies() {
			names = append(names, string(st))
		}
		return &OptionError{Field: "Strategy", Value: fmt.Sprintf("%q", o.Strategy), Want: "one of " + strings.Join(names, ", ")}
	}
	if o.Fusion != "" {
		if _, err := compiler.ParseFusionRule(string(o.Fusion)); err != nil {
			return &OptionError{Field: "Fusion", Value: fmt.Sprintf("%q", o.Fusion), Want: "xla or partition"}
		}
	}
	if o.Strategy == Partition && o.Fusion == compiler.FusionXLA {
		return &OptionError{Field: "Fusion", Value: `"xla"`, Want: "partition or unset with strategy partition (it starts from the partition-fusion program)"}
	}
	if len(o.Kinds) == 0 {
		return &OptionError{Field: "Kinds", Value: "none", Want: "one or more of " + KindNames(compiler.Kinds())}
	}
	for _, k := range o.Kinds {
		if !slices.Contains(compiler.Kinds(), k) {
			return &OptionError{Field: "Kinds", Value: fmt.Sprintf("%q", k), Want: "one or more of " + KindNames(compiler.Kinds())}
		}
	}
	if err := o.Chip.Validate(); err != nil {
		return fmt.Errorf("chip: %w", err)
	}
	if o.GraphModel != nil && o.GraphModel.Relative() {
		return errors.New("the graph-level model must be absolute (it sums kernel runtimes); got a relative model")
	}
	return nil
}

// resolve applies the defaults and validates.
func (o Options) resolve() (Options, error) {
	o = o.withDefaults()
	if err := o.Validate(); err != nil {
		return o, err
	}
	o.Strategy, _ = ParseStrategy(string(o.Strategy)) // its canonical spelling
	return o, nil
}

// Run tunes module m. It returns the report with the tuned config; with a store, the
// run's results are recorded in it (in one transaction, after the confirmation). m is not
// modified. When ctx is cancelled, Run stops within a batch of measurements and returns
// an error wrapping ctx.Err(); nothing is recorded.
func Run(ctx context.Context, m *hlo.Module, opts Options) (*Report, error) {
	t0 := time.Now()
	o, err := opts.resolve()
	if err != nil {
		return nil, fmt.Errorf("tuning %s: %w", m.Name, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("tuning %s: %w", m.Name, err)
	}
	sim, err := tpusim.New(o.Chip, tpusim.Options{NoiseSigma: o.Noise, Runs: o.Runs, Seed: o.Seed})
	if err != nil {
		return nil, fmt.Errorf("tuning %s: %w", m.Name, err)
	}
	var snap compiler.Store
	if o.Store != nil {
		if snap, err = o.Store.Snapshot(ctx); err != nil {
			return nil, fmt.Errorf("tuning %s: reading the config store: %w", m.Name, err)
		}
	}
	kernels := &compiler.KernelCache{}
	cc := &compilerCtx{mod: m, opts: compiler.Options{Target: o.Chip.Target, Store: snap, Kernels: kernels, Staging: o.Staging}, sim: tpusim.Version, chip: o.Chip.Name}
	def, err := cc.compileWith(nil, compiler.Options{Target: o.Chip.Target, Kernels: kernels, Staging: o.Staging})
	if err != nil {
		return nil, fmt.Errorf("tuning %s: default compile: %w", m.Name, err)
	}
	if len(def.prog.Kernels) == 0 {
		return nothingToTune(m, o, def, t0)
	}
	start := []*candidate{def}
	if snap != nil {
		c, err := cc.compile(nil)
		if err != nil {
			return nil, fmt.Errorf("tuning %s: %w", m.Name, err)
		}
		if c.fp != def.fp {
			// The store-repaired program leads; the default competes with it.
			start = []*candidate{c, def}
		}
	}
	if o.Strategy == Partition {
		o.Fusion = compiler.FusionPartition
	}
	if o.Fusion == compiler.FusionPartition {
		pcfg, _, err := compiler.PartitionConfig(m, nil, compiler.Options{Target: o.Chip.Target, Kernels: kernels})
		if err != nil {
			return nil, fmt.Errorf("tuning %s: %w", m.Name, err)
		}
		c, err := cc.compile(pcfg)
		if err != nil {
			return nil, fmt.Errorf("tuning %s: partition start: %w", m.Name, err)
		}
		if !slices.ContainsFunc(start, func(s *candidate) bool { return s.fp == c.fp }) {
			start = append([]*candidate{c}, start...)
		}
	}
	r := &run{opts: o, sim: sim, cc: cc, workers: o.Workers, budget: o.Budget,
		progCache: map[string]float64{}, kernCache: map[string]float64{}, kernTime: map[string]float64{},
		graphModel: newModelScorer(o.GraphModel), kernelModel: newModelScorer(o.KernelModel), bestNs: math.Inf(1)}
	rep := &Report{Program: m.Name, Chip: o.Chip.Name, Simulator: tpusim.Version, Strategy: string(o.Strategy),
		ModelGuided: r.graphModel != nil || r.kernelModel != nil, Seed: o.Seed, Budget: o.Budget}
	var fin *candidate
	if meth, _ := Lookup(o.Strategy); meth.Schedule() { // o.Strategy is registered (resolve)
		fin, err = r.xtat(ctx, start, rep)
	} else {
		fin, err = r.joint(ctx, start, rep)
	}
	if err != nil {
		return nil, fmt.Errorf("tuning %s (%s): %w", m.Name, o.Strategy, err)
	}
	if fin, rep.Confirmation, err = r.confirm(ctx, start[0], def, fin); err != nil {
		return nil, fmt.Errorf("tuning %s (%s): %w", m.Name, o.Strategy, err)
	}
	truth := func(p *compiler.Program) (float64, error) {
		pt, err := tpusim.Simulate(p, o.Chip)
		if err != nil {
			return 0, err
		}
		return pt.TotalNs, nil
	}
	if rep.DefaultNs, err = truth(def.prog); err != nil {
		return nil, fmt.Errorf("tuning %s: %w", m.Name, err)
	}
	if rep.StartNs, err = truth(start[0].prog); err != nil {
		return nil, fmt.Errorf("tuning %s: %w", m.Name, err)
	}
	if rep.TunedNs, err = truth(fin.prog); err != nil {
		return nil, fmt.Errorf("tuning %s: %w", m.Name, err)
	}
	for _, v := range []float64{rep.DefaultNs, rep.StartNs, rep.TunedNs} {
		if !(v > 0 && v < math.Inf(1)) { // also NaN: a report never holds one
			return nil, fmt.Errorf("tuning %s: the simulator timed a program of %d kernels at %g ns", m.Name, len(def.prog.Kernels), v)
		}
	}
	rep.Speedup = rep.DefaultNs / rep.TunedNs
	rep.Kernels = len(fin.prog.Kernels)
	rep.Measurements, rep.ProgramMeasures, rep.KernelMeasures = r.measurements, r.progMeas, r.kernMeas
	rep.ModelEvaluations, rep.HardwareS, rep.Infeasible = r.modelEvals, r.hardwareS, r.infeasible
	rep.ModelKernels, rep.UncertainKernels = r.modelKernels, r.uncertainKernels
	rep.BestAt = r.bestAt
	rep.Config = fin.cfg.Clone()
	if o.Store != nil {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("tuning %s: %w", m.Name, err)
		}
		recs := r.records(m, fin.prog)
		if err := o.Store.Record(ctx, recs); err != nil {
			return nil, fmt.Errorf("tuning %s: %w", m.Name, err)
		}
		rep.StoreRecords = len(recs)
	}
	rep.WallS = time.Since(t0).Seconds()
	return rep, nil
}

// nothingToTune is the report of a program that compiles to no kernels (only parameters,
// constants or tuples): no config changes it, so nothing is measured, the result is the
// default compile, its time (0 ns) is both default_ns and tuned_ns and the speedup is 1.
func nothingToTune(m *hlo.Module, o Options, def *candidate, t0 time.Time) (*Report, error) {
	pt, err := tpusim.Simulate(def.prog, o.Chip)
	if err != nil {
		return nil, fmt.Errorf("tuning %s: %w", m.Name, err)
	}
	return &Report{Program: m.Name, Chip: o.Chip.Name, Simulator: tpusim.Version, Strategy: string(o.Strategy),
		ModelGuided: o.GraphModel != nil || o.KernelModel != nil, Seed: o.Seed, Budget: o.Budget, NothingToTune: true,
		DefaultNs: pt.TotalNs, StartNs: pt.TotalNs, TunedNs: pt.TotalNs, Speedup: 1, Phases: []PhaseReport{},
		Confirmation: Confirmation{Outcome: NoChange, RunsEach: confirmRuns(o.Runs), Margin: confirmMargin(o.Noise, confirmRuns(o.Runs))},
		Config:       def.cfg.Clone(), WallS: time.Since(t0).Seconds()}, nil
}

// beginPhase starts a phase report.
func (r *run) beginPhase(name string) {
	r.phase, r.phaseMeas = name, 0
	r.scored, r.scoreBudget = 0, 0
	r.progress()
}

// graphSearch runs strategy st over kinds from start: on the simulator within capN
// measurements, or, with a graph model, on the model's predictions, measuring only the
// model's top k. It returns the best measured program.
func (r *run) graphSearch(ctx context.Context, st Strategy, kinds kindSet, start []*candidate, capN int, name string, rep *Report) (*candidate, error) {
	r.beginPhase(name)
	ph := PhaseReport{Name: name, Strategy: string(st)}
	var best *candidate
	if r.graphModel == nil {
		s := newSearch(r, &simEval{r: r, cap: capN}, kinds, name, start)
		if err := s.run(ctx, st); err != nil {
			return nil, err
		}
		best = s.best
	} else {
		me := &modelEval{r: r, m: r.graphModel, cap: r.opts.ModelEvals, cache: map[string]float64{}}
		s := newSearch(r, me, kinds, name+"/model", start)
		r.scoredProgress(0, me.cap)
		if err := s.run(ctx, st); err != nil {
			return nil, err
		}
		r.scored, r.scoreBudget = 0, 0 // the model's top k are measured next
		ph.ModelEvaluations = me.n
		top := survivors(me.scored, r.opts.TopKGraph)
		// The starting program is always among those measured, so that a model that
		// misjudges every change cannot make the result worse than where it started.
		if s0 := start[0]; !slices.ContainsFunc(top, func(c *candidate) bool { return c.fp == s0.fp }) {
			if len(top) >= r.opts.TopKGraph && len(top) > 0 {
				top = top[:len(top)-1]
			}
			top = append([]*candidate{s0}, top...)
		}
		cands := make([]*candidate, len(top))
		err := parallel(ctx, r.workers, len(top), func(i int) error {
			c, err := r.cc.compile(top[i].cfg)
			cands[i] = c
			return err
		})
		if err != nil {
			return nil, err
		}
		se := &simEval{r: r, cap: min(capN, r.opts.TopKGraph)}
		if err := se.eval(ctx, cands); err != nil {
			return nil, err
		}
		for _, c := range cands {
			if c.evaluated && (best == nil || c.value < best.value) {
				best = c
			}
		}
	}
	if best == nil {
		return nil, fmt.Errorf("%s: no program was measured (budget %d)", name, capN)
	}
	ph.Measurements, ph.BestNs = r.phaseMeas, best.value
	rep.Phases = append(rep.Phases, ph)
	return best, nil
}

// joint runs a non-XTAT strategy over the joint space of the configured kinds.
func (r *run) joint(ctx context.Context, start []*candidate, rep *Report) (*candidate, error) {
	return r.graphSearch(ctx, r.opts.Strategy, newKindSet(r.opts.Kinds), start, r.budget, "joint", rep)
}

// xtat runs the XTAT schedule: layout and fusion jointly by simulated annealing, then
// tiles exhaustively per kernel, then flags exhaustively per kernel. The annealing gets
// GraphShare of the budget, or more when the kernel phases need less (their work as
// measured on the starting program, with a 20% margin); the kernel phases split the rest
// in proportion to their work. Measurements still left when the kernel phases have
// exhausted their space go to a final layout and fusion annealing from the tuned program.
func (r *run) xtat(ctx context.Context, start []*candidate, rep *Report) (*candidate, error) {
	// Staging edges (none unless Options.Staging is on or auto) are left to the staging
	// pass's rule on every candidate, not annealed: as dimensions of the annealing they
	// dilute its layout and fusion moves (scripts/staging.sh --tune, budget 100, seed 1:
	// annealed, 21 of 116 zoo models tuned slower with staging auto than off, geomean
	// 1.051x, worst unet_d3_c32_r128_b8 0.744x; decided by the rule, 8 slower, geomean
	// 1.064x, worst 0.986x, each a different annealing path). The other strategies search
	// them when Options.Kinds includes staging.
	graph := kindSet{compiler.KindLayout: true, compiler.KindFusion: true}
	graphCap := max(1, int(math.Round(r.opts.GraphShare*float64(r.budget))))
	if r.graphModel != nil {
		graphCap = min(r.budget, r.opts.TopKGraph)
	} else {
		w := r.kernelWork(start[0].prog, compiler.KindTile) + r.kernelWork(start[0].prog, compiler.KindFlags)
		graphCap = max(graphCap, r.budget-int(math.Ceil(1.2*float64(w))))
	}
	inc, err := r.graphSearch(ctx, Annealing, graph, start, graphCap, "layout+fusion", rep)
	if err != nil {
		return nil, err
	}
	for _, kind := range []compiler.Kind{compiler.KindTile, compiler.KindFlags} {
		capN := r.left()
		if kind == compiler.KindTile {
			t, f := r.kernelWork(inc.prog, compiler.KindTile), r.kernelWork(inc.prog, compiler.KindFlags)
			if t+f > 0 {
				capN = int(math.Round(float64(r.left()) * float64(t) / float64(t+f)))
			}
		}
		name := string(kind)
		r.beginPhase(name)
		if inc, err = r.tuneKernels(ctx, inc, kind, capN); err != nil {
			return nil, err
		}
		rep.Phases = append(rep.Phases, PhaseReport{Name: name, Strategy: string(Exhaustive), Measurements: r.phaseMeas, BestNs: inc.value})
	}
	if r.left() > 0 && r.graphModel == nil {
		// The tuned program has not been measured whole: the refinement starts by
		// measuring it, and keeps it unless annealing finds better.
		fin, err := r.graphSearch(ctx, Annealing, graph, []*candidate{inc}, r.left(), "layout+fusion (refine)", rep)
		if err != nil {
			return nil, err
		}
		inc = fin
	}
	return inc, nil
}

// BatchReport is the result of tuning several programs.
type BatchReport struct {
	Reports        []*Report `json:"reports"`
	MeanSpeedup    float64   `json:"mean_speedup"`
	GeomeanSpeedup float64   `json:"geomean_speedup"`
	MaxSpeedup     float64   `json:"max_speedup"`
	Measurements   int       `json:"measurements"`
	HardwareS      float64   `json:"hardware_s"`
	WallS          float64   `json:"wall_s"`
}

// RunMany tunes each source (a zoo model name or an HLO file) in order with the same
// options, sharing the store: later programs start from what earlier ones learned. done,
// if set, is called after each program. When ctx is cancelled, the program being tuned
// is abandoned (nothing of it is recorded) and the error wraps ctx.Err().
func RunMany(ctx context.Context, srcs []string, opts Options, done func(*Report)) (*BatchReport, error) {
	t0 := time.Now()
	b := &BatchReport{}
	logSum := 0.0
	for _, src := range srcs {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("before tuning %s: %w", src, err)
		}
		m, err := zoo.ResolveShapesContext(ctx, src, opts.Shapes)
		if err != nil {
			return nil, err
		}
		rep, err := Run(ctx, m, opts)
		if err != nil {
			return nil, err
		}
		if opts.Strategy == RL && opts.Policy != nil {
			rep.PolicyTrainedOn, _ = zoo.SeenVariant(opts.Policy.Meta.Programs, src)
		}
		b.Reports = append(b.Reports, rep)
		b.MeanSpeedup += rep.Speedup
		logSum += math.Log(rep.Speedup)
		b.MaxSpeedup = math.Max(b.MaxSpeedup, rep.Speedup)
		b.Measurements += rep.Measurements
		b.HardwareS += rep.HardwareS
		if done != nil {
			done(rep)
		}
	}
	if n := float64(len(b.Reports)); n > 0 {
		b.MeanSpeedup /= n
		b.GeomeanSpeedup = math.Exp(logSum / n)
	}
	b.WallS = time.Since(t0).Seconds()
	return b, nil
}
