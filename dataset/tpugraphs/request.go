package tpugraphs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/internal/progress"
	"github.com/tpucost/tpucost/tpusim"
)

// ImportRequest is `tpucost import tpugraphs`: the flags as given, checked (Check) before
// the chip is resolved, then imported (Import). Errors name the flags.
type ImportRequest struct {
	Sources    []string // ImportOptions.Sources
	Out        string   // required
	Collection string   // "", tile or layout
	Format     string   // arrow or parquet
	// Progress receives progress lines (nil: none).
	Progress io.Writer
}

// Check checks r's values: an output directory, a known format and collection.
func (r ImportRequest) Check() error {
	if r.Out == "" {
		return errors.New("--out: required")
	}
	if f := dataset.Format(r.Format); !f.Valid() {
		return fmt.Errorf("--format %q: want arrow or parquet", r.Format)
	}
	if r.Collection != "" && r.Collection != CollectionTile && r.Collection != CollectionLayout {
		return fmt.Errorf("--collection %q: want tile or layout", r.Collection)
	}
	return nil
}

// Import checks r, then resolves the chip whose features describe .pb modules, and
// imports r's sources (Import).
func (r ImportRequest) Import(ctx context.Context, chipOf func() (tpusim.Chip, error)) (*ImportReport, error) {
	if err := r.Check(); err != nil {
		return nil, err
	}
	chip, err := chipOf()
	if err != nil {
		return nil, err
	}
	o := ImportOptions{Sources: r.Sources, Out: r.Out, Collection: r.Collection, Format: dataset.Format(r.Format), Chip: chip}
	rep := progress.NewLazy(r.Progress, "import tpugraphs")
	if r.Progress != nil {
		o.Progress = func(done, total int) { rep.Update(int64(done), int64(total), "files") }
	}
	res, err := Import(ctx, o)
	rep.Done()
	return res, err
}

// ExportRequest is `tpucost export tpugraphs`: the flags as given. Errors name the flags.
type ExportRequest struct {
	Dir   string // the dataset exported
	Out   string // required
	Split string // one of ExportSplits
	Seed  int64
	// Progress receives progress lines (nil: none).
	Progress io.Writer
}

// Check checks r's values: an output directory and a known split.
func (r ExportRequest) Check() error {
	if r.Out == "" {
		return errors.New("--out: required")
	}
	if !slices.Contains(ExportSplits(), r.Split) {
		return fmt.Errorf("--split %q: want one of %s", r.Split, strings.Join(ExportSplits(), ", "))
	}
	return nil
}

// Export checks r and exports the dataset (Export).
func (r ExportRequest) Export(ctx context.Context) (*ExportReport, error) {
	if err := r.Check(); err != nil {
		return nil, err
	}
	o := ExportOptions{Dir: r.Dir, Out: r.Out, Split: r.Split, Seed: r.Seed}
	rep := progress.NewLazy(r.Progress, "export tpugraphs")
	if r.Progress != nil {
		o.Progress = func(done, total int) { rep.Update(int64(done), int64(total), "kernels") }
	}
	res, err := Export(ctx, o)
	rep.Done()
	return res, err
}
