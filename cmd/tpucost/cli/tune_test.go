package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/features"
	"github.com/tpucost/tpucost/gnn"
	"github.com/tpucost/tpucost/internal/workers"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/tune"
)

// runTuneCmd runs `tpucost tune ARGS` on a root with the tune command registered (as
// root.go will), returning stdout, stderr and the exit code like Main.
func runTuneCmd(args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	ios := IO{In: strings.NewReader(""), Out: &out, Err: &errb}
	g := &Globals{}
	root := &cobra.Command{Use: "tpucost", SilenceErrors: true, SilenceUsage: true}
	root.SetOut(&out)
	root.SetErr(&errb)
	root.PersistentFlags().BoolVar(&g.JSON, "json", false, "")
	root.AddCommand(NewCmdTune(ios, g))
	root.SetArgs(append([]string{"tune"}, args...))
	if err := root.Execute(); err != nil {
		errb.WriteString("tpucost: " + oneLine(err) + "\n")
		return out.String(), errb.String(), 1
	}
	return out.String(), errb.String(), 0
}

// TestTuneEndToEnd: tune a small zoo model, write the config, and reproduce tuned_ns with
// `tpucost sim --config` (noise off).
func TestTuneEndToEnd(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tuned.json")
	store := filepath.Join(dir, "store.db")
	out, errs, code := runTuneCmd("mlp_96x2_b1", "--budget", "60", "--noise", "0", "--seed", "3", "--out", cfg, "--store", store, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r struct {
		DefaultNs    *float64 `json:"default_ns"`
		TunedNs      *float64 `json:"tuned_ns"`
		Speedup      *float64 `json:"speedup"`
		Measurements *int     `json:"measurements"`
		HardwareS    *float64 `json:"hardware_s"`
		WallS        *float64 `json:"wall_s"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if r.DefaultNs == nil || r.TunedNs == nil || r.Speedup == nil || r.Measurements == nil || r.HardwareS == nil || r.WallS == nil {
		t.Fatalf("report lacks a field: %s", out)
	}
	if *r.Measurements != 60 || *r.TunedNs > *r.DefaultNs || *r.HardwareS <= 0 {
		t.Errorf("measurements %d, tuned %.0f, default %.0f, hardware %.1f s", *r.Measurements, *r.TunedNs, *r.DefaultNs, *r.HardwareS)
	}
	if !strings.Contains(errs, "measurements") || !strings.Contains(errs, "best") {
		t.Errorf("no progress on stderr: %q", errs)
	}
	simOut, errs, code := run("sim", "mlp_96x2_b1", "--config", cfg, "--json")
	if code != 0 {
		t.Fatalf("sim with the tuned config: exit %d: %s", code, errs)
	}
	var s struct {
		TotalNs float64 `json:"total_ns"`
	}
	if err := json.Unmarshal([]byte(simOut), &s); err != nil {
		t.Fatal(err)
	}
	if s.TotalNs != *r.TunedNs {
		t.Errorf("sim --config gives %.3f ns, tune reported %.3f ns", s.TotalNs, *r.TunedNs)
	}
	if st, err := os.Stat(store); err != nil || st.Size() == 0 {
		t.Errorf("store not written: %v", err)
	}
	// Text output.
	out, errs, code = runTuneCmd("mlp_96x2_b1", "--budget", "10", "--strategy", "evo")
	if code != 0 || !strings.Contains(out, "speedup") || !strings.Contains(out, "PHASE") {
		t.Errorf("text report: exit %d, %q, %s", code, out, errs)
	}
}

func TestTuneBatch(t *testing.T) {
	dir := t.TempDir()
	out, errs, code := runTuneCmd("--models", "mlp_96x2_b1,mlp_lenet300_b32", "--budget", "20", "--strategy", "sa", "--out", dir, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var b tune.BatchReport
	if err := json.Unmarshal([]byte(out), &b); err != nil {
		t.Fatal(err)
	}
	if len(b.Reports) != 2 || b.MaxSpeedup < b.MeanSpeedup || b.MeanSpeedup < 0.9 || b.Measurements != 40 {
		t.Errorf("batch: %d reports, mean %.3f, max %.3f, %d measurements", len(b.Reports), b.MeanSpeedup, b.MaxSpeedup, b.Measurements)
	}
	for _, m := range []string{"mlp_96x2_b1", "mlp_lenet300_b32"} {
		if _, err := os.Stat(filepath.Join(dir, m+".json")); err != nil {
			t.Error(err)
		}
	}
	out, _, code = runTuneCmd("--models", "mlp_96x2_b1,mlp_lenet300_b32", "--budget", "5")
	if code != 0 || strings.Count(out, "\n") != 4 || !strings.Contains(out, "mean speedup") {
		t.Errorf("batch table: exit %d, %q", code, out)
	}
}

func TestTuneErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "exactly one of SRC"},
		{[]string{"mlp_96x2_b1", "--all"}, "exactly one of SRC"},
		{[]string{"mlp_96x2_b1", "--strategy", "bogus"}, `--strategy "bogus": want one of xtat,`},
		{[]string{"mlp_96x2_b1", "--budget", "0"}, "--budget \"0\": want an integer >= 1"},
		// Invalid flags name the flag and the valid range; none is replaced by a default.
		{[]string{"mlp_96x2_b1", "--topk", "-1"}, "--topk \"-1\": want an integer >= 1"},
		{[]string{"mlp_96x2_b1", "--kernel-topk", "0"}, "--kernel-topk \"0\": want an integer >= 1"},
		{[]string{"mlp_96x2_b1", "--model-evals", "0"}, "--model-evals \"0\": want"},
		{[]string{"mlp_96x2_b1", "--runs", "0"}, "--runs \"0\": want an integer in [1, 1000]"},
		{[]string{"mlp_96x2_b1", "--workers", "-1"}, "--workers \"-1\": want an integer in [0, 1024] (0: all cores)"},
		{[]string{"mlp_96x2_b1", "--noise", "-0.5"}, "--noise \"-0.5\": want a number in [0, 1]"},
		{[]string{"mlp_96x2_b1", "--vmem", "0"}, "--vmem \"0\": want MiB in [1, 1048576]"},
		{[]string{"mlp_96x2_b1", "--vmem", "99999999999999"}, "--vmem \"99999999999999\""},
		{[]string{"no_such_model"}, "no model named"},
		{[]string{"mlp_96x2_b1", "--model", "ckpt"}, "--model ckpt"},
		{[]string{"mlp_96x2_b1", "--chip", "v9"}, "unknown chip"},
	} {
		out, errs, code := runTuneCmd(tc.args...)
		if code == 0 || out != "" {
			t.Errorf("%v: exit %d, stdout %q", tc.args, code, out)
		}
		if strings.Count(strings.TrimRight(errs, "\n"), "\n") != 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: stderr %q, want one line with %q", tc.args, errs, tc.want)
		}
	}
}

// TestTuneModelHook: with a loader set, --model is used.
func TestTuneModelHook(t *testing.T) {
	var out, errb bytes.Buffer
	o := &TuneOptions{cmdIO: cmdIO{IO: IO{Out: &out, Err: &errb}, Globals: &Globals{JSON: true}}, Request: tune.Request{Src: "mlp_96x2_b1", Strategy: "xtat",
		ModelDir: "ckpt", TopK: 3, KernelTopK: 2, ModelEvals: 20, Budget: 30, Seed: 1, Runs: 3, Workers: 1}}
	o.Target.Chip = "v4"
	o.LoadModel = func(string, tpusim.Chip, bool) (tune.Model, string, error) {
		return nil, "", errors.New("checkpoint is corrupt")
	}
	if err := runTune(t.Context(), o); err == nil || !strings.Contains(err.Error(), "checkpoint is corrupt") {
		t.Errorf("loader error: %v", err)
	}
	o.LoadModel = func(string, tpusim.Chip, bool) (tune.Model, string, error) { return simScorer{}, "", nil }
	if err := runTune(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	var r tune.Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if !r.ModelGuided || r.ModelEvaluations != 20 || r.ProgramMeasures != 3 {
		t.Errorf("guided %v, %d model evaluations, %d program measurements", r.ModelGuided, r.ModelEvaluations, r.ProgramMeasures)
	}
}

// simScorer is a stand-in learned model: the simulator's noiseless kernel time.
type simScorer struct{}

func (simScorer) Relative() bool { return false }

func (simScorer) ScoreKernel(k *compiler.Kernel, choices []cost.Planned) ([]float64, error) {
	c, err := tpusim.Preset("v4")
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(choices))
	for i := range choices {
		kt, err := tpusim.SimulateChoice(choices[i], c)
		if err != nil {
			return nil, err
		}
		out[i] = kt.Ns
	}
	return out, nil
}

// TestTuneOutCheckedFirst: an --out that cannot be written fails before the search (one
// error line naming --out, no progress), instead of losing the finished search.
func TestTuneOutCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mlp_96x2_b1", "--out", dir}, "is a directory"},
		{[]string{"mlp_96x2_b1", "--out", filepath.Join(dir, "missing", "c.json")}, "is not an existing directory"},
		{[]string{"mlp_96x2_b1", "--out", filepath.Join(file, "c.json")}, "not a directory"},
		{[]string{"--models", "mlp_96x2_b1", "--out", file}, "is a file"},
	} {
		out, errs, code := runTuneCmd(append(tc.args, "--budget", "5")...)
		if code == 0 || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "--out") || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want one line naming --out with %q", tc.args, code, out, errs, tc.want)
		}
	}
}

// TestTuneInterrupted: tune runs under the command's context (Main cancels it on SIGINT
// and SIGTERM): cancelled, it exits with ExitInterrupted, writes nothing, and says how to
// re-run; in batch mode, which programs are left.
func TestTuneInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tuned.json")
	var out, errb bytes.Buffer
	code := MainContext(ctx, []string{"tune", "mlp_96x2_b1", "--budget", "20", "--out", cfg}, strings.NewReader(""), &out, &errb)
	if code != ExitInterrupted || out.Len() != 0 || !strings.Contains(errb.String(), "interrupted") || !strings.Contains(errb.String(), "re-run the same command") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	if _, err := os.Stat(cfg); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--out written on interrupt: %v", err)
	}
	errb.Reset()
	batchOut := filepath.Join(dir, "batch")
	code = MainContext(ctx, []string{"tune", "--models", "mlp_96x2_b1,dlrm_small_b32", "--budget", "20", "--out", batchOut}, strings.NewReader(""), &out, &errb)
	if code != ExitInterrupted || !strings.Contains(errb.String(), "0 of 2 programs finished") || !strings.Contains(errb.String(), "--models mlp_96x2_b1,dlrm_small_b32") {
		t.Errorf("batch: exit %d, stderr %q", code, errb.String())
	}
	if _, err := os.Stat(batchOut); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("batch --out created on interrupt: %v", err)
	}
}

// saveTestModel saves an untrained fusion model (absolute: it guides layout and fusion)
// whose training data was simulated for meta's target, with identity normalization.
func saveTestModel(t *testing.T, meta gnn.Meta) string {
	t.Helper()
	id := func(w int) features.ColumnStats {
		c := features.ColumnStats{Count: 1, Mean: make([]float64, w), Std: make([]float64, w)}
		for i := range c.Std {
			c.Std[i] = 1
		}
		return c
	}
	st := features.Stats{SchemaVersion: features.SchemaVersion, Node: id(features.NodeWidth), Kernel: id(features.KernelWidth), Config: id(features.ConfigWidth)}
	cfg := gnn.DefaultConfig()
	cfg.EmbedDim, cfg.Hidden, cfg.Layers, cfg.Head = 4, 8, 1, []int{8}
	m, err := gnn.NewModel(cfg, dataset.TaskFusion, gnn.LossMSE, st, gnn.TargetStats{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := m.Save(dir, meta); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestTuneModelTargetMismatch: `tune --model M --chip v5e` with M trained on v4 data ran
// with no warning. Like eval and predict, tune refuses a model trained for another chip,
// VMEM size or simulator, unless --allow-mismatch, which warns and sets chip_mismatch in
// --json.
func TestTuneModelTargetMismatch(t *testing.T) {
	v4, err := tpusim.Preset("v4")
	if err != nil {
		t.Fatal(err)
	}
	model := saveTestModel(t, gnn.Meta{Chip: "v4", VMEMBytes: v4.VMEMBytes, Simulator: tpusim.Version})
	base := []string{"mlp_96x2_b1", "--model", model, "--budget", "4", "--topk", "2", "--model-evals", "4", "--workers", "1"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--chip", "v5e"}, "model " + model + " was trained on data for chip v4, not v5e: use it for its target (or pass --allow-mismatch)"},
		{[]string{"--vmem", "64"}, "was trained on data for vmem_bytes"},
		{[]string{"--models", "mlp_96x2_b1", "--chip", "v5e"}, "was trained on data for chip v4, not v5e"},
	} {
		args := append(append([]string{}, base...), tc.args...)
		if tc.args[0] == "--models" {
			args = append([]string{}, base[1:]...)
			args = append(args, tc.args...)
		}
		out, errs, code := runTuneCmd(args...)
		if code == 0 || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want one line with %q", tc.args, code, out, errs, tc.want)
		}
	}
	for _, tc := range []struct {
		args     []string
		mismatch bool
	}{
		{[]string{"--chip", "v5e", "--allow-mismatch"}, true},
		{[]string{"--chip", "v4"}, false},
	} {
		out, errs, code := runTuneCmd(append(append(append([]string{}, base...), tc.args...), "--json")...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errs)
		}
		var r struct {
			ChipMismatch *bool `json:"chip_mismatch"`
			ModelGuided  bool  `json:"model_guided"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v: %v: %s", tc.args, err, out)
		}
		if r.ChipMismatch == nil || *r.ChipMismatch != tc.mismatch || !r.ModelGuided {
			t.Errorf("%v: chip_mismatch %v, model_guided %v; want %v", tc.args, r.ChipMismatch, r.ModelGuided, tc.mismatch)
		}
		if warned := strings.Contains(errs, "WARNING: model "+model+" was trained on data for chip v4, not v5e"); warned != tc.mismatch {
			t.Errorf("%v: warning %v, stderr %q", tc.args, warned, errs)
		}
	}
}

