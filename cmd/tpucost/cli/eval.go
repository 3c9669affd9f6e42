package cli

import (
	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/bitserial/lutcpu"
	"github.com/tpucost/tpucost/gnn/eval"
)

// EvalOptions are the options of `tpucost eval`.
type EvalOptions struct {
	cmdIO
	eval.RunOptions
}

// NewCmdEval builds `tpucost eval`.
func NewCmdEval(ios IO, g *Globals) *cobra.Command {
	o := &EvalOptions{cmdIO: cmdIO{IO: ios, Globals: g}}
	cmd := &cobra.Command{
		Use:   "eval --model DIR [--data DIR] [--split random|program] [--plots DIR]",
		Short: "Evaluate a trained model against the analytical baseline on held-out rows",
		Long: "Eval scores a trained model and the analytical model on the test part of the split the model was trained with: " +
			"tile/flags models by APE (per program, averaged), Kendall's tau (per kernel) and slowdown@1/5/10; fusion/layout models by " +
			"MAPE (all kernels, >= 5 us, < 5 us), Kendall's tau over kernels, and the same for whole programs. It prints a per-program " +
			"table and the overall row, learned vs analytical; --plots DIR writes scatter.png, programs.png and training.png. " +
			"Rows whose kernel the model trained or validated on (recorded in the checkpoint) are never scored, whatever --data is; " +
			"their number is reported. --data defaults to the model's training data, found relative to the model directory.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if lutcpu.IsCheckpoint(o.ModelDir) {
				return runEvalBitserial(cmd, o)
			}
			return runEval(o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.ModelDir, "model", "", "model checkpoint directory (tpucost train --out)")
	f.StringVar(&o.DataDir, "data", "", "dataset directory (default: the one the model was trained on)")
	f.StringVar(&o.Split, "split", "", "random, program, family or shape:NAME=V[,V...]; must be the model's training split (default: it)")
	f.StringVar(&o.PlotsDir, "plots", "", "write PNG plots into this directory")
	f.BoolVar(&o.AllowMismatch, "allow-mismatch", false, "evaluate on data of another chip, VMEM size or simulator than the model's (warns; chip_mismatch in --json)")
	cmd.MarkFlagRequired("model")
	return cmd
}

func runEval(o *EvalOptions) error {
	o.Warn = o.IO.Err
	return o.printResult(eval.Run(o.RunOptions))
}
