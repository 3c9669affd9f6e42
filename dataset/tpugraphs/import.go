package tpugraphs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/features"
	"github.com/tpucost/tpucost/tpusim"
)

// ToolVersion is recorded as the generator version of imported datasets. 3: layout
// rows attach configurations to config_index_to_node positions (2 read them as ids).
const ToolVersion = "tpugraphs-import-3"

// ImportOptions configure Import.
type ImportOptions struct {
	// Sources are npz or .pb files, or directories searched recursively for them (other
	// files are ignored), such as the release's npz/{tile,layout}/... tree.
	Sources []string
	// Out is the output directory. With one output dataset it is the dataset; with
	// several (collections, splits, feature sets) each is a subdirectory named
	// "<collection>[-<split>]" ("tile-xla-train", "layout-nlp-random-valid"), and
	// "tile-pb" for raw .pb tile runs.
	Out string
	// Collection is "tile" or "layout" for npz files whose path has no tile/ or layout/
	// component; "" to require one. A path that says otherwise is an error.
	Collection string
	Format     dataset.Format // default arrow
	// Chip is the target whose features describe .pb modules (package features needs
	// one); npz files keep their own features.
	Chip tpusim.Chip
	// Progress, if set, is called after each file.
	Progress func(done, total int)
}

// ImportReport says what Import wrote.
type ImportReport struct {
	Datasets []ImportedSet `json:"datasets"`
	Files    int           `json:"files"`
	// From .pb files.
	PB PBStats `json:"pb"`
	// UnmappedModules names the .pb modules whose kernels tpucost cannot analyze.
	UnmappedModules []string `json:"unmapped_modules"`
}

// ImportedSet is one output dataset.
type ImportedSet struct {
	Dir        string       `json:"dir"`
	Source     string       `json:"source"`
	Collection string       `json:"collection"`
	Split      string       `json:"split"`
	FeatureSet string       `json:"feature_set"`
	Task       dataset.Task `json:"task"`
	Files      int          `json:"files"`
	Rows       int          `json:"rows"`
	Samples    int          `json:"samples"`
	// Unlabelled is set when every runtime of the files is 0 (TpuGraphs' test split):
	// the dataset is marked so (dataset.Provenance.Unlabelled).
	Unlabelled bool `json:"unlabelled,omitempty"`
}

// srcFile is one input file and where it goes.
type srcFile struct {
	path       string
	pb         bool
	collection string // "tile/xla", "layout/nlp/random", "tile", ...
	split      string
	exported   *ExportManifest // the sidecar of a tpucost export, nil for TpuGraphs' files
}

type group struct {
	collection, split string
	pb                bool
	exported          *ExportManifest
	pbRows            *[][]dataset.Row // pb: the rows of each .pb file (unit)
}

func (g group) kind() string { // "tile" or "layout"
	k, _, _ := strings.Cut(g.collection, "/")
	return k
}

func (g group) dirName() string {
	if g.pb {
		return g.collection + "-pb"
	}
	if g.exported != nil {
		s := "tpucost-" + g.collection
		if g.split != "" {
			s += "-" + g.split
		}
		return s
	}
	s := strings.ReplaceAll(g.collection, "/", "-")
	if g.split != "" {
		s += "-" + g.split
	}
	return s
}

