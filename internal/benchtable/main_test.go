package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSpliceTable(t *testing.T) {
	doc := "# Benchmarks\n\nprose\n\n" + benchStart + "\nold table\n" + benchEnd + "\n\n## After\n"
	got, err := spliceTable(doc, "new table\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "# Benchmarks\n\nprose\n\n" + benchStart + "\nnew table\n" + benchEnd + "\n\n## After\n"
	if got != want {
		t.Errorf("spliceTable:\n got %q\nwant %q", got, want)
	}
	for _, bad := range []string{"no markers", benchEnd + " before " + benchStart, benchStart + " only"} {
		if _, err := spliceTable(bad, "t\n"); err == nil {
			t.Errorf("spliceTable(%q): no error", bad)
		}
	}
}

// TestBenchDocHasMarkers checks that the page `make bench` rewrites (docs/benchmarks.md, run
// from the repository root) exists and holds the markers in order, and that the README
// does not hold a second copy of the table.
func TestBenchDocHasMarkers(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, benchDoc))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := spliceTable(string(doc), "t\n"); err != nil {
		t.Errorf("%s: %v", benchDoc, err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(readme), benchStart) {
		t.Errorf("README.md still holds %s: the table's one home is %s", benchStart, benchDoc)
	}
}

func TestWriteBenchDoc(t *testing.T) {
	p := filepath.Join(t.TempDir(), "b.md")
	if err := os.WriteFile(p, []byte("x\n"+benchStart+"\nold\n"+benchEnd+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeBenchDoc(p, "new\n"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if want := "x\n" + benchStart + "\nnew\n" + benchEnd + "\n"; string(b) != want {
		t.Errorf("got %q, want %q", b, want)
	}
	if err := writeBenchDoc(filepath.Join(t.TempDir(), "missing.md"), "t\n"); err == nil {
		t.Error("a missing file: no error")
	}
}

// TestParseBackend checks that a training benchmark's backend segment is split off its
// name, so the table's rows find it under one name in either build.
func TestParseBackend(t *testing.T) {
	rs := parse("BenchmarkTrainStep/backend=openblas/rank-hinge/bucket=true-2   20   5 ns/op   3000 kernels/s\n" +
		"BenchmarkTpuGraphsTileEpoch/backend=go-2   1   9 ns/op   700 kernels/s\n")
	if len(rs) != 2 {
		t.Fatalf("parsed %d lines, want 2", len(rs))
	}
	if rs[0].name != "TrainStep/rank-hinge/bucket=true" || rs[0].backend != "openblas" {
		t.Errorf("line 1: name %q backend %q", rs[0].name, rs[0].backend)
	}
	if rs[1].name != "TpuGraphsTileEpoch" || rs[1].backend != "go" {
		t.Errorf("line 2: name %q backend %q", rs[1].name, rs[1].backend)
	}
	if v, ok := find(rs, "TrainStep/rank-hinge/bucket=true", "kernels/s"); !ok || v != 3000 {
		t.Errorf("find: %v %v", v, ok)
	}
}
