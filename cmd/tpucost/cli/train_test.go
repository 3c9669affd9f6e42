package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/dataset/gen"
	"github.com/tpucost/tpucost/features"
	"github.com/tpucost/tpucost/gnn"
	"github.com/tpucost/tpucost/gnn/eval"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/zoo"
)

// runCmd executes one command built by mk (standalone, so the test does not depend on
// its registration in the root command).
func runCmd(mk func(IO, *Globals) *cobra.Command, jsonOut bool, args ...string) (string, string, error) {
	var out, errb bytes.Buffer
	cmd := mk(IO{In: strings.NewReader(""), Out: &out, Err: &errb}, &Globals{JSON: jsonOut})
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	return out.String(), errb.String(), err
}

// writeTinyDataset writes a dataset of task to dir with the dataset Writer: for each
// model's default compile, one row per distinct kernel with up to maxConfigs tile
// options (tile) or its own configuration (fusion), timed with tpusim.
func writeTinyDataset(t *testing.T, dir string, task dataset.Task, models []string, maxConfigs int) {
	t.Helper()
	chip, err := tpusim.Preset("v4")
	if err != nil {
		t.Fatal(err)
	}
	prov := dataset.Provenance{
		SchemaVersion: dataset.SchemaVersion, FeatureSchema: features.CurrentSchema(), SimulatorVersion: tpusim.Version,
		Chip: chip.Name, VMEMBytes: chip.VMEMBytes, Seed: 1, Task: task, ConfigsPerKernel: maxConfigs, Models: models,
		ShardIndex: 0, ShardCount: 1, ToolVersion: gen.ToolVersion, GeneratorVersion: "test",
	}
	w, err := dataset.NewWriter(dataset.WriterOptions{Dir: dir, Format: dataset.FormatArrow, Provenance: prov})
	if err != nil {
		t.Fatal(err)
	}
	for unit, name := range models {
		m, err := zoo.Resolve(name)
		if err != nil {
			t.Fatal(err)
		}
		p, err := compiler.Compile(m, nil, compiler.Options{Target: chip.Target})
		if err != nil {
			t.Fatal(err)
		}
		var rows []dataset.Row
		var occ []dataset.Occurrence
		count := map[string]int32{}
		for _, k := range p.Kernels {
			count[k.Key]++
		}
		for _, k := range p.Kernels {
			if count[k.Key] == 0 {
				continue
			}
			occ = append(occ, dataset.Occurrence{Unit: int64(unit), Program: p.Name, KernelKey: k.Key, Count: count[k.Key]})
			count[k.Key] = 0
			choices := []cost.Planned{k.Choice}
			if task == dataset.TaskTile {
				choices = k.Info.Options(k.Key, chip.Target, k.Choice.Config.Flags)
				if len(choices) > maxConfigs {
					choices = choices[:maxConfigs]
				}
			}
			r := dataset.Row{Program: p.Name, Unit: int64(unit), Task: task, KernelKey: k.Key, KernelName: k.Name, Kind: k.Kind,
				Graph: features.OfKernel(k, chip.Target)}
			for _, c := range choices {
				kt, err := tpusim.SimulateChoice(c, chip)
				if err != nil {
					continue
				}
				r.Configs = append(r.Configs, c.Config.String())
				r.ConfigFeats = append(r.ConfigFeats, features.Config(c))
				r.RuntimesNs = append(r.RuntimesNs, kt.Ns)
				r.AnalyticalNs = append(r.AnalyticalNs, c.Analytical())
			}
			if len(r.Configs) > 0 {
				rows = append(rows, r)
			}
		}
		if err := w.WritePart(int64(unit), int64(unit), rows, occ); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestTrainAndPredictEndToEnd(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, "tile-data")
	writeTinyDataset(t, data, dataset.TaskTile, []string{"resnet18_b1", "unet_d3_c32_r128_b8", "mlp_768x3_b8"}, 12)
	out := filepath.Join(root, "tile-model")
	small := []string{"--hidden", "16", "--layers", "2", "--batch", "8", "--max-configs", "6", "--lr", "0.003"}

	stdout, stderr, err := runCmd(NewCmdTrain, true, append([]string{"--task", "tile", "--data", data, "--out", out, "--epochs", "2"}, small...)...)
	if err != nil {
		t.Fatalf("train: %v\n%s", err, stderr)
	}
	var s gnn.TrainSummary
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatalf("train --json: %v\n%s", err, stdout)
	}
	if s.Epochs != 2 || s.BestEpoch < 1 || s.Loss != gnn.LossRankHingeGap || s.Metric != gnn.MetricSlowdown || s.History[0].Val == nil ||
		(s.Backend != "openblas" && s.Backend != "go") {
		t.Errorf("summary %+v", s)
	}
	if !strings.Contains(stderr, "epoch 2/2") {
		t.Errorf("no progress on stderr:\n%s", stderr)
	}
	if _, err := os.Stat(filepath.Join(out, gnn.ModelFile)); err != nil {
		t.Fatal(err)
	}
	// Resume to 3 epochs; the text output lists them.
	stdout, stderr, err = runCmd(NewCmdTrain, false, append([]string{"--task", "tile", "--data", data, "--out", out, "--epochs", "3", "--resume"}, small...)...)
	if err != nil {
		t.Fatalf("train --resume: %v\n%s", err, stderr)
	}
	if !strings.HasPrefix(stdout, "EPOCH") || !strings.Contains(stdout, "best epoch") || strings.Count(stdout, "\n") != 8 || !strings.Contains(stdout, "stopped: budget") ||
		!strings.Contains(stdout, "every epoch: "+filepath.Join(out, gnn.TrainLogFile)) ||
		!strings.Contains(stdout, "\nbackend: ") {
		t.Errorf("train output:\n%s", stdout)
	}
	// Resuming with another setting than the checkpoint's is refused, naming it.
	if _, _, err := runCmd(NewCmdTrain, false, "--out", out, "--epochs", "4", "--resume", "--hidden", "32"); err == nil ||
		!strings.Contains(err.Error(), "hidden is 32, the checkpoint's is 16") {
		t.Errorf("resume with --hidden 32: %v", err)
	}

	// Predicting for another chip than the model's is refused, or with --allow-mismatch
	// warned about and recorded.
	if _, _, err := runCmd(NewCmdPredict, false, "resnet18_b1", "--model", out, "--chip", "v5e"); err == nil || !strings.Contains(err.Error(), "chip v4, not v5e") {
		t.Errorf("predict --chip v5e: %v", err)
	}
	if _, _, err := runCmd(NewCmdPredict, false, "resnet18_b1", "--model", out, "--top", "-1"); err == nil || !strings.Contains(err.Error(), "--top \"-1\"") {
		t.Errorf("predict --top -1: %v", err) // once quietly treated as 0
	}
	stdout, stderr, err = runCmd(NewCmdPredict, true, "resnet18_b1", "--model", out, "--chip", "v5e", "--allow-mismatch")
	if err != nil || !strings.Contains(stdout, `"chip_mismatch": true`) || !strings.Contains(stderr, "WARNING") {
		t.Errorf("predict --allow-mismatch: %v, stderr %q", err, stderr)
	}

	// Predict with the relative model: options ranked per kernel.
	stdout, stderr, err = runCmd(NewCmdPredict, true, "resnet18_b1", "--model", out)
	if err != nil {
		t.Fatalf("predict: %v\n%s", err, stderr)
	}
	var r eval.ProgramReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("predict --json: %v", err)
	}
	if !r.Relative || len(r.Kernels) == 0 || len(r.Kernels[0].Options) == 0 || !(r.ModelPickTotalNs >= r.BestOptionTotalNs) || !(r.SimTotalNs > 0) {
		t.Errorf("predict report: relative %t, %d kernels, pick %g best %g", r.Relative, len(r.Kernels), r.ModelPickTotalNs, r.BestOptionTotalNs)
	}
	stdout, _, err = runCmd(NewCmdPredict, false, "resnet18_b1", "--model", out, "--top", "2")
	if err != nil || !strings.Contains(stdout, "MODEL_TOP") || !strings.Contains(stdout, "model's picks") {
		t.Errorf("predict table: %v\n%s", err, stdout)
	}

	// An absolute (fusion) model predicts times and a program total.
	fdata := filepath.Join(root, "fusion-data")
	writeTinyDataset(t, fdata, dataset.TaskFusion, []string{"resnet18_b1", "unet_d3_c32_r128_b8", "mlp_768x3_b8", "dlrm_small_b32"}, 1)
	fout := filepath.Join(root, "fusion-model")
	if _, stderr, err := runCmd(NewCmdTrain, false, append([]string{"--task", "fusion", "--data", fdata, "--out", fout, "--epochs", "2"}, small...)...); err != nil {
		t.Fatalf("train fusion: %v\n%s", err, stderr)
	}
	stdout, stderr, err = runCmd(NewCmdPredict, false, "mlp_768x3_b8", "--model", fout)
	if err != nil {
		t.Fatalf("predict fusion: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "PRED_NS") || !strings.Contains(stdout, "predicted") || strings.Contains(stdout, "MODEL_TOP") {
		t.Errorf("fusion predict output:\n%s", stdout)
	}
}

