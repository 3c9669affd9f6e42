package tune

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/internal/measure"
	"github.com/tpucost/tpucost/internal/stablehash"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/zoo"
)

// # Joint micro-kernel search (RunMicro)
//
// RunMicro tunes every shape of a list jointly over micro-kernels (microkernel.go): each
// kernel family's search space is its micro-kernels (tile options with the compiler's
// default flags for each tile), shared by all shapes, and every measurement (one kernel at
// one shape, MeasureChoice: one measurement of the budget) updates one
// MicroCostModel used to predict every shape. The search runs in passes; in a pass, each
// shape in ascending order and, within it, each family (heaviest first: weight × the
// predicted time of its default) measures the first of its TopK best-predicted
// micro-kernels (and its default) that the model has not measured within a factor
// nearRatio of this shape's charge (Charge). It stops when a pass measures nothing
// (every shape's TopK are measured: the search stopped improving) or the budget is spent.
//
// The dispatch of a shape, at any point, is per family the micro-kernel of least predicted
// time among those measured and the default compile's: a micro-kernel never measured is
// never dispatched. The per-shape baseline (MicroSpec.Compare) runs the same search with a
// model per shape (a measurement informs only its own shape: Ansor tuning each shape as its
// own task), in the same interleaved passes, until it stops improving; every measurement
// is counted. The gain after each measurement (the mean over shapes of the default's
// noiseless time over the dispatched program's, from the noiseless kernel times) gives
// measurements_to_95: the measurements an arm took to reach 1 + 0.95 × (the per-shape
// baseline's final mean speedup − 1).
//
// The dispatch table (DispatchTable) is computed over every value of the range: per value,
// per family (re-keyed to the tuned family of the same computation when its name was
// measured as another one: familyAliases), the micro-kernel of least predicted time among
// the measured ones valid there and the default (dispatchFam); runs of one choice form the
// table's intervals.

// MicroSpec is what RunMicro takes beyond Options.
type MicroSpec struct {
	// Lo, Hi bound the range the dispatch table covers (each value compiled once); zero:
	// the list's smallest and largest value.
	Lo, Hi int
	// TopK is how many best-predicted micro-kernels per family and shape a search measures
	// before it stops (0: DefaultMicroTopK).
	TopK int
	// Holdout is how many values of the range not in the list range_check times (0: none).
	Holdout int
	// Compare runs the per-shape baseline (and its range_check counterpart).
	Compare bool
}

// DefaultMicroTopK is MicroSpec.TopK's default.
const DefaultMicroTopK = 3

// MicroShapeResult is the result of a micro-kernel run at one tuned shape.
type MicroShapeResult struct {
	Value     int     `json:"value"`
	Program   string  `json:"program"`
	DefaultNs float64 `json:"default_ns"` // noiseless time of the default compile
	TunedNs   float64 `json:"tuned_ns"`   // noiseless time of the dispatched program
	Speedup   float64 `json:"speedup"`
	// Config is the dispatched program's effective config: `tpucost sim SRC --shapes
	// NAME=V --config F` reproduces tuned_ns.
	Config *compiler.Config `json:"config"`
}

// MicroPerShape is the per-shape baseline of a micro-kernel run.
type MicroPerShape struct {
	Measurements     int     `json:"measurements"`
	MeasurementsTo95 int     `json:"measurements_to_95"` // -1: never reached
	MeanSpeedup      float64 `json:"mean_speedup"`
	// Shapes holds each shape's own measurements and final speedup.
	Shapes []MicroPerShapeResult `json:"shapes"`
}

// MicroPerShapeResult is one shape of the per-shape baseline.
type MicroPerShapeResult struct {
	Value        int     `json:"value"`
	Measurements int     `json:"measurements"`
	TunedNs      float64 `json:"tuned_ns"`
	Speedup      float64 `json:"speedup"`
}

// RangeCheck times the dispatch table at held-out values of the range (never measured).
type RangeCheck struct {
	Values      []int     `json:"values"`
	Speedups    []float64 `json:"speedups"` // default_ns / dispatched ns, per value
	MeanSpeedup float64   `json:"mean_speedup"`
	MinSpeedup  float64   `json:"min_speedup"`
	// PerShapeMeanSpeedup is the per-shape baseline tuned at these values (its own
	// measurements, not counted anywhere): what the dispatch is compared with. 0 without
	// the baseline.
	PerShapeMeanSpeedup float64 `json:"per_shape_mean_speedup"`
}

