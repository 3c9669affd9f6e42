package dataset

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/tpucost/tpucost/features"
)

var formats = []Format{FormatArrow, FormatParquet}

// testProv is the provenance of test datasets.
func testProv(task Task, shard, count int) Provenance {
	return Provenance{
		SchemaVersion: SchemaVersion, FeatureSchema: features.CurrentSchema(), SimulatorVersion: "tpusim-test",
		Chip: "v4", VMEMBytes: 32 << 20, NoiseSigma: 0.02, NoiseRuns: 3, Seed: 7, Task: task, ConfigsPerKernel: 8,
		Models: []string{"m0", "m1", "m2"}, ShardIndex: shard, ShardCount: count, ToolVersion: "test", GeneratorVersion: "gen-test",
	}
}

// rowGen makes valid rows whose contents are a deterministic function of (unit, key), so
// that datasets written in different shard layouts can be compared row by row.
type rowGen struct {
	task     Task
	maxNodes int // nodes per graph are drawn from [0, maxNodes]
	configs  int // configs per row are drawn from [0, configs]
	special  bool
	lean     bool              // provenance without the feature names (smaller files, for fuzzing)
	families map[string]string // Provenance.Families
}

// prov is the provenance of g's datasets.
func (g rowGen) prov(shard, count int) Provenance {
	p := testProv(g.task, shard, count)
	p.Families = g.families
	if g.lean {
		p.FeatureSchema = features.Schema{Version: features.SchemaVersion}
		p.Models = nil
	}
	return p
}

// row returns the row of kernel key in unit.
func (g rowGen) row(program string, unit int64, key string) Row {
	h := splitHash(unit, "row", key)
	rng := rand.New(rand.NewPCG(h, uint64(unit)))
	n := rng.IntN(g.maxNodes + 1)
	c := rng.IntN(g.configs + 1)
	f32 := func(k int) []float32 {
		v := make([]float32, k)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * 10)
		}
		if g.special && k > 3 {
			// Values whose bits must survive the round trip exactly.
			v[0], v[1], v[2], v[3] = float32(math.NaN()), float32(math.Inf(-1)), float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32
		}
		return v
	}
	r := Row{
		Program: program, Unit: unit, Task: g.task, KernelKey: key, KernelName: fmt.Sprintf("fusion.%d", rng.IntN(100)),
		Kind: []string{"kLoop", "kInput", "kOutput"}[rng.IntN(3)],
		Graph: features.Graph{
			Opcodes:     make([]int32, n),
			NodeFeats:   f32(n * features.NodeWidth),
			KernelFeats: f32(features.KernelWidth),
		},
	}
	for i := range r.Graph.Opcodes {
		r.Graph.Opcodes[i] = int32(rng.IntN(len(features.Vocabulary())))
		if i > 0 { // a connected DAG plus a few extra edges
			r.Graph.EdgeSrc = append(r.Graph.EdgeSrc, int32(rng.IntN(i)))
			r.Graph.EdgeDst = append(r.Graph.EdgeDst, int32(i))
		}
	}
	for j := 0; j < c; j++ {
		r.Configs = append(r.Configs, fmt.Sprintf("tile=%dx128;flags=db%d/u%d;ü", 8<<rng.IntN(5), rng.IntN(3), j))
		r.ConfigFeats = append(r.ConfigFeats, f32(features.ConfigWidth))
		r.RuntimesNs = append(r.RuntimesNs, 1e3+rng.ExpFloat64()*1e5)
		r.AnalyticalNs = append(r.AnalyticalNs, 1e3+rng.ExpFloat64()*1e5)
	}
	return r
}

// unitData is what the generation driver produces for one work unit.
type unitData struct {
	unit    int64
	program string
	kernels []string // with repeats: a kernel may occur several times
}

