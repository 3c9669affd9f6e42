package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/internal/cliflag"
	"github.com/tpucost/tpucost/validate"
)

// CalibrateOptions are the options of `tpucost calibrate`: the flags of its request.
type CalibrateOptions struct {
	cmdIO
	Target TargetFlags
	validate.CalibrateRequest
}

// CalibrateResult is the JSON output of `tpucost calibrate`: the report and the preset file
// written.
type CalibrateResult = validate.CalibrateResult

// NewCmdCalibrate builds `tpucost calibrate FILE.pb... --out F`.
func NewCmdCalibrate(ios IO, g *Globals) *cobra.Command {
	o := &CalibrateOptions{cmdIO: cmdIO{IO: ios, Globals: g}}
	cmd := &cobra.Command{
		Use:   "calibrate FILE.pb... --out F",
		Short: "Fit a preset's non-public timing constants to real TPU runs (TpuGraphs .pb)",
		Long: "Calibrate replays the tile runs of TpuGraphs' raw tuning files (as validate does), splits the scored kernels by --seed into a fit half " +
			"and a held-out half, fits the preset's non-public constants (launch, step overhead, DMA latency and burst cost, unit throughputs, MXU fill " +
			"and weight load; never the public peak, bandwidth or VMEM size) on the fit half with Nelder-Mead, within physical bounds, and reports " +
			"fidelity on both halves before and after. --out receives the fitted preset, which --chip-file loads.",
		Args: cliflag.AtLeastOneArg("one or more TpuGraphs tuning files (FILE.pb)"),
		RunE: func(cmd *cobra.Command, args []string) error { o.Files = args; return runCalibrate(cmd.Context(), o) },
	}
	o.Target.bindDefault(cmd, "v3")
	cmd.Flags().StringVar(&o.Out, "out", "", "write the fitted preset (JSON) here (required)")
	cmd.Flags().StringVar(&o.Name, "name", "", "the fitted preset's name (default: the base preset's name + \"-calibrated\")")
	cmd.Flags().Int64Var(&o.Seed, "seed", 1, "seed of the fit / held-out split of the kernels")
	cmd.Flags().IntVar(&o.MinConfigs, "min-configs", validate.DefaultMinConfigs, "only kernels with at least this many replayed configurations take part (>= 2)")
	cmd.Flags().Float64Var(&o.Prior, "prior", validate.PriorWeight, "weight of the pull of each constant toward the preset's value (>= 0; 0: none)")
	cmd.Flags().IntVar(&o.MaxEvals, "max-evals", validate.DefaultMaxEvals, "bound on the optimizer's loss evaluations (>= 1)")
	return cmd
}

func runCalibrate(ctx context.Context, o *CalibrateOptions) error {
	return o.printResult(o.Calibrate(o.Target.chipOf(ctx)))
}
