package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/gnn"
	"github.com/tpucost/tpucost/gnn/eval"
	"github.com/tpucost/tpucost/tpusim"
)

// PredictOptions are the options of `tpucost predict`.
type PredictOptions struct {
	Shapes  string // --shapes: sizes of dynamic dimensions (zoo.ResolveShapes)
	IO      IO
	Globals *Globals
	Target  TargetFlags
	Src     string
	Model   string
	Config  string
	Top     int
	// Data, instead of SRC, scores the rows of a dataset directory (eval.PredictDataset):
	// how a model trained on imported data (another feature set) is used.
	Data    string
	MaxRows int
	// AllowMismatch predicts for another chip than the model's training data's, with a
	// warning and chip_mismatch in --json.
	AllowMismatch bool

	chipSet bool
}

// NewCmdPredict builds `tpucost predict SRC --model DIR`.
func NewCmdPredict(ios IO, g *Globals) *cobra.Command {
	o := &PredictOptions{IO: ios, Globals: g}
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
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Src = args[0]
			}
			o.chipSet = cmd.Flags().Changed("chip")
			return runPredict(o)
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

func runPredict(o *PredictOptions) error {
	if o.Model == "" {
		return fmt.Errorf("--model is required")
	}
	if o.Top < 0 {
		return fmt.Errorf("--top: got %d, want an integer >= 0 (0: list no options)", o.Top)
	}
	if o.MaxRows < 0 {
		return fmt.Errorf("--rows: got %d, want an integer >= 0 (0: all)", o.MaxRows)
	}
	switch {
	case o.Data != "" && o.Shapes != "":
		return fmt.Errorf("--shapes sizes SRC: give it with SRC, not with --data")
	case o.Data != "" && o.Src != "":
		return fmt.Errorf("give SRC or --data, not both")
	case o.Data == "" && o.Src == "":
		return fmt.Errorf("give SRC (a zoo model or an HLO file) or --data DIR")
	case o.Data != "":
		if o.chipSet || o.Config != "" {
			return fmt.Errorf("--chip, --vmem and --config apply to SRC; --data rows carry their own features")
		}
		return runPredictData(o)
	case o.MaxRows != 0:
		return fmt.Errorf("--rows applies to --data")
	}
	var c tpusim.Chip
	l, err := gnn.LoadFor(o.Model, func(meta gnn.Meta) (gnn.Target, error) {
		// The chip defaults to the one the model's training data was generated for.
		if chip, vmem := meta.DefaultTarget(); !o.chipSet && chip != "" {
			o.Target.Chip = chip
			if o.Target.VMEMMiB == 0 {
				o.Target.VMEMMiB = vmem
			}
		}
		var err error
		c, err = o.Target.chip()
		return gnn.Target{Chip: c.Name, VMEMBytes: c.VMEMBytes, Cost: c.Target}, err
	}, o.AllowMismatch)
	if err != nil {
		return err
	}
	pred, mismatch := l.Predictor, l.Mismatch
	defer pred.Close()
	if mismatch != "" {
		fmt.Fprintf(o.IO.Err, "WARNING: %s: its predictions are not validated for this target\n", mismatch)
	}
	p, err := compileSource(o.Src, o.Shapes, o.Config, compiler.Options{Target: c.Target})
	if err != nil {
		return err
	}
	timer := func(choice cost.Planned) (float64, float64, error) { return tpusim.TimeChoice(choice, c) }
	r, err := eval.ReportProgram(pred, p, o.Top, timer)
	if err != nil {
		return err
	}
	r.ChipMismatch = mismatch != ""
	if o.Globals.JSON {
		return writeJSON(o.IO.Out, r)
	}
	return r.WriteText(o.IO.Out, c.Name)
}

func runPredictData(o *PredictOptions) error {
	r, err := eval.PredictDataset(o.Model, o.Data, o.Top, o.MaxRows)
	if err != nil {
		return err
	}
	if o.Globals.JSON {
		return writeJSON(o.IO.Out, r)
	}
	return r.WriteText(o.IO.Out)
}
