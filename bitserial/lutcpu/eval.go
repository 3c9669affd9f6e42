package lutcpu

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/tpucost/tpucost/bitserial"
	"github.com/tpucost/tpucost/internal/measure"
	"github.com/tpucost/tpucost/metric"
)

// Split divides records into a training and a held-out set: a seeded random testFrac
// of the configs is held out (in (0, 1)).
func Split(recs []Record, testFrac float64, seed int64) (train, test []Record, err error) {
	if !(testFrac > 0 && testFrac < 1) {
		return nil, nil, fmt.Errorf("--test-fraction %v: want a fraction in (0, 1)", testFrac)
	}
	nTest := int(math.Round(testFrac * float64(len(recs))))
	if nTest < 2 || len(recs)-nTest < 2 {
		return nil, nil, fmt.Errorf("%d configs: too few to hold out %v of them and train on the rest (want at least 2 each)", len(recs), testFrac)
	}
	perm := rand.New(rand.NewPCG(uint64(seed), 41)).Perm(len(recs))
	hold := make([]bool, len(recs))
	for _, i := range perm[:nTest] {
		hold[i] = true
	}
	for i, r := range recs {
		if hold[i] {
			test = append(test, r)
		} else {
			train = append(train, r)
		}
	}
	return train, test, nil
}

// Split modes: configs held out at random, or whole problems (every variant of a held-out
// (P, z, b)), so that a model tuning them has measured none of their variants.
const (
	SplitRandom  = "random"
	SplitProblem = "problem"
)

// SplitBy divides records by mode (SplitRandom: Split; SplitProblem: a seeded random
// testFrac of the problems, all their configs, held out) and returns the held-out
// problems too (every problem with a held-out config, for SplitRandom none).
func SplitBy(recs []Record, mode string, testFrac float64, seed int64) (train, test []Record, held []Problem, err error) {
	switch mode {
	case SplitRandom:
		train, test, err = Split(recs, testFrac, seed)
		return train, test, nil, err
	case SplitProblem:
	default:
		return nil, nil, nil, fmt.Errorf("--split %q: want random or problem", mode)
	}
	if !(testFrac > 0 && testFrac < 1) {
		return nil, nil, nil, fmt.Errorf("--test-fraction %v: want a fraction in (0, 1)", testFrac)
	}
	var probs []Problem
	seen := map[Problem]bool{}
	for _, r := range recs {
		if p := r.Config.Problem(); !seen[p] {
			seen[p] = true
			probs = append(probs, p)
		}
	}
	nTest := int(math.Round(testFrac * float64(len(probs))))
	if nTest < 1 || nTest >= len(probs) {
		return nil, nil, nil, fmt.Errorf("%d problems: too few to hold out %v of them and train on the rest", len(probs), testFrac)
	}
	hold := map[Problem]bool{}
	for _, i := range rand.New(rand.NewPCG(uint64(seed), 47)).Perm(len(probs))[:nTest] {
		hold[probs[i]] = true
	}
	for _, p := range probs {
		if hold[p] {
			held = append(held, p)
		}
	}
	for _, r := range recs {
		if hold[r.Config.Problem()] {
			test = append(test, r)
		} else {
			train = append(train, r)
		}
	}
	return train, test, held, nil
}

// Train fits the learned model to records measured on layer l.
func Train(l bitserial.Layer, recs []Record, lambda float64) (*Model, error) {
	cs := make([]Config, len(recs))
	ns := make([]float64, len(recs))
	for i, r := range recs {
		cs[i], ns[i] = r.Config, r.MedianNs
	}
	return Fit(l, cs, ns, lambda)
}

// Scores are the Kendall τ of the learned and analytical models against measured
// medians on a set of configs.
type Scores struct {
	Configs    int     `json:"samples"`
	Learned    float64 `json:"learned_kendall_tau"`
	Analytical float64 `json:"analytical_kendall_tau"`
}

// Score scores m and the analytical model on recs.
func Score(m *Model, recs []Record) (Scores, error) {
	truth := make([]float64, len(recs))
	learned := make([]float64, len(recs))
	analytical := make([]float64, len(recs))
	for i, r := range recs {
		truth[i] = r.MedianNs
		learned[i] = m.Predict(r.Config)
		analytical[i] = Analytical(m.Layer, r.Config)
	}
	tl, err := metric.KendallTau(learned, truth)
	if err != nil {
		return Scores{}, err
	}
	ta, err := metric.KendallTau(analytical, truth)
	if err != nil {
		return Scores{}, err
	}
	return Scores{Configs: len(recs), Learned: tl, Analytical: ta}, nil
}

