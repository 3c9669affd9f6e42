package gnn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/features"
	"github.com/tpucost/tpucost/internal/sealed"
	"github.com/tpucost/tpucost/nn"
)

func TestRankLossHandComputed(t *testing.T) {
	// Three configurations: runtimes 30, 10, 20 ns; outputs 0.5, 0, 2.
	// Ordered pairs (i slower than j): (0,1): z = 0.5, (0,2): z = −1.5, (2,1): z = 2.
	// Hinge:    max(0, 0.5) + max(0, 2.5) + max(0, −1) = 3;   / (3·2/2) = 1.
	// Logistic: log(1+e^−0.5) + log(1+e^1.5) + log(1+e^−2) = 0.474077 + 1.701413 + 0.126928.
	pred := []float64{0.5, 0, 2}
	rt := []float64{30, 10, 20}
	if got := kernelRankLoss(LossRankHinge, pred, rt); math.Abs(got-1) > 1e-12 {
		t.Errorf("hinge: %g, want 1", got)
	}
	want := (math.Log1p(math.Exp(-0.5)) + math.Log1p(math.Exp(1.5)) + math.Log1p(math.Exp(-2))) / 3
	if got := kernelRankLoss(LossRankLogistic, pred, rt); math.Abs(got-want) > 1e-12 || math.Abs(want-0.7674727) > 1e-6 {
		t.Errorf("logistic: %g, want %g", got, want)
	}
	// Ties contribute nothing but count in the denominator.
	if got := kernelRankLoss(LossRankHinge, []float64{0, 0}, []float64{5, 5}); got != 0 {
		t.Errorf("tied runtimes: %g", got)
	}
	if got := kernelRankLoss(LossRankHinge, []float64{7}, []float64{5}); got != 0 {
		t.Errorf("one configuration: %g", got)
	}
	// Large margins do not overflow the logistic loss.
	if got := kernelRankLoss(LossRankLogistic, []float64{-800, 800}, []float64{2, 1}); math.IsInf(got, 0) || math.Abs(got-1600) > 1e-9 {
		t.Errorf("logistic at z=−1600: %g", got)
	}
	if got := mseLoss([]float64{1, 2}, []float64{0, 4}); got != 2.5 {
		t.Errorf("mse: %g, want 2.5", got)
	}
}

// Overfitting one batch of 8 kernels × 8 configurations for overfitSteps Adam steps must
// cut the loss by at least overfitReduction: observed 59× to 1.5·10⁵× over both feature
// sets and the four losses (ListMLE: 56×; the paper set's rank losses are the slowest: some configs of
// these kernels differ by 0.2–0.4% under the megacore model), while a model whose
// gradients are broken stays within a few times its starting loss.
const (
	overfitSteps     = 200
	overfitLR        = 3e-3
	overfitReduction = 30
)

func TestOverfitSmallBatch(t *testing.T) {
	rows := rowsWithConfigs(cachedRows(t, "resnet18_b1", dataset.TaskTile, 16), 8, 8)
	if len(rows) != 8 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, set := range features.ConfigSets() {
		for _, loss := range Losses() {
			t.Run(string(set)+"/"+string(loss), func(t *testing.T) {
				m := testModel(t, DefaultConfig().WithFeatures(set), dataset.TaskTile, loss, rows, 1)
				eng := newEngine(m, true, true, 2)
				defer eng.close()
				tr := &trainer{opts: TrainOptions{BatchKernels: 8}, m: m, adam: nn.NewAdam(m.Params, overfitLR), eng: eng}
				items := itemsOf(t, m, rows)
				first, last := 0.0, 0.0
				for i := range overfitSteps {
					l, err := tr.step(items)
					if err != nil {
						t.Fatal(err)
					}
					if i == 0 {
						first = l
					}
					last = l
				}
				// The training graph's loss agrees with the host loss of the predictions.
				pe := newEngine(m, false, true, 2)
				defer pe.close()
				ks := make([]*kernel, len(items))
				for i := range items {
					ks[i] = items[i].k
				}
				outs, err := pe.predict(ks, 8)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := newBatch(m.Config, items, false, 0, loss, m.Target, false)
				var packed []float64
				for _, o := range outs {
					packed = append(packed, o...)
				}
				host := b.lossOf(packed)
				t.Logf("loss %.4g -> %.3g after %d steps (host %.3g)", first, last, overfitSteps, host)
				if host > first/overfitReduction {
					t.Errorf("loss %.3g -> %.3g after %d steps: want a reduction of at least %d×", first, host, overfitSteps, overfitReduction)
				}
			})
		}
	}
}