// testUnits makes n units of programs drawing kernels from a shared pool, so that
// kernels repeat within and across programs and units.
func testUnits(seed uint64, n, programs, pool int) []unitData {
	rng := rand.New(rand.NewPCG(seed, 1))
	var out []unitData
	for u := 0; u < n; u++ {
		p := rng.IntN(programs)
		ud := unitData{unit: int64(u), program: "prog" + strconv.Itoa(p)}
		for k := 0; k < 3+rng.IntN(6); k++ {
			// Each program mostly uses its own kernels, sometimes shared ones.
			key := fmt.Sprintf("k%03d", rng.IntN(pool))
			if rng.IntN(3) > 0 {
				key = fmt.Sprintf("p%d-k%02d", p, rng.IntN(pool/programs+1))
			}
			ud.kernels = append(ud.kernels, key)
		}
		out = append(out, ud)
	}
	return out
}

// writeShard writes the units of one shard the way the generation driver does: units in
// order, rows deduplicated by key within the shard, unitsPerPart units per part.
func writeShard(t testing.TB, dir string, format Format, mem memory.Allocator, g rowGen, units []unitData, shard, count, unitsPerPart int) {
	t.Helper()
	w, err := NewWriter(WriterOptions{Dir: dir, Format: format, Provenance: g.prov(shard, count), Alloc: mem})
	if err != nil {
		t.Fatal(err)
	}
	next, seen, _ := w.Resume()
	var mine []unitData
	for _, u := range units {
		if int(u.unit)%count == shard && u.unit >= next {
			mine = append(mine, u)
		}
	}
	for len(mine) > 0 {
		part := mine[:min(unitsPerPart, len(mine))]
		mine = mine[len(part):]
		var rows []Row
		var occ []Occurrence
		for _, u := range part {
			counts := map[string]int32{}
			for _, k := range u.kernels {
				counts[k]++
			}
			for _, k := range slices.Sorted(maps.Keys(counts)) {
				occ = append(occ, Occurrence{Unit: u.unit, Program: u.program, KernelKey: k, Count: counts[k]})
				if !seen[k] {
					seen[k] = true
					rows = append(rows, g.row(u.program, u.unit, k))
				}
			}
		}
		if err := w.WritePart(part[0].unit, part[len(part)-1].unit, rows, occ); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// readAll returns the rows of a dataset (copies), by key.
func readAll(t testing.TB, d *Dataset, opts ReadOptions) map[string]Row {
	t.Helper()
	out := map[string]Row{}
	err := d.Rows(opts, func(r *Row) error {
		if _, dup := out[r.KernelKey]; dup {
			t.Errorf("kernel %s streamed twice", r.KernelKey)
		}
		out[r.KernelKey] = r.Clone()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// rowDiff returns the first difference between two rows ("" if none), comparing floats by
// their bits so that NaN, -0 and infinities must survive exactly.
func rowDiff(a, b *Row) string {
	switch {
	case a.Program != b.Program || a.Unit != b.Unit || a.Task != b.Task || a.KernelKey != b.KernelKey || a.KernelName != b.KernelName || a.Kind != b.Kind:
		return fmt.Sprintf("identifiers %q/%d/%s/%s/%s/%s vs %q/%d/%s/%s/%s/%s", a.Program, a.Unit, a.Task, a.KernelKey, a.KernelName, a.Kind,
			b.Program, b.Unit, b.Task, b.KernelKey, b.KernelName, b.Kind)
	case !slices.Equal(a.Graph.Opcodes, b.Graph.Opcodes):
		return "node opcodes"
	case !bitsEqual32(a.Graph.NodeFeats, b.Graph.NodeFeats):
		return "node features"
	case !slices.Equal(a.Graph.EdgeSrc, b.Graph.EdgeSrc) || !slices.Equal(a.Graph.EdgeDst, b.Graph.EdgeDst):
		return "edges"
	case !bitsEqual32(a.Graph.KernelFeats, b.Graph.KernelFeats):
		return "kernel features"
	case !slices.Equal(a.Configs, b.Configs):
		return "configs"
	case len(a.ConfigFeats) != len(b.ConfigFeats):
		return "config feature count"
	case !bitsEqual64(a.RuntimesNs, b.RuntimesNs):
		return "runtimes"
	case !bitsEqual64(a.AnalyticalNs, b.AnalyticalNs):
		return "analytical estimates"
	}
	for i := range a.ConfigFeats {
		if !bitsEqual32(a.ConfigFeats[i], b.ConfigFeats[i]) {
			return fmt.Sprintf("config %d features", i)
		}
	}
	return ""
}

func bitsEqual32(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

func bitsEqual64(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) })
}

// TestRoundTrip writes random valid rows (edge cases included: no nodes, no configs,
// special float values, non-ASCII strings) in several parts and batches and reads them
// back field by field, in both formats, with every Arrow allocation released.
func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name    string
		format  Format
		task    Task
		batch   int
		special bool
	}{
		{"arrow", FormatArrow, TaskTile, 0, true},
		{"parquet", FormatParquet, TaskTile, 0, true},
		{"parquet-small-batches", FormatParquet, TaskFusion, 3, false},
		{"arrow-fusion", FormatArrow, TaskFusion, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
			defer mem.AssertSize(t, 0)
			dir := t.TempDir()
			g := rowGen{task: tc.task, maxNodes: 25, configs: 12, special: tc.special}
			units := testUnits(1, 40, 4, 60)
			writeShard(t, dir, tc.format, mem, g, units, 0, 1, 7)

			var want []Row
			seen := map[string]bool{}
			for _, u := range units {
				for _, k := range slices.Compact(slices.Sorted(slices.Values(u.kernels))) {
					if !seen[k] {
						seen[k] = true
						want = append(want, g.row(u.program, u.unit, k))
					}
				}
			}
			d, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			if d.Format != tc.format || len(d.Files) != 6 {
				t.Fatalf("format %s, %d files, want %s and 6", d.Format, len(d.Files), tc.format)
			}
			var got []Row
			err = d.Rows(ReadOptions{Alloc: mem, BatchRows: tc.batch}, func(r *Row) error {
				got = append(got, r.Clone())
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d rows, want %d", len(got), len(want))
			}
			for i := range want { // the writer keeps the driver's order
				if diff := rowDiff(&got[i], &want[i]); diff != "" {
					t.Fatalf("row %d (%s): %s differ", i, want[i].KernelKey, diff)
				}
			}
			occ, err := d.Occurrences()
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, u := range units {
				n += len(slices.Compact(slices.Sorted(slices.Values(u.kernels))))
			}
			if len(occ) != n {
				t.Errorf("%d occurrences, want %d", len(occ), n)
			}
			if d.Provenance.Diff(testProv(tc.task, 0, 1)) != "" || d.Provenance.ShardCount != 1 {
				t.Errorf("provenance %+v", d.Provenance)
			}
		})
	}
}

// TestWriteDeterministic writes the same rows twice, with different GOMAXPROCS, and
// expects byte-identical files.
func TestWriteDeterministic(t *testing.T) {
	g := rowGen{task: TaskTile, maxNodes: 30, configs: 20}
	units := testUnits(2, 30, 3, 50)
	for _, format := range formats {
		t.Run(string(format), func(t *testing.T) {
			dirs := [2]string{t.TempDir(), t.TempDir()}
			for i, procs := range []int{1, runtime.NumCPU() + 3} {
				old := runtime.GOMAXPROCS(procs)
				writeShard(t, dirs[i], format, memory.DefaultAllocator, g, units, 0, 1, 10)
				runtime.GOMAXPROCS(old)
			}
			entries, err := os.ReadDir(dirs[0])
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 8 { // 3 parts of 2 files, the manifest and the directory's kind
				t.Fatalf("%d files, want 8", len(entries))
			}
			for _, e := range entries {
				a, err1 := os.ReadFile(filepath.Join(dirs[0], e.Name()))
				b, err2 := os.ReadFile(filepath.Join(dirs[1], e.Name()))
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				if !bytes.Equal(a, b) {
					t.Errorf("%s differs between identical runs", e.Name())
				}
			}
		})
	}
}

// TestSchemaMetadata checks the flat metadata keys of a rows file as a non-Go tool would
// see them.
func TestSchemaMetadata(t *testing.T) {
	dir := t.TempDir()
	g := rowGen{task: TaskFlags, maxNodes: 5, configs: 3}
	writeShard(t, dir, FormatArrow, memory.DefaultAllocator, g, testUnits(3, 5, 2, 10), 1, 2, 100)
	rowsName, _ := PartFileNames(TaskFlags, 1, 2, 0, FormatArrow)
	if rowsName != "flags-1of2-00000.arrow" {
		t.Fatalf("file name %s", rowsName)
	}
	f, err := os.Open(filepath.Join(dir, rowsName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	md := r.Schema().Metadata()
	want := map[string]string{
		MetaSchemaVersion: strconv.Itoa(SchemaVersion), MetaFeatureVersion: strconv.Itoa(features.SchemaVersion), MetaSimulator: "tpusim-test",
		MetaChip: "v4", MetaTask: "flags", MetaSeed: "7", MetaNodeFeatureWidth: strconv.Itoa(features.NodeWidth),
		MetaKernelFeatureWidth: strconv.Itoa(features.KernelWidth), MetaConfigFeatureWidth: strconv.Itoa(features.ConfigWidth),
		MetaUnitFirst: "1", MetaUnitLast: "3", MetaPart: "0", MetaShard: "1of2", MetaContent: "rows",
	}
	for k, v := range want {
		if got, ok := md.GetValue(k); !ok || got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if p, ok := md.GetValue(MetaProvenance); !ok || !bytes.Contains([]byte(p), []byte(`"chip":"v4"`)) {
		t.Errorf("provenance metadata %.80q", p)
	}
	if got := r.Schema().Field(12).Type.String(); got != "list<item: list<item: float32>>" {
		t.Errorf("config_features type %s", got)
	}
}

// TestGolden reads the datasets committed in testdata/golden (written by schema version 1)
// and checks that both formats hold the same rows and that rewriting the Arrow one from
// what was read reproduces it byte for byte: old files stay readable, and the encoding
// (arrow-go, zstd) stays deterministic across versions. TPUCOST_UPDATE_GOLDEN=1
// regenerates the files (then review why they changed).
func TestGolden(t *testing.T) {
	golden := filepath.Join("testdata", "golden")
	if os.Getenv("TPUCOST_UPDATE_GOLDEN") != "" {
		g := rowGen{task: TaskTile, maxNodes: 3, configs: 3, special: true, lean: true}
		for _, f := range formats {
			dir := filepath.Join(golden, string(f))
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			writeShard(t, dir, f, memory.DefaultAllocator, g, testUnits(13, 6, 2, 8), 0, 1, 3)
		}
	}
	read := func(f Format) (*Dataset, map[string]Row) {
		d, err := Open(filepath.Join(golden, string(f)))
		if err != nil {
			t.Fatal(err)
		}
		return d, readAll(t, d, ReadOptions{})
	}
	da, ra := read(FormatArrow)
	_, rp := read(FormatParquet)
	if len(ra) == 0 || len(ra) != len(rp) {
		t.Fatalf("%d rows in Arrow, %d in Parquet", len(ra), len(rp))
	}
	for k, r := range ra {
		p := rp[k]
		if diff := rowDiff(&r, &p); diff != "" {
			t.Errorf("kernel %s: %s differ between the formats", k, diff)
		}
	}
	// Rewrite the Arrow dataset part by part from what was read.
	occ, err := da.Occurrences()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	w, err := NewWriter(WriterOptions{Dir: dir, Provenance: da.Provenance})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range da.parts {
		var rows []Row
		err := da.Rows(ReadOptions{}, func(r *Row) error {
			if r.Unit >= p.meta.UnitFirst && r.Unit <= p.meta.UnitLast {
				rows = append(rows, r.Clone())
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var po []Occurrence
		for _, o := range occ {
			if o.Unit >= p.meta.UnitFirst && o.Unit <= p.meta.UnitLast {
				po = append(po, o)
			}
		}
		if err := w.WritePart(p.meta.UnitFirst, p.meta.UnitLast, rows, po); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range listDir(t, filepath.Join(golden, string(FormatArrow))) {
		want, _ := os.ReadFile(filepath.Join(golden, string(FormatArrow), name))
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: rewriting the golden dataset gives different bytes (%v)", name, err)
		}
	}
}