// Import reads TpuGraphs npz files and raw tuning .pb files and writes tpucost datasets
// (one per collection, split and feature set; see ImportOptions.Out) with provenance
// Source "tpugraphs", the collection, the split and the feature set. npz files keep
// TpuGraphs' features (dataset.FeatureSetTpuGraphs; RowFromNPZ); .pb tile runs become rows
// in tpucost's graph features with the raw tile as config (FeatureSetRawTile;
// ModuleRows). One row per file (npz) or per tuned module (.pb); its Program is the
// file's name without ".npz" (npz) or the module's name (.pb) and its KernelName the
// file's base name. Rerunning with the same sources resumes (dataset.Writer). Errors name
// the file.
//
// An npz file whose runtimes are all 0 is unlabelled (TpuGraphs withholds the runtimes of
// its test split): its dataset is marked dataset.Provenance.Unlabelled, which predict
// accepts and train and eval refuse. A file with some runtimes 0 and others not is an
// error, and so is a dataset mixing unlabelled and measured files.
func Import(ctx context.Context, o ImportOptions) (*ImportReport, error) {
	if o.Out == "" {
		return nil, errors.New("tpugraphs: no output directory")
	}
	if o.Collection != "" && o.Collection != CollectionTile && o.Collection != CollectionLayout {
		return nil, fmt.Errorf("tpugraphs: unknown collection %q (want tile or layout)", o.Collection)
	}
	files, err := listSources(ctx, o.Sources, o.Collection)
	if err != nil {
		return nil, err
	}
	rep := &ImportReport{Files: len(files), Datasets: []ImportedSet{}, UnmappedModules: []string{}}
	groups := map[group][]srcFile{}
	done := 0
	// .pb files are decoded first: each may hold tile and layout runs, which go to two
	// datasets (tile-pb, layout-pb), one unit per file in both.
	var pbFiles []srcFile
	for _, f := range files {
		if f.pb {
			pbFiles = append(pbFiles, f)
			continue
		}
		g := group{collection: f.collection, split: f.split, exported: f.exported}
		groups[g] = append(groups[g], f)
	}
	if len(pbFiles) > 0 {
		tileRows, layoutRows := make([][]dataset.Row, len(pbFiles)), make([][]dataset.Row, len(pbFiles))
		var nTile, nLayout int
		for i, f := range pbFiles {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			mts, err := ReadTuningFileContext(ctx, f.path)
			if err != nil {
				return nil, err
			}
			tr, lr, st, unmapped, err := ModuleRows(f.path, mts, o.Chip.Target)
			if err != nil {
				return nil, err
			}
			addStats(&rep.PB, st)
			rep.UnmappedModules = append(rep.UnmappedModules, unmapped...)
			tileRows[i], layoutRows[i] = tr, lr
			nTile, nLayout = nTile+len(tr), nLayout+len(lr)
			done++
			if o.Progress != nil {
				o.Progress(done, len(files))
			}
		}
		if nTile > 0 {
			groups[group{collection: CollectionTile, pb: true, pbRows: &tileRows}] = pbFiles
		}
		if nLayout > 0 {
			groups[group{collection: CollectionLayout, pb: true, pbRows: &layoutRows}] = pbFiles
		}
	}
	keys := make([]group, 0, len(groups))
	for g := range groups {
		keys = append(keys, g)
	}
	slices.SortFunc(keys, func(a, b group) int { return strings.Compare(a.dirName(), b.dirName()) })
	for i := 1; i < len(keys); i++ {
		if keys[i].dirName() == keys[i-1].dirName() {
			return nil, fmt.Errorf("tpugraphs: two sources would both be written to %s (two tpucost exports of one collection?): import them separately", filepath.Join(o.Out, keys[i].dirName()))
		}
	}
	for _, g := range keys {
		dir := o.Out
		if len(keys) > 1 {
			dir = filepath.Join(o.Out, g.dirName())
		}
		set, err := importGroup(ctx, o, g, groups[g], dir, rep, &done, len(files))
		if err != nil {
			return nil, err
		}
		rep.Datasets = append(rep.Datasets, set)
	}
	return rep, nil
}

// partBytes bounds the uncompressed size of one part's rows.
const partBytes = 64 << 20

