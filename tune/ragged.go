package tune

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"time"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/tpusim/ragged"
	"github.com/tpucost/tpucost/zoo"
)

// # Tuning the compiled ragged program (tune --lengths; docs/ragged.md)
//
// RunRagged tunes the compiled ragged form of a zoo sequence model (bert_*, gpt2_*) over
// a batch of lengths: the program tpusim/ragged times (ragged.Parts): its ragged form at
// batch N = len(lengths) and the longest length (dense kernels), the packed program
// (packed kernels) and the batch-1 programs at each distinct padded length, compiled for
// one core and for the megacore (per-sequence kernels). A candidate is a config of the
// ragged form (the reference); every other part runs its own default compile changed
// where the candidate differs from the ragged form's default (applyDiff: those layout
// and fusion entries by name, those kernels' tiles scaled to the part's extents as a
// shape-generic config's are, their flags where valid), so the default candidate is the
// default ragged program (sim --lengths' ragged_ns) and a step of the search changes every
// part the same way. Its value is the compiled ragged timing of those programs
// (ragged.Parts.Time) plus the packing gather: the search optimizes the time the ragged
// program takes, not the padded or the ideal one.
//
// A measurement is one run of the ragged program: its noise is the simulator's
// measurement noise of the ragged form (the noisy over the true time of one Measure of the
// reference program, applied to the ragged time). A candidate whose config leaves some
// part without a valid tile, or fuses a part so that a ragged kernel has no counterpart in
// it, is infeasible: it spends its measurement and takes +Inf. The kept config is the
// fastest measured, unless its noiseless ragged time is not below the default's (then the
// default is kept: the tuned ragged time is never above the default's).

// RaggedReport is the result of tuning a ragged batch (RunRagged): the padded, ideal and
// compiled ragged times (tpusim/ragged's three times, sim --lengths) with default configs
// and with the tuned config, all noiseless simulator times at batch N = len(lengths).
type RaggedReport struct {
	Program   string `json:"program"` // the zoo model tuned (its SRC), as sim --lengths says
	Chip      string `json:"chip"`
	Simulator string `json:"simulator"`
	Lengths   []int  `json:"lengths"`
	Batch     int    `json:"batch"` // N: one run holds the whole batch
	Strategy  string `json:"strategy"`
	Seed      int64  `json:"seed"`
	Budget    int    `json:"budget"`
	// PaddedNs, IdealNs and DefaultRaggedNs are sim --lengths' padded_ns, ideal_ns and
	// ragged_ns (default configs); TunedPaddedNs, TunedIdealNs and TunedRaggedNs the same
	// three with the tuned config (padded: the ragged form compiled, the dense program at
	// the longest length; ideal: each length's dense program at batch N with the config
	// applied, Σ t(lᵢ)/N + PackNs). PackNs is the packing gather in the ideal and ragged
	// times.
	PaddedNs        float64 `json:"padded_ns"`
	IdealNs         float64 `json:"ideal_ns"`
	DefaultRaggedNs float64 `json:"default_ragged_ns"`
	TunedPaddedNs   float64 `json:"tuned_padded_ns"`
	TunedIdealNs    float64 `json:"tuned_ideal_ns"`
	TunedRaggedNs   float64 `json:"tuned_ragged_ns"`
	PackNs          float64 `json:"pack_ns"`
	Speedup         float64 `json:"speedup"`           // DefaultRaggedNs / TunedRaggedNs
	SpeedupVsPadded float64 `json:"speedup_vs_padded"` // PaddedNs / TunedRaggedNs
	PaddingWaste    float64 `json:"padding_waste"`
	// Measurements are the ragged program's measurements (each candidate once);
	// Candidates the distinct configs measured, Infeasible those of them some part could
	// not compile or time.
	Measurements int `json:"measurements"`
	Candidates   int `json:"candidates"`
	Infeasible   int `json:"infeasible"`
	// KeptDefault says the search found nothing faster than the default configs.
	KeptDefault bool `json:"kept_default"`
	// Config is the tuned config of the ragged form (its names apply to every part).
	Config *compiler.Config `json:"config"`
	// Kernels are the tuned ragged program's kernels (as sim --lengths --json lists them).
	Kernels   []ragged.KernelReport `json:"kernels"`
	HardwareS float64               `json:"hardware_s"`
	WallS     float64               `json:"wall_s"`
}

