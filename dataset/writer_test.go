package dataset

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestParseFileName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
		want fileName
	}{
		{"tile-0of1-00000.arrow", true, fileName{task: "tile", shard: 0, count: 1, part: 0, format: FormatArrow}},
		{"fusion-3of4-00012.occ.parquet", true, fileName{task: "fusion", shard: 3, count: 4, part: 12, occ: true, format: FormatParquet}},
		{"tile-0of1-123456.arrow", true, fileName{task: "tile", shard: 0, count: 1, part: 123456, format: FormatArrow}},
		{"tile-0of1-00000.arrow.tmp", false, fileName{}},
		{"tile-1of1-00000.arrow", false, fileName{}}, // shard out of range
		{"tile-0of0-00000.arrow", false, fileName{}},
		{"tile-0of1-0000.arrow", false, fileName{}},
		{"README.md", false, fileName{}},
	} {
		got, ok := parseFileName(tc.name)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseFileName(%q) = %+v, %v; want %+v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// TestResume simulates a crash in the middle of a part (a finished occurrences file
// without its rows file, a half-written temporary rows file) and checks that readers
// ignore the debris, that reopening the writer removes it and reports where to resume,
// and that the resumed dataset equals one written without interruption.
func TestResume(t *testing.T) {
	for _, format := range formats {
		t.Run(string(format), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
			defer mem.AssertSize(t, 0)
			g := rowGen{task: TaskTile, maxNodes: 10, configs: 6}
			units := testUnits(4, 30, 3, 40)
			dir := t.TempDir()
			// The first 20 units, in 2 parts, complete.
			writeShard(t, dir, format, mem, g, units[:20], 0, 1, 10)
			rows2, occ2 := PartFileNames(TaskTile, 0, 1, 2, format)
			rows1, _ := PartFileNames(TaskTile, 0, 1, 1, format)
			full, err := os.ReadFile(filepath.Join(dir, rows1))
			if err != nil {
				t.Fatal(err)
			}
			// The crash: part 2's occurrences and rows renamed into place but the manifest
			// not yet rewritten (the part is not committed), temporary files half written.
			debris := map[string][]byte{
				occ2:                          full[:0],
				rows2:                         full,
				rows2 + tmpSuffix:             full[:len(full)/2],
				rows2 + ".4242" + tmpSuffix:   full[:len(full)/3], // a temporary name of pid 4242
				occ2 + tmpSuffix:              full[:10],
				"tile-1of2-00000.arrow.tmp":   full[:10], // another shard's writer at work
				"tile-0of1-00007.parquet.tmp": full[:10],
			}
			// occ2 must be a real occurrences file: copy part 1's.
			_, occ1 := PartFileNames(TaskTile, 0, 1, 1, format)
			if debris[occ2], err = os.ReadFile(filepath.Join(dir, occ1)); err != nil {
				t.Fatal(err)
			}
			for name, b := range debris {
				if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			d, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Files) != 2 {
				t.Errorf("reader sees %d parts, want 2", len(d.Files))
			}
			before := readAll(t, d, ReadOptions{Alloc: mem})

			w, err := NewWriter(WriterOptions{Dir: dir, Format: format, Provenance: testProv(TaskTile, 0, 1), Alloc: mem})
			if err != nil {
				t.Fatal(err)
			}
			next, seen, part := w.Resume()
			if next != 20 || part != 2 {
				t.Errorf("Resume() = unit %d, part %d; want 20, 2", next, part)
			}
			if !equalKeys(seen, before) {
				t.Errorf("Resume() reports %d kernels seen, the files hold %d", len(seen), len(before))
			}
			for _, name := range []string{occ2, rows2, rows2 + tmpSuffix, rows2 + ".4242" + tmpSuffix, occ2 + tmpSuffix, "tile-0of1-00007.parquet.tmp"} {
				if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
					t.Errorf("%s survived reopening the writer", name)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "tile-1of2-00000.arrow.tmp")); err != nil {
				t.Errorf("another shard's temporary file was removed: %v", err)
			}
			if err := w.WritePart(10, 19, nil, nil); err == nil {
				t.Error("WritePart accepted units already written")
			}
			w.Close()
			if err := os.Remove(filepath.Join(dir, "tile-1of2-00000.arrow.tmp")); err != nil {
				t.Fatal(err)
			}

			// Resume and compare with an uninterrupted run.
			writeShard(t, dir, format, mem, g, units, 0, 1, 10)
			ref := t.TempDir()
			writeShard(t, ref, format, mem, g, units, 0, 1, 10)
			for _, name := range listDir(t, ref) {
				a, _ := os.ReadFile(filepath.Join(ref, name))
				b, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil || !slices.Equal(a, b) {
					t.Errorf("%s differs from an uninterrupted run (%v)", name, err)
				}
			}
			if got, want := listDir(t, dir), listDir(t, ref); !slices.Equal(got, want) {
				t.Errorf("files %v, want %v", got, want)
			}
		})
	}
}

