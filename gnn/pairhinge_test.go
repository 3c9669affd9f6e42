package gnn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestPairHingeSameBits checks pairLoss's hinge loop (pairHinge) against the general
// pairwise loop it replaced for the hinge losses, bit for bit: loss and gradient, with
// tied ranks, pairs on both sides of the hinge, padding kernels of weight 0, and a NaN
// output still giving a NaN loss.
func TestPairHingeSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	span := []int{0, 7, 7, 20, 32, 32}
	w := []float32{0.05, 0, 0.01, 0.02, 0}
	out, rank := make([]float32, 32), make([]float32, 32)
	for i := range out {
		out[i] = float32(2 * rng.NormFloat64())
		rank[i] = float32(rng.IntN(6)) // ties
	}
	for _, l := range []Loss{LossRankHinge, LossRankHingeGap} {
		r := rank
		if l.gapWeighted() { // log runtimes
			r = make([]float32, len(rank))
			for i := range r {
				r[i] = float32(math.Log(1 + 100*rng.Float64()))
			}
		}
		got, gd := pairLoss(l, out, r, w, span, true)
		want, wd := pairLossGeneral(l, out, r, w, span)
		if math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("%s: loss %.17g, general loop %.17g", l, got, want)
		}
		active := 0
		for i := range gd {
			if math.Float32bits(gd[i]) != math.Float32bits(wd[i]) {
				t.Errorf("%s: d[%d] = %g, general loop %g", l, i, gd[i], wd[i])
			}
			if gd[i] != 0 {
				active++
			}
		}
		if active == 0 {
			t.Errorf("%s: no pair inside the hinge: the check is vacuous", l)
		}
		nan := append([]float32(nil), out...)
		nan[3] = float32(math.NaN())
		if l, _ := pairLoss(l, nan, r, w, span, false); !math.IsNaN(l) {
			t.Errorf("a NaN output gives loss %g, want NaN", l)
		}
	}
}

// pairLossGeneral is pairLoss with the general loop (pairGeneral) for every kernel, the
// hinge losses too: the reference of TestPairHingeSameBits.
func pairLossGeneral(l Loss, out, rank, w []float32, span []int) (float64, []float32) {
	var sum float64
	d := make([]float32, len(out))
	for k := range w {
		if wk := float64(w[k]); wk != 0 {
			lo, hi := span[k], span[k+1]
			pairGeneral(l, out[lo:hi], rank[lo:hi], wk, &sum, d, lo, true)
		}
	}
	return sum, d
}
