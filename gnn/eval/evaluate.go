package eval

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/metric"
)

// Predict returns a model's predictions (or scores; lower is better) for every config of
// each row, in the row's config order (gnn.Predictor.PredictRows).
type Predict func(rows []*dataset.Row) ([][]float64, error)

// PredictSpread is Predict with an ensemble's spread of every prediction (nil spreads:
// a single model; gnn.Predictor.PredictRowsSpread).
type PredictSpread func(rows []*dataset.Row) (preds, spreads [][]float64, err error)

// evalBatch is how many rows are predicted per call.
const evalBatch = 256

// Metrics are one model's accuracy on a test set. Pointer and map fields are absent when
// they do not apply to the task.
type Metrics struct {
	// Relative tasks (tile, flags).
	APE        *float64           `json:"ape_pct,omitempty"`     // mean over programs of the per-program APE (%)
	SlowdownAt map[string]float64 `json:"slowdown_at,omitempty"` // "1", "5", "10": mean over kernels
	// Absolute tasks (fusion, layout).
	MAPE        *float64 `json:"mape_pct,omitempty"`       // over all kernels (%)
	MAPEGE5us   *float64 `json:"mape_ge5us_pct,omitempty"` // kernels >= 5 us
	MAPELT5us   *float64 `json:"mape_lt5us_pct,omitempty"` // kernels < 5 us
	ProgramMAPE *float64 `json:"program_mape_pct,omitempty"`
	ProgramTau  *float64 `json:"program_kendall_tau,omitempty"`
	// Kendall's tau-b: per kernel over its configs, averaged (relative tasks); over
	// kernels (absolute tasks).
	KendallTau float64 `json:"kendall_tau"`
	// OPA is the TpuGraphs ordered pair accuracy, over the same pairs as KendallTau.
	OPA *float64 `json:"opa,omitempty"`
	// TileScore is the TpuGraphs leaderboard's tile score, 1 − mean slowdown@5 (relative
	// tasks).
	TileScore *float64 `json:"tpugraphs_tile_score,omitempty"`
}

// ProgramRow is one program's line of the per-program table.
type ProgramRow struct {
	Program    string   `json:"program"`
	Kernels    int      `json:"kernels"`
	Learned    float64  `json:"learned_ape_pct"`              // APE (ranked data) or program-time APE (absolute data), %
	Analytical *float64 `json:"analytical_ape_pct,omitempty"` // the same for the analytical model (absent when the data has no estimates)
	TrueNs     float64  `json:"true_ns"`                      // sum of the program's best (ranked) or measured (absolute) kernel times
}

// Report is the evaluation of a learned model against the analytical baseline on the
// same rows.
type Report struct {
	Task dataset.Task `json:"task"`
	// Ranked says that each row's configurations were ranked (dataset.Provenance.Ranked:
	// tile, flags and per-node layout data), so the metrics are APE, slowdown@K, τ per
	// row and OPA; otherwise they are MAPE and τ over kernels (absolute data).
	Ranked bool   `json:"-"`
	Split  string `json:"split"`
	// HeldOutFamilies are the test families of a family split.
	HeldOutFamilies []string `json:"held_out_families,omitempty"`
	Kernels         int      `json:"kernels"`
	// ExcludedRows counts the rows of the evaluated part left out because the model
	// trained or validated on their kernel.
	ExcludedRows int     `json:"excluded_rows"`
	Samples      int     `json:"samples"`
	Programs     int     `json:"programs"`
	Learned      Metrics `json:"learned"`
	// Analytical is the analytical model on the same rows; nil when the data has no
	// analytical estimates (measurements imported from elsewhere, e.g. TpuGraphs).
	Analytical *Metrics     `json:"analytical,omitempty"`
	PerProgram []ProgramRow `json:"per_program"`
	// Uncertainty describes an ensemble's spread (nil for a single model).
	Uncertainty *Uncertainty `json:"uncertainty,omitempty"`

	// Pairs for plots (absolute: one per kernel; ranked: one per config), capped.
	Points []Point `json:"-"`
}

