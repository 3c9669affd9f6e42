package dataset

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/features"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/zoo"
)

// TestDedupeAcrossShards writes the same units as one shard and as three (which
// duplicate kernels across shards) and checks that the union read from the shards equals
// the single-shard data, each kernel's row coming from its smallest unit.
func TestDedupeAcrossShards(t *testing.T) {
	for _, format := range formats {
		t.Run(string(format), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
			defer mem.AssertSize(t, 0)
			g := rowGen{task: TaskTile, maxNodes: 8, configs: 5}
			units := testUnits(6, 60, 5, 80)
			single, sharded := t.TempDir(), t.TempDir()
			writeShard(t, single, format, mem, g, units, 0, 1, 8)
			for s := 2; s >= 0; s-- { // shards finish in any order
				writeShard(t, sharded, format, mem, g, units, s, 3, 5)
			}
			d1, err := Open(single)
			if err != nil {
				t.Fatal(err)
			}
			d3, err := Open(sharded)
			if err != nil {
				t.Fatal(err)
			}
			want, got := readAll(t, d1, ReadOptions{Alloc: mem}), readAll(t, d3, ReadOptions{Alloc: mem, BatchRows: 7})
			if len(got) != len(want) {
				t.Fatalf("%d kernels from the shards, %d from one shard", len(got), len(want))
			}
			minUnit := map[string]int64{}
			for _, u := range units {
				for _, k := range u.kernels {
					if m, ok := minUnit[k]; !ok || u.unit < m {
						minUnit[k] = u.unit
					}
				}
			}
			for k, w := range want {
				g, ok := got[k]
				if !ok {
					t.Errorf("kernel %s missing from the shards", k)
					continue
				}
				if diff := rowDiff(&g, &w); diff != "" {
					t.Errorf("kernel %s: %s differ", k, diff)
				}
				if g.Unit != minUnit[k] {
					t.Errorf("kernel %s kept from unit %d, its smallest unit is %d", k, g.Unit, minUnit[k])
				}
			}
			s, err := Inspect(d3)
			if err != nil {
				t.Fatal(err)
			}
			if s.Rows <= s.Kernels || s.Kernels != int64(len(want)) || len(s.Shards) != 3 {
				t.Errorf("sharded summary: %d rows, %d kernels, %d shards; want duplicates, %d kernels, 3 shards", s.Rows, s.Kernels, len(s.Shards), len(want))
			}
			o1, err1 := d1.Occurrences()
			o3, err3 := d3.Occurrences()
			if err1 != nil || err3 != nil {
				t.Fatal(err1, err3)
			}
			if fmt.Sprint(o1) != fmt.Sprint(o3) {
				t.Error("occurrences differ between the layouts")
			}
			// An error from the callback stops the stream and comes back unchanged.
			stop := errors.New("stop")
			if err := d3.Rows(ReadOptions{Alloc: mem}, func(*Row) error { return stop }); err != stop {
				t.Errorf("Rows returned %v, want the callback's error", err)
			}
		})
	}
}

// readEverything opens dir and reads all of it, as a trainer and inspect would.
//
// It opens the directory without the manifest check (open(dir, false, nil)), which would
// refuse a damaged file before any decoder sees it: the decoders' own defenses are what
// the callers test.
func readEverything(dir string) error {
	d, err := open(dir, false, nil)
	if err != nil {
		return err
	}
	if _, err := d.Occurrences(); err != nil {
		return err
	}
	if err := d.Rows(ReadOptions{BatchRows: 16}, func(*Row) error { return nil }); err != nil {
		return err
	}
	_, err = Inspect(d)
	return err
}

// smallDataset writes a small one-part dataset and returns its directory and file names.
func smallDataset(t testing.TB, format Format) (dir, rows, occ string) {
	dir = t.TempDir()
	g := rowGen{task: TaskTile, maxNodes: 6, configs: 4}
	writeShard(t, dir, format, memory.DefaultAllocator, g, testUnits(9, 8, 2, 12), 0, 1, 100)
	rows, occ = PartFileNames(TaskTile, 0, 1, 0, format)
	return dir, rows, occ
}

