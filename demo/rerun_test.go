package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/gnn"
)

// TestDemoIsRerunnable runs a tiny demo twice into one directory: the second run
// succeeds, reuses every dataset and model and reports the same evaluation. A damaged
// checkpoint and a damaged dataset are redone on the next run, the rest still reused.
func TestDemoIsRerunnable(t *testing.T) {
	out := t.TempDir()
	ctx := context.Background()
	opts := Options{Out: out, Quick: true, TrainModels: []string{"mlp_96x2_b1", "resnet18_b1", "bert_tiny_s128_b32", "mlp_768x3_b8"},
		TuneModels: []string{"mlp_96x2_b1"}}
	first, err := Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Reused) != 0 {
		t.Errorf("first run reused %v", first.Reused)
	}
	weights, err := os.ReadFile(filepath.Join(modelDir(out, "tile"), mustCheckpoint(t, modelDir(out, "tile")).Weights.File))
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	opts.Progress = &progress
	second, err := Run(ctx, opts)
	if err != nil {
		t.Fatalf("second run: %v", err)
	}
	all := []string{dataDir(out, dataset.TaskTile), dataDir(out, dataset.TaskFusion), dataDir(out, dataset.TaskLayout), modelDir(out, "tile"), modelDir(out, "fusion")}
	if !sameSet(second.Reused, all) {
		t.Errorf("second run reused %v, want %v\n%s", second.Reused, all, progress.String())
	}
	for _, pair := range [][2]any{{first.Tile.Report, second.Tile.Report}, {first.Graph.Report, second.Graph.Report}} {
		a, _ := json.Marshal(pair[0])
		b, _ := json.Marshal(pair[1])
		if !bytes.Equal(a, b) {
			t.Error("the rerun's evaluation differs")
		}
	}

	// Damage the tile model's weights and one byte of the layout data: both are redone.
	// Generation is deterministic, so the regenerated layout data has the fingerprint the
	// fusion model recorded, and that model is reused.
	ck := mustCheckpoint(t, modelDir(out, "tile"))
	path := filepath.Join(modelDir(out, "tile"), ck.Weights.File)
	b, _ := os.ReadFile(path)
	b[len(b)/2] ^= 1
	os.WriteFile(path, b, 0o644)
	d, err := dataset.Open(dataDir(out, dataset.TaskLayout))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(d.Files[0])
	b[len(b)/2] ^= 1
	os.WriteFile(d.Files[0], b, 0o644)
	// And the fusion data's manifest loses its checksum (as one from before manifest
	// checksums): its part files keep their fingerprint, but the data is redone (it was
	// reused, then refused by training), and the fusion model, whose data has the same
	// fingerprint again, is reused.
	fusionData := dataDir(out, dataset.TaskFusion)
	mpath := filepath.Join(fusionData, dataset.ManifestName(dataset.TaskFusion, 0, 1))
	b, _ = os.ReadFile(mpath)
	os.WriteFile(mpath, regexp.MustCompile(`,\n  "checksum": "[0-9a-f]*"`).ReplaceAll(b, nil), 0o644)
	progress.Reset()
	third, err := Run(ctx, opts)
	if err != nil {
		t.Fatalf("third run: %v\n%s", err, progress.String())
	}
	if want := []string{dataDir(out, dataset.TaskTile), modelDir(out, "fusion")}; !sameSet(third.Reused, want) {
		t.Errorf("after damage, reused %v, want %v\n%s", third.Reused, want, progress.String())
	}
	if !strings.Contains(progress.String(), "retraining "+modelDir(out, "tile")) || !strings.Contains(progress.String(), "regenerating") {
		t.Errorf("progress does not say the tile model is retrained:\n%s", progress.String())
	}
	// Same seed, same data: the retrained tile model has the first run's weights.
	again, err := os.ReadFile(filepath.Join(modelDir(out, "tile"), mustCheckpoint(t, modelDir(out, "tile")).Weights.File))
	if err != nil || !bytes.Equal(again, weights) {
		t.Errorf("retrained tile weights differ from the first run's (%v)", err)
	}
}

// cancelOn cancels a context when a progress line contains a string.
type cancelOn struct {
	s      string
	cancel context.CancelFunc
}

func (c cancelOn) Write(p []byte) (int, error) {
	if strings.Contains(string(p), c.s) {
		c.cancel()
	}
	return len(p), nil
}

// TestDemoResumesInterruptedTraining interrupts the tile model's training after its first
// epoch: the next demo run resumes it and gets the uninterrupted weights.
func TestDemoResumesInterruptedTraining(t *testing.T) {
	out := t.TempDir()
	opts := Options{Out: out, Quick: true, TrainModels: []string{"mlp_96x2_b1", "resnet18_b1", "bert_tiny_s128_b32"}, TuneModels: []string{"mlp_96x2_b1"}}
	if _, err := Run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	dir := modelDir(out, "tile")
	want, _ := os.ReadFile(filepath.Join(dir, mustCheckpoint(t, dir).Weights.File))
	os.RemoveAll(dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := opts.settings()
	_, err := gnn.TrainDataset(ctx, gnn.DataOptions{Dir: dataDir(out, dataset.TaskTile), Split: dataset.SplitProgram, SplitSeed: 1},
		gnn.TrainOptions{Task: dataset.TaskTile, Epochs: s.TileEpochs, Seed: 1, OutDir: dir, Progress: cancelOn{"epoch 1/", cancel}, ProgressEvery: 1 << 62})
	if err == nil {
		t.Fatal("training was not interrupted")
	}
	var progress bytes.Buffer
	opts.Progress = &progress
	if _, err := Run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(progress.String(), "resuming "+dir+" after epoch 1") {
		t.Errorf("the interrupted model was not resumed:\n%s", progress.String())
	}
	got, _ := os.ReadFile(filepath.Join(dir, mustCheckpoint(t, dir).Weights.File))
	if !bytes.Equal(got, want) {
		t.Error("resumed weights differ from the uninterrupted run's")
	}
}

func mustCheckpoint(t *testing.T, dir string) *gnn.Checkpoint {
	t.Helper()
	c, err := gnn.ReadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
