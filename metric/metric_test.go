package metric

import (
	"errors"
	"math"
	"testing"
)

// exact compares metric values computed by hand; 1e-12 absorbs float rounding only.
const exact = 1e-12

func near(a, b float64) bool { return math.Abs(a-b) <= exact*math.Max(1, math.Abs(b)) }

func TestProgramAPE(t *testing.T) {
	for _, tc := range []struct {
		name    string
		kernels []Kernel
		counts  []float64
		want    float64
		err     error
	}{
		{"perfect model", []Kernel{{True: []float64{10, 20}, Pred: []float64{1, 2}}}, nil, 0, nil},
		// Picks the 20 ns config where 10 is best: |20-10|/10 = 100%.
		{"wrong choice", []Kernel{{True: []float64{10, 20}, Pred: []float64{2, 1}}}, nil, 100, nil},
		// Two kernels: chosen 20+30 = 50 vs best 10+30 = 40: 25%.
		{"sum over kernels", []Kernel{{True: []float64{10, 20}, Pred: []float64{2, 1}}, {True: []float64{30, 40}, Pred: []float64{0, 5}}}, nil, 25, nil},
		// The first kernel occurs 3 times: chosen 60+30 = 90 vs best 30+30 = 60: 50%.
		{"counts weight kernels", []Kernel{{True: []float64{10, 20}, Pred: []float64{2, 1}}, {True: []float64{30, 40}, Pred: []float64{0, 5}}}, []float64{3, 1}, 50, nil},
		// A tie between 30 and 10 goes to the first listed: |30-10|/10 = 200%.
		{"ties go to the first config", []Kernel{{True: []float64{30, 10, 50}, Pred: []float64{1, 1, 2}}}, nil, 200, nil},
		{"single config", []Kernel{{True: []float64{7}, Pred: []float64{3}}}, nil, 0, nil},
		{"zero runtime rejected", []Kernel{{True: []float64{0, 1}, Pred: []float64{1, 2}}}, nil, 0, ErrNonPositive},
	} {
		got, err := ProgramAPE(tc.kernels, tc.counts)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("%s: err %v, want %v", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || !near(got, tc.want) {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

func TestSlowdownAtK(t *testing.T) {
	k := Kernel{True: []float64{10, 12, 20, 40}, Pred: []float64{4, 3, 1, 2}}
	// Ranked by prediction: 20, 40, 12, 10.
	for _, tc := range []struct {
		K    int
		want float64
	}{{1, 1.0}, {2, 1.0}, {3, 0.2}, {4, 0}, {10, 0}} {
		got, err := SlowdownAtK(k, tc.K)
		if err != nil || !near(got, tc.want) {
			t.Errorf("slowdown@%d = %v, %v; want %v", tc.K, got, err, tc.want)
		}
	}
	// Ties in the prediction keep config order.
	tie := Kernel{True: []float64{30, 10}, Pred: []float64{1, 1}}
	if got, _ := SlowdownAtK(tie, 1); !near(got, 2) {
		t.Errorf("tie: %v, want 2 (first listed config)", got)
	}
	if _, err := SlowdownAtK(Kernel{True: []float64{-1}, Pred: []float64{0}}, 1); !errors.Is(err, ErrNonPositive) {
		t.Errorf("negative runtime: %v", err)
	}
}

func TestKendallTau(t *testing.T) {
	for _, tc := range []struct {
		name string
		x, y []float64
		want float64
	}{
		{"perfect", []float64{1, 2, 3, 4}, []float64{10, 20, 30, 40}, 1},
		{"reversed", []float64{1, 2, 3, 4}, []float64{4, 3, 2, 1}, -1},
		// Pairs: (1,2)c (1,3)c (2,3)d → (2-1)/3.
		{"one swap", []float64{1, 2, 3}, []float64{1, 3, 2}, 1.0 / 3},
		// x ties on (0,1): n0=3, tx=1, ty=0: conc 2 → 2/sqrt(2·3).
		{"tie in x", []float64{1, 1, 2}, []float64{1, 2, 3}, 2 / math.Sqrt(6)},
		{"constant prediction", []float64{5, 5, 5}, []float64{1, 2, 3}, 0},
	} {
		got, err := KendallTau(tc.x, tc.y)
		if err != nil || !near(got, tc.want) {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	if _, err := KendallTau([]float64{1}, []float64{1}); err == nil {
		t.Error("single value accepted")
	}
}

func TestMAPE(t *testing.T) {
	// 1000 ns off by 10% and 100000 ns off by 30%: all 20%, <5us 10%, >=5us 30%.
	m, err := ComputeMAPE([]float64{1000, 100000}, []float64{1100, 70000})
	if err != nil || !near(m.All, 20) || !near(m.LT5us, 10) || !near(m.GE5us, 30) || m.NGE5us != 1 || m.NLT5us != 1 {
		t.Errorf("MAPE %+v, %v", m, err)
	}
	// Exactly 5 us belongs to the >= group.
	m, _ = ComputeMAPE([]float64{5000}, []float64{5500})
	if m.NGE5us != 1 || !math.IsNaN(m.LT5us) {
		t.Errorf("5us boundary: %+v", m)
	}
	if _, err := ComputeMAPE([]float64{0}, []float64{1}); !errors.Is(err, ErrNonPositive) {
		t.Errorf("zero runtime: %v", err)
	}
}

func TestOPAAndTileScore(t *testing.T) {
	// Hand-computed: truth 1 < 2 < 3; the prediction orders (1,2) and (1,3) right and ties
	// (2,3): 2 of 3 pairs.
	if got, err := OPA([]float64{0, 5, 5}, []float64{1, 2, 3}); err != nil || !near(got, 2.0/3) {
		t.Errorf("OPA = %v, %v; want 2/3", got, err)
	}
	if got, _ := OPA([]float64{3, 2, 1}, []float64{1, 2, 3}); got != 0 {
		t.Errorf("reversed OPA = %v, want 0", got)
	}
	if _, err := OPA([]float64{1, 2}, []float64{4, 4}); err == nil {
		t.Error("OPA of equal true values accepted")
	}
	// Kernel A: the best config (10) is predicted 6th, the best of the top five is 12:
	// slowdown 0.2. Kernel B: best predicted first: 0. Score 1 − 0.1.
	a := Kernel{True: []float64{12, 13, 14, 15, 16, 10}, Pred: []float64{1, 2, 3, 4, 5, 6}}
	b := Kernel{True: []float64{7, 9}, Pred: []float64{0, 1}}
	if got, err := TileScore([]Kernel{a, b}); err != nil || !near(got, 0.9) {
		t.Errorf("TileScore = %v, %v; want 0.9", got, err)
	}
}