// Point is one (true, learned, analytical) triple for scatter plots.
type Point struct{ True, Learned, Analytical float64 }

// maxPoints caps the scatter data kept for plots.
const maxPoints = 20000

// kernelData is what evaluation keeps of a test row.
type kernelData struct {
	truth, learned, analytical []float64
	spread                     []float64 // an ensemble's (nil: one model)
}

// Uncertainty relates an ensemble's spread to its errors: per kernel the spread of its
// pick's score (ranked data) or of its prediction (absolute data, natural-log units),
// and the error on the fifth of kernels with the largest spread against the rest. A
// spread that knows when the model does not know shows a larger error on the uncertain
// fifth.
type Uncertainty struct {
	MeanSpread float64 `json:"mean_spread"`
	// UncertainShare is the fraction of kernels in the uncertain part (the top fifth by
	// spread).
	UncertainShare float64 `json:"uncertain_share"`
	// ErrorUncertain and ErrorRest are slowdown@1 (ranked data, a fraction) or APE of
	// the prediction (absolute data, %) averaged over the uncertain kernels and the rest.
	ErrorUncertain float64 `json:"error_uncertain"`
	ErrorRest      float64 `json:"error_rest"`
	// AnalyticalUncertain is the analytical model's error on the uncertain kernels (NaN
	// without estimates): what falling back to it would give there.
	AnalyticalUncertain float64 `json:"analytical_uncertain"`
}

// uncertainFraction is the share of kernels Uncertainty calls uncertain.
const uncertainFraction = 0.2

// uncertainty computes Uncertainty over the kernels (nil without spreads).
func uncertainty(ranked bool, keys []string, kernels map[string]*kernelData) *Uncertainty {
	type ku struct{ spread, errL, errA float64 }
	var us []ku
	for _, k := range keys {
		kd := kernels[k]
		if kd.spread == nil || len(kd.truth) == 0 {
			return nil
		}
		u := ku{errA: math.NaN()}
		if ranked {
			pick := argmin(kd.learned)
			best := slices.Min(kd.truth)
			u.spread, u.errL = kd.spread[pick], kd.truth[pick]/best-1
			if len(kd.analytical) == len(kd.truth) {
				u.errA = kd.truth[argmin(kd.analytical)]/best - 1
			}
		} else {
			u.spread, u.errL = kd.spread[0], 100*math.Abs(kd.learned[0]-kd.truth[0])/kd.truth[0]
			if len(kd.analytical) == len(kd.truth) {
				u.errA = 100 * math.Abs(kd.analytical[0]-kd.truth[0]) / kd.truth[0]
			}
		}
		us = append(us, u)
	}
	if len(us) == 0 {
		return nil
	}
	sort.SliceStable(us, func(a, b int) bool { return us[a].spread > us[b].spread })
	n := max(1, int(math.Round(uncertainFraction*float64(len(us)))))
	r := &Uncertainty{UncertainShare: float64(n) / float64(len(us))}
	var a float64
	for i, u := range us {
		r.MeanSpread += u.spread / float64(len(us))
		if i < n {
			r.ErrorUncertain += u.errL / float64(n)
			a += u.errA / float64(n)
		} else {
			r.ErrorRest += u.errL / float64(len(us)-n)
		}
	}
	r.AnalyticalUncertain = a
	return r
}

// argmin is the index of the smallest value, the first of ties.
func argmin(xs []float64) int {
	j := 0
	for i, x := range xs {
		if x < xs[j] {
			j = i
		}
	}
	return j
}

// Evaluate scores the learned model (predict) and the analytical model (the rows'
// estimates) on the test rows of d under split (nil: every row), with the metrics of the
// dataset's task. Rows for which exclude (if non-nil) returns true are left out and
// counted in ExcludedRows; it fails when no row is left. Programs are the default-compile (variant 0) units of each model; a
// program's APE covers its kernels that are in the evaluated rows, weighted by how often
// each occurs in the program. For absolute tasks the program-level metrics compare the
// sum of kernel predictions with the measured program time, for every unit (program
// variant) all of whose kernels are evaluated.
func Evaluate(d *dataset.Dataset, split *dataset.Split, predict Predict, exclude func(*dataset.Row) bool) (*Report, error) {
	return EvaluateSpread(d, split, func(rows []*dataset.Row) ([][]float64, [][]float64, error) {
		p, err := predict(rows)
		return p, nil, err
	}, exclude)
}

