package tune

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/zoo"
)

// # Shape-generic tuning (after DietCode, Zheng et al., MLSys 2022)
//
// RunShapes tunes one source at several sizes of a dynamic dimension in one search. A
// candidate is a shape-generic config: a config of the program at the largest listed
// size (the reference shape, the padded extent every smaller shape fits in), read by
// name rather than by kernel key, since a kernel's key changes with its shape:
//
//   - layout entries by instruction name and fusion entries by edge name, as they are
//     (the zoo builds every size with the same names);
//   - tiles by kernel name, relative to the padded extent: at another size, the kernel
//     of the same name takes the share of each dimension's padded extent the reference
//     kernel's tile takes (scaleTile), rounded to the nearest of its valid tile options
//     (nearestTile: per dimension in log2 of the size, ties to the first option in
//     TileOptions' order), so a tile that no longer fits (VMEM) gives way to the nearest
//     that does;
//   - flags by kernel name, applied where they are among the kernel's valid options for
//     its tile, else the kernel keeps its default flags.
//
// Every candidate is therefore valid at every listed size (candidate repair compiles it
// there). The search is one of the joint strategies over the reference shape's space;
// a candidate's value is the mean over sizes of its measured time at that size over the
// measured time of the starting config at that size, so every size weighs the same.
// Evaluating a candidate measures it at every size: the budget counts those
// measurements (a candidate at n sizes costs n; a search stops when fewer than n are
// left). Per size, the result is the fastest program measured at that size over all
// candidates, confirmed against that size's default compile (Confirmation): no size is
// ever slower than its default.
//
// # Dispatch
//
// A size between the listed ones runs the config of the smallest listed size at or above
// it, padded to that size (DietCode's dispatcher picks the micro-kernel of the bucket a
// shape falls in); a size above the largest listed one has no config (DispatchIndex).

// ShapeResult is the result of a shape-generic run at one size.
type ShapeResult struct {
	Value     int     `json:"value"`
	Program   string  `json:"program"`
	DefaultNs float64 `json:"default_ns"` // noiseless time of the default compile at this size
	TunedNs   float64 `json:"tuned_ns"`   // noiseless time of the kept program
	Speedup   float64 `json:"speedup"`    // DefaultNs / TunedNs
	// Confirmation is the per-size check against the default compile.
	Confirmation Confirmation `json:"confirmation"`
	// Config is the kept program's effective config at this size: `tpucost sim SRC
	// --shapes NAME=V --config F` reproduces it.
	Config *compiler.Config `json:"config"`
}

// PerShapeResult is one size of the per-shape baseline.
type PerShapeResult struct {
	Value   int     `json:"value"`
	TunedNs float64 `json:"tuned_ns"`
	Speedup float64 `json:"speedup"`
	// MeasurementsToBest is how many measurements the size's own search had taken when
	// it measured the program it returned.
	MeasurementsToBest int `json:"measurements_to_best"`
}

// PerShapeReport is the baseline of a shape-generic run: each size tuned on its own with
// the same strategy, seed and budget.
type PerShapeReport struct {
	Measurements int `json:"measurements"` // spent over all sizes
	// MeasurementsToBest sums the sizes' measurements to their best: what per-shape
	// tuning would cost if each search knew when to stop.
	MeasurementsToBest int              `json:"measurements_to_best"`
	MeanSpeedup        float64          `json:"mean_speedup"`
	Shapes             []PerShapeResult `json:"shapes"`
}

// ShapesReport is the result of a shape-generic run (RunShapes).
type ShapesReport struct {
	Program   string `json:"program"` // the program tuned (its SRC); shapes[].program is each size's
	Dim       string `json:"dim"`
	Chip      string `json:"chip"`
	Simulator string `json:"simulator"`
	Strategy  string `json:"strategy"`
	Seed      int64  `json:"seed"`
	Budget    int    `json:"budget"`
	// Measurements are the simulator measurements of the search, over all sizes.
	Measurements int `json:"measurements"`
	// Candidates is the number of distinct shape-generic configs measured.
	Candidates int `json:"candidates"`
	// ModelGuided says a learned model ranked the candidates (Options.GraphModel): the
	// search ran on its predictions at every size (ModelEvaluations distinct configs, at
	// most Options.ModelEvals / sizes: each is one program per size) and only its top k
	// were measured.
	ModelGuided      bool          `json:"model_guided"`
	ModelEvaluations int           `json:"model_evaluations"`
	Shapes           []ShapeResult `json:"shapes"`
	MeanSpeedup      float64       `json:"mean_speedup"`
	// Dispatch states the rule that picks a config for a size (DispatchIndex).
	Dispatch  string          `json:"dispatch"`
	HardwareS float64         `json:"hardware_s"`
	WallS     float64         `json:"wall_s"`
	PerShape  *PerShapeReport `json:"per_shape,omitempty"`
}

