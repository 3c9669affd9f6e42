package validate

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteText writes the report for a person: per kernel, its configurations and each
// predictor's τ and top-1 slowdown; then one line per predictor over the scored kernels,
// and the unmapped configurations by name with the reason.
func WriteText(w io.Writer, r *Report) error {
	fmt.Fprintf(w, "simulator %s on %s, %d file(s)\n", r.Simulator, r.Chip, len(r.Files))
	if t := r.Tile; t != nil {
		fmt.Fprintf(w, "\ntile: %d kernels, %d configs replayed (%d approximately: strided, rounded or the compiler's own tile), %d unmapped, %d failed and %d untimed runs skipped\n",
			t.Kernels, t.Configs, t.ApproxConfigs, len(t.Unmapped), t.Skipped.Error, t.Skipped.Untimed)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "KERNEL\tKIND\tCONFIGS\tAPPROX\tSCORED\tSIM_TAU\tANALYTICAL_TAU\tSIM_TOP1\tANALYTICAL_TOP1\tDEFAULT_TOP1")
		for _, k := range t.PerKernel {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%v\t%s\t%s\t%s\t%s\t%s\n", k.Name, k.Kind, k.Configs, k.Approx, k.Scored,
				tau(k.Sim), tau(k.Analytical), top1(k.Sim), top1(k.Analytical), deflt(k.Default))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if err := writePredictors(w, fmt.Sprintf("over the %d kernels with >= %d configs", t.ScoredKernels, t.MinConfigs), t.Predictors); err != nil {
			return err
		}
		for _, u := range t.Unmapped {
			fmt.Fprintf(w, "unmapped: %s: %s\n", u.Name, u.Reason)
		}
	}
	if l := r.Layout; l != nil {
		fmt.Fprintf(w, "\nlayout: %d program(s), %d configs replayed (each compiled and simulated whole), %d unmapped\n", l.Programs, l.Configs, len(l.Unmapped))
		if l.Sim != nil {
			if err := writePredictors(w, fmt.Sprintf("over the %d program(s)", l.Programs), l.Predictors); err != nil {
				return err
			}
		}
		for _, u := range l.Unmapped {
			fmt.Fprintf(w, "unmapped: %s: %s\n", u.Name, u.Reason)
		}
	}
	return nil
}

func writePredictors(w io.Writer, what string, p Predictors) error {
	fmt.Fprintf(w, "\n%s:\n", what)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PREDICTOR\tKENDALL_TAU\tTAU_STRICT\tTOP1_SLOWDOWN\tTOP5_SLOWDOWN\tMAPE_SCALED_PCT")
	for _, e := range []struct {
		name string
		s    *Scores
	}{{"sim", p.Sim}, {"analytical", p.Analytical}, {"learned", p.Learned}} {
		if e.s != nil {
			fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.3f%%\t%.3f%%\t%.2f\n", e.name, e.s.KendallTau, e.s.KendallTauStrict, 100*e.s.Top1Slowdown, 100*e.s.Top5Slowdown, e.s.MAPEScaled)
		}
	}
	if p.Default != nil {
		fmt.Fprintf(tw, "default (XLA's choice)\t\t\t%.3f%%\t\t\n", 100*p.Default.Top1Slowdown)
	}
	return tw.Flush()
}

func tau(s *Scores) string {
	if s == nil {
		return "-"
	}
	return fmt.Sprintf("%.3f", s.KendallTau)
}

func top1(s *Scores) string {
	if s == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*s.Top1Slowdown)
}

func deflt(d *DefaultScores) string {
	if d == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*d.Top1Slowdown)
}

// WriteCalibrateText writes a calibration report for a person.
func WriteCalibrateText(w io.Writer, r *CalibrateReport, out string) error {
	fmt.Fprintf(w, "calibrated %s from %s (seed %d, %d loss evaluations): loss %.4f -> %.4f on the fit kernels\n",
		r.Name, r.Base, r.Seed, r.Evaluations, r.LossBefore, r.LossAfter)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SPLIT\tKERNELS\tTAU_BEFORE\tTAU_AFTER\tTOP1_BEFORE\tTOP1_AFTER\tMAPE_SCALED_BEFORE\tMAPE_SCALED_AFTER")
	for _, s := range []struct {
		name string
		sp   Split
	}{{"fit", r.Fit}, {"heldout", r.Heldout}} {
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%.2f%%\t%.2f%%\t%.1f\t%.1f\n", s.name, len(s.sp.Kernels), s.sp.Before.KendallTau, s.sp.After.KendallTau,
			100*s.sp.Before.Top1Slowdown, 100*s.sp.After.Top1Slowdown, s.sp.Before.MAPEScaled, s.sp.After.MAPEScaled)
	}
	fmt.Fprintln(tw, "\nCONSTANT\tBEFORE\tAFTER\tLOSS_INCREASE_AT_x0.5_OR_x2\tIDENTIFIED")
	for _, c := range r.Constants {
		fmt.Fprintf(tw, "%s\t%.4g\t%.4g\t%.1f%%\t%v\n", c.Name, c.Before, c.After, 100*c.LossIncrease, c.Identified)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "wrote %s (use it with --chip-file)\n", out)
	return err
}