// TuneOptions configure model-guided tuning on a backend.
type TuneOptions struct {
	Space   Space
	Backend Backend
	// Problems are the (P, z, b) whose implementation (loop order, blocking, unrolling)
	// is tuned; nil: every problem of the space.
	Problems []Problem
	// Model, if set, ranks the configs from the start (trained earlier); otherwise the
	// tuner first measures Sample configs of the space (StratifiedSample) and fits a
	// model to them.
	Model  *Model
	Sample int
	// Top is how many of each problem's best-predicted variants not yet measured are
	// then measured, in all rounds.
	Top int
	// Rounds divides the Top variants per problem into rounds (the first rounds take one
	// more where Top does not divide evenly); before each round the model is fitted
	// again to every measurement so far, so that the later rounds are ranked by a model
	// that has seen measurements near each problem's best. 1 with a given Model (it is
	// not refitted); 1..Top without.
	Rounds int
	Lambda float64
	Seed   int64
	// Budget, if set, is the measurement budget the search is counted against (it may be
	// shared with other measurements; past it Tune stops with an error wrapping
	// measure.ErrBudgetSpent); nil: a budget of Sample + Top per problem, the most the
	// search takes.
	Budget *measure.Budget
}

// TunedProblem is one problem's tuning: its best measured variant.
type TunedProblem struct {
	Problem      string  `json:"problem"`
	BestConfig   string  `json:"best_config"`
	BestNs       float64 `json:"best_ns"`
	Measurements int     `json:"measurements"` // variants of this problem measured
	best         Config
}

// TuneResult is a tuning run: each problem's best measured variant and how many configs
// were measured in all.
type TuneResult struct {
	Problems     []TunedProblem `json:"problems"`
	Measurements int            `json:"measurements"`
	// ExhaustiveConfigs is what an exhaustive search of the same problems measures.
	ExhaustiveConfigs int `json:"exhaustive_configs"`
	Sampled           int `json:"sampled"`    // configs measured to fit the model
	Predicted         int `json:"predicted"`  // best-predicted configs measured
	FitRounds         int `json:"fit_rounds"` // rounds of best-predicted measurements
}

