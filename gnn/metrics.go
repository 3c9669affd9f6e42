package gnn

import (
	"fmt"
	"slices"

	"github.com/tpucost/tpucost/metric"
)

// Validation metrics (in-training; the eval package computes the full set). All are
// computed over the validation kernels as one pool, lower is better:
//
//   - slowdown_at_1 (ranked models, the early-stopping metric for tile, flags and per-node
//     layout models; see Model.Ranked): per kernel with at least two configurations,
//     (t(ĉ) − min_c t(c)) / min_c t(c), a fraction as eval's slowdown_at, where ĉ is the
//     configuration the model ranks first; averaged over kernels.
//   - ape_pct (relative tasks): the tile APE of the pool of validation kernels taken as
//     one program, 100·|Σ_k t(k, ĉ_k) − Σ_k min_c t(k, c)| / Σ_k min_c t(k, c).
//   - mape_pct (models that predict runtimes, i.e. the mse loss; the early-stopping
//     metric for fusion and layout): mean over samples of 100·|t̂ − t| / t.
//
// The validation loss is the model's loss over the whole validation set: the mean of
// L_k over kernels with at least two configurations (rank losses, all configurations),
// or the mean squared error over all samples (mse).
const (
	MetricSlowdown = "slowdown_at_1"
	MetricAPE      = "ape_pct"
	MetricMAPE     = "mape_pct"

	// legacyMetricSlowdown is MetricSlowdown in percent, as checkpoints before the JSON
	// vocabulary rule recorded it; such a checkpoint is not resumed (its history's
	// metric is on another scale).
	legacyMetricSlowdown = "slowdown@1_pct"
)

// Metrics lists the early-stopping metrics' names (they are JSON keys: train's
// val.metrics, the checkpoint's metric).
func Metrics() []string { return []string{MetricSlowdown, MetricAPE, MetricMAPE} }

// Metric is the model's early-stopping metric: slowdown@1 for a model whose rows rank
// configurations (Ranked: tile, flags, per-node layout), else MAPE.
func (m *Model) Metric() string {
	if m.Ranked() {
		return MetricSlowdown
	}
	return MetricMAPE
}

// ValResult is one validation pass.
type ValResult struct {
	Loss    float64            `json:"loss"`
	Metric  float64            `json:"metric"` // Metrics[Model.Metric()]
	Metrics map[string]float64 `json:"metrics"`
	Kernels int                `json:"kernels"`
	Samples int                `json:"samples"`
}

// valAccum accumulates validation results kernel by kernel; the metrics themselves are
// package metric's, the same functions evaluation uses.
type valAccum struct {
	m *Model

	lossSum float64
	lossN   int
	ranked  []metric.Kernel // ranked models: kernels with at least two configurations
	truth   []float64       // mse: every sample's true runtime ...
	pred    []float64       // ... and the runtime the model predicts for it
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
			a.lossSum += kernelRankLoss(a.m.Loss, out, rt)
			a.lossN++
		}
	} else {
		for i, y := range out {
			d := y - a.m.Target.standardize(rt[i])
			a.lossSum += d * d
			a.lossN++
			a.truth = append(a.truth, rt[i])
			a.pred = append(a.pred, a.m.Target.runtime(y))
		}
	}
	if a.m.Ranked() && len(out) >= 2 {
		a.ranked = append(a.ranked, metric.Kernel{True: rt, Pred: slices.Clone(out)})
	}
}

func (a *valAccum) result() (ValResult, error) {
	r := ValResult{Metrics: map[string]float64{}, Kernels: a.kernels, Samples: a.samples}
	if a.lossN > 0 {
		r.Loss = a.lossSum / float64(a.lossN)
	}
	if len(a.ranked) > 0 {
		var slow float64
		for i, k := range a.ranked {
			s, err := metric.SlowdownAtK(k, 1)
			if err != nil {
				return r, fmt.Errorf("validation kernel %d: %w", i, err)
			}
			slow += s
		}
		r.Metrics[MetricSlowdown] = slow / float64(len(a.ranked))
		ape, err := metric.ProgramAPE(a.ranked, nil)
		if err != nil {
			return r, fmt.Errorf("validation APE: %w", err)
		}
		r.Metrics[MetricAPE] = ape
	}
	if len(a.truth) > 0 {
		m, err := metric.ComputeMAPE(a.truth, a.pred)
		if err != nil {
			return r, fmt.Errorf("validation MAPE: %w", err)
		}
		r.Metrics[MetricMAPE] = m.All
	}
	r.Metric = r.Metrics[a.m.Metric()]
	return r, nil
}