// raggedParts are the compile contexts of a ragged program's parts (ragged.Parts):
// ref the ragged form (the candidates' own), packed, and one and two per distinct padded
// length (one core, megacore); start the default compile of the ragged form, which
// candidates are applied to the other parts relative to (applyDiff).
type raggedParts struct {
	parts    *ragged.Parts
	ref      *compilerCtx
	packed   *compilerCtx
	one, two []*compilerCtx
	packNs   float64
	start    *candidate
}

func newRaggedParts(p *ragged.Parts, packNs float64) *raggedParts {
	ctx := func(m *hlo.Module, c tpusim.Chip) *compilerCtx {
		return &compilerCtx{mod: m, opts: compiler.Options{Target: c.Target, Kernels: &compiler.KernelCache{}}, sim: tpusim.Version, chip: c.Name}
	}
	rp := &raggedParts{parts: p, packNs: packNs, ref: ctx(p.Ragged, p.Chip), packed: ctx(p.Packed, p.Chip)}
	for _, sm := range p.Single {
		rp.one = append(rp.one, ctx(sm, p.SingleCore()))
		rp.two = append(rp.two, ctx(sm, p.Chip))
	}
	return rp
}

// time is the noiseless compiled ragged time of candidate c (a config of the ragged form)
// plus the packing gather: c applied to every part (applyDiff) and the parts timed
// together.
func (rp *raggedParts) time(c *candidate) (*ragged.Compiled, float64, error) {
	pr := &ragged.Programs{Ragged: c.prog}
	a, err := applyDiff(c, rp.start, rp.packed)
	if err != nil {
		return nil, 0, err
	}
	pr.Packed = a.prog
	for i := range rp.one {
		one, err := applyDiff(c, rp.start, rp.one[i])
		if err != nil {
			return nil, 0, err
		}
		two, err := applyDiff(c, rp.start, rp.two[i])
		if err != nil {
			return nil, 0, err
		}
		pr.One, pr.Two = append(pr.One, one.prog), append(pr.Two, two.prog)
	}
	cr, err := rp.parts.Time(pr)
	if err != nil {
		return nil, 0, err
	}
	return cr, cr.Ns + rp.packNs, nil
}

// infeasibleRagged reports whether err is a candidate the ragged program cannot run (a
// part left without a valid tile, a kernel without its counterpart), not a failure.
func infeasibleRagged(err error) bool {
	return errors.Is(err, cost.ErrTileInvalid) || errors.Is(err, ragged.ErrNoCounterpart)
}

// raggedEval measures candidates by the compiled ragged program's time (raggedParts.time)
// with the measurement noise of the ragged form, each distinct program once, within the
// run's budget.
type raggedEval struct {
	r          *run
	rp         *raggedParts
	cache      map[string]float64 // candidate fingerprint -> measured ragged ns
	n          int
	infeasible int
	best       *candidate
	bestNs     float64
}

func (e *raggedEval) remaining() int { return e.r.left() }
func (e *raggedEval) used() int      { return e.n }
func (e *raggedEval) limit() int     { return e.r.budget }

func (e *raggedEval) eval(ctx context.Context, cands []*candidate) error {
	r := e.r
	todo := toEvaluate(cands, e.cache, e.remaining())
	type result struct {
		ns, cost   float64
		infeasible bool
	}
	res := make([]result, len(todo))
	err := parallel(ctx, r.workers, len(todo), func(i int) error {
		c := todo[i]
		_, ns, err := e.rp.time(c)
		if infeasibleRagged(err) {
			res[i] = result{ns: math.Inf(1), infeasible: true}
			return nil
		}
		if err != nil {
			return fmt.Errorf("timing the ragged program of %s: %w", c.prog.Name, err)
		}
		m, err := r.sim.Measure(c.prog, r.salt("ragged|"+c.fp))
		if err != nil {
			return fmt.Errorf("measuring %s: %w", c.prog.Name, err)
		}
		res[i] = result{ns: ns * m.Ns / m.TrueNs, cost: m.CostS}
		return nil
	})
	if err != nil {
		return err
	}
	for i, c := range todo {
		v := res[i].ns
		c.value, c.evaluated, c.fresh = v, true, true
		e.cache[c.fp] = v
		if r.opts.measured != nil {
			r.opts.measured("ragged|" + c.fp)
		}
		r.measurements++
		r.progMeas++
		r.phaseMeas++
		r.hardwareS += res[i].cost
		e.n++
		if res[i].infeasible {
			e.infeasible++
		}
		if v < e.bestNs {
			e.best, e.bestNs = c, v
		}
		if v < r.bestNs {
			r.bestNs, r.bestAt = v, r.measurements
		}
	}
	fromCache(cands, e.cache)
	if len(todo) > 0 {
		r.progress()
	}
	return nil
}

