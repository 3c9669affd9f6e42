package gnn

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/dataset"
)

// priorTol bounds |(score with prior − score without) − Prior·ln(analytical)| relative to
// max(1, |score|): the prior enters the graph as float32 (ln of a few µs is about 9, so
// Prior·ln(a) ≈ 18 here, float32's unit roundoff 6e-8 of it) and the network's products
// may round differently in the two graphs (batchTol).
const priorTol = 1e-5

// TestPriorRoundTrip checks the residual on the analytical model: a model with Prior w
// scores every configuration as the same network without the prior plus w·ln(analytical
// ns), for dataset rows (their stored estimate) and for compiled kernels (the planned
// choice's cost.Planned.Analytical), and both routes agree.
func TestPriorRoundTrip(t *testing.T) {
	const w = 2.0
	train, _ := trainRows(t)
	cfg := DefaultConfig()
	cfg.Prior = w
	m := testModel(t, cfg, dataset.TaskTile, LossRankHingeGap, train, 3)
	p, q := withAndWithoutPrior(t, m)

	rows := rowsFor(t, "resnet18_b1", dataset.TaskTile, 1000, rand.New(rand.NewPCG(1, 1)))
	var ptrs []*dataset.Row
	for i := range rows {
		if len(rows[i].Configs) > 1 {
			ptrs = append(ptrs, &rows[i])
		}
	}
	if len(ptrs) == 0 {
		t.Fatal("no row with two configurations or more")
	}
	withPrior, err := p.PredictRows(ptrs)
	if err != nil {
		t.Fatal(err)
	}
	without, err := q.PredictRows(ptrs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range ptrs {
		for j := range r.Configs {
			want := without[i][j] + w*math.Log(r.AnalyticalNs[j])
			if !near(withPrior[i][j], want, priorTol) {
				t.Fatalf("row %s config %s: score %g, want network %g + %g·ln(%g ns) = %g", r.KernelName, r.Configs[j], withPrior[i][j], without[i][j], w, r.AnalyticalNs[j], want)
			}
		}
	}

	prog := compileZoo(t, "resnet18_b1")
	checked := 0
	for _, k := range prog.Kernels[:10] {
		choices := k.Info.Options(k.Key, testChip(t).Target, k.Choice.Config.Flags)
		a, err := p.ScoreKernel(k, choices)
		if err != nil {
			t.Fatal(err)
		}
		b, err := q.ScoreKernel(k, choices)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range choices {
			want := b[i] + w*math.Log(c.Analytical())
			if !near(a[i], want, priorTol) {
				t.Fatalf("%s %s: score %g, want %g", k.Name, c.Config, a[i], want)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no kernel choice scored")
	}
}

// TestAbsolutePriorRoundTrip checks the residual of an absolute (mse) model: with Prior
// w, the predicted log runtime is the same network's without the prior plus
// w·(ln(analytical ns) − μ) (config.go, Config.Prior), for dataset rows and for compiled
// kernels, so at w = 1 the network's part is a factor on the analytical estimate; beyond
// the range of ln(analytical ns) the model was trained on it adds (1 − w)·(ln a − the
// nearer end), so the prediction grows one for one with the estimate there (priorOf).
// The training rows lie inside their own range; the range shrunk to one point puts every
// kernel beyond it.
func TestAbsolutePriorRoundTrip(t *testing.T) {
	rows := rowsFor(t, "resnet18_b1", dataset.TaskFusion, 1, rand.New(rand.NewPCG(1, 1)))
	fitted := testModel(t, DefaultConfig(), dataset.TaskFusion, LossMSE, rows, 3).Target.Analytical
	if fitted == nil || !(fitted.Min < fitted.Max) {
		t.Fatalf("fitted range of ln(analytical ns) %+v, want one of positive width from rows with estimates", fitted)
	}
	for _, c := range []struct {
		w     float64
		point bool // the range shrunk to its midpoint
	}{{1, false}, {0.5, false}, {0.5, true}} {
		w := c.w
		cfg := DefaultConfig()
		cfg.Prior = w
		m := testModel(t, cfg, dataset.TaskFusion, LossMSE, rows, 3)
		if c.point {
			mid := (m.Target.Analytical.Min + m.Target.Analytical.Max) / 2
			m.Target.Analytical = &LogRange{Min: mid, Max: mid}
		}
		// beyond is what the prior adds past the range, in ln ns.
		beyond := func(a float64) float64 {
			r, la := m.Target.Analytical, math.Log(a)
			return (1 - w) * (la - math.Max(r.Min, math.Min(la, r.Max)))
		}
		p, q := withAndWithoutPrior(t, m)
		ptrs := make([]*dataset.Row, len(rows))
		for i := range rows {
			ptrs[i] = &rows[i]
		}
		withPrior, err := p.PredictRows(ptrs)
		if err != nil {
			t.Fatal(err)
		}
		without, err := q.PredictRows(ptrs)
		if err != nil {
			t.Fatal(err)
		}
		// The outputs are standardized log runtimes: priorTol applies to them, σ times
		// larger in ln ns.
		tol := priorTol * m.Target.scale()
		for i, r := range ptrs {
			got := math.Log(withPrior[i][0])
			if !c.point && beyond(r.AnalyticalNs[0]) != 0 {
				t.Fatalf("training row %s lies outside the fitted range %+v", r.KernelName, *m.Target.Analytical)
			}
			want := math.Log(without[i][0]) + w*(math.Log(r.AnalyticalNs[0])-m.Target.LogMean) + beyond(r.AnalyticalNs[0])
			if !near(got, want, tol) {
				t.Fatalf("w %g, row %s: ln predicted %g, want %g (network %g ns, analytical %g ns)", w, r.KernelName, got, want, without[i][0], r.AnalyticalNs[0])
			}
		}
		prog := compileZoo(t, "resnet18_b1")
		for _, k := range prog.Kernels[:10] {
			choices := []cost.Planned{k.Choice}
			a, err := p.ScoreKernel(k, choices)
			if err != nil {
				t.Fatal(err)
			}
			b, err := q.ScoreKernel(k, choices)
			if err != nil {
				t.Fatal(err)
			}
			want := math.Log(b[0]) + w*(math.Log(k.Choice.Analytical())-m.Target.LogMean) + beyond(k.Choice.Analytical())
			if got := math.Log(a[0]); !near(got, want, tol) {
				t.Fatalf("w %g, kernel %s: ln predicted %g, want %g", w, k.Name, got, want)
			}
		}
	}
}

// TestPriorRefused checks that a prior needs tpucost's own features, a weight in range and
// rows with analytical estimates.
func TestPriorRefused(t *testing.T) {
	train, _ := trainRows(t)
	cfg := DefaultConfig()
	cfg.Prior = 1
	st, ts, err := fitStats(sliceSource(train))
	if err != nil {
		t.Fatal(err)
	}
	foreign := cfg
	foreign.FeatureSet = "tpugraphs-v1"
	if _, err := NewModel(foreign, dataset.TaskFusion, LossMSE, st, ts, 1); err == nil || !strings.Contains(err.Error(), "analytical prior") {
		t.Errorf("prior on another feature set: got %v, want a refusal", err)
	}
	for _, bad := range []float64{-1, math.NaN(), maxPrior + 1} {
		c := cfg
		c.Prior = bad
		if err := c.Validate(); err == nil {
			t.Errorf("prior %g accepted", bad)
		}
	}
	m := testModel(t, cfg, dataset.TaskTile, LossRankHinge, train, 1)
	r := train[0]
	r.AnalyticalNs = nil
	k, err := m.prepare(&r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newBatch(m.Config, []item{{k: k, cfgs: []int{0}}}, false, 1, m.Loss, m.Target, false); err == nil || !strings.Contains(err.Error(), "analytical") {
		t.Errorf("row without analytical estimates: got %v, want a refusal", err)
	}
}

// TestDefaultPrior checks where the prior is on by default: single-task models of
// tpucost's own features, tile with a rank loss (weight 1), fusion with mse
// (AbsolutePrior).
func TestDefaultPrior(t *testing.T) {
	multi := DefaultConfig()
	multi.Tasks = []dataset.Task{dataset.TaskTile, dataset.TaskFlags}
	foreign := DefaultConfig()
	foreign.FeatureSet = "tpugraphs-v1"
	for _, tc := range []struct {
		task dataset.Task
		cfg  Config
		loss Loss
		want float64
	}{
		{dataset.TaskTile, DefaultConfig(), LossRankHingeGap, 1},
		{dataset.TaskTile, DefaultConfig(), LossListMLE, 1},
		{dataset.TaskTile, DefaultConfig(), LossMSE, 0},
		{dataset.TaskFlags, DefaultConfig(), LossRankHingeGap, 0},
		{dataset.TaskFusion, DefaultConfig(), LossMSE, AbsolutePrior},
		{dataset.TaskLayout, DefaultConfig(), LossMSE, 0},
		{dataset.TaskFusion, multi, LossMSE, 0},
		{dataset.TaskFusion, foreign, LossMSE, 0},
		{dataset.TaskTile, multi, LossRankHingeGap, 0},
		{dataset.TaskTile, foreign, LossRankHingeGap, 0},
	} {
		if got := DefaultPrior(tc.task, tc.cfg, tc.loss); got != tc.want {
			t.Errorf("DefaultPrior(%s, feature set %q, %d heads, %s) = %g, want %g", tc.task, tc.cfg.FeatureSet, len(tc.cfg.Tasks), tc.loss, got, tc.want)
		}
	}
}

// TestTargetStatsRefused checks that a model refuses target statistics it could not
// predict with: a deviation that is not finite or negative, and an analytical range out of
// order or with an infinite end; a range that is not kept (older checkpoints) is fine.
func TestTargetStatsRefused(t *testing.T) {
	train, _ := trainRows(t)
	st, ts, err := fitStats(sliceSource(train))
	if err != nil {
		t.Fatal(err)
	}
	if ts.Analytical == nil {
		t.Fatal("no range of ln(analytical ns) fitted on rows with estimates")
	}
	unkept := ts
	unkept.Analytical = nil
	if _, err := NewModel(DefaultConfig(), dataset.TaskFusion, LossMSE, st, unkept, 1); err != nil {
		t.Errorf("statistics without an analytical range: %v", err)
	}
	for _, bad := range []TargetStats{
		{LogMean: ts.LogMean, LogStd: math.NaN()},
		{LogMean: ts.LogMean, LogStd: -1},
		{LogMean: math.Inf(1), LogStd: 1},
		{LogMean: ts.LogMean, LogStd: ts.LogStd, Analytical: &LogRange{Min: 9, Max: 8}},
		{LogMean: ts.LogMean, LogStd: ts.LogStd, Analytical: &LogRange{Min: 8, Max: math.Inf(1)}},
		{LogMean: ts.LogMean, LogStd: ts.LogStd, Analytical: &LogRange{Min: math.NaN(), Max: 8}},
	} {
		if _, err := NewModel(DefaultConfig(), dataset.TaskFusion, LossMSE, st, bad, 1); err == nil || !strings.Contains(err.Error(), "target statistics") {
			t.Errorf("target statistics %+v (range %v): got %v, want a refusal", bad, bad.Analytical, err)
		}
	}
}

// withAndWithoutPrior returns predictors (closed when the test ends) of m and of the same
// network without its prior, so that a test can compare their outputs.
func withAndWithoutPrior(t *testing.T, m *Model) (with, without *Predictor) {
	t.Helper()
	plain := *m
	plain.Config.Prior = 0
	target := testChip(t).Target
	var err error
	if with, err = NewPredictor(m, target, PredictorOptions{BatchKernels: 16}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(with.Close)
	if without, err = NewPredictor(&plain, target, PredictorOptions{BatchKernels: 16}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(without.Close)
	return with, without
}
