package gnn

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/nn"
)

// multiRows are tile and flags rows of one model (the same kernels under both passes).
func multiRows(t *testing.T) []dataset.Row {
	t.Helper()
	tile := rowsWithConfigs(cachedRows(t, "resnet18_b1", dataset.TaskTile, 8), 3, 10)
	flags := rowsWithConfigs(cachedRows(t, "resnet18_b1", dataset.TaskFlags, 8), 3, 10)
	if len(tile) < 4 || len(flags) < 4 {
		t.Fatalf("%d tile and %d flags rows", len(tile), len(flags))
	}
	return append(slices.Clone(tile), flags...)
}

func multiConfig() Config {
	c := DefaultConfig()
	c.Hidden, c.EmbedDim, c.Head = 16, 8, []int{16}
	c.Tasks = []dataset.Task{dataset.TaskTile, dataset.TaskFlags}
	return c
}

func TestMultiTaskParams(t *testing.T) {
	c := multiConfig()
	single := c
	single.Tasks = nil
	var shared, heads int
	for _, s := range c.paramSpecs() {
		switch {
		case strings.HasPrefix(s.name, "tile/") || strings.HasPrefix(s.name, "flags/"):
			heads++
		default:
			shared++
		}
	}
	var sHead int
	for _, s := range single.paramSpecs() {
		if strings.HasPrefix(s.name, "head") || strings.HasPrefix(s.name, "out.") {
			sHead++
		}
	}
	if heads != 2*sHead || shared != len(single.paramSpecs())-sHead {
		t.Errorf("multi-task model: %d shared and %d head parameters; single: %d head of %d", shared, heads, sHead, len(single.paramSpecs()))
	}
	bad := multiConfig()
	bad.Tasks = []dataset.Task{dataset.TaskTile}
	if err := bad.Validate(); err == nil {
		t.Error("a multi-task model with one head was accepted")
	}
	bad.Tasks = []dataset.Task{dataset.TaskTile, dataset.TaskTile}
	if err := bad.Validate(); err == nil {
		t.Error("two heads of one task were accepted")
	}
	rows := multiRows(t)
	st, ts, err := fitStats(sliceSource(rows))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewModel(multiConfig(), dataset.TaskFlags, LossRankHinge, st, ts, 1); err == nil {
		t.Error("a multi-task model whose task is not its first head was accepted")
	}
	mixed := multiConfig()
	mixed.Tasks = []dataset.Task{dataset.TaskTile, dataset.TaskFusion}
	if _, err := NewModel(mixed, dataset.TaskTile, LossRankHinge, st, ts, 1); err == nil {
		t.Error("relative and absolute heads in one model were accepted")
	}
}

// TestMultiTaskStepTouchesOneHead: a batch of flags kernels trains the shared layers and
// the flags head, and leaves the tile head (and its optimizer moments) alone.
func TestMultiTaskStepTouchesOneHead(t *testing.T) {
	rows := multiRows(t)
	m := testModel(t, multiConfig(), dataset.TaskTile, LossRankHinge, rows, 1)
	var flags []dataset.Row
	for _, r := range rows {
		if r.Task == dataset.TaskFlags {
			flags = append(flags, r)
		}
	}
	items := itemsOf(t, m, flags)
	before := m.Params.Clone()
	eng := newEngine(m, true, true, 2)
	defer eng.close()
	tr := &trainer{opts: TrainOptions{BatchKernels: 8}, m: m, adam: nn.NewAdam(m.Params, 1e-2), eng: eng}
	if _, err := tr.step(items); err != nil {
		t.Fatal(err)
	}
	for i, p := range m.Params {
		changed := !slices.Equal(p.Data, before[i].Data)
		switch {
		case strings.HasPrefix(p.Name, "tile/") && changed:
			t.Errorf("%s changed on a flags batch", p.Name)
		case strings.HasPrefix(p.Name, "flags/") && !changed && !strings.HasSuffix(p.Name, ".b"):
			t.Errorf("%s did not change on a flags batch", p.Name)
		case p.Name == "sage1.w_self" && !changed:
			t.Errorf("shared %s did not change", p.Name)
		}
	}
	// Mixing heads in one batch is an error, not a quiet choice.
	tileItems := itemsOf(t, m, rows[:1])
	if _, err := newBatch(m.Config, append(tileItems, items[0]), true, 2, m.Loss, m.Target, true); err == nil {
		t.Error("a batch mixing tile and flags kernels was accepted")
	}
}

