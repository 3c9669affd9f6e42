package eval

import (
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/gnn"
)

// RowPrediction is a model's prediction for one dataset row (tpucost predict --data):
// for ranked data (dataset.Provenance.Ranked) the configuration the model picks and how
// far it is from the row's best; for absolute data the predicted and measured runtime.
type RowPrediction struct {
	Program   string `json:"program"`
	Kernel    string `json:"kernel"`
	KernelKey string `json:"kernel_key"`
	Configs   int    `json:"configs"`
	// Seen is set when the model trained or validated on this row's kernel: its
	// prediction says nothing about unseen data.
	Seen bool `json:"seen_in_training"`

	// Ranked rows. Times are the row's target times (dataset.Row.TargetTimes): in ns
	// (PickNs, BestNs), or runtime over normalizer, unitless, where the data has
	// normalizers (PickNormalized, BestNormalized; RowReport.RuntimesNormalized).
	Pick           string   `json:"pick,omitempty"`            // the configuration the model ranks first
	PickNs         float64  `json:"pick_ns,omitempty"`         // its measured time
	BestNs         float64  `json:"best_ns,omitempty"`         // the row's fastest measured time
	PickNormalized float64  `json:"pick_normalized,omitempty"` // as PickNs, over the row's normalizer
	BestNormalized float64  `json:"best_normalized,omitempty"` // as BestNs, over the row's normalizer
	Slowdown       *float64 `json:"slowdown,omitempty"`        // pick / best − 1, a fraction
	Top            []string `json:"top,omitempty"`             // the model's first configurations, best first

	// Absolute rows (one runtime each; a row with several lists its first).
	PredictedNs float64 `json:"predicted_ns,omitempty"`
	TrueNs      float64 `json:"true_ns,omitempty"`
}

// RowReport is PredictDataset's result.
type RowReport struct {
	Model  string `json:"model"`
	Data   string `json:"data"`
	Ranked bool   `json:"ranked"`
	// RuntimesNormalized says the rows' times are runtime over normalizer (data with
	// runtime normalizers: *_normalized fields), not ns (*_ns fields).
	RuntimesNormalized bool `json:"runtimes_normalized"`
	// Unlabelled says the data has no measured runtimes (dataset.Provenance.Unlabelled,
	// TpuGraphs' test split): rows carry the model's picks only, no times or slowdowns.
	Unlabelled bool            `json:"unlabelled,omitempty"`
	Rows       []RowPrediction `json:"rows"`
	// SeenRows counts the rows whose kernels the model trained or validated on.
	SeenRows int `json:"seen_rows"`
	// MeanSlowdown is the mean Slowdown over the ranked rows the model has not seen (nil
	// without any): the top-1 error of tpucost eval, over every unseen row of the data
	// rather than a test split.
	MeanSlowdown *float64 `json:"mean_slowdown_unseen,omitempty"`
}

// PredictDataset scores every row of the dataset in dir with the model of the checkpoint
// in modelDir, whose feature set the data must have (gnn.Checkpoint.CheckData): the way to
// use a model trained on imported data (e.g. TpuGraphs), whose rows carry features no
// tpucost compile can produce. top is the number of configurations listed per ranked row.
// At most maxRows rows are reported (0: all).
func PredictDataset(modelDir, dir string, top, maxRows int) (*RowReport, error) {
	m, ck, err := gnn.Load(modelDir)
	if err != nil {
		return nil, err
	}
	d, err := dataset.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := ck.CheckData(dir, d.Provenance); err != nil {
		return nil, fmt.Errorf("model %s: %w", modelDir, err)
	}
	seen, err := gnn.SeenKeys(modelDir, ck)
	if err != nil {
		return nil, err
	}
	pred, err := gnn.NewRowPredictor(m, gnn.PredictorOptions{})
	if err != nil {
		return nil, err
	}
	defer pred.Close()
	rep := &RowReport{Model: modelDir, Data: dir, Ranked: d.Provenance.Ranked(), RuntimesNormalized: d.Provenance.RuntimeNormalizers,
		Unlabelled: d.Provenance.Unlabelled, Rows: []RowPrediction{}}
	var slow float64
	nSlow := 0
	errStop := fmt.Errorf("enough rows")
	src := sourceFunc(func(fn func(*dataset.Row) error) error { return d.Rows(dataset.ReadOptions{}, fn) })
	err = pred.PredictSource(src, func(r *dataset.Row, out []float64) error {
		if maxRows > 0 && len(rep.Rows) == maxRows {
			return errStop
		}
		rp := RowPrediction{Program: r.Program, Kernel: r.KernelName, KernelKey: r.KernelKey, Configs: len(r.Configs), Seen: seen.Contains(gnn.KernelID(r.KernelKey))}
		if rp.Seen {
			rep.SeenRows++
		}
		if len(out) == 0 {
			rep.Rows = append(rep.Rows, rp)
			return nil
		}
		times := r.TargetTimes()
		if rep.Ranked {
			order := make([]int, len(out))
			for i := range order {
				order[i] = i
			}
			// Ties go to the first listed configuration, as in evaluation.
			slices.SortStableFunc(order, func(a, b int) int { return cmpFloat(out[a], out[b]) })
			pick, best := times[order[0]], slices.Min(times)
			rp.Pick = r.Configs[order[0]]
			if rep.Unlabelled {
				pick, best = 0, 0 // no times: no slowdown below either
			}
			if rep.RuntimesNormalized {
				rp.PickNormalized, rp.BestNormalized = pick, best
			} else {
				rp.PickNs, rp.BestNs = pick, best
			}
			if best > 0 {
				s := pick/best - 1
				rp.Slowdown = &s
				if !rp.Seen {
					slow += s
					nSlow++
				}
			}
			for _, i := range order[:min(top, len(order))] {
				rp.Top = append(rp.Top, r.Configs[i])
			}
		} else {
			rp.PredictedNs, rp.TrueNs = out[0], r.RuntimesNs[0]
		}
		rep.Rows = append(rep.Rows, rp)
		return nil
	})
	if err != nil && err != errStop {
		return nil, err
	}
	if nSlow > 0 {
		s := slow / float64(nSlow)
		rep.MeanSlowdown = &s
	}
	return rep, nil
}