func importGroup(ctx context.Context, o ImportOptions, g group, files []srcFile, dir string, rep *ImportReport, done *int, total int) (_ ImportedSet, retErr error) {
	sources := len(files)
	if g.pb {
		// Every .pb file is a unit of both pb datasets, but only the files with runs of
		// this collection feed it.
		sources = 0
		for _, rows := range *g.pbRows {
			if len(rows) > 0 {
				sources++
			}
		}
	}
	set := ImportedSet{Dir: dir, Source: "tpugraphs", Collection: g.collection, Split: g.split, Files: sources}
	prov := dataset.Provenance{
		SchemaVersion: dataset.SchemaVersion, Source: "tpugraphs", Collection: g.collection, Split: g.split,
		SourceFiles: sources, ShardCount: 1, ToolVersion: ToolVersion, GeneratorVersion: ToolVersion,
	}
	schema := FeatureSchema(g.kind())
	switch {
	case g.pb && g.kind() == CollectionLayout:
		prov.FeatureSet, prov.FeatureSchema = FeatureSetRawLayout(), RawLayoutSchema()
		prov.Chip, prov.VMEMBytes = o.Chip.Name, o.Chip.VMEMBytes
		prov.Task, prov.PerNodeConfigs = dataset.TaskLayout, true
	case g.pb:
		prov.FeatureSet, prov.FeatureSchema = FeatureSetRawTile(), RawTileSchema()
		prov.Chip, prov.VMEMBytes = o.Chip.Name, o.Chip.VMEMBytes
		prov.Task = dataset.TaskTile
	case g.exported != nil:
		m, src := g.exported, g.exported.Provenance
		schema = m.FeatureSchema
		prov.FeatureSet, prov.FeatureSchema, prov.Task, prov.PerNodeConfigs = m.FeatureSet, m.FeatureSchema, src.Task, src.PerNodeConfigs
		prov.SimulatorVersion, prov.Chip, prov.VMEMBytes, prov.NoiseSigma, prov.NoiseRuns, prov.Seed = src.SimulatorVersion, src.Chip, src.VMEMBytes, src.NoiseSigma, src.NoiseRuns, src.Seed
		prov.Collection = g.collection + "/tpucost"
	default:
		prov.FeatureSet, prov.FeatureSchema = dataset.FeatureSetTpuGraphs, FeatureSchema(g.kind())
		prov.Task = dataset.TaskTile
		if g.kind() == CollectionLayout {
			prov.Task, prov.PerNodeConfigs = dataset.TaskLayout, true
		}
	}
	// npz tile files carry config_runtime_normalizers: rows keep them (Row.Normalizers).
	prov.RuntimeNormalizers = !g.pb && g.kind() == CollectionTile
	set.FeatureSet, set.Task = prov.FeatureSet, prov.Task
	// The first npz file says whether the dataset is unlabelled (read before the writer,
	// whose provenance records it; the loop below reuses it); every file must agree.
	var first *dataset.Row
	if !g.pb && len(files) > 0 {
		r, err := npzRow(ctx, g, files[0], schema, prov.Task)
		if err != nil {
			return set, err
		}
		if prov.Unlabelled, err = unlabelled(files[0].path, &r); err != nil {
			return set, err
		}
		first, set.Unlabelled = &r, prov.Unlabelled
		if prov.Unlabelled && len(r.Normalizers) == 0 {
			prov.RuntimeNormalizers = false // withheld with the runtimes (RowFromNPZ)
		}
	}
	w, err := dataset.NewWriter(dataset.WriterOptions{Dir: dir, Format: o.Format, Provenance: prov})
	if err != nil {
		return set, err
	}
	defer func() {
		if retErr != nil {
			w.Discard() // a failure before any part leaves no stub directory
			return
		}
		w.Close()
	}()
	next, _, _ := w.Resume()
	var (
		rows      []dataset.Row
		occ       []dataset.Occurrence
		size      int64
		firstUnit = next
		seen      = map[string]bool{}
	)
	flush := func(last int64) error {
		if last < firstUnit {
			return nil
		}
		if err := w.WritePart(firstUnit, last, rows, occ); err != nil {
			return err
		}
		rows, occ, size, firstUnit = nil, nil, 0, last+1
		return nil
	}
	for i, f := range files {
		if err := ctx.Err(); err != nil {
			return set, err
		}
		unit := int64(i)
		var got []dataset.Row
		if g.pb {
			got = (*g.pbRows)[i]
		} else {
			var r dataset.Row
			if i == 0 {
				r, first = *first, nil
			} else {
				var err error
				if r, err = npzRow(ctx, g, f, schema, prov.Task); err != nil {
					return set, err
				}
				if err := sameLabels(f.path, &r, files[0].path, prov.Unlabelled); err != nil {
					return set, err
				}
			}
			if !prov.RuntimeNormalizers {
				r.Normalizers = nil // an unlabelled dataset whose first file withholds them
			}
			got = []dataset.Row{r}
		}
		for j := range got {
			r := &got[j]
			if seen[r.KernelKey] {
				return set, fmt.Errorf("%s: kernel key %s appears twice (the same file given twice?)", f.path, r.KernelKey)
			}
			seen[r.KernelKey] = true
			set.Rows++
			set.Samples += r.Samples()
			if unit < next {
				continue // written by an earlier run
			}
			r.Unit = unit
			occ = append(occ, dataset.Occurrence{Unit: unit, Program: r.Program, KernelKey: r.KernelKey, Count: 1})
			rows = append(rows, *r)
			size += r.SizeBytes()
		}
		if !g.pb {
			*done++
			if o.Progress != nil {
				o.Progress(*done, total)
			}
		}
		if unit >= next && size >= partBytes {
			if err := flush(unit); err != nil {
				return set, err
			}
		}
	}
	if err := flush(int64(len(files)) - 1); err != nil {
		return set, err
	}
	return set, w.Close()
}