// EvaluateSpread is Evaluate of an ensemble: with spreads, the report has Uncertainty.
func EvaluateSpread(d *dataset.Dataset, split *dataset.Split, predict PredictSpread, exclude func(*dataset.Row) bool) (*Report, error) {
	task := d.Provenance.Task
	ranked := d.Provenance.Ranked()
	rep := &Report{Task: task, Ranked: ranked, Split: "all"}
	part := dataset.All
	if split != nil {
		part = dataset.Test
		rep.Split = split.Kind
		rep.HeldOutFamilies = split.HeldOutFamilies
	}
	kernels := map[string]*kernelData{}
	var buf []*dataset.Row
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		preds, spreads, err := predict(buf)
		if err != nil {
			return fmt.Errorf("predicting: %w", err)
		}
		for i, r := range buf {
			p := preds[i]
			if len(p) != len(r.RuntimesNs) {
				return fmt.Errorf("kernel %s: %d predictions for %d configs", r.KernelKey, len(p), len(r.RuntimesNs))
			}
			kd := &kernelData{truth: r.TargetTimes(), learned: p, analytical: r.AnalyticalNs}
			if spreads != nil {
				kd.spread = spreads[i]
			}
			kernels[r.KernelKey] = kd
			rep.Samples += len(r.RuntimesNs)
		}
		buf = buf[:0]
		return nil
	}
	err := d.Rows(dataset.ReadOptions{Split: split, Part: part}, func(r *dataset.Row) error {
		if exclude != nil && exclude(r) {
			rep.ExcludedRows++
			return nil
		}
		c := r.Clone()
		buf = append(buf, &c)
		if len(buf) == evalBatch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return nil, err
	}
	rep.Kernels = len(kernels)
	if rep.Kernels == 0 {
		if rep.ExcludedRows > 0 {
			return nil, fmt.Errorf("%s: no rows to evaluate: all %d test rows (%s split) are kernels the model trained or validated on", d.Dir, rep.ExcludedRows, rep.Split)
		}
		if split != nil {
			return nil, fmt.Errorf("%s: no rows to evaluate: the test part of its %s split is empty (a dataset of a few rows may hold none: evaluate on another dataset of the same feature set)", d.Dir, split.Kind)
		}
		return nil, fmt.Errorf("%s: no rows to evaluate", d.Dir)
	}
	occ, err := d.Occurrences()
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(kernels))
	for k := range kernels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	hasAnalytical := true
	for _, kd := range kernels {
		hasAnalytical = hasAnalytical && len(kd.analytical) == len(kd.truth) && !slices.ContainsFunc(kd.analytical, math.IsNaN)
	}
	for _, k := range keys {
		kd := kernels[k]
		l, a := kd.learned, kd.analytical
		if !hasAnalytical {
			a = nil
		}
		if ranked {
			// A rank model's outputs are scores, not times: plot each config against the
			// true runtime at the rank the model gives it (both models alike), so that a
			// perfect ranking lies on the diagonal.
			l = rankImplied(kd.truth, l)
			if a != nil {
				a = rankImplied(kd.truth, a)
			}
		}
		for i := range kd.truth {
			if len(rep.Points) < maxPoints {
				pa := math.NaN()
				if a != nil {
					pa = a[i]
				}
				rep.Points = append(rep.Points, Point{kd.truth[i], l[i], pa})
			}
		}
	}
	score := absoluteMetrics
	if ranked {
		score = rankedMetrics
	}
	m, progs, err := score(keys, kernels, occ, learnedOf)
	if err != nil {
		return nil, err
	}
	rep.Learned, rep.Programs = m, len(progs)
	rep.Uncertainty = uncertainty(ranked, keys, kernels)
	for _, p := range progs {
		rep.PerProgram = append(rep.PerProgram, ProgramRow{Program: p.program, Kernels: p.kernels, Learned: p.value, TrueNs: p.trueNs})
	}
	if hasAnalytical {
		a, aprogs, err := score(keys, kernels, occ, analyticalOf)
		if err != nil {
			return nil, err
		}
		rep.Analytical = &a
		for i, p := range aprogs {
			rep.PerProgram[i].Analytical = ptr(p.value)
		}
	}
	return rep, nil
}

