package tpugraphs

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestImportPBSourceFilesCountsFeeders: of two .pb files, one with tile runs and one with
// layout runs, each dataset records the one file that fed it (tile-pb said 2).
func TestImportPBSourceFilesCountsFeeders(t *testing.T) {
	out := t.TempDir()
	rep, err := Import(context.Background(), ImportOptions{
		Sources: []string{"testdata/op_tuning_data.pb", "testdata/module_tuning_data_layout.pb"}, Out: out, Chip: v4(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range rep.Datasets {
		d, _ := readRows(t, set.Dir)
		if set.Files != 1 || d.Provenance.SourceFiles != 1 {
			t.Errorf("%s: %d files in the report, %d in the provenance; want 1 (one .pb fed it)", set.Dir, set.Files, d.Provenance.SourceFiles)
		}
	}
}

// TestFailedImportLeavesNoStub: an import that fails before writing anything (a corrupt
// npz) leaves no directory that `inspect` would call an incomplete dataset; a rerun with
// good sources then imports.
func TestFailedImportLeavesNoStub(t *testing.T) {
	src := t.TempDir()
	copyTo(t, "tile_small.npz", src, "npz/tile/xla/train/a.npz")
	bad := filepath.Join(src, "npz/tile/xla/train/b.npz")
	if err := os.WriteFile(bad, []byte("PK\x03\x04 not a zip"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	if _, err := Import(context.Background(), ImportOptions{Sources: []string{filepath.Join(src, "npz")}, Out: out, Chip: v4(t)}); err == nil {
		t.Fatal("a corrupt npz imported")
	}
	if ents, err := os.ReadDir(out); err == nil && len(ents) != 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("the failed import left %v in %s", names, out)
	}
	if err := os.Remove(bad); err != nil {
		t.Fatal(err)
	}
	if _, err := Import(context.Background(), ImportOptions{Sources: []string{filepath.Join(src, "npz")}, Out: out, Chip: v4(t)}); err != nil {
		t.Fatalf("rerun with good sources: %v", err)
	}
}
