package eval

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/gnn"
	"github.com/tpucost/tpucost/internal/dirlock"
)

// RunOptions select what `tpucost eval` evaluates.
type RunOptions struct {
	ModelDir string
	// DataDir is the dataset to evaluate on; default: the (first) dataset the model was
	// trained on, at the path model.json records relative to ModelDir.
	DataDir string
	// Split is "random" or "program"; empty: the checkpoint's. It must be the split the
	// model was trained with (same kind, test fraction and seed), or the test rows would
	// include training rows; a mismatch is an error.
	Split    string
	PlotsDir string // write PNG plots here when set
	// AllowMismatch evaluates on data simulated for another chip, VMEM size or simulator
	// version than the model's training data, with a warning to Warn, and marks the
	// result ChipMismatch; without it such data is refused.
	AllowMismatch bool
	Warn          io.Writer // nil: warnings are dropped
}

// Result is a finished evaluation.
type Result struct {
	*Report
	Model      string   `json:"model"`
	Data       string   `json:"data"`
	TestFrac   float64  `json:"test_fraction"`
	SplitSeed  int64    `json:"split_seed"`
	Metric     string   `json:"metric"`
	ModelTask  string   `json:"model_task"`
	PlotFiles  []string `json:"plots,omitempty"`
	Checkpoint string   `json:"-"`
	// DataTrainedOn reports whether the evaluated directory holds exactly a dataset the
	// model was trained on (same dataset.Fingerprint).
	DataTrainedOn bool `json:"data_trained_on"`
	// ChipMismatch is set when the data was simulated for another target than the
	// model's training data (only with AllowMismatch).
	ChipMismatch bool `json:"chip_mismatch"`
	// Source and Collection say where imported data comes from (dataset.Provenance:
	// "tpugraphs", "tile/xla", "layout/nlp/random", ...); empty for tpucost's own data.
	Source     string `json:"source,omitempty"`
	Collection string `json:"collection,omitempty"`
	// FeatureSet is the feature set of the model and the data ("" for tpucost's own).
	FeatureSet string `json:"feature_set,omitempty"`
}

