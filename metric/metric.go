// Package metric holds the accuracy metrics of cost models exactly as DESIGN.md defines
// them — tile APE, MAPE split at 5 µs, Kendall's τ, slowdown@K — as pure functions of true
// and predicted runtimes. It is a leaf: training validation (package gnn) and evaluation
// (package gnn/eval) both compute their numbers here, so the two cannot disagree.
package metric

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// ErrNonPositive is returned for a zero or negative true runtime: relative errors are
// undefined there, so such data is rejected rather than silently skipped.
var ErrNonPositive = errors.New("true runtime must be positive")

// Kernel is one kernel's measured configs with a model's predictions: True[i] and Pred[i]
// are the true (measured) runtime and the model's prediction or score of config i; lower
// is better for both.
type Kernel struct {
	True, Pred []float64
}

func (k Kernel) check() error {
	if len(k.True) != len(k.Pred) {
		return fmt.Errorf("%d true runtimes, %d predictions", len(k.True), len(k.Pred))
	}
	if len(k.True) == 0 {
		return errors.New("kernel has no configs")
	}
	for _, t := range k.True {
		if !(t > 0) {
			return fmt.Errorf("%w, got %g", ErrNonPositive, t)
		}
	}
	return nil
}

// MinTrue is the best true runtime of k.
func (k Kernel) MinTrue() float64 {
	m := math.Inf(1)
	for _, t := range k.True {
		m = math.Min(m, t)
	}
	return m
}

// ChosenTrue is the true runtime of the model's best config ĉ: the config with the lowest
// prediction, ties broken by config order (the first listed wins). Datasets list the
// compiler's own choice first, so a model that cannot tell configs apart (like the
// analytical roofline on many tiles) gets the compiler's tie-break.
func (k Kernel) ChosenTrue() float64 {
	best := 0
	for i, p := range k.Pred {
		if p < k.Pred[best] {
			best = i
		}
	}
	return k.True[best]
}

// ProgramAPE is the tile-size APE of one program: 100 · |Σ_k c_k·t(k, ĉ_k) − Σ_k c_k·min_c
// t(k, c)| / Σ_k c_k·min_c t(k, c), where c_k is how many times kernel k occurs in the
// program (counts may be nil: every kernel once).
func ProgramAPE(kernels []Kernel, counts []float64) (float64, error) {
	if counts != nil && len(counts) != len(kernels) {
		return 0, fmt.Errorf("%d kernels, %d counts", len(kernels), len(counts))
	}
	var chosen, best float64
	for i, k := range kernels {
		if err := k.check(); err != nil {
			return 0, fmt.Errorf("kernel %d: %w", i, err)
		}
		c := 1.0
		if counts != nil {
			c = counts[i]
		}
		chosen += c * k.ChosenTrue()
		best += c * k.MinTrue()
	}
	if best == 0 {
		return 0, errors.New("program has no kernels")
	}
	return 100 * math.Abs(chosen-best) / best, nil
}

// SlowdownAtK is the TpuGraphs tile metric for one kernel: (min true runtime over the
// model's top-K configs − true min) / true min. Top-K sorts by prediction; ties in the
// prediction are broken by config order (the first listed wins), K is capped at the
// number of configs.
func SlowdownAtK(k Kernel, K int) (float64, error) {
	if err := k.check(); err != nil {
		return 0, err
	}
	if K <= 0 {
		return 0, fmt.Errorf("K must be positive, got %d", K)
	}
	idx := make([]int, len(k.Pred))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return k.Pred[idx[a]] < k.Pred[idx[b]] })
	m := math.Inf(1)
	for _, i := range idx[:min(K, len(idx))] {
		m = math.Min(m, k.True[i])
	}
	best := k.MinTrue()
	return (m - best) / best, nil
}

// KendallTau is Kendall's τ-b between x and y: (concordant − discordant) /
// sqrt((n0 − tiesX)(n0 − tiesY)) over the n0 = n(n−1)/2 pairs, where pairs tied in x or
// y count as neither. It is 0 when either side is constant, and an error for fewer than
// two values. (gonum's stat.Kendall is τ-a and scores ties as concordant or discordant by
// the sign bit of zero, which biases models that predict ties, like the analytical model
// on tiles it cannot tell apart.)
func KendallTau(x, y []float64) (float64, error) { return KendallTauResolved(x, y, 0) }