// npzRow reads npz file f of group g as a row (RowFromNPZ) named after the file; task is
// the dataset's. Errors name the file.
func npzRow(ctx context.Context, g group, f srcFile, schema features.Schema, task dataset.Task) (dataset.Row, error) {
	z, err := ReadNPZFileContext(ctx, f.path)
	if err != nil {
		return dataset.Row{}, err
	}
	r, err := RowFromNPZ(z, g.kind(), schema)
	if err != nil {
		return r, fmt.Errorf("%s: %w", f.path, err)
	}
	if g.exported != nil && r.Task != task {
		r.Task = task // a flags dataset exports as the tile collection
	}
	name := filepath.Base(f.path)
	r.Program = strings.TrimSuffix(name, ".npz")
	if g.exported != nil && len(r.Program) > 17 && r.Program[len(r.Program)-17] == '_' {
		r.Program = r.Program[:len(r.Program)-17] // ExportFileName's key hash
	}
	r.KernelName = name
	r.KernelKey = "tpugraphs:" + g.collection + "/" + g.split + "/" + name
	return r, nil
}

// unlabelled reports whether row r of the file at path is unlabelled: it has configs and
// every runtime is 0. Some runtimes 0 and others not is an error naming the file.
func unlabelled(path string, r *dataset.Row) (bool, error) {
	zeros := 0
	for _, v := range r.RuntimesNs {
		if v == 0 {
			zeros++
		}
	}
	switch n := len(r.RuntimesNs); {
	case zeros == 0:
		return false, nil
	case zeros == n:
		return true, nil
	default:
		return false, fmt.Errorf("%s: %d of %d runtimes are 0: a TpuGraphs file is unlabelled (the test split, every runtime 0) or measured (none 0), not both", path, zeros, n)
	}
}

// sameLabels checks that row r of the file at path is unlabelled exactly when the
// dataset is (unl, decided by the file at firstPath). A row without configs agrees with
// either.
func sameLabels(path string, r *dataset.Row, firstPath string, unl bool) error {
	u, err := unlabelled(path, r)
	switch {
	case err != nil || len(r.RuntimesNs) == 0 || u == unl:
		return err
	case u:
		return fmt.Errorf("%s: every runtime is 0 (unlabelled, as in TpuGraphs' test split), but %s has measured runtimes: import unlabelled and measured files separately", path, firstPath)
	default:
		return fmt.Errorf("%s has measured runtimes, but %s is unlabelled (every runtime 0, as in TpuGraphs' test split): import unlabelled and measured files separately", path, firstPath)
	}
}

func addStats(a *PBStats, b PBStats) {
	a.Modules += b.Modules
	a.Runs += b.Runs
	a.ErrorRuns += b.ErrorRuns
	a.UntimedRuns += b.UntimedRuns
	a.LayoutRuns += b.LayoutRuns
	a.Unmapped += b.Unmapped
	a.ImportedRuns += b.ImportedRuns
	a.ImportedModule += b.ImportedModule
}