// MicroReport is the result of RunMicro.
type MicroReport struct {
	Program   string `json:"program"`
	Dim       string `json:"dim"`
	Chip      string `json:"chip"`
	Simulator string `json:"simulator"`
	Strategy  string `json:"strategy"` // "micro-kernel"
	Seed      int64  `json:"seed"`
	Budget    int    `json:"budget"`
	TopK      int    `json:"topk"`
	// Measurements are the joint search's kernel measurements over all shapes.
	Measurements int `json:"measurements"`
	// MeasurementsTo95 is when the joint search reached 95% of the per-shape baseline's
	// mean gain (its own final gain without the baseline); -1: never.
	MeasurementsTo95 int `json:"measurements_to_95"`
	// Target95 is that speedup: 1 + 0.95 × (reference mean speedup − 1).
	Target95 float64 `json:"target_95"`
	// MicroKernels counts the distinct micro-kernels measured.
	MicroKernels int                `json:"micro_kernels"`
	Shapes       []MicroShapeResult `json:"shapes"`
	MeanSpeedup  float64            `json:"mean_speedup"`
	// Dispatch states the dispatch rule; DispatchTable is the rule as a table.
	Dispatch      string         `json:"dispatch"`
	DispatchTable *DispatchTable `json:"dispatch_table"`
	RangeCheck    *RangeCheck    `json:"range_check"`
	PerShape      *MicroPerShape `json:"per_shape,omitempty"`
	WallS         float64        `json:"wall_s"`
}

// microDispatchRule is MicroReport.Dispatch.
const microDispatchRule = "per value of the range and kernel family (a kernel whose name was tuned as another computation: as the tuned family of its own), the measured micro-kernel (or the default) of least predicted time (dispatch_table)"

// microOpt is one micro-kernel of a family at one shape: its planned choice there.
type microOpt struct {
	mk    MicroKernel
	p     cost.Planned
	work  float64 // Charge(p)
	truth float64 // noiseless kernel time (NaN until needed)
}

// microFam is one kernel family at one shape: the kernels of one key.
type microFam struct {
	name   string // the first kernel's name: the family
	key    string
	weight float64 // runs per program run, over the kernels of the key
	opts   []microOpt
	def    int // the default compile's option
}

// microShape is one shape of a micro-kernel run.
type microShape struct {
	value int
	cc    *compilerCtx
	def   *candidate
	defNs float64
	fams  []*microFam
}

// newMicroShape compiles src at one value of the list and lists its families.
func newMicroShape(ctx context.Context, src string, list zoo.ShapeList, v int, chip tpusim.Chip, kc *compiler.KernelCache) (*microShape, error) {
	m, err := zoo.ResolveShapesContext(ctx, src, list.At(v))
	if err != nil {
		return nil, err
	}
	cc := &compilerCtx{mod: m, opts: compiler.Options{Target: chip.Target, Kernels: kc}, sim: tpusim.Version, chip: chip.Name}
	def, err := cc.compile(nil)
	if err != nil {
		return nil, fmt.Errorf("tuning %s: default compile: %w", m.Name, err)
	}
	if len(def.prog.Kernels) == 0 {
		return nil, fmt.Errorf("tuning %s: it compiles to no kernels, nothing to tune", m.Name)
	}
	defNs, err := truthNs(def.prog, chip)
	if err != nil {
		return nil, err
	}
	sh := &microShape{value: v, cc: cc, def: def, defNs: defNs}
	weight := map[string]float64{}
	chosen := map[string]cost.Planned{}
	for _, k := range def.prog.Kernels {
		weight[k.Key] += k.Weight
		if _, ok := chosen[k.Key]; !ok {
			chosen[k.Key] = k.Choice
		}
	}
	for i := range def.prog.Space.Tile {
		tc := &def.prog.Space.Tile[i]
		f := &microFam{name: tc.Kernels[0], key: tc.Key, weight: weight[tc.Key], def: -1}
		cur := chosen[tc.Key]
		for _, o := range tc.Planned() {
			if len(o.FlagOptions()) == 0 {
				continue
			}
			o, err := o.WithFlags(compiler.DefaultFlagsFor(o))
			if err != nil {
				continue
			}
			if o.Config.Tile.Equal(cur.Config.Tile) && o.Config.Flags == cur.Config.Flags {
				f.def = len(f.opts)
			}
			f.opts = append(f.opts, microOpt{mk: NewMicroKernel(f.name, o), p: o, work: Charge(o), truth: math.NaN()})
		}
		if f.def < 0 { // the default's flags are not the tile's default flags: keep it as is
			f.def = len(f.opts)
			f.opts = append(f.opts, microOpt{mk: NewMicroKernel(f.name, cur), p: cur, work: Charge(cur), truth: math.NaN()})
		}
		sh.fams = append(sh.fams, f)
	}
	return sh, nil
}

