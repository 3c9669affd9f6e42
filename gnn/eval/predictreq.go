package eval

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/gnn"
)

// PredictRequest is `tpucost predict`: the kernels of one compiled program (Src, built by
// Compile for the target Target chooses) or the rows of a dataset (Data), scored by the
// model in Model. gnn does not build models or simulate: the caller passes Compile and
// Timer. Errors name the flags.
type PredictRequest struct {
	Model string // checkpoint directory (--model, required)
	// Src names the program (a zoo model or an HLO file), which Compile builds; Shapes and
	// Config are the flags that size and configure it, refused with Data.
	Src, Shapes, Config string
	// Data, instead of Src, is a dataset directory whose rows are scored (PredictDataset):
	// how a model trained on imported data (another feature set) is used.
	Data string
	// Top is the number of options listed per kernel (tile and flags models), or of
	// configurations per ranked row; >= 0.
	Top int
	// MaxRows bounds the rows reported with Data (0: all); >= 0, only with Data.
	MaxRows int
	// AllowMismatch predicts for another target than the model's training data's
	// (gnn.LoadFor), with a warning to Warn and ChipMismatch in the report.
	AllowMismatch bool
	// ChipSet says the user named the chip (--chip), which is refused with Data.
	ChipSet bool
	// Target is the target to predict Src for, given the model's training Meta (as
	// gnn.LoadFor takes it: e.g. the chip the model was trained for unless the user named
	// one).
	Target func(gnn.Meta) (gnn.Target, error)
	// Compile builds Src at Shapes with Config for the target's cost model.
	Compile compiler.CompileSource
	// Timer times a kernel's options on the target (the simulated and analytical times).
	Timer KernelTimer
	// Warn receives the warning of a target mismatch (nil: dropped).
	Warn io.Writer
}

// PredictResult is a PredictRequest's result: Program for a program, Rows for a
// dataset's rows (the other nil). Its JSON is the one that is set.
type PredictResult struct {
	Program *ProgramReport
	Rows    *RowReport
	chip    string // the chip Program was predicted for, named in its text
}

// Validate checks the request's settings and their combinations (Src or Data, and the
// flags each admits).
func (r PredictRequest) Validate() error {
	if r.Model == "" {
		return fmt.Errorf("--model is required")
	}
	if r.Top < 0 {
		return fmt.Errorf("--top \"%d\": want an integer >= 0 (0: list no options)", r.Top)
	}
	if r.MaxRows < 0 {
		return fmt.Errorf("--rows \"%d\": want an integer >= 0 (0: all)", r.MaxRows)
	}
	switch {
	case r.Data != "" && r.Shapes != "":
		return fmt.Errorf("--shapes sizes SRC: give it with SRC, not with --data")
	case r.Data != "" && r.Src != "":
		return fmt.Errorf("give SRC or --data, not both")
	case r.Data == "" && r.Src == "":
		return fmt.Errorf("give SRC (a zoo model or an HLO file) or --data DIR")
	case r.Data != "" && (r.ChipSet || r.Config != ""):
		return fmt.Errorf("--chip, --vmem and --config apply to SRC; --data rows carry their own features")
	case r.Data == "" && r.MaxRows != 0:
		return fmt.Errorf("--rows applies to --data")
	}
	return nil
}

// Predict validates r and scores the program (ReportProgram) or the dataset's rows
// (PredictDataset).
func (r PredictRequest) Predict() (*PredictResult, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	if r.Data != "" {
		rows, err := PredictDataset(r.Model, r.Data, r.Top, r.MaxRows)
		if err != nil {
			return nil, err
		}
		return &PredictResult{Rows: rows}, nil
	}
	if r.Target == nil || r.Compile == nil || r.Timer == nil {
		return nil, errors.New("predict: a program needs Target, Compile and Timer")
	}
	l, err := gnn.LoadFor(r.Model, r.Target, r.AllowMismatch)
	if err != nil {
		return nil, err
	}
	defer l.Predictor.Close()
	if l.Mismatch != "" && r.Warn != nil {
		fmt.Fprintf(r.Warn, "WARNING: %s: its predictions are not validated for this target\n", l.Mismatch)
	}
	p, err := r.Compile(r.Src, r.Shapes, r.Config, compiler.Options{Target: l.Target.Cost})
	if err != nil {
		return nil, err
	}
	rep, err := ReportProgram(l.Predictor, p, r.Top, r.Timer)
	if err != nil {
		return nil, err
	}
	rep.ChipMismatch = l.Mismatch != ""
	return &PredictResult{Program: rep, chip: l.Target.Chip}, nil
}

// WriteText writes the report that is set as text.
func (r *PredictResult) WriteText(w io.Writer) error {
	if r.Rows != nil {
		return r.Rows.WriteText(w)
	}
	return r.Program.WriteText(w, r.chip)
}

// MarshalJSON is the JSON of the report that is set.
func (r *PredictResult) MarshalJSON() ([]byte, error) {
	if r.Rows != nil {
		return json.Marshal(r.Rows)
	}
	return json.Marshal(r.Program)
}