// listSources expands the sources into files, sorted by path, with their collection and
// split from the path (or flag).
func listSources(ctx context.Context, srcs []string, flag string) ([]srcFile, error) {
	if len(srcs) == 0 {
		return nil, errors.New("tpugraphs: no sources")
	}
	var out []srcFile
	seen := map[string]bool{}
	sidecars := map[string]*ExportManifest{}
	add := func(path string) error {
		abs, err := filepath.Abs(path)
		if err != nil {
			return fmt.Errorf("tpugraphs: %w", err)
		}
		if seen[abs] {
			return nil
		}
		seen[abs] = true
		f := srcFile{path: path, pb: strings.HasSuffix(path, ".pb")}
		if f.pb {
			out = append(out, f)
			return nil
		}
		dir := filepath.Dir(abs)
		m, ok := sidecars[dir]
		if !ok {
			if m, err = readExportManifest(ctx, dir); err != nil {
				return err
			}
			sidecars[dir] = m
		}
		coll, split := inferCollection(abs)
		if m != nil { // a tpucost export says what it holds
			if c, _, _ := strings.Cut(coll, "/"); coll != "" && c != m.Collection {
				return fmt.Errorf("%s: the path says collection %s, %s says %s", path, coll, ExportManifestName, m.Collection)
			}
			coll, f.exported = m.Collection, m
			if b := filepath.Base(dir); b == "train" || b == "valid" || b == "test" {
				split = b
			}
		}
		switch {
		case coll == "" && flag == "":
			return fmt.Errorf("%s: cannot tell the collection from the path (no tile/ or layout/ directory in it): pass --collection tile|layout", path)
		case coll == "":
			coll = flag
		case flag != "" && !strings.HasPrefix(coll+"/", flag+"/"):
			return fmt.Errorf("%s: the path says collection %s, --collection says %s", path, coll, flag)
		}
		f.collection, f.split = coll, split
		out = append(out, f)
		return nil
	}
	for _, src := range srcs {
		st, err := os.Stat(src)
		if err != nil {
			return nil, fmt.Errorf("tpugraphs: %w", err)
		}
		if !st.IsDir() {
			if !strings.HasSuffix(src, ".npz") && !strings.HasSuffix(src, ".pb") {
				return nil, fmt.Errorf("%s: not an .npz or .pb file", src)
			}
			if err := add(src); err != nil {
				return nil, err
			}
			continue
		}
		n := len(out)
		err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !(strings.HasSuffix(path, ".npz") || strings.HasSuffix(path, ".pb")) {
				return nil
			}
			return add(path)
		})
		if err != nil {
			return nil, err
		}
		if len(out) == n {
			return nil, fmt.Errorf("%s: no .npz or .pb files in the directory", src)
		}
	}
	slices.SortFunc(out, func(a, b srcFile) int { return strings.Compare(a.path, b.path) })
	return out, nil
}

// inferCollection reads the collection and split from a path in the release's tree:
// .../tile/xla/{train,valid,test}/F.npz or .../layout/{xla,nlp}/{default,random}/{split}/F.npz
// (a missing level is left out). It returns "" when no component is tile or layout.
func inferCollection(path string) (collection, split string) {
	comps := strings.Split(filepath.ToSlash(filepath.Dir(path)), "/")
	at := -1
	for i, c := range comps {
		if c == CollectionTile || c == CollectionLayout {
			at = i // the last one wins
		}
	}
	if at < 0 {
		return "", ""
	}
	collection = comps[at]
	rest := comps[at+1:]
	if len(rest) > 0 && (rest[0] == "xla" || rest[0] == "nlp") {
		collection += "/" + rest[0]
		rest = rest[1:]
	}
	if len(rest) > 0 && (rest[0] == "default" || rest[0] == "random") {
		collection += "/" + rest[0]
		rest = rest[1:]
	}
	if len(rest) > 0 && (rest[0] == "train" || rest[0] == "valid" || rest[0] == "test") {
		split = rest[0]
	}
	return collection, split
}

func baseName(path string) string { return filepath.Base(path) }
