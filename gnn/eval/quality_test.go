package eval

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/dataset/gen"
	"github.com/tpucost/tpucost/gnn"
	"github.com/tpucost/tpucost/tpusim"
)

// The quality regression test (issue 20; after Halide's autoscheduler, which keeps one for
// its cost model): a small fixed tile dataset, `train`'s defaults and a fixed seed, and
// thresholds on the learned model against the analytical one on the same test rows. A
// change that makes the default model worse than these fails here, in `make test`.
//
// The thresholds come from the measured margins (docs/training.md, Results): on these rows, at
// commit time, one default model's tile APE was 0.09–0.59× the analytical model's over
// seeds 1–3 (seed 1: 0.59×) and its slowdown@1 below it, an ensemble of 3's 0.14–0.17×.
// One model is too fragile to guard: the OpenBLAS build (-tags blas), which only orders
// the sums of the matrix products differently, trained seed 1 to 1.04×. The test trains
// the ensemble `train --ensemble 3` makes.
const (
	// qualityEnsemble is the number of models the test trains (seeds 1..3).
	qualityEnsemble = 3
	// qualityAPERatio bounds learned APE / analytical APE on the random split: the
	// issue's goal is 0.6× (met by the mean over seeds, 0.32×); one seed's model varies
	// up to that, so the guard leaves a margin of a third for it and for changes of the
	// simulator's timing, not for a model that loses its lead.
	qualityAPERatio = 0.8
	// qualitySlowdownRatio bounds learned slowdown@1 / analytical slowdown@1: the learned
	// model's first pick must be better on average than the compiler's heuristic's.
	qualitySlowdownRatio = 1.0
)

// qualityModels are the first 12 inference models of the zoo (as the issue's
// measurement): 274 kernels with up to 16 tiles each.
var qualityModels = []string{
	"bert_base_s128_b8", "bert_base_s384_b1", "bert_large_s128_b1", "bert_medium_s256_b8", "bert_mini_s128_b16",
	"bert_small_s128_b8", "bert_tiny_s128_b32", "convdraw_s12_c64_r32_b8", "convdraw_s16_c48_r64_b4",
	"convdraw_s8_c128_r64_b1", "convdraw_s8_c32_r32_b16", "distilgpt2_s256_b4",
}

