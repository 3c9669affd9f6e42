package gnn

import (
	"slices"
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
