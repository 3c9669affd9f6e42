package bitserial

import "encoding/binary"

// The three integer kernels. Each computes one layer's int32 accumulators, acc[(oy·OW+ox)·Cout+oc]
// = Σ w·a over the K×K×Cin window, from unsigned activations (H×W×Cin, channels innermost)
// and signed 8-bit weights, single-threaded, with the same loop structure: per output
// position the window is gathered once (an im2col row, zero-padded), then every output
// channel walks it.

// patch gathers the K×K×Cin window of in at output (oy, ox) into dst, zero outside in.
func patch(l Layer, in []uint8, oy, ox int, dst []uint8) {
	t := 0
	for ky := 0; ky < l.K; ky++ {
		iy := oy*l.Stride - l.Pad + ky
		for kx := 0; kx < l.K; kx++ {
			ix := ox*l.Stride - l.Pad + kx
			row := dst[t : t+l.Cin]
			t += l.Cin
			if iy < 0 || iy >= l.H || ix < 0 || ix >= l.W {
				clear(row)
				continue
			}
			copy(row, in[(iy*l.W+ix)*l.Cin:])
		}
	}
}

// ConvInt8 is the 8-bit integer kernel (the baseline): acc = Σ w[oc][t]·a[t] with int8
// weights w ([Cout][K][K][Cin]) and 8-bit unsigned activations in. scratch holds at
// least K·K·Cin bytes; acc at least OH·OW·Cout.
func ConvInt8(l Layer, in []uint8, w []int8, acc []int32, scratch []uint8) {
	n := l.K * l.K * l.Cin
	p := scratch[:n]
	oh, ow := l.OH(), l.OW()
	for oy := 0; oy < oh; oy++ {
		for ox := 0; ox < ow; ox++ {
			patch(l, in, oy, ox, p)
			out := acc[(oy*ow+ox)*l.Cout : (oy*ow+ox+1)*l.Cout]
			for oc := range out {
				wr := w[oc*n : (oc+1)*n]
				wr = wr[:len(p)]
				var s int32
				for t, a := range p {
					s += int32(wr[t]) * int32(a)
				}
				out[oc] = s
			}
		}
	}
}

// ConvPool8 is the 8-bit weight-pool kernel: the weights are indices into a pool of
// z-element int8 vectors (pool[p·z:(p+1)·z]), idx[oc][ky][kx][g] for the g-th run of z
// input channels; it gathers each vector and multiplies. Its accumulators equal ConvInt8's
// on the expanded weights.
func ConvPool8(l Layer, in []uint8, idx []uint8, pool []int8, z int, acc []int32, scratch []uint8) {
	n := l.K * l.K * l.Cin
	groups := n / z
	p := scratch[:n]
	oh, ow := l.OH(), l.OW()
	for oy := 0; oy < oh; oy++ {
		for ox := 0; ox < ow; ox++ {
			patch(l, in, oy, ox, p)
			out := acc[(oy*ow+ox)*l.Cout : (oy*ow+ox+1)*l.Cout]
			for oc := range out {
				ir := idx[oc*groups : (oc+1)*groups]
				var s int32
				for g, pi := range ir {
					v := pool[int(pi)*z : int(pi)*z+z]
					a := p[g*z : g*z+z]
					for j, wv := range v {
						s += int32(wv) * int32(a[j])
					}
				}
				out[oc] = s
			}
		}
	}
}

// LUT is the bit-serial lookup table of a pool: T[p<<z | pattern] = Σ over the set bits j
// of pattern of pool vector p's element j — every pool vector's dot product with every
// z-bit pattern of one activation bit-plane.
type LUT struct {
	Z, P int
	T    []int16
}

// BuildLUT fills t (grown as needed) with the table of pool (P vectors of z int8), with
// one addition per entry: the patterns with highest set bit j are those below 2^j plus
// element j. |entry| ≤ 8·128, so int16 holds it.
func BuildLUT(t *LUT, pool []int8, z int) {
	np := len(pool) / z
	size := np << z
	if cap(t.T) < size {
		t.T = make([]int16, size)
	}
	t.T, t.Z, t.P = t.T[:size], z, np
	for p := 0; p < np; p++ {
		row := t.T[p<<z : (p+1)<<z]
		v := pool[p*z : p*z+z]
		row[0] = 0
		for j, w := range v {
			lo := row[:1<<j]
			hi := row[1<<j : 2<<j]
			for i, e := range lo {
				hi[i] = e + int16(w)
			}
		}
	}
}

// BitPlanes splits activations in (H×W×Cin, each < 2^b) into b bit-planes of packed
// z-bit patterns: planes[bit·H·W·Cin/z + pixel·(Cin/z) + g] holds bit `bit` of channels g·z..g·z+z−1
// of that pixel, channel g·z+j in bit j. planes must hold b·H·W·Cin/z bytes.
func BitPlanes(l Layer, in []uint8, z, b int, planes []uint8) {
	n := l.H * l.W * l.Cin / z
	planes = planes[:n*b]
	if z == 8 {
		// Eight channels at once: mask one bit of each byte, then one multiplication
		// gathers byte j's bit into bit 56+j (the partial products never overlap).
		for i := 0; i < n; i++ {
			x := binary.LittleEndian.Uint64(in[i*8:])
			for bit := 0; bit < b; bit++ {
				planes[bit*n+i] = uint8(((x >> bit) & 0x0101010101010101) * 0x0102040810204080 >> 56)
			}
		}
		return
	}
	for i := 0; i < n; i++ {
		a := in[i*z : i*z+z]
		for bit := 0; bit < b; bit++ {
			var pat uint8
			for j, v := range a {
				pat |= (v >> bit & 1) << j
			}
			planes[bit*n+i] = pat
		}
	}
}

// ConvLUT is the bit-serial LUT kernel: activations at b bits (1..8) as bit-planes
// (BitPlanes), weights as pool indices idx (as ConvPool8's), and acc = Σ_bit 2^bit ·
// Σ_g T[idx_g][pattern of bit-plane bit at g]. It never multiplies a weight: every
// product comes from the table. Its accumulators equal ConvPool8's, and ConvInt8's on the
// expanded weights, bit for bit. scratch holds at least b·K·K·Cin/z bytes. It is
// ConvLUTVariant's plain variant (PlainLUT: bit-group order, block 1, unroll 1).
func ConvLUT(l Layer, planes []uint8, idx []uint8, t *LUT, b int, acc []int32, scratch []uint8) {
	ConvLUTVariant(l, planes, idx, nil, t, b, PlainLUT(), acc, &LUTScratch{win: scratch})
}
