package gen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/internal/atomicfile"
	"github.com/tpucost/tpucost/internal/dirlock"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/zoo"
)

func genOpts(t *testing.T, task dataset.Task, dir string) Options {
	t.Helper()
	chip, err := tpusim.Preset("v4")
	if err != nil {
		t.Fatal(err)
	}
	variants := 2
	if !task.Relative() {
		variants = 1 // fusion and layout vary programs through Configs
	}
	return Options{Task: task, Models: []string{"mlp_96x2_b1", "resnet18_b1", "dlrm_bag4_d32_b8"}, Out: dir,
		Configs: 8, Variants: variants, Seed: 7, Chip: chip, MaxRowsPerPart: 16, Workers: 1}
}

// dirFiles returns the names and bytes of the complete files of a dataset directory.
func dirFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

func sameFiles(t *testing.T, what string, a, b map[string][]byte) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d files vs %d", what, len(a), len(b))
	}
	for name, x := range a {
		if !bytes.Equal(x, b[name]) {
			t.Fatalf("%s: %s differs", what, name)
		}
	}
}

func TestGenerateDeterministicAcrossWorkers(t *testing.T) {
	for _, task := range dataset.Tasks() {
		t.Run(string(task), func(t *testing.T) {
			var ref map[string][]byte
			var refRes *Result
			for _, workers := range []int{1, 2, 4} {
				dir := t.TempDir()
				o := genOpts(t, task, dir)
				o.Workers = workers
				res, err := Generate(context.Background(), o)
				if err != nil {
					t.Fatal(err)
				}
				if res.Rows == 0 || res.Samples < res.Rows {
					t.Fatalf("%d rows, %d samples", res.Rows, res.Samples)
				}
				// Every distinct kernel of every unit is an occurrence; those that got
				// no row were duplicates, whichever worker met them first.
				d, err := dataset.Open(dir)
				if err != nil {
					t.Fatal(err)
				}
				occ, err := d.Occurrences()
				if err != nil {
					t.Fatal(err)
				}
				if want := int64(len(occ)) - res.Rows; res.DuplicateKernels != want || want == 0 {
					t.Errorf("workers=%d: %d duplicate kernels, want %d (occurrences %d - rows %d), and more than 0",
						workers, res.DuplicateKernels, want, len(occ), res.Rows)
				}
				files := dirFiles(t, dir)
				if ref == nil {
					ref, refRes = files, res
					continue
				}
				sameFiles(t, "workers", ref, files)
				if res.DuplicateKernels != refRes.DuplicateKernels {
					t.Errorf("workers=%d: %d duplicate kernels, workers=1: %d", workers, res.DuplicateKernels, refRes.DuplicateKernels)
				}
			}
		})
	}
}

