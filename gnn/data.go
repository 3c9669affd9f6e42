package gnn

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/internal/stablehash"
)

// DataOptions select a dataset directory's rows for training.
type DataOptions struct {
	Dir string
	// Split is "random" (by kernel, the default), "program" (held-out programs) or
	// "family" (held-out model families).
	Split string
	// TestFraction is held out for evaluation (dataset.NewSplit's Test part), never
	// trained or validated on (default 0.2).
	TestFraction float64
	// ValFraction of the training part validates every epoch (default 0.1): kernels
	// chosen by a hash for a random split, whole programs for a program split.
	ValFraction float64
	// SplitSeed seeds the split (and the validation hold-out). Evaluation must use the
	// same split kind, fraction and seed to test on unseen rows; they are recorded in the
	// checkpoint's Meta.
	SplitSeed int64
}

func (o *DataOptions) defaults() error {
	if o.Split == "" {
		o.Split = dataset.SplitRandom
	}
	if o.TestFraction == 0 {
		o.TestFraction = 0.2
	}
	if o.ValFraction == 0 {
		o.ValFraction = 0.1
	}
	return o.Validate()
}

// datasetSource streams one part of a split dataset.
type datasetSource struct {
	Data  *dataset.Dataset
	Split *dataset.Split
	Part  dataset.SplitPart
}

// Rows implements RowSource.
func (s datasetSource) Rows(fn func(*dataset.Row) error) error {
	return s.Data.Rows(dataset.ReadOptions{Split: s.Split, Part: s.Part}, fn)
}

// OpenData opens the datasets of opts.Dir (one directory, or several separated by
// commas) for training a model of task: it checks each dataset's task (several datasets
// must all be of task, or all absolute, e.g. fusion and layout data for one program-level
// model) and feature schema against its provenance, and that they were simulated alike;
// splits each with the same split settings (a random split is a hash of the kernel key,
// so a kernel lands on the same side in every dataset); and returns the training and
// validation sources (from the splits' Train parts) and the Meta to record. Unlabelled
// data (dataset.Provenance.RequireLabels) is refused. A multi-task
// model (Config.Tasks) passes its heads: datasets of any of those tasks are accepted.
func OpenData(opts DataOptions, task dataset.Task, heads ...dataset.Task) (train, val RowSource, meta Meta, err error) {
	train, val, meta, _, _, err = openData(opts, task, heads...)
	return train, val, meta, err
}

// openData is OpenData; it also returns the first dataset's provenance (which the others
// agree with on features and target) and every dataset's fingerprint (from the sums Open
// verified), so that nothing opens, verifies or hashes a dataset twice.
func openData(opts DataOptions, task dataset.Task, heads ...dataset.Task) (train, val RowSource, meta Meta, prov dataset.Provenance, refs []DatasetRef, err error) {
	if err := opts.defaults(); err != nil {
		return nil, nil, Meta{}, prov, nil, err
	}
	var trains, vals concatSource
	var first *dataset.Provenance
	for _, dir := range strings.Split(opts.Dir, ",") {
		dir = strings.TrimSpace(dir)
		if dir == "" {
			continue
		}
		d, err := dataset.Open(dir)
		if err != nil {
			return nil, nil, Meta{}, prov, nil, err
		}
		p := d.Provenance
		if err := p.RequireLabels(dir, "train"); err != nil {
			return nil, nil, Meta{}, prov, nil, err
		}
		if p.Task != task && !slices.Contains(heads, p.Task) && (p.Task.Relative() || task.Relative()) {
			if len(heads) > 0 {
				return nil, nil, Meta{}, prov, nil, fmt.Errorf("dataset %s holds %s rows; the model has heads for %s", dir, p.Task, list(heads))
			}
			return nil, nil, Meta{}, prov, nil, fmt.Errorf("dataset %s holds %s rows, not %s", dir, p.Task, task)
		}
		refs = append(refs, DatasetRef{Path: dir, Fingerprint: d.Fingerprint()})
		if first == nil {
			first = &p
		} else if err := sameInputs(dir, p, *first); err != nil {
			return nil, nil, Meta{}, prov, nil, err
		}
		split, err := dataset.NewSplit(d, opts.Split, opts.TestFraction, opts.SplitSeed)
		if err != nil {
			return nil, nil, Meta{}, prov, nil, err
		}
		trainPart := datasetSource{Data: d, Split: split, Part: dataset.Train}
		isVal := valHoldout(opts, split.Programs(dataset.Train))
		trains = append(trains, filterSource{Source: trainPart, Keep: func(r *dataset.Row) bool { return !isVal(r) }})
		vals = append(vals, filterSource{Source: trainPart, Keep: isVal})
	}
	if first == nil {
		return nil, nil, Meta{}, prov, nil, fmt.Errorf("no dataset directory given")
	}
	meta = Meta{Data: opts.Dir, Split: opts.Split, TestFraction: opts.TestFraction, ValFraction: opts.ValFraction, SplitSeed: opts.SplitSeed,
		Chip: first.Chip, VMEMBytes: first.VMEMBytes, Simulator: first.SimulatorVersion}
	if len(trains) == 1 {
		return trains[0], vals[0], meta, *first, refs, nil
	}
	return trains, vals, meta, *first, refs, nil
}

