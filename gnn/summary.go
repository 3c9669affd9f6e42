package gnn

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// TrainSummary is a training run's result as tpucost train reports it (its --json).
type TrainSummary struct {
	Out       string `json:"out"`
	Task      string `json:"task"`
	Loss      Loss   `json:"loss"`
	Metric    string `json:"metric"`
	BestEpoch int    `json:"best_epoch"`
	Epochs    int    `json:"epochs"`
	Stopped   string `json:"stopped"`
	// StopReason says why training stopped (budget or early stopping), in a sentence.
	StopReason string `json:"stop_reason"`
	// Ensemble is the number of models trained (train --ensemble); the rest describes
	// the first.
	Ensemble int   `json:"ensemble"`
	Best     Epoch `json:"best"`
	// History is every epoch of the run, wall times and rates included (the text form
	// shows a summary of them; TrainLogFile in Out lists every epoch without wall times).
	History []Epoch `json:"history"`
	// Log is the per-epoch log written in Out (TrainLogFile); empty when nothing was
	// written.
	Log string `json:"log"`
	// Backend is the BLAS backend training ran on: openblas or go (TrainResult.Backend).
	Backend string `json:"backend"`
}

// Summary is r's summary; out is the checkpoint directory r was written to.
func (r *TrainResult) Summary(out string) TrainSummary {
	c := r.Checkpoint
	s := TrainSummary{Out: out, Task: string(c.Task), Loss: c.Loss, Metric: c.Metric, BestEpoch: r.BestEpoch, Epochs: len(r.History),
		Stopped: r.Stopped, StopReason: r.StopReason, History: r.History, Ensemble: 1 + len(r.Model.Members), Backend: r.Backend}
	if r.BestEpoch > 0 {
		s.Best = r.History[r.BestEpoch-1]
	}
	if out != "" {
		s.Log = filepath.Join(out, TrainLogFile)
	}
	return s
}

// WriteText writes s as text: a line per summaryEvery epochs, the first, the last and
// the best (marked) — a screenful at most however long the run; every epoch is in the
// log (Log) — then where the model was saved, why training stopped and on which backend.
func (s *TrainSummary) WriteText(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "EPOCH\tTRAIN_LOSS\tVAL_LOSS\tVAL_%s\tKERNELS_PER_S\tWALL_S\t\n", strings.ToUpper(s.Metric))
	for _, e := range s.History {
		if !showEpoch(e.Epoch, len(s.History)) && e.Epoch != s.BestEpoch {
			continue
		}
		vl, vm := "-", "-"
		if e.Val != nil {
			vl, vm = fmt.Sprintf("%.4g", e.Val.Loss), fmt.Sprintf("%.4g", e.Val.Metric)
		}
		mark := ""
		if e.Epoch == s.BestEpoch {
			mark = "best"
		}
		fmt.Fprintf(w, "%d\t%.4g\t%s\t%s\t%.0f\t%.1f\t%s\n", e.Epoch, e.TrainLoss, vl, vm, e.KernelsPerS, e.WallS, mark)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s model (%s loss): best epoch %d of %d, saved to %s\nstopped: %s\nbackend: %s\n", s.Task, s.Loss, s.BestEpoch, len(s.History), s.Out, s.StopReason, s.Backend)
	if s.Log != "" {
		every := ""
		if n := summaryEvery(len(s.History)); n > 1 {
			every = fmt.Sprintf(" (above: every %d epochs, the first, the last and the best)", n)
		}
		fmt.Fprintf(out, "every epoch: %s%s\n", s.Log, every)
	}
	if s.Ensemble > 1 {
		fmt.Fprintf(out, "ensemble of %d models (the table is the first's; the others are in %s/member-*)\n", s.Ensemble, s.Out)
	}
	return nil
}