// truthOf is o's noiseless kernel time (cached).
func (o *microOpt) truthOf(chip tpusim.Chip) (float64, error) {
	if math.IsNaN(o.truth) {
		kt, err := tpusim.SimulateChoice(o.p, chip)
		if err != nil {
			return 0, err
		}
		o.truth = kt.Ns
	}
	return o.truth, nil
}

// predictAt is m's prediction for o (MicroCostModel.predictPlanned).
func predictAt(m *MicroCostModel, o *microOpt) float64 { return m.predictPlanned(o.mk, o.work) }

// nearRatio is how far (a factor of charge) a micro-kernel's observation may be from a
// shape for the search to count it as measured there and the dispatch to trust it. The
// charge carries the shape, so one measurement serves every shape within a factor 4 of
// its charge (2 octaves each side). On seed 1, 2 took 19–44% more measurements for the
// three models of docs/tuning.md and 8 ended below 95% of the per-shape gain on BERT and
// the LSTM (the carried error grows with the distance).
const nearRatio = 4

// extrapMargin is how much a micro-kernel measured only at other shapes must be predicted
// to win by to be dispatched: about the charge's error carried over a factor nearRatio of
// charge (its p90 relative error over the zoo's dynamic models is 1–2%).
const extrapMargin = 0.01

// farMargin is how much a micro-kernel measured near a shape must be predicted to beat the
// default by when the default's own micro-kernel was measured only farther than a factor
// nearRatio of charge: about three times the charge's p90 error carried within that
// factor (3.1%, TestMicroCharge), the prediction of the default being carried further.
const farMargin = 0.10

// dispatchFam is the option a family runs under model m: the default when its own
// micro-kernel was never measured (nothing to compare a change with), else of the default
// and the micro-kernels measured near this shape's charge (nearRatio), the least
// predicted, a micro-kernel not measured at this very charge taken extrapMargin slower,
// and, when the default was measured only farther than nearRatio, a change taken only
// when it is predicted to win by more than farMargin.
func dispatchFam(m *MicroCostModel, f *microFam) int {
	d := &f.opts[f.def]
	best, bestNs := f.def, predictAt(m, d)
	if !m.MeasuredNear(d.mk, d.work, nearRatio) {
		if m.Measured(d.mk) == 0 {
			return f.def // nothing measured to compare a change with: keep the default
		}
		bestNs /= 1 + farMargin
	}
	for i := range f.opts {
		if i == f.def || !m.MeasuredNear(f.opts[i].mk, f.opts[i].work, nearRatio) {
			continue
		}
		o := &f.opts[i]
		ns := predictAt(m, o)
		if !m.MeasuredNear(o.mk, o.work, 1+1e-9) {
			// Carried from other shapes: dispatched only when it wins by more than the
			// charge's error (extrapMargin).
			ns *= 1 + extrapMargin
		}
		if ns < bestNs {
			best, bestNs = i, ns
		}
	}
	return best
}

// microArm is one search (joint or per-shape) over shapes.
type microArm struct {
	shapes []*microShape
	models []*MicroCostModel // per shape (the joint arm: one model, shared)
	sim    *tpusim.Simulator
	chip   tpusim.Chip
	seed   int64
	topK   int
	shared bool // one model for every shape (the joint search)

	// count counts the arm's kernel measurements (measure.Counted over the simulator's
	// backend) against its budget: unlimited for a budget of 0 (until it stops).
	count    *measure.Budget
	meas     int // count's measurements, read after the search
	perShape []int
	disp     [][]int   // per shape, per family: the dispatched option
	deltaNs  []float64 // per shape: dispatched − default, from noiseless kernel times
	traj     []float64 // mean speedup after i measurements (traj[0]: none)
}

