package eval

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/gnn/metric"
)

// Predict returns a model's predictions (or scores; lower is better) for every config of
// each row, in the row's config order (gnn.Predictor.PredictRows).
type Predict func(rows []*dataset.Row) ([][]float64, error)

// evalBatch is how many rows are predicted per call.
const evalBatch = 256

// Metrics are one model's accuracy on a test set. Pointer and map fields are absent when
// they do not apply to the task.
type Metrics struct {
	// Relative tasks (tile, flags).
	APE        *float64           `json:"ape,omitempty"`         // mean over programs of the per-program APE (%)
	SlowdownAt map[string]float64 `json:"slowdown_at,omitempty"` // "1", "5", "10": mean over kernels
	// Absolute tasks (fusion, layout).
	MAPE        *float64 `json:"mape,omitempty"`       // over all kernels (%)
	MAPEGE5us   *float64 `json:"mape_ge5us,omitempty"` // kernels >= 5 us
	MAPELT5us   *float64 `json:"mape_lt5us,omitempty"` // kernels < 5 us
	ProgramMAPE *float64 `json:"program_mape,omitempty"`
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
	Program    string  `json:"program"`
	Kernels    int     `json:"kernels"`
	Learned    float64 `json:"learned"`    // APE (relative tasks) or program-time APE (absolute tasks), %
	Analytical float64 `json:"analytical"` // the same for the analytical model
	TrueNs     float64 `json:"true_ns"`    // sum of the program's best (relative) or measured (absolute) kernel times
}

// Report is the evaluation of a learned model against the analytical baseline on the
// same rows.
type Report struct {
	Task  dataset.Task `json:"task"`
	Split string       `json:"split"`
	// HeldOutFamilies are the test families of a family split.
	HeldOutFamilies []string `json:"held_out_families,omitempty"`
	Kernels         int      `json:"kernels"`
	// ExcludedRows counts the rows of the evaluated part left out because the model
	// trained or validated on their kernel.
	ExcludedRows int          `json:"excluded_rows"`
	Samples      int          `json:"samples"`
	Programs     int          `json:"programs"`
	Learned      Metrics      `json:"learned"`
	Analytical   Metrics      `json:"analytical"`
	PerProgram   []ProgramRow `json:"per_program"`

	// Pairs for plots (absolute: one per kernel; relative: one per config), capped.
	Points []Point `json:"-"`
}

// Point is one (true, learned, analytical) triple for scatter plots.
type Point struct{ True, Learned, Analytical float64 }

// maxPoints caps the scatter data kept for plots.
const maxPoints = 20000

