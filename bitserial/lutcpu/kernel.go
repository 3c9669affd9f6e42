package lutcpu

import (
	"math/rand/v2"

	"github.com/tpucost/tpucost/bitserial"
)

// Kernel is one configuration of the LUT kernel on one layer, with its data: a random
// pool of P vectors of z int8 weights, random pool indices for the layer's weights and
// random b-bit activations, all drawn from a seed (the kernel's time does not depend on
// the values, only its accumulators do). Run is the timed work: the table build
// (bitserial.BuildLUT, counted in every run), the bit-planes (bitserial.BitPlanes) and
// the convolution in the config's loop order, blocking and unrolling. The weight layouts
// each order reads (indices by output channel, or by group for the channel order) are
// prepared once by NewKernel, as a network's weights are at load time.
type Kernel struct {
	cfg   Config
	l     bitserial.Layer
	pool  []int8
	idx   []uint8 // [Cout][K·K·Cin/z]
	idxT  []uint8 // [K·K·Cin/z][Cout] (channel order)
	in    []uint8 // H·W·Cin activations, each < 2^b
	lut   bitserial.LUT
	plane []uint8 // b bit-planes of the input
	win   []uint8 // one window's patterns
	acc   []int32
}

// NewKernel returns the kernel of config c on layer l with data drawn from seed, or c's
// Check error.
func NewKernel(l bitserial.Layer, c Config, seed uint64) (*Kernel, error) {
	if err := c.Check(l); err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(seed, uint64(c.P)<<16|uint64(c.Z)<<8|uint64(c.B)))
	k := &Kernel{cfg: c, l: l}
	k.pool = make([]int8, c.P*c.Z)
	for i := range k.pool {
		k.pool[i] = int8(r.IntN(256) - 128)
	}
	n := l.K * l.K * l.Cin / c.Z
	k.idx = make([]uint8, l.Cout*n)
	for i := range k.idx {
		k.idx[i] = uint8(r.IntN(c.P))
	}
	if c.Order == OrderChannel {
		k.idxT = make([]uint8, len(k.idx))
		for oc := 0; oc < l.Cout; oc++ {
			for g := 0; g < n; g++ {
				k.idxT[g*l.Cout+oc] = k.idx[oc*n+g]
			}
		}
	}
	k.in = make([]uint8, l.H*l.W*l.Cin)
	for i := range k.in {
		k.in[i] = uint8(r.IntN(1 << c.B))
	}
	// BitPlanes with z = 8 reads 8 bytes at a time; pad the planes to 8 planes.
	k.plane = make([]uint8, 8*l.H*l.W*l.Cin/c.Z+8)
	k.win = make([]uint8, c.B*n)
	k.acc = make([]int32, l.OH()*l.OW()*l.Cout)
	return k, nil
}

// Config is the kernel's config.
func (k *Kernel) Config() Config { return k.cfg }

// Run builds the table, splits the activations into bit-planes and computes the layer's
// accumulators (returned; owned by k, overwritten by the next Run).
func (k *Kernel) Run() []int32 {
	c := k.cfg
	bitserial.BuildLUT(&k.lut, k.pool, c.Z)
	bitserial.BitPlanes(k.l, k.in, c.Z, c.B, k.plane)
	switch c.Order {
	case OrderBitGroup:
		k.bitGroup()
	case OrderGroupBit:
		k.groupBit()
	default:
		k.channel()
	}
	return k.acc
}

// Reference is the integer reference of Run's accumulators: the 8-bit integer kernel
// (bitserial.ConvInt8) on the expanded pool weights.
func (k *Kernel) Reference() []int32 {
	z := k.cfg.Z
	w := make([]int8, 0, len(k.idx)*z)
	for _, p := range k.idx {
		w = append(w, k.pool[int(p)*z:int(p)*z+z]...)
	}
	acc := make([]int32, len(k.acc))
	bitserial.ConvInt8(k.l, k.in, w, acc, make([]uint8, k.l.K*k.l.K*k.l.Cin))
	return acc
}

