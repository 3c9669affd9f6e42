package nn

import "math"

// The element loops of the fused ops' activations, without data-dependent branches: a
// ReLU's sign test on random activations mispredicts about half the time, which cost
// more than the arithmetic around it (issue 25's profile). Each function gives, for
// every finite input, the same bits as the branching form
//
//	if z > 0 { y = z } else { y = 0 }
//
// (−0 and negative values give +0); a NaN passes through instead of becoming 0.

// reluInto sets y[i] = max(z[i], 0) (+0 for z[i] ≤ 0); len(y) ≥ len(z).
func reluInto[T float32 | float64](y, z []T) {
	switch z := any(z).(type) {
	case []float32:
		y := any(y).([]float32)[:len(z)]
		for i, v := range z {
			u := math.Float32bits(v)
			y[i] = math.Float32frombits(u &^ uint32(int32(u)>>31))
		}
	case []float64:
		y := any(y).([]float64)[:len(z)]
		for i, v := range z {
			u := math.Float64bits(v)
			y[i] = math.Float64frombits(u &^ uint64(int64(u)>>63))
		}
	}
}

// reluGrad sets g[i] = d[i] where z[i] > 0, else +0 (ReLU's derivative at 0 is taken
// as 0); g may be d. len(d) and len(g) ≥ len(z).
func reluGrad[T float32 | float64](g, d, z []T) {
	switch z := any(z).(type) {
	case []float32:
		g, d := any(g).([]float32)[:len(z)], any(d).([]float32)[:len(z)]
		for i, v := range z {
			u := int32(math.Float32bits(v))
			drop := uint32((u | (u - 1)) >> 31) // all ones unless u > 0, i.e. z > 0
			g[i] = math.Float32frombits(math.Float32bits(d[i]) &^ drop)
		}
	case []float64:
		g, d := any(g).([]float64)[:len(z)], any(d).([]float64)[:len(z)]
		for i, v := range z {
			u := int64(math.Float64bits(v))
			drop := uint64((u | (u - 1)) >> 63)
			g[i] = math.Float64frombits(math.Float64bits(d[i]) &^ drop)
		}
	}
}

// reluGradSum is reluGrad (g[i] = d[i] where z[i] > 0, else +0) adding each g[i] to
// sum[i] in the same pass (a layer's bias gradient, row by row); len(d), len(g) and
// len(sum) ≥ len(z).
func reluGradSum[T float32 | float64](g, d, z, sum []T) {
	switch z := any(z).(type) {
	case []float32:
		g, d, sum := any(g).([]float32)[:len(z)], any(d).([]float32)[:len(z)], any(sum).([]float32)[:len(z)]
		for i, v := range z {
			u := int32(math.Float32bits(v))
			drop := uint32((u | (u - 1)) >> 31)
			x := math.Float32frombits(math.Float32bits(d[i]) &^ drop)
			g[i] = x
			sum[i] += x
		}
	case []float64:
		g, d, sum := any(g).([]float64)[:len(z)], any(d).([]float64)[:len(z)], any(sum).([]float64)[:len(z)]
		for i, v := range z {
			u := int64(math.Float64bits(v))
			drop := uint64((u | (u - 1)) >> 63)
			x := math.Float64frombits(math.Float64bits(d[i]) &^ drop)
			g[i] = x
			sum[i] += x
		}
	}
}
