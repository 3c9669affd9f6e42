package dataset

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// handRow is a small valid row with the given runtimes.
func handRow(program string, unit int64, key string, runtimes ...float64) Row {
	r := rowGen{task: TaskTile, maxNodes: 2, configs: 0}.row(program, unit, key)
	for i, t := range runtimes {
		r.Configs = append(r.Configs, "c"+string(rune('a'+i)))
		r.ConfigFeats = append(r.ConfigFeats, make([]float32, len(testProv(TaskTile, 0, 1).FeatureSchema.Config)))
		r.RuntimesNs = append(r.RuntimesNs, t)
		r.AnalyticalNs = append(r.AnalyticalNs, t/2)
	}
	return r
}

// writeHandDataset writes two shards by hand: shard 0 has units 0-2, shard 1 has unit 3,
// which repeats kernel A (dropped when reading: unit 0 is smaller).
func writeHandDataset(t *testing.T, dir string, format Format) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	parts := []struct {
		shard       int
		first, last int64
		rows        []Row
		occ         []Occurrence
	}{
		{0, 0, 1, []Row{handRow("p0", 0, "A", 3, 1, 2), handRow("p1", 1, "B", 10)},
			[]Occurrence{{Unit: 0, Program: "p0", KernelKey: "A", Count: 2}, {Unit: 1, Program: "p1", KernelKey: "B", Count: 1}, {Unit: 1, Program: "p1", KernelKey: "A", Count: 1}}},
		{0, 2, 2, []Row{handRow("p0", 2, "C", 7, 5)},
			[]Occurrence{{Unit: 2, Program: "p0", Variant: 1, KernelKey: "C", Count: 1}}},
		{1, 3, 3, []Row{handRow("p2", 3, "A", 100)},
			[]Occurrence{{Unit: 3, Program: "p2", KernelKey: "A", Count: 4}}},
	}
	writers := map[int]*Writer{}
	for _, p := range parts {
		w := writers[p.shard]
		if w == nil {
			var err error
			if w, err = NewWriter(WriterOptions{Dir: dir, Format: format, Provenance: testProv(TaskTile, p.shard, 2), Alloc: mem}); err != nil {
				t.Fatal(err)
			}
			writers[p.shard] = w
		}
		if err := w.WritePart(p.first, p.last, p.rows, p.occ); err != nil {
			t.Fatal(err)
		}
	}
}

func TestInspect(t *testing.T) {
	for _, format := range formats {
		t.Run(string(format), func(t *testing.T) {
			dir := t.TempDir()
			writeHandDataset(t, dir, format)
			d, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Inspect(d)
			if err != nil {
				t.Fatal(err)
			}
			// Kept rows: A (unit 0: 3, 1, 2), B (10), C (7, 5); the median of
			// {1, 2, 3, 5, 7, 10} is (3+5)/2.
			want := map[string]any{
				"rows": s.Rows == 4, "kernels": s.Kernels == 3, "programs": s.Programs == 3, "units": s.Units == 4,
				"occurrences": s.Occurrences == 5, "samples": s.Samples == 6, "tasks": reflect.DeepEqual(s.Tasks, []Task{TaskTile}),
				"runtime":  s.RuntimeNs == RuntimeStats{Min: 1, Median: 4, Max: 10},
				"versions": s.SchemaVersion == SchemaVersion && s.FeatureVersion == d.Provenance.FeatureSchema.Version,
				"files":    len(s.Files) == 3 && s.Files[2].Shard == 1 && s.Files[2].UnitFirst == 3 && s.Files[0].Rows == 2,
				"shards":   len(s.Shards) == 2 && s.Shards[0].Files == 2 && s.Shards[1].Files == 1 && s.Shards[1].Rows == 1,
				"schema":   len(s.Schema) == 15 && s.Schema[13].Name == ColRuntimeNs,
				"format":   s.Format == format && s.Bytes > 0,
			}
			for name, ok := range want {
				if ok != true {
					t.Errorf("%s wrong in %+v", name, s)
				}
			}
			b, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"rows", "kernels", "programs", "samples", "tasks", "runtime_ns", "schema_version", "feature_version", "provenance", "files", "shards", "schema"} {
				if _, ok := m[k]; !ok {
					t.Errorf("JSON summary has no %q", k)
				}
			}
			// The row kept for A is unit 0's.
			rows := readAll(t, d, ReadOptions{})
			if a := rows["A"]; a.Unit != 0 || a.Program != "p0" || len(a.RuntimesNs) != 3 {
				t.Errorf("kept A from unit %d (%s)", a.Unit, a.Program)
			}
		})
	}
}

// checkJSONKeys checks that every key of v's JSON form (recursively) is snake_case and
// that each of want is among them.
func checkJSONKeys(t *testing.T, what string, v any, want ...string) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var tree any
	if err := json.Unmarshal(b, &tree); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			for k, v := range x {
				seen[k] = true
				if !snakeCase.MatchString(k) {
					t.Errorf("%s: JSON key %q is not snake_case", what, k)
				}
				walk(v)
			}
		case []any:
			for _, v := range x {
				walk(v)
			}
		}
	}
	walk(tree)
	for _, k := range want {
		if !seen[k] {
			t.Errorf("%s: no JSON key %q in %s", what, k, b)
		}
	}
}

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// TestJSONNames checks the --json form of Summary (inspect): keys are snake_case and
// quantities carry their unit.
func TestJSONNames(t *testing.T) {
	dir := tinyDataset(t)
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Inspect(d)
	if err != nil {
		t.Fatal(err)
	}
	checkJSONKeys(t, "inspect", s, "size_bytes", "min_ns", "median_ns", "max_ns", "runtime_ns", "vmem_bytes", "sha256", "verified_files")
	// The summary reports what Open verified: every file, against the shard's manifest.
	b, err := os.ReadFile(filepath.Join(dir, s.Files[0].Name))
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(b); s.Files[0].SHA256 != hex.EncodeToString(sum[:]) || s.VerifiedFiles != 2*len(s.Files) ||
		len(s.Manifests) != 1 || s.Manifests[0] != ManifestName(TaskTile, 0, 1) {
		t.Errorf("checksums in the summary: %s, %d files verified, manifests %v", s.Files[0].SHA256, s.VerifiedFiles, s.Manifests)
	}
}

// TestCompileSettingsLine: inspect's text names the non-default compile settings a
// generated dataset records (gen --fusion, --staging, --shapes) on one "compile" line,
// and prints no such line for a default dataset.
func TestCompileSettingsLine(t *testing.T) {
	if got := compileSettings(Provenance{}); got != "" {
		t.Errorf("default provenance: %q, want no settings", got)
	}
	p := Provenance{Fusion: "partition", Staging: "auto", Shapes: "seq=64,128"}
	if got, want := compileSettings(p), "fusion partition, staging auto, shapes seq=64,128"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
