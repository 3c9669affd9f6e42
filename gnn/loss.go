package gnn

import (
	"cmp"
	"fmt"
	"math"
	"slices"
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

// phi is the rank loss's φ, the registered one of l (lossDefs).
func phi(l Loss, z float64) float64 { return l.phi().value(z) }

// phiDeriv is φ'(z) of l's φ.
func phiDeriv(l Loss, z float64) float64 { return l.phi().deriv(z) }

// phi returns l's registered φ; it panics for a loss that is not pairwise.
func (l Loss) phi() phiFunc {
	if f := l.def().phi; f != nil {
		return f
	}
	panic(fmt.Sprintf("gnn: phi of non-rank loss %q", l))
}

// A phiFunc is a pairwise rank loss's φ: its value and its derivative.
type phiFunc interface {
	value(z float64) float64
	deriv(z float64) float64
}

// hingePhi is φ(z) = max(0, 1 − z); φ'(z) = −1 where 1 − z > 0, else 0.
type hingePhi struct{}

func (hingePhi) value(z float64) float64 { return math.Max(0, 1-z) }

func (hingePhi) deriv(z float64) float64 {
	if 1-z > 0 {
		return -1
	}
	return 0
}

// logisticPhi is φ(z) = log(1 + e^(−z)), computed without overflow; φ'(z) = −1/(1 + e^z).
type logisticPhi struct{}

func (logisticPhi) value(z float64) float64 {
	if z >= 0 {
		return math.Log1p(math.Exp(-z))
	}
	return -z + math.Log1p(math.Exp(z))
}

func (logisticPhi) deriv(z float64) float64 { return -1 / (1 + math.Exp(z)) }

// kernelRankLoss is L_k above for one kernel: pred are the model's outputs and runtimes the true
// runtimes of its configurations, in the same order. It is 0 for fewer than two
// configurations. For LossListMLE it is listMLELoss.
func kernelRankLoss(l Loss, pred, runtimes []float64) float64 {
	n := len(pred)
	if n != len(runtimes) {
		panic(fmt.Sprintf("gnn: %d predictions for %d runtimes", n, len(runtimes)))
	}
	if n < 2 {
		return 0
	}
	if l.def().form == listwise {
		return listMLELoss(pred, runtimes)
	}
	var sum float64
	for i := range n {
		for j := range n {
			if runtimes[i] > runtimes[j] {
				w := 1.0
				if l.gapWeighted() {
					w = pairWeight(math.Log(runtimes[i]) - math.Log(runtimes[j]))
				}
				sum += w * phi(l, pred[i]-pred[j])
			}
		}
	}
	return sum / (float64(n) * float64(n-1) / 2)
}

// gapScale is the relative runtime difference at which a pair of LossRankHingeGap counts
// fully: 10%, where a wrong pick starts to show in a program's time (the tile APEs of
// the paper and of our zoo are a few percent).
const gapScale = 0.10

// pairWeight is LossRankHingeGap's weight of a pair whose log runtimes differ by gap > 0:
// min(1, gap / ln(1 + gapScale)).
func pairWeight(gap float64) float64 { return math.Min(1, gap/math.Log1p(gapScale)) }

// listMLELoss is the ListMLE loss (Xia et al., "Listwise approach to learning to rank",
// ICML 2008) of one kernel's configurations: with π the configurations sorted by true
// runtime, fastest first (ties in their listed order), and scores s = −ŷ (lower outputs
// are faster configurations, as for the pairwise losses),
//
//	L_k = −Σ_{i=1..n} log softmax_i(s_π(i); s_π(i), …, s_π(n))
//	    = Σ_{i=1..n} [ ŷ_π(i) + log Σ_{j=i..n} e^(−ŷ_π(j)) ]
//
// the negative log-likelihood of the true order under the Plackett–Luce model (the last
// term is 0). The sums are log-sum-exps computed from the end of the list, so no
// exponential overflows. It is 0 for fewer than two configurations. A batch's loss is the
// mean of L_k over its kernels with n ≥ 2 (not divided by n, as in the paper and
// TF-Ranking).
func listMLELoss(pred, runtimes []float64) float64 {
	n := len(pred)
	if n != len(runtimes) {
		panic(fmt.Sprintf("gnn: %d predictions for %d runtimes", n, len(runtimes)))
	}
	if n < 2 {
		return 0
	}
	rank := make([]float64, n)
	for i := range n {
		for j := range n {
			if runtimes[j] < runtimes[i] {
				rank[i]++
			}
		}
	}
	l, _ := listMLE(pred, rank, []float64{1}, []int{0, n}, false)
	return l
}

// listOrder returns the indices lo..hi−1 sorted by rank (ascending: fastest first), ties
// by index.
func listOrder[T float32 | float64](rank []T, lo, hi int) []int {
	idx := make([]int, hi-lo)
	for i := range idx {
		idx[i] = lo + i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(rank[a], rank[b]) })
	return idx
}