func newMicroArm(shapes []*microShape, shared bool, sim *tpusim.Simulator, chip tpusim.Chip, seed int64, topK, budget int) (*microArm, error) {
	limit := budget
	if budget <= 0 {
		limit = -1
	}
	a := &microArm{shapes: shapes, shared: shared, sim: sim, chip: chip, seed: seed, topK: topK, count: measure.NewBudget(limit),
		perShape: make([]int, len(shapes)), disp: make([][]int, len(shapes)), deltaNs: make([]float64, len(shapes))}
	var joint *MicroCostModel
	for range shapes {
		if !shared || joint == nil {
			joint = NewMicroCostModel(chip.Target.LaunchNs)
		}
		a.models = append(a.models, joint)
	}
	for i, sh := range shapes {
		for _, f := range sh.fams {
			for _, o := range f.opts {
				a.models[i].AddPrior(o.mk, o.p)
			}
		}
	}
	for i, sh := range shapes {
		a.disp[i] = make([]int, len(sh.fams))
		for j, f := range sh.fams {
			a.disp[i][j] = f.def
		}
	}
	a.traj = []float64{1}
	return a, nil
}

// refresh recomputes the dispatch of every shape sharing model m for family fam and
// appends the mean speedup to the trajectory.
func (a *microArm) refresh(m *MicroCostModel, fam string) error {
	for i, sh := range a.shapes {
		if a.models[i] != m {
			continue
		}
		for j, f := range sh.fams {
			if f.name != fam {
				continue
			}
			old, nw := a.disp[i][j], dispatchFam(m, f)
			if old == nw {
				continue
			}
			to, err := f.opts[old].truthOf(a.chip)
			if err != nil {
				return err
			}
			tn, err := f.opts[nw].truthOf(a.chip)
			if err != nil {
				return err
			}
			a.deltaNs[i] += f.weight * (tn - to)
			a.disp[i][j] = nw
		}
	}
	a.traj = append(a.traj, a.meanSpeedup())
	return nil
}

func (a *microArm) meanSpeedup() float64 {
	s := 0.0
	for i, sh := range a.shapes {
		s += sh.defNs / (sh.defNs + a.deltaNs[i]) / float64(len(a.shapes))
	}
	return s
}

// run runs the passes until a pass measures nothing or the budget is spent.
func (a *microArm) run(ctx context.Context) error {
	for {
		measured := false
		for i, sh := range a.shapes {
			m := a.models[i]
			fams := slices.Clone(sh.fams)
			heavy := func(f *microFam) float64 { return f.weight * predictAt(m, &f.opts[f.def]) }
			slices.SortStableFunc(fams, func(x, y *microFam) int { return cmpFloat(heavy(y), heavy(x)) })
			for _, f := range fams {
				if err := ctx.Err(); err != nil {
					return err
				}
				if a.count.Left() == 0 {
					return nil
				}
				order := make([]int, len(f.opts))
				for k := range order {
					order[k] = k
				}
				pred := make([]float64, len(f.opts))
				for k := range f.opts {
					pred[k] = predictAt(m, &f.opts[k])
				}
				slices.SortStableFunc(order, func(x, y int) int { return cmpFloat(pred[x], pred[y]) })
				cands := order[:min(a.topK, len(order))]
				if !slices.Contains(cands, f.def) {
					cands = append(cands, f.def)
				}
				for _, k := range cands {
					o := &f.opts[k]
					if m.MeasuredNear(o.mk, o.work, nearRatio) {
						continue
					}
					first := len(m.family[f.name]) == 0
					if err := a.measure(i, o); err != nil {
						return err
					}
					measured = true
					if first && a.shared {
						// The family's first micro-kernel is also measured at the shape
						// where its invocations differ most: the fixed cost needs two.
						if j, oj := a.partner(i, f.name, o); oj != nil && a.count.Left() != 0 {
							if err := a.measure(j, oj); err != nil {
								return err
							}
						}
					}
					break
				}
			}
		}
		if !measured {
			return nil
		}
	}
}

