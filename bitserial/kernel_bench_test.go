package bitserial

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchNet is a pool network of DefaultArch with random weights, pool and indices (the
// kernels' time does not depend on the values).
func benchNet(seed uint64) *Net {
	r := rand.New(rand.NewPCG(seed, 1))
	a := DefaultArch
	n := &Net{Arch: a, Layers: a.Layers(), Z: 8, P: 64, Bias: make([]float32, Classes)}
	n.Pool = make([]int8, n.P*n.Z)
	for i := range n.Pool {
		n.Pool[i] = int8(r.IntN(255) - 127)
	}
	for i, l := range n.Layers {
		n.WScale = append(n.WScale, 0.01)
		n.ActMax = append(n.ActMax, 1)
		if i == 0 {
			w := make([]int8, l.Weights())
			for j := range w {
				w[j] = int8(r.IntN(255) - 127)
			}
			n.W, n.Idx, n.Packed = append(n.W, w), append(n.Idx, nil), append(n.Packed, nil)
			continue
		}
		idx := make([]uint8, l.Weights()/n.Z)
		var w []int8
		for j := range idx {
			idx[j] = uint8(r.IntN(n.P))
			w = append(w, n.Pool[int(idx[j])*n.Z:int(idx[j])*n.Z+n.Z]...)
		}
		n.W, n.Idx, n.Packed = append(n.W, w), append(n.Idx, idx), append(n.Packed, PackIndices(idx, 6))
	}
	return n
}

func benchImage(seed uint64) []uint8 {
	r := rand.New(rand.NewPCG(seed, 2))
	img := make([]uint8, Side*Side)
	for i := range img {
		img[i] = uint8(r.IntN(256))
	}
	return img
}

// BenchmarkPredict times one image through the whole network per kernel (and per b for
// the LUT kernel).
func BenchmarkPredict(b *testing.B) {
	n := benchNet(1)
	img := benchImage(1)
	r := NewRunner(n)
	b.Run("int8", func(b *testing.B) {
		for b.Loop() {
			r.Predict(img, KernelInt8, 8)
		}
	})
	b.Run("pool8", func(b *testing.B) {
		for b.Loop() {
			r.Predict(img, KernelPool8, 8)
		}
	})
	for bits := 1; bits <= 8; bits++ {
		b.Run(fmt.Sprintf("lut/b=%d", bits), func(b *testing.B) {
			for b.Loop() {
				r.Predict(img, KernelLUT, bits)
			}
		})
	}
}

// BenchmarkBuildLUT times the table build of a P=64, z=8 pool.
func BenchmarkBuildLUT(b *testing.B) {
	n := benchNet(1)
	var t LUT
	for b.Loop() {
		BuildLUT(&t, n.Pool, n.Z)
	}
}