// listMLE evaluates Σ_k w_k L_k (listMLELoss) for outputs out, per-sample ranks (the
// number of faster configurations of the kernel), kernel weights w and sample spans
// span (kernel k: span[k]..span[k+1]−1) and, with grad, its gradient with respect to the
// outputs, in float64 internally:
//
//	∂L_k/∂ŷ_π(m) = 1 − Σ_{i≤m} e^(−ŷ_π(m)) / Σ_{j≥i} e^(−ŷ_π(j)),
//
// the inner sum accumulated in the log domain (each term is at most 1).
func listMLE[T float32 | float64](out, rank, w []T, span []int, grad bool) (float64, []T) {
	var sum float64
	var d []T
	if grad {
		d = make([]T, len(out))
	}
	for k := range w {
		wk := float64(w[k])
		lo, hi := span[k], span[k+1]
		if wk == 0 || hi-lo < 2 {
			continue
		}
		order := listOrder(rank, lo, hi)
		n := len(order)
		// suffix[i] = log Σ_{j≥i} e^(−ŷ_π(j)).
		suffix := make([]float64, n+1)
		suffix[n] = math.Inf(-1)
		for i := n - 1; i >= 0; i-- {
			suffix[i] = logAddExp(-float64(out[order[i]]), suffix[i+1])
		}
		for i := range n {
			sum += wk * (float64(out[order[i]]) + suffix[i])
		}
		if !grad {
			continue
		}
		acc := math.Inf(-1) // log Σ_{i≤m} e^(−suffix[i])
		for m := range n {
			acc = logAddExp(acc, -suffix[m])
			d[order[m]] += T(wk * (1 - math.Exp(-float64(out[order[m]])+acc)))
		}
	}
	return sum, d
}

// logAddExp is log(e^a + e^b) without overflow.
func logAddExp(a, b float64) float64 {
	if math.IsInf(a, -1) {
		return b
	}
	if math.IsInf(b, -1) {
		return a
	}
	if a < b {
		a, b = b, a
	}
	return a + math.Log1p(math.Exp(b-a))
}

// mseLoss is the mean squared error between predictions and targets (both standardized
// log runtimes for the model's loss). It is 0 for no samples.
func mseLoss(pred, target []float64) float64 {
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
	// Analytical is the range of ln(analytical ns) over the training samples that have an
	// estimate, nil when none has one (and in checkpoints written before it was kept).
	// An absolute model with a prior follows the analytical estimate one for one beyond
	// it (priorOf).
	Analytical *LogRange `json:"analytical_log_range,omitempty"`
}

// validate checks what a checkpoint stores: finite statistics, a non-negative deviation,
// and an analytical range (when kept) of finite ends in order.
func (t TargetStats) validate() error {
	if math.IsNaN(t.LogMean) || math.IsInf(t.LogMean, 0) || math.IsNaN(t.LogStd) || math.IsInf(t.LogStd, 0) || t.LogStd < 0 {
		return fmt.Errorf("target statistics: log mean %g and log standard deviation %g, want finite ones (the deviation >= 0)", t.LogMean, t.LogStd)
	}
	if r := t.Analytical; r != nil && !(r.Min <= r.Max && !math.IsInf(r.Min, 0) && !math.IsInf(r.Max, 0)) {
		return fmt.Errorf("target statistics: range of ln(analytical ns) [%g, %g], want finite ends in order", r.Min, r.Max)
	}
	return nil
}

// LogRange is a closed range of natural logarithms.
type LogRange struct {
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

// beyond is how far x lies outside r: x − Max above it, x − Min below it, 0 inside
// (and for a nil range).
func (r *LogRange) beyond(x float64) float64 {
	switch {
	case r == nil:
		return 0
	case x > r.Max:
		return x - r.Max
	case x < r.Min:
		return x - r.Min
	}
	return 0
}

// add widens r to hold x.
func (r *LogRange) add(x float64) *LogRange {
	if r == nil {
		return &LogRange{Min: x, Max: x}
	}
	r.Min, r.Max = math.Min(r.Min, x), math.Max(r.Max, x)
	return r
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
