package eval

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/gnn"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/zoo"
)

// TestReportProgram reports a program with an absolute (mse) and a relative
// (rank-logistic) tile model: every kernel is reported, totals are positive, and a
// relative model's options are listed best first, at most topK of them, with the pick no
// faster than the best option.
func TestReportProgram(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, "data")
	genAt(t, data, "v4", 3, "mlp_96x2_b1", "resnet18_b1")
	chip, err := tpusim.Preset("v4")
	if err != nil {
		t.Fatal(err)
	}
	timer := func(c cost.Planned) (float64, float64, error) { return tpusim.TimeChoice(c, chip) }
	m, err := zoo.Resolve("resnet18_b1")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := compiler.Compile(m, nil, compiler.Options{Target: chip.Target})
	if err != nil {
		t.Fatal(err)
	}
	for _, loss := range []gnn.Loss{gnn.LossMSE, gnn.LossRankLogistic} {
		out := filepath.Join(root, string(loss))
		cfg := gnn.DefaultConfig()
		cfg.Hidden, cfg.EmbedDim, cfg.Layers, cfg.Head = 8, 4, 1, []int{8}
		if _, err := gnn.TrainDataset(context.Background(), gnn.DataOptions{Dir: data, Split: dataset.SplitRandom, TestFraction: 0.2, SplitSeed: 1},
			gnn.TrainOptions{Task: dataset.TaskTile, Loss: loss, Model: cfg, Epochs: 1, BatchKernels: 8, Seed: 1, OutDir: out}); err != nil {
			t.Fatal(err)
		}
		p, err := gnn.LoadPredictor(out, chip.Target)
		if err != nil {
			t.Fatal(err)
		}
		r, err := ReportProgram(p, prog, 3, timer)
		p.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Kernels) != len(prog.Kernels) || !(r.SimTotalNs > 0) || r.Relative != loss.Rank() {
			t.Fatalf("%s: report %d kernels, sim total %g", loss, len(r.Kernels), r.SimTotalNs)
		}
		if !loss.Rank() && !(r.PredictedTotalNs > 0) {
			t.Errorf("no predicted total")
		}
		k := r.Kernels[0]
		if len(k.Options) == 0 || len(k.Options) > 3 || k.CurrentRank < 1 || k.BestOptionNs > k.ModelPickNs || r.BestOptionTotalNs > r.ModelPickTotalNs {
			t.Errorf("%s: kernel report %+v", loss, k)
		}
		for i := 1; i < len(k.Options); i++ {
			if k.Options[i].Score < k.Options[i-1].Score || k.Options[i].Tile == nil {
				t.Errorf("options out of order: %+v", k.Options)
			}
		}
	}
}
