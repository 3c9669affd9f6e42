package bitserial

import (
	"testing"
)

// TestPoolTableBuildsTheVectorTable: the pool-table order goes through its vector table:
// after ConvLUTVariant in that order, at every b and z, the table it leaves holds every
// pool vector's dot product with every input activation vector (computed here by
// multiplying, not from the LUT), and a zero row for padding. It fails if the order
// falls back to per-weight bit-serial lookups (no vector table is built).
func TestPoolTableBuildsTheVectorTable(t *testing.T) {
	for _, z := range []int{8, 4, 1} {
		n := poolNet(z, 6)
		var lut LUT
		BuildLUT(&lut, n.Pool, z)
		l := n.Layers[2]
		groups := l.Cin / z
		for b := 1; b <= 8; b++ {
			in := randomActs(l, b, uint64(b+10*z))
			planes := make([]uint8, 8*l.H*l.W*l.Cin+8)
			BitPlanes(l, in, z, b, planes)
			var mem LUTScratch
			acc := make([]int32, l.OH()*l.OW()*l.Cout)
			ConvLUTVariant(l, planes, n.Idx[2], nil, &lut, b, LUTVariant{Order: OrderPoolTable, Block: 2, Unroll: 4}, acc, &mem)
			vt := mem.VectorTable()
			nv := l.H * l.W * groups
			if len(vt) != (nv+1)*n.P {
				t.Fatalf("z=%d b=%d: vector table of %d entries, want %d", z, b, len(vt), (nv+1)*n.P)
			}
			for v := 0; v < nv; v++ {
				a := in[v*z : v*z+z]
				for p := 0; p < n.P; p++ {
					var want int32
					for j, w := range n.Pool[p*z : p*z+z] {
						want += int32(w) * int32(a[j])
					}
					if got := vt[v*n.P+p]; got != want {
						t.Fatalf("z=%d b=%d: vector %d · pool %d = %d in the table, want %d", z, b, v, p, got, want)
					}
				}
			}
			for _, e := range vt[nv*n.P:] {
				if e != 0 {
					t.Fatalf("z=%d b=%d: padding row not zero", z, b)
				}
			}
		}
	}
}

// TestPoolTableReadsOncePerIndex: the pool-table convolution reads its vector table once
// per weight index, whatever b: with every real entry 1 and the padding row 0, each
// accumulator counts its reads, and equals the number of (tap, group) pairs of its window
// inside the input, for every block and unroll, on a padded stride-2 and a stride-1
// layer. (The bit-group order reads its LUT b times per index.) ConvVectorTable takes no
// b: its work cannot grow with it.
func TestPoolTableReadsOncePerIndex(t *testing.T) {
	const z, np = 8, 64
	n := poolNet(z, 2)
	for _, li := range []int{1, 2, 3} {
		l := n.Layers[li]
		groups := l.Cin / z
		nv := l.H * l.W * groups
		vt := make([]int32, (nv+1)*np)
		for i := range vt[:nv*np] {
			vt[i] = 1
		}
		off := make([]int32, l.K*l.K*groups)
		for _, v := range LUTVariants() {
			if v.Order != OrderPoolTable || v.Check(l) != nil {
				continue
			}
			acc := make([]int32, l.OH()*l.OW()*l.Cout)
			ConvVectorTable(l, vt, np, z, n.Idx[li], v, acc, off)
			for oy := 0; oy < l.OH(); oy++ {
				for ox := 0; ox < l.OW(); ox++ {
					inside := 0
					for ky := 0; ky < l.K; ky++ {
						for kx := 0; kx < l.K; kx++ {
							iy, ix := oy*l.Stride-l.Pad+ky, ox*l.Stride-l.Pad+kx
							if iy >= 0 && iy < l.H && ix >= 0 && ix < l.W {
								inside += groups
							}
						}
					}
					for oc := 0; oc < l.Cout; oc++ {
						if got := acc[(oy*l.OW()+ox)*l.Cout+oc]; got != int32(inside) {
							t.Fatalf("layer %d %s: output (%d,%d,%d) read the table %d times, want %d (one per index inside the input)", li+1, v, oy, ox, oc, got, inside)
						}
					}
				}
			}
		}
	}
}
