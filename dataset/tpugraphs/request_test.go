package tpugraphs

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/tpusim"
)

// TestRequestChecks: import and export refuse a missing --out and unknown values, naming
// the flag, before reading anything.
func TestRequestChecks(t *testing.T) {
	for _, c := range []struct {
		r    ImportRequest
		want string
	}{
		{ImportRequest{Format: "arrow"}, "--out: required"},
		{ImportRequest{Out: "o", Format: "csv"}, `--format "csv": want arrow or parquet`},
		{ImportRequest{Out: "o", Format: "arrow", Collection: "graph"}, `--collection "graph": want tile or layout`},
	} {
		unresolved := func() (tpusim.Chip, error) {
			t.Error("the chip was resolved before the checks passed")
			return v4(t), nil
		}
		if _, err := c.r.Import(context.Background(), unresolved); err == nil || err.Error() != c.want {
			t.Errorf("import %+v: %v, want %q", c.r, err, c.want)
		}
	}
	for _, c := range []struct {
		r    ExportRequest
		want string
	}{
		{ExportRequest{Dir: "d", Split: "program"}, "--out: required"},
		{ExportRequest{Dir: "d", Out: "o", Split: "family"}, `--split "family": want one of program, random, none`},
	} {
		if _, err := c.r.Export(context.Background()); err == nil || err.Error() != c.want {
			t.Errorf("export %+v: %v, want %q", c.r, err, c.want)
		}
	}
}

// TestRequestRoundTrip: a synthetic tile tree imported and exported through the
// requests, with progress lines to their writers.
func TestRequestRoundTrip(t *testing.T) {
	root := t.TempDir()
	src, err := WriteSyntheticTree(root, SyntheticOptions{Collection: CollectionTile, Nodes: 12, Configs: 12, Seed: 1}, 4)
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	out := filepath.Join(root, "imported")
	imp, err := ImportRequest{Sources: []string{src}, Out: out, Format: "arrow", Progress: &progress}.Import(context.Background(), func() (tpusim.Chip, error) { return v4(t), nil })
	if err != nil {
		t.Fatal(err)
	}
	if imp.Files != 4 || len(imp.Datasets) == 0 || !strings.Contains(progress.String(), "import tpugraphs: 4/4") {
		t.Fatalf("import: %d files, %d datasets, progress %q: want 4 files imported, with progress", imp.Files, len(imp.Datasets), progress.String())
	}
	exp, err := ExportRequest{Dir: imp.Datasets[0].Dir, Out: filepath.Join(root, "npz"), Split: "none", Seed: 1}.Export(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if exp.Collection != CollectionTile {
		t.Errorf("export: collection %q, want tile", exp.Collection)
	}
}