// Run loads a model checkpoint and evaluates it, and the analytical model, on the test
// part of the split the model was trained with, never on a row whose kernel the model
// trained or validated on (whatever the dataset: those rows are counted in
// ExcludedRows). Data simulated for another target than the model's is refused unless
// AllowMismatch is set.
func Run(o RunOptions) (*Result, error) {
	if o.Split != "" {
		if err := dataset.CheckSplitKind(o.Split); err != nil {
			if !strings.HasPrefix(o.Split, dataset.SplitShape) {
				return nil, fmt.Errorf("--split %q: want one of %s (default: the model's own split)", o.Split, dataset.SplitUsage)
			}
			return nil, fmt.Errorf("--split: %w", err)
		}
	}
	if o.PlotsDir != "" {
		// The plots directory is checked (and locked against a second writer) first, not
		// after the evaluation.
		lock, err := dirlock.AcquireDir(o.PlotsDir, dirlock.Plots)
		if err != nil {
			return nil, fmt.Errorf("--plots: %w", err)
		}
		defer lock.Release()
	}
	m, ck, err := gnn.Load(o.ModelDir)
	if err != nil {
		return nil, err
	}
	meta := ck.Meta
	seen, err := gnn.SeenKeys(o.ModelDir, ck)
	if err != nil {
		return nil, fmt.Errorf("%w: it cannot be evaluated without risking its training rows (retrain it with this tpucost)", err)
	}
	dir := o.DataDir
	if dir == "" {
		// A model trained on several datasets is evaluated on the first by default.
		if paths := ck.DatasetPaths(o.ModelDir); len(paths) > 0 {
			dir = paths[0]
		}
	}
	if dir == "" {
		return nil, fmt.Errorf("%s records no dataset: give --data", o.ModelDir)
	}
	if meta.Split == "" {
		return nil, fmt.Errorf("%s records no train/test split: it cannot be evaluated on unseen rows", o.ModelDir)
	}
	if o.Split != "" && o.Split != meta.Split {
		return nil, fmt.Errorf("%s was trained with the %s split; evaluating it on the %s split would test on rows it trained on (train a model with --split %s)",
			o.ModelDir, meta.Split, o.Split, o.Split)
	}
	d, err := dataset.Open(dir)
	if err != nil {
		if o.DataDir == "" && errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("model %s was trained on %s, which is not there (moved or deleted?): pass --data DIR: %w", o.ModelDir, dir, err)
		}
		return nil, err
	}
	if err := d.Provenance.RequireLabels(dir, "eval"); err != nil {
		return nil, err
	}
	if t := d.Provenance.Task; t != ck.Task && !slices.Contains(ck.Config.Tasks, t) && (t.Relative() || ck.Task.Relative()) {
		return nil, fmt.Errorf("model %s predicts %s, dataset %s holds %s rows", o.ModelDir, ck.Task, dir, d.Provenance.Task)
	}
	if err := ck.CheckData(dir, d.Provenance); err != nil {
		return nil, fmt.Errorf("model %s: %w", o.ModelDir, err)
	}
	mismatch := false
	if field, mv, dv := meta.TargetMismatch(d.Provenance.Chip, d.Provenance.VMEMBytes, d.Provenance.SimulatorVersion); field != "" {
		if !o.AllowMismatch {
			return nil, fmt.Errorf("model %s was trained on data for %s %s, dataset %s is for %s %s: evaluate it on data of its target (or pass --allow-mismatch)",
				o.ModelDir, field, mv, dir, field, dv)
		}
		mismatch = true
		if o.Warn != nil {
			fmt.Fprintf(o.Warn, "WARNING: model %s was trained on data for %s %s, dataset %s is for %s %s: its numbers do not describe the model on its own target\n",
				o.ModelDir, field, mv, dir, field, dv)
		}
	}
	fp := d.Fingerprint()
	trainedOn := false
	for _, ref := range ck.TrainedOn.Datasets {
		trainedOn = trainedOn || ref.Fingerprint == fp
	}
	split, err := dataset.NewSplit(d, meta.Split, meta.TestFraction, meta.SplitSeed)
	if err != nil {
		return nil, err
	}
	if heldOutSplit(d.Provenance) && !trainedOn {
		// A held-out split of an imported release (TpuGraphs' valid or test files) is
		// unseen as a whole: every row is evaluated (seen kernels are still excluded).
		split = nil
	}
	// Rows carry their features: the predictor needs no target.
	pred, err := gnn.NewRowPredictor(m, gnn.PredictorOptions{})
	if err != nil {
		return nil, err
	}
	defer pred.Close()
	rep, err := EvaluateSpread(d, split, pred.PredictRowsSpread, func(r *dataset.Row) bool { return seen.Contains(gnn.KernelID(r.KernelKey)) })
	if err != nil {
		return nil, err
	}
	if split == nil {
		rep.Split = "held-out " + d.Provenance.Split + " (all rows)"
	}
	res := &Result{Report: rep, Model: o.ModelDir, ModelTask: string(ck.Task), Data: dir, TestFrac: meta.TestFraction, SplitSeed: meta.SplitSeed, Metric: ck.Metric,
		DataTrainedOn: trainedOn, ChipMismatch: mismatch, Source: d.Provenance.Source, Collection: d.Provenance.Collection, FeatureSet: d.Provenance.FeatureSet}
	if o.PlotsDir != "" {
		var hist []EpochPoint
		for _, e := range ck.History {
			p := EpochPoint{Epoch: e.Epoch, TrainLoss: e.TrainLoss}
			if e.Val != nil {
				p.ValLoss, p.ValMetric = e.Val.Loss, e.Val.Metric
			}
			hist = append(hist, p)
		}
		res.PlotFiles, err = WritePlots(o.PlotsDir, rep, hist, ck.Metric)
		if err != nil {
			return nil, err
		}
	}
	return res, nil
}

func fmtOpt(p *float64, format string) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf(format, *p)
}

// WriteText writes the evaluation as text (WriteTable), as every command's result
// prints itself.
func (res *Result) WriteText(w io.Writer) error { return res.WriteTable(w) }