// gather copies the bit-plane patterns of output (oy, ox)'s window into k.win, zero
// outside the input: bit-major (win[bit·n + t]) or, groupMajor, win[t·b + bit].
func (k *Kernel) gather(oy, ox int, groupMajor bool) {
	l, b := k.l, k.cfg.B
	groups := l.Cin / k.cfg.Z
	n := l.K * l.K * groups
	plane := l.H * l.W * groups
	q := 0
	for ky := 0; ky < l.K; ky++ {
		iy := oy*l.Stride - l.Pad + ky
		for kx := 0; kx < l.K; kx++ {
			ix := ox*l.Stride - l.Pad + kx
			out := iy < 0 || iy >= l.H || ix < 0 || ix >= l.W
			off := (iy*l.W + ix) * groups
			switch {
			case out && !groupMajor:
				for bit := 0; bit < b; bit++ {
					clear(k.win[bit*n+q : bit*n+q+groups])
				}
			case out:
				clear(k.win[q*b : (q+groups)*b])
			case !groupMajor:
				for bit := 0; bit < b; bit++ {
					copy(k.win[bit*n+q:bit*n+q+groups], k.plane[bit*plane+off:])
				}
			default:
				for g := 0; g < groups; g++ {
					dst := k.win[(q+g)*b : (q+g+1)*b]
					for bit := range dst {
						dst[bit] = k.plane[bit*plane+off+g]
					}
				}
			}
			q += groups
		}
	}
}

// bitGroup: per block of output channels, bit-planes outer, groups inner; the block's
// channels share each pattern read.
func (k *Kernel) bitGroup() {
	l, c := k.l, k.cfg
	n := l.K * l.K * l.Cin / c.Z
	z := uint(c.Z)
	tab := k.lut.T
	oh, ow := l.OH(), l.OW()
	for oy := 0; oy < oh; oy++ {
		for ox := 0; ox < ow; ox++ {
			k.gather(oy, ox, false)
			out := k.acc[(oy*ow+ox)*l.Cout : (oy*ow+ox+1)*l.Cout]
			for oc := 0; oc < l.Cout; oc += c.Block {
				var s [4]int32
				for bit := 0; bit < c.B; bit++ {
					pb := k.win[bit*n : bit*n+n]
					switch c.Block {
					case 1:
						s[0] += dot1(tab, k.idx[oc*n:oc*n+n], pb, z, c.Unroll) << bit
					case 2:
						a, b := dot2(tab, k.idx[oc*n:oc*n+n], k.idx[(oc+1)*n:(oc+1)*n+n], pb, z, c.Unroll)
						s[0] += a << bit
						s[1] += b << bit
					default:
						s4 := dot4(tab, k.idx[oc*n:(oc+4)*n], n, pb, z, c.Unroll)
						for j := range s4 {
							s[j] += s4[j] << bit
						}
					}
				}
				copy(out[oc:oc+c.Block], s[:c.Block])
			}
		}
	}
}

// dot1 is Σ_g T[ir[g]][pb[g]], the inner loop unrolled u times.
func dot1(tab []int16, ir, pb []uint8, z uint, u int) int32 {
	pb = pb[:len(ir)]
	g := 0
	var s0, s1, s2, s3 int32
	switch u {
	case 4:
		for ; g+4 <= len(ir); g += 4 {
			s0 += int32(tab[int(ir[g])<<z|int(pb[g])])
			s1 += int32(tab[int(ir[g+1])<<z|int(pb[g+1])])
			s2 += int32(tab[int(ir[g+2])<<z|int(pb[g+2])])
			s3 += int32(tab[int(ir[g+3])<<z|int(pb[g+3])])
		}
	case 2:
		for ; g+2 <= len(ir); g += 2 {
			s0 += int32(tab[int(ir[g])<<z|int(pb[g])])
			s1 += int32(tab[int(ir[g+1])<<z|int(pb[g+1])])
		}
	}
	for ; g < len(ir); g++ {
		s0 += int32(tab[int(ir[g])<<z|int(pb[g])])
	}
	return s0 + s1 + s2 + s3
}

