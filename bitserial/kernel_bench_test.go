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
// the LUT kernel), with the plain kernels (block 1, unroll 1; the LUT in bit-group order).
// BenchmarkPlannedPredict (plan_bench_test.go) times each kernel's fastest variants on
// this CPU, as tpucost bitserial does; BenchmarkLayerVariants times one variant given.
func BenchmarkPredict(b *testing.B) {
	BenchPredict(b, benchNet(1), nil)
}

// BenchPredict times one image through n per kernel with plan's variants (nil: plain):
// sub-benchmarks int8, pool8, lut/b=1..8.
func BenchPredict(b *testing.B, n *Net, plan *Plan) {
	img := benchImage(1)
	r, err := NewPlannedRunner(n, plan)
	if err != nil {
		b.Fatal(err)
	}
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

// BenchmarkLayerVariants times one layer call of every variant of every kernel, per layer
// (1 is the first) and, for the LUT kernel, per b: names such as
// layer=3/lut/b=4/order=pool-table;block=4;unroll=2, layer=3/int8/block=4;unroll=1 and
// layer=3/pool8/block=2;unroll=2, so that -bench picks the variant given, e.g.
// go test -run '^$' -bench 'LayerVariants/layer=3/lut/b=4/order=pool-table' ./bitserial.
// A LUT call includes its table build and bit-planes, as in a Runner (the network
// builds the table once per image for all pooled layers).
func BenchmarkLayerVariants(b *testing.B) {
	n := benchNet(1)
	scratch := make([]uint8, 8*288)
	for i, l := range n.Layers {
		in := randomActs(l, 8, uint64(i))
		acc := make([]int32, l.OH()*l.OW()*l.Cout)
		b.Run(fmt.Sprintf("layer=%d/int8", i+1), func(b *testing.B) {
			for _, v := range Int8Variants() {
				if v.Check(l) != nil {
					continue
				}
				b.Run(v.String(), func(b *testing.B) {
					for b.Loop() {
						ConvInt8Variant(l, in, n.W[i], acc, scratch, v)
					}
				})
			}
		})
		if n.Idx[i] == nil {
			continue
		}
		b.Run(fmt.Sprintf("layer=%d/pool8", i+1), func(b *testing.B) {
			for _, v := range Pool8Variants() {
				if v.Check(l) != nil {
					continue
				}
				b.Run(v.String(), func(b *testing.B) {
					for b.Loop() {
						ConvPool8Variant(l, in, n.Idx[i], n.Pool, n.Z, acc, scratch, v)
					}
				})
			}
		})
		idxT := GroupMajor(l, n.Idx[i], n.Z)
		planes := make([]uint8, 8*l.H*l.W*l.Cin+8)
		for bits := 1; bits <= 8; bits++ {
			a := randomActs(l, bits, uint64(10*i+bits))
			b.Run(fmt.Sprintf("layer=%d/lut/b=%d", i+1, bits), func(b *testing.B) {
				for _, v := range LUTVariants() {
					if v.Check(l) != nil {
						continue
					}
					var lut LUT
					var mem LUTScratch
					b.Run(v.String(), func(b *testing.B) {
						for b.Loop() {
							BuildLUT(&lut, n.Pool, n.Z)
							BitPlanes(l, a, n.Z, bits, planes)
							ConvLUTVariant(l, planes, n.Idx[i], idxT, &lut, bits, v, acc, &mem)
						}
					})
				}
			})
		}
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