func TestTrainErrors(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, "data")
	writeTinyDataset(t, data, dataset.TaskFusion, []string{"mlp_768x3_b8", "dlrm_small_b32"}, 1)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--data", data, "--out", root + "/o1"}, "--task is required"},
		{[]string{"--task", "tile", "--data", data, "--out", root + "/o2"}, "holds fusion rows, not tile"},
		{[]string{"--task", "fusion", "--data", data, "--out", root + "/o3", "--loss", "rank-hinge"}, "use mse"},
		{[]string{"--task", "fusion", "--data", data, "--out", root + "/o4", "--loss", "l1"}, `--loss "l1": want one of mse,`},
		{[]string{"--task", "fusion", "--data", data, "--out", root + "/o5", "--reduce", "median"}, "unknown reduction"},
		{[]string{"--task", "fusion", "--data", root + "/missing", "--out", root + "/o6"}, "missing"},
		{[]string{"--task", "fusion", "--data", data, "--out", root + "/o7", "--resume"}, "nothing to resume"},
		// Out-of-range flags: the flag and its range, never a quiet default.
		{[]string{"--task", "fusion", "--data", data, "--out", root + "/o8", "--epochs", "-1"}, "--epochs \"-1\": want an integer >= 0"},
		{[]string{"--task", "fusion", "--data", data, "--out", root + "/o8", "--steps", "-5"}, "--steps \"-5\": want an integer >= 0"},
		{[]string{"--task", "fusion", "--data", data, "--out", root + "/o8", "--epochs", "3", "--steps", "100"}, "--epochs and --steps are two budgets"},
		{[]string{"--task", "fusion", "--data", data, "--out", root + "/o8", "--lr-schedule", "step"}, "--lr-schedule: unknown learning-rate schedule"},
		{[]string{"--task", "fusion", "--data", data, "--out", root + "/o8", "--ensemble", "0"}, "--ensemble \"0\": want an integer in [1, 32]"},
		{[]string{"--task", "fusion", "--data", data, "--out", root + "/o8", "--ensemble", "2", "--resume"}, "an ensemble is not resumed"},
		{[]string{"--task", "fusion", "--data", data, "--out", root + "/o8", "--patience", "soon"}, "--patience \"soon\": want auto, off or an integer"},
		{[]string{"--task", "fusion", "--data", data, "--out", root + "/o8", "--test-fraction", "0"}, "--test-fraction \"0\": want a number in (0, 1)"},
		{[]string{"--task", "fusion", "--data", data, "--out", root + "/o8", "--test-fraction", "1"}, `--test-fraction "1": want`},
		{[]string{"--task", "fusion", "--data", data, "--out", root + "/o8", "--val-fraction", "-0.1"}, `--val-fraction "-0.1": want`},
		{[]string{"--task", "fusion", "--data", data, "--out", root + "/o8", "--batch", "0"}, `--batch "0": want`},
		{[]string{"--task", "fusion", "--data", data, "--out", root + "/o8", "--lr", "0"}, "--lr \"0\": want a number in (0, 1]"},
		{[]string{"--task", "fusion", "--data", data, "--out", root + "/o8", "--layers", "-1"}, "--layers \"-1\": want an integer in [0, 32]"},
		{[]string{"--task", "fusion", "--data", data, "--out", root + "/o8", "--hidden", "0"}, "--hidden \"0\": want an integer in [1, 4096]"},
		{[]string{"--task", "fusion", "--data", data, "--out", root + "/o8", "--max-segment-nodes", "3"}, "--max-segment-nodes \"3\": want an integer in [8, 1048576]"},
		{[]string{"--task", "tile", "--data", data, "--out", root + "/o8", "--heads", "flags,tile"}, "--heads flags,tile: want at least two tasks, the first being --task tile"},
		{[]string{"--task", "fusion", "--data", data, "--out", root + "/o8", "--prior", "soon"}, `--prior "soon": want auto or a number >= 0`},
		{[]string{"--task", "fusion", "--data", data, "--out", root + "/o8", "--prior", "-1"}, `--prior "-1": want auto or a number >= 0`},
		{[]string{"--task", "fusion", "--data", data, "--out", root + "/o8", "--prior", "101"}, "prior weight must be in [0, 100], got 101"},
		// An unwritable output fails before training.
		{[]string{"--task", "fusion", "--data", data, "--out", filepath.Join(data, "fusion-0of1-00000.arrow", "m")}, "not writable"},
	} {
		_, _, err := runCmd(NewCmdTrain, false, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
	if _, _, err := runCmd(NewCmdPredict, false, "mlp_768x3_b8", "--model", root+"/none"); err == nil {
		t.Error("predict with a missing model succeeded")
	}
}