// trainRows are the rows of the trainer tests: two small models, tile task.
func trainRows(t *testing.T) (train, val sliceSource) {
	t.Helper()
	a := cachedRows(t, "resnet18_b1", dataset.TaskTile, 12)
	b := cachedRows(t, "unet_d3_c32_r128_b8", dataset.TaskTile, 12)
	return sliceSource(a), sliceSource(b[:12])
}

func smallOptions(dir string) TrainOptions {
	c := DefaultConfig()
	c.Hidden, c.EmbedDim, c.Head = 16, 8, []int{16}
	return TrainOptions{Task: dataset.TaskTile, Model: c, Epochs: 3, BatchKernels: 8, MaxConfigs: 6, LR: 3e-3, Seed: 42,
		ShuffleBuffer: 7, OutDir: dir}
}

func TestTrainIsDeterministic(t *testing.T) {
	train, val := trainRows(t)
	run := func(seed int64) []byte {
		o := smallOptions("")
		o.Seed = seed
		r, err := trainSources(context.Background(), train, val, o)
		if err != nil {
			t.Fatal(err)
		}
		return r.Model.Params.Bytes()
	}
	a, b, c := run(42), run(42), run(43)
	if !bytes.Equal(a, b) {
		t.Error("the same seed and data gave different weights")
	}
	if bytes.Equal(a, c) {
		t.Error("different seeds gave the same weights")
	}
}

func TestTrainCheckpointResumeAndLoad(t *testing.T) {
	train, val := trainRows(t)
	var progress bytes.Buffer
	// Uninterrupted: 3 epochs.
	full := smallOptions(filepath.Join(t.TempDir(), "full"))
	full.Progress = &progress
	r, err := trainSources(context.Background(), train, val, full)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.History) != 3 || r.BestEpoch < 1 || r.History[0].Val == nil || r.History[0].Val.Kernels != len(val) {
		t.Fatalf("history %+v, best %d", r.History, r.BestEpoch)
	}
	if !strings.Contains(progress.String(), "epoch 3/3") {
		t.Errorf("progress:\n%s", progress.String())
	}
	// Interrupted after 1 epoch, then resumed: the same final state (the learning-rate
	// schedule is over the checkpoint's whole budget).
	dir := filepath.Join(t.TempDir(), "resumed")
	part := smallOptions(dir)
	ctx, cancel := context.WithCancel(context.Background())
	part.Progress = cancelAfter{"epoch 1/3: train loss", cancel}
	if _, err := trainSources(ctx, train, val, part); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted training: %v", err)
	}
	part.Progress = nil
	if _, err := trainSources(context.Background(), train, val, part); err == nil {
		t.Error("training into an existing checkpoint without resuming was accepted")
	}
	res := smallOptions(dir)
	res.Resume = true
	r2, err := trainSources(context.Background(), train, val, res)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(r.Model.Params.Bytes(), r2.Model.Params.Bytes()) || r.BestEpoch != r2.BestEpoch {
		t.Error("resumed training differs from uninterrupted training")
	}
	for i := range r.History {
		if r.History[i].TrainLoss != r2.History[i].TrainLoss || !reflect.DeepEqual(r.History[i].Val, r2.History[i].Val) {
			t.Errorf("epoch %d: %+v vs %+v", i+1, r.History[i], r2.History[i])
		}
	}
	// Load returns the best model; its predictions equal the in-memory one's.
	m, c, err := Load(full.OutDir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(m.Params.Bytes(), r.Model.Params.Bytes()) || c.BestEpoch != r.BestEpoch || len(c.History) != 3 || c.Stopped != "epochs" {
		t.Error("loaded checkpoint differs from the trained model")
	}
	// Only the named tensor files remain.
	entries, _ := os.ReadDir(full.OutDir)
	if len(entries) != 6 { // model.json, weights, state, seen keys, the per-epoch log, the directory's kind
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("checkpoint files: %v", names)
	}
}

