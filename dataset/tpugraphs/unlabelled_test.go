package tpugraphs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/dataset"
)

// writeRuntimes writes testdata/tile_small.npz (3 configs) or layout_small.npz to
// dir/rel with config_runtime replaced by runtimes (and, for tile, the normalizers by
// norms when not nil): a test-split file is the same file with every runtime 0.
func writeRuntimes(t *testing.T, name, dir, rel string, runtimes, norms []int64) string {
	t.Helper()
	z, err := ReadNPZFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	rt := z["config_runtime"]
	if runtimes != nil {
		if len(runtimes) != rt.Shape[0] {
			t.Fatalf("%s has %d runtimes, the test gives %d", name, rt.Shape[0], len(runtimes))
		}
		z["config_runtime"] = &Array{Shape: rt.Shape, Descr: "<i8", Ints: runtimes}
	}
	if norms != nil {
		z["config_runtime_normalizers"] = &Array{Shape: []int{len(norms)}, Descr: "<i8", Ints: norms}
	}
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteNPZFile(p, z, false); err != nil {
		t.Fatal(err)
	}
	return p
}

func configCount(t *testing.T, name string) int {
	t.Helper()
	z, err := ReadNPZFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return z["config_runtime"].Shape[0]
}

// TestImportUnlabelledMarksDataset: TpuGraphs' test-split files (every config_runtime 0)
// import as a dataset marked unlabelled, in its provenance, the report and the text.
func TestImportUnlabelledMarksDataset(t *testing.T) {
	for _, c := range []struct {
		name, file, rel string
		norms           []int64
	}{
		{"tile", "tile_small.npz", "npz/tile/xla/test/a.npz", nil},
		{"tile-zero-normalizers", "tile_small.npz", "npz/tile/xla/test/a.npz", []int64{0, 0, 0}},
		{"layout", "layout_small.npz", "npz/layout/nlp/random/test/a.npz", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := t.TempDir()
			n := configCount(t, c.file)
			writeRuntimes(t, c.file, src, c.rel, make([]int64, n), c.norms)
			writeRuntimes(t, c.file, src, strings.Replace(c.rel, "a.npz", "b.npz", 1), make([]int64, n), c.norms)
			out := t.TempDir()
			rep, err := Import(context.Background(), ImportOptions{Sources: []string{src}, Out: out, Chip: v4(t)})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Datasets) != 1 || !rep.Datasets[0].Unlabelled || rep.Datasets[0].Rows != 2 {
				t.Fatalf("report %+v, want one unlabelled dataset of 2 rows", rep.Datasets)
			}
			d, rows := readRows(t, out)
			if !d.Provenance.Unlabelled {
				t.Errorf("provenance %+v not marked unlabelled", d.Provenance)
			}
			for _, r := range rows {
				for _, v := range r.RuntimesNs {
					if v != 0 {
						t.Errorf("row %s has runtime %v, want 0", r.KernelKey, v)
					}
				}
			}
			var text bytes.Buffer
			if err := rep.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text.String(), out+": unlabelled (every runtime is 0") {
				t.Errorf("import text does not say the dataset is unlabelled:\n%s", text.String())
			}
			// inspect: text and JSON.
			s, err := dataset.Inspect(d)
			if err != nil {
				t.Fatal(err)
			}
			text.Reset()
			if err := s.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			if got := text.String(); !strings.Contains(got, "none: unlabelled data") || !strings.Contains(got, "unlabelled (every runtime is 0") ||
				strings.Contains(got, "runtimes measured on hardware") {
				t.Errorf("inspect text:\n%s", got)
			}
			j, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(j), `"unlabelled":true`) {
				t.Errorf("inspect JSON does not say unlabelled: %s", j)
			}
			// train and eval refuse it with one line.
			err = d.Provenance.RequireLabels(out, "train")
			var ue *dataset.UnlabelledError
			want := out + " holds unlabelled data (TpuGraphs' test split: every runtime is 0): train needs measured runtimes"
			if !errors.As(err, &ue) || err.Error() != want {
				t.Errorf("RequireLabels = %v, want %q", err, want)
			}
		})
	}
}

// TestImportLabelledIsNotMarked: measured files stay labelled, and inspect says so.
func TestImportLabelledIsNotMarked(t *testing.T) {
	src := t.TempDir()
	copyTo(t, "tile_small.npz", src, "npz/tile/xla/train/a.npz")
	out := t.TempDir()
	rep, err := Import(context.Background(), ImportOptions{Sources: []string{src}, Out: out, Chip: v4(t)})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := readRows(t, out)
	if rep.Datasets[0].Unlabelled || d.Provenance.Unlabelled || d.Provenance.RequireLabels(out, "train") != nil {
		t.Errorf("a measured dataset is marked unlabelled: %+v", d.Provenance)
	}
}

// TestImportPartlyZeroRuntimesIsAnError: a file with some runtimes 0 and others not is
// neither labelled nor a test-split file: an error naming the file and the count.
func TestImportPartlyZeroRuntimesIsAnError(t *testing.T) {
	src := t.TempDir()
	p := writeRuntimes(t, "tile_small.npz", src, "npz/tile/xla/train/half.npz", []int64{0, 2500, 0}, nil)
	_, err := Import(context.Background(), ImportOptions{Sources: []string{src}, Out: t.TempDir(), Chip: v4(t)})
	if err == nil || !strings.Contains(err.Error(), p+": 2 of 3 runtimes are 0") {
		t.Errorf("err %v, want one naming %s and 2 of 3 zero runtimes", err, p)
	}
}

// TestImportMixedLabelsIsAnError: unlabelled and measured files of one output dataset
// cannot share it, in either order.
func TestImportMixedLabelsIsAnError(t *testing.T) {
	for _, c := range []struct {
		name      string
		firstZero bool
		want      string
	}{
		{"measured-first", false, "b.npz: every runtime is 0 (unlabelled"},
		{"unlabelled-first", true, "b.npz has measured runtimes, but"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := t.TempDir()
			zero := make([]int64, configCount(t, "tile_small.npz"))
			a, b := []int64(nil), zero
			if c.firstZero {
				a, b = zero, nil
			}
			writeRuntimes(t, "tile_small.npz", src, "npz/tile/xla/test/a.npz", a, nil)
			writeRuntimes(t, "tile_small.npz", src, "npz/tile/xla/test/b.npz", b, nil)
			_, err := Import(context.Background(), ImportOptions{Sources: []string{src}, Out: t.TempDir(), Chip: v4(t)})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "import unlabelled and measured files separately") {
				t.Errorf("err %v, want %q", err, c.want)
			}
		})
	}
}