// measure measures option o at shape i, feeds the shape's model and refreshes the
// dispatch.
func (a *microArm) measure(i int, o *microOpt) error {
	sh, m := a.shapes[i], a.models[i]
	salt := stablehash.Seeded(a.seed).Str("micro|" + strconv.Itoa(sh.value) + "|" + o.mk.ID()).Sum64()
	be := measure.Count[cost.Planned](tpusim.ChoiceBackend{Sim: a.sim, Salt: func(cost.Planned) uint64 { return salt }}, a.count)
	res, err := be.Measure(o.p)
	if err != nil {
		return fmt.Errorf("measuring %s at %d: %w", o.mk.ID(), sh.value, err)
	}
	m.Observe(o.mk, o.work, res.MedianNs)
	a.meas = a.count.Used()
	a.perShape[i]++
	return a.refresh(m, o.mk.Family)
}

// partner is the shape (other than i) where o's micro-kernel's Work is farthest (in log)
// from o's, and the option there; nil when no shape runs it with other work.
func (a *microArm) partner(i int, fam string, o *microOpt) (int, *microOpt) {
	bestJ, bestD := -1, 0.0
	var best *microOpt
	for j, sh := range a.shapes {
		if j == i {
			continue
		}
		for _, f := range sh.fams {
			if f.name != fam {
				continue
			}
			for k := range f.opts {
				if f.opts[k].mk.ID() != o.mk.ID() {
					continue
				}
				if d := math.Abs(math.Log(f.opts[k].work / o.work)); d > bestD {
					bestJ, bestD, best = j, d, &f.opts[k]
				}
			}
		}
	}
	return bestJ, best
}

// to95 is the number of measurements after which the arm's speedup stays at or above
// target to the end of its search (a dispatch that reaches it and falls back has not
// reached it); -1: it ends below.
func (a *microArm) to95(target float64) int {
	n := len(a.traj)
	if a.traj[n-1] < target-1e-12 {
		return -1
	}
	i := n - 1
	for i > 0 && a.traj[i-1] >= target-1e-12 {
		i--
	}
	return i
}

// config is the dispatched config of shape i.
func (a *microArm) config(i int) *compiler.Config {
	sh := a.shapes[i]
	cfg := compiler.NewConfig()
	for j, f := range sh.fams {
		if k := a.disp[i][j]; k != f.def {
			o := f.opts[k]
			cfg.Set(compiler.KindTile, f.key, compiler.Entry{Tile: o.mk.Tile})
			cfg.Set(compiler.KindFlags, f.key, compiler.Entry{Flags: o.mk.Flags})
		}
	}
	return cfg
}