func ptr(x float64) *float64 { return &x }

// predOf selects one model's predictions of an evaluated kernel.
type predOf func(*kernelData) []float64

func learnedOf(kd *kernelData) []float64    { return kd.learned }
func analyticalOf(kd *kernelData) []float64 { return kd.analytical }

// programScore is one model's value for one program of the per-program table (APE for
// ranked data, the mean program-time APE over its variants for absolute data).
type programScore struct {
	program       string
	kernels       int
	value, trueNs float64
}

// rankedMetrics scores one model (pred) on ranked rows: per row (kernel) over its
// configurations Kendall τ, OPA and slowdown@K, averaged over rows, and the tile APE of
// every default-compile program (occurrences of variant 0), averaged over programs.
func rankedMetrics(keys []string, kernels map[string]*kernelData, occ []dataset.Occurrence, pred predOf) (Metrics, []programScore, error) {
	var m Metrics
	var tau, opa float64
	nTau, nOPA := 0, 0
	slow := map[int]float64{1: 0, 5: 0, 10: 0}
	for _, key := range keys {
		kd := kernels[key]
		p := pred(kd)
		if o, err := metric.OPA(p, kd.truth); err == nil {
			opa += o
			nOPA++
		}
		if len(kd.truth) >= 2 {
			t, err := metric.KendallTau(p, kd.truth)
			if err != nil {
				return m, nil, err
			}
			tau += t
			nTau++
		}
		for K := range slow {
			sl, err := metric.SlowdownAtK(metric.Kernel{True: kd.truth, Pred: p}, K)
			if err != nil {
				return m, nil, fmt.Errorf("kernel %s: %w", key, err)
			}
			slow[K] += sl
		}
	}
	n := float64(len(keys))
	m.SlowdownAt = map[string]float64{}
	for K, s := range slow {
		m.SlowdownAt[fmt.Sprint(K)] = s / n
	}
	if nTau > 0 {
		m.KendallTau = tau / float64(nTau)
	}
	if nOPA > 0 {
		m.OPA = ptr(opa / float64(nOPA))
	}
	m.TileScore = ptr(1 - m.SlowdownAt["5"])
	// Per program: the default-compile units.
	type prog struct {
		ks     []metric.Kernel
		counts []float64
		trueNs float64
	}
	progs := map[string]*prog{}
	var names []string
	for _, o := range occ {
		kd, ok := kernels[o.KernelKey]
		if !ok || o.Variant != 0 {
			continue
		}
		p := progs[o.Program]
		if p == nil {
			p = &prog{}
			progs[o.Program] = p
			names = append(names, o.Program)
		}
		p.ks = append(p.ks, metric.Kernel{True: kd.truth, Pred: pred(kd)})
		p.counts = append(p.counts, float64(o.Count))
		p.trueNs += float64(o.Count) * metric.Kernel{True: kd.truth}.MinTrue()
	}
	sort.Strings(names)
	var out []programScore
	var sum float64
	for _, name := range names {
		p := progs[name]
		ape, err := metric.ProgramAPE(p.ks, p.counts)
		if err != nil {
			return m, nil, fmt.Errorf("program %s: %w", name, err)
		}
		sum += ape
		out = append(out, programScore{program: name, kernels: len(p.ks), value: ape, trueNs: p.trueNs})
	}
	if len(names) > 0 {
		m.APE = ptr(sum / float64(len(names)))
	}
	return m, out, nil
}

