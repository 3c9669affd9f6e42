package gnn

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/internal/dirlock"
)

// TestCheckpointFilesAreVerified flips one byte in each file of a trained checkpoint:
// loading it must fail with one error line naming that file.
func TestCheckpointFilesAreVerified(t *testing.T) {
	train, val := trainRows(t)
	o := smallOptions(filepath.Join(t.TempDir(), "m"))
	o.Epochs = 1
	if _, err := trainSources(context.Background(), train, val, o); err != nil {
		t.Fatal(err)
	}
	all, err := os.ReadDir(o.OutDir)
	if err != nil {
		t.Fatal(err)
	}
	// The checkpoint's files, not the log or the directory's kind (which loading does
	// not read).
	var entries []os.DirEntry
	for _, e := range all {
		if e.Name() != TrainLogFile && e.Name() != dirlock.KindFile {
			entries = append(entries, e)
		}
	}
	if len(entries) != 4 {
		t.Fatalf("%d checkpoint files, want model.json, weights, state and seen keys", len(entries))
	}
	for _, e := range entries {
		t.Run(e.Name(), func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range entries {
				b, _ := os.ReadFile(filepath.Join(o.OutDir, f.Name()))
				if f.Name() == e.Name() {
					// A byte in the middle: for model.json inside a value, so the JSON
					// stays well-formed and only the checksum can tell.
					i := len(b) / 2
					if e.Name() == ModelFile {
						i = strings.Index(string(b), `"seed": 42`) + len(`"seed": 4`)
					}
					b[i] ^= 0x01
				}
				os.WriteFile(filepath.Join(dir, f.Name()), b, 0o644)
			}
			_, _, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, e.Name())) || strings.Contains(err.Error(), "\n") {
				t.Errorf("load with a flipped byte in %s: %v; want one line naming the file", e.Name(), err)
			}
			ro := smallOptions(dir)
			ro.Resume = true
			if _, err := trainSources(context.Background(), train, val, ro); err == nil || !strings.Contains(err.Error(), e.Name()) {
				t.Errorf("resume with a flipped byte in %s: %v", e.Name(), err)
			}
		})
	}
	// The intact checkpoint loads.
	if _, err := ReadCheckpoint(o.OutDir); err != nil {
		t.Fatal(err)
	}
	// Any flipped bit of model.json, wherever it is, is an error naming the file.
	path := filepath.Join(o.OutDir, ModelFile)
	orig, _ := os.ReadFile(path)
	defer os.WriteFile(path, orig, 0o644)
	for i := 0; i < len(orig); i += 13 {
		for _, bit := range []byte{0x01, 0x20} {
			b := slices.Clone(orig)
			b[i] ^= bit
			os.WriteFile(path, b, 0o644)
			if _, err := ReadCheckpoint(o.OutDir); err == nil || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("bit %#x of byte %d (%q) flipped: %v", bit, i, orig[i], err)
			}
		}
	}
}

// TestTrainedOnIsRecorded checks that a checkpoint lists the kernels and programs of the
// training and validation rows, and its datasets relative to the checkpoint directory.
func TestTrainedOnIsRecorded(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, "data")
	writeDataset(t, data, []string{"mlp_768x3_b8", "resnet18_b1", "bert_tiny_s128_b32"})
	o := smallOptions(filepath.Join(root, "models", "m"))
	o.Epochs = 1
	dopts := DataOptions{Dir: data, Split: dataset.SplitRandom, TestFraction: 0.3}
	if _, err := TrainDataset(context.Background(), dopts, o); err != nil {
		t.Fatal(err)
	}
	c, err := ReadCheckpoint(o.OutDir)
	if err != nil {
		t.Fatal(err)
	}
	fp, _ := dataset.Fingerprint(data)
	if c.TrainedOn == nil || len(c.TrainedOn.Datasets) != 1 || c.TrainedOn.Datasets[0] != (DatasetRef{Path: "../../data", Fingerprint: fp}) {
		t.Fatalf("trained_on %+v", c.TrainedOn)
	}
	if got := c.DatasetPaths(o.OutDir); len(got) != 1 || filepath.Clean(got[0]) != data {
		t.Errorf("dataset paths %v, want [%s]", got, data)
	}
	seen, err := SeenKeys(o.OutDir, c)
	if err != nil {
		t.Fatal(err)
	}
	train, val, _, err := OpenData(dopts, dataset.TaskTile)
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64]bool{}
	programs := map[string]bool{}
	for _, src := range []RowSource{train, val} {
		src.Rows(func(r *dataset.Row) error { want[KernelID(r.KernelKey)] = true; programs[r.Program] = true; return nil })
	}
	if !slices.Equal(seen, newKeySet(want)) {
		t.Errorf("seen keys: %d recorded, %d training and validation kernels", len(seen), len(want))
	}
	var wp []string
	for p := range programs {
		wp = append(wp, p)
	}
	slices.Sort(wp)
	if !slices.Equal(c.TrainedOn.TrainPrograms, wp) {
		t.Errorf("train_programs %v, want %v", c.TrainedOn.TrainPrograms, wp)
	}
	// Test rows are not among them (a random split is by kernel).
	d, _ := dataset.Open(data)
	split, _ := dataset.NewSplit(d, dopts.Split, dopts.TestFraction, dopts.SplitSeed)
	tests := 0
	d.Rows(dataset.ReadOptions{Split: split, Part: dataset.Test}, func(r *dataset.Row) error {
		tests++
		if seen.Contains(KernelID(r.KernelKey)) {
			t.Errorf("test kernel %s recorded as seen", r.KernelKey)
		}
		return nil
	})
	if tests == 0 {
		t.Error("no test rows")
	}
}

func TestKernelID(t *testing.T) {
	if got := KernelID("00000000000000ff"); got != 0xff {
		t.Errorf("hex key: %#x", got)
	}
	if KernelID("k1") == KernelID("k2") || KernelID("k1") != KernelID("k1") {
		t.Error("non-hex keys are not hashed consistently")
	}
}
