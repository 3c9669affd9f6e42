package tpugraphs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/features"
	"github.com/tpucost/tpucost/internal/atomicfile"
	"github.com/tpucost/tpucost/internal/dirlock"
	"github.com/tpucost/tpucost/internal/inputfile"
	"github.com/tpucost/tpucost/internal/jsonerr"
)

// ExportManifestName is the sidecar Export writes beside its npz files: it names their
// feature set and schema, so that Import reads them back as what they are.
const ExportManifestName = "tpucost_export.json"

// ExportManifest is the content of ExportManifestName.
type ExportManifest struct {
	Collection    string          `json:"collection"`  // "tile" or "layout"
	FeatureSet    string          `json:"feature_set"` // "" for tpucost's own features
	FeatureSchema features.Schema `json:"feature_schema"`
	// Provenance is the exported dataset's.
	Provenance dataset.Provenance `json:"provenance"`
	Files      int                `json:"files"`
}

// ExportOptions configure Export.
type ExportOptions struct {
	Dir string // a tpucost dataset
	Out string // the directory the npz files go to
	// Split is how kernels are divided into Out/{train,valid,test} as TpuGraphs' loaders
	// expect: dataset.SplitProgram (whole programs held out) or dataset.SplitRandom, each
	// with 10% test and 10% valid chosen by Seed; "none" writes every file to Out.
	Split    string
	Seed     int64
	Progress func(done, total int)
}

// ExportSplits are the values of ExportOptions.Split.
func ExportSplits() []string { return []string{dataset.SplitProgram, dataset.SplitRandom, "none"} }

// exportFraction is the share of kernels (or programs) in each of valid and test.
const exportFraction = 0.1

// ExportReport says what Export wrote.
type ExportReport struct {
	Out        string         `json:"out"`
	Collection string         `json:"collection"`
	FeatureSet string         `json:"feature_set"`
	Split      string         `json:"split"`
	Files      int            `json:"files"`
	Configs    int            `json:"configs"`
	SplitFiles map[string]int `json:"split_files"` // files per split directory ("" for none)
}

