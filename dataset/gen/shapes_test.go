package gen

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/zoo"
)

// TestGenerateShapes: gen --shapes builds every model at each listed size as its own
// program MODEL@seq=V, writes rows and occurrences for each, records each program's
// family as its model's and the list in the provenance.
func TestGenerateShapes(t *testing.T) {
	models := []string{"bert_tiny_s128_b32", "gpt2_tiny_s128_b8"}
	o := genOpts(t, dataset.TaskTile, t.TempDir())
	o.Models, o.Configs, o.Variants, o.Shapes = models, 2, 1, "seq=48,16"
	if _, err := Generate(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	d, err := dataset.Open(o.Out)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, m := range models {
		for _, v := range []string{"16", "48"} { // ascending, whatever the order given
			want = append(want, m+"@seq="+v)
		}
	}
	p := d.Provenance
	if !slices.Equal(p.Models, want) {
		t.Errorf("provenance models %v, want %v", p.Models, want)
	}
	if p.Shapes != "seq=16,48" {
		t.Errorf("provenance shapes %q, want seq=16,48", p.Shapes)
	}
	for _, prog := range want {
		m, err := zoo.Lookup(strings.SplitN(prog, "@", 2)[0])
		if err != nil {
			t.Fatal(err)
		}
		if f, err := p.Family(prog); err != nil || f != m.Family {
			t.Errorf("family of %s: %q, %v; want %q", prog, f, err, m.Family)
		}
	}
	occ, err := d.Occurrences()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, oc := range occ {
		seen[oc.Program] = true
	}
	rows := map[string]int{}
	if err := d.Rows(dataset.ReadOptions{}, func(r *dataset.Row) error { rows[r.Program]++; return nil }); err != nil {
		t.Fatal(err)
	}
	for _, prog := range want {
		if !seen[prog] || rows[prog] == 0 {
			t.Errorf("%s: %d occurrences seen %v, %d rows", prog, len(occ), seen[prog], rows[prog])
		}
	}
	if len(rows) != len(want) {
		t.Errorf("rows of programs %v, want exactly %v", rows, want)
	}
}

// TestGenerateShapesRefusals: a model without the dimension, a size above the model's
// bound and a malformed list are one-line errors, and nothing is written.
func TestGenerateShapesRefusals(t *testing.T) {
	for _, tc := range []struct{ models, shapes, want string }{
		{"bert_tiny_s128_b32,resnet18_b1", "seq=64", `resnet18_b1 has no dynamic dimension "seq"`},
		{"bert_tiny_s128_b32", "seq=64,4096", "takes seq up to"},
		{"bert_tiny_s128_b32", "len=64", `no dynamic dimension "len"`},
		{"bert_tiny_s128_b32", "seq=64,,128", "--shapes"},
		{"bert_tiny_s128_b32", "seq=64,d0=3", "--shapes"},
	} {
		o := genOpts(t, dataset.TaskTile, filepath.Join(t.TempDir(), "out"))
		o.Models, o.Variants, o.Shapes = strings.Split(tc.models, ","), 1, tc.shapes
		_, err := Generate(context.Background(), o)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("--shapes %s on %s: %v, want one line with %q", tc.shapes, tc.models, err, tc.want)
		}
		if _, statErr := os.Stat(o.Out); statErr == nil {
			if ents, _ := os.ReadDir(o.Out); len(ents) > 0 {
				t.Errorf("--shapes %s: wrote %d entries before refusing", tc.shapes, len(ents))
			}
		}
	}
}

// TestShapeSplit: a shape split of a gen --shapes dataset holds out exactly the programs
// at the listed sizes (seq=32 is not seq=320), no training row's kernel occurs in one of
// them, and a split that holds out nothing or everything, or is malformed, is an error.
func TestShapeSplit(t *testing.T) {
	o := genOpts(t, dataset.TaskTile, t.TempDir())
	o.Models, o.Configs, o.Variants, o.Shapes = []string{"bert_tiny_s128_b32", "gpt2_tiny_s128_b8"}, 2, 1, "seq=32,64,320"
	if _, err := Generate(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	d, err := dataset.Open(o.Out)
	if err != nil {
		t.Fatal(err)
	}
	s, err := dataset.NewSplit(d, "shape:seq=32", 0.2, 1)
	if err != nil {
		t.Fatal(err)
	}
	wantTest := []string{"bert_tiny_s128_b32@seq=32", "gpt2_tiny_s128_b8@seq=32"}
	if got := s.Programs(dataset.Test); !slices.Equal(got, wantTest) || !slices.Equal(s.HeldOut, wantTest) {
		t.Errorf("test programs %v (held out %v), want %v", got, s.HeldOut, wantTest)
	}
	if !slices.Equal(s.HeldOutShapes, []int{32}) {
		t.Errorf("held-out shapes %v, want [32]", s.HeldOutShapes)
	}
	for _, p := range s.Programs(dataset.Train) {
		if slices.Contains(wantTest, p) {
			t.Errorf("held-out %s among the training programs", p)
		}
	}
	occ, err := d.Occurrences()
	if err != nil {
		t.Fatal(err)
	}
	heldKeys := map[string]bool{}
	for _, oc := range occ {
		if slices.Contains(wantTest, oc.Program) {
			heldKeys[oc.KernelKey] = true
		}
	}
	var train, test int
	err = d.Rows(dataset.ReadOptions{}, func(r *dataset.Row) error {
		switch {
		case s.IsTest(r):
			test++
		case heldKeys[r.KernelKey] || slices.Contains(wantTest, r.Program):
			t.Errorf("row %s of %s is trained on but occurs in a held-out program", r.KernelKey, r.Program)
		default:
			train++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if train == 0 || test == 0 {
		t.Errorf("%d train rows, %d test rows: want both", train, test)
	}
	for _, tc := range []struct{ kind, want string }{
		{"shape:seq=128", "holds out nothing"},
		{"shape:len=32", "holds out nothing"},
		{"shape:seq=32,64,320", "every program"},
		{"shape", "name the held-out sizes"},
		{"shape:seq=", "not a positive integer"},
		{"shape:seq=32,32", "given twice"},
		{"shape:seq=32,d0=3", "one dimension"},
	} {
		_, err := dataset.NewSplit(d, tc.kind, 0.2, 1)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("split %s: %v, want one line with %q", tc.kind, err, tc.want)
		}
	}
}
