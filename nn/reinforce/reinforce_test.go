package reinforce

import (
	"slices"
	"testing"

	"github.com/tpucost/tpucost/nn"
)

// TestBaselines follows one program's baselines through three batches, by hand: the first
// batch sets the steps it reaches to their mean, a step first reached later starts at 0,
// and every reached step moves to decay·b + (1−decay)·mean after the advantages.
func TestBaselines(t *testing.T) {
	bs, err := NewBaselines(2, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	// Batch 1: two samples, one of two steps. Means: step 0 (4+2)/2 = 3, step 1 6.
	adv := bs.Advantages(0, [][]float64{{4, 6}, {2}})
	if want := [][]float64{{1, 0}, {-1}}; !equal(adv, want) {
		t.Errorf("batch 1: %v, want %v", adv, want)
	}
	// Baselines now: step 0 0.5·3 + 0.5·3 = 3, step 1 6. Batch 2 reaches step 2 first
	// (baseline 0): means 5, 6, 8.
	adv = bs.Advantages(0, [][]float64{{5, 6, 8}})
	if want := [][]float64{{2, 0, 8}}; !equal(adv, want) {
		t.Errorf("batch 2: %v, want %v", adv, want)
	}
	// Baselines now: 0.5·3 + 0.5·5 = 4, 0.5·6 + 0.5·6 = 6, 0.5·0 + 0.5·8 = 4.
	adv = bs.Advantages(0, [][]float64{{4, 6, 4}})
	if want := [][]float64{{0, 0, 0}}; !equal(adv, want) {
		t.Errorf("batch 3: %v, want %v", adv, want)
	}
	// Another program has its own baselines: its first batch sets them.
	if adv := bs.Advantages(1, [][]float64{{10}, {20}}); !equal(adv, [][]float64{{-5}, {5}}) {
		t.Errorf("program 1: %v", adv)
	}
	for _, d := range []float64{-0.1, 1, 2} {
		if _, err := NewBaselines(1, d); err == nil {
			t.Errorf("decay %g accepted", d)
		}
	}
}

func equal(a, b [][]float64) bool {
	return slices.EqualFunc(a, b, func(x, y []float64) bool { return slices.Equal(x, y) })
}

// TestAddGradsAndStep: AddGrads sums elementwise (nil takes the first), and Step is the
// clipped Adam update: the same as nn.Adam with ClipNorm GradClip.
func TestAddGradsAndStep(t *testing.T) {
	sum := AddGrads(nil, [][]float32{{1, 2}, {3}})
	sum = AddGrads(sum, [][]float32{{10, 20}, {30}})
	if !slices.Equal(sum[0], []float32{11, 22}) || !slices.Equal(sum[1], []float32{33}) {
		t.Fatalf("sum %v", sum)
	}
	mk := func() nn.Params {
		ps := nn.Params{nn.NewParam("w", 1, 2), nn.NewParam("b", 1)}
		ps[0].Data[0], ps[0].Data[1], ps[1].Data[0] = 0.5, -0.5, 0.1
		return ps
	}
	got, want := mk(), mk()
	var o Optimizer
	adam := nn.NewAdam(want, 0.01)
	adam.ClipNorm = GradClip
	for range 3 {
		o.Step(got, sum, 0.01)
		adam.Update(want, sum)
	}
	for i := range got {
		if !slices.Equal(got[i].Data, want[i].Data) {
			t.Errorf("%s: %v, nn.Adam gives %v", got[i].Name, got[i].Data, want[i].Data)
		}
	}
	if slices.Equal(got[0].Data, mk()[0].Data) {
		t.Error("Step changed nothing")
	}
}
