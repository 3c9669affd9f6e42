package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestReLUBranchless checks the branch-free activation loops (reluInto, reluGrad,
// reluGradSum) against the branching form bit for bit on finite values, including ±0,
// subnormals and the extremes.
func TestReLUBranchless(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	z32 := []float32{0, float32(math.Copysign(0, -1)), 1, -1, math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, math.MaxFloat32, -math.MaxFloat32}
	for range 1000 {
		z32 = append(z32, float32(rng.NormFloat64()))
	}
	d32 := make([]float32, len(z32))
	for i := range d32 {
		d32[i] = float32(rng.NormFloat64())
	}
	y, g := make([]float32, len(z32)), make([]float32, len(z32))
	gs, sum, wsum := make([]float32, len(z32)), make([]float32, len(z32)), make([]float32, len(z32))
	for i := range sum {
		sum[i] = float32(rng.NormFloat64())
		wsum[i] = sum[i]
	}
	reluInto(y, z32)
	reluGrad(g, d32, z32)
	reluGradSum(gs, d32, z32, sum)
	for i, v := range z32 {
		var wy, wg float32
		if v > 0 {
			wy, wg = v, d32[i]
		}
		wsum[i] += wg
		if math.Float32bits(y[i]) != math.Float32bits(wy) || math.Float32bits(g[i]) != math.Float32bits(wg) {
			t.Fatalf("float32 z=%g d=%g: relu %g grad %g, want %g and %g", v, d32[i], y[i], g[i], wy, wg)
		}
		if math.Float32bits(gs[i]) != math.Float32bits(wg) || math.Float32bits(sum[i]) != math.Float32bits(wsum[i]) {
			t.Fatalf("float32 z=%g d=%g: reluGradSum grad %g sum %g, want %g and %g", v, d32[i], gs[i], sum[i], wg, wsum[i])
		}
	}
	z64 := []float64{0, math.Copysign(0, -1), 1, -1, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64, math.MaxFloat64, -math.MaxFloat64}
	for range 1000 {
		z64 = append(z64, rng.NormFloat64())
	}
	d64 := make([]float64, len(z64))
	for i := range d64 {
		d64[i] = rng.NormFloat64()
	}
	y64, g64 := make([]float64, len(z64)), make([]float64, len(z64))
	gs64, sum64 := make([]float64, len(z64)), make([]float64, len(z64))
	reluInto(y64, z64)
	reluGrad(g64, d64, z64)
	reluGradSum(gs64, d64, z64, sum64)
	for i, v := range z64 {
		var wy, wg float64
		if v > 0 {
			wy, wg = v, d64[i]
		}
		if math.Float64bits(gs64[i]) != math.Float64bits(wg) || math.Float64bits(sum64[i]) != math.Float64bits(0+wg) {
			t.Fatalf("float64 z=%g d=%g: reluGradSum grad %g sum %g, want %g", v, d64[i], gs64[i], sum64[i], wg)
		}
		if math.Float64bits(y64[i]) != math.Float64bits(wy) || math.Float64bits(g64[i]) != math.Float64bits(wg) {
			t.Fatalf("float64 z=%g d=%g: relu %g grad %g, want %g and %g", v, d64[i], y64[i], g64[i], wy, wg)
		}
	}
}