// StratifiedSample is n configs of probs' variants spread evenly over the problems and
// the implementation variants: the i-th goes to the i-th problem of a seeded order of
// probs (cycled) and the i-th variant of a seeded order of the variants (cycled; the
// next unused one where that config is taken), so that every problem gets ⌊n/|probs|⌋
// or one more and every (order, block, unroll) about n/36, where a uniform draw of 200
// of the 4,320 configs leaves about 22 of the 120 problems unmeasured. n is at most the
// number of configs.
func StratifiedSample(probs []Problem, n int, seed int64) []Config {
	r := rand.New(rand.NewPCG(uint64(seed), 43))
	pp := r.Perm(len(probs))
	nv := len(Problem{}.Variants())
	vp := r.Perm(nv)
	n = min(n, len(probs)*nv)
	taken := map[Config]bool{}
	out := make([]Config, 0, n)
	for i := 0; len(out) < n; i++ {
		vs := probs[pp[i%len(probs)]].Variants()
		for k := 0; k < nv; k++ {
			if c := vs[vp[(i+k)%nv]]; !taken[c] {
				taken[c] = true
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// Tune searches the implementation (loop order, blocking, unrolling) of each problem on
// the backend, guided by the learned model, counting every measurement: Sample configs
// of the space spread over its problems and variants (StratifiedSample; to fit a model,
// unless one is given), then, per problem, the Top variants the model predicts fastest
// among those not yet measured, in Rounds rounds with the model fitted again to every
// measurement before each (a round's candidates measured in a seeded random order across
// the problems); each problem's best measured median wins. Measurements are
// counted by measure.Counted (the wrapper tune counts with on every backend) against a
// budget of Sample + Top per problem.
func Tune(o TuneOptions) (*TuneResult, error) {
	all, err := o.Space.Configs()
	if err != nil {
		return nil, err
	}
	probs := o.Problems
	if probs == nil {
		probs = o.Space.Problems()
	}
	variants := len(Orders()) * len(Blocks()) * len(Unrolls())
	if o.Top < 1 || o.Top > variants || o.Sample < 0 || o.Sample > len(all) {
		return nil, fmt.Errorf("--sample %d, --top %d: want --top 1..%d (variants per problem) and --sample 0..%d", o.Sample, o.Top, variants, len(all))
	}
	if o.Model == nil && o.Sample < 2 {
		return nil, errors.New("--sample: without a trained model (--model) the tuner needs at least 2 sampled configs to fit one")
	}
	switch {
	case o.Model != nil && o.Rounds != 1:
		return nil, fmt.Errorf("--fit-rounds %d: a trained model (--model) is not refitted: want 1", o.Rounds)
	case o.Rounds < 1 || o.Rounds > o.Top:
		return nil, fmt.Errorf("--fit-rounds %d: want 1..%d (--top: at least one variant per problem and round)", o.Rounds, o.Top)
	}
	res := &TuneResult{ExhaustiveConfigs: variants * len(probs), FitRounds: o.Rounds}
	// Every measurement goes through the counting wrapper: its count is the result's
	// Measurements.
	budget := o.Budget
	if budget == nil {
		budget = measure.NewBudget(o.Sample + o.Top*len(probs))
	}
	used0 := budget.Used()
	be := measure.Count(o.Backend, budget)
	measured := map[Config]float64{}
	var cs []Config
	var ns []float64
	measureOne := func(c Config) error {
		s, err := be.Measure(c)
		if err != nil {
			return err
		}
		measured[c] = s.MedianNs
		cs, ns = append(cs, c), append(ns, s.MedianNs)
		return nil
	}
	for _, c := range StratifiedSample(o.Space.Problems(), o.Sample, o.Seed) {
		if err := measureOne(c); err != nil {
			return nil, err
		}
	}
	res.Sampled = o.Sample
	for _, p := range probs {
		for _, c := range p.Variants() {
			if err := c.Check(o.Space.Layer); err != nil {
				return nil, err
			}
		}
	}
	// Each round's candidates are measured in a seeded random order across the problems
	// (as gen measures in measure.Order), so that a burst of other load on the machine
	// falls on a few candidates of many problems rather than on every candidate of a run
	// of consecutive problems.
	shuffle := rand.New(rand.NewPCG(uint64(o.Seed), 53))
	for round := 0; round < o.Rounds; round++ {
		m := o.Model
		if m == nil {
			if m, err = Fit(o.Space.Layer, cs, ns, o.Lambda); err != nil {
				return nil, err
			}
		}
		top := o.Top / o.Rounds
		if round < o.Top%o.Rounds {
			top++
		}
		var cands []Config
		for _, p := range probs {
			var rest []Config
			pred := map[Config]float64{}
			for _, c := range p.Variants() {
				if _, ok := measured[c]; !ok {
					rest = append(rest, c)
					pred[c] = m.Predict(c)
				}
			}
			slices.SortStableFunc(rest, func(a, b Config) int {
				switch {
				case pred[a] < pred[b]:
					return -1
				case pred[a] > pred[b]:
					return 1
				}
				return 0
			})
			cands = append(cands, rest[:min(top, len(rest))]...)
		}
		for _, i := range shuffle.Perm(len(cands)) {
			if err := measureOne(cands[i]); err != nil {
				return nil, err
			}
			res.Predicted++
		}
	}
	for _, p := range probs {
		tp := TunedProblem{Problem: p.String(), BestNs: math.Inf(1)}
		for _, c := range p.Variants() {
			if t, ok := measured[c]; ok {
				tp.Measurements++
				if t < tp.BestNs {
					tp.BestNs, tp.best = t, c
				}
			}
		}
		tp.BestConfig = tp.best.String()
		res.Problems = append(res.Problems, tp)
	}
	res.Measurements = budget.Used() - used0
	return res, nil
}

// Compare re-measures configs a and b on the backend in alternation, rounds times each,
// and returns their median times: the fair comparison of a tuned config with the
// exhaustive search's best on a loaded machine.
func Compare(be Backend, a, b Config, rounds int) (aNs, bNs float64, err error) {
	var as, bs []float64
	for i := 0; i < rounds; i++ {
		sa, err := be.Measure(a)
		if err != nil {
			return 0, 0, err
		}
		sb, err := be.Measure(b)
		if err != nil {
			return 0, 0, err
		}
		as, bs = append(as, sa.MedianNs), append(bs, sb.MedianNs)
	}
	return measure.Median(as), measure.Median(bs), nil
}
