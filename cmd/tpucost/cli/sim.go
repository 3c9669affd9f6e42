package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/tpusim"
)

// SimOptions are the options of `tpucost sim`.
type SimOptions struct {
	Shapes  string // --shapes: sizes of dynamic dimensions (zoo.ResolveShapes)
	IO      IO
	Globals *Globals
	Target  TargetFlags
	Src     string
	Config  string
	Chips   int
	Staging compiler.StagingMode // --staging
}

// NewCmdSim builds `tpucost sim SRC`.
func NewCmdSim(ios IO, g *Globals) *cobra.Command {
	o := &SimOptions{IO: ios, Globals: g}
	cmd := &cobra.Command{
		Use:   "sim SRC",
		Short: "Simulate a compiled program: per-kernel simulated and analytical time",
		Long: "Sim compiles SRC (a zoo model or an HLO file) with the given config (default: XLA-like defaults) and times every kernel " +
			"on the simulator (the ground truth) and with the analytical roofline model, with the bound (mxu, vpu, eup, xlu, hbm, latency, overhead), flops and bytes.",
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error { o.Src = args[0]; return runSim(o) },
	}
	o.Target.bind(cmd)
	bindShapes(cmd, &o.Shapes)
	bindStaging(cmd, &o.Staging)
	cmd.Flags().StringVar(&o.Config, "config", "", "JSON config file")
	cmd.Flags().IntVar(&o.Chips, "chips", 0, "chips that collectives without replica groups span (default: the module's replica_count × num_partitions)")
	return cmd
}

func runSim(o *SimOptions) error {
	c, err := o.Target.chip()
	if err != nil {
		return err
	}
	p, err := compileSource(o.Src, o.Shapes, o.Config, c, o.Staging)
	if err != nil {
		return err
	}
	if o.Chips < 0 {
		return fmt.Errorf("--chips must be >= 0, got %d", o.Chips)
	}
	r, err := tpusim.SimulateWith(p, c, tpusim.Options{Chips: o.Chips})
	if err != nil {
		return err
	}
	if r.UnsizedCollectives > 0 {
		fmt.Fprintf(o.IO.Err, "WARNING: %d collective(s) name no replica group and nothing gives their size (no --chips, the module header says 1 chip): "+
			"each is timed as a 1-chip no-op (unsized_collectives in --json); pass --chips N\n", r.UnsizedCollectives)
	}
	if o.Globals.JSON {
		return writeJSON(o.IO.Out, r)
	}
	w := table(o.IO.Out)
	fmt.Fprintln(w, "KERNEL\tKIND\tTILE\tFLAGS\tSIM_NS\tANALYTICAL_NS\tBOUND\tFLOPS\tBYTES")
	n := printEntries(w, r.Kernels, "")
	fmt.Fprintf(w, "total\t\t\t\t%.0f\t%.0f\t\t\t\n", r.TotalNs, r.AnalyticalTotalNs)
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(o.IO.Out, "%s on %s (%s): %d kernels, %.1f us simulated, %.1f us analytical\n", r.Program, r.Chip, r.Simulator, n, r.TotalNs/1e3, r.AnalyticalTotalNs/1e3)
	if r.StagedBytes > 0 {
		fmt.Fprintf(o.IO.Out, "staged in VMEM: %.3g bytes of HBM traffic avoided (%.3g still moved)\n", r.StagedBytes, r.HBMBytes)
	}
	fmt.Fprintf(o.IO.Out, "ops timed approximately (streaming model): %d (%.1f%% of the time); loops with unknown trip counts: %d (each run %d time); collectives: %.1f us over %d chip(s)\n",
		r.ApproximateOps, 100*r.ApproximateShare, r.UnknownTripCounts, compiler.DefaultTripCount, r.CollectiveNs/1e3, r.Chips)
	return nil
}

// printEntries writes a report's steps, nested steps indented, and returns the number of
// kernel lines.
func printEntries(w io.Writer, es []tpusim.Entry, indent string) int {
	n := 0
	for _, e := range es {
		if k := e.KernelReport; k != nil {
			name := k.Name
			if k.Approximate {
				name += " (approx)"
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
			n += printEntries(w, c.Condition, indent+"  cond: ")
			n += printEntries(w, c.Body, indent+"  ")
		case "conditional":
			fmt.Fprintf(w, "%sconditional %s\tcond\t\t\t%.0f\t\t\t\t\n", indent, c.Instruction, c.TotalNs)
			for i, b := range c.Branches {
				n += printEntries(w, b, fmt.Sprintf("%s  [%d, p=%.2g] ", indent, i, c.Weights[i]))
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
