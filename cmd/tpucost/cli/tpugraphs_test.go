package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/dataset/tpugraphs"
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
		{[]string{"import", "tpugraphs", src, "--out", out, "--collection", "tiles"}, `--collection "tiles": want tile or layout`},
		{[]string{"import", "tpugraphs", src, "--out", out, "--format", "csv"}, `--format "csv": want`},
		{[]string{"export", "tpugraphs", out + "/tile-xla-valid"}, "--out: required"},
		{[]string{"export", "tpugraphs", out + "/tile-xla-valid", "--out", npz, "--split", "family"}, `--split "family": want`},
		{[]string{"export", "tpugraphs", out + "/tile-xla-valid", "--out", npz}, "a program split needs at least 2 programs"},
	} {
		if _, stderr, code := runCLI(c.args...); code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, stderr, c.want)
		}
	}
}

// TestTpuGraphsEndToEnd runs the TpuGraphs workflow of docs/datasets.md on synthetic files of the
// release's layout (tile and layout collections, train/valid/test) and on the real .pb
// tuning runs: import, inspect, train, eval (with the TpuGraphs metrics) and predict
// --data; and the refusals between feature sets.
func TestTpuGraphsEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models")
	}
	root := t.TempDir()
	tileSrc, err := tpugraphs.WriteSyntheticTree(root, tpugraphs.SyntheticOptions{Collection: tpugraphs.CollectionTile, Nodes: 12, Configs: 12, Seed: 1}, 20)
	if err != nil {
		t.Fatal(err)
	}
	layoutSrc, err := tpugraphs.WriteSyntheticTree(root, tpugraphs.SyntheticOptions{Collection: tpugraphs.CollectionLayout, Nodes: 24, Configs: 6, ConfigNodes: 4, Seed: 1}, 10)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "tg")
	run := func(args ...string) string {
		t.Helper()
		stdout, stderr, code := runCLI(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		return stdout
	}
	run("import", "tpugraphs", tileSrc, layoutSrc, "../../../dataset/tpugraphs/testdata/op_tuning_data.pb", "--out", out)
	if s := run("inspect", filepath.Join(out, "tile-xla-train")); !strings.Contains(s, "runtimes measured on hardware, feature set tpugraphs-v1; runtime normalizers recorded") {
		t.Errorf("inspect:\n%s", s)
	}
	models := t.TempDir()
	tileModel, layoutModel, pbModel := filepath.Join(models, "tile"), filepath.Join(models, "layout"), filepath.Join(models, "pb")
	run("train", "--task", "tile", "--data", filepath.Join(out, "tile-xla-train"), "--out", tileModel, "--epochs", "3", "--hidden", "16")
	run("train", "--task", "layout", "--data", filepath.Join(out, "layout-xla-random-train"), "--out", layoutModel, "--epochs", "2", "--hidden", "8",
		"--max-segment-nodes", "16", "--max-configs", "4")
	run("train", "--task", "tile", "--data", filepath.Join(out, "tile-pb"), "--out", pbModel, "--epochs", "2", "--hidden", "16")

	// eval on the release's valid split scores every row, with TpuGraphs' metrics and no
	// analytical baseline (the data has none).
	s := run("eval", "--model", tileModel, "--data", filepath.Join(out, "tile-xla-valid"))
	for _, want := range []string{"held-out valid (all rows)", "TpuGraphs tile/xla: top-1 error", "score (1 - top-5 error)", "no analytical estimates"} {
		if !strings.Contains(s, want) {
			t.Errorf("tile eval lacks %q:\n%s", want, s)
		}
	}
	var res struct {
		Kernels    int             `json:"kernels"`
		Learned    map[string]any  `json:"learned"`
		Analytical json.RawMessage `json:"analytical"`
		Collection string          `json:"collection"`
	}
	if err := json.Unmarshal([]byte(run("eval", "--model", layoutModel, "--data", filepath.Join(out, "layout-xla-random-valid"), "--json")), &res); err != nil {
		t.Fatal(err)
	}
	if res.Kernels != 1 || res.Learned["kendall_tau"] == nil || res.Learned["opa"] == nil || res.Analytical != nil || res.Collection != "layout/xla/random" {
		t.Errorf("layout eval: %+v", res)
	}
	if s := run("eval", "--model", layoutModel, "--data", filepath.Join(out, "layout-xla-random-test")); !strings.Contains(s, "TpuGraphs layout/xla/random: Kendall tau") {
		t.Errorf("layout eval:\n%s", s)
	}
	// The real .pb runs: the model's own test split (its training data, by default).
	if s := run("eval", "--model", pbModel); !strings.Contains(s, "TpuGraphs tile: top-1 error") {
		t.Errorf("pb eval:\n%s", s)
	}
	var pr struct {
		Rows []struct {
			Pick string `json:"pick"`
			Seen bool   `json:"seen_in_training"`
		} `json:"rows"`
		Normalized bool `json:"runtimes_normalized"`
	}
	if err := json.Unmarshal([]byte(run("predict", "--model", tileModel, "--data", filepath.Join(out, "tile-xla-test"), "--json")), &pr); err != nil {
		t.Fatal(err)
	}
	if len(pr.Rows) != 2 || pr.Rows[0].Pick == "" || pr.Rows[0].Seen || !pr.Normalized {
		t.Errorf("predict --data: %+v", pr)
	}
	if s := run("predict", "--model", pbModel, "--data", filepath.Join(out, "tile-pb"), "--rows", "3"); !strings.Contains(s, "3 rows of") {
		t.Errorf("predict --data on the .pb rows:\n%s", s)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--task", "tile", "--data", filepath.Join(out, "tile-xla-train"), "--out", filepath.Join(models, "x"), "--features", "plan"}, "whose config features are read as they are"},
		{[]string{"eval", "--model", tileModel, "--data", filepath.Join(out, "tile-pb")}, "feature schema mismatch: the model reads feature set tpugraphs-v1"},
		{[]string{"eval", "--model", tileModel, "--data", filepath.Join(out, "layout-xla-random-valid")}, "predicts tile"},
		{[]string{"predict", "mlp_96x2_b1", "--model", tileModel}, "it scores rows of that set"},
		{[]string{"tune", "mlp_96x2_b1", "--model", tileModel, "--budget", "3"}, "it scores rows of that set"},
		{[]string{"predict", "--model", tileModel}, "give SRC"},
		{[]string{"predict", "mlp_96x2_b1", "--model", tileModel, "--data", filepath.Join(out, "tile-xla-test")}, "not both"},
	} {
		if _, stderr, code := runCLI(c.args...); code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, stderr, c.want)
		}
	}
}