// TestMultiTaskTrains: Train on tile and flags rows with two heads is deterministic,
// validates on both tasks' rows and predicts each row with its task's head.
func TestMultiTaskTrains(t *testing.T) {
	rows := multiRows(t)
	run := func() *TrainResult {
		o := smallOptions("")
		o.Model, o.Epochs = multiConfig(), 2
		r, err := trainSources(context.Background(), sliceSource(rows), sliceSource(rows[:4]), o)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b := run(), run()
	if !bytes.Equal(a.Model.Params.Bytes(), b.Model.Params.Bytes()) {
		t.Error("the same seed gave different multi-task weights")
	}
	if got := a.Checkpoint.Config.Tasks; !slices.Equal(got, []dataset.Task{dataset.TaskTile, dataset.TaskFlags}) {
		t.Errorf("checkpoint records heads %v", got)
	}
	if a.History[0].Kernels != len(rows) {
		t.Errorf("epoch 1 trained on %d kernels, want all %d of both tasks", a.History[0].Kernels, len(rows))
	}
	// The two heads score one kernel differently.
	k := rows[0]
	other := rows[len(rows)-1]
	other.Graph, other.KernelKey = k.Graph, k.KernelKey
	other.ConfigFeats, other.RuntimesNs, other.AnalyticalNs = k.ConfigFeats, k.RuntimesNs, k.AnalyticalNs
	p, err := NewPredictor(a.Model, testChip(t).Target, PredictorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	outs, err := p.PredictRows([]*dataset.Row{&k, &other})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(outs[0], outs[1]) {
		t.Error("the tile and flags heads give the same scores: the row's task does not pick its head")
	}
	fusion := k
	fusion.Task = dataset.TaskFusion
	if _, err := p.PredictRows([]*dataset.Row{&fusion}); err == nil {
		t.Error("a fusion row was scored by a tile/flags model")
	}
}

// TestMultiTaskDatasetsAndResume: a multi-task model trains on a tile and a flags
// dataset directory, resumes with the checkpoint's heads (no architecture given), and a
// single-task model refuses the other task's data.
func TestMultiTaskDatasetsAndResume(t *testing.T) {
	root := t.TempDir()
	tile, flags := filepath.Join(root, "tile"), filepath.Join(root, "flags")
	writeTaskDataset(t, tile, []string{"resnet18_b1", "mlp_768x3_b8"}, dataset.TaskTile)
	writeTaskDataset(t, flags, []string{"resnet18_b1", "mlp_768x3_b8"}, dataset.TaskFlags)
	data := DataOptions{Dir: tile + "," + flags}
	out := filepath.Join(root, "multi")
	o := smallOptions(out)
	o.Model, o.Epochs = multiConfig(), 1
	if _, err := TrainDataset(context.Background(), data, o); err != nil {
		t.Fatal(err)
	}
	res := TrainOptions{Task: dataset.TaskTile, OutDir: out, Resume: true, Epochs: 2}
	r, err := TrainDataset(context.Background(), data, res)
	if err != nil {
		t.Fatalf("resuming the multi-task model: %v", err)
	}
	if len(r.History) != 2 || !slices.Equal(r.Model.Config.Tasks, multiConfig().Tasks) {
		t.Errorf("resumed: %d epochs, heads %v", len(r.History), r.Model.Config.Tasks)
	}
	single := smallOptions(filepath.Join(root, "single"))
	if _, err := TrainDataset(context.Background(), data, single); err == nil || !strings.Contains(err.Error(), "holds flags rows") {
		t.Errorf("a tile model on flags data: %v", err)
	}
}