// dot2 is dot1 of two output channels sharing each pattern read.
func dot2(tab []int16, ir0, ir1, pb []uint8, z uint, u int) (int32, int32) {
	pb = pb[:len(ir0)]
	ir1 = ir1[:len(ir0)]
	g := 0
	var a0, a1, b0, b1 int32
	switch u {
	case 4:
		for ; g+4 <= len(ir0); g += 4 {
			p0, p1, p2, p3 := int(pb[g]), int(pb[g+1]), int(pb[g+2]), int(pb[g+3])
			a0 += int32(tab[int(ir0[g])<<z|p0]) + int32(tab[int(ir0[g+2])<<z|p2])
			a1 += int32(tab[int(ir0[g+1])<<z|p1]) + int32(tab[int(ir0[g+3])<<z|p3])
			b0 += int32(tab[int(ir1[g])<<z|p0]) + int32(tab[int(ir1[g+2])<<z|p2])
			b1 += int32(tab[int(ir1[g+1])<<z|p1]) + int32(tab[int(ir1[g+3])<<z|p3])
		}
	case 2:
		for ; g+2 <= len(ir0); g += 2 {
			p0, p1 := int(pb[g]), int(pb[g+1])
			a0 += int32(tab[int(ir0[g])<<z|p0])
			a1 += int32(tab[int(ir0[g+1])<<z|p1])
			b0 += int32(tab[int(ir1[g])<<z|p0])
			b1 += int32(tab[int(ir1[g+1])<<z|p1])
		}
	}
	for ; g < len(ir0); g++ {
		p := int(pb[g])
		a0 += int32(tab[int(ir0[g])<<z|p])
		b0 += int32(tab[int(ir1[g])<<z|p])
	}
	return a0 + a1, b0 + b1
}

// dot4 is dot1 of four output channels (rows of n indices in ir) sharing each pattern
// read.
func dot4(tab []int16, ir []uint8, n int, pb []uint8, z uint, u int) [4]int32 {
	r0, r1, r2, r3 := ir[:n], ir[n:2*n], ir[2*n:3*n], ir[3*n:4*n]
	pb = pb[:n]
	var s [4]int32
	g := 0
	switch u {
	case 4:
		for ; g+4 <= n; g += 4 {
			p0, p1, p2, p3 := int(pb[g]), int(pb[g+1]), int(pb[g+2]), int(pb[g+3])
			s[0] += int32(tab[int(r0[g])<<z|p0]) + int32(tab[int(r0[g+1])<<z|p1]) + int32(tab[int(r0[g+2])<<z|p2]) + int32(tab[int(r0[g+3])<<z|p3])
			s[1] += int32(tab[int(r1[g])<<z|p0]) + int32(tab[int(r1[g+1])<<z|p1]) + int32(tab[int(r1[g+2])<<z|p2]) + int32(tab[int(r1[g+3])<<z|p3])
			s[2] += int32(tab[int(r2[g])<<z|p0]) + int32(tab[int(r2[g+1])<<z|p1]) + int32(tab[int(r2[g+2])<<z|p2]) + int32(tab[int(r2[g+3])<<z|p3])
			s[3] += int32(tab[int(r3[g])<<z|p0]) + int32(tab[int(r3[g+1])<<z|p1]) + int32(tab[int(r3[g+2])<<z|p2]) + int32(tab[int(r3[g+3])<<z|p3])
		}
	case 2:
		for ; g+2 <= n; g += 2 {
			p0, p1 := int(pb[g]), int(pb[g+1])
			s[0] += int32(tab[int(r0[g])<<z|p0]) + int32(tab[int(r0[g+1])<<z|p1])
			s[1] += int32(tab[int(r1[g])<<z|p0]) + int32(tab[int(r1[g+1])<<z|p1])
			s[2] += int32(tab[int(r2[g])<<z|p0]) + int32(tab[int(r2[g+1])<<z|p1])
			s[3] += int32(tab[int(r3[g])<<z|p0]) + int32(tab[int(r3[g+1])<<z|p1])
		}
	}
	for ; g < n; g++ {
		p := int(pb[g])
		s[0] += int32(tab[int(r0[g])<<z|p])
		s[1] += int32(tab[int(r1[g])<<z|p])
		s[2] += int32(tab[int(r2[g])<<z|p])
		s[3] += int32(tab[int(r3[g])<<z|p])
	}
	return s
}