// dispatchRule is ShapesReport.Dispatch's statement of Dispatch.
const dispatchRule = "the config of the smallest listed value >= the size (padded to it); sizes above the largest listed value have none"

// DispatchIndex returns the index in r.Shapes of the config a size v runs: the smallest listed
// value at or above v. A v below 1 or above the largest listed value is an error.
func (r *ShapesReport) DispatchIndex(v int) (int, error) {
	if v < 1 {
		return 0, fmt.Errorf("%s=%d: a size is at least 1", r.Dim, v)
	}
	for i, s := range r.Shapes {
		if s.Value >= v {
			return i, nil
		}
	}
	last := 0
	if n := len(r.Shapes); n > 0 {
		last = r.Shapes[n-1].Value
	}
	return 0, fmt.Errorf("%s=%d is above the largest tuned size %d: no config to dispatch", r.Dim, v, last)
}

// shapeCtx is one size of a shape-generic run.
type shapeCtx struct {
	value  int
	cc     *compilerCtx
	def    *candidate // the default compile at this size
	scale  float64    // measured time of the starting config at this size (NaN until measured)
	best   *candidate // fastest program measured at this size
	bestNs float64    // its measured time
}

// RunShapes tunes src (a zoo model or an HLO file) at every size of list in one
// shape-generic search (see the section above) within opts.Budget measurements, and,
// with compare, tunes each size on its own (Run, same options) as the baseline. The XTAT
// strategy (the default) runs as simulated annealing over the joint space of
// opts.Kinds: its kernel phases time single kernels of one shape. With an absolute
// model (opts.GraphModel) the search runs on the model's predictions at every size and
// only its top opts.TopKGraph configs are measured (modelGuidedShapes); the baseline is
// then model-guided too. The rl strategy, a relative (kernel) model, a store, opts.Shapes
// and a non-default fusion rule or staging mode are refused: they are not shape-generic.
func RunShapes(ctx context.Context, src string, list zoo.ShapeList, opts Options, compare bool) (*ShapesReport, error) {
	return runShapes(ctx, src, list, opts, compare, nil)
}

