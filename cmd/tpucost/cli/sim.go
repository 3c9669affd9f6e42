package cli

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tpucost/tpucost/internal/cliflag"
	"github.com/tpucost/tpucost/tpusim/ragged"
	"github.com/tpucost/tpucost/tune"
)

// SimOptions are the options of `tpucost sim`: the flags of a tpusim.SimRequest and
// --lengths, which selects a ragged batch (ragged.Request).
type SimOptions struct {
	cmdIO
	Target TargetFlags
	ragged.Request
}

// NewCmdSim builds `tpucost sim SRC`.
func NewCmdSim(ios IO, g *Globals) *cobra.Command {
	o := &SimOptions{cmdIO: cmdIO{IO: ios, Globals: g}}
	cmd := &cobra.Command{
		Use:   "sim SRC",
		Short: "Simulate a compiled program: per-kernel simulated and analytical time",
		Long: "Sim compiles SRC (a zoo model or an HLO file) with the given config (default: XLA-like defaults) and times every kernel " +
			"on the simulator (the ground truth) and with the analytical roofline model, with the bound (mxu, vpu, eup, xlu, hbm, latency, overhead), flops and bytes. " +
			"With --lengths L,L,... (or uniform:LO-HI:N:SEED, zipf:LO-HI:N:SEED, file:PATH), it times a batch of sequences of those lengths on a zoo model that declares seq three ways: " +
			"padded to the longest, ideal (each sequence's share of the program at its own length plus the packing gather) and, on bert_*/gpt2_* models, " +
			"the compiled ragged program (packed storage, per-sequence attention kernels, offsets reads, the megacore's split; docs/ragged.md), with the share of flops spent on padding.",
		Args: cliflag.OneArg("one HLO file or zoo model name (SRC)"),
		RunE: func(cmd *cobra.Command, args []string) error { o.Src = args[0]; return runSim(cmd.Context(), o) },
	}
	o.Target.bind(cmd)
	bindShapes(cmd, &o.Shapes)
	bindFusion(cmd, &o.Fusion)
	bindStaging(cmd, &o.Staging)
	cmd.Flags().StringVar(&o.Config, "config", "", "JSON config file, or a micro-kernel dispatch table (tune --micro-kernels --out) applied at --shapes NAME=V")
	cmd.Flags().Var(lengthsFlag(&o.Lengths), "lengths", "time a ragged batch of these sequence lengths (L,L,..., uniform:LO-HI:N:SEED, zipf:LO-HI:N:SEED or file:PATH; a zoo model with seq): padded_ns, ideal_ns, ragged_ns, padding_waste")
	cmd.Flags().IntVar(&o.Partitions, "partitions", 0, "devices a GSPMD module (sharding annotations) is partitioned over (default: its num_partitions; must divide it; 1: the global program on one chip)")
	cmd.Flags().IntVar(&o.Chips, "chips", 0, "chips that collectives without replica groups span (default: the module's replica_count × num_partitions)")
	return cmd
}

func runSim(ctx context.Context, o *SimOptions) error {
	c, err := o.Target.chip(ctx)
	if err != nil {
		return err
	}
	if o.Lengths != "" {
		return o.printResult(o.Request.Time(c))
	}
	o.Compile, o.Warn = tune.DispatchSource(ctx, compileSource(ctx)), o.IO.Err
	return o.printResult(o.Simulate(c))
}

// lengthsFlag is the value of --lengths (sim, tune): parsed (ragged.ParseLengths) as the
// flag is set, so an empty value fails naming the flag.
func lengthsFlag(p *string) pflag.Value {
	return checkedString(p, "lengths", func(s string) error { _, err := ragged.ParseLengths(s); return err })
}