// WriteTable prints the evaluation like the paper's tables: per program, then overall,
// learned vs analytical.
func (res *Result) WriteTable(w io.Writer) error {
	r := res.Report
	fmt.Fprintf(w, "%s model %s on %s data %s, %s split (test fraction %.2f, seed %d): %d kernels, %d samples, %d programs\n",
		res.ModelTask, res.Model, r.Task, res.Data, r.Split, res.TestFrac, res.SplitSeed, r.Kernels, r.Samples, r.Programs)
	fmt.Fprintf(w, "excluded %d rows whose kernels the model trained or validated on\n", r.ExcludedRows)
	if res.ChipMismatch {
		fmt.Fprintf(w, "WARNING: the data was simulated for another target than the model's training data\n")
	}
	if res.Source != "" {
		fmt.Fprintf(w, "data: %s %s, feature set %s", res.Source, res.Collection, orDash(res.FeatureSet))
		if r.Analytical == nil {
			fmt.Fprint(w, " (no analytical estimates in the data)")
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	metric := "APE %"
	if !r.Ranked {
		metric = "PROGRAM ERR %"
	}
	fmt.Fprintf(tw, "PROGRAM\tKERNELS\tLEARNED %s\tANALYTICAL %s\n", metric, metric)
	for _, p := range r.PerProgram {
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%s\n", p.Program, p.Kernels, p.Learned, fmtOpt(p.Analytical, "%.2f"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return res.WriteSummary(w)
}

// WriteSummary prints the overall rows: learned vs analytical.
func (res *Result) WriteSummary(w io.Writer) error {
	r := res.Report
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	rows := []struct {
		name string
		m    Metrics
	}{{"learned", r.Learned}}
	if r.Analytical != nil {
		rows = append(rows, struct {
			name string
			m    Metrics
		}{"analytical", *r.Analytical})
	}
	if r.Ranked {
		fmt.Fprintln(tw, "MODEL\tAPE %\tKENDALL TAU\tOPA\tSLOWDOWN@1\tSLOWDOWN@5\tSLOWDOWN@10\tTILE SCORE")
		for _, m := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%.3f\t%s\t%.4f\t%.4f\t%.4f\t%s\n", m.name, fmtOpt(m.m.APE, "%.2f"), m.m.KendallTau, fmtOpt(m.m.OPA, "%.3f"),
				m.m.SlowdownAt["1"], m.m.SlowdownAt["5"], m.m.SlowdownAt["10"], fmtOpt(m.m.TileScore, "%.4f"))
		}
	} else {
		fmt.Fprintln(tw, "MODEL\tMAPE %\tMAPE >=5us\tMAPE <5us\tKENDALL TAU\tOPA\tPROGRAM MAPE %\tPROGRAM TAU")
		for _, m := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.3f\t%s\t%s\t%s\n", m.name, fmtOpt(m.m.MAPE, "%.2f"), fmtOpt(m.m.MAPEGE5us, "%.2f"),
				fmtOpt(m.m.MAPELT5us, "%.2f"), m.m.KendallTau, fmtOpt(m.m.OPA, "%.3f"), fmtOpt(m.m.ProgramMAPE, "%.2f"), fmtOpt(m.m.ProgramTau, "%.3f"))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if u := r.Uncertainty; u != nil {
		what := "slowdown@1"
		if !r.Ranked {
			what = "APE %"
		}
		fmt.Fprintf(w, "\nensemble spread: mean %.3f; %s on the %.0f%% most uncertain kernels %.4g (analytical there %.4g), on the rest %.4g\n",
			u.MeanSpread, what, 100*u.UncertainShare, u.ErrorUncertain, u.AnalyticalUncertain, u.ErrorRest)
	}
	if res.Source == "tpugraphs" {
		res.writeTpuGraphs(w)
	}
	if len(res.PlotFiles) > 0 {
		fmt.Fprintf(w, "\nplots: %s\n", strings.Join(res.PlotFiles, ", "))
	}
	return nil
}

// writeTpuGraphs prints the learned model's TpuGraphs metrics for the data's collection,
// as the dataset's paper and leaderboard define them: for tile, the top-K error
// (slowdown@K) for K = 1, 5, 10 and the score 1 − slowdown@5; for layout, Kendall's τ
// over each program's configurations (averaged over programs) and OPA.
func (res *Result) writeTpuGraphs(w io.Writer) {
	m := res.Learned
	if strings.HasPrefix(res.Collection, "layout") {
		fmt.Fprintf(w, "\nTpuGraphs %s: Kendall tau %.4f (mean over %d programs), OPA %s\n", res.Collection, m.KendallTau, res.Kernels, fmtOpt(m.OPA, "%.4f"))
		return
	}
	fmt.Fprintf(w, "\nTpuGraphs %s: top-1 error %.4f, top-5 error %.4f, top-10 error %.4f, score (1 - top-5 error) %s\n",
		res.Collection, m.SlowdownAt["1"], m.SlowdownAt["5"], m.SlowdownAt["10"], fmtOpt(m.TileScore, "%.4f"))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// heldOutSplit reports whether p is a held-out split of imported data (TpuGraphs'
// "valid" or "test" directories), which evaluation scores whole rather than re-splitting.
func heldOutSplit(p dataset.Provenance) bool {
	return p.Measured() && (p.Split == "valid" || p.Split == "test")
}
