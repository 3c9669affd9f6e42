package demo

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteText writes res as text (tpucost demo): the chip and wall time, what an earlier
// run left to reuse, both models' summaries on held-out programs, the tuning comparison
// and where the report is.
func (res *Result) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "tpucost demo on %s, %.0f s\n", res.Chip, res.WallS)
	if len(res.Reused) > 0 {
		fmt.Fprintf(w, "reused from an earlier run: %s\n", strings.Join(res.Reused, ", "))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "tile model (held-out programs):")
	if err := res.Tile.WriteSummary(w); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nprogram-level model (held-out programs):")
	if err := res.Graph.WriteSummary(w); err != nil {
		return err
	}
	fmt.Fprintln(w, "\ntuning:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROGRAM\tSIM-ONLY SPEEDUP\tMEASUREMENTS\tMODEL-GUIDED SPEEDUP\tMEASUREMENTS\tGAIN SHARE")
	for _, t := range res.Tuning {
		fmt.Fprintf(tw, "%s\t%.3f\t%d\t%.3f\t%d\t%.0f%%\n", t.Program, t.Sim.Speedup, t.Sim.Measurements, t.Model.Speedup, t.Model.Measurements, 100*t.SpeedupShare)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nreport: %s\n", res.Report)
	return err
}