// sourceFunc adapts a function to gnn.RowSource.
type sourceFunc func(fn func(*dataset.Row) error) error

// Rows implements gnn.RowSource.
func (f sourceFunc) Rows(fn func(*dataset.Row) error) error { return f(fn) }

func cmpFloat(a, b float64) int {
	switch {
	case a < b || (math.IsNaN(b) && !math.IsNaN(a)):
		return -1
	case a > b || (math.IsNaN(a) && !math.IsNaN(b)):
		return 1
	}
	return 0
}

// WriteText writes r as text (tpucost predict --data): a line per row (ranked data: the
// model's pick beside the row's best and the slowdown; absolute data: the predicted and
// measured runtime) and a summary.
func (r *RowReport) WriteText(out io.Writer) error {
	w := table(out)
	if r.Ranked {
		unit := "NS"
		if r.RuntimesNormalized {
			unit = "NORMALIZED"
		}
		fmt.Fprintf(w, "PROGRAM\tKERNEL\tCONFIGS\tPICK\tPICK_%s\tBEST_%s\tSLOWDOWN\tSEEN\t\n", unit, unit)
		for _, p := range r.Rows {
			pick, best := p.PickNs, p.BestNs
			if r.RuntimesNormalized {
				pick, best = p.PickNormalized, p.BestNormalized
			}
			slowdown, pickS, bestS := "-", fmt.Sprintf("%.6g", pick), fmt.Sprintf("%.6g", best)
			if p.Slowdown != nil {
				slowdown = fmt.Sprintf("%.4f", *p.Slowdown)
			}
			if r.Unlabelled {
				pickS, bestS = "-", "-"
			}
			fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%v\t\n", p.Program, p.Kernel, p.Configs, p.Pick, pickS, bestS, slowdown, p.Seen)
		}
	} else {
		fmt.Fprintf(w, "PROGRAM\tKERNEL\tPRED_NS\tTRUE_NS\tPRED_ERR\tSEEN\t\n")
		for _, p := range r.Rows {
			if r.Unlabelled {
				fmt.Fprintf(w, "%s\t%s\t%.0f\t-\t-\t%v\t\n", p.Program, p.Kernel, p.PredictedNs, p.Seen)
				continue
			}
			fmt.Fprintf(w, "%s\t%s\t%.0f\t%.0f\t%+.1f%%\t%v\t\n", p.Program, p.Kernel, p.PredictedNs, p.TrueNs, 100*(p.PredictedNs-p.TrueNs)/p.TrueNs, p.Seen)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	unit := "ns"
	if r.RuntimesNormalized {
		unit = "runtime/normalizer"
	}
	if r.Unlabelled {
		fmt.Fprintf(out, "%d rows of %s (unlabelled: no measured times), %d seen in training", len(r.Rows), r.Data, r.SeenRows)
	} else {
		fmt.Fprintf(out, "%d rows of %s (times in %s), %d seen in training", len(r.Rows), r.Data, unit, r.SeenRows)
	}
	if r.MeanSlowdown != nil {
		fmt.Fprintf(out, "; mean slowdown of the model's pick over unseen rows %.4f", *r.MeanSlowdown)
	}
	_, err := fmt.Fprintln(out)
	return err
}