func TestLoadRefusesOtherFeatureSchema(t *testing.T) {
	train, _ := trainRows(t)
	m := testModel(t, tinyConfig(), dataset.TaskTile, LossRankHinge, train, 1)
	dir := t.TempDir()
	if err := m.Save(dir, Meta{Chip: "v4"}); err != nil {
		t.Fatal(err)
	}
	back, _, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.Params.Bytes(), m.Params.Bytes()) {
		t.Fatal("save/load changed the weights")
	}
	path := filepath.Join(dir, ModelFile)
	data, _ := os.ReadFile(path)
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	raw["feature_schema_version"] = 99
	raw["checksum"] = ""
	data, _ = json.MarshalIndent(raw, "", "  ")
	data, err = sealed.Seal(data) // a consistent file, as an older or newer tpucost would write
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, data, 0o644)
	_, _, err = Load(dir)
	if !errors.Is(err, ErrFeatureSchema) || !strings.Contains(err.Error(), "version 99") {
		t.Errorf("loading a version-99 checkpoint: %v", err)
	}
	// A corrupt weights file is detected.
	if err := m.Save(dir, Meta{}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "weights-e0000.bin"), []byte("TPCGNN\x00\x01garbage"), 0o644)
	if _, _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("corrupt weights: %v", err)
	}
}

// TestPaperModelReadsNoPlanFeature: a model on the paper feature set sees the same inputs
// whatever the stored plan features (columns PaperConfigWidth and after) hold, and a
// checkpoint from before feature sets (no "features" field) reads every feature.
func TestPaperModelReadsNoPlanFeature(t *testing.T) {
	train, _ := trainRows(t)
	m := testModel(t, tinyConfig().WithFeatures(features.ConfigPaper), dataset.TaskTile, LossRankHinge, train, 1)
	row := train[0]
	before, err := m.prepare(&row)
	if err != nil {
		t.Fatal(err)
	}
	scrambled := row
	scrambled.ConfigFeats = nil
	for _, c := range row.ConfigFeats {
		c = slices.Clone(c)
		for j := features.PaperConfigWidth; j < len(c); j++ {
			c[j] = float32(j) * 1e3
		}
		scrambled.ConfigFeats = append(scrambled.ConfigFeats, c)
	}
	after, err := m.prepare(&scrambled)
	if err != nil {
		t.Fatal(err)
	}
	for i := range before.cf {
		if len(before.cf[i]) != features.PaperConfigWidth || !slices.Equal(before.cf[i], after.cf[i]) {
			t.Fatalf("config %d: the paper model's inputs depend on plan features (%d wide)", i, len(before.cf[i]))
		}
	}
	legacy := tinyConfig()
	legacy.Features, legacy.ConfigWidth = "", features.ConfigWidth
	if legacy.ConfigSet() != features.ConfigPlan || legacy.matchesSchema() != nil {
		t.Errorf("a checkpoint without a feature set must read the plan set: %v", legacy.matchesSchema())
	}
	bad := tinyConfig()
	bad.Features = "oracle"
	if bad.matchesSchema() == nil {
		t.Error("an unknown feature set was accepted")
	}
}
