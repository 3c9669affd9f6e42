package eval

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/dataset/gen"
	"github.com/tpucost/tpucost/tpusim"
)

func genData(t *testing.T, task dataset.Task, models ...string) *dataset.Dataset {
	t.Helper()
	chip, err := tpusim.Preset("v4")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), string(task))
	if _, err := gen.Generate(context.Background(), gen.Options{Task: task, Models: models, Out: dir, Configs: 6, Chip: chip, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	d, err := dataset.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestEvaluateRelative(t *testing.T) {
	d := genData(t, dataset.TaskTile, "mlp_96x2_b1", "resnet18_b1")
	perfect := batch(func(r *dataset.Row) []float64 { return slices.Clone(r.RuntimesNs) })
	rep, err := Evaluate(d, nil, perfect, nil)
	if err != nil {
		t.Fatal(err)
	}
	if *rep.Learned.APE != 0 || rep.Learned.SlowdownAt["1"] != 0 || rep.Learned.KendallTau < 0.999 {
		t.Errorf("perfect model: %+v", rep.Learned)
	}
	if rep.Analytical.APE == nil || *rep.Analytical.APE < 0 || rep.Programs != 2 || len(rep.PerProgram) != 2 {
		t.Errorf("analytical %+v, %d programs", rep.Analytical, rep.Programs)
	}
	// A model equal to the analytical one scores exactly like it.
	same := batch(func(r *dataset.Row) []float64 { return slices.Clone(r.AnalyticalNs) })
	rep2, err := Evaluate(d, nil, same, nil)
	if err != nil {
		t.Fatal(err)
	}
	if *rep2.Learned.APE != *rep2.Analytical.APE || rep2.Learned.KendallTau != rep2.Analytical.KendallTau {
		t.Errorf("same predictions, different metrics: %+v vs %+v", rep2.Learned, rep2.Analytical)
	}
	files, err := WritePlots(t.TempDir(), rep2, []EpochPoint{{1, 1, 2, 3}, {2, 0.5, 1, 2}}, "APE")
	if err != nil || len(files) != 3 {
		t.Errorf("plots %v, %v", files, err)
	}
}

func TestEvaluateAbsolute(t *testing.T) {
	d := genData(t, dataset.TaskFusion, "mlp_96x2_b1", "resnet18_b1")
	perfect := batch(func(r *dataset.Row) []float64 { return slices.Clone(r.RuntimesNs) })
	rep, err := Evaluate(d, nil, perfect, nil)
	if err != nil {
		t.Fatal(err)
	}
	if *rep.Learned.MAPE != 0 || *rep.Learned.ProgramMAPE != 0 || rep.Learned.APE != nil {
		t.Errorf("perfect model: %+v", rep.Learned)
	}
	if *rep.Analytical.MAPE <= 0 {
		t.Errorf("analytical MAPE %v: the roofline should be off", *rep.Analytical.MAPE)
	}
	split, err := dataset.NewSplit(d, "program", 0.5, 1)
	if err != nil {
		t.Fatal(err)
	}
	rep, err = Evaluate(d, split, perfect, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Programs != 1 || rep.Split != "program" {
		t.Errorf("program split: %d programs (%s)", rep.Programs, rep.Split)
	}
}

func batch(f func(*dataset.Row) []float64) Predict {
	return func(rows []*dataset.Row) ([][]float64, error) {
		out := make([][]float64, len(rows))
		for i, r := range rows {
			out[i] = f(r)
		}
		return out, nil
	}
}