// TestGenerateRowsAreValid checks a run's rows, and that its provenance records the zoo
// family of each zoo model, so that a family split of its data needs no zoo.
func TestGenerateRowsAreValid(t *testing.T) {
	dir := t.TempDir()
	o := genOpts(t, dataset.TaskTile, dir)
	if _, err := Generate(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	d, err := dataset.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range o.Models {
		m, err := zoo.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if f, err := d.Provenance.Family(name); err != nil || f != m.Family {
			t.Errorf("%s: recorded family %q (%v), the zoo's is %q", name, f, err, m.Family)
		}
	}
	if _, err := dataset.NewSplit(d, dataset.SplitFamily, 0.3, 1); err != nil {
		t.Errorf("family split of generated data: %v", err)
	}
	keys := map[string]bool{}
	err = d.Rows(dataset.ReadOptions{}, func(r *dataset.Row) error {
		if keys[r.KernelKey] {
			t.Errorf("kernel %s twice", r.KernelKey)
		}
		keys[r.KernelKey] = true
		if err := r.Graph.Validate(); err != nil {
			t.Errorf("%s: %v", r.KernelKey, err)
		}
		if len(r.Configs) == 0 || len(r.Configs) > o.Configs || len(r.ConfigFeats) != len(r.Configs) {
			t.Errorf("%s: %d configs", r.KernelKey, len(r.Configs))
		}
		for i, ns := range r.RuntimesNs {
			if !(ns > 0) || !(r.AnalyticalNs[i] > 0) {
				t.Errorf("%s config %d: runtime %v analytical %v", r.KernelKey, i, ns, r.AnalyticalNs[i])
			}
		}
		if len(slices.Compact(slices.Sorted(slices.Values(r.Configs)))) != len(r.Configs) {
			t.Errorf("%s: repeated config", r.KernelKey)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	occ, err := d.Occurrences()
	if err != nil {
		t.Fatal(err)
	}
	for _, oc := range occ {
		if !keys[oc.KernelKey] {
			t.Errorf("occurrence of %s in %s has no row", oc.KernelKey, oc.Program)
		}
	}
}

// rowsByKey reads a dataset into (key -> program, configs, runtimes) for comparisons.
func rowsByKey(t *testing.T, dir string) map[string]string {
	t.Helper()
	d, err := dataset.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	err = d.Rows(dataset.ReadOptions{}, func(r *dataset.Row) error {
		out[r.KernelKey] = r.Program + "|" + r.KernelName + "|" + stringsOf(r.Configs) + floatsOf(r.RuntimesNs)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func stringsOf(s []string) string {
	var b bytes.Buffer
	for _, x := range s {
		b.WriteString(x)
		b.WriteByte(',')
	}
	return b.String()
}

func floatsOf(f []float64) string {
	return fmt.Sprint(f)
}

func TestShardsUnionEqualsSingleRun(t *testing.T) {
	single := t.TempDir()
	if _, err := Generate(context.Background(), genOpts(t, dataset.TaskFusion, single)); err != nil {
		t.Fatal(err)
	}
	// Three shards into one directory, as three machines writing to shared storage would.
	sharded := t.TempDir()
	for i := 0; i < 3; i++ {
		o := genOpts(t, dataset.TaskFusion, sharded)
		o.ShardIndex, o.ShardCount = i, 3
		if _, err := Generate(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	a, b := rowsByKey(t, single), rowsByKey(t, sharded)
	if len(a) != len(b) {
		t.Fatalf("single run %d rows, shards %d", len(a), len(b))
	}
	for k, v := range a {
		if b[k] != v {
			t.Fatalf("kernel %s differs between the single run and the shards", k)
		}
	}
	// Occurrences agree too.
	occ := func(dir string) []string {
		d, _ := dataset.Open(dir)
		oc, err := d.Occurrences()
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, o := range oc {
			s = append(s, fmt.Sprint(o.Program, o.KernelKey, o.Unit, o.Variant, o.Count))
		}
		sort.Strings(s)
		return s
	}
	if !slices.Equal(occ(single), occ(sharded)) {
		t.Error("occurrences differ between the single run and the shards")
	}
}

func TestGenerateResumesAfterInterrupt(t *testing.T) {
	ref := t.TempDir()
	refRes, err := Generate(context.Background(), genOpts(t, dataset.TaskTile, ref))
	if err != nil {
		t.Fatal(err)
	}
	want := dirFiles(t, ref)
	if len(want) < 4 {
		t.Fatalf("reference run wrote %d files; the test needs several parts", len(want))
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	o := genOpts(t, dataset.TaskTile, dir)
	o.Progress = func(p Progress) {
		if p.UnitsDone == p.UnitsTotal-1 {
			cancel() // Ctrl-C before the last unit
		}
	}
	_, err = Generate(ctx, o)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: err = %v", err)
	}
	got := dirFiles(t, dir)
	if len(got) == 0 || len(got) >= len(want) {
		t.Fatalf("interrupted run left %d files (complete run: %d)", len(got), len(want))
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("interrupted run left %s, which a complete run does not have", name)
		}
	}
	// A leftover temporary file, as kill -9 during a write leaves it.
	os.WriteFile(filepath.Join(dir, "tile-0of1-00099.arrow.tmp"), []byte("partial"), 0o644)
	o.Progress = nil
	res, err := Generate(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Resumed == 0 {
		t.Error("the second run did not resume")
	}
	// The summary is the dataset's (every run's rows, as one run reports them), with the
	// resumed run's share beside it.
	if res.Rows != refRes.Rows || res.Samples != refRes.Samples || res.RunRows >= res.Rows || res.RunRows == 0 ||
		res.RunUnits != res.Units-res.Resumed || res.RunSamples >= res.Samples {
		t.Errorf("resumed run reports %d rows (this run %d), %d samples (this run %d), %d units (this run %d, %d resumed); one run: %d rows, %d samples",
			res.Rows, res.RunRows, res.Samples, res.RunSamples, res.Units, res.RunUnits, res.Resumed, refRes.Rows, refRes.Samples)
	}
	sameFiles(t, "resumed", want, dirFiles(t, dir))
}

func TestGenerateOptionErrors(t *testing.T) {
	base := genOpts(t, dataset.TaskTile, t.TempDir())
	for _, tc := range []struct {
		name string
		mod  func(*Options)
	}{
		{"task", func(o *Options) { o.Task = "speed" }},
		{"models", func(o *Options) { o.Models = nil }},
		{"shard", func(o *Options) { o.ShardIndex, o.ShardCount = 3, 3 }},
		{"format", func(o *Options) { o.Format = "csv" }},
		{"model name", func(o *Options) { o.Models = []string{"no_such_model"} }},
	} {
		o := base
		tc.mod(&o)
		if _, err := Generate(context.Background(), o); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}

// TestGenOptionsValidate: every out-of-range option is an error naming its gen flag and
// the valid range, never a quiet default.
func TestGenOptionsValidate(t *testing.T) {
	base := genOpts(t, dataset.TaskTile, t.TempDir())
	base.Format, base.Noise.Runs, base.ShardCount = dataset.FormatArrow, 1, 1
	if err := base.Validate(); err != nil {
		t.Fatalf("valid options: %v", err)
	}
	for _, tc := range []struct {
		mod  func(*Options)
		want string // the flag and the range the error must state
	}{
		{func(o *Options) { o.Configs = 0 }, "--configs 0: want an integer in [1, 65536]"},
		{func(o *Options) { o.Configs = -1 }, "--configs -1: want an integer in [1, 65536]"},
		{func(o *Options) { o.Configs = MaxConfigs + 1 }, "--configs 65537"},
		{func(o *Options) { o.Variants = 0 }, "--variants 0: want an integer in [1, 65536]"},
		{func(o *Options) { o.Task, o.Variants = dataset.TaskFusion, 3 }, "--variants 3: only the tile and flags tasks"},
		{func(o *Options) { o.Workers = -1 }, "--workers -1: want an integer in [0, 1024]"},
		{func(o *Options) { o.MaxRowsPerPart = 0 }, "--part-rows 0: want an integer in [1, 1048576]"},
		{func(o *Options) { o.Noise.Runs = 0 }, "--runs 0: want an integer in [1, 1000]"},
		{func(o *Options) { o.Noise.NoiseSigma = -0.1 }, "--noise -0.1: want a sigma in [0, 1]"},
		{func(o *Options) { o.Noise.NoiseSigma = math.NaN() }, "--noise NaN"},
		{func(o *Options) { o.ShardIndex, o.ShardCount = 3, 3 }, `--shard "3/3": want i/n`},
		{func(o *Options) { o.ShardIndex, o.ShardCount = 0, 0 }, `--shard "0/0": want i/n`},
		{func(o *Options) { o.ShardIndex, o.ShardCount = -1, 2 }, `--shard "-1/2"`},
		{func(o *Options) { o.Task = "speed" }, `--task "speed": want tile, flags, fusion or layout`},
		{func(o *Options) { o.Format = "csv" }, `--format "csv": want arrow or parquet`},
		{func(o *Options) { o.Models = nil }, "--models a,b or --all"},
		{func(o *Options) { o.Models = []string{"a", "a"} }, "--models: a is listed twice"},
		{func(o *Options) { o.Models = []string{"a", " "} }, "--models: model 2 of 2 is an empty name"},
		{func(o *Options) { o.Out = "" }, "--out"},
	} {
		o := base
		o.Models = slices.Clone(base.Models)
		tc.mod(&o)
		err := o.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v", tc.want, err)
		}
		// Generate gives zero values their documented defaults (so library callers may
		// leave options unset), but accepts no other bad value.
		zero := o.Configs == 0 || o.Variants == 0 || o.MaxRowsPerPart == 0 || o.Noise.Runs == 0 || o.ShardCount == 0
		if !zero {
			if _, gerr := Generate(context.Background(), o); gerr == nil || !strings.Contains(gerr.Error(), tc.want) {
				t.Errorf("%s: Generate: %v", tc.want, gerr)
			}
		}
	}
	for _, s := range []string{"", "1", "1/", "/2", "2/2", "-1/2", "0/0", "a/b", "0/2x", "1/2/3", " 0/2"} {
		if _, _, err := ParseShard(s); err == nil || !strings.Contains(err.Error(), "--shard") {
			t.Errorf("ParseShard(%q) = %v", s, err)
		}
	}
	if i, n, err := ParseShard("2/5"); err != nil || i != 2 || n != 5 {
		t.Errorf("ParseShard(2/5) = %d, %d, %v", i, n, err)
	}
}

// TestShardsWriteOneDirectoryConcurrently runs the shards of one run at the same time into
// one directory (each holds its own shard's lock and manifest): all succeed, nothing
// temporary is left, and the union equals a single run.
func TestShardsWriteOneDirectoryConcurrently(t *testing.T) {
	const shards = 3
	single := t.TempDir()
	if _, err := Generate(context.Background(), genOpts(t, dataset.TaskTile, single)); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, shards)
	for i := range shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := genOpts(t, dataset.TaskTile, dir)
			o.ShardIndex, o.ShardCount = i, shards
			_, errs[i] = Generate(context.Background(), o)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("shard %d: %v", i, err)
		}
	}
	a, b := rowsByKey(t, single), rowsByKey(t, dir)
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("single run %d kernels, concurrent shards %d", len(a), len(b))
	}
	for k, r := range a {
		if b[k] != r {
			t.Errorf("kernel %s differs: %s vs %s", k, r, b[k])
		}
	}
	for name := range dirFiles(t, dir) {
		if strings.HasSuffix(name, atomicfile.TmpSuffix) || strings.HasSuffix(name, dirlock.Suffix) {
			t.Errorf("%s left behind", name)
		}
	}
}