// sameInputs refuses a dataset (dir, provenance p) that cannot train one model with the
// first dataset's (first): other features, or another chip or simulator.
func sameInputs(dir string, p, first dataset.Provenance) error {
	switch {
	case p.FeatureSet != first.FeatureSet || p.PerNodeConfigs != first.PerNodeConfigs || p.FeatureSchema.Version != first.FeatureSchema.Version ||
		(p.FeatureSet != "" && !reflect.DeepEqual(p.FeatureSchema, first.FeatureSchema)):
		return fmt.Errorf("%w: dataset %s has feature set %q (schema version %d, per-node configs %v), the first %q (%d, %v): train on data of one feature schema",
			ErrFeatureSchema, dir, p.FeatureSet, p.FeatureSchema.Version, p.PerNodeConfigs, first.FeatureSet, first.FeatureSchema.Version, first.PerNodeConfigs)
	case p.Chip != first.Chip || p.VMEMBytes != first.VMEMBytes || p.SimulatorVersion != first.SimulatorVersion:
		return fmt.Errorf("dataset %s was simulated on %s/%s, the first on %s/%s: train on data of one chip and simulator",
			dir, p.Chip, p.SimulatorVersion, first.Chip, first.SimulatorVersion)
	}
	return nil
}

// DataProvenance returns the provenance of the first dataset of a comma-separated list of
// directories (OpenData checks that the others agree on their features and target).
func DataProvenance(dirs string) (dataset.Provenance, error) {
	list := dataDirs(dirs)
	if len(list) == 0 {
		return dataset.Provenance{}, fmt.Errorf("no dataset directory given")
	}
	d, err := dataset.Open(list[0])
	if err != nil {
		return dataset.Provenance{}, err
	}
	return d.Provenance, nil
}

// concatSource streams its sources one after another.
type concatSource []RowSource

// Rows implements RowSource.
func (c concatSource) Rows(fn func(*dataset.Row) error) error {
	for _, s := range c {
		if err := s.Rows(fn); err != nil {
			return err
		}
	}
	return nil
}

// valHoldout returns the validation predicate: for a program or family split, rows of
// max(1, round(ValFraction·n)) of the n training programs (ranked by a hash of the seed
// and the name; never all of them); otherwise (or with a single program) rows whose
// kernel key hashes below ValFraction.
func valHoldout(opts DataOptions, programs []string) func(*dataset.Row) bool {
	if opts.Split != dataset.SplitRandom && len(programs) >= 2 {
		n := min(max(1, int(math.Round(opts.ValFraction*float64(len(programs))))), len(programs)-1)
		ranked := slices.Clone(programs)
		slices.SortFunc(ranked, func(a, b string) int {
			return cmp.Or(cmp.Compare(valHash(opts.SplitSeed, a), valHash(opts.SplitSeed, b)), cmp.Compare(a, b))
		})
		held := map[string]bool{}
		for _, p := range ranked[:n] {
			held[p] = true
		}
		return func(r *dataset.Row) bool { return held[r.Program] }
	}
	return func(r *dataset.Row) bool {
		return stablehash.Unit(valHash(opts.SplitSeed, r.KernelKey)) < opts.ValFraction
	}
}

