package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/tpusim/replay"
)

// CalibrateOptions are the options of `tpucost calibrate`.
type CalibrateOptions struct {
	IO         IO
	Globals    *Globals
	Target     TargetFlags
	Files      []string
	Out        string
	Name       string
	Seed       int64
	MinConfigs int
	MaxEvals   int
	Prior      float64
}

// CalibrateResult is the JSON output of `tpucost calibrate`: the report and the preset file
// written.
type CalibrateResult struct {
	*replay.CalibrateReport
	Out string `json:"out"`
}

// NewCmdCalibrate builds `tpucost calibrate FILE.pb... --out F`.
func NewCmdCalibrate(ios IO, g *Globals) *cobra.Command {
	o := &CalibrateOptions{IO: ios, Globals: g}
	cmd := &cobra.Command{
		Use:   "calibrate FILE.pb... --out F",
		Short: "Fit a preset's non-public timing constants to real TPU runs (TpuGraphs .pb)",
		Long: "Calibrate replays the tile runs of TpuGraphs' raw tuning files (as validate does), splits the scored kernels by --seed into a fit half " +
			"and a held-out half, fits the preset's non-public constants (launch, step overhead, DMA latency and burst cost, unit throughputs, MXU fill " +
			"and weight load; never the public peak, bandwidth or VMEM size) on the fit half with Nelder-Mead, within physical bounds, and reports " +
			"fidelity on both halves before and after. --out receives the fitted preset, which --chip-file loads.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error { o.Files = args; return runCalibrate(o) },
	}
	o.Target.bindDefault(cmd, "v3")
	cmd.Flags().StringVar(&o.Out, "out", "", "write the fitted preset (JSON) here (required)")
	cmd.Flags().StringVar(&o.Name, "name", "", "the fitted preset's name (default: the base preset's name + \"-calibrated\")")
	cmd.Flags().Int64Var(&o.Seed, "seed", 1, "seed of the fit / held-out split of the kernels")
	cmd.Flags().IntVar(&o.MinConfigs, "min-configs", replay.DefaultMinConfigs, "only kernels with at least this many replayed configurations take part (>= 2)")
	cmd.Flags().Float64Var(&o.Prior, "prior", replay.PriorWeight, "weight of the pull of each constant toward the preset's value (>= 0; 0: none)")
	cmd.Flags().IntVar(&o.MaxEvals, "max-evals", replay.DefaultMaxEvals, "bound on the optimizer's loss evaluations (>= 1)")
	return cmd
}

func runCalibrate(o *CalibrateOptions) error {
	switch {
	case o.Out == "":
		return errors.New("--out is required: the file the fitted preset is written to")
	case o.MinConfigs < 2:
		return fmt.Errorf("--min-configs: got %d, want at least 2", o.MinConfigs)
	case o.Prior < 0 || o.Prior != o.Prior:
		return fmt.Errorf("--prior: got %g, want a weight >= 0", o.Prior)
	case o.MaxEvals < 1:
		return fmt.Errorf("--max-evals: got %d, want at least 1", o.MaxEvals)
	}
	if _, err := os.Stat(o.Out); err == nil {
		if _, err := tpusim.LoadChipFile(o.Out); err != nil {
			return fmt.Errorf("--out %s exists and is not a chip file; refusing to overwrite it", o.Out)
		}
	}
	c, err := o.Target.chip()
	if err != nil {
		return err
	}
	r, err := replay.Calibrate(o.Files, replay.CalibrateOptions{Base: c, Name: o.Name, Seed: o.Seed, MinConfigs: o.MinConfigs, MaxEvals: o.MaxEvals, Prior: o.Prior})
	if err != nil {
		return err
	}
	if err := tpusim.WriteChipFile(o.Out, r.File); err != nil {
		return fmt.Errorf("--out %s: %w", o.Out, err)
	}
	if o.Globals.JSON {
		return writeJSON(o.IO.Out, CalibrateResult{r, o.Out})
	}
	return replay.WriteCalibrateText(o.IO.Out, r, o.Out)
}