// TestCorruptFiles truncates and damages real files: every error must be one line naming
// the file, and nothing may panic.
func TestCorruptFiles(t *testing.T) {
	for _, format := range formats {
		for _, which := range []string{"rows", "occ"} {
			t.Run(string(format)+"/"+which, func(t *testing.T) {
				src, rows, occ := smallDataset(t, format)
				name := rows
				if which == "occ" {
					name = occ
				}
				orig, err := os.ReadFile(filepath.Join(src, name))
				if err != nil {
					t.Fatal(err)
				}
				check := func(what string, data []byte, mustFail bool) (failed bool) {
					dir := t.TempDir()
					for _, n := range []string{rows, occ} {
						b, _ := os.ReadFile(filepath.Join(src, n))
						if n == name {
							b = data
						}
						if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
							t.Fatal(err)
						}
					}
					err := readEverything(dir)
					if err == nil {
						if mustFail {
							t.Errorf("%s: no error", what)
						}
						return false
					}
					msg := err.Error()
					if os.Getenv("SHOW_ERRORS") != "" {
						t.Log(msg)
					}
					if !strings.Contains(msg, filepath.Join(dir, name)) || strings.Contains(msg, "\n") {
						t.Errorf("%s: error %q is not one line naming the file", what, msg)
					}
					return true
				}
				n := len(orig)
				for _, off := range []int{0, 1, 6, 8, n / 4, n / 2, 3 * n / 4, n - 12, n - 6, n - 1} {
					check(fmt.Sprintf("truncated at %d of %d", off, n), orig[:off], true)
				}
				// Random damage: 1 to 12 bytes set to random values. (Before the footer and
				// message verifier, such inputs made arrow-go allocate hundreds of GB.)
				rng := rand.New(rand.NewPCG(uint64(n), 3))
				detected, trials := 0, 150
				for i := 0; i < trials; i++ {
					b := append([]byte(nil), orig...)
					what := "bytes changed:"
					for range 1 + rng.IntN(12) {
						pos := rng.IntN(n)
						b[pos] = byte(rng.IntN(256))
						what += fmt.Sprintf(" %d", pos)
					}
					if check(what, b, false) {
						detected++
					}
				}
				// Undetected changes hit bytes no reader looks at, such as the copy of
				// the schema before the first batch (readers use the footer's) and
				// padding.
				t.Logf("%d of %d random damages detected", detected, trials)
			})
		}
	}
}

// TestOpenErrors covers directories that are not datasets.
func TestOpenErrors(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("missing directory opened")
	}
	empty := t.TempDir()
	if _, err := Open(empty); err == nil || !strings.Contains(err.Error(), "no complete dataset files") {
		t.Errorf("empty directory: %v", err)
	}
	dir, _, occ := smallDataset(t, FormatArrow)
	if err := os.Remove(filepath.Join(dir, occ)); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), occ) {
		t.Errorf("missing occurrences file: %v", err)
	}
	// A rows file from another run's directory is refused, naming it.
	dir2, _, _ := smallDataset(t, FormatArrow)
	other := t.TempDir()
	p := testProv(TaskTile, 0, 1)
	p.Seed = 99
	w, err := NewWriter(WriterOptions{Dir: other, Provenance: p})
	if err != nil {
		t.Fatal(err)
	}
	for u := int64(0); u < 2; u++ {
		if err := w.WritePart(u, u, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	r1, o1 := PartFileNames(TaskTile, 0, 1, 1, FormatArrow)
	b1, _ := os.ReadFile(filepath.Join(other, r1))
	b2, _ := os.ReadFile(filepath.Join(other, o1))
	os.WriteFile(filepath.Join(dir2, r1), b1, 0o644)
	os.WriteFile(filepath.Join(dir2, o1), b2, 0o644)
	// Without the manifest check, the provenance check refuses them.
	if _, err := open(dir2, false, nil); err == nil || !strings.Contains(err.Error(), "seed") || !strings.Contains(err.Error(), r1) {
		t.Errorf("mixed runs: %v", err)
	}
	// With it, part 1 is the shard's uncommitted next part (as a writer killed before
	// committing it leaves it): not read.
	if d, err := Open(dir2); err != nil || len(d.Files) != 1 {
		t.Errorf("uncommitted part: %v", err)
	}
	// As any other part number, it is a stray file.
	r5, _ := PartFileNames(TaskTile, 0, 1, 5, FormatArrow)
	if err := os.Rename(filepath.Join(dir2, r1), filepath.Join(dir2, r5)); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir2); err == nil || !strings.Contains(err.Error(), r5) || !strings.Contains(err.Error(), "not listed in") {
		t.Errorf("stray part file: %v", err)
	}
	// Reading the train part needs a split.
	dir3, _, _ := smallDataset(t, FormatArrow)
	d, err := Open(dir3)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Rows(ReadOptions{Part: Train}, func(*Row) error { return nil }); err == nil {
		t.Error("Train without a split accepted")
	}
}