// runShapes is RunShapes; with counts (one per size), a candidate's value is the
// count-weighted sum of its times over the same sum for the starting config (a ragged
// batch's time relative to the start, RunRagged) in place of the mean of per-size ratios.
func runShapes(ctx context.Context, src string, list zoo.ShapeList, opts Options, compare bool, counts []int) (*ShapesReport, error) {
	t0 := time.Now()
	if counts != nil && len(counts) != len(list.Values) {
		return nil, fmt.Errorf("shape-generic tuning: %d counts for %d sizes", len(counts), len(list.Values))
	}
	errFusion, errPolicy := genericRefusal("shape-generic tuning", "each size's default compile", opts)
	switch {
	case len(list.Values) == 0:
		return nil, errors.New("shape-generic tuning: no sizes")
	case errFusion != nil:
		return nil, errFusion
	case opts.Staging != compiler.StagingOff:
		return nil, fmt.Errorf("shape-generic tuning starts from each size's default compile: --staging %s is not supported here (drop --staging)", opts.Staging)
	case errPolicy != nil:
		return nil, errPolicy
	case opts.KernelModel != nil:
		return nil, errors.New("shape-generic tuning ranks whole programs at every size: give --model an absolute (fusion/layout) model, not a relative (tile/flags) one")
	case opts.GraphModel != nil && counts != nil:
		return nil, errors.New("tuning a ragged batch measures every candidate on the simulator: a learned model is not used (drop --model)")
	case opts.Store != nil:
		return nil, errors.New("shape-generic tuning does not read or record a config store (drop --store)")
	case opts.Shapes != "":
		return nil, errors.New("shape-generic tuning: give the sizes as the list, not as Options.Shapes")
	}
	opts.Strategy = genericStrategy(opts.Strategy)
	o, err := opts.resolve()
	if err != nil {
		return nil, fmt.Errorf("tuning %s at %s: %w", src, list, err)
	}
	if o.Budget < len(list.Values) {
		return nil, &OptionError{Field: "Budget", Value: fmt.Sprint(o.Budget), Want: fmt.Sprintf("at least the number of sizes, %d (a candidate is measured at every size)", len(list.Values))}
	}
	sim, err := tpusim.New(o.Chip, tpusim.Options{NoiseSigma: o.Noise, Runs: o.Runs, Seed: o.Seed})
	if err != nil {
		return nil, err
	}
	shapes := make([]*shapeCtx, len(list.Values))
	for i, v := range list.Values {
		m, err := zoo.ResolveShapesContext(ctx, src, list.At(v))
		if err != nil {
			return nil, err
		}
		cc := &compilerCtx{mod: m, opts: compiler.Options{Target: o.Chip.Target, Kernels: &compiler.KernelCache{}}, sim: tpusim.Version, chip: o.Chip.Name}
		def, err := cc.compile(nil)
		if err != nil {
			return nil, fmt.Errorf("tuning %s: default compile: %w", m.Name, err)
		}
		if len(def.prog.Kernels) == 0 {
			return nil, fmt.Errorf("tuning %s: it compiles to no kernels, nothing to tune", m.Name)
		}
		shapes[i] = &shapeCtx{value: v, cc: cc, def: def, scale: math.NaN()}
	}
	ref := shapes[len(shapes)-1]
	r := &run{opts: o, sim: sim, cc: ref.cc, workers: o.Workers, budget: o.Budget,
		progCache: map[string]float64{}, kernCache: map[string]float64{}, kernTime: map[string]float64{}, bestNs: math.Inf(1),
		graphModel: newModelScorer(o.GraphModel)}
	ge := &genericEval{r: r, shapes: shapes, counts: counts, cache: map[string]float64{}}
	r.beginPhase("shape-generic")
	modelEvals := 0
	if r.graphModel == nil {
		s := newSearch(r, ge, newKindSet(o.Kinds), "shape-generic", []*candidate{ref.def})
		if err := s.run(ctx, o.Strategy); err != nil {
			return nil, fmt.Errorf("tuning %s at %s (%s): %w", src, list, o.Strategy, err)
		}
	} else if modelEvals, err = modelGuidedShapes(ctx, r, ge, ref); err != nil {
		return nil, fmt.Errorf("tuning %s at %s (%s, model-guided): %w", src, list, o.Strategy, err)
	}
	rep := &ShapesReport{Program: src, Dim: list.Name, Chip: o.Chip.Name, Simulator: tpusim.Version, Strategy: string(o.Strategy),
		Seed: o.Seed, Budget: o.Budget, Dispatch: dispatchRule, ModelGuided: r.graphModel != nil, ModelEvaluations: modelEvals}
	for _, sh := range shapes {
		if sh.best == nil {
			return nil, fmt.Errorf("tuning %s: no program was measured at %s=%d (budget %d for %d sizes)", src, list.Name, sh.value, o.Budget, len(shapes))
		}
		keep, conf, err := r.confirm(ctx, sh.def, sh.def, sh.best)
		if err != nil {
			return nil, fmt.Errorf("tuning %s: %w", sh.cc.mod.Name, err)
		}
		defNs, err := truthNs(sh.def.prog, o.Chip)
		if err != nil {
			return nil, err
		}
		tunedNs, err := truthNs(keep.prog, o.Chip)
		if err != nil {
			return nil, err
		}
		rep.Shapes = append(rep.Shapes, ShapeResult{Value: sh.value, Program: sh.cc.mod.Name, DefaultNs: defNs, TunedNs: tunedNs,
			Speedup: defNs / tunedNs, Confirmation: conf, Config: keep.cfg.Clone()})
		rep.MeanSpeedup += defNs / tunedNs / float64(len(shapes))
	}
	rep.Measurements, rep.Candidates, rep.HardwareS = r.measurements, ge.n, r.hardwareS
	if compare {
		if rep.PerShape, err = perShape(ctx, shapes, opts); err != nil {
			return nil, err
		}
	}
	rep.WallS = time.Since(t0).Seconds()
	return rep, nil
}

// perShape tunes every size on its own (Run) with opts: the baseline of a shape-generic run.
func perShape(ctx context.Context, shapes []*shapeCtx, opts Options) (*PerShapeReport, error) {
	p := &PerShapeReport{}
	for _, sh := range shapes {
		rep, err := Run(ctx, sh.cc.mod, opts)
		if err != nil {
			return nil, fmt.Errorf("per-shape baseline: %w", err)
		}
		p.Measurements += rep.Measurements
		p.MeasurementsToBest += rep.BestAt
		p.MeanSpeedup += rep.Speedup / float64(len(shapes))
		p.Shapes = append(p.Shapes, PerShapeResult{Value: sh.value, TunedNs: rep.TunedNs, Speedup: rep.Speedup, MeasurementsToBest: rep.BestAt})
	}
	return p, nil
}

