package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	code := Main(args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

// TestImportExportTpuGraphs drives both commands once: import a real .pb and a TpuGraphs
// npz, export the npz dataset, and check the flag errors.
func TestImportExportTpuGraphs(t *testing.T) {
	src := filepath.Join(t.TempDir(), "npz", "tile", "xla", "valid")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../../../dataset/tpugraphs/testdata/tile_small.npz")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "tile_small.npz"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := runCLI("import", "tpugraphs", src, "../../../dataset/tpugraphs/testdata/op_tuning_data.pb", "--out", out, "--json")
	if code != 0 {
		t.Fatalf("import: exit %d: %s", code, stderr)
	}
	var rep struct {
		Datasets []struct {
			Dir     string `json:"dir"`
			Rows    int    `json:"rows"`
			Samples int    `json:"samples"`
		} `json:"datasets"`
		PB struct {
			ErrorRuns    int `json:"error_runs"`
			ImportedRuns int `json:"imported_runs"`
		} `json:"pb"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	// tile-pb (15 modules, 752 timed runs; 2 error runs skipped), tile-xla-valid (1 file, 3 configs)
	if len(rep.Datasets) != 2 || rep.Datasets[0].Rows != 15 || rep.Datasets[1].Samples != 3 || rep.PB.ErrorRuns != 2 || rep.PB.ImportedRuns != 752 {
		t.Errorf("report %+v", rep)
	}
	npz := filepath.Join(t.TempDir(), "npz")
	if _, stderr, code := runCLI("export", "tpugraphs", filepath.Join(out, "tile-xla-valid"), "--out", npz, "--split", "none"); code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	if files, _ := filepath.Glob(filepath.Join(npz, "tile_small_*.npz")); len(files) != 1 {
		t.Errorf("exported %v", files)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"import", "tpugraphs", src}, "--out: required"},
		{[]string{"import", "tpugraphs", src, "--out", out, "--collection", "tiles"}, `--collection: got "tiles", want tile or layout`},
		{[]string{"import", "tpugraphs", src, "--out", out, "--format", "csv"}, `--format: got "csv"`},
		{[]string{"export", "tpugraphs", out + "/tile-xla-valid"}, "--out: required"},
		{[]string{"export", "tpugraphs", out + "/tile-xla-valid", "--out", npz, "--split", "family"}, `--split: got "family"`},
		{[]string{"export", "tpugraphs", out + "/tile-xla-valid", "--out", npz}, "a program split needs at least 2 programs"},
	} {
		if _, stderr, code := runCLI(c.args...); code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, stderr, c.want)
		}
	}
}