func valHash(seed int64, s string) uint64 {
	return stablehash.Seeded(seed).Label("gnn-validation").Sum64Of(s)
}

// dataDirs splits a comma-separated list of directories.
func dataDirs(list string) []string {
	var out []string
	for _, dir := range strings.Split(list, ",") {
		if dir = strings.TrimSpace(dir); dir != "" {
			out = append(out, dir)
		}
	}
	return out
}

// Fingerprints returns the DatasetRef (path as given, dataset.Fingerprint) of each
// directory of a comma-separated list.
func Fingerprints(dirs string) ([]DatasetRef, error) {
	var out []DatasetRef
	for _, dir := range dataDirs(dirs) {
		fp, err := dataset.Fingerprint(dir)
		if err != nil {
			return nil, err
		}
		out = append(out, DatasetRef{Path: dir, Fingerprint: fp})
	}
	return out, nil
}

// TrainDataset trains on the dataset directory data selects (see OpenData), recording
// the data's provenance and fingerprints in the checkpoint.
func TrainDataset(ctx context.Context, data DataOptions, opts TrainOptions) (*TrainResult, error) {
	heads := opts.Model.Tasks
	if opts.Resume && reflect.DeepEqual(opts.Model, Config{}) {
		// Resuming with the checkpoint's architecture: its heads say which data it reads.
		if c, err := ReadCheckpoint(opts.OutDir); err == nil {
			heads = c.Config.Tasks
		}
	}
	if opts.OutDir != "" {
		out, _ := filepath.Abs(opts.OutDir)
		for _, dir := range dataDirs(data.Dir) {
			if d, _ := filepath.Abs(dir); d == out {
				return nil, fmt.Errorf("train: the output directory %s is the dataset directory %s: write the model elsewhere", opts.OutDir, dir)
			}
		}
		// The lock before any data is read: a second writer is refused at once.
		lock, err := lockModelDir(opts.OutDir)
		if err != nil {
			return nil, err
		}
		defer lock.Release()
		opts.locked = true
	}
	train, val, meta, prov, refs, err := openData(data, opts.Task, heads...)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	if opts.Resume && reflect.DeepEqual(opts.Model, Config{}) {
		if c, err := ReadCheckpoint(opts.OutDir); err == nil {
			if err := c.CheckData(strings.Split(data.Dir, ",")[0], prov); err != nil {
				return nil, fmt.Errorf("train: resuming %s: %w", opts.OutDir, err)
			}
		}
	} else {
		model := opts.Model
		if opts.Init != "" && reflect.DeepEqual(model, Config{}) {
			// Fine-tuning: the initial model's architecture (initFrom checks the rest).
			ck, err := ReadCheckpoint(opts.Init)
			if err != nil {
				return nil, fmt.Errorf("train --init: %w", err)
			}
			model = ck.Config
		}
		defaultModel := reflect.DeepEqual(model, Config{})
		if defaultModel {
			model = DefaultConfig()
		}
		if opts.Model, err = model.ForData(prov); err != nil {
			return nil, fmt.Errorf("train: dataset %s: %w", strings.Split(data.Dir, ",")[0], err)
		}
		if defaultModel {
			loss := opts.Loss
			if loss == "" {
				loss = DefaultLoss(opts.Task, opts.Model)
			}
			opts.Model.Prior = DefaultPrior(opts.Task, opts.Model, loss)
			opts.Model.IgnoreKernel = DefaultIgnoreKernel(opts.Task, opts.Model)
		}
	}
	if prov.FeatureSet != "" {
		opts.Schema = prov.FeatureSchema
	}
	if opts.Meta == (Meta{}) {
		opts.Meta = meta
	}
	opts.Datasets = refs
	return trainSources(ctx, train, val, opts)
}