// RunRagged tunes the compiled ragged form of the zoo model src over a batch of sequence
// lengths (see the section above) within opts.Budget measurements of the ragged program.
// A model without a ragged form (an LSTM, an HLO file, a model without seq), a length
// outside the model's bounds, the rl strategy, a learned model, a store, opts.Shapes, and
// a non-default fusion rule or staging mode are refused.
func RunRagged(ctx context.Context, src string, lengths []int, opts Options) (*RaggedReport, error) {
	t0 := time.Now()
	if len(lengths) == 0 {
		return nil, errors.New("ragged tuning: no lengths")
	}
	errFusion, errPolicy := genericRefusal("ragged tuning", "the default compile", opts)
	switch {
	case errFusion != nil:
		return nil, errFusion
	case opts.Staging != compiler.StagingOff:
		return nil, fmt.Errorf("ragged tuning starts from the default compile: --staging %s is not supported here (drop --staging)", opts.Staging)
	case errPolicy != nil:
		return nil, errPolicy
	case opts.GraphModel != nil || opts.KernelModel != nil:
		return nil, errors.New("tuning a ragged batch measures every candidate on the simulator: a learned model is not used (drop --model)")
	case opts.Store != nil:
		return nil, errors.New("ragged tuning does not read or record a config store (drop --store)")
	case opts.Shapes != "":
		return nil, errors.New("ragged tuning sizes every sequence itself: give the lengths, not Options.Shapes")
	}
	opts.Strategy = genericStrategy(opts.Strategy)
	o, err := opts.resolve()
	if err != nil {
		return nil, fmt.Errorf("tuning %s over lengths %s: %w", src, ragged.FormatLengths(lengths), err)
	}
	m, err := ragged.LookupZoo(src)
	if err != nil {
		return nil, err
	}
	for _, l := range lengths {
		if _, err := m.WithShapes(zoo.Shapes{{Name: "seq", Value: l}}); err != nil {
			return nil, err
		}
	}
	if !m.Raggable() {
		return nil, fmt.Errorf("%s has no ragged form: tune --lengths tunes the compiled ragged program of a bert_* or gpt2_* model (sim --lengths times this one's ideal bound)", m.Name)
	}
	// The default's three times, as sim --lengths reports them.
	def, err := ragged.TimeZoo(src, lengths, o.Chip)
	if err != nil {
		return nil, err
	}
	parts, err := ragged.NewParts(m, lengths, o.Chip)
	if err != nil {
		return nil, err
	}
	rp := newRaggedParts(parts, def.PackNs)
	start, err := rp.ref.compile(nil)
	if err != nil {
		return nil, fmt.Errorf("tuning %s: default compile: %w", parts.Ragged.Name, err)
	}
	rp.start = start
	sim, err := tpusim.New(o.Chip, tpusim.Options{NoiseSigma: o.Noise, Runs: o.Runs, Seed: o.Seed})
	if err != nil {
		return nil, err
	}
	r := &run{opts: o, sim: sim, cc: rp.ref, workers: o.Workers, budget: o.Budget,
		progCache: map[string]float64{}, kernCache: map[string]float64{}, kernTime: map[string]float64{}, bestNs: math.Inf(1)}
	ev := &raggedEval{r: r, rp: rp, cache: map[string]float64{}, bestNs: math.Inf(1)}
	r.beginPhase("ragged")
	s := newSearch(r, ev, newKindSet(o.Kinds), "ragged", []*candidate{start})
	if err := s.run(ctx, o.Strategy); err != nil {
		return nil, fmt.Errorf("tuning %s over lengths %s (%s): %w", src, ragged.FormatLengths(lengths), o.Strategy, err)
	}
	out := &RaggedReport{Program: src, Chip: o.Chip.Name, Simulator: tpusim.Version, Lengths: def.Lengths, Batch: def.Batch,
		Strategy: string(o.Strategy), Seed: o.Seed, Budget: o.Budget,
		PaddedNs: def.PaddedNs, IdealNs: def.IdealNs, DefaultRaggedNs: def.RaggedNs, PackNs: def.PackNs, PaddingWaste: def.PaddingWaste,
		Measurements: r.measurements, Candidates: ev.n, Infeasible: ev.infeasible}
	keep := start
	tuned, tunedNs, err := rp.time(start)
	if err != nil {
		return nil, fmt.Errorf("tuning %s: the default ragged program: %w", src, err)
	}
	if ev.best != nil && ev.best.fp != start.fp {
		cr, ns, err := rp.time(ev.best)
		if err != nil {
			return nil, fmt.Errorf("tuning %s: the tuned ragged program: %w", src, err)
		}
		if ns < tunedNs {
			keep, tuned, tunedNs = ev.best, cr, ns
		}
	}
	out.KeptDefault = keep == start
	out.TunedRaggedNs, out.Kernels, out.Config = tunedNs, tuned.Kernels, keep.cfg.Clone()
	out.TunedPaddedNs, out.TunedIdealNs = def.PaddedNs, def.IdealNs
	if !out.KeptDefault {
		if out.TunedPaddedNs, err = truthNs(keep.prog, o.Chip); err != nil {
			return nil, err
		}
		if out.TunedIdealNs, err = tunedIdeal(m, lengths, keep, start, o.Chip); err != nil {
			return nil, fmt.Errorf("tuning %s: the tuned ideal time: %w", src, err)
		}
		out.TunedIdealNs += def.PackNs
	}
	out.Speedup = out.DefaultRaggedNs / out.TunedRaggedNs
	out.SpeedupVsPadded = out.PaddedNs / out.TunedRaggedNs
	out.HardwareS, out.WallS = r.hardwareS, time.Since(t0).Seconds()
	return out, nil
}