// FuzzOpen feeds damaged files to Open and the readers: they must return errors, never
// panic. The seeds are a real small dataset's files (with little metadata, so that inputs
// are small); which picks the file the input replaces (rows or occurrences, Arrow or
// Parquet). Run it with a short -fuzzminimizetime: minimizing kilobyte inputs is slow.
func FuzzOpen(f *testing.F) {
	type part struct{ dir, rows, occ string }
	var parts []part
	for _, format := range formats {
		dir := f.TempDir()
		g := rowGen{task: TaskTile, maxNodes: 2, configs: 2, lean: true}
		writeShard(f, dir, format, memory.DefaultAllocator, g, testUnits(9, 3, 2, 4), 0, 1, 100)
		rows, occ := PartFileNames(TaskTile, 0, 1, 0, format)
		parts = append(parts, part{dir, rows, occ})
		for i, name := range []string{rows, occ} {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b, uint8(len(parts)-1)*2+uint8(i))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		p := parts[int(which/2)%len(parts)]
		target := p.rows
		if which%2 == 1 {
			target = p.occ
		}
		dir := t.TempDir()
		for _, n := range []string{p.rows, p.occ} {
			b := data
			if n != target {
				var err error
				if b, err = os.ReadFile(filepath.Join(p.dir, n)); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := readEverything(dir); err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("error is not one line: %q", err)
		}
	})
}

