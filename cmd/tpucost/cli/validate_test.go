package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/gnn"
)

const opTuningFile = "../../../dataset/tpugraphs/testdata/op_tuning_data.pb"

func TestValidateCommand(t *testing.T) {
	plots := t.TempDir()
	out, errOut, code := run("validate", opTuningFile, "--json", "--plots", plots)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		Chip string `json:"chip"`
		Tile struct {
			Kernels  int `json:"kernels"`
			Configs  int `json:"configs"`
			Unmapped []struct {
				Name, Reason string
			} `json:"unmapped"`
			Sim *struct {
				KendallTau float64 `json:"kendall_tau"`
			} `json:"sim"`
			Analytical *struct {
				KendallTau float64 `json:"kendall_tau"`
			} `json:"analytical"`
			Default *struct {
				Top1Slowdown float64 `json:"top1_slowdown"`
			} `json:"default"`
		} `json:"tile_replay"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if r.Chip != "v3" || r.Tile.Configs == 0 || r.Tile.Sim == nil || r.Tile.Analytical == nil || r.Tile.Default == nil || len(r.Tile.Unmapped) == 0 {
		t.Errorf("report %+v", r)
	}
	if _, err := os.Stat(filepath.Join(plots, "tile_sim_vs_measured.png")); err != nil {
		t.Error(err)
	}
	text, _, code := run("validate", opTuningFile)
	if code != 0 || !strings.Contains(text, "default (XLA's choice)") || !strings.Contains(text, "unmapped: fusion.181") {
		t.Errorf("text report (exit %d):\n%s", code, text)
	}
}

func TestValidateRefusals(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"validate", opTuningFile, "--min-configs", "1"}, "--min-configs \"1\": want at least 2"},
		{[]string{"validate", "nosuch.pb"}, "nosuch.pb"},
		{[]string{"validate", opTuningFile, "--chip", "v9"}, "unknown chip"},
	} {
		_, errOut, code := run(c.args...)
		if code == 0 || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q, want one line with %q", c.args, code, errOut, c.want)
		}
	}
}

func TestCalibrateAndChipFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "v3-fit.json")
	stdout, errOut, code := run("calibrate", opTuningFile, "--out", out, "--seed", "2", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		Fit, Heldout struct {
			Kernels []string
			Before  struct {
				KendallTau float64 `json:"kendall_tau"`
			}
			After struct {
				KendallTau float64 `json:"kendall_tau"`
			}
		}
		Constants []struct{ Name string }
		Out       string
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if len(r.Fit.Kernels) == 0 || len(r.Heldout.Kernels) == 0 || len(r.Constants) != 11 || r.Out != out {
		t.Errorf("report %+v", r)
	}
	// The fitted preset is a chip for every command that takes --chip.
	simOut, errOut, code := run("sim", "mlp_96x2_b1", "--chip-file", out)
	if code != 0 || !strings.Contains(simOut, "v3-calibrated@") {
		t.Errorf("sim --chip-file: exit %d, %s%s", code, simOut, errOut)
	}
	v, _, code := run("validate", opTuningFile, "--chip-file", out)
	if code != 0 || !strings.Contains(v, "v3-calibrated@") {
		t.Errorf("validate --chip-file: exit %d\n%s", code, v)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sim", "mlp_96x2_b1", "--chip-file", out, "--chip", "v4"}, "--chip and --chip-file: give one"},
		{[]string{"sim", "mlp_96x2_b1", "--chip-file", opTuningFile}, opTuningFile},
		{[]string{"calibrate", opTuningFile}, "--out is required"},
		{[]string{"calibrate", opTuningFile, "--out", opTuningFile}, "is not a chip file; refusing to overwrite it"},
		{[]string{"calibrate", opTuningFile, "--out", out, "--max-evals", "0"}, "--max-evals \"0\""},
	} {
		_, errOut, code := run(c.args...)
		if code == 0 || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q, want one line with %q", c.args, code, errOut, c.want)
		}
	}
}

// TestValidateWithModel: a tile model trained on tpucost's simulated data scores the real
// runs zero-shot; a model for another chip is refused unless --allow-mismatch, and a
// model of another task is refused.
func TestValidateWithModel(t *testing.T) {
	root := t.TempDir()
	model := trainTinyTileModel(t, root)
	// The tiny dataset is simulated for v4; the files are v3 runs.
	_, errOut, code := run("validate", opTuningFile, "--model", model)
	if code == 0 || !strings.Contains(errOut, "--allow-mismatch") {
		t.Errorf("a v4 model on v3 runs: exit %d, %s", code, errOut)
	}
	out, errOut, code := run("validate", opTuningFile, "--model", model, "--allow-mismatch", "--json")
	if code != 0 || !strings.Contains(errOut, "WARNING") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		Tile struct {
			Learned *struct {
				KendallTau float64 `json:"kendall_tau"`
			} `json:"learned"`
		} `json:"tile_replay"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Tile.Learned == nil {
		t.Errorf("no learned scores (%v): %s", err, out)
	}
}

