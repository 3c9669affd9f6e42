package bitserial

import (
	"fmt"
	"slices"
)

// The LUT kernel's implementation variants (issue 37): one code per loop order, blocking
// and unrolling, shared by the network (Runner, through a Plan) and by the real-CPU
// measurement of the kernel's configuration space (package lutcpu). Every variant's
// accumulators equal ConvInt8's on the expanded pool weights bit for bit. The 8-bit
// integer kernel and the 8-bit weight-pool kernel have their own blocking and unrolling
// (Int8Variant, Pool8Variant in pool8.go), so that the three are compared each at its best.

// LoopOrder is the LUT kernel's loop order inside one output position.
type LoopOrder string

// The loop orders.
const (
	// OrderBitGroup: per output channel (block), bit-planes outer, groups inner:
	// acc = Σ_bit 2^bit · Σ_g T[idx_g][pattern_bit,g] (ConvLUT's order).
	OrderBitGroup LoopOrder = "bit-group"
	// OrderGroupBit: groups outer, bit-planes inner: the table row T[idx_g] is found once
	// per group and read at each bit's pattern (patterns gathered group-major).
	OrderGroupBit LoopOrder = "group-bit"
	// OrderChannel: output channels innermost: per bit and group one pattern is read and
	// every output channel of the tile looks it up (indices stored group-major).
	OrderChannel LoopOrder = "channel"
	// OrderPoolTable: the shared pool's reuse. Per input activation vector (one pixel, one
	// group of z channels) a vector table VT[vector][p] = Σ_bit 2^bit · T[p][pattern_bit]
	// is built for every pool vector p, bit-serially (P·b lookups per vector,
	// BuildVectorTable); then every output is Σ over its window's (tap, group) of
	// VT[vector][idx]: one lookup and one add per weight index, whatever b
	// (ConvVectorTable). It pays where a vector's uses (about Cout·K·K/stride²) exceed P.
	OrderPoolTable LoopOrder = "pool-table"
)

// LoopOrders lists the loop orders.
func LoopOrders() []LoopOrder {
	return []LoopOrder{OrderBitGroup, OrderGroupBit, OrderChannel, OrderPoolTable}
}

// Blocks lists the blocking factors: output channels computed per pass over the window
// (bit-group, group-bit, pool-table and the int8 and pool8 kernels), or the number of
// output-channel tiles (channel order: tile Cout/Block).
func Blocks() []int { return []int{1, 2, 4} }

// Unrolls lists the unrolling factors of the innermost loop (groups for bit-group, bits
// for group-bit, output channels for channel, window indices for pool-table, window
// elements for the int8 kernel, pool vectors for the pool8 kernel).
func Unrolls() []int { return []int{1, 2, 4} }

// LUTVariant is one implementation of the LUT kernel: loop order, blocking, unrolling.
// The zero value is not valid; PlainLUT is ConvLUT's.
type LUTVariant struct {
	Order  LoopOrder
	Block  int
	Unroll int
}

// PlainLUT is the plain variant (bit-group, block 1, unroll 1), ConvLUT's.
func PlainLUT() LUTVariant { return LUTVariant{Order: OrderBitGroup, Block: 1, Unroll: 1} }

// LUTVariants lists every variant: orders × blocks × unrolls, the last varying fastest.
func LUTVariants() []LUTVariant {
	var out []LUTVariant
	for _, o := range LoopOrders() {
		for _, bl := range Blocks() {
			for _, u := range Unrolls() {
				out = append(out, LUTVariant{Order: o, Block: bl, Unroll: u})
			}
		}
	}
	return out
}

// String is "order=bit-group;block=4;unroll=2".
func (v LUTVariant) String() string {
	return fmt.Sprintf("order=%s;block=%d;unroll=%d", v.Order, v.Block, v.Unroll)
}

// Check reports, in one line, an unknown order, blocking or unrolling factor, or a block
// not dividing l's output channels.
func (v LUTVariant) Check(l Layer) error {
	if !slices.Contains(LoopOrders(), v.Order) {
		return fmt.Errorf("loop order %q: want bit-group, group-bit, channel or pool-table", v.Order)
	}
	return checkBlockUnroll(l, v.Block, v.Unroll)
}

func checkBlockUnroll(l Layer, block, unroll int) error {
	if !slices.Contains(Blocks(), block) || l.Cout%block != 0 {
		return fmt.Errorf("block %d: want one of %v dividing the layer's %d output channels", block, Blocks(), l.Cout)
	}
	if !slices.Contains(Unrolls(), unroll) {
		return fmt.Errorf("unroll %d: want one of %v", unroll, Unrolls())
	}
	return nil
}