func equalKeys[V any](a map[string]bool, b map[string]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestWriterRefusesOtherSettings checks that a writer refuses a directory holding parts
// generated with other settings, naming the field that differs.
func TestWriterRefusesOtherSettings(t *testing.T) {
	dir := t.TempDir()
	g := rowGen{task: TaskTile, maxNodes: 4, configs: 2}
	writeShard(t, dir, FormatArrow, memory.DefaultAllocator, g, testUnits(5, 6, 2, 10), 0, 2, 10)
	for _, tc := range []struct {
		name   string
		change func(*Provenance, *Format)
		field  string
	}{
		{"seed", func(p *Provenance, _ *Format) { p.Seed++ }, "seed"},
		{"chip", func(p *Provenance, _ *Format) { p.Chip = "v5e" }, "chip"},
		{"models", func(p *Provenance, _ *Format) { p.Models = p.Models[:1] }, "models"},
		{"features", func(p *Provenance, _ *Format) { p.FeatureSchema.Version++ }, "feature_schema"},
		{"shard count", func(p *Provenance, _ *Format) { p.ShardCount = 3 }, "shard_count"},
		{"format", func(_ *Provenance, f *Format) { *f = FormatParquet }, "format"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, f := testProv(TaskTile, 1, 2), FormatArrow
			tc.change(&p, &f)
			_, err := NewWriter(WriterOptions{Dir: dir, Format: f, Provenance: p})
			if err == nil || !strings.Contains(err.Error(), "different settings") || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("NewWriter: %v; want an error naming %s", err, tc.field)
			}
		})
	}
	// The other shard of the same run is welcome.
	if _, err := NewWriter(WriterOptions{Dir: dir, Provenance: testProv(TaskTile, 1, 2)}); err != nil {
		t.Errorf("second shard refused: %v", err)
	}
}

