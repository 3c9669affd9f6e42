package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/tpusim"
)

// SimOptions are the options of `tpucost sim`.
type SimOptions struct {
	IO      IO
	Globals *Globals
	Target  TargetFlags
	Src     string
	Config  string
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
	cmd.Flags().StringVar(&o.Config, "config", "", "JSON config file")
	return cmd
}

func runSim(o *SimOptions) error {
	c, err := o.Target.chip()
	if err != nil {
		return err
	}
	p, err := compileSource(o.Src, o.Config, c, "", nil)
	if err != nil {
		return err
	}
	r, err := tpusim.Simulate(p, c)
	if err != nil {
		return err
	}
	if o.Globals.JSON {
		return writeJSON(o.IO.Out, r)
	}
	w := table(o.IO.Out)
	fmt.Fprintln(w, "KERNEL\tKIND\tTILE\tFLAGS\tSIM_NS\tANALYTICAL_NS\tBOUND\tFLOPS\tBYTES")
	for _, k := range r.Kernels {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%.0f\t%.0f\t%s\t%.3g\t%.3g\n", k.Name, k.Kind, k.Tile, k.Flags, k.SimNs, k.AnalyticalNs, k.Bound, k.Flops, k.Bytes)
	}
	fmt.Fprintf(w, "total\t\t\t\t%.0f\t%.0f\t\t\t\n", r.TotalNs, r.AnalyticalTotalNs)
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(o.IO.Out, "%s on %s (%s): %d kernels, %.1f us simulated, %.1f us analytical\n", r.Program, r.Chip, r.Simulator, len(r.Kernels), r.TotalNs/1e3, r.AnalyticalTotalNs/1e3)
	if r.ApproximateOps > 0 {
		fmt.Fprintf(o.IO.Out, "%d ops timed approximately (streaming model): %.1f%% of the time\n", r.ApproximateOps, 100*r.ApproximateShare)
	}
	return nil
}
