package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/dataset/tpugraphs"
)

// TestUnlabelledTpuGraphs: TpuGraphs' test split (every config_runtime 0) imports as an
// unlabelled dataset; inspect says so; train and eval refuse it with one line; predict
// scores it.
func TestUnlabelledTpuGraphs(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	root := t.TempDir()
	tree, err := tpugraphs.WriteSyntheticTree(root, tpugraphs.SyntheticOptions{Collection: tpugraphs.CollectionTile, Nodes: 8, Configs: 6, Seed: 3}, 10)
	if err != nil {
		t.Fatal(err)
	}
	// The test split as the release ships it: the same files with every runtime 0.
	testFiles, err := filepath.Glob(filepath.Join(tree, "test", "*.npz"))
	if err != nil || len(testFiles) == 0 {
		t.Fatalf("synthetic test files %v: %v", testFiles, err)
	}
	unlSrc := filepath.Join(t.TempDir(), "npz", "tile", "xla", "test")
	if err := os.MkdirAll(unlSrc, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range testFiles {
		z, err := tpugraphs.ReadNPZFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rt := z["config_runtime"]
		z["config_runtime"] = &tpugraphs.Array{Shape: rt.Shape, Descr: "<i8", Ints: make([]int64, rt.Shape[0])}
		if err := tpugraphs.WriteNPZFile(filepath.Join(unlSrc, filepath.Base(f)), z, false); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) string {
		t.Helper()
		stdout, stderr, code := runCLI(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		return stdout
	}
	data := t.TempDir()
	train, unl := filepath.Join(data, "train"), filepath.Join(data, "test")
	run("import", "tpugraphs", filepath.Join(tree, "train"), "--out", train)
	if s := run("import", "tpugraphs", unlSrc, "--out", unl); !strings.Contains(s, unl+": unlabelled") {
		t.Errorf("import does not say the data is unlabelled:\n%s", s)
	}
	if s := run("inspect", unl); !strings.Contains(s, "unlabelled (every runtime is 0") || strings.Contains(s, "runtimes measured on hardware") {
		t.Errorf("inspect:\n%s", s)
	}
	var ins struct {
		Provenance struct {
			Unlabelled bool `json:"unlabelled"`
		} `json:"provenance"`
	}
	if err := json.Unmarshal([]byte(run("inspect", unl, "--json")), &ins); err != nil || !ins.Provenance.Unlabelled {
		t.Errorf("inspect --json: %+v, %v", ins, err)
	}
	model := filepath.Join(t.TempDir(), "m")
	run("train", "--task", "tile", "--data", train, "--out", model, "--epochs", "1", "--hidden", "8")
	for _, c := range []struct {
		args []string
		use  string
	}{
		{[]string{"train", "--task", "tile", "--data", unl, "--out", filepath.Join(t.TempDir(), "m2"), "--epochs", "1", "--hidden", "8"}, "train"},
		{[]string{"eval", "--model", model, "--data", unl}, "eval"},
	} {
		want := unl + " holds unlabelled data (TpuGraphs' test split: every runtime is 0): " + c.use + " needs measured runtimes"
		_, stderr, code := runCLI(c.args...)
		if code == 0 || !strings.Contains(stderr, want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q, want one line with %q", c.args, code, stderr, want)
		}
	}
	var pr struct {
		Rows []struct {
			Pick string `json:"pick"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(run("predict", "--model", model, "--data", unl, "--json")), &pr); err != nil || len(pr.Rows) != len(testFiles) || pr.Rows[0].Pick == "" {
		t.Errorf("predict --data on unlabelled rows: %+v, %v", pr, err)
	}
	if s := run("predict", "--model", model, "--data", unl); !strings.Contains(s, "(unlabelled: no measured times)") {
		t.Errorf("predict --data text on unlabelled rows:\n%s", s)
	}
}