func TestWritePartValidates(t *testing.T) {
	g := rowGen{task: TaskTile, maxNodes: 4, configs: 2}
	good := g.row("p", 5, "k")
	for _, tc := range []struct {
		name   string
		first  int64
		last   int64
		change func(*Row)
		occ    []Occurrence
	}{
		{"unit outside range", 6, 9, nil, nil},
		{"empty range", 5, 4, nil, nil},
		{"task", 0, 9, func(r *Row) { r.Task = TaskFusion }, nil},
		{"node width", 0, 9, func(r *Row) { r.Graph.NodeFeats = append(r.Graph.NodeFeats, 1) }, nil},
		{"kernel width", 0, 9, func(r *Row) { r.Graph.KernelFeats = r.Graph.KernelFeats[1:] }, nil},
		{"config width", 0, 9, func(r *Row) {
			r.Configs, r.ConfigFeats = []string{"a"}, [][]float32{{1}}
			r.RuntimesNs, r.AnalyticalNs = []float64{1}, []float64{1}
		}, nil},
		{"runtime count", 0, 9, func(r *Row) { r.RuntimesNs = append(r.RuntimesNs, 1) }, nil},
		{"edge range", 0, 9, func(r *Row) { r.Graph.EdgeSrc, r.Graph.EdgeDst = []int32{0}, []int32{int32(len(r.Graph.Opcodes))} }, nil},
		{"empty key", 0, 9, func(r *Row) { r.KernelKey = "" }, nil},
		{"occurrence unit", 0, 9, nil, []Occurrence{{Unit: 10, Program: "p", KernelKey: "k", Count: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := NewWriter(WriterOptions{Dir: t.TempDir(), Provenance: testProv(TaskTile, 0, 1)})
			if err != nil {
				t.Fatal(err)
			}
			r := good.Clone()
			if tc.change != nil {
				tc.change(&r)
			}
			if err := w.WritePart(tc.first, tc.last, []Row{r}, tc.occ); err == nil {
				t.Error("invalid part accepted")
			}
		})
	}
	if _, err := NewWriter(WriterOptions{Dir: t.TempDir(), Provenance: testProv("speed", 0, 1)}); err == nil {
		t.Error("unknown task accepted")
	}
	if _, err := NewWriter(WriterOptions{Dir: t.TempDir(), Provenance: testProv(TaskTile, 2, 2)}); err == nil {
		t.Error("shard 2 of 2 accepted")
	}
	if _, err := NewWriter(WriterOptions{Dir: t.TempDir(), Format: "csv", Provenance: testProv(TaskTile, 0, 1)}); err == nil {
		t.Error("format csv accepted")
	}
}

// TestEmptyPart checks that parts without rows or occurrences are valid.
func TestEmptyPart(t *testing.T) {
	for _, format := range formats {
		dir := t.TempDir()
		w, err := NewWriter(WriterOptions{Dir: dir, Format: format, Provenance: testProv(TaskLayout, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WritePart(0, 3, nil, nil); err != nil {
			t.Fatal(err)
		}
		d, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if rows := readAll(t, d, ReadOptions{}); len(rows) != 0 {
			t.Errorf("%s: %d rows", format, len(rows))
		}
		s, err := Inspect(d)
		if err != nil {
			t.Fatal(err)
		}
		if s.Rows != 0 || s.Samples != 0 || len(s.Files) != 1 {
			t.Errorf("%s: summary %+v", format, s)
		}
	}
}

// TestInterop writes a small dataset in both formats and reads every file with the
// non-Go readers of interop/check.mjs (apache-arrow JS and polars for Arrow files, DuckDB
// and polars for Parquet files), checking row counts, column names and the first value.
// It needs node and `npm ci` in dataset/interop.
func TestInterop(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	if _, err := os.Stat(filepath.Join("interop", "node_modules")); err != nil {
		t.Skip("dataset/interop/node_modules is missing: run `npm ci` in dataset/interop")
	}
	for _, format := range formats {
		t.Run(string(format), func(t *testing.T) {
			dir := t.TempDir()
			g := rowGen{task: TaskTile, maxNodes: 5, configs: 4}
			writeShard(t, dir, format, memory.DefaultAllocator, g, testUnits(12, 12, 3, 20), 0, 1, 5)
			// What the Go reader says each file holds.
			want := map[string][2]any{} // file: rows, first value
			d, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range d.parts {
				for _, path := range []string{p.rows, p.occ} {
					bf, err := openBatchFile(path, format, memory.DefaultAllocator, 0)
					if err != nil {
						t.Fatal(err)
					}
					n, first := 0, ""
					err = bf.batches(nil, func(rec arrow.RecordBatch) error {
						if n == 0 && rec.NumRows() > 0 {
							first = rec.Column(0).ValueStr(0)
						}
						n += int(rec.NumRows())
						return nil
					})
					bf.Close()
					if err != nil {
						t.Fatal(err)
					}
					want[filepath.Base(path)] = [2]any{n, first}
				}
			}
			cmd := exec.Command(node, "check.mjs", dir)
			cmd.Dir = "interop"
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil && len(out) == 0 {
				t.Fatalf("check.mjs: %v: %s", err, stderr.String())
			}
			var res struct {
				Files []struct {
					File    string `json:"file"`
					Readers map[string]struct {
						Rows    int      `json:"rows"`
						Columns []string `json:"columns"`
						First   string   `json:"first"`
						Error   string   `json:"error"`
					} `json:"readers"`
				} `json:"files"`
			}
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatalf("check.mjs output: %v\n%s", err, out)
			}
			if len(res.Files) != len(want) {
				t.Errorf("check.mjs read %d files, want %d", len(res.Files), len(want))
			}
			for _, f := range res.Files {
				w, ok := want[f.File]
				if !ok {
					t.Errorf("check.mjs read unexpected file %s", f.File)
					continue
				}
				cols := RowsSchema().Fields()
				if strings.Contains(f.File, ".occ.") {
					cols = OccurrencesSchema().Fields()
				}
				var names []string
				for _, c := range cols {
					names = append(names, c.Name)
				}
				if len(f.Readers) != 2 {
					t.Errorf("%s: %d readers, want 2", f.File, len(f.Readers))
				}
				for reader, r := range f.Readers {
					switch {
					case r.Error != "":
						t.Errorf("%s: %s: %s", f.File, reader, r.Error)
					case r.Rows != w[0].(int) || r.First != w[1].(string):
						t.Errorf("%s: %s reads %d rows starting %q, Go %d rows starting %q", f.File, reader, r.Rows, r.First, w[0], w[1])
					case r.Rows > 0 && !slices.Equal(r.Columns, names):
						t.Errorf("%s: %s columns %v, want %v", f.File, reader, r.Columns, names)
					}
				}
			}
		})
	}
}
