package tune

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/tpusim/ragged"
	"github.com/tpucost/tpucost/zoo"
)

// The text forms of the reports (tpucost tune without --json): a header, a table and
// summary lines. Their JSON is the reports themselves.

// table returns a tabwriter for aligned columns, as the command line's tables.
func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

// WriteText writes r as text: the run's header, the phases and the result with the
// confirmation's decision (Confirmation.Text). fusion is the run's Options.Fusion (the
// partition strategy starts from partition fusion whatever it says);
// mismatch says a model was trained for another target (a warning line).
func (r *Report) WriteText(w io.Writer, fusion compiler.FusionRule, mismatch bool) error {
	guided := ""
	if r.ModelGuided {
		guided = ", model-guided"
	}
	fmt.Fprintf(w, "%s on %s (%s), strategy %s%s, budget %d, seed %d\n", r.Program, r.Chip, r.Simulator, r.Strategy, guided, r.Budget, r.Seed)
	if mismatch {
		fmt.Fprintln(w, "WARNING: a --model was trained for another target: its guidance is not validated for this one")
	}
	if r.NothingToTune {
		_, err := fmt.Fprintf(w, "nothing to tune: %s compiles to no kernels, so no config changes it; the result is the default compile (%.0f ns, speedup 1.000x), nothing was measured\n", r.Program, r.TunedNs)
		return err
	}
	t := table(w)
	fmt.Fprintln(t, "PHASE\tSTRATEGY\tMEASUREMENTS\tMODEL_EVALS\tBEST_NS")
	for _, p := range r.Phases {
		fmt.Fprintf(t, "%s\t%s\t%d\t%d\t%.0f\n", p.Name, p.Strategy, p.Measurements, p.ModelEvaluations, p.BestNs)
	}
	if err := t.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "default %.0f ns, tuned %.0f ns: speedup %.3fx; %d measurements (%d program, %d kernel), %.1f s hardware, %.2f s wall\n",
		r.DefaultNs, r.TunedNs, r.Speedup, r.Measurements, r.ProgramMeasures, r.KernelMeasures, r.HardwareS, r.WallS)
	if r.ModelKernels > 0 {
		fmt.Fprintf(w, "ensemble kernel model: %d of %d kernels uncertain (the members disagree on the pick), twice the options measured there\n",
			r.UncertainKernels, r.ModelKernels)
	}
	if r.Strategy == string(Partition) {
		fusion = compiler.FusionPartition // the strategy's start
	}
	_, err := fmt.Fprintln(w, r.Confirmation.Text(fusion))
	return err
}

// WriteDone writes the line that says a program is tuned (tpucost tune's progress on
// stderr): its measurements and times, and a warning when an rl policy trained on the
// same model variant (not a held-out result).
func (r *Report) WriteDone(w io.Writer) {
	if r.NothingToTune {
		fmt.Fprintf(w, "tune %s: nothing to tune (no kernels): %.0f ns (1.000x)\n", r.Program, r.TunedNs)
		return
	}
	fmt.Fprintf(w, "tune %s: %d measurements, %.0f ns -> %.0f ns (%.3fx)\n", r.Program, r.Measurements, r.DefaultNs, r.TunedNs, r.Speedup)
	if r.PolicyTrainedOn != "" {
		fmt.Fprintf(w, "WARNING: the rl policy trained on %s, the same model variant as %s: this is not a held-out result (policy_trained_on in --json)\n", r.PolicyTrainedOn, r.Program)
	}
}

// Text says in a line what the confirmation decided; fusion is the run's Options.Fusion
// (a partition run starts from the partition-fusion program, another from the
// store-repaired one when it differs from the default compile).
func (c Confirmation) Text(fusion compiler.FusionRule) string {
	start := "store-repaired"
	if fusion == compiler.FusionPartition {
		start = "partition-fusion"
	}
	switch c.Outcome {
	case KeptWinner:
		if c.DefaultNs > 0 {
			return fmt.Sprintf("confirmation: kept the search's best: %.0f ns vs the %s start's %.0f ns and the default compile's %.0f ns (min of %d runs each), faster beyond the noise margin of %.2f%%",
				c.WinnerNs, start, c.StartNs, c.DefaultNs, c.RunsEach, 100*c.Margin)
		}
		return fmt.Sprintf("confirmation: kept the search's best: %.0f ns vs the start's %.0f ns (min of %d runs each), faster beyond the noise margin of %.2f%%",
			c.WinnerNs, c.StartNs, c.RunsEach, 100*c.Margin)
	case KeptStart:
		if c.DefaultNs > 0 {
			return fmt.Sprintf("confirmation: kept the %s starting program (%.0f ns): the search's best (%.0f ns) is not faster beyond the noise margin of %.2f%%, and the start is faster than the default compile (%.0f ns; min of %d runs each)",
				start, c.StartNs, c.WinnerNs, 100*c.Margin, c.DefaultNs, c.RunsEach)
		}
		return fmt.Sprintf("confirmation: kept the starting program: the search's best (%.0f ns) is not faster than the start (%.0f ns; min of %d runs each) beyond the noise margin of %.2f%%",
			c.WinnerNs, c.StartNs, c.RunsEach, 100*c.Margin)
	case KeptDefault:
		return fmt.Sprintf("confirmation: kept the default compile (%.0f ns): neither the search's best (%.0f ns) nor the %s start (%.0f ns; min of %d runs each) is faster beyond the noise margin of %.2f%%",
			c.DefaultNs, c.WinnerNs, start, c.StartNs, c.RunsEach, 100*c.Margin)
	default:
		return "confirmation: the search's best is the starting program"
	}
}