// groupBit: per block of output channels, groups outer, bit-planes inner: each channel's
// table row is found once per group and read at the group's b patterns.
func (k *Kernel) groupBit() {
	l, c := k.l, k.cfg
	n := l.K * l.K * l.Cin / c.Z
	z := uint(c.Z)
	b := c.B
	tab := k.lut.T
	oh, ow := l.OH(), l.OW()
	for oy := 0; oy < oh; oy++ {
		for ox := 0; ox < ow; ox++ {
			k.gather(oy, ox, true)
			out := k.acc[(oy*ow+ox)*l.Cout : (oy*ow+ox+1)*l.Cout]
			for oc := 0; oc < l.Cout; oc += c.Block {
				var s [4]int32
				rows := k.idx[oc*n : (oc+c.Block)*n]
				for g := 0; g < n; g++ {
					pg := k.win[g*b : g*b+b]
					for j := 0; j < c.Block; j++ {
						base := int(rows[j*n+g]) << z
						s[j] += bitSum(tab[base:base+1<<z], pg, c.Unroll)
					}
				}
				copy(out[oc:oc+c.Block], s[:c.Block])
			}
		}
	}
}

// bitSum is Σ_bit row[pg[bit]]·2^bit, the loop over bits unrolled u times.
func bitSum(row []int16, pg []uint8, u int) int32 {
	bit := 0
	var s0, s1, s2, s3 int32
	switch u {
	case 4:
		for ; bit+4 <= len(pg); bit += 4 {
			s0 += int32(row[pg[bit]]) << bit
			s1 += int32(row[pg[bit+1]]) << (bit + 1)
			s2 += int32(row[pg[bit+2]]) << (bit + 2)
			s3 += int32(row[pg[bit+3]]) << (bit + 3)
		}
	case 2:
		for ; bit+2 <= len(pg); bit += 2 {
			s0 += int32(row[pg[bit]]) << bit
			s1 += int32(row[pg[bit+1]]) << (bit + 1)
		}
	}
	for ; bit < len(pg); bit++ {
		s0 += int32(row[pg[bit]]) << bit
	}
	return s0 + s1 + s2 + s3
}

// channel: output channels innermost, in Block tiles of Cout/Block: per bit and group one
// pattern is read and every channel of the tile looks up its own index with it.
func (k *Kernel) channel() {
	l, c := k.l, k.cfg
	n := l.K * l.K * l.Cin / c.Z
	z := uint(c.Z)
	tab := k.lut.T
	tile := l.Cout / c.Block
	oh, ow := l.OH(), l.OW()
	for oy := 0; oy < oh; oy++ {
		for ox := 0; ox < ow; ox++ {
			k.gather(oy, ox, false)
			out := k.acc[(oy*ow+ox)*l.Cout : (oy*ow+ox+1)*l.Cout]
			clear(out)
			for t0 := 0; t0 < l.Cout; t0 += tile {
				o := out[t0 : t0+tile]
				for bit := 0; bit < c.B; bit++ {
					pb := k.win[bit*n : bit*n+n]
					for g, pat := range pb {
						addCol(o, k.idxT[g*l.Cout+t0:g*l.Cout+t0+tile], tab, int(pat), z, bit, c.Unroll)
					}
				}
			}
		}
	}
}

// addCol adds T[col[j]][pat]·2^bit to o[j] for every j, the loop unrolled u times.
func addCol(o []int32, col []uint8, tab []int16, pat int, z uint, bit, u int) {
	col = col[:len(o)]
	j := 0
	switch u {
	case 4:
		for ; j+4 <= len(o); j += 4 {
			o[j] += int32(tab[int(col[j])<<z|pat]) << bit
			o[j+1] += int32(tab[int(col[j+1])<<z|pat]) << bit
			o[j+2] += int32(tab[int(col[j+2])<<z|pat]) << bit
			o[j+3] += int32(tab[int(col[j+3])<<z|pat]) << bit
		}
	case 2:
		for ; j+2 <= len(o); j += 2 {
			o[j] += int32(tab[int(col[j])<<z|pat]) << bit
			o[j+1] += int32(tab[int(col[j+1])<<z|pat]) << bit
		}
	}
	for ; j < len(o); j++ {
		o[j] += int32(tab[int(col[j])<<z|pat]) << bit
	}
}