// RunMicro tunes src at every value of list jointly over micro-kernels (see the section
// above) within opts.Budget kernel measurements (0 or less: until the search stops), then
// exports the dispatch table over [spec.Lo, spec.Hi] and checks it at spec.Holdout held-out
// values. Only Chip, Budget, Seed, Noise, Runs and Workers of opts are used; a strategy other
// than the default, a model, a store or non-default fusion or staging are refused.
func RunMicro(ctx context.Context, src string, list zoo.ShapeList, opts Options, spec MicroSpec) (*MicroReport, error) {
	t0 := time.Now()
	switch {
	case len(list.Values) == 0:
		return nil, errors.New("micro-kernel tuning: no sizes")
	case opts.Strategy != "" && opts.Strategy != XTAT:
		return nil, fmt.Errorf("micro-kernel tuning runs its own joint search: drop --strategy %s", opts.Strategy)
	case opts.GraphModel != nil || opts.KernelModel != nil:
		return nil, errors.New("micro-kernel tuning uses its own micro-kernel cost model: drop --model")
	case opts.Store != nil:
		return nil, errors.New("micro-kernel tuning does not read or record a config store (drop --store)")
	case opts.Fusion != "" && opts.Fusion != compiler.FusionXLA, opts.Staging != compiler.StagingOff:
		return nil, errors.New("micro-kernel tuning starts from each size's default compile: drop --fusion and --staging")
	case spec.TopK < 0, spec.Holdout < 0:
		return nil, fmt.Errorf("micro-kernel tuning: topk %d and holdout %d must be >= 0", spec.TopK, spec.Holdout)
	}
	budget := opts.Budget
	opts.Budget = max(opts.Budget, 1)
	o, err := opts.resolve()
	if err != nil {
		return nil, fmt.Errorf("tuning %s at %s: %w", src, list, err)
	}
	if spec.TopK == 0 {
		spec.TopK = DefaultMicroTopK
	}
	lo, hi := spec.Lo, spec.Hi
	if lo == 0 && hi == 0 {
		lo, hi = list.Values[0], list.Values[len(list.Values)-1]
	}
	if lo < 1 || hi < lo || list.Values[0] < lo || list.Values[len(list.Values)-1] > hi {
		return nil, fmt.Errorf("micro-kernel tuning: the range %d..%d must be within [1, ...] and hold every listed value (%s)", lo, hi, list)
	}
	kc := &compiler.KernelCache{}
	compileAll := func(vals []int) ([]*microShape, error) {
		out := make([]*microShape, len(vals))
		err := parallel(ctx, o.Workers, len(vals), func(i int) error {
			sh, err := newMicroShape(ctx, src, list, vals[i], o.Chip, kc)
			out[i] = sh
			return err
		})
		return out, err
	}
	shapes, err := compileAll(list.Values)
	if err != nil {
		return nil, err
	}
	sim, err := tpusim.New(o.Chip, tpusim.Options{NoiseSigma: o.Noise, Runs: o.Runs, Seed: o.Seed})
	if err != nil {
		return nil, err
	}
	joint, err := newMicroArm(shapes, true, sim, o.Chip, o.Seed, spec.TopK, budget)
	if err != nil {
		return nil, err
	}
	if err := joint.run(ctx); err != nil {
		return nil, fmt.Errorf("tuning %s at %s (micro-kernels): %w", src, list, err)
	}
	rep := &MicroReport{Program: src, Dim: list.Name, Chip: o.Chip.Name, Simulator: tpusim.Version, Strategy: "micro-kernel",
		Seed: o.Seed, Budget: budget, TopK: spec.TopK, Measurements: joint.meas, Dispatch: microDispatchRule}
	rep.MicroKernels = len(joint.models[0].obs)
	for i, sh := range shapes {
		c, err := sh.cc.compile(joint.config(i))
		if err != nil {
			return nil, fmt.Errorf("tuning %s: dispatched config at %d: %w", src, sh.value, err)
		}
		ns, err := truthNs(c.prog, o.Chip)
		if err != nil {
			return nil, err
		}
		rep.Shapes = append(rep.Shapes, MicroShapeResult{Value: sh.value, Program: sh.cc.mod.Name, DefaultNs: sh.defNs, TunedNs: ns, Speedup: sh.defNs / ns, Config: c.cfg.Clone()})
		rep.MeanSpeedup += sh.defNs / ns / float64(len(shapes))
	}
	ref := rep.MeanSpeedup
	if spec.Compare {
		base, err := newMicroArm(shapes, false, sim, o.Chip, o.Seed, spec.TopK, 0)
		if err != nil {
			return nil, err
		}
		if err := base.run(ctx); err != nil {
			return nil, fmt.Errorf("per-shape baseline: %w", err)
		}
		ps := &MicroPerShape{Measurements: base.meas}
		for i, sh := range shapes {
			c, err := sh.cc.compile(base.config(i))
			if err != nil {
				return nil, fmt.Errorf("per-shape baseline at %d: %w", sh.value, err)
			}
			ns, err := truthNs(c.prog, o.Chip)
			if err != nil {
				return nil, err
			}
			ps.Shapes = append(ps.Shapes, MicroPerShapeResult{Value: sh.value, Measurements: base.perShape[i], TunedNs: ns, Speedup: sh.defNs / ns})
			ps.MeanSpeedup += sh.defNs / ns / float64(len(shapes))
		}
		ref = ps.MeanSpeedup
		rep.Target95 = 1 + 0.95*(ref-1)
		ps.MeasurementsTo95 = base.to95(rep.Target95)
		rep.PerShape = ps
	}
	rep.Target95 = 1 + 0.95*(ref-1)
	rep.MeasurementsTo95 = joint.to95(rep.Target95)

	// The dispatch table over the whole range.
	var rangeVals []int
	for v := lo; v <= hi; v++ {
		rangeVals = append(rangeVals, v)
	}
	byValue := map[int]*microShape{}
	for _, sh := range shapes {
		byValue[sh.value] = sh
	}
	var missing []int
	for _, v := range rangeVals {
		if byValue[v] == nil {
			missing = append(missing, v)
		}
	}
	extra, err := compileAll(missing)
	if err != nil {
		return nil, err
	}
	for _, sh := range extra {
		byValue[sh.value] = sh
	}
	m := joint.models[0]
	tb := &DispatchTable{Program: src, Dim: list.Name, Chip: o.Chip.Name, Lo: lo, Hi: hi}
	aliases := newFamilyAliases(shapes)
	for _, v := range rangeVals {
		for _, f := range byValue[v].fams {
			k := dispatchFam(m, aliases.aliasFam(m, f))
			tb.add(f.name, v, f.opts[k], k == f.def)
		}
	}
	tb.finish()
	rep.DispatchTable = tb

	// range_check at held-out values.
	if spec.Holdout > 0 {
		rc, err := rangeCheck(ctx, tb, byValue, list, lo, hi, spec, sim, o)
		if err != nil {
			return nil, err
		}
		rep.RangeCheck = rc
	}
	rep.WallS = time.Since(t0).Seconds()
	return rep, nil
}