// TestTuneNothingToTune: a program with no kernels exited 0 with "speedup NaNx", and
// --json failed on the NaN. It is reported as nothing to tune: the default compile,
// speedup 1, in the text and in --json. The program returns its parameter, aliased to the
// output (input_output_alias), so it needs no output copy and compiles to no kernel
// (without the alias the compiler adds the copy XLA's copy insertion adds, a kernel).
func TestTuneNothingToTune(t *testing.T) {
	src := filepath.Join(t.TempDir(), "t.hlo")
	if err := os.WriteFile(src, []byte("HloModule m, input_output_alias={ {}: (0, {}, may-alias) }\nENTRY e {\n  ROOT p = f32[4] parameter(0)\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := runTuneCmd(src, "--budget", "3")
	if code != 0 || strings.Contains(out+errs, "NaN") || !strings.Contains(out, "nothing to tune") || !strings.Contains(out, "speedup 1.000x") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	out, errs, code = runTuneCmd(src, "--budget", "3", "--json")
	var r tune.Report
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Speedup != 1 || !r.NothingToTune || r.DefaultNs != r.TunedNs {
		t.Errorf("--json: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	out, errs, code = runTuneCmd("--models", src+",mlp_96x2_b1", "--budget", "3", "--json")
	var b tune.BatchReport
	if code != 0 || json.Unmarshal([]byte(out), &b) != nil || len(b.Reports) != 2 || !(b.GeomeanSpeedup >= 1) {
		t.Errorf("batch --json: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestWorkersFlagRule: every command with --workers follows one rule: an integer >= 0,
// where 0 means all cores (the default); a negative count is an error naming the flag.
// (gen accepted 0 while tune rejected it.)
func TestWorkersFlagRule(t *testing.T) {
	if out, errs, code := runTuneCmd("mlp_96x2_b1", "--budget", "3", "--workers", "0"); code != 0 || !strings.Contains(out, "speedup") {
		t.Errorf("tune --workers 0: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if _, errs, code := runTuneCmd("mlp_96x2_b1", "--budget", "3", "--workers", "-1"); code == 0 || !strings.Contains(errs, "--workers") || !strings.Contains(errs, "(0: all cores)") {
		t.Errorf("tune --workers -1: exit %d, stderr %q", code, errs)
	}
	if _, errs, code := run("gen", "--models", "mlp_96x2_b1", "--out", t.TempDir(), "--workers", "-1"); code == 0 || !strings.Contains(errs, "--workers") || !strings.Contains(errs, "(0: all cores)") {
		t.Errorf("gen --workers -1: exit %d, stderr %q", code, errs)
	}
	for _, cmd := range []*cobra.Command{NewCmdTune(IO{}, &Globals{}), NewCmdGen(IO{}, &Globals{})} {
		f := cmd.Flags().Lookup("workers")
		if f == nil || f.DefValue != "0" || !strings.Contains(f.Usage, "0: all cores") {
			t.Errorf("%s --workers: %+v", cmd.Name(), f)
		}
	}
	// One upper bound too (gen said 0-1024, tune 0-65536).
	for _, args := range [][]string{
		{"tune", "mlp_96x2_b1", "--budget", "3", "--workers", "2000"},
		{"gen", "--models", "mlp_96x2_b1", "--out", t.TempDir(), "--workers", "2000"},
		{"tune", "train-policy", "--programs", "mlp_96x2_b1", "--out", t.TempDir(), "--workers", "2000"},
	} {
		if _, errs, code := run(args...); code == 0 || !strings.Contains(errs, "--workers") || !strings.Contains(errs, workers.Want) {
			t.Errorf("%s: exit %d, stderr %q; want %q", strings.Join(args, " "), code, errs, workers.Want)
		}
	}
}

// TestTuneModelJSONErrors: a model.json whose value has the wrong kind (consistently
// resealed, as another tpucost might write it) is reported by file and JSON field, not by
// Go types ("cannot unmarshal string into Go struct field Config.config.hidden of type int").
func TestTuneModelJSONErrors(t *testing.T) {
	model := saveTestModel(t, gnn.Meta{Chip: "v4"})
	path := filepath.Join(model, gnn.ModelFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = regexp.MustCompile(`"hidden": [0-9]+`).ReplaceAll(b, []byte(`"hidden": "x"`))
	b = regexp.MustCompile(`"checksum": "[0-9a-f]*"`).ReplaceAll(b, []byte(`"checksum": ""`))
	sum := sha256.Sum256(b)
	b = bytes.Replace(b, []byte(`"checksum": ""`), []byte(`"checksum": "`+hex.EncodeToString(sum[:])+`"`), 1)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, errs, code := runTuneCmd("mlp_96x2_b1", "--model", model, "--budget", "3")
	if code == 0 || !strings.Contains(errs, path+": field config.hidden: want an integer, got a string") || strings.Contains(errs, "Go ") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
}