// truthNs is the simulator's noiseless time of p: an evaluation outside the budget.
func truthNs(p *compiler.Program, c tpusim.Chip) (float64, error) {
	pt, err := tpusim.Simulate(p, c)
	if err != nil {
		return 0, fmt.Errorf("timing %s: %w", p.Name, err)
	}
	if !(pt.TotalNs > 0 && pt.TotalNs < math.Inf(1)) {
		return 0, fmt.Errorf("the simulator timed %s at %g ns", p.Name, pt.TotalNs)
	}
	return pt.TotalNs, nil
}

// genericEval evaluates shape-generic candidates (configs of the reference program): each
// is applied at every size (applyGeneric) and measured there; its value is the mean over
// sizes of the measured time over the size's scale. It never measures a program twice
// (the run's program cache) and counts every measurement against the run's budget.
type genericEval struct {
	r      *run
	shapes []*shapeCtx
	counts []int              // per size, for a count-weighted value (nil: the mean of ratios)
	cache  map[string]float64 // reference fingerprint -> value
	n      int                // distinct candidates evaluated
}

func (e *genericEval) remaining() int { return e.r.left() / len(e.shapes) }
func (e *genericEval) used() int      { return e.n }
func (e *genericEval) limit() int     { return e.r.budget / len(e.shapes) }

func (e *genericEval) eval(ctx context.Context, cands []*candidate) error {
	r := e.r
	todo := toEvaluate(cands, e.cache, e.remaining())
	ns := len(e.shapes)
	at := make([]*candidate, len(todo)*ns) // at[i*ns+j]: todo[i] applied at size j
	err := parallel(ctx, r.workers, len(at), func(k int) error {
		c, sh := todo[k/ns], e.shapes[k%ns]
		if sh == e.shapes[ns-1] {
			at[k] = c // the reference size: the candidate itself
			return nil
		}
		a, err := applyGeneric(c, sh.cc)
		at[k] = a
		return err
	})
	if err != nil {
		return err
	}
	// The programs not measured before, each once, in order.
	var meas []*candidate
	seen := map[string]bool{}
	for _, a := range at {
		if _, ok := r.progCache[a.fp]; !ok && !seen[a.fp] {
			seen[a.fp] = true
			meas = append(meas, a)
		}
	}
	res := make([]tpusim.Measurement, len(meas))
	err = parallel(ctx, r.workers, len(meas), func(i int) error {
		m, err := r.sim.Measure(meas[i].prog, r.salt("program|"+meas[i].fp))
		if err != nil {
			return fmt.Errorf("measuring %s: %w", meas[i].prog.Name, err)
		}
		res[i] = m
		return nil
	})
	if err != nil {
		return err
	}
	for i, a := range meas {
		r.progCache[a.fp] = res[i].Ns
		if r.opts.measured != nil {
			r.opts.measured("program|" + a.fp)
		}
		r.measurements++
		r.progMeas++
		r.phaseMeas++
		r.hardwareS += res[i].CostS
	}
	for i, c := range todo {
		v, num, den := 0.0, 0.0, 0.0
		for j, sh := range e.shapes {
			a := at[i*ns+j]
			t := r.progCache[a.fp]
			if math.IsNaN(sh.scale) {
				sh.scale = t // the first candidate evaluated: the search's start
			}
			if sh.best == nil || t < sh.bestNs {
				sh.best, sh.bestNs = a, t
			}
			v += t / sh.scale / float64(ns)
			if e.counts != nil {
				num += float64(e.counts[j]) * t
				den += float64(e.counts[j]) * sh.scale
			}
		}
		if e.counts != nil {
			v = num / den
		}
		c.value, c.evaluated, c.fresh = v, true, true
		e.cache[c.fp] = v
		e.n++
		if v < r.bestNs {
			r.bestNs, r.bestAt = v, r.measurements
		}
	}
	fromCache(cands, e.cache) // duplicates within the batch take the value just measured
	if len(todo) > 0 {
		r.progress()
	}
	return nil
}

