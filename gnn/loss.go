package gnn

import (
	"fmt"
	"math"
)

// This file holds the losses evaluated on the host, in float64: validation uses them, and
// the tests check that the training graph computes the same values.
//
// Rank loss (the paper's, Kaufman et al. 2021, §4): for one kernel with n configurations,
// true runtimes y and model outputs ŷ,
//
//	L_k = Σ_{i=1..n} Σ_{j=1..n} φ(ŷ_i − ŷ_j) · pos(y_i − y_j) / (n(n−1)/2)
//
// where pos(z) = 1 if z > 0 else 0, and φ(z) = max(0, 1 − z) (hinge) or log(1 + e^(−z))
// (logistic). A pair contributes when i is slower than j; the loss pushes ŷ_i above ŷ_j
// (by a margin of 1 for the hinge), so lower outputs mean faster configurations. The
// denominator is the number of unordered pairs, n(n−1)/2: each pair with distinct runtimes
// is counted once in the double sum; tied pairs contribute nothing but still count in the
// denominator, exactly as in the formula. A batch's loss is the mean of L_k over its
// kernels with n ≥ 2 (kernels with one configuration have no pairs and are skipped).
//
// MSE loss (absolute models): L = Σ_s (ŷ_s − ỹ_s)² / S over the batch's S samples, where
// ỹ_s = (ln t_s − μ)/σ is the standardized log runtime in ns (μ, σ fitted on the training
// split; see TargetStats).

// phi is the rank loss's φ.
func phi(l Loss, z float64) float64 {
	switch l {
	case LossRankHinge:
		return math.Max(0, 1-z)
	case LossRankLogistic:
		// log(1 + e^(−z)), computed without overflow.
		if z >= 0 {
			return math.Log1p(math.Exp(-z))
		}
		return -z + math.Log1p(math.Exp(z))
	}
	panic(fmt.Sprintf("gnn: phi of non-rank loss %q", l))
}

// RankLoss is L_k above for one kernel: pred are the model's outputs and runtimes the true
// runtimes of its configurations, in the same order. It is 0 for fewer than two
// configurations.
func RankLoss(l Loss, pred, runtimes []float64) float64 {
	n := len(pred)
	if n != len(runtimes) {
		panic(fmt.Sprintf("gnn: %d predictions for %d runtimes", n, len(runtimes)))
	}
	if n < 2 {
		return 0
	}
	var sum float64
	for i := range n {
		for j := range n {
			if runtimes[i] > runtimes[j] {
				sum += phi(l, pred[i]-pred[j])
			}
		}
	}
	return sum / (float64(n) * float64(n-1) / 2)
}

// MSELoss is the mean squared error between predictions and targets (both standardized
// log runtimes for the model's loss). It is 0 for no samples.
func MSELoss(pred, target []float64) float64 {
	if len(pred) != len(target) {
		panic(fmt.Sprintf("gnn: %d predictions for %d targets", len(pred), len(target)))
	}
	if len(pred) == 0 {
		return 0
	}
	var sum float64
	for i := range pred {
		d := pred[i] - target[i]
		sum += d * d
	}
	return sum / float64(len(pred))
}

// TargetStats standardize log runtimes for the MSE loss: ỹ = (ln t − LogMean)/LogStd.
type TargetStats struct {
	LogMean float64 `json:"log_mean"`
	LogStd  float64 `json:"log_std"`
}

// standardize maps a runtime in ns to the model's target.
func (t TargetStats) standardize(ns float64) float64 {
	return (math.Log(math.Max(ns, minRuntimeNs)) - t.LogMean) / t.scale()
}

// runtime maps a model output back to ns.
func (t TargetStats) runtime(y float64) float64 { return math.Exp(y*t.scale() + t.LogMean) }

func (t TargetStats) scale() float64 {
	if t.LogStd < 1e-6 {
		return 1
	}
	return t.LogStd
}

// minRuntimeNs is the floor applied to runtimes before taking logs (a measured runtime
// of 0 would be a data error; this keeps the log finite).
const minRuntimeNs = 1e-3
