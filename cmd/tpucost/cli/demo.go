package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/demo"
)

// DemoOptions are the options of `tpucost demo`.
type DemoOptions struct {
	cmdIO
	Target TargetFlags
	Out    string
	Seed   int64
	Quick  bool
}

// NewCmdDemo builds `tpucost demo`.
func NewCmdDemo(ios IO, g *Globals) *cobra.Command {
	o := &DemoOptions{cmdIO: cmdIO{IO: ios, Globals: g}}
	cmd := &cobra.Command{
		Use:   "demo [--out DIR]",
		Short: "Run the whole loop on a small built-in default and write a report",
		Long: "Demo generates tile, fusion and layout datasets from a dozen zoo models, trains a tile model and a program-level model, " +
			"evaluates both against the analytical model on held-out programs (tables and PNG plots), and tunes two other zoo models " +
			"with the simulator alone and guided by the learned models. It writes DIR/report.md (and report.json), the data, models, " +
			"plots and tuned configs, and prints a summary. A few minutes on 2 cores. Rerunnable: datasets and models of an earlier run " +
			"into the same DIR that are complete, verify (fingerprints, checksums) and match the settings are reused; an interrupted " +
			"training is resumed; anything else is redone.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDemo(cmd.Context(), o) },
	}
	o.Target.bind(cmd)
	cmd.Flags().StringVar(&o.Out, "out", "demo-out", "output directory")
	cmd.Flags().Int64Var(&o.Seed, "seed", 1, "seed of every stage")
	cmd.Flags().BoolVar(&o.Quick, "quick", false, "tiny stages (a smoke test, not meaningful numbers)")
	return cmd
}

func runDemo(ctx context.Context, o *DemoOptions) error {
	c, err := o.Target.chip(ctx)
	if err != nil {
		return err
	}
	return o.printResult(demo.Run(ctx, demo.Options{Out: o.Out, Chip: c, Seed: o.Seed, Quick: o.Quick, Progress: o.IO.Err}))
}