// applyGeneric compiles the shape-generic config of ref (a candidate of the reference
// size) at the size cc compiles: its layout and fusion entries by name, then each
// kernel's tile as the reference kernel of the same name's, scaled to its padded extents
// (scaleTile) and rounded to a valid option (nearestTile), then its flags where valid
// with that tile.
func applyGeneric(ref *candidate, cc *compilerCtx) (*candidate, error) {
	cfg := compiler.NewConfig()
	for _, k := range []compiler.Kind{compiler.KindLayout, compiler.KindFusion} {
		for _, name := range ref.cfg.Names(k) {
			e, _ := ref.cfg.Get(k, name)
			cfg.Set(k, name, e)
		}
	}
	c, err := cc.compile(cfg)
	if err != nil {
		return nil, err
	}
	byName := kernelChoices(ref.prog)
	return carryKernels(cc, cfg, c, func(names []string, _ bool) (cost.Planned, bool) {
		for _, n := range names {
			if kc, ok := byName[n]; ok {
				return kc, true
			}
		}
		return cost.Planned{}, false
	})
}

// kernelChoices maps the names of prog's kernels to their planned choices (the first
// kernel of a name).
func kernelChoices(prog *compiler.Program) map[string]cost.Planned {
	out := map[string]cost.Planned{}
	for _, k := range prog.Kernels {
		if _, ok := out[k.Name]; !ok {
			out[k.Name] = k.Choice
		}
	}
	return out
}

// carryKernels sets, in cfg (whose compile is c), each tile kernel's tile as that of the
// kernel lookup finds among its kernels' names (lookup(names, false)), scaled to its
// padded extents (scaleTile) and rounded to a valid option (nearestTile), and compiles;
// then each flags kernel's flags as lookup(names, true)'s where valid with that tile, and
// compiles again. It returns the last compile (c when nothing was set).
func carryKernels(cc *compilerCtx, cfg *compiler.Config, c *candidate, lookup func(names []string, flags bool) (cost.Planned, bool)) (*candidate, error) {
	var err error
	tiled := false
	for _, tc := range c.prog.Space.Tile {
		if kc, ok := lookup(tc.Kernels, false); ok && len(tc.Planned()) > 0 {
			if i := nearestTile(tc.Options, scaleTile(kc.Config.Tile, kc.Info, tc.Planned()[0].Info)); i >= 0 {
				cfg.Set(compiler.KindTile, tc.Key, compiler.Entry{Tile: tc.Options[i]})
				tiled = true
			}
		}
	}
	if tiled {
		if c, err = cc.compile(cfg); err != nil {
			return nil, err
		}
	}
	flagged := false
	for _, fc := range c.prog.Space.Flags {
		if kc, ok := lookup(fc.Kernels, true); ok && slices.Contains(fc.Options, kc.Config.Flags) {
			cfg.Set(compiler.KindFlags, fc.Key, compiler.Entry{Flags: kc.Config.Flags})
			flagged = true
		}
	}
	if flagged {
		return cc.compile(cfg)
	}
	return c, nil
}

// scaleTile is the reference tile t of kernel info from as a share of each dimension's
// padded extent, applied to the padded extents of kernel info to: the tile "relative to
// the padded extent" at another size. Dimensions are matched by position; a kernel of
// another rank gets t unchanged (nearestTile then finds no option of its rank).
func scaleTile(t cost.Tile, from, to *cost.KernelInfo) cost.Tile {
	if from == nil || to == nil || len(from.Dims) != len(t) || len(to.Dims) != len(t) {
		return t
	}
	out := make(cost.Tile, len(t))
	for i, x := range t {
		out[i] = max(1, int(math.Round(float64(x)*float64(paddedExtent(to.Dims[i]))/float64(paddedExtent(from.Dims[i])))))
	}
	return out
}

// paddedExtent is a tiled dimension's size rounded up to its alignment, as the tile
// options of the dimension reach it (cost.KernelInfo.Options).
func paddedExtent(d cost.IterDim) int {
	a := max(d.Align, d.Min, 1)
	return (max(d.Size, 1) + a - 1) / a * a
}

// nearestTile returns the index of the option nearest to want: the least sum over
// dimensions of |log2 option − log2 want|, ties to the first. -1 when no option has
// want's rank (the kernel changed kind between sizes).
func nearestTile(opts []cost.Tile, want cost.Tile) int {
	best, bestD := -1, math.Inf(1)
	for i, t := range opts {
		if len(t) != len(want) {
			continue
		}
		d := 0.0
		for j := range t {
			d += math.Abs(math.Log2(float64(t[j])) - math.Log2(float64(want[j])))
		}
		if d < bestD {
			best, bestD = i, d
		}
	}
	return best
}