// qualityData generates the guards' dataset of task on v4 (seed 3, configs per kernel or
// program) in a temporary directory, and names the model directory beside it.
func qualityData(t *testing.T, task dataset.Task, models []string, configs int) (data, out string) {
	t.Helper()
	dir := t.TempDir()
	data, out = filepath.Join(dir, string(task)), filepath.Join(dir, "model")
	chip, err := tpusim.Preset("v4")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.Generate(context.Background(), gen.Options{Task: task, Models: models, Out: data,
		Configs: configs, Chip: chip, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	return data, out
}

func TestQualityTileDefaults(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("trains 3 models with the default budget (about 30 s): skipped under -race and -short")
	}
	data, out := qualityData(t, dataset.TaskTile, qualityModels, 16)
	res, err := gnn.TrainEnsemble(context.Background(), gnn.DataOptions{Dir: data, Split: dataset.SplitRandom, SplitSeed: 1},
		gnn.TrainOptions{Task: dataset.TaskTile, Seed: 1, OutDir: out}, qualityEnsemble)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(RunOptions{ModelDir: out})
	if err != nil {
		t.Fatal(err)
	}
	l, a := r.Learned, r.Analytical
	if l.APE == nil || a == nil || a.APE == nil {
		t.Fatalf("no APE in the report: %+v", r.Report)
	}
	t.Logf("%s; tile APE learned %.2f%% vs analytical %.2f%%, slowdown@1 %.4f vs %.4f", res.StopReason, *l.APE, *a.APE, l.SlowdownAt["1"], a.SlowdownAt["1"])
	if *l.APE > qualityAPERatio**a.APE {
		t.Errorf("tile APE: learned %.2f%%, analytical %.2f%%: want at most %.1f× analytical", *l.APE, *a.APE, qualityAPERatio)
	}
	if l.SlowdownAt["1"] > qualitySlowdownRatio*a.SlowdownAt["1"] {
		t.Errorf("slowdown@1: learned %.4f, analytical %.4f: want at most %.1f× analytical", l.SlowdownAt["1"], a.SlowdownAt["1"], qualitySlowdownRatio)
	}
}

// The fusion guard: held-out programs, the other goal (fusion MAPE of kernels
// ≥ 5 µs at most a third of the analytical model's, no program above 100%). The split
// holds out dlrm_criteo_b64 and resnet20_cifar_b64 (program split seed 2), the hardest of
// the splits measured (docs/training.md, "The analytical prior for absolute models"):
// resnet20_cifar_b64's convolutions of 16 channels are thinner than any trained on, and
// the analytical model is 75% off on them.
const (
	// qualityFusionRatio bounds learned / analytical MAPE(≥ 5 µs) of one default model
	// (seed 1) on the held-out programs. Measured at commit time: 0.21–0.33× over train
	// seeds 1–3 of this split (0.35× before the default prior and feature schema 7); the
	// guard leaves a margin for one seed's spread and the simulator's timing, not for a
	// model that loses its lead over the analytical one.
	qualityFusionRatio = 0.5
	// qualityFusionProgramPct bounds every held-out program's program-time error, %: the
	// issue's "no program above 100%" (measured: at most 26.4% on every split and seed).
	qualityFusionProgramPct = 100
)

// qualityFusionModels are 12 zoo programs of five families (1,778 kernels with 12
// fusion configurations each; the data of docs/training.md's schema-6 measurements).
var qualityFusionModels = []string{
	"mlp_96x2_b1", "mlp_lenet300_b32", "mlp_768x3_b8", "dlrm_small_b32", "dlrm_bag4_d32_b8", "dlrm_criteo_b64",
	"dlrm_mlperf_b16", "resnet18_b1", "resnet20_cifar_b64", "rnn_char_h96_t24_b1", "lstm_cls_h300_t32_b8", "unet_d3_c32_r128_b8",
}

func TestQualityFusionHeldOutPrograms(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("trains a fusion model with the default budget (13 s with OpenBLAS, 21 s pure Go): skipped under -race and -short")
	}
	data, out := qualityData(t, dataset.TaskFusion, qualityFusionModels, 12)
	res, err := gnn.TrainDataset(context.Background(), gnn.DataOptions{Dir: data, Split: dataset.SplitProgram, SplitSeed: 2},
		gnn.TrainOptions{Task: dataset.TaskFusion, Seed: 1, OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(RunOptions{ModelDir: out})
	if err != nil {
		t.Fatal(err)
	}
	l, a := r.Learned, r.Analytical
	if l.MAPEGE5us == nil || a == nil || a.MAPEGE5us == nil {
		t.Fatalf("no MAPE of kernels >= 5 us in the report: %+v", r.Report)
	}
	t.Logf("%s; fusion MAPE(>=5us) learned %.2f%% vs analytical %.2f%%", res.StopReason, *l.MAPEGE5us, *a.MAPEGE5us)
	if *l.MAPEGE5us > qualityFusionRatio**a.MAPEGE5us {
		t.Errorf("fusion MAPE(>=5us) on held-out programs: learned %.2f%%, analytical %.2f%%: want at most %.1f× analytical", *l.MAPEGE5us, *a.MAPEGE5us, qualityFusionRatio)
	}
	if len(r.PerProgram) == 0 {
		t.Fatal("no held-out program in the report")
	}
	for _, p := range r.PerProgram {
		t.Logf("%s: program-time error learned %.2f%%", p.Program, p.Learned)
		if p.Learned > qualityFusionProgramPct {
			t.Errorf("held-out program %s: program-time error %.2f%%, want at most %d%%", p.Program, p.Learned, qualityFusionProgramPct)
		}
	}
}