// GroupMajor is idx ([Cout][n] pool indices, n = K·K·Cin/z) transposed to [n][Cout], the
// layout the channel order reads (prepared once, as weights are at load time).
func GroupMajor(l Layer, idx []uint8, z int) []uint8 {
	n := l.K * l.K * l.Cin / z
	t := make([]uint8, len(idx))
	for oc := 0; oc < l.Cout; oc++ {
		for g := 0; g < n; g++ {
			t[g*l.Cout+oc] = idx[oc*n+g]
		}
	}
	return t
}

// LUTScratch is ConvLUTVariant's working memory: one window's patterns, and for the
// pool-table order the vector table and one window's row offsets. The zero value is
// ready; it grows as needed and is reused across calls (one per goroutine).
type LUTScratch struct {
	win []uint8
	vt  []int32
	off []int32
}

// VectorTable is the vector table the last pool-table call with s built
// (BuildVectorTable's layout), nil if no pool-table call used s.
func (s *LUTScratch) VectorTable() []int32 { return s.vt }

func growU8(b []uint8, n int) []uint8 {
	if cap(b) < n {
		return make([]uint8, n)
	}
	return b[:n]
}

func growI32(b []int32, n int) []int32 {
	if cap(b) < n {
		return make([]int32, n)
	}
	return b[:n]
}

// ConvLUTVariant is the bit-serial LUT kernel (as ConvLUT) in variant v: planes are the
// b bit-planes of the input (BitPlanes), idx the pool indices [Cout][K·K·Cin/t.Z], idxT
// their GroupMajor form (read by the channel order only; nil otherwise), s its working
// memory. v must pass v.Check(l). The accumulators equal ConvInt8's on the expanded pool
// weights bit for bit, for every variant.
func ConvLUTVariant(l Layer, planes, idx, idxT []uint8, t *LUT, b int, v LUTVariant, acc []int32, s *LUTScratch) {
	if v.Order == OrderPoolTable {
		s.vt = growI32(s.vt, VectorTableLen(l, t))
		BuildVectorTable(l, planes, t, b, s.vt)
		s.off = growI32(s.off, l.K*l.K*l.Cin/t.Z)
		ConvVectorTable(l, s.vt, t.P, t.Z, idx, v, acc, s.off)
		return
	}
	k := lutConv{l: l, planes: planes, idx: idx, idxT: idxT, tab: t.T, z: t.Z, b: b, v: v, acc: acc}
	s.win = growU8(s.win, b*l.K*l.K*l.Cin/t.Z)
	k.win = s.win
	switch v.Order {
	case OrderGroupBit:
		k.groupBit()
	case OrderChannel:
		k.channel()
	default:
		k.bitGroup()
	}
}

// lutConv is one call of ConvLUTVariant.
type lutConv struct {
	l      Layer
	planes []uint8
	idx    []uint8
	idxT   []uint8
	tab    []int16
	z, b   int
	v      LUTVariant
	acc    []int32
	win    []uint8
}

// gather copies the bit-plane patterns of output (oy, ox)'s window into k.win, zero
// outside the input: bit-major (win[bit·n + t]) or, groupMajor, win[t·b + bit].
func (k *lutConv) gather(oy, ox int, groupMajor bool) {
	l, b := k.l, k.b
	groups := l.Cin / k.z
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
					copy(k.win[bit*n+q:bit*n+q+groups], k.planes[bit*plane+off:])
				}
			default:
				for g := 0; g < groups; g++ {
					dst := k.win[(q+g)*b : (q+g+1)*b]
					for bit := range dst {
						dst[bit] = k.planes[bit*plane+off+g]
					}
				}
			}
			q += groups
		}
	}
}