// Export writes every kernel (row) of a dataset as one npz file in the TpuGraphs layout,
// in Out/{train,valid,test} (see ExportOptions.Split)
// (NPZFromRow): a tile or flags dataset as the tile collection (one file per kernel graph
// with its configs), an imported per-node dataset as the layout collection. tpucost's
// fusion and layout datasets do not map (their rows are kernels measured once each;
// TpuGraphs' layout collection is whole programs with per-node configs) and are refused.
// Features are the dataset's own (tpucost's: node_feat has features.NodeWidth columns,
// config_feat features.ConfigWidth, the first features.PaperConfigWidth of them the
// paper set), named in the ExportManifestName sidecar. Files are named
// "<program>_<16 hex digits of the kernel key's SHA-256>.npz" and written atomically.
func Export(ctx context.Context, o ExportOptions) (*ExportReport, error) {
	d, err := dataset.Open(o.Dir)
	if err != nil {
		return nil, err
	}
	lock, err := dirlock.AcquireDir(o.Out, dirlock.Export)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	p := d.Provenance
	collection := CollectionTile
	switch {
	case p.PerNodeConfigs:
		collection = CollectionLayout
	case p.Task == dataset.TaskTile || p.Task == dataset.TaskFlags:
	default:
		return nil, fmt.Errorf("%s: a %s dataset does not map to a TpuGraphs collection (its rows are kernels measured once each; TpuGraphs' layout collection is whole programs with per-node configs): export tile or flags datasets", o.Dir, p.Task)
	}
	schema := p.FeatureSchema
	node, kernel, config := p.Widths()
	if len(schema.Node) != node || len(schema.Kernel) != kernel || len(schema.Config) != config {
		return nil, fmt.Errorf("%s: the dataset's feature schema lists no feature names; cannot describe its columns", o.Dir)
	}
	// test: held out by one split; valid: held out by a second (another seed, the same
	// share of what is left) among the rest.
	var test, valid *dataset.Split
	switch o.Split {
	case "none":
	case dataset.SplitProgram, dataset.SplitRandom:
		if test, err = dataset.NewSplit(d, o.Split, exportFraction, o.Seed); err != nil {
			return nil, err
		}
		if valid, err = dataset.NewSplit(d, o.Split, exportFraction/(1-exportFraction), o.Seed+1); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("tpugraphs: unknown split %q (want %s)", o.Split, strings.Join(ExportSplits(), ", "))
	}
	splitOf := func(r *dataset.Row) string {
		switch {
		case test == nil:
			return ""
		case test.IsTest(r):
			return "test"
		case valid.IsTest(r):
			return "valid"
		}
		return "train"
	}
	for _, sub := range []string{"", "train", "valid", "test"} {
		if (sub == "") != (test == nil) {
			continue
		}
		if err := os.MkdirAll(filepath.Join(o.Out, sub), 0o755); err != nil {
			return nil, fmt.Errorf("tpugraphs: %w", err)
		}
	}
	total := 0
	if err := d.Rows(dataset.ReadOptions{}, func(*dataset.Row) error { total++; return nil }); err != nil {
		return nil, err
	}
	rep := &ExportReport{Out: o.Out, Collection: collection, FeatureSet: p.FeatureSet, Split: o.Split, SplitFiles: map[string]int{}}
	names := map[string]string{}
	err = d.Rows(dataset.ReadOptions{}, func(r *dataset.Row) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		z, err := NPZFromRow(r, collection, schema)
		if err != nil {
			return fmt.Errorf("%s: kernel %s: %w", o.Dir, r.KernelKey, err)
		}
		name := ExportFileName(r.Program, r.KernelKey)
		if other, dup := names[name]; dup {
			return fmt.Errorf("%s: kernels %s and %s both map to %s", o.Dir, other, r.KernelKey, name)
		}
		names[name] = r.KernelKey
		sub := splitOf(r)
		if err := WriteNPZFile(filepath.Join(o.Out, sub, name), z, true); err != nil {
			return err
		}
		rep.SplitFiles[sub]++
		rep.Files++
		rep.Configs += r.Samples()
		if o.Progress != nil {
			o.Progress(rep.Files, total)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	m := ExportManifest{Collection: collection, FeatureSet: p.FeatureSet, FeatureSchema: schema, Provenance: p, Files: rep.Files}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("tpugraphs: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(o.Out, ExportManifestName), append(b, '\n')); err != nil {
		return nil, fmt.Errorf("tpugraphs: %w", err)
	}
	return rep, nil
}

// ExportFileName is the npz name of a kernel: its program (characters other than
// letters, digits, '.', '-' and '_' replaced by '_') and 16 hex digits of the SHA-256 of
// its key.
func ExportFileName(program, key string) string {
	sum := sha256.Sum256([]byte(key))
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, program)
	return clean + "_" + hex.EncodeToString(sum[:8]) + ".npz"
}

// readExportManifest returns the sidecar of a file in dir (in dir, or in its parent when
// dir is a split directory), or nil if it has none.
func readExportManifest(ctx context.Context, dir string) (*ExportManifest, error) {
	path := filepath.Join(dir, ExportManifestName)
	b, err := inputfile.ReadFile(ctx, path, inputfile.ManifestJSON)
	if os.IsNotExist(err) {
		switch filepath.Base(dir) {
		case "train", "valid", "test":
			path = filepath.Join(filepath.Dir(dir), ExportManifestName)
			b, err = inputfile.ReadFile(ctx, path, inputfile.ManifestJSON)
		}
	}
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tpugraphs: %w", err)
	}
	var m ExportManifest
	if err := jsonerr.Unmarshal(path, b, &m); err != nil {
		return nil, err
	}
	if m.Collection != CollectionTile && m.Collection != CollectionLayout {
		return nil, fmt.Errorf("%s: collection %q, want tile or layout", path, m.Collection)
	}
	return &m, nil
}
