package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/gnn"
	"github.com/tpucost/tpucost/gnn/eval"
	"github.com/tpucost/tpucost/internal/cliflag"
	"github.com/tpucost/tpucost/tpusim"
)

// PredictOptions are the options of `tpucost predict`: the flags of an eval.PredictRequest.
type PredictOptions struct {
	cmdIO
	Target TargetFlags
	eval.PredictRequest
}

// NewCmdPredict builds `tpucost predict SRC --model DIR`.
func NewCmdPredict(ios IO, g *Globals) *cobra.Command {
	o := &PredictOptions{cmdIO: cmdIO{IO: ios, Globals: g}}
	cmd := &cobra.Command{
		Use:   "predict SRC --model DIR | predict --data DIR --model DIR",
		Short: "Predict a compiled program's kernel times with a trained model, beside the simulator",
		Long: "Predict compiles SRC (a zoo model or an HLO file) with the given config (default: XLA-like defaults) and prints, per kernel, " +
			"the model's predicted time next to the simulated and analytical times, and the predicted program total (models trained with " +
			"the mse loss). For a tile or flags model it ranks each kernel's options (tiles with the kernel's flags, or flags with its tile) " +
			"and lists the top --top with their simulated times, the simulated time of the model's pick and of the best option. " +
			"The chip defaults to the one the model's training data was generated for. " +
			"With --data DIR instead of SRC it scores the rows of a dataset of the model's feature set (for example TpuGraphs data " +
			"imported with `tpucost import tpugraphs`, which no tpucost compile produces): per row, the configuration the model picks, " +
			"its measured time beside the row's best and the slowdown, or the predicted and measured runtime for absolute data; rows " +
			"whose kernels the model trained on are marked.",
		Args: cliflag.AtMostOneArg("at most one HLO file or zoo model name (SRC)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Src = args[0]
			}
			o.ChipSet = cmd.Flags().Changed("chip")
			return runPredict(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Data, "data", "", "score the rows of this dataset directory instead of compiling SRC")
	cmd.Flags().IntVar(&o.MaxRows, "rows", 0, "with --data: report at most this many rows (0: all)")
	o.Target.bind(cmd)
	bindShapes(cmd, &o.Shapes)
	cmd.Flags().StringVar(&o.Model, "model", "", "checkpoint directory (from tpucost train)")
	cmd.Flags().StringVar(&o.Config, "config", "", "JSON config file")
	cmd.Flags().IntVar(&o.Top, "top", 3, "options listed per kernel for tile and flags models")
	cmd.Flags().BoolVar(&o.AllowMismatch, "allow-mismatch", false, "predict for another --chip/--vmem than the model was trained for (warns; chip_mismatch in --json)")
	return cmd
}

func runPredict(ctx context.Context, o *PredictOptions) error {
	var c tpusim.Chip
	o.PredictRequest.Target = func(meta gnn.Meta) (gnn.Target, error) {
		// The chip defaults to the one the model's training data was generated for.
		var err error
		c, err = o.Target.spec().Default(meta.DefaultTarget()).ResolveContext(ctx)
		return gnn.Target{Chip: c.Name, VMEMBytes: c.VMEMBytes, Cost: c.Target}, err
	}
	o.Compile = compileSource(ctx)
	o.Timer = func(choice cost.Planned) (float64, float64, error) { return tpusim.TimeChoice(choice, c) }
	o.Warn = o.IO.Err
	return o.printResult(o.Predict())
}