// absoluteMetrics scores one model (pred) on absolute rows: MAPE (all, ≥ 5 µs, < 5 µs),
// Kendall τ and OPA over kernels, and over program variants all of whose kernels are
// evaluated the program-time MAPE and τ (Σ_k count·prediction vs the measured sum);
// per program the mean over its variants of the program-time APE.
func absoluteMetrics(keys []string, kernels map[string]*kernelData, occ []dataset.Occurrence, pred predOf) (Metrics, []programScore, error) {
	var m Metrics
	truth := make([]float64, 0, len(keys))
	preds := make([]float64, 0, len(keys))
	for _, key := range keys {
		kd := kernels[key]
		// Absolute rows have one config; if a row has several, each is a sample.
		truth = append(truth, kd.truth...)
		preds = append(preds, pred(kd)...)
	}
	mp, err := metric.ComputeMAPE(truth, preds)
	if err != nil {
		return m, nil, err
	}
	m.MAPE = ptr(mp.All)
	if mp.NGE5us > 0 {
		m.MAPEGE5us = ptr(mp.GE5us)
	}
	if mp.NLT5us > 0 {
		m.MAPELT5us = ptr(mp.LT5us)
	}
	if len(truth) >= 2 {
		tau, err := metric.KendallTau(preds, truth)
		if err != nil {
			return m, nil, err
		}
		m.KendallTau = tau
		if opa, err := metric.OPA(preds, truth); err == nil {
			m.OPA = ptr(opa)
		}
	}
	// Program level: units whose kernels are all evaluated.
	type unit struct {
		program        string
		trueNs, predNs float64
		complete       bool
		kernels        int
	}
	units := map[int64]*unit{}
	var ids []int64
	for _, o := range occ {
		u := units[o.Unit]
		if u == nil {
			u = &unit{program: o.Program, complete: true}
			units[o.Unit] = u
			ids = append(ids, o.Unit)
		}
		kd, ok := kernels[o.KernelKey]
		if !ok {
			u.complete = false
			continue
		}
		c := float64(o.Count)
		u.trueNs += c * kd.truth[0]
		u.predNs += c * pred(kd)[0]
		u.kernels++
	}
	slices.Sort(ids)
	var pt, pp []float64
	perProgram := map[string]*programScore{}
	counts := map[string]int{}
	var names []string
	for _, id := range ids {
		u := units[id]
		if !u.complete || u.trueNs <= 0 {
			continue
		}
		pt, pp = append(pt, u.trueNs), append(pp, u.predNs)
		ps := perProgram[u.program]
		if ps == nil {
			ps = &programScore{program: u.program}
			perProgram[u.program] = ps
			names = append(names, u.program)
		}
		ps.kernels += u.kernels
		ps.value += 100 * math.Abs(u.predNs-u.trueNs) / u.trueNs
		ps.trueNs += u.trueNs
		counts[u.program]++
	}
	sort.Strings(names)
	var out []programScore
	for _, n := range names {
		ps := perProgram[n]
		c := float64(counts[n])
		ps.value, ps.trueNs = ps.value/c, ps.trueNs/c
		out = append(out, *ps)
	}
	if len(pt) > 0 {
		ml, _ := metric.ComputeMAPE(pt, pp)
		m.ProgramMAPE = ptr(ml.All)
	}
	if len(pt) >= 2 {
		t, _ := metric.KendallTau(pp, pt)
		m.ProgramTau = ptr(t)
	}
	return m, out, nil
}

// rankImplied maps each prediction to the true runtime found at its rank: the i-th
// smallest prediction gets the i-th smallest true runtime (ties keep config order).
func rankImplied(truth, pred []float64) []float64 {
	order := make([]int, len(pred))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return pred[order[a]] < pred[order[b]] })
	sorted := slices.Clone(truth)
	slices.Sort(sorted)
	out := make([]float64, len(pred))
	for r, i := range order {
		out[i] = sorted[r]
	}
	return out
}
