package gnn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/dataset"
)

// batchTol bounds the difference between a prediction made in a large padded batch and
// alone, relative to max(1, |prediction|) (scores are O(1), runtimes large): the same
// float32 arithmetic, except that matrix products of different shapes may block, and so
// round, differently (OpenBLAS does; observed ~4e-8 absolute on scores of O(1e-3)).
const batchTol = 1e-5

func near(a, b, tol float64) bool {
	return a == b || math.Abs(a-b) <= tol*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func TestPredictorBatchEqualsOneByOne(t *testing.T) {
	train, _ := trainRows(t)
	for _, loss := range []Loss{LossMSE, LossRankHinge} {
		t.Run(string(loss), func(t *testing.T) {
			m := testModel(t, DefaultConfig(), dataset.TaskTile, loss, train, 3)
			p, err := NewPredictor(m, testChip(t).Target, PredictorOptions{BatchKernels: 16})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if p.Relative() != loss.Rank() {
				t.Errorf("Relative() = %t", p.Relative())
			}
			prog := compileZoo(t, "resnet18_b1")
			target := testChip(t).Target
			var reqs []ScoreRequest
			for _, k := range prog.Kernels[:20] {
				choices := k.Info.Options(k.Key, target, k.Choice.Config.Flags)
				// A choice not planned for the predictor's target is planned for it; an
				// invalid tile scores +Inf.
				bad := cost.Planned{Info: k.Info, Key: k.Key, Config: cost.KernelConfig{Tile: cost.Tile{3, 5, 7}, Flags: k.Choice.Config.Flags}}
				reqs = append(reqs, ScoreRequest{Kernel: k, Choices: append(choices, bad)})
			}
			all, _, err := p.ScoreKernels(reqs)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range reqs {
				last := len(r.Choices) - 1
				if !math.IsInf(all[i][last], 1) {
					t.Errorf("%s: invalid tile scored %g", r.Kernel.Name, all[i][last])
				}
				for j := 0; j < last; j++ {
					one, err := p.ScoreKernel(r.Kernel, r.Choices[j:j+1])
					if err != nil {
						t.Fatal(err)
					}
					if !near(one[0], all[i][j], batchTol) || math.IsInf(one[0], 0) || math.IsNaN(one[0]) {
						t.Fatalf("%s %s: batched %g, alone %g", r.Kernel.Name, r.Choices[j].Config, all[i][j], one[0])
					}
					if !loss.Rank() && !(one[0] > 0) {
						t.Fatalf("absolute model predicted %g ns", one[0])
					}
				}
			}
			// Rows featurized at generation time predict what the kernel API predicts.
			rows := rowsFor(t, "resnet18_b1", dataset.TaskTile, 1000, rand.New(rand.NewPCG(1, 1)))
			var ptrs []*dataset.Row
			for i := range rows {
				ptrs = append(ptrs, &rows[i])
			}
			preds, err := p.PredictRows(ptrs)
			if err != nil {
				t.Fatal(err)
			}
			byKey := map[string]int{}
			for i, r := range reqs {
				byKey[r.Kernel.Key] = i
			}
			matched := 0
			for i, r := range rows {
				qi, ok := byKey[r.KernelKey]
				if !ok {
					continue
				}
				if len(preds[i]) != len(r.Configs) {
					t.Fatalf("%d predictions for %d configs", len(preds[i]), len(r.Configs))
				}
				for j := range r.Configs {
					if !near(preds[i][j], all[qi][j], batchTol) {
						t.Fatalf("row %s config %d: %g, kernel API %g", r.KernelName, j, preds[i][j], all[qi][j])
					}
				}
				matched++
			}
			if matched == 0 {
				t.Error("no row matched a scored kernel")
			}
			one, err := p.PredictRow(&rows[0])
			if err != nil || len(one) != len(preds[0]) || !near(one[0], preds[0][0], batchTol) {
				t.Errorf("PredictRow: %v, %v vs %v", err, one, preds[0])
			}
		})
	}
}

func TestPredictorConcurrentUse(t *testing.T) {
	train, _ := trainRows(t)
	m := testModel(t, tinyConfig(), dataset.TaskTile, LossRankHinge, train, 3)
	chip := testChip(t)
	p, err := NewPredictor(m, chip.Target, PredictorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	prog := compileZoo(t, "mlp_768x3_b8")
	want := make([][]float64, len(prog.Kernels))
	for i, k := range prog.Kernels {
		if want[i], err = p.ScoreKernel(k, []cost.Planned{k.Choice}); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for i, k := range prog.Kernels {
				got, err := p.ScoreKernel(k, []cost.Planned{k.Choice})
				if err == nil && got[0] != want[i][0] {
					err = fmt.Errorf("%s: %g concurrently, %g alone", k.Name, got[0], want[i][0])
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// tunerModel is the interface the tuner declares (tune.Model); Predictor must satisfy it.
type tunerModel interface {
	ScoreKernel(k *compiler.Kernel, choices []cost.Planned) ([]float64, error)
	Relative() bool
}

var _ tunerModel = (*Predictor)(nil)
