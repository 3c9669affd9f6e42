package validate

import (
	"fmt"
	"math"

	"github.com/tpucost/tpucost/metric"
)

// Scores is how well one predictor ranks a set of kernels' (or programs') measured
// configurations. Every field is a mean over the scored kernels.
type Scores struct {
	// KendallTau is Kendall's τ-b between predicted and measured time over a kernel's
	// configurations, predictions closer than Resolution counted as ties
	// (metric.KendallTauResolved); KendallTauStrict counts every difference.
	KendallTau       float64 `json:"kendall_tau"`
	KendallTauStrict float64 `json:"kendall_tau_strict"`
	// Top1Slowdown is the measured time of the predictor's best configuration over the
	// measured best, minus 1 (metric.SlowdownAtK, K = 1): a fraction.
	Top1Slowdown float64 `json:"top1_slowdown"`
	// Top5Slowdown is the same for the best measured of the predictor's top 5.
	Top5Slowdown float64 `json:"top5_slowdown"`
	// MAPEScaled is the mean absolute percentage error (percent) after one scale per
	// kernel (ScaleFit): the shape of the time curve, not its absolute level.
	MAPEScaled float64 `json:"mape_scaled_pct"`
}

// Group is one kernel's (or program's) measured configurations.
type Group struct {
	Name     string
	Measured []float64 // ns, > 0
	Default  int       // index of the compiler's default configuration, -1 if none
}

// timedRun is what scoring reads of a replayed run (TileRun, LayoutRun).
type timedRun interface {
	times() (measured, sim, analytical float64, isDefault bool)
}

func (r TileRun) times() (float64, float64, float64, bool) {
	return r.MeasuredNs, r.SimNs, r.AnalyticalNs, r.Default
}

func (r LayoutRun) times() (float64, float64, float64, bool) {
	return r.MeasuredNs, r.SimNs, r.AnalyticalNs, r.Default
}

// columns is runs as a Group (named name, its measured times and its default run) and
// the simulator's and the analytical model's times of each run.
func columns[R timedRun](name string, runs []R) (g Group, sim, an []float64) {
	g = Group{Name: name, Default: -1, Measured: make([]float64, len(runs))}
	sim, an = make([]float64, len(runs)), make([]float64, len(runs))
	for i, r := range runs {
		var def bool
		g.Measured[i], sim[i], an[i], def = r.times()
		if def {
			g.Default = i
		}
	}
	return g, sim, an
}

// Resolution is the relative difference below which two predictions count as tied in
// Scores.KendallTau: the finest the TPU measurements resolve. Identical configurations of
// the layout file's 910 ms module measure up to 20 µs apart (2e-5); the tile files'
// repeated runs differ by 0.03% to 4%.
const Resolution = 1e-5

// ScaleFit is the one factor s that best fits predictions p to measurements m in
// relative terms: it minimizes Σ ((s·p_i − m_i) / m_i)², so s = Σ(p_i/m_i) / Σ(p_i/m_i)².
func ScaleFit(p, m []float64) float64 {
	var a, b float64
	for i := range p {
		r := p[i] / m[i]
		a += r
		b += r * r
	}
	if b == 0 {
		return 1
	}
	return a / b
}

// Score scores predictions pred[g][i] of configuration i of group g. Groups with fewer
// than two configurations are an error (the caller filters them: a ranking of one is
// meaningless).
func Score(groups []Group, pred [][]float64) (Scores, error) {
	var s Scores
	if len(groups) == 0 {
		return s, fmt.Errorf("no groups to score")
	}
	if len(pred) != len(groups) {
		return s, fmt.Errorf("%d groups, %d prediction lists", len(groups), len(pred))
	}
	for g, grp := range groups {
		k := metric.Kernel{True: grp.Measured, Pred: pred[g]}
		tau, err := metric.KendallTauResolved(pred[g], grp.Measured, Resolution)
		if err != nil {
			return s, fmt.Errorf("%s: %w", grp.Name, err)
		}
		strict, err := metric.KendallTau(pred[g], grp.Measured)
		if err != nil {
			return s, fmt.Errorf("%s: %w", grp.Name, err)
		}
		t1, err := metric.SlowdownAtK(k, 1)
		if err != nil {
			return s, fmt.Errorf("%s: %w", grp.Name, err)
		}
		t5, err := metric.SlowdownAtK(k, 5)
		if err != nil {
			return s, fmt.Errorf("%s: %w", grp.Name, err)
		}
		sc := ScaleFit(pred[g], grp.Measured)
		scaled := make([]float64, len(pred[g]))
		for i, p := range pred[g] {
			scaled[i] = sc * p
		}
		mp, err := metric.ComputeMAPE(grp.Measured, scaled)
		if err != nil {
			return s, fmt.Errorf("%s: %w", grp.Name, err)
		}
		s.KendallTau += tau
		s.KendallTauStrict += strict
		s.Top1Slowdown += t1
		s.Top5Slowdown += t5
		s.MAPEScaled += mp.All
	}
	n := float64(len(groups))
	s.KendallTau /= n
	s.KendallTauStrict /= n
	s.Top1Slowdown /= n
	s.Top5Slowdown /= n
	s.MAPEScaled /= n
	return s, nil
}

// DefaultSlowdown is the mean, over the groups that mark a default, of the measured time
// of the compiler's default configuration over the measured best, minus 1: the baseline
// every predictor's Top1Slowdown must beat. NaN when no group has a default.
func DefaultSlowdown(groups []Group) float64 {
	var sum float64
	n := 0
	for _, g := range groups {
		if g.Default < 0 {
			continue
		}
		best := math.Inf(1)
		for _, m := range g.Measured {
			best = math.Min(best, m)
		}
		sum += g.Measured[g.Default]/best - 1
		n++
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}