// KendallTauResolved is KendallTau where two values of x closer than res relative to the
// larger (|x_i − x_j| ≤ res · max(|x_i|, |x_j|)) count as tied: a predictor is not
// credited or blamed for orderings finer than the measurements resolve. res = 0 is
// KendallTau.
func KendallTauResolved(x, y []float64, res float64) (float64, error) {
	if res < 0 || math.IsNaN(res) {
		return 0, fmt.Errorf("resolution must be >= 0, got %g", res)
	}
	if len(x) != len(y) {
		return 0, fmt.Errorf("%d and %d values", len(x), len(y))
	}
	n := len(x)
	if n < 2 {
		return 0, fmt.Errorf("kendall tau needs at least 2 values, got %d", n)
	}
	var conc, disc, tx, ty float64
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			dx, dy := sign(x[i]-x[j]), sign(y[i]-y[j])
			if res > 0 && math.Abs(x[i]-x[j]) <= res*math.Max(math.Abs(x[i]), math.Abs(x[j])) {
				dx = 0
			}
			switch {
			case dx == 0 && dy == 0:
				tx++
				ty++
			case dx == 0:
				tx++
			case dy == 0:
				ty++
			case dx == dy:
				conc++
			default:
				disc++
			}
		}
	}
	n0 := float64(n*(n-1)) / 2
	den := math.Sqrt((n0 - tx) * (n0 - ty))
	if den == 0 {
		return 0, nil
	}
	return (conc - disc) / den, nil
}

func sign(x float64) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

// FiveMicroseconds is where MAPE is split: kernels at or above it are reported apart from
// the short ones, whose relative errors are dominated by fixed overheads.
const FiveMicroseconds = 5000.0

// MAPE is the mean absolute percentage error 100 · mean |pred − true| / true over the
// pairs, reported for all pairs and separately for true ≥ 5 µs and true < 5 µs; a group
// without pairs is NaN (absent).
type MAPE struct {
	All, GE5us, LT5us float64
	N, NGE5us, NLT5us int
}

// ComputeMAPE computes the MAPE of predictions against true runtimes (ns).
func ComputeMAPE(truth, pred []float64) (MAPE, error) {
	if len(truth) != len(pred) {
		return MAPE{}, fmt.Errorf("%d true values, %d predictions", len(truth), len(pred))
	}
	var all, ge, lt float64
	var m MAPE
	for i, t := range truth {
		if !(t > 0) {
			return MAPE{}, fmt.Errorf("pair %d: %w, got %g", i, ErrNonPositive, t)
		}
		e := 100 * math.Abs(pred[i]-t) / t
		all += e
		m.N++
		if t >= FiveMicroseconds {
			ge += e
			m.NGE5us++
		} else {
			lt += e
			m.NLT5us++
		}
	}
	m.All, m.GE5us, m.LT5us = mean(all, m.N), mean(ge, m.NGE5us), mean(lt, m.NLT5us)
	return m, nil
}

func mean(sum float64, n int) float64 {
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// OPA is the ordered pair accuracy of the TpuGraphs layout baseline: over the pairs whose
// true values differ, the fraction the prediction orders the same way,
// Σ_{i,j} [y_i > y_j]·[ŷ_i > ŷ_j] / Σ_{i,j} [y_i > y_j] (a tie in the prediction is a
// miss). It is an error for fewer than two values or when every true value is equal.
func OPA(pred, truth []float64) (float64, error) {
	if len(pred) != len(truth) {
		return 0, fmt.Errorf("%d predictions, %d true values", len(pred), len(truth))
	}
	var hit, all float64
	for i := range truth {
		for j := range truth {
			if truth[i] > truth[j] {
				all++
				if pred[i] > pred[j] {
					hit++
				}
			}
		}
	}
	if all == 0 {
		return 0, errors.New("OPA needs two different true values")
	}
	return hit / all, nil
}

// TileScore is the TpuGraphs leaderboard's tile score over kernels: 1 − the mean
// slowdown@5 (SlowdownAtK with K = 5), so 1 is a model whose top five always hold the best
// config.
func TileScore(kernels []Kernel) (float64, error) {
	if len(kernels) == 0 {
		return 0, errors.New("tile score of no kernels")
	}
	var s float64
	for i, k := range kernels {
		x, err := SlowdownAtK(k, 5)
		if err != nil {
			return 0, fmt.Errorf("kernel %d: %w", i, err)
		}
		s += x
	}
	return 1 - s/float64(len(kernels)), nil
}