// kernelData is what evaluation keeps of a test row.
type kernelData struct {
	truth, learned, analytical []float64
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
	task := d.Provenance.Task
	rep := &Report{Task: task, Split: "all"}
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
		preds, err := predict(buf)
		if err != nil {
			return fmt.Errorf("predicting: %w", err)
		}
		for i, r := range buf {
			p := preds[i]
			if len(p) != len(r.RuntimesNs) {
				return fmt.Errorf("kernel %s: %d predictions for %d configs", r.KernelKey, len(p), len(r.RuntimesNs))
			}
			kernels[r.KernelKey] = &kernelData{truth: r.RuntimesNs, learned: p, analytical: r.AnalyticalNs}
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
	for _, k := range keys {
		kd := kernels[k]
		l, a := kd.learned, kd.analytical
		if task.Relative() {
			// A rank model's outputs are scores, not times: plot each config against the
			// true runtime at the rank the model gives it (both models alike), so that a
			// perfect ranking lies on the diagonal.
			l, a = rankImplied(kd.truth, l), rankImplied(kd.truth, a)
		}
		for i := range kd.truth {
			if len(rep.Points) < maxPoints {
				rep.Points = append(rep.Points, Point{kd.truth[i], l[i], a[i]})
			}
		}
	}
	if task.Relative() {
		err = evalRelative(rep, keys, kernels, occ)
	} else {
		err = evalAbsolute(rep, keys, kernels, occ)
	}
	if err != nil {
		return nil, err
	}
	return rep, nil
}

func ptr(x float64) *float64 { return &x }

func evalRelative(rep *Report, keys []string, kernels map[string]*kernelData, occ []dataset.Occurrence) error {
	var tauL, tauA, opaL, opaA float64
	nTau, nOPA := 0, 0
	slow := map[int][2]float64{1: {}, 5: {}, 10: {}}
	for _, key := range keys {
		kd := kernels[key]
		if ol, err := metric.OPA(kd.learned, kd.truth); err == nil {
			oa, _ := metric.OPA(kd.analytical, kd.truth)
			opaL += ol
			opaA += oa
			nOPA++
		}
		if len(kd.truth) >= 2 {
			tl, err := metric.KendallTau(kd.learned, kd.truth)
			if err != nil {
				return err
			}
			ta, err := metric.KendallTau(kd.analytical, kd.truth)
			if err != nil {
				return err
			}
			tauL += tl
			tauA += ta
			nTau++
		}
		for K := range slow {
			sl, err := metric.SlowdownAtK(metric.Kernel{True: kd.truth, Pred: kd.learned}, K)
			if err != nil {
				return fmt.Errorf("kernel %s: %w", key, err)
			}
			sa, err := metric.SlowdownAtK(metric.Kernel{True: kd.truth, Pred: kd.analytical}, K)
			if err != nil {
				return fmt.Errorf("kernel %s: %w", key, err)
			}
			s := slow[K]
			slow[K] = [2]float64{s[0] + sl, s[1] + sa}
		}
	}
	n := float64(len(keys))
	rep.Learned.SlowdownAt, rep.Analytical.SlowdownAt = map[string]float64{}, map[string]float64{}
	for K, s := range slow {
		rep.Learned.SlowdownAt[fmt.Sprint(K)] = s[0] / n
		rep.Analytical.SlowdownAt[fmt.Sprint(K)] = s[1] / n
	}
	if nTau > 0 {
		rep.Learned.KendallTau, rep.Analytical.KendallTau = tauL/float64(nTau), tauA/float64(nTau)
	}
	if nOPA > 0 {
		rep.Learned.OPA, rep.Analytical.OPA = ptr(opaL/float64(nOPA)), ptr(opaA/float64(nOPA))
	}
	rep.Learned.TileScore = ptr(1 - rep.Learned.SlowdownAt["5"])
	rep.Analytical.TileScore = ptr(1 - rep.Analytical.SlowdownAt["5"])
	// Per program: the default-compile units.
	type prog struct {
		kl, ka []metric.Kernel
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
		p.kl = append(p.kl, metric.Kernel{True: kd.truth, Pred: kd.learned})
		p.ka = append(p.ka, metric.Kernel{True: kd.truth, Pred: kd.analytical})
		p.counts = append(p.counts, float64(o.Count))
		p.trueNs += float64(o.Count) * metric.Kernel{True: kd.truth}.MinTrue()
	}
	sort.Strings(names)
	var sumL, sumA float64
	for _, name := range names {
		p := progs[name]
		al, err := metric.ProgramAPE(p.kl, p.counts)
		if err != nil {
			return fmt.Errorf("program %s: %w", name, err)
		}
		aa, err := metric.ProgramAPE(p.ka, p.counts)
		if err != nil {
			return fmt.Errorf("program %s: %w", name, err)
		}
		sumL += al
		sumA += aa
		rep.PerProgram = append(rep.PerProgram, ProgramRow{Program: name, Kernels: len(p.kl), Learned: al, Analytical: aa, TrueNs: p.trueNs})
	}
	rep.Programs = len(names)
	if len(names) > 0 {
		rep.Learned.APE, rep.Analytical.APE = ptr(sumL/float64(len(names))), ptr(sumA/float64(len(names)))
	}
	return nil
}

func evalAbsolute(rep *Report, keys []string, kernels map[string]*kernelData, occ []dataset.Occurrence) error {
	truth := make([]float64, 0, len(keys))
	learned := make([]float64, 0, len(keys))
	analytical := make([]float64, 0, len(keys))
	for _, key := range keys {
		kd := kernels[key]
		// Absolute rows have one config; if a row has several, each is a sample.
		truth = append(truth, kd.truth...)
		learned = append(learned, kd.learned...)
		analytical = append(analytical, kd.analytical...)
	}
	set := func(m *Metrics, pred []float64) error {
		mp, err := metric.ComputeMAPE(truth, pred)
		if err != nil {
			return err
		}
		m.MAPE = ptr(mp.All)
		if mp.NGE5us > 0 {
			m.MAPEGE5us = ptr(mp.GE5us)
		}
		if mp.NLT5us > 0 {
			m.MAPELT5us = ptr(mp.LT5us)
		}
		if len(truth) >= 2 {
			tau, err := metric.KendallTau(pred, truth)
			if err != nil {
				return err
			}
			m.KendallTau = tau
			if opa, err := metric.OPA(pred, truth); err == nil {
				m.OPA = ptr(opa)
			}
		}
		return nil
	}
	if err := set(&rep.Learned, learned); err != nil {
		return err
	}
	if err := set(&rep.Analytical, analytical); err != nil {
		return err
	}
	// Program level: units whose kernels are all evaluated.
	type unit struct {
		program              string
		trueNs, learn, analy float64
		complete             bool
		kernels              int
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
		u.learn += c * kd.learned[0]
		u.analy += c * kd.analytical[0]
		u.kernels++
	}
	slices.Sort(ids)
	var pt, pl, pa []float64
	perProgram := map[string]*ProgramRow{}
	var names []string
	for _, id := range ids {
		u := units[id]
		if !u.complete || u.trueNs <= 0 {
			continue
		}
		pt, pl, pa = append(pt, u.trueNs), append(pl, u.learn), append(pa, u.analy)
		pr := perProgram[u.program]
		if pr == nil {
			pr = &ProgramRow{Program: u.program}
			perProgram[u.program] = pr
			names = append(names, u.program)
		}
		// Per program: mean over its variants of the program-time APE.
		pr.Kernels += u.kernels
		pr.Learned += 100 * math.Abs(u.learn-u.trueNs) / u.trueNs
		pr.Analytical += 100 * math.Abs(u.analy-u.trueNs) / u.trueNs
		pr.TrueNs += u.trueNs
	}
	counts := map[string]int{}
	for _, id := range ids {
		if u := units[id]; u.complete && u.trueNs > 0 {
			counts[u.program]++
		}
	}
	sort.Strings(names)
	for _, n := range names {
		pr := perProgram[n]
		c := float64(counts[n])
		pr.Learned, pr.Analytical, pr.TrueNs = pr.Learned/c, pr.Analytical/c, pr.TrueNs/c
		rep.PerProgram = append(rep.PerProgram, *pr)
	}
	rep.Programs = len(names)
	if len(pt) > 0 {
		ml, _ := metric.ComputeMAPE(pt, pl)
		ma, _ := metric.ComputeMAPE(pt, pa)
		rep.Learned.ProgramMAPE, rep.Analytical.ProgramMAPE = ptr(ml.All), ptr(ma.All)
	}
	if len(pt) >= 2 {
		tl, _ := metric.KendallTau(pl, pt)
		ta, _ := metric.KendallTau(pa, pt)
		rep.Learned.ProgramTau, rep.Analytical.ProgramTau = ptr(tl), ptr(ta)
	}
	return nil
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