// tunedIdeal is the ideal time of config c of the ragged form without the packing
// gather: Σᵢ t(lᵢ)/N, t(l) the noiseless time of the dense program at batch N and length l
// with c applied relative to start (applyDiff).
func tunedIdeal(m zoo.Model, lengths []int, c, start *candidate, chip tpusim.Chip) (float64, error) {
	n := len(lengths)
	distinct := slices.Clone(lengths)
	slices.Sort(distinct)
	distinct = slices.Compact(distinct)
	total := 0.0
	for _, l := range distinct {
		mod, err := m.BuildAt(n, l)
		if err != nil {
			return 0, err
		}
		cc := &compilerCtx{mod: mod, opts: compiler.Options{Target: chip.Target, Kernels: &compiler.KernelCache{}}, sim: tpusim.Version, chip: chip.Name}
		a, err := applyDiff(c, start, cc)
		if err != nil {
			return 0, err
		}
		t, err := truthNs(a.prog, chip)
		if err != nil {
			return 0, err
		}
		count := 0
		for _, x := range lengths {
			if x == l {
				count++
			}
		}
		total += float64(count) * t / float64(n)
	}
	return total, nil
}

// applyDiff compiles at cc what candidate c changes from start (both configs of the ragged
// form): cc's default compile with the layout entries c sets differently from start (by
// name) and, if any fusion entry differs, all of c's fusion entries (so every part forms
// the same kernels), then the tiles of the kernels whose tile in c differs from start's
// kernel of the same name, scaled to cc's extents and rounded to a valid option
// (scaleTile, nearestTile, as applyGeneric does), then the flags of the kernels whose tile
// or flags differ, where valid with the kernel's tile. Applied to start itself it is cc's
// default compile.
func applyDiff(c, start *candidate, cc *compilerCtx) (*candidate, error) {
	cfg := compiler.NewConfig()
	for _, k := range []compiler.Kind{compiler.KindLayout, compiler.KindFusion} {
		diff := false
		for _, name := range c.cfg.Names(k) {
			e, _ := c.cfg.Get(k, name)
			if se, ok := start.cfg.Get(k, name); !ok || !reflect.DeepEqual(se, e) {
				diff = true
				cfg.Set(k, name, e)
			}
		}
		if diff && k == compiler.KindFusion { // every edge: the parts then fuse alike
			for _, name := range c.cfg.Names(k) {
				e, _ := c.cfg.Get(k, name)
				cfg.Set(k, name, e)
			}
		}
	}
	p, err := cc.compile(cfg)
	if err != nil {
		return nil, err
	}
	mine, theirs := kernelChoices(c.prog), kernelChoices(start.prog)
	// changed finds the candidate's kernel among names whose tile (or, with flags, its
	// flags) differs from start's kernel of that name.
	changed := func(names []string, flags bool) (cost.Planned, bool) {
		for _, n := range names {
			kc, ok := mine[n]
			if !ok {
				continue
			}
			sc, ok := theirs[n]
			if !ok || !kc.Config.Tile.Equal(sc.Config.Tile) || flags && !reflect.DeepEqual(kc.Config.Flags, sc.Config.Flags) {
				return kc, true
			}
		}
		return cost.Planned{}, false
	}
	return carryKernels(cc, cfg, p, changed)
}
