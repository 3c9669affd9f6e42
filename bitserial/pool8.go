package bitserial

// Pool8Variant is a variant of the 8-bit weight-pool kernel (ConvPool8Variant): the
// same blocking and unrolling as the int8 and LUT kernels, so that each is compared at
// its best.
type Pool8Variant = BlockUnroll

// PlainPool8 is ConvPool8's variant (block 1, unroll 1).
func PlainPool8() Pool8Variant { return BlockUnroll{Block: 1, Unroll: 1} }

// Pool8Variants lists the pool8 kernel's variants (BlockUnrolls).
func Pool8Variants() []Pool8Variant { return BlockUnrolls() }

// ConvPool8Variant is the 8-bit weight-pool kernel (as ConvPool8, same arguments) in
// variant v, which must pass v.Check(l): per output position the window is gathered once,
// then each block of output channels walks the window's pool indices, gathers each pool
// vector and multiplies it with the window's z activations. Its accumulators equal
// ConvPool8's.
func ConvPool8Variant(l Layer, in []uint8, idx []uint8, pool []int8, z int, acc []int32, scratch []uint8, v Pool8Variant) {
	n := l.K * l.K * l.Cin
	groups := n / z
	p := scratch[:n]
	oh, ow := l.OH(), l.OW()
	for oy := 0; oy < oh; oy++ {
		for ox := 0; ox < ow; ox++ {
			patch(l, in, oy, ox, p)
			out := acc[(oy*ow+ox)*l.Cout : (oy*ow+ox+1)*l.Cout]
			for oc := 0; oc < l.Cout; oc += v.Block {
				switch v.Block {
				case 1:
					out[oc] = pmac1(pool, idx[oc*groups:(oc+1)*groups], p, z, v.Unroll)
				case 2:
					out[oc], out[oc+1] = pmac2(pool, idx[oc*groups:(oc+1)*groups], idx[(oc+1)*groups:(oc+2)*groups], p, z, v.Unroll)
				default:
					s := pmac4(pool, idx[oc*groups:(oc+4)*groups], groups, p, z, v.Unroll)
					copy(out[oc:oc+4], s[:])
				}
			}
		}
	}
}

// zdot is Σ_j w[j]·a[j] over one pool vector w and its z activations a.
func zdot(w []int8, a []uint8) int32 {
	a = a[:len(w)]
	var s int32
	for j, x := range w {
		s += int32(x) * int32(a[j])
	}
	return s
}

// pmac1 is Σ_g pool[ir[g]] · p[g·z:(g+1)·z], the loop over g unrolled u times with
// independent accumulators.
func pmac1(pool []int8, ir []uint8, p []uint8, z, u int) int32 {
	g := 0
	var s0, s1, s2, s3 int32
	vec := func(g int) []int8 { i := int(ir[g]) * z; return pool[i : i+z] }
	switch u {
	case 4:
		for ; g+4 <= len(ir); g += 4 {
			s0 += zdot(vec(g), p[g*z:])
			s1 += zdot(vec(g+1), p[(g+1)*z:])
			s2 += zdot(vec(g+2), p[(g+2)*z:])
			s3 += zdot(vec(g+3), p[(g+3)*z:])
		}
	case 2:
		for ; g+2 <= len(ir); g += 2 {
			s0 += zdot(vec(g), p[g*z:])
			s1 += zdot(vec(g+1), p[(g+1)*z:])
		}
	}
	for ; g < len(ir); g++ {
		s0 += zdot(vec(g), p[g*z:])
	}
	return s0 + s1 + s2 + s3
}

// zdot2 is zdot of two pool vectors with the same activations, each activation loaded
// once.
func zdot2(w0, w1 []int8, a []uint8) (int32, int32) {
	a = a[:len(w0)]
	w1 = w1[:len(w0)]
	var s0, s1 int32
	for j, x := range w0 {
		aj := int32(a[j])
		s0 += int32(x) * aj
		s1 += int32(w1[j]) * aj
	}
	return s0, s1
}

// pmac2 is pmac1 of two output channels sharing each activation load.
func pmac2(pool []int8, ir0, ir1 []uint8, p []uint8, z, u int) (int32, int32) {
	ir1 = ir1[:len(ir0)]
	g := 0
	var a0, a1, b0, b1 int32
	vec := func(i uint8) []int8 { o := int(i) * z; return pool[o : o+z] }
	switch u {
	case 4:
		for ; g+4 <= len(ir0); g += 4 {
			x0, y0 := zdot2(vec(ir0[g]), vec(ir1[g]), p[g*z:])
			x1, y1 := zdot2(vec(ir0[g+1]), vec(ir1[g+1]), p[(g+1)*z:])
			x2, y2 := zdot2(vec(ir0[g+2]), vec(ir1[g+2]), p[(g+2)*z:])
			x3, y3 := zdot2(vec(ir0[g+3]), vec(ir1[g+3]), p[(g+3)*z:])
			a0 += x0 + x2
			a1 += x1 + x3
			b0 += y0 + y2
			b1 += y1 + y3
		}
	case 2:
		for ; g+2 <= len(ir0); g += 2 {
			x0, y0 := zdot2(vec(ir0[g]), vec(ir1[g]), p[g*z:])
			x1, y1 := zdot2(vec(ir0[g+1]), vec(ir1[g+1]), p[(g+1)*z:])
			a0 += x0
			a1 += x1
			b0 += y0
			b1 += y1
		}
	}
	for ; g < len(ir0); g++ {
		x, y := zdot2(vec(ir0[g]), vec(ir1[g]), p[g*z:])
		a0 += x
		b0 += y
	}
	return a0 + a1, b0 + b1
}

// zdot4 is zdot of four pool vectors with the same activations, each activation loaded
// once.
func zdot4(w0, w1, w2, w3 []int8, a []uint8) [4]int32 {
	a = a[:len(w0)]
	w1, w2, w3 = w1[:len(w0)], w2[:len(w0)], w3[:len(w0)]
	var s [4]int32
	for j, x := range w0 {
		aj := int32(a[j])
		s[0] += int32(x) * aj
		s[1] += int32(w1[j]) * aj
		s[2] += int32(w2[j]) * aj
		s[3] += int32(w3[j]) * aj
	}
	return s
}

// pmac4 is pmac1 of four output channels (rows of n indices in ir) sharing each
// activation load; unrolling makes u groups per iteration.
func pmac4(pool []int8, ir []uint8, n int, p []uint8, z, u int) [4]int32 {
	r0, r1, r2, r3 := ir[:n], ir[n:2*n], ir[2*n:3*n], ir[3*n:4*n]
	var s [4]int32
	vec := func(i uint8) []int8 { o := int(i) * z; return pool[o : o+z] }
	at := func(g int) [4]int32 { return zdot4(vec(r0[g]), vec(r1[g]), vec(r2[g]), vec(r3[g]), p[g*z:]) }
	g := 0
	switch u {
	case 4:
		for ; g+4 <= n; g += 4 {
			x0, x1, x2, x3 := at(g), at(g+1), at(g+2), at(g+3)
			for j := range s {
				s[j] += x0[j] + x1[j] + x2[j] + x3[j]
			}
		}
	case 2:
		for ; g+2 <= n; g += 2 {
			x0, x1 := at(g), at(g+1)
			for j := range s {
				s[j] += x0[j] + x1[j]
			}
		}
	}
	for ; g < n; g++ {
		x := at(g)
		for j := range s {
			s[j] += x[j]
		}
	}
	return s
}
