package gnn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/dataset"
)

// TestMergeResume: settings not set are taken from the checkpoint (the architecture as a
// whole, training settings cleared for training to fill, the split copied); set ones
// are kept for training to compare with the checkpoint's.
func TestMergeResume(t *testing.T) {
	ck := &Checkpoint{Task: dataset.TaskTile, Config: DefaultConfig()}
	ck.Config.Layers, ck.Config.Hidden = 2, 16
	ck.Meta.Split, ck.Meta.TestFraction, ck.Meta.ValFraction, ck.Meta.SplitSeed = dataset.SplitProgram, 0.3, 0.2, 7
	model := DefaultConfig()
	model.Layers, model.Hidden = 5, 32
	data := DataOptions{Dir: "d", Split: dataset.SplitRandom, TestFraction: 0.1, ValFraction: 0.1, SplitSeed: 1}
	opts := TrainOptions{Model: model, Epochs: 9, BatchKernels: 4, LR: 0.5, Seed: 3, Schedule: ScheduleConstant}

	none := func(string) bool { return false }
	d, o := MergeResume(ck, model, data, opts, none)
	if o.Model.Layers != 0 || o.Epochs != 0 || o.BatchKernels != 0 || o.LR != 0 || o.Seed != 0 || o.Schedule != "" {
		t.Errorf("nothing set: options %+v, want every setting cleared", o)
	}
	if d.Split != dataset.SplitProgram || d.TestFraction != 0.3 || d.ValFraction != 0.2 || d.SplitSeed != 7 || d.Dir != "d" {
		t.Errorf("nothing set: data %+v, want the checkpoint's split", d)
	}

	set := []string{"layers", "epochs", "lr", "split_seed"}
	d, o = MergeResume(ck, model, data, opts, func(f string) bool { return slices.Contains(set, f) })
	if o.Model.Layers != 5 || o.Model.Hidden != 16 {
		t.Errorf("--layers set: model %d layers, hidden %d; want 5 (set) and 16 (the checkpoint's)", o.Model.Layers, o.Model.Hidden)
	}
	if o.Epochs != 9 || o.LR != 0.5 || o.BatchKernels != 0 || o.Seed != 0 {
		t.Errorf("epochs, lr set: options %+v", o)
	}
	if d.SplitSeed != 1 || d.Split != dataset.SplitProgram {
		t.Errorf("split_seed set: data %+v", d)
	}
}

// TestResumeNeverShortensTheBudget: `--resume --epochs N` below the epochs trained once
// "finished" at once and recorded N as the budget, and the stop reason named the
// checkpoint's epochs ("the 1829 epochs asked for" when 5 were). Now it is refused with
// both numbers and what to do, and every message gives the numbers asked for.
func TestResumeNeverShortensTheBudget(t *testing.T) {
	train, val := trainRows(t)
	dir := filepath.Join(t.TempDir(), "model")
	o := smallOptions(dir)
	o.Epochs = 2
	if _, err := trainSources(context.Background(), train, val, o); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(dir, ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	res := smallOptions(dir)
	res.Resume, res.Epochs = true, 1
	_, err = trainSources(context.Background(), train, val, res)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "epochs" || fe.Value != "1" || !strings.Contains(err.Error(), "has trained 2 epochs") ||
		!strings.Contains(err.Error(), "at least 2") || !strings.Contains(err.Error(), "leave them unset") {
		t.Fatalf("resume with fewer epochs than trained: %v", err)
	}
	if msg := trainFlagError(err).Error(); !strings.HasPrefix(msg, "--epochs \"1\": want at least 2") {
		t.Errorf("as a flag: %s", msg)
	}
	if _, err := CheckResume(dir, res); !errors.As(err, &fe) {
		t.Errorf("CheckResume with fewer epochs than trained: %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, ModelFile)); !bytes.Equal(before, after) {
		t.Error("the refused resume changed the checkpoint")
	}
	// More epochs: trained, and the reason gives the number asked for.
	res.Epochs = 3
	r, err := trainSources(context.Background(), train, val, res)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.History) != 3 || r.StopReason != fmt.Sprintf("budget: the 3 epochs asked for; best epoch %d", r.BestEpoch) {
		t.Errorf("resumed to 3 epochs: %d epochs, reason %q", len(r.History), r.StopReason)
	}
	// Nothing left of the budget: said, not silently "finished".
	var progress bytes.Buffer
	res.Epochs, res.Progress = 0, &progress
	r, err = trainSources(context.Background(), train, val, res)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.History) != 3 || r.Checkpoint.Settings.Epochs != 3 || !strings.Contains(progress.String(), "has trained 3 epochs, its budget: nothing to train") {
		t.Errorf("resume of a finished budget: %d epochs, budget %d, progress:\n%s", len(r.History), r.Checkpoint.Settings.Epochs, progress.String())
	}
}
