package gnn

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/features"
	"github.com/tpucost/tpucost/tpusim"
)

// writeDataset writes rows of several zoo models (one part per model, with their
// occurrences) as a tile dataset with the dataset Writer.
func writeDataset(t *testing.T, dir string, models []string) {
	t.Helper()
	writeTaskDataset(t, dir, models, dataset.TaskTile)
}

// writeTaskDataset is writeDataset for a task's rows.
func writeTaskDataset(t *testing.T, dir string, models []string, task dataset.Task) {
	t.Helper()
	chip := testChip(t)
	prov := dataset.Provenance{SchemaVersion: dataset.SchemaVersion, FeatureSchema: features.CurrentSchema(), SimulatorVersion: tpusim.Version,
		Chip: chip.Name, VMEMBytes: chip.VMEMBytes, Task: task, ConfigsPerKernel: 8, Models: models, ShardCount: 1}
	w, err := dataset.NewWriter(dataset.WriterOptions{Dir: dir, Format: dataset.FormatArrow, Provenance: prov})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for unit, m := range models {
		var rows []dataset.Row
		var occ []dataset.Occurrence
		for _, r := range cachedRows(t, m, task, 8) {
			occ = append(occ, dataset.Occurrence{Unit: int64(unit), Program: r.Program, KernelKey: r.KernelKey, Count: 1})
			if seen[r.KernelKey] {
				continue
			}
			seen[r.KernelKey] = true
			r.Unit = int64(unit)
			rows = append(rows, r)
		}
		if err := w.WritePart(int64(unit), int64(unit), rows, occ); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestOpenDataSplits(t *testing.T) {
	dir := t.TempDir()
	models := []string{"resnet18_b1", "unet_d3_c32_r128_b8", "mlp_768x3_b8", "dlrm_small_b32", "rnn_char_h96_t24_b1"}
	writeDataset(t, dir, models)
	programs := func(src RowSource) map[string]int {
		out := map[string]int{}
		if err := src.Rows(func(r *dataset.Row) error { out[r.Program]++; return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	train, val, meta, err := OpenData(DataOptions{Dir: dir, Split: dataset.SplitProgram, TestFraction: 0.2, ValFraction: 0.25}, dataset.TaskTile)
	if err != nil {
		t.Fatal(err)
	}
	tp, vp := programs(train), programs(val)
	if len(tp) == 0 || len(vp) != 1 || len(tp)+len(vp) != len(models)-1 {
		t.Errorf("program split: train programs %v, validation programs %v", tp, vp)
	}
	for p := range vp {
		if tp[p] > 0 {
			t.Errorf("program %s in both training and validation", p)
		}
	}
	if meta.Chip != "v4" || meta.Split != dataset.SplitProgram || meta.ValFraction != 0.25 {
		t.Errorf("meta %+v", meta)
	}
	// Random split: validation kernels are a hash-chosen subset, disjoint from training.
	train, val, _, err = OpenData(DataOptions{Dir: dir}, dataset.TaskTile)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	train.Rows(func(r *dataset.Row) error { keys[r.KernelKey] = true; return nil })
	nv := 0
	val.Rows(func(r *dataset.Row) error {
		nv++
		if keys[r.KernelKey] {
			t.Errorf("kernel %s in both parts", r.KernelKey)
		}
		return nil
	})
	if nv == 0 || len(keys) < 4*nv {
		t.Errorf("random split: %d training and %d validation kernels", len(keys), nv)
	}
	if _, _, _, err := OpenData(DataOptions{Dir: dir}, dataset.TaskFusion); err == nil {
		t.Error("a tile dataset opened for the fusion task")
	}
	// Training from the directory, cancelled: the error says so.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o := smallOptions("")
	if _, err := TrainDataset(ctx, DataOptions{Dir: dir}, o); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled training: %v", err)
	}
	if r, err := TrainDataset(context.Background(), DataOptions{Dir: dir}, o); err != nil || r.Checkpoint.Meta.Data != dir {
		t.Errorf("training from %s: %v", dir, err)
	}
	// The dataset directory is no place for a checkpoint.
	o.OutDir = dir + "/."
	if _, err := TrainDataset(context.Background(), DataOptions{Dir: dir}, o); err == nil || !strings.Contains(err.Error(), "is the dataset directory") {
		t.Errorf("training into the dataset directory: %v", err)
	}
	// Interrupted after a checkpoint: the error says how to go on.
	o.OutDir, o.Epochs, o.Patience = t.TempDir(), 3, -1
	ctx, cancel = context.WithCancel(context.Background())
	o.Progress = cancelAfter{"epoch 1/3: train loss", cancel}
	_, err = TrainDataset(ctx, DataOptions{Dir: dir}, o)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "holds the checkpoint of epoch 1; run the same command with --resume") {
		t.Errorf("interrupted training: %v", err)
	}
}

// cancelAfter cancels when a progress line contains marker.
type cancelAfter struct {
	marker string
	cancel func()
}

func (c cancelAfter) Write(p []byte) (int, error) {
	if strings.Contains(string(p), c.marker) {
		c.cancel()
	}
	return len(p), nil
}
