package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/gnn"
	"github.com/tpucost/tpucost/tpusim/replay"
)

// ValidateOptions are the options of `tpucost validate`.
type ValidateOptions struct {
	IO            IO
	Globals       *Globals
	Target        TargetFlags
	Files         []string
	MinConfigs    int
	Plots         string
	Model         string
	AllowMismatch bool
	Rows          string
}

// NewCmdValidate builds `tpucost validate FILE.pb...`.
func NewCmdValidate(ios IO, g *Globals) *cobra.Command {
	o := &ValidateOptions{IO: ios, Globals: g}
	cmd := &cobra.Command{
		Use:   "validate FILE.pb...",
		Short: "Replay real TPU tuning runs (TpuGraphs .pb) on the simulator and score it against the hardware",
		Long: "Validate rebuilds every timed configuration of TpuGraphs' raw tuning files in tpucost's terms, times it with the simulator " +
			"and the analytical model, and reports how well each ranks what the TPU measured: Kendall's tau per kernel, the slowdown of " +
			"each predictor's top-1 and top-5 picks, MAPE after one scale per kernel, and the slowdown of XLA's own default, the baseline to beat. " +
			"Configurations that cannot be expressed are listed with the reason. The files are TPU v3 measurements: --chip defaults to v3.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error { o.Files = args; return runValidate(o) },
	}
	o.Target.bindDefault(cmd, "v3")
	cmd.Flags().IntVar(&o.MinConfigs, "min-configs", replay.DefaultMinConfigs, "score only kernels with at least this many replayed configurations (>= 2)")
	cmd.Flags().StringVar(&o.Plots, "plots", "", "write simulated-vs-measured plots (PNG) into this directory")
	cmd.Flags().StringVar(&o.Model, "model", "", "also score the runs zero-shot with a tile model trained on tpucost's simulated data (a train --out directory)")
	cmd.Flags().BoolVar(&o.AllowMismatch, "allow-mismatch", false, "use a --model trained for another chip than --chip (warns)")
	cmd.Flags().StringVar(&o.Rows, "rows", "", "also write the replayed tile runs as a dataset in tpucost's own feature set (measured times), for train --init")
	return cmd
}

func runValidate(o *ValidateOptions) error {
	if o.MinConfigs < 2 {
		return fmt.Errorf("--min-configs: got %d, want at least 2", o.MinConfigs)
	}
	c, err := o.Target.chip()
	if err != nil {
		return err
	}
	opts := replay.Options{Chip: c, MinConfigs: o.MinConfigs}
	if o.Model != "" {
		l, err := gnn.LoadFor(o.Model, func(gnn.Meta) (gnn.Target, error) {
			return gnn.Target{Chip: c.Name, VMEMBytes: c.VMEMBytes, Cost: c.Target}, nil
		}, o.AllowMismatch)
		if err != nil {
			return err
		}
		defer l.Predictor.Close()
		if l.Mismatch != "" {
			fmt.Fprintf(o.IO.Err, "WARNING: %s\n", l.Mismatch)
		}
		if ck := l.Checkpoint; ck.Task != dataset.TaskTile {
			return fmt.Errorf("--model %s is a %s model: validate scores tile runs with a tile model", o.Model, ck.Task)
		}
		opts.Learned = replay.Learned(l.Predictor)
	}
	r, err := replay.Validate(o.Files, opts)
	if err != nil {
		return err
	}
	if o.Rows != "" {
		n, err := replay.WriteTileRows(o.Rows, r, c)
		if err != nil {
			return fmt.Errorf("--rows %s: %w", o.Rows, err)
		}
		fmt.Fprintf(o.IO.Err, "wrote %d kernels' measured runs to %s\n", n, o.Rows)
	}
	if o.Plots != "" {
		files, err := replay.WritePlots(o.Plots, r)
		if err != nil {
			return err
		}
		for _, f := range files {
			fmt.Fprintf(o.IO.Err, "wrote %s\n", f)
		}
	}
	if o.Globals.JSON {
		return writeJSON(o.IO.Out, r)
	}
	return replay.WriteText(o.IO.Out, r)
}
