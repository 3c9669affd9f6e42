package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/gnn"
	"github.com/tpucost/tpucost/internal/cliflag"
	"github.com/tpucost/tpucost/validate"
)

// ValidateOptions are the options of `tpucost validate`: the flags of a validate request.
type ValidateOptions struct {
	cmdIO
	Target        TargetFlags
	Model         string
	AllowMismatch bool
	validate.ValidateRequest
}

// NewCmdValidate builds `tpucost validate FILE.pb...`.
func NewCmdValidate(ios IO, g *Globals) *cobra.Command {
	o := &ValidateOptions{cmdIO: cmdIO{IO: ios, Globals: g}}
	cmd := &cobra.Command{
		Use:   "validate FILE.pb...",
		Short: "Replay real TPU tuning runs (TpuGraphs .pb) on the simulator and score it against the hardware",
		Long: "Validate rebuilds every timed configuration of TpuGraphs' raw tuning files in tpucost's terms, times it with the simulator " +
			"and the analytical model, and reports how well each ranks what the TPU measured: Kendall's tau per kernel, the slowdown of " +
			"each predictor's top-1 and top-5 picks, MAPE after one scale per kernel, and the slowdown of XLA's own default, the baseline to beat. " +
			"Configurations that cannot be expressed are listed with the reason. The files are TPU v3 measurements: --chip defaults to v3.",
		Args: cliflag.AtLeastOneArg("one or more TpuGraphs tuning files (FILE.pb)"),
		RunE: func(cmd *cobra.Command, args []string) error { o.Files = args; return runValidate(cmd.Context(), o) },
	}
	o.Target.bindDefault(cmd, "v3")
	cmd.Flags().IntVar(&o.MinConfigs, "min-configs", validate.DefaultMinConfigs, "score only kernels with at least this many replayed configurations (>= 2)")
	cmd.Flags().StringVar(&o.Plots, "plots", "", "write simulated-vs-measured plots (PNG) into this directory")
	cmd.Flags().StringVar(&o.Model, "model", "", "also score the runs zero-shot with a tile model trained on tpucost's simulated data (a train --out directory)")
	cmd.Flags().BoolVar(&o.AllowMismatch, "allow-mismatch", false, "use a --model trained for another chip than --chip (warns)")
	cmd.Flags().StringVar(&o.Rows, "rows", "", "also write the replayed tile runs as a dataset in tpucost's own feature set (measured times), for train --init")
	return cmd
}

func runValidate(ctx context.Context, o *ValidateOptions) error {
	if err := o.Check(); err != nil {
		return err
	}
	c, err := o.Target.chip(ctx)
	if err != nil {
		return err
	}
	if o.Model != "" {
		l, err := gnn.LoadTileModel(o.Model, gnn.Target{Chip: c.Name, VMEMBytes: c.VMEMBytes, Cost: c.Target}, o.AllowMismatch, o.IO.Err)
		if err != nil {
			return err
		}
		defer l.Predictor.Close()
		o.Learned = validate.Learned(l.Predictor)
	}
	o.Notes = o.IO.Err
	return o.printResult(o.Validate(c))
}
