package tune

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/internal/measure"
	"github.com/tpucost/tpucost/internal/stablehash"
	"github.com/tpucost/tpucost/tpusim"
)

// parallel runs f(0..n-1) on up to workers goroutines and returns the error of the
// lowest index that failed (so the error does not depend on scheduling).
func parallel(ctx context.Context, workers, n int, f func(i int) error) error {
	if n == 0 {
		return ctx.Err()
	}
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(workers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// run is the state of one tuning run shared by its phases: the simulator, the measurement
// accounting and the caches. Only the goroutine driving the run touches it; workers only
// compute.
type run struct {
	opts    Options
	sim     *tpusim.Simulator
	cc      *compilerCtx
	workers int

	budget       int // total measurement budget
	measurements int // measurements taken so far (program + kernel)
	progMeas     int
	kernMeas     int
	hardwareS    float64
	modelEvals   int
	// modelKernels and uncertainKernels count an ensemble kernel model's kernels and the
	// uncertain ones (Report).
	modelKernels, uncertainKernels int
	// infeasible counts proposals the compiler could not tile (search.propose).
	infeasible int

	progCache map[string]float64 // program fingerprint -> measured ns
	kernCache map[string]float64 // cost.Planned.ID() -> measured ns (kernel measurements)
	// kernTime is the best known time of a kernel configuration from any source: kernel
	// measurements and per-kernel profiles of program measurements.
	kernTime map[string]float64

	graphModel, kernelModel *modelScorer
	phase                   string
	phaseMeas               int
	// scored and scoreBudget are Progress.Scored and ScoreBudget: set by a model
	// search's evaluator (scoredProgress), cleared when the search ends or a phase begins.
	scored, scoreBudget int
	bestNs              float64 // best measured program time so far (an estimate in kernel phases)
	// bestAt is the count of measurements when a program measurement last improved bestNs.
	bestAt int
}

func (r *run) left() int { return r.budget - r.measurements }

func (r *run) progress() {
	if r.opts.Progress != nil {
		r.opts.Progress(Progress{Program: r.cc.mod.Name, Phase: r.phase, Measurements: r.measurements, Budget: r.budget, BestNs: r.bestNs,
			Scored: r.scored, ScoreBudget: r.scoreBudget})
	}
}

// scoredProgress reports that the running model search has scored n of at most budget
// candidates (Progress.Scored).
func (r *run) scoredProgress(n, budget int) {
	r.scored, r.scoreBudget = n, budget
	r.progress()
}

// salt derives a measurement's salt from the run's seed and the candidate's identity, so
// that its noise does not depend on when or on which worker it is measured.
func (r *run) salt(id string) uint64 { return stablehash.Seeded(r.opts.Seed).Str(id).Sum64() }

// noteKernelTime records t as a known time of kernel configuration id (keeping the min).
func (r *run) noteKernelTime(id string, t float64) {
	if old, ok := r.kernTime[id]; !ok || t < old {
		r.kernTime[id] = t
	}
}

// evaluator gives candidates a value: a simulator measurement or a model prediction.
type evaluator interface {
	// eval evaluates cands in order. A candidate whose program was evaluated before takes
	// the known value without spending budget; the others are evaluated while budget
	// remains, and those past it stay unevaluated.
	eval(ctx context.Context, cands []*candidate) error
	remaining() int
	used() int
	limit() int
}

// simEval measures whole programs on the simulator within the run's budget, caps
// measurements at its own limit too (a phase's share), and never measures a program
// fingerprint twice.
type simEval struct {
	r   *run
	cap int // this phase's share of the budget
	n   int // measurements by this evaluator
}

func (e *simEval) remaining() int { return max(0, min(e.cap-e.n, e.r.left())) }
func (e *simEval) used() int      { return e.n }
func (e *simEval) limit() int     { return e.cap }

// toEvaluate returns the candidates of cands an evaluator still has to evaluate, in order:
// not yet evaluated, distinct by program fingerprint and at most room of them. A candidate
// whose fingerprint cache already holds takes that value without spending budget
// (evaluated, not fresh), as does one evaluated before.
func toEvaluate(cands []*candidate, cache map[string]float64, room int) []*candidate {
	var todo []*candidate
	pending := map[string]bool{}
	for _, c := range cands {
		if c.evaluated {
			continue
		}
		if v, ok := cache[c.fp]; ok {
			c.value, c.evaluated, c.fresh = v, true, false
			continue
		}
		if pending[c.fp] || len(todo) >= room {
			continue
		}
		pending[c.fp] = true
		todo = append(todo, c)
	}
	return todo
}

// fromCache gives every candidate of cands not yet evaluated whose fingerprint cache holds
// that value, without spending budget (evaluated, not fresh): after a batch is measured,
// its duplicates take the value just measured.
func fromCache(cands []*candidate, cache map[string]float64) {
	for _, c := range cands {
		if !c.evaluated {
			if v, ok := cache[c.fp]; ok {
				c.value, c.evaluated, c.fresh = v, true, false
			}
		}
	}
}

func (e *simEval) eval(ctx context.Context, cands []*candidate) error {
	r := e.r
	todo := toEvaluate(cands, r.progCache, e.remaining())
	type result struct {
		m    tpusim.Measurement
		prof []float64
	}
	res := make([]result, len(todo))
	err := parallel(ctx, r.workers, len(todo), func(i int) error {
		c := todo[i]
		m, err := r.sim.Measure(c.prog, r.salt("program|"+c.fp))
		if err != nil {
			return fmt.Errorf("measuring %s: %w", c.prog.Name, err)
		}
		// The per-kernel profile of the run: the simulator's breakdown scaled to the
		// measured total, as a profiler reports on hardware.
		pt, err := r.sim.Program(c.prog)
		if err != nil {
			return err
		}
		prof := make([]float64, len(pt.Kernels))
		for j, kt := range pt.Kernels {
			prof[j] = kt.Ns * m.Ns / pt.TotalNs
		}
		res[i] = result{m, prof}
		return nil
	})
	if err != nil {
		return err
	}
	for i, c := range todo {
		m := res[i].m
		c.value, c.evaluated, c.fresh = m.Ns, true, true
		r.progCache[c.fp] = m.Ns
		if r.opts.measured != nil {
			r.opts.measured("program|" + c.fp)
		}
		r.measurements++
		r.progMeas++
		r.phaseMeas++
		e.n++
		r.hardwareS += m.CostS
		for j, k := range c.prog.Kernels {
			r.noteKernelTime(k.Choice.ID(), res[i].prof[j])
		}
		if m.Ns < r.bestNs {
			r.bestNs, r.bestAt = m.Ns, r.measurements
		}
	}
	fromCache(cands, r.progCache) // duplicates within the batch take the value just measured
	if len(todo) > 0 {
		r.progress()
	}
	return nil
}

// modelEval scores whole programs with an absolute model: the sum of its predictions over
// the program's kernels. Its budget counts distinct programs scored. Every scored
// candidate is kept (without its program) for the top-k selection.
type modelEval struct {
	r      *run
	m      *modelScorer
	cap, n int
	cache  map[string]float64
	scored []*candidate
}

func (e *modelEval) remaining() int { return max(0, e.cap-e.n) }
func (e *modelEval) used() int      { return e.n }
func (e *modelEval) limit() int     { return e.cap }

func (e *modelEval) eval(_ context.Context, cands []*candidate) error {
	n0 := e.n
	defer func() {
		if e.n > n0 {
			e.r.scoredProgress(e.n, e.cap)
		}
	}()
	for _, c := range cands {
		if c.evaluated {
			continue
		}
		if v, ok := e.cache[c.fp]; ok {
			c.value, c.evaluated, c.fresh = v, true, false
			continue
		}
		if e.remaining() == 0 {
			continue
		}
		v, err := e.m.program(c.prog)
		if err != nil {
			return err
		}
		c.value, c.evaluated, c.fresh = v, true, true
		e.cache[c.fp] = v
		e.n++
		e.r.modelEvals++
		e.scored = append(e.scored, &candidate{cfg: c.cfg, fp: c.fp, value: v, evaluated: true})
	}
	return nil
}

// measureKernels measures planned choices of kernel k on the simulator, in parallel,
// skipping those measured before; it stops when the run's budget or this phase's cap is
// spent. It returns the measured (or cached) ns of each choice, NaN for those left
// unmeasured.
func (r *run) measureKernels(ctx context.Context, k *compiler.Kernel, choices []cost.Planned, capLeft *int) ([]float64, error) {
	out := make([]float64, len(choices))
	ids := make([]string, len(choices))
	var todo []int
	pending := map[string]bool{}
	for i, c := range choices {
		id := c.ID()
		ids[i] = id
		out[i] = math.NaN()
		if v, ok := r.kernCache[id]; ok {
			out[i] = v
			continue
		}
		if pending[id] || len(todo) >= min(*capLeft, r.left()) {
			continue
		}
		pending[id] = true
		todo = append(todo, i)
	}
	// The choices are measured through the shared machinery: measure.Run (the workers
	// in parallel) over the simulator's backend, counted by measure.Counted against what
	// the run and this phase have left.
	sel := make([]cost.Planned, len(todo))
	for j, i := range todo {
		sel[j] = choices[i]
	}
	var mu sync.Mutex
	meas := make(map[string]tpusim.Measurement, len(todo)) // by choice ID: each measurement's cost
	sim := tpusim.ChoiceBackend{Sim: r.sim, Salt: func(c cost.Planned) uint64 { return r.salt("kernel|" + c.ID()) },
		Measured: func(c cost.Planned, m tpusim.Measurement) { mu.Lock(); meas[c.ID()] = m; mu.Unlock() }}
	budget := measure.NewBudget(min(*capLeft, r.left()))
	res, err := measure.Run(ctx, measure.Backend[cost.Planned](measure.Count[cost.Planned](sim, budget)), sel, measure.Options{Seed: uint64(r.opts.Seed), Workers: r.workers})
	if ce := (*measure.ConfigError)(nil); errors.As(err, &ce) {
		c := sel[ce.Index]
		return nil, fmt.Errorf("measuring kernel %s with tile %s, flags %s: kernel %s: %w", k.Name, c.Config.Tile, c.Config.Flags, k.Name, ce.Err)
	} else if err != nil {
		return nil, err
	}
	ms := make([]tpusim.Measurement, len(todo))
	for j := range todo {
		ms[j] = meas[sel[j].ID()]
		ms[j].Ns = res[j].MedianNs
	}
	for j, i := range todo {
		id := ids[i]
		r.kernCache[id] = ms[j].Ns
		if r.opts.measured != nil {
			r.opts.measured("kernel|" + id)
		}
		r.noteKernelTime(id, ms[j].Ns)
		r.hardwareS += ms[j].CostS
	}
	n := budget.Used() // the wrapper's count: every choice of todo, measured once
	r.measurements += n
	r.kernMeas += n
	r.phaseMeas += n
	*capLeft -= n
	for i := range choices {
		if math.IsNaN(out[i]) {
			if v, ok := r.kernCache[ids[i]]; ok {
				out[i] = v
			}
		}
	}
	return out, nil
}
