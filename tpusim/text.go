package tpusim

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/tpucost/tpucost/compiler"
)

// WriteText writes r as text (tpucost sim): a line per kernel and control step (nested
// steps indented), the totals, and a summary of staging, approximate timing, unknown trip
// counts and collectives.
func (r *Report) WriteText(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "KERNEL\tKIND\tTILE\tFLAGS\tSIM_NS\tANALYTICAL_NS\tBOUND\tFLOPS\tBYTES")
	n := writeEntries(w, r.Kernels, "")
	fmt.Fprintf(w, "total\t\t\t\t%.0f\t%.0f\t\t\t\n", r.TotalNs, r.AnalyticalTotalNs)
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s on %s (%s): %d kernels, %.1f us simulated, %.1f us analytical\n", r.Program, r.Chip, r.Simulator, n, r.TotalNs/1e3, r.AnalyticalTotalNs/1e3)
	switch {
	case r.Partitions == 1:
		fmt.Fprintf(out, "partitioned over 1 device: the global program of a sharded (GSPMD) module on one chip, annotations dropped, no collectives\n")
	case r.Partitions > 1:
		fmt.Fprintf(out, "partitioned over %d devices (GSPMD): kernels and times are one device's, with the collectives the partitioner inserted\n", r.Partitions)
	}
	if r.StagedBytes > 0 {
		fmt.Fprintf(out, "staged in VMEM: %.3g bytes of HBM traffic avoided (%.3g still moved)\n", r.StagedBytes, r.HBMBytes)
	}
	_, err := fmt.Fprintf(out, "ops timed approximately (streaming model): %d (%.1f%% of the time); loops with unknown trip counts: %d (each run %d time); collectives: %.1f us over %d chip(s)\n",
		r.ApproximateOps, 100*r.ApproximateShare, r.UnknownTripCounts, compiler.DefaultTripCount, r.CollectiveNs/1e3, r.Chips)
	return err
}

// writeEntries writes a report's steps, nested steps indented, and returns the number of
// kernel lines.
func writeEntries(w io.Writer, es []Entry, indent string) int {
	n := 0
	for _, e := range es {
		if k := e.KernelReport; k != nil {
			name := k.Name
			if k.Approximate {
				name += " (approx)"
			}
			if k.Pieces > 1 {
				name += fmt.Sprintf(" (in %d pieces: VMEM too small for whole windows)", k.Pieces)
			}
			fmt.Fprintf(w, "%s%s\t%s\t%s\t%s\t%.0f\t%.0f\t%s\t%.3g\t%.3g\n", indent, name, k.Kind, k.Tile, k.Flags, k.SimNs, k.AnalyticalNs, k.Bound, k.Flops, k.Bytes)
			n++
			continue
		}
		c := e.ControlReport
		switch c.Control {
		case "while":
			trips := "unknown"
			if *c.TripCount >= 0 {
				trips = fmt.Sprint(*c.TripCount)
			}
			if c.TripSource == "bound" {
				trips += " (upper bound)"
			}
			fmt.Fprintf(w, "%swhile %s x %s\twhile\t\t\t%.0f\t\t\t\t\n", indent, c.Instruction, trips, c.TotalNs)
			n += writeEntries(w, c.Condition, indent+"  cond: ")
			n += writeEntries(w, c.Body, indent+"  ")
		case "conditional":
			fmt.Fprintf(w, "%sconditional %s\tcond\t\t\t%.0f\t\t\t\t\n", indent, c.Instruction, c.TotalNs)
			for i, b := range c.Branches {
				n += writeEntries(w, b, fmt.Sprintf("%s  [%d, p=%.2g] ", indent, i, c.Weights[i]))
			}
		case "collective-done":
			fmt.Fprintf(w, "%sdone %s (exposed)\tcollective\t\t\t%.0f\t\t\t\t\n", indent, c.Instruction, c.TotalNs)
		default:
			if c.Async {
				fmt.Fprintf(w, "%s%s-start %s (%d chips, overlapped)\tcollective\t\t\t%.0f\t\t\t\t%.3g\n", indent, c.Collective, c.Instruction, c.GroupSize, c.TotalNs, c.CollectiveBytes)
				continue
			}
			fmt.Fprintf(w, "%s%s %s (%d chips)\tcollective\t\t\t%.0f\t\t\t\t%.3g\n", indent, c.Collective, c.Instruction, c.GroupSize, c.TotalNs, c.CollectiveBytes)
		}
	}
	return n
}