// bitGroup: per block of output channels, bit-planes outer, groups inner; the block's
// channels share each pattern read.
func (k *lutConv) bitGroup() {
	l, v := k.l, k.v
	n := l.K * l.K * l.Cin / k.z
	z := uint(k.z)
	tab := k.tab
	oh, ow := l.OH(), l.OW()
	for oy := 0; oy < oh; oy++ {
		for ox := 0; ox < ow; ox++ {
			k.gather(oy, ox, false)
			out := k.acc[(oy*ow+ox)*l.Cout : (oy*ow+ox+1)*l.Cout]
			for oc := 0; oc < l.Cout; oc += v.Block {
				var s [4]int32
				for bit := 0; bit < k.b; bit++ {
					pb := k.win[bit*n : bit*n+n]
					switch v.Block {
					case 1:
						s[0] += dot1(tab, k.idx[oc*n:oc*n+n], pb, z, v.Unroll) << bit
					case 2:
						a, b := dot2(tab, k.idx[oc*n:oc*n+n], k.idx[(oc+1)*n:(oc+1)*n+n], pb, z, v.Unroll)
						s[0] += a << bit
						s[1] += b << bit
					default:
						s4 := dot4(tab, k.idx[oc*n:(oc+4)*n], n, pb, z, v.Unroll)
						for j := range s4 {
							s[j] += s4[j] << bit
						}
					}
				}
				copy(out[oc:oc+v.Block], s[:v.Block])
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
func (k *lutConv) groupBit() {
	l, v := k.l, k.v
	n := l.K * l.K * l.Cin / k.z
	z := uint(k.z)
	b := k.b
	tab := k.tab
	oh, ow := l.OH(), l.OW()
	for oy := 0; oy < oh; oy++ {
		for ox := 0; ox < ow; ox++ {
			k.gather(oy, ox, true)
			out := k.acc[(oy*ow+ox)*l.Cout : (oy*ow+ox+1)*l.Cout]
			for oc := 0; oc < l.Cout; oc += v.Block {
				var s [4]int32
				rows := k.idx[oc*n : (oc+v.Block)*n]
				for g := 0; g < n; g++ {
					pg := k.win[g*b : g*b+b]
					for j := 0; j < v.Block; j++ {
						base := int(rows[j*n+g]) << z
						s[j] += bitSum(tab[base:base+1<<z], pg, v.Unroll)
					}
				}
				copy(out[oc:oc+v.Block], s[:v.Block])
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
func (k *lutConv) channel() {
	l, v := k.l, k.v
	n := l.K * l.K * l.Cin / k.z
	z := uint(k.z)
	tab := k.tab
	tile := l.Cout / v.Block
	oh, ow := l.OH(), l.OW()
	for oy := 0; oy < oh; oy++ {
		for ox := 0; ox < ow; ox++ {
			k.gather(oy, ox, false)
			out := k.acc[(oy*ow+ox)*l.Cout : (oy*ow+ox+1)*l.Cout]
			clear(out)
			for t0 := 0; t0 < l.Cout; t0 += tile {
				o := out[t0 : t0+tile]
				for bit := 0; bit < k.b; bit++ {
					pb := k.win[bit*n : bit*n+n]
					for g, pat := range pb {
						addCol(o, k.idxT[g*l.Cout+t0:g*l.Cout+t0+tile], tab, int(pat), z, bit, v.Unroll)
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

// BlockUnroll is one implementation of a multiply-accumulate kernel (the 8-bit integer
// kernel, the 8-bit weight-pool kernel): Block output channels computed per pass over the
// window (sharing each activation load), the inner loop over the window unrolled Unroll
// times with independent accumulators. {1, 1} is the plain kernel's.
type BlockUnroll struct {
	Block  int
	Unroll int
}

// Int8Variant is a variant of the 8-bit integer kernel (ConvInt8Variant).
type Int8Variant = BlockUnroll

// PlainInt8 is ConvInt8's variant (block 1, unroll 1).
func PlainInt8() Int8Variant { return BlockUnroll{Block: 1, Unroll: 1} }

// BlockUnrolls lists every variant: blocks × unrolls, the last varying fastest.
func BlockUnrolls() []BlockUnroll {
	var out []BlockUnroll
	for _, bl := range Blocks() {
		for _, u := range Unrolls() {
			out = append(out, BlockUnroll{Block: bl, Unroll: u})
		}
	}
	return out
}

// Int8Variants lists the int8 kernel's variants (BlockUnrolls).
func Int8Variants() []Int8Variant { return BlockUnrolls() }

// String is "block=4;unroll=2".
func (v BlockUnroll) String() string { return fmt.Sprintf("block=%d;unroll=%d", v.Block, v.Unroll) }

// Check reports, in one line, an unknown blocking or unrolling factor, or a block not
// dividing l's output channels.
func (v BlockUnroll) Check(l Layer) error { return checkBlockUnroll(l, v.Block, v.Unroll) }

// ConvInt8Variant is the 8-bit integer kernel (as ConvInt8, same arguments) in variant v,
// which must pass v.Check(l). Its accumulators equal ConvInt8's.
func ConvInt8Variant(l Layer, in []uint8, w []int8, acc []int32, scratch []uint8, v Int8Variant) {
	n := l.K * l.K * l.Cin
	p := scratch[:n]
	oh, ow := l.OH(), l.OW()
	for oy := 0; oy < oh; oy++ {
		for ox := 0; ox < ow; ox++ {
			patch(l, in, oy, ox, p)
			out := acc[(oy*ow+ox)*l.Cout : (oy*ow+ox+1)*l.Cout]
			for oc := 0; oc < l.Cout; oc += v.Block {
				switch v.Block {
				case 1:
					out[oc] = mac1(w[oc*n:(oc+1)*n], p, v.Unroll)
				case 2:
					out[oc], out[oc+1] = mac2(w[oc*n:(oc+1)*n], w[(oc+1)*n:(oc+2)*n], p, v.Unroll)
				default:
					s := mac4(w[oc*n:(oc+4)*n], n, p, v.Unroll)
					copy(out[oc:oc+4], s[:])
				}
			}
		}
	}
}

// mac1 is Σ_t w[t]·p[t], unrolled u times.
func mac1(w []int8, p []uint8, u int) int32 {
	w = w[:len(p)]
	t := 0
	var s0, s1, s2, s3 int32
	switch u {
	case 4:
		for ; t+4 <= len(p); t += 4 {
			s0 += int32(w[t]) * int32(p[t])
			s1 += int32(w[t+1]) * int32(p[t+1])
			s2 += int32(w[t+2]) * int32(p[t+2])
			s3 += int32(w[t+3]) * int32(p[t+3])
		}
	case 2:
		for ; t+2 <= len(p); t += 2 {
			s0 += int32(w[t]) * int32(p[t])
			s1 += int32(w[t+1]) * int32(p[t+1])
		}
	}
	for ; t < len(p); t++ {
		s0 += int32(w[t]) * int32(p[t])
	}
	return s0 + s1 + s2 + s3
}

// mac2 is mac1 of two output channels sharing each activation load.
func mac2(w0, w1 []int8, p []uint8, u int) (int32, int32) {
	w0, w1 = w0[:len(p)], w1[:len(p)]
	t := 0
	var a0, a1, b0, b1 int32
	switch u {
	case 4:
		for ; t+4 <= len(p); t += 4 {
			p0, p1, p2, p3 := int32(p[t]), int32(p[t+1]), int32(p[t+2]), int32(p[t+3])
			a0 += int32(w0[t])*p0 + int32(w0[t+2])*p2
			a1 += int32(w0[t+1])*p1 + int32(w0[t+3])*p3
			b0 += int32(w1[t])*p0 + int32(w1[t+2])*p2
			b1 += int32(w1[t+1])*p1 + int32(w1[t+3])*p3
		}
	case 2:
		for ; t+2 <= len(p); t += 2 {
			p0, p1 := int32(p[t]), int32(p[t+1])
			a0 += int32(w0[t]) * p0
			a1 += int32(w0[t+1]) * p1
			b0 += int32(w1[t]) * p0
			b1 += int32(w1[t+1]) * p1
		}
	}
	for ; t < len(p); t++ {
		a := int32(p[t])
		a0 += int32(w0[t]) * a
		b0 += int32(w1[t]) * a
	}
	return a0 + a1, b0 + b1
}

// mac4 is mac1 of four output channels (rows of n weights in w) sharing each activation
// load.
func mac4(w []int8, n int, p []uint8, u int) [4]int32 {
	r0, r1, r2, r3 := w[:n], w[n:2*n], w[2*n:3*n], w[3*n:4*n]
	p = p[:n]
	var s [4]int32
	t := 0
	switch u {
	case 4:
		for ; t+4 <= n; t += 4 {
			p0, p1, p2, p3 := int32(p[t]), int32(p[t+1]), int32(p[t+2]), int32(p[t+3])
			s[0] += int32(r0[t])*p0 + int32(r0[t+1])*p1 + int32(r0[t+2])*p2 + int32(r0[t+3])*p3
			s[1] += int32(r1[t])*p0 + int32(r1[t+1])*p1 + int32(r1[t+2])*p2 + int32(r1[t+3])*p3
			s[2] += int32(r2[t])*p0 + int32(r2[t+1])*p1 + int32(r2[t+2])*p2 + int32(r2[t+3])*p3
			s[3] += int32(r3[t])*p0 + int32(r3[t+1])*p1 + int32(r3[t+2])*p2 + int32(r3[t+3])*p3
		}
	case 2:
		for ; t+2 <= n; t += 2 {
			p0, p1 := int32(p[t]), int32(p[t+1])
			s[0] += int32(r0[t])*p0 + int32(r0[t+1])*p1
			s[1] += int32(r1[t])*p0 + int32(r1[t+1])*p1
			s[2] += int32(r2[t])*p0 + int32(r2[t+1])*p1
			s[3] += int32(r3[t])*p0 + int32(r3[t+1])*p1
		}
	}
	for ; t < n; t++ {
		a := int32(p[t])
		s[0] += int32(r0[t]) * a
		s[1] += int32(r1[t]) * a
		s[2] += int32(r2[t]) * a
		s[3] += int32(r3[t]) * a
	}
	return s
}
