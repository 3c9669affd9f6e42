package tpugraphs

import (
	"bytes"
	"path/filepath"
	"testing"
)

// TestSyntheticFiles: synthetic files have the release's keys, shapes and dtypes, read
// back as rows of the TpuGraphs feature set, and depend only on the options and index.
func TestSyntheticFiles(t *testing.T) {
	for _, coll := range []string{CollectionTile, CollectionLayout} {
		o := SyntheticOptions{Collection: coll, Nodes: 10, Configs: 5, ConfigNodes: 3, Seed: 2}
		z, err := Synthetic(o, 4)
		if err != nil {
			t.Fatal(err)
		}
		r, err := RowFromNPZ(z, coll, FeatureSchema(coll))
		if err != nil {
			t.Fatalf("%s: %v", coll, err)
		}
		if n := r.Graph.Nodes(); n < 5 || n > 15 || len(r.Configs) != 5 || z["node_opcode"].Descr != "|u1" {
			t.Errorf("%s: %d nodes, %d configs, opcodes %s", coll, n, len(r.Configs), z["node_opcode"].Descr)
		}
		if coll == CollectionLayout && (len(r.ConfigNodes) != 3 || len(r.ConfigFeats[0]) != 3*LayoutConfigWidth) {
			t.Errorf("layout: %d configurable nodes, %d features per config", len(r.ConfigNodes), len(r.ConfigFeats[0]))
		}
		if coll == CollectionTile && len(r.Normalizers) != 5 {
			t.Errorf("tile: %d normalizers", len(r.Normalizers))
		}
		var a, b bytes.Buffer
		z2, _ := Synthetic(o, 4)
		if err := EncodeNPZ(&a, z, true); err != nil {
			t.Fatal(err)
		}
		if err := EncodeNPZ(&b, z2, true); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("%s: the same options and index gave different files", coll)
		}
	}
	if _, err := Synthetic(SyntheticOptions{Collection: "tiles", Nodes: 4, Configs: 2}, 0); err == nil {
		t.Error("unknown collection accepted")
	}
	dir, err := WriteSyntheticTree(t.TempDir(), SyntheticOptions{Collection: CollectionTile, Nodes: 4, Configs: 2}, 10)
	if err != nil {
		t.Fatal(err)
	}
	for split, want := range map[string]int{"train": 8, "valid": 1, "test": 1} {
		if files, _ := filepath.Glob(filepath.Join(dir, split, "*.npz")); len(files) != want {
			t.Errorf("%s: %d files, want %d", split, len(files), want)
		}
	}
}
