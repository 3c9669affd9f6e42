package gnn

import (
	"math"
	"slices"

	"github.com/tpucost/tpucost/dataset"
)

// Validation metrics (in-training; the eval package computes the full set). All are
// computed over the validation kernels as one pool, lower is better:
//
//   - slowdown@1_pct (relative tasks, the early-stopping metric for tile and flags): per
//     kernel with at least two configurations, 100·(t(ĉ) − min_c t(c)) / min_c t(c)
//     where ĉ is the configuration the model ranks first; averaged over kernels.
//   - ape_pct (relative tasks): the tile APE of the pool of validation kernels taken as
//     one program, 100·|Σ_k t(k, ĉ_k) − Σ_k min_c t(k, c)| / Σ_k min_c t(k, c).
//   - mape_pct (models that predict runtimes, i.e. the mse loss; the early-stopping
//     metric for fusion and layout): mean over samples of 100·|t̂ − t| / t.
//
// The validation loss is the model's loss over the whole validation set: the mean of
// L_k over kernels with at least two configurations (rank losses, all configurations),
// or the mean squared error over all samples (mse).
const (
	MetricSlowdown = "slowdown@1_pct"
	MetricAPE      = "ape_pct"
	MetricMAPE     = "mape_pct"
)

// MetricFor is the early-stopping metric of a task.
func MetricFor(task dataset.Task) string {
	if task.Relative() {
		return MetricSlowdown
	}
	return MetricMAPE
}

// ValResult is one validation pass.
type ValResult struct {
	Loss    float64            `json:"loss"`
	Metric  float64            `json:"metric"` // Metrics[MetricFor(task)]
	Metrics map[string]float64 `json:"metrics"`
	Kernels int                `json:"kernels"`
	Samples int                `json:"samples"`
}

// valAccum accumulates validation results kernel by kernel.
type valAccum struct {
	m *Model

	lossSum float64
	lossN   int
	slowSum float64
	slowN   int
	chosen  float64 // Σ t(k, ĉ_k)
	best    float64 // Σ min_c t(k, c)
	apeSum  float64
	apeN    int
	kernels int
	samples int
}

// add records one kernel's raw outputs (one per configuration).
func (a *valAccum) add(k *kernel, out []float64) {
	a.kernels++
	a.samples += len(out)
	rt := k.runtimes
	if a.m.Loss.Rank() {
		if len(out) >= 2 {
			a.lossSum += RankLoss(a.m.Loss, out, rt)
			a.lossN++
		}
	} else {
		for i, y := range out {
			d := y - a.m.Target.standardize(rt[i])
			a.lossSum += d * d
			a.lossN++
			ns := a.m.Target.runtime(y)
			a.apeSum += 100 * math.Abs(ns-rt[i]) / rt[i]
			a.apeN++
		}
	}
	if a.m.Task.Relative() && len(out) >= 2 {
		top := argmin(out)
		best := slices.Min(rt)
		a.slowSum += 100 * (rt[top] - best) / best
		a.slowN++
		a.chosen += rt[top]
		a.best += best
	}
}

func (a *valAccum) result() ValResult {
	r := ValResult{Metrics: map[string]float64{}, Kernels: a.kernels, Samples: a.samples}
	if a.lossN > 0 {
		r.Loss = a.lossSum / float64(a.lossN)
	}
	if a.slowN > 0 {
		r.Metrics[MetricSlowdown] = a.slowSum / float64(a.slowN)
		r.Metrics[MetricAPE] = 100 * math.Abs(a.chosen-a.best) / a.best
	}
	if a.apeN > 0 {
		r.Metrics[MetricMAPE] = a.apeSum / float64(a.apeN)
	}
	r.Metric = r.Metrics[MetricFor(a.m.Task)]
	return r
}

// argmin returns the index of the smallest value (the first on ties).
func argmin(xs []float64) int {
	best := 0
	for i, x := range xs {
		if x < xs[best] {
			best = i
		}
	}
	return best
}