// benchDataset synthesizes a dataset of rows×configs samples in dir from real kernels
// (graphs and config features of compiled zoo models), perturbed per row so that rows do
// not repeat, with random runtimes.
func benchDataset(b *testing.B, dir string, format Format, rows, configs int) {
	chip, err := tpusim.Preset(tpusim.DefaultChip)
	if err != nil {
		b.Fatal(err)
	}
	type kernel struct {
		g    features.Graph
		cfgs [][]float32
		name []string
	}
	var pool []kernel
	for _, name := range []string{"bert_tiny_s128_b32", "dlrm_criteo_b64", "lstm_lm_h256_t16_b32"} {
		m, err := zoo.Resolve(name)
		if err != nil {
			b.Fatal(err)
		}
		p, err := compiler.Compile(m, nil, compiler.Options{Target: chip.Target})
		if err != nil {
			b.Fatal(err)
		}
		for _, tc := range p.Space.Tile {
			k := p.KernelByName(tc.Kernels[0])
			kk := kernel{g: features.OfKernel(k, chip.Target)}
			for _, o := range tc.Planned() {
				for _, fl := range o.FlagOptions() {
					if c, err := o.WithFlags(fl); err == nil {
						kk.cfgs = append(kk.cfgs, features.Config(c))
						kk.name = append(kk.name, c.Config.String())
					}
				}
			}
			if len(kk.cfgs) > 0 {
				pool = append(pool, kk)
			}
		}
	}
	if len(pool) == 0 {
		b.Fatal("no kernels")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	perturb := func(dst, src []float32) []float32 {
		shift := float32(rng.IntN(4))
		dst = append(dst[:0], src...)
		for i, v := range dst {
			if v > 1 { // log-scaled sizes and counts: a differently sized kernel
				dst[i] = v + shift
			}
		}
		return dst
	}
	w, err := NewWriter(WriterOptions{Dir: dir, Format: format, Provenance: testProv(TaskTile, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	const perPart = 2000
	batch := make([]Row, 0, perPart)
	for i := 0; i < rows; i++ {
		k := pool[rng.IntN(len(pool))]
		r := Row{Program: fmt.Sprintf("model%02d", i%40), Unit: int64(i), Task: TaskTile, KernelKey: fmt.Sprintf("%016x", rng.Uint64()),
			KernelName: fmt.Sprintf("fusion.%d", i%300), Kind: "kLoop"}
		r.Graph = features.Graph{Opcodes: k.g.Opcodes, EdgeSrc: k.g.EdgeSrc, EdgeDst: k.g.EdgeDst,
			NodeFeats: perturb(nil, k.g.NodeFeats), KernelFeats: perturb(nil, k.g.KernelFeats)}
		for j := 0; j < configs; j++ {
			c := rng.IntN(len(k.cfgs))
			r.Configs = append(r.Configs, k.name[c])
			r.ConfigFeats = append(r.ConfigFeats, perturb(nil, k.cfgs[c]))
			t := 1e3 + rng.ExpFloat64()*1e5
			r.RuntimesNs = append(r.RuntimesNs, t)
			r.AnalyticalNs = append(r.AnalyticalNs, t*(0.5+rng.Float64()))
		}
		batch = append(batch, r)
		if len(batch) == perPart || i == rows-1 {
			if err := w.WritePart(batch[0].Unit, batch[len(batch)-1].Unit, batch, nil); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// BenchmarkReadRows1M reads a dataset of 1M samples (20k kernels × 50 configs, graphs of
// real kernels) in each format: "cold" opens the dataset for every read, so the first pass
// over the keys is included (a trainer's first epoch); "warm" reads an opened dataset
// again (later epochs). It reports rows/s, samples/s, the peak heap in use during the
// read (and its growth over the heap before), and the bytes per sample on disk.
func BenchmarkReadRows1M(b *testing.B) {
	const rows, configs = 20000, 50
	for _, format := range formats {
		dir := b.TempDir()
		benchDataset(b, dir, format, rows, configs)
		var disk int64
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if fi, err := e.Info(); err == nil {
				disk += fi.Size()
			}
		}
		for _, warm := range []bool{false, true} {
			name := string(format) + "/cold"
			if warm {
				name = string(format) + "/warm"
			}
			b.Run(name, func(b *testing.B) {
				var ms runtime.MemStats
				var n, samples int64
				read := func(d *Dataset) {
					err := d.Rows(ReadOptions{}, func(r *Row) error {
						n++
						samples += int64(r.Samples())
						return nil
					})
					if err != nil {
						b.Fatal(err)
					}
				}
				open := func() *Dataset {
					d, err := Open(dir)
					if err != nil {
						b.Fatal(err)
					}
					return d
				}
				var d *Dataset
				if warm {
					d = open()
					read(d)
				}
				runtime.GC()
				runtime.ReadMemStats(&ms)
				base := ms.HeapInuse
				peak := base
				n, samples = 0, 0
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if !warm {
						d = open()
					}
					err := d.Rows(ReadOptions{}, func(r *Row) error {
						n++
						samples += int64(r.Samples())
						if n%1000 == 0 {
							runtime.ReadMemStats(&ms)
							peak = max(peak, ms.HeapInuse)
						}
						return nil
					})
					if err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				if n != int64(rows*b.N) {
					b.Fatalf("read %d rows, want %d", n, rows*b.N)
				}
				s := b.Elapsed().Seconds()
				b.ReportMetric(float64(n)/s, "rows/s")
				b.ReportMetric(float64(samples)/s, "samples/s")
				b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
				b.ReportMetric(float64(peak-base)/(1<<20), "read-heap-MiB")
				b.ReportMetric(float64(disk)/float64(rows*configs), "disk-B/sample")
			})
		}
	}
}

// countingAlloc counts the allocations made through it.
type countingAlloc struct {
	*memory.CheckedAllocator
	n *int
}

func (a countingAlloc) Allocate(size int) []byte {
	*a.n++
	return a.CheckedAllocator.Allocate(size)
}

// TestReadsUseTheCallersAllocator: OpenWith's allocator serves the reads (Occurrences used
// memory.DefaultAllocator whatever the caller gave), and every buffer is released.
func TestReadsUseTheCallersAllocator(t *testing.T) {
	dir := tinyDataset(t)
	checked := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer checked.AssertSize(t, 0)
	var n int
	d, err := OpenWith(dir, OpenOptions{Alloc: countingAlloc{checked, &n}})
	if err != nil {
		t.Fatal(err)
	}
	afterOpen := n // reading the files' schemas may allocate no buffer at all
	if _, err := d.Occurrences(); err != nil {
		t.Fatal(err)
	}
	afterOcc := n
	if afterOcc == afterOpen {
		t.Error("Occurrences allocated nothing from the caller's allocator")
	}
	rows := 0
	if err := d.Rows(ReadOptions{}, func(*Row) error { rows++; return nil }); err != nil {
		t.Fatal(err)
	}
	if rows == 0 || n == afterOcc {
		t.Errorf("Rows read %d rows with %d allocations from the caller's allocator", rows, n-afterOcc)
	}
}
