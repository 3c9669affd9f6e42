package validate

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/features"
	"github.com/tpucost/tpucost/tpusim"
)

// RowsToolVersion is recorded as the generator of datasets WriteTileRows writes.
const RowsToolVersion = "replay-rows-1"

// TileRows are the replayed tile runs of r as dataset rows in tpucost's own feature set
// (the paper's: each kernel's graph featurized by package features, each run's mapped
// tile planned as the TPU runs it and featurized by features.Config): one row per kernel,
// its measured times as runtimes and the analytical model's as estimates. A model trained
// on tpucost's simulated data reads them (validate --model scores the same features),
// and `train --init` fine-tunes one on them.
func TileRows(r *Report, c tpusim.Chip) []dataset.Row {
	if r.Tile == nil {
		return nil
	}
	var rows []dataset.Row
	for _, k := range r.Tile.Replayed {
		row := dataset.Row{Program: k.Name, Task: dataset.TaskTile, KernelKey: "tpugraphs-pb:" + k.Name, KernelName: k.Name,
			Kind: k.Kind, Graph: features.Kernel(k.Comp, k.Info, c.Target)}
		for _, run := range k.Runs {
			cfg := run.Config
			if run.Default {
				cfg += ";default"
			}
			row.Configs = append(row.Configs, cfg)
			row.ConfigFeats = append(row.ConfigFeats, features.Config(run.planned))
			row.RuntimesNs = append(row.RuntimesNs, run.MeasuredNs)
			row.AnalyticalNs = append(row.AnalyticalNs, run.AnalyticalNs)
		}
		rows = append(rows, row)
	}
	return rows
}

// WriteTileRows writes TileRows as a dataset in dir (one part). Its provenance says the
// times are measurements (Source "tpugraphs", no simulator version) of chip c's name, in
// tpucost's feature schema.
func WriteTileRows(dir string, r *Report, c tpusim.Chip) (int, error) {
	rows := TileRows(r, c)
	if len(rows) == 0 {
		return 0, fmt.Errorf("no replayed tile runs to write")
	}
	names := make([]string, len(r.Files))
	for i, f := range r.Files {
		names[i] = filepath.Base(f)
	}
	prov := dataset.Provenance{
		SchemaVersion: dataset.SchemaVersion, FeatureSchema: features.CurrentSchema(), Chip: c.Name, VMEMBytes: c.VMEMBytes,
		Task: dataset.TaskTile, Source: "tpugraphs", Collection: "tile/pb-mapped:" + strings.Join(names, ","), SourceFiles: len(r.Files),
		ShardCount: 1, ToolVersion: RowsToolVersion, GeneratorVersion: RowsToolVersion, ConfigsPerKernel: maxConfigs(rows),
	}
	w, err := dataset.NewWriter(dataset.WriterOptions{Dir: dir, Provenance: prov})
	if err != nil {
		return 0, err
	}
	occ := make([]dataset.Occurrence, len(rows))
	for i, row := range rows {
		occ[i] = dataset.Occurrence{Unit: 0, Program: row.Program, KernelKey: row.KernelKey, Count: 1}
	}
	if err := w.WritePart(0, 0, rows, occ); err != nil {
		_ = w.Close()
		return 0, err
	}
	return len(rows), w.Close()
}

func maxConfigs(rows []dataset.Row) int {
	m := 0
	for _, r := range rows {
		m = max(m, len(r.Configs))
	}
	return m
}
