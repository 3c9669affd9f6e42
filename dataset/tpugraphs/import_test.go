package tpugraphs

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/features"
	"github.com/tpucost/tpucost/tpusim"
)

// copyTo copies a testdata file to dir/rel.
func copyTo(t *testing.T, name, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readRows(t *testing.T, dir string) (*dataset.Dataset, []dataset.Row) {
	t.Helper()
	d, err := dataset.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var rows []dataset.Row
	if err := d.Rows(dataset.ReadOptions{}, func(r *dataset.Row) error { rows = append(rows, r.Clone()); return nil }); err != nil {
		t.Fatal(err)
	}
	return d, rows
}

func v4(t *testing.T) tpusim.Chip {
	c, err := tpusim.Preset("v4")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestImportNPZTree(t *testing.T) {
	src := t.TempDir()
	copyTo(t, "tile_small.npz", src, "npz/tile/xla/train/tile_small.npz")
	copyTo(t, "layout_small.npz", src, "npz/layout/nlp/random/valid/layout_small.npz")
	out := filepath.Join(t.TempDir(), "out")
	rep, err := Import(context.Background(), ImportOptions{Sources: []string{filepath.Join(src, "npz")}, Out: out, Chip: v4(t)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Files != 2 || len(rep.Datasets) != 2 {
		t.Fatalf("report %+v", rep)
	}
	// Tile: values as gen_npz.py wrote them.
	d, rows := readRows(t, filepath.Join(out, "tile-xla-train"))
	p := d.Provenance
	if p.Source != "tpugraphs" || p.Collection != "tile/xla" || p.Split != "train" || p.FeatureSet != dataset.FeatureSetTpuGraphs || p.Task != dataset.TaskTile {
		t.Errorf("tile provenance %+v", p)
	}
	if n, k, c := p.Widths(); n != 140 || k != 0 || c != 24 {
		t.Errorf("tile widths %d %d %d", n, k, c)
	}
	if len(rows) != 1 {
		t.Fatalf("%d tile rows", len(rows))
	}
	r := rows[0]
	if r.Program != "tile_small" || !reflect.DeepEqual(r.Graph.Opcodes, []int32{1, 63, 24, 24, 88}) ||
		!reflect.DeepEqual(r.RuntimesNs, []float64{1000, 2500, 1750}) || r.Graph.NodeFeats[141] != 14.1 {
		t.Errorf("tile row %s %v %v", r.Program, r.Graph.Opcodes, r.RuntimesNs)
	}
	// edge_index [[1,0],[2,1],[3,1],[4,2]]: u consumes v, so operand v -> user u.
	if !reflect.DeepEqual(r.Graph.EdgeSrc, []int32{0, 1, 1, 2}) || !reflect.DeepEqual(r.Graph.EdgeDst, []int32{1, 2, 3, 4}) {
		t.Errorf("edges %v -> %v", r.Graph.EdgeSrc, r.Graph.EdgeDst)
	}
	if r.Configs[1] != "config=1;normalizer=1000" || r.ConfigFeats[1][0] != float32(24%7) || !math.IsNaN(r.AnalyticalNs[0]) {
		t.Errorf("configs %v feats %v", r.Configs, r.ConfigFeats[1][:3])
	}
	// config_runtime_normalizers are kept per config; rows are compared by runtime over
	// normalizer, as TpuGraphs' baselines and metrics do.
	if !p.RuntimeNormalizers || !reflect.DeepEqual(r.Normalizers, []float64{1000, 1000, 1000}) || !reflect.DeepEqual(r.TargetTimes(), []float64{1, 2.5, 1.75}) {
		t.Errorf("normalizers %v (recorded %v), target times %v", r.Normalizers, p.RuntimeNormalizers, r.TargetTimes())
	}
	// Layout: per-node configs.
	d, rows = readRows(t, filepath.Join(out, "layout-nlp-random-valid"))
	if p := d.Provenance; !p.PerNodeConfigs || p.Task != dataset.TaskLayout || p.Collection != "layout/nlp/random" {
		t.Errorf("layout provenance %+v", p)
	}
	r = rows[0]
	if d.Provenance.RuntimeNormalizers || len(r.Normalizers) != 0 {
		t.Errorf("layout rows have normalizers %v", r.Normalizers)
	}
	if !reflect.DeepEqual(r.ConfigNodes, []int32{1, 3}) || len(r.ConfigFeats[2]) != 36 || r.ConfigFeats[2][18+5] != 2 ||
		!reflect.DeepEqual(r.RuntimesNs, []float64{300, 200, 100}) || r.Kind != "node_splits=0,5" {
		t.Errorf("layout row nodes %v feats %v runtimes %v kind %q", r.ConfigNodes, r.ConfigFeats[2], r.RuntimesNs, r.Kind)
	}
}

func TestImportNeedsCollection(t *testing.T) {
	src := copyTo(t, "tile_small.npz", t.TempDir(), "x/tile_small.npz")
	_, err := Import(context.Background(), ImportOptions{Sources: []string{src}, Out: t.TempDir(), Chip: v4(t)})
	if err == nil || !strings.Contains(err.Error(), "pass --collection tile|layout") {
		t.Errorf("err %v", err)
	}
	// The wrong collection: a tile file read as layout names the missing array.
	_, err = Import(context.Background(), ImportOptions{Sources: []string{src}, Out: t.TempDir(), Collection: "layout", Chip: v4(t)})
	if err == nil || !strings.Contains(err.Error(), "tile_small.npz: no array node_config_ids") {
		t.Errorf("err %v", err)
	}
	out := t.TempDir()
	rep, err := Import(context.Background(), ImportOptions{Sources: []string{src}, Out: out, Collection: "tile", Chip: v4(t)})
	if err != nil || rep.Datasets[0].Dir != out || rep.Datasets[0].Samples != 3 {
		t.Errorf("rep %+v err %v", rep, err)
	}
}

func TestImportPB(t *testing.T) {
	out := t.TempDir()
	rep, err := Import(context.Background(), ImportOptions{
		Sources: []string{"testdata/op_tuning_data.pb", "testdata/module_tuning_data_layout.pb"}, Out: out, Chip: v4(t)})
	if err != nil {
		t.Fatal(err)
	}
	// From the wire dump (tuning_test.go): 16 modules, 754+122 runs, 2+10 errors, 752
	// timed tile runs in 15 modules, 112 timed layout runs in 1 module; every module maps.
	want := PBStats{Modules: 16, Runs: 876, ErrorRuns: 12, LayoutRuns: 112, ImportedRuns: 752 + 112, ImportedModule: 16}
	if rep.PB != want || len(rep.UnmappedModules) != 0 {
		t.Errorf("pb stats %+v, want %+v; unmapped %v", rep.PB, want, rep.UnmappedModules)
	}
	if len(rep.Datasets) != 2 || rep.Datasets[0].Dir != filepath.Join(out, "layout-pb") || rep.Datasets[1].Dir != filepath.Join(out, "tile-pb") {
		t.Fatalf("datasets %+v", rep.Datasets)
	}
	d, rows := readRows(t, filepath.Join(out, "tile-pb"))
	if d.Provenance.FeatureSet != FeatureSetRawTile() || d.Provenance.Chip != "v4" || len(rows) != 15 {
		t.Errorf("tile provenance %+v, %d rows", d.Provenance, len(rows))
	}
	samples := 0
	for _, r := range rows {
		samples += r.Samples()
		if r.Program == "fusion.232" {
			// module 0, run 0 of the dump: output_bounds 2,26,4,2, 57188 ns, the default.
			if r.Configs[0] != "output=2x26x4x2;kernel=-;input=-;iteration=-;default" || r.RuntimesNs[0] != 57188 || r.ConfigFeats[0][6] != 2 || r.ConfigFeats[0][7] != 26 {
				t.Errorf("fusion.232: %q %v %v", r.Configs[0], r.RuntimesNs[0], r.ConfigFeats[0])
			}
		}
	}
	if samples != 752 {
		t.Errorf("%d tile samples, want 752", samples)
	}
	d, rows = readRows(t, filepath.Join(out, "layout-pb"))
	if p := d.Provenance; p.FeatureSet != FeatureSetRawLayout() || !p.PerNodeConfigs || p.Task != dataset.TaskLayout || len(rows) != 1 {
		t.Fatalf("layout provenance %+v, %d rows", p, len(rows))
	}
	r := rows[0]
	// 62 configurable nodes (config_index_to_node); run 0 is the default (910903932 ns);
	// its 5th node's tensors are [4 0] [4 0] [4 3] (decoded in TestDecodeModuleTuningDataLayout's file).
	if len(r.ConfigNodes) != 62 || r.Samples() != 112 || r.RuntimesNs[0] != 910903932 || r.Configs[0] != "config=0;default" {
		t.Errorf("layout row: %d nodes, %d samples, %v %q", len(r.ConfigNodes), r.Samples(), r.RuntimesNs[0], r.Configs[0])
	}
	// The configured nodes are convolutions and reshapes (config_index_to_node holds
	// positions, TestLayoutNodesArePositions).
	for i, n := range r.ConfigNodes {
		if op := r.Graph.Opcodes[n]; op != features.OpcodeID(hlo.OpConvolution) && op != features.OpcodeID(hlo.OpReshape) {
			t.Errorf("configurable node %d is graph node %d, opcode id %d: not a convolution or reshape", i, n, op)
		}
	}
	if got := r.ConfigFeats[0][4*18 : 4*18+18]; !reflect.DeepEqual(got, []float32{4, 0, -1, -1, -1, -1, 4, 0, -1, -1, -1, -1, 4, 3, -1, -1, -1, -1}) {
		t.Errorf("node 4 of run 0: %v", got)
	}
	if got := r.ConfigFeats[0][:18]; got[0] != -1 || got[17] != -1 {
		t.Errorf("node 0 of run 0 (empty tensors): %v", got)
	}
}

// TestImportIsDeterministicAndRerunnable: the same sources give byte-identical datasets,
// and importing again into the same directory resumes (writes nothing new) with the same
// report.
func TestImportIsDeterministicAndRerunnable(t *testing.T) {
	src := t.TempDir()
	copyTo(t, "tile_small.npz", src, "tile/xla/train/a.npz")
	copyTo(t, "tile_small.npz", src, "tile/xla/train/b.npz")
	opts := func(out string) ImportOptions {
		return ImportOptions{Sources: []string{src, "testdata/op_tuning_data.pb"}, Out: out, Chip: v4(t)}
	}
	out1, out2 := filepath.Join(t.TempDir(), "1"), filepath.Join(t.TempDir(), "2")
	rep1, err := Import(context.Background(), opts(out1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Import(context.Background(), opts(out2)); err != nil {
		t.Fatal(err)
	}
	rep3, err := Import(context.Background(), opts(out1))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rep1, rep3) {
		t.Errorf("rerun report %+v, first %+v", rep3, rep1)
	}
	for _, sub := range []string{"tile-pb", "tile-xla-train"} {
		f1, err := dataset.Fingerprint(filepath.Join(out1, sub))
		if err != nil {
			t.Fatal(err)
		}
		f2, err := dataset.Fingerprint(filepath.Join(out2, sub))
		if err != nil {
			t.Fatal(err)
		}
		if f1 != f2 {
			t.Errorf("%s: fingerprints differ between two imports of the same sources", sub)
		}
	}
	if _, rows := readRows(t, filepath.Join(out1, "tile-xla-train")); len(rows) != 2 {
		t.Errorf("%d rows after a rerun, want 2", len(rows))
	}
}
