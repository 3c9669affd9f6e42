package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/tpusim/ragged"
)

// SimOptions are the options of `tpucost sim`.
type SimOptions struct {
	Shapes  string // --shapes: sizes of dynamic dimensions (zoo.ResolveShapes)
	Lengths string // --lengths: a ragged batch's sequence lengths (ragged.TimeZoo)
	IO      IO
	Globals *Globals
	Target  TargetFlags
	Src     string
	Config  string
	Chips   int
	Fusion  compiler.FusionRule  // --fusion
	Staging compiler.StagingMode // --staging
}

// NewCmdSim builds `tpucost sim SRC`.
func NewCmdSim(ios IO, g *Globals) *cobra.Command {
	o := &SimOptions{IO: ios, Globals: g}
	cmd := &cobra.Command{
		Use:   "sim SRC",
		Short: "Simulate a compiled program: per-kernel simulated and analytical time",
		Long: "Sim compiles SRC (a zoo model or an HLO file) with the given config (default: XLA-like defaults) and times every kernel " +
			"on the simulator (the ground truth) and with the analytical roofline model, with the bound (mxu, vpu, eup, xlu, hbm, latency, overhead), flops and bytes. " +
			"With --lengths L,L,..., it times a batch of sequences of those lengths on a zoo model that declares seq two ways: padded to the longest and ragged " +
			"(each sequence at its own length plus the packing gather), with the share of flops spent on padding.",
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error { o.Src = args[0]; return runSim(o) },
	}
	o.Target.bind(cmd)
	bindShapes(cmd, &o.Shapes)
	bindFusion(cmd, &o.Fusion)
	bindStaging(cmd, &o.Staging)
	cmd.Flags().StringVar(&o.Config, "config", "", "JSON config file")
	cmd.Flags().Var(lengthsFlag(&o.Lengths), "lengths", "time a ragged batch of these sequence lengths (L,L,...; a zoo model with seq): padded_ns, ragged_ns, padding_waste")
	cmd.Flags().IntVar(&o.Chips, "chips", 0, "chips that collectives without replica groups span (default: the module's replica_count × num_partitions)")
	return cmd
}

func runSim(o *SimOptions) error {
	c, err := o.Target.chip()
	if err != nil {
		return err
	}
	if o.Lengths != "" {
		return runSimRagged(o, c)
	}
	p, err := compileSource(o.Src, o.Shapes, o.Config, compiler.Options{Target: c.Target, Fusion: o.Fusion, Staging: o.Staging})
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
	return r.WriteText(o.IO.Out)
}

// runSimRagged is `sim SRC --lengths L,L,...`: a ragged batch timed padded and ragged.
func runSimRagged(o *SimOptions, c tpusim.Chip) error {
	switch {
	case o.Shapes != "":
		return errors.New("--lengths sizes every sequence itself: drop --shapes")
	case o.Config != "":
		return errors.New("--lengths times default compiles at every length: drop --config (a config's kernel keys hold at one length)")
	case o.Chips != 0:
		return errors.New("--lengths times one chip: drop --chips")
	case o.Fusion != "" && o.Fusion != compiler.FusionXLA:
		return fmt.Errorf("--lengths times default compiles at every length: --fusion %s is not supported here (drop --fusion)", o.Fusion)
	case o.Staging != compiler.StagingOff:
		return fmt.Errorf("--lengths times default compiles at every length: --staging %s is not supported here (drop --staging)", o.Staging)
	}
	lengths, err := ragged.ParseLengths(o.Lengths)
	if err != nil {
		return fmt.Errorf("--lengths: %w", err)
	}
	r, err := ragged.TimeZoo(o.Src, lengths, c)
	if err != nil {
		return fmt.Errorf("--lengths: %w", err)
	}
	if o.Globals.JSON {
		return writeJSON(o.IO.Out, r)
	}
	return r.WriteText(o.IO.Out)
}

// lengthsFlag is the value of --lengths (sim, tune): parsed (ragged.ParseLengths) as the
// flag is set, so an empty value fails naming the flag.
func lengthsFlag(p *string) pflag.Value {
	return checkedString(p, "lengths", func(s string) error { _, err := ragged.ParseLengths(s); return err })
}