// modelGuidedShapes is the model-guided shape-generic search (after DietCode's
// shape-generic cost model): the strategy searches the reference size's space on r's graph
// model, a candidate's value the mean over sizes of its predicted time at that size
// (applied there as genericEval applies it) over the predicted time of the size's default
// compile; then the model's best Options.TopKGraph distinct configs, the default compile
// first whatever its rank (so that a model that misjudges every change cannot make the
// result worse than where it started), are measured at every size by ge within the budget
// (a config costs one measurement per size). It returns the distinct configs the model
// scored.
func modelGuidedShapes(ctx context.Context, r *run, ge *genericEval, ref *shapeCtx) (int, error) {
	base := make([]float64, len(ge.shapes))
	for j, sh := range ge.shapes {
		v, err := r.graphModel.program(sh.def.prog)
		if err != nil {
			return 0, err
		}
		if !(v > 0) {
			return 0, fmt.Errorf("the model predicts %g ns for the default compile at %d: cannot rank candidates relative to it", v, sh.value)
		}
		base[j] = v
	}
	// Options.ModelEvals bounds the programs the model scores; each config here is one
	// program per size.
	evals := max(1, r.opts.ModelEvals/len(ge.shapes))
	me := &genericModelEval{r: r, shapes: ge.shapes, base: base, cap: evals, cache: map[string]float64{}}
	s := newSearch(r, me, newKindSet(r.opts.Kinds), "shape-generic/model", []*candidate{ref.def})
	r.scoredProgress(0, me.cap)
	if err := s.run(ctx, r.opts.Strategy); err != nil {
		return 0, err
	}
	top := survivors(me.scored, r.opts.TopKGraph)
	top = slices.DeleteFunc(top, func(c *candidate) bool { return c.fp == ref.def.fp })
	if len(top) >= r.opts.TopKGraph {
		top = top[:max(0, r.opts.TopKGraph-1)]
	}
	cands := make([]*candidate, len(top)+1)
	start := *ref.def // the search scored it: measure a fresh copy
	start.value, start.evaluated, start.fresh = 0, false, false
	cands[0] = &start
	err := parallel(ctx, r.workers, len(top), func(i int) error {
		c, err := ref.cc.compile(top[i].cfg)
		cands[i+1] = c
		return err
	})
	if err != nil {
		return 0, err
	}
	r.beginPhase("shape-generic/measure")
	if err := ge.eval(ctx, cands); err != nil {
		return 0, err
	}
	return me.n, nil
}

// genericModelEval scores shape-generic candidates with an absolute model: each applied at
// every size (applyGeneric), its value the mean over sizes of the predicted time over the
// size's base (the default compile's prediction). Its budget counts distinct configs
// scored; every scored candidate is kept (without its programs) for the top-k selection.
type genericModelEval struct {
	r      *run
	shapes []*shapeCtx
	base   []float64
	cap, n int
	cache  map[string]float64
	scored []*candidate
}

func (e *genericModelEval) remaining() int { return max(0, e.cap-e.n) }
func (e *genericModelEval) used() int      { return e.n }
func (e *genericModelEval) limit() int     { return e.cap }

func (e *genericModelEval) eval(ctx context.Context, cands []*candidate) error {
	todo := toEvaluate(cands, e.cache, e.remaining())
	ns := len(e.shapes)
	pred := make([]float64, len(todo)*ns) // pred[i*ns+j]: todo[i]'s predicted time at size j
	err := parallel(ctx, e.r.workers, len(pred), func(k int) error {
		c, sh := todo[k/ns], e.shapes[k%ns]
		a := c
		if sh != e.shapes[ns-1] { // the reference size: the candidate itself
			var err error
			if a, err = applyGeneric(c, sh.cc); err != nil {
				return err
			}
		}
		v, err := e.r.graphModel.program(a.prog)
		pred[k] = v
		return err
	})
	if err != nil {
		return err
	}
	for i, c := range todo {
		v := 0.0
		for j := range e.shapes {
			v += pred[i*ns+j] / e.base[j] / float64(ns)
		}
		c.value, c.evaluated, c.fresh = v, true, true
		e.cache[c.fp] = v
		e.n++
		e.r.modelEvals++
		e.scored = append(e.scored, &candidate{cfg: c.cfg, fp: c.fp, value: v, evaluated: true})
	}
	fromCache(cands, e.cache) // duplicates within the batch take the value just measured
	if len(todo) > 0 {
		e.r.scoredProgress(e.n, e.cap)
	}
	return nil
}
