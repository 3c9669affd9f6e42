package validate

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/tpucost/tpucost/internal/dirlock"
	"github.com/tpucost/tpucost/tpusim"
)

// CalibrateRequest is `tpucost calibrate`: the tile runs of Files fitted (Calibrate) and
// the fitted preset written to Out. Errors name the flags.
type CalibrateRequest struct {
	Files      []string // TpuGraphs tuning files (.pb)
	Out        string   // the chip file written (required; an existing one must be a chip file)
	Name       string   // the fitted preset's name (CalibrateOptions.Name)
	Seed       int64
	MinConfigs int     // >= 2
	MaxEvals   int     // >= 1
	Prior      float64 // >= 0
}

// CalibrateResult is a calibration's report and the preset file written (the JSON of
// `tpucost calibrate`).
type CalibrateResult struct {
	*CalibrateReport
	Out string `json:"out"`
}

// Check checks r's values as given (no defaults: a zero MinConfigs or MaxEvals is an
// error) and that Out, if it exists, is a chip file, which it may overwrite.
func (r CalibrateRequest) Check() error {
	switch {
	case r.Out == "":
		return errors.New("--out is required: the file the fitted preset is written to")
	case r.MinConfigs < 2:
		return fmt.Errorf("--min-configs \"%d\": want at least 2", r.MinConfigs)
	case r.Prior < 0 || r.Prior != r.Prior:
		return fmt.Errorf("--prior \"%g\": want a weight >= 0", r.Prior)
	case r.MaxEvals < 1:
		return fmt.Errorf("--max-evals \"%d\": want at least 1", r.MaxEvals)
	}
	if st, err := os.Stat(r.Out); err == nil {
		// Only a regular file is read: a FIFO or a terminal would wait for input.
		if !st.Mode().IsRegular() {
			return fmt.Errorf("--out %s exists and is not a chip file; refusing to overwrite it", r.Out)
		}
		if _, err := tpusim.LoadChipFile(r.Out); err != nil {
			return fmt.Errorf("--out %s exists and is not a chip file; refusing to overwrite it", r.Out)
		}
	}
	return nil
}

// Calibrate checks r, then resolves the base preset (baseOf), fits its constants
// (Calibrate) and writes the fitted preset to Out (tpusim.WriteChipFile).
func (r CalibrateRequest) Calibrate(baseOf func() (tpusim.Chip, error)) (*CalibrateResult, error) {
	if err := r.Check(); err != nil {
		return nil, err
	}
	base, err := baseOf()
	if err != nil {
		return nil, err
	}
	rep, err := Calibrate(r.Files, CalibrateOptions{Base: base, Name: r.Name, Seed: r.Seed, MinConfigs: r.MinConfigs, MaxEvals: r.MaxEvals, Prior: r.Prior})
	if err != nil {
		return nil, err
	}
	if err := tpusim.WriteChipFile(r.Out, rep.File); err != nil {
		return nil, fmt.Errorf("--out %s: %w", r.Out, err)
	}
	return &CalibrateResult{rep, r.Out}, nil
}

// WriteText writes the calibration for a person (WriteCalibrateText).
func (r *CalibrateResult) WriteText(w io.Writer) error {
	return WriteCalibrateText(w, r.CalibrateReport, r.Out)
}

// ValidateRequest is `tpucost validate`: the runs of Files replayed and scored
// (Validate), optionally by a learned model, with the tile runs written as a dataset
// (Rows) and plots (Plots). Errors name the flags.
type ValidateRequest struct {
	Files      []string // TpuGraphs tuning files (.pb)
	MinConfigs int      // >= 2 (Options.MinConfigs)
	Plots      string   // a directory for the plots (WritePlots); empty: none
	Rows       string   // a dataset directory for the tile runs (WriteTileRows); empty: none
	Learned    TilePredictor
	// Notes receives a line per file written (nil: none).
	Notes io.Writer
}

// Check checks r's values as given.
func (r ValidateRequest) Check() error {
	if r.MinConfigs < 2 {
		return fmt.Errorf("--min-configs \"%d\": want at least 2", r.MinConfigs)
	}
	return nil
}

// Validate checks r, replays and scores the runs on c (Validate), and writes the rows
// and plots asked for.
func (r ValidateRequest) Validate(c tpusim.Chip) (*Report, error) {
	if err := r.Check(); err != nil {
		return nil, err
	}
	if r.Plots != "" {
		// The plots directory is checked (its kind) and locked against a second writer
		// first, not after the replay.
		lock, err := dirlock.AcquireDir(r.Plots, dirlock.Plots)
		if err != nil {
			return nil, fmt.Errorf("--plots: %w", err)
		}
		defer lock.Release()
	}
	rep, err := Validate(r.Files, Options{Chip: c, MinConfigs: r.MinConfigs, Learned: r.Learned})
	if err != nil {
		return nil, err
	}
	notes := r.Notes
	if notes == nil {
		notes = io.Discard
	}
	if r.Rows != "" {
		n, err := WriteTileRows(r.Rows, rep, c)
		if err != nil {
			return nil, fmt.Errorf("--rows %s: %w", r.Rows, err)
		}
		fmt.Fprintf(notes, "wrote %d kernels' measured runs to %s\n", n, r.Rows)
	}
	if r.Plots != "" {
		files, err := WritePlots(r.Plots, rep)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			fmt.Fprintf(notes, "wrote %s\n", f)
		}
	}
	return rep, nil
}

// WriteText writes r for a person (the package's WriteText).
func (r *Report) WriteText(w io.Writer) error { return WriteText(w, r) }