// WriteText writes b as text: a line per program and the summary of the batch tuned
// with strategy and budget.
func (b *BatchReport) WriteText(w io.Writer, strategy Strategy, budget int) error {
	t := table(w)
	fmt.Fprintln(t, "MODEL\tKERNELS\tDEFAULT_NS\tTUNED_NS\tSPEEDUP\tMEASUREMENTS\tHARDWARE_S\tWALL_S")
	for _, r := range b.Reports {
		fmt.Fprintf(t, "%s\t%d\t%.0f\t%.0f\t%.3f\t%d\t%.1f\t%.2f\n", r.Program, r.Kernels, r.DefaultNs, r.TunedNs, r.Speedup, r.Measurements, r.HardwareS, r.WallS)
	}
	if err := t.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d programs, strategy %s, budget %d: mean speedup %.3fx (geomean %.3fx), max %.3fx; %d measurements, %.0f s hardware, %.1f s wall\n",
		len(b.Reports), strategy, budget, b.MeanSpeedup, b.GeomeanSpeedup, b.MaxSpeedup, b.Measurements, b.HardwareS, b.WallS)
	return err
}

// WriteText writes rep as text: a line per size, the search's summary, the dispatch rule
// and the per-shape baseline when run. list is the run's sizes.
func (rep *ShapesReport) WriteText(w io.Writer, list zoo.ShapeList) error {
	fmt.Fprintf(w, "%s at %s on %s (%s), strategy %s, budget %d, seed %d: one shape-generic search\n", rep.Program, list, rep.Chip, rep.Simulator, rep.Strategy, rep.Budget, rep.Seed)
	if err := writeShapeTable(w, "VALUE", rep.Shapes); err != nil {
		return err
	}
	fmt.Fprintf(w, "shape-generic: %d measurements over %d sizes (%d configs), mean speedup %.3fx, %.1f s hardware, %.2f s wall\n",
		rep.Measurements, len(rep.Shapes), rep.Candidates, rep.MeanSpeedup, rep.HardwareS, rep.WallS)
	if rep.ModelGuided {
		fmt.Fprintf(w, "model-guided: %d configs scored by the model at every size, its top %d measured\n", rep.ModelEvaluations, rep.Candidates)
	}
	fmt.Fprintf(w, "dispatch: %s\n", rep.Dispatch)
	if p := rep.PerShape; p != nil {
		fmt.Fprintf(w, "per-shape baseline: %d measurements (%d to each size's best), mean speedup %.3fx\n", p.Measurements, p.MeasurementsToBest, p.MeanSpeedup)
	}
	return nil
}

// WriteText writes rep as text: the padded, ideal and compiled ragged times with default
// configs and tuned; budget is the run's Options.Budget.
func (rep *RaggedReport) WriteText(w io.Writer, budget int) error {
	fmt.Fprintf(w, "%s, a ragged batch of %d sequences (lengths %s), its compiled ragged program tuned: strategy %s, budget %d\n", rep.Program, len(rep.Lengths), ragged.FormatLengths(rep.Lengths), rep.Strategy, budget)
	fmt.Fprintf(w, "%-8s %12s %12s %12s\n", "CONFIG", "PADDED_US", "IDEAL_US", "RAGGED_US")
	fmt.Fprintf(w, "%-8s %12.1f %12.1f %12.1f\n", "default", rep.PaddedNs/1e3, rep.IdealNs/1e3, rep.DefaultRaggedNs/1e3)
	fmt.Fprintf(w, "%-8s %12.1f %12.1f %12.1f\n", "tuned", rep.TunedPaddedNs/1e3, rep.TunedIdealNs/1e3, rep.TunedRaggedNs/1e3)
	kept := ""
	if rep.KeptDefault {
		kept = " (nothing faster found: the default kept)"
	}
	_, err := fmt.Fprintf(w, "ragged %.3fx over default ragged, %.3fx over default padded (packing %.1f us)%s; %d measurements, %d infeasible\n",
		rep.Speedup, rep.SpeedupVsPadded, rep.PackNs/1e3, kept, rep.Measurements, rep.Infeasible)
	return err
}

// writeShapeTable writes a line per size: its value (column first), times, speedup and
// the confirmation's outcome.
func writeShapeTable(w io.Writer, first string, shapes []ShapeResult) error {
	t := table(w)
	fmt.Fprintln(t, first+"\tDEFAULT_NS\tTUNED_NS\tSPEEDUP\tCONFIRMATION")
	for _, s := range shapes {
		fmt.Fprintf(t, "%d\t%.0f\t%.0f\t%.3f\t%s\n", s.Value, s.DefaultNs, s.TunedNs, s.Speedup, s.Confirmation.Outcome)
	}
	return t.Flush()
}

// WriteText writes m as text (tpucost tune train-policy): the decisions, programs,
// episodes and the first and last episodes' rewards; dir is where the policy was written.
func (m *PolicyMeta) WriteText(w io.Writer, dir string) error {
	h := m.History
	if len(h) == 0 {
		return fmt.Errorf("policy trained on %d programs: no episode recorded", len(m.Programs))
	}
	kinds := make([]string, len(m.Kinds))
	for i, k := range m.Kinds {
		kinds[i] = string(k)
	}
	first, last := h[0], h[len(h)-1]
	_, err := fmt.Fprintf(w, "policy (%s) trained on %d programs, %d episodes: mean reward %.4f -> %.4f, greedy %.4f -> %.4f (reward = log(default_ns/ns)); written to %s\n",
		strings.Join(kinds, ","), len(m.Programs), len(h), first.MeanReward, last.MeanReward, first.GreedyMean, last.GreedyMean, dir)
	return err
}
