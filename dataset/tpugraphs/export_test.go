package tpugraphs

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/dataset/gen"
)

// genTile writes a small simulated tile dataset.
func genTile(t *testing.T, task dataset.Task, models ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "gen")
	_, err := gen.Generate(context.Background(), gen.Options{Task: task, Models: models, Out: dir,
		Configs: 6, Variants: 1, Seed: 3, Chip: v4(t), Workers: 1, ToolVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func byKey(rows []dataset.Row) map[string]dataset.Row {
	m := map[string]dataset.Row{}
	for _, r := range rows {
		m[r.Program+"/"+ExportFileName(r.Program, r.KernelKey)] = r
	}
	return m
}

func sameFloats(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return x == y || math.IsNaN(x) && math.IsNaN(y) })
}

func TestExportImportRoundTrip(t *testing.T) {
	for _, c := range []struct {
		task  dataset.Task
		split string
	}{{dataset.TaskTile, dataset.SplitProgram}, {dataset.TaskFlags, "none"}} {
		task := c.task
		src := genTile(t, task, "mlp_96x2_b1", "resnet18_b1", "dlrm_bag4_d32_b8")
		npzDir := filepath.Join(t.TempDir(), "npz")
		rep, err := Export(context.Background(), ExportOptions{Dir: src, Out: npzDir, Split: c.split, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		d0, rows0 := readRows(t, src)
		if len(rows0) == 0 || rep.Files != len(rows0) || rep.Collection != CollectionTile {
			t.Fatalf("%s: exported %d files, %d rows", task, rep.Files, len(rows0))
		}
		if c.split != "none" && (rep.SplitFiles["train"] == 0 || rep.SplitFiles["valid"] == 0 || rep.SplitFiles["test"] == 0) {
			t.Errorf("%s: files per split %v", task, rep.SplitFiles)
		}
		// A TpuGraphs-style file: the keys their loaders read are there.
		ents, _ := filepath.Glob(filepath.Join(npzDir, "*", "*.npz"))
		if c.split == "none" {
			ents, _ = filepath.Glob(filepath.Join(npzDir, "*.npz"))
		}
		z, err := ReadNPZFile(ents[0])
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range requiredKeys(CollectionTile) {
			if z[k] == nil {
				t.Errorf("%s: exported file has no %s", task, k)
			}
		}
		back := filepath.Join(t.TempDir(), "back")
		irep, err := Import(context.Background(), ImportOptions{Sources: []string{npzDir}, Out: back, Chip: v4(t)})
		if err != nil {
			t.Fatal(err)
		}
		var d1 *dataset.Dataset
		var rows1 []dataset.Row
		for _, set := range irep.Datasets {
			d, rows := readRows(t, set.Dir)
			d1, rows1 = d, append(rows1, rows...)
			if set.Files != rep.SplitFiles[set.Split] {
				t.Errorf("%s: split %q: %d files imported, %d exported", task, set.Split, set.Files, rep.SplitFiles[set.Split])
			}
		}
		if d1.Provenance.Task != task || d1.Provenance.FeatureSet != "" || !reflect.DeepEqual(d1.Provenance.FeatureSchema, d0.Provenance.FeatureSchema) || d1.Provenance.Source != "tpugraphs" {
			t.Errorf("%s: re-imported provenance %+v", task, d1.Provenance)
		}
		a, b := byKey(rows0), byKey(rows1)
		if len(a) != len(b) {
			t.Fatalf("%s: %d rows back, want %d", task, len(b), len(a))
		}
		for k, r0 := range a {
			r1, ok := b[k]
			if !ok {
				// the re-imported key differs; match by program and file name
				for _, r := range rows1 {
					if r.KernelName == ExportFileName(r0.Program, r0.KernelKey) {
						r1, ok = r, true
					}
				}
			}
			if !ok {
				t.Fatalf("%s: kernel %s not re-imported", task, r0.KernelKey)
			}
			g0, g1 := r0.Graph, r1.Graph
			if r1.Program != r0.Program || !reflect.DeepEqual(g0.Opcodes, g1.Opcodes) || !reflect.DeepEqual(g0.NodeFeats, g1.NodeFeats) ||
				!reflect.DeepEqual(g0.EdgeSrc, g1.EdgeSrc) || !reflect.DeepEqual(g0.EdgeDst, g1.EdgeDst) || !reflect.DeepEqual(g0.KernelFeats, g1.KernelFeats) ||
				!reflect.DeepEqual(r0.ConfigFeats, r1.ConfigFeats) || !sameFloats(r0.RuntimesNs, r1.RuntimesNs) || !sameFloats(r0.AnalyticalNs, r1.AnalyticalNs) {
				t.Errorf("%s: kernel %s differs after export and import", task, r0.KernelKey)
			}
		}
	}
}

func TestExportRealImportRoundTrip(t *testing.T) {
	// TpuGraphs' own files: import, export, compare the arrays with the originals.
	src := t.TempDir()
	copyTo(t, "tile_small.npz", src, "tile/xla/train/tile_small.npz")
	copyTo(t, "layout_small.npz", src, "layout/xla/default/test/layout_small.npz")
	imported := filepath.Join(t.TempDir(), "imp")
	rep, err := Import(context.Background(), ImportOptions{Sources: []string{src}, Out: imported, Chip: v4(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range rep.Datasets {
		out := filepath.Join(t.TempDir(), "exp")
		if _, err := Export(context.Background(), ExportOptions{Dir: set.Dir, Out: out, Split: "none"}); err != nil {
			t.Fatal(err)
		}
		orig := "tile_small.npz"
		if set.Task == dataset.TaskLayout {
			orig = "layout_small.npz"
		}
		want, err := ReadNPZFile(filepath.Join("testdata", orig))
		if err != nil {
			t.Fatal(err)
		}
		files, _ := filepath.Glob(filepath.Join(out, "*.npz"))
		if len(files) != 1 {
			t.Fatalf("%v", files)
		}
		got, err := ReadNPZFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Keys(), want.Keys()) {
			t.Errorf("%s: keys %v, want %v", orig, got.Keys(), want.Keys())
		}
		for _, k := range want.Keys() {
			w, g := want[k], got[k]
			if !reflect.DeepEqual(w.Shape, g.Shape) || !reflect.DeepEqual(w.Float64s(), g.Float64s()) {
				t.Errorf("%s %s: shape %v values %v, want %v %v", orig, k, g.Shape, g.Float64s(), w.Shape, w.Float64s())
			}
		}
	}
}

func TestExportRefusesFusion(t *testing.T) {
	src := genTile(t, dataset.TaskFusion, "mlp_96x2_b1")
	_, err := Export(context.Background(), ExportOptions{Dir: src, Out: t.TempDir(), Split: "none"})
	if err == nil || !strings.Contains(err.Error(), "does not map to a TpuGraphs collection") {
		t.Errorf("err %v", err)
	}
	if _, err := os.Stat(src); err != nil {
		t.Fatal(err)
	}
}
