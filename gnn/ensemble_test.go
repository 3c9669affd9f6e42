package gnn

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/dataset"
)

// ensembleTol is the tolerance of the combined outputs' closed forms (float64 sums of a
// few terms).
const ensembleTol = 1e-12

func TestCombineMembers(t *testing.T) {
	// Relative: scores standardized per member, so a member's scale and offset do not
	// matter; members that agree have spread 0.
	mean, spread := combineMembers(true, TargetStats{}, [][]float64{{1, 2, 3}, {10, 20, 30}, {-5, -4, -3}})
	for j := range mean {
		want := []float64{-math.Sqrt(1.5), 0, math.Sqrt(1.5)}[j]
		if math.Abs(mean[j]-want) > ensembleTol || spread[j] > ensembleTol {
			t.Errorf("config %d: mean %g spread %g, want %g and 0", j, mean[j], spread[j], want)
		}
	}
	// Absolute: the mean of the standardized log runtimes; the spread in natural-log units.
	ts := TargetStats{LogMean: 8, LogStd: 2}
	mean, spread = combineMembers(false, ts, [][]float64{{0.1}, {0.3}})
	if math.Abs(mean[0]-0.2) > ensembleTol || math.Abs(spread[0]-0.1*2) > ensembleTol {
		t.Errorf("absolute: mean %g spread %g, want 0.2 and 0.2", mean[0], spread[0])
	}
}

// TestTrainEnsemble trains an ensemble of two, loads it back with its member, and checks
// that predictions are the members' combination with spreads, and that a tampered
// member is refused.
func TestTrainEnsemble(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	writeDataset(t, data, []string{"resnet18_b1", "unet_d3_c32_r128_b8"})
	o := smallOptions(filepath.Join(dir, "ens"))
	o.Epochs = 1
	res, err := TrainEnsemble(context.Background(), DataOptions{Dir: data}, o, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Model.Members) != 1 {
		t.Fatalf("%d members", len(res.Model.Members))
	}
	m, _, err := Load(o.OutDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Members) != 1 {
		t.Fatalf("loaded %d other members", len(m.Members))
	}
	p, err := NewRowPredictor(m, PredictorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	rows := cachedRows(t, "resnet18_b1", dataset.TaskTile, 12)[:4]
	ptrs := make([]*dataset.Row, len(rows))
	for i := range rows {
		ptrs[i] = &rows[i]
	}
	preds, spreads, err := p.PredictRowsSpread(ptrs)
	if err != nil {
		t.Fatal(err)
	}
	if p.Ensemble() != 2 || spreads == nil || len(spreads[0]) != len(preds[0]) {
		t.Fatalf("ensemble of %d, spreads %v", p.Ensemble(), spreads)
	}
	if _, err := TrainEnsemble(context.Background(), DataOptions{Dir: data}, o, MaxEnsemble+1); err == nil {
		t.Error("an ensemble beyond the maximum was accepted")
	}
	// A member changed after training is refused.
	mj := filepath.Join(o.OutDir, "member-1", ModelFile)
	b, err := os.ReadFile(mj)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mj, append(b, ' '), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(o.OutDir); err == nil || !strings.Contains(err.Error(), "member-1") {
		t.Errorf("tampered member: %v", err)
	}
}