// holdoutValues is a seeded sample of n values of [lo, hi] not in list (fewer when the range
// has fewer), ascending.
func holdoutValues(list zoo.ShapeList, lo, hi, n int, seed int64) []int {
	var pool []int
	for v := lo; v <= hi; v++ {
		if !slices.Contains(list.Values, v) {
			pool = append(pool, v)
		}
	}
	// A seeded partial Fisher-Yates shuffle from a stable hash stream.
	for i := 0; i < min(n, len(pool)); i++ {
		j := i + int(stablehash.Seeded(seed).Str("holdout").Uint64(uint64(i)).Sum64()%uint64(len(pool)-i))
		pool[i], pool[j] = pool[j], pool[i]
	}
	out := slices.Clone(pool[:min(n, len(pool))])
	slices.Sort(out)
	return out
}

// rangeCheck applies tb at held-out values and times the result against the default
// compile; with spec.Compare, it also tunes those values per shape for comparison.
func rangeCheck(ctx context.Context, tb *DispatchTable, byValue map[int]*microShape, list zoo.ShapeList, lo, hi int, spec MicroSpec, sim *tpusim.Simulator, o Options) (*RangeCheck, error) {
	vals := holdoutValues(list, lo, hi, spec.Holdout, o.Seed)
	rc := &RangeCheck{Values: vals, MinSpeedup: math.Inf(1)}
	if len(vals) == 0 {
		rc.MinSpeedup = 0
		return rc, nil
	}
	var held []*microShape
	for _, v := range vals {
		sh := byValue[v]
		held = append(held, sh)
		cfg, err := tb.Config(sh.def.prog, v)
		if err != nil {
			return nil, err
		}
		c, err := sh.cc.compile(cfg)
		if err != nil {
			return nil, fmt.Errorf("dispatched config at %d: %w", v, err)
		}
		ns, err := truthNs(c.prog, o.Chip)
		if err != nil {
			return nil, err
		}
		s := sh.defNs / ns
		rc.Speedups = append(rc.Speedups, s)
		rc.MeanSpeedup += s / float64(len(vals))
		rc.MinSpeedup = min(rc.MinSpeedup, s)
	}
	if spec.Compare {
		base, err := newMicroArm(held, false, sim, o.Chip, o.Seed, spec.TopK, 0)
		if err != nil {
			return nil, err
		}
		if err := base.run(ctx); err != nil {
			return nil, fmt.Errorf("per-shape baseline at held-out values: %w", err)
		}
		for i, sh := range held {
			c, err := sh.cc.compile(base.config(i))
			if err != nil {
				return nil, err
			}
			ns, err := truthNs(c.prog, o.Chip)
			if err != nil {
				return nil, err
			}
			rc.PerShapeMeanSpeedup += sh.defNs / ns / float64(len(held))
		}
	}
	return rc, nil
}