// TestFineTuneOnMeasuredRows: validate --rows writes the real runs in tpucost's own
// features; train --init fine-tunes a simulated-data model on them, keeping its
// architecture, and refuses what would change it.
func TestFineTuneOnMeasuredRows(t *testing.T) {
	root := t.TempDir()
	model := trainTinyTileModel(t, root)
	rows := filepath.Join(root, "real")
	if _, errOut, code := run("validate", opTuningFile, "--rows", rows); code != 0 {
		t.Fatalf("validate --rows: %s", errOut)
	}
	ft := filepath.Join(root, "ft")
	stdout, stderr, err := runCmd(NewCmdTrain, true, "--task", "tile", "--data", rows, "--out", ft, "--init", model, "--epochs", "2",
		"--split", "program", "--test-fraction", "0.5", "--val-fraction", "0.3", "--batch", "8", "--max-configs", "6")
	if err != nil {
		t.Fatalf("train --init: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "starting from "+model) {
		t.Errorf("no word of the initial model:\n%s", stderr)
	}
	var s gnn.TrainSummary
	if err := json.Unmarshal([]byte(stdout), &s); err != nil || s.Epochs != 2 {
		t.Errorf("summary %+v (%v)", s, err)
	}
	ck, err := gnn.ReadCheckpoint(ft)
	if err != nil {
		t.Fatal(err)
	}
	base, err := gnn.ReadCheckpoint(model)
	if err != nil {
		t.Fatal(err)
	}
	if ck.Meta.InitFrom != model || ck.Config.Hidden != 16 || ck.Config.Layers != 2 || !reflect.DeepEqual(ck.Normalization, base.Normalization) {
		t.Errorf("fine-tuned checkpoint: init %q, hidden %d, layers %d, same normalization %v", ck.Meta.InitFrom, ck.Config.Hidden, ck.Config.Layers, reflect.DeepEqual(ck.Normalization, base.Normalization))
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--hidden", "32"}, "--hidden with --init: the architecture is the initial model's"},
		{[]string{"--loss", "mse"}, ", not mse"},
		{[]string{"--resume"}, ""},
	} {
		out := filepath.Join(root, "refused")
		args := append([]string{"--task", "tile", "--data", rows, "--out", out, "--init", model, "--epochs", "1"}, c.args...)
		_, _, err := runCmd(NewCmdTrain, false, args...)
		if err == nil || c.want != "" && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error with %q", c.args, err, c.want)
		}
	}
}

// trainTinyTileModel trains a small tile model (hidden 16, 2 layers, 1 epoch) on a tiny
// dataset simulated for v4 under root and returns its directory.
func trainTinyTileModel(t *testing.T, root string) string {
	t.Helper()
	data := filepath.Join(root, "tile-data")
	writeTinyDataset(t, data, dataset.TaskTile, []string{"resnet18_b1", "mlp_768x3_b8"}, 8)
	model := filepath.Join(root, "tile-model")
	if _, stderr, err := runCmd(NewCmdTrain, false, "--task", "tile", "--data", data, "--out", model, "--epochs", "1",
		"--hidden", "16", "--layers", "2", "--batch", "8", "--max-configs", "6"); err != nil {
		t.Fatalf("train: %v\n%s", err, stderr)
	}
	return model
}
