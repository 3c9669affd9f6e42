package bitserial

// The pool-table order of the LUT kernel (OrderPoolTable): the reuse a shared pool
// allows. An input activation vector (one pixel, one group of z channels) is read by every
// output channel and every kernel tap that covers it, but it meets only P pool vectors. So
// its dot product with each of them is made once, bit-serially from the LUT, into a vector
// table; the convolution then reads that table once per weight index, whatever b.

// VectorTableLen is the length of the vector table of layer l and table t: one row of
// t.P entries per input vector (H·W·Cin/z), plus a zero row that padding taps read.
func VectorTableLen(l Layer, t *LUT) int { return (l.H*l.W*l.Cin/t.Z + 1) * t.P }

// BuildVectorTable fills vt (VectorTableLen entries) from the b bit-planes of l's input
// (BitPlanes) and the LUT t: vt[v·P + p] = Σ_bit 2^bit · T[p][pattern of plane bit at
// vector v], for every input vector v = pixel·(Cin/z) + group and pool vector p, with
// P·b table lookups per vector (the paper's bit-serial lookup: the work falls with b); the
// last row is zero. |entry| ≤ 255·8·128, so int32 holds it.
func BuildVectorTable(l Layer, planes []uint8, t *LUT, b int, vt []int32) {
	nv := l.H * l.W * l.Cin / t.Z
	np := t.P
	z := uint(t.Z)
	tab := t.T
	vt = vt[:(nv+1)*np]
	for v := 0; v < nv; v++ {
		row := vt[v*np : v*np+np]
		pat := int(planes[v])
		for p := range row {
			row[p] = int32(tab[p<<z|pat])
		}
		for bit := 1; bit < b; bit++ {
			pat := int(planes[bit*nv+v])
			for p := range row {
				row[p] += int32(tab[p<<z|pat]) << bit
			}
		}
	}
	clear(vt[nv*np:])
}

// ConvVectorTable is the pool-table order's convolution: acc[pos][oc] = Σ over the
// window's (tap, group) q of vt[row(q)·P + idx[oc][q]], row(q) the input vector under the
// tap (the zero row outside the input): one table read and one addition per weight
// index, independent of the activation bits. vt is BuildVectorTable's, np the pool size, z
// the vector length, idx the pool indices [Cout][K·K·Cin/z], off scratch of K·K·Cin/z.
// v.Block output channels share each offset read; the loop over the window is unrolled
// v.Unroll times.
func ConvVectorTable(l Layer, vt []int32, np, z int, idx []uint8, v LUTVariant, acc []int32, off []int32) {
	groups := l.Cin / z
	n := l.K * l.K * groups
	off = off[:n]
	zero := int32(l.H * l.W * groups * np)
	oh, ow := l.OH(), l.OW()
	for oy := 0; oy < oh; oy++ {
		for ox := 0; ox < ow; ox++ {
			q := 0
			for ky := 0; ky < l.K; ky++ {
				iy := oy*l.Stride - l.Pad + ky
				for kx := 0; kx < l.K; kx++ {
					ix := ox*l.Stride - l.Pad + kx
					o := off[q : q+groups]
					if iy < 0 || iy >= l.H || ix < 0 || ix >= l.W {
						for g := range o {
							o[g] = zero
						}
					} else {
						base := int32((iy*l.W + ix) * groups * np)
						for g := range o {
							o[g] = base + int32(g*np)
						}
					}
					q += groups
				}
			}
			out := acc[(oy*ow+ox)*l.Cout : (oy*ow+ox+1)*l.Cout]
			for oc := 0; oc < l.Cout; oc += v.Block {
				switch v.Block {
				case 1:
					out[oc] = vdot1(vt, idx[oc*n:oc*n+n], off, v.Unroll)
				case 2:
					out[oc], out[oc+1] = vdot2(vt, idx[oc*n:oc*n+n], idx[(oc+1)*n:(oc+1)*n+n], off, v.Unroll)
				default:
					s := vdot4(vt, idx[oc*n:(oc+4)*n], n, off, v.Unroll)
					copy(out[oc:oc+4], s[:])
				}
			}
		}
	}
}

// vdot1 is Σ_q vt[off[q] + ir[q]], unrolled u times with independent accumulators.
func vdot1(vt []int32, ir []uint8, off []int32, u int) int32 {
	off = off[:len(ir)]
	q := 0
	var s0, s1, s2, s3 int32
	switch u {
	case 4:
		for ; q+4 <= len(ir); q += 4 {
			s0 += vt[int(off[q])+int(ir[q])]
			s1 += vt[int(off[q+1])+int(ir[q+1])]
			s2 += vt[int(off[q+2])+int(ir[q+2])]
			s3 += vt[int(off[q+3])+int(ir[q+3])]
		}
	case 2:
		for ; q+2 <= len(ir); q += 2 {
			s0 += vt[int(off[q])+int(ir[q])]
			s1 += vt[int(off[q+1])+int(ir[q+1])]
		}
	}
	for ; q < len(ir); q++ {
		s0 += vt[int(off[q])+int(ir[q])]
	}
	return s0 + s1 + s2 + s3
}

// vdot2 is vdot1 of two output channels sharing each offset read.
func vdot2(vt []int32, ir0, ir1 []uint8, off []int32, u int) (int32, int32) {
	off = off[:len(ir0)]
	ir1 = ir1[:len(ir0)]
	q := 0
	var a0, a1, b0, b1 int32
	switch u {
	case 4:
		for ; q+4 <= len(ir0); q += 4 {
			o0, o1, o2, o3 := int(off[q]), int(off[q+1]), int(off[q+2]), int(off[q+3])
			a0 += vt[o0+int(ir0[q])] + vt[o2+int(ir0[q+2])]
			a1 += vt[o1+int(ir0[q+1])] + vt[o3+int(ir0[q+3])]
			b0 += vt[o0+int(ir1[q])] + vt[o2+int(ir1[q+2])]
			b1 += vt[o1+int(ir1[q+1])] + vt[o3+int(ir1[q+3])]
		}
	case 2:
		for ; q+2 <= len(ir0); q += 2 {
			o0, o1 := int(off[q]), int(off[q+1])
			a0 += vt[o0+int(ir0[q])]
			a1 += vt[o1+int(ir0[q+1])]
			b0 += vt[o0+int(ir1[q])]
			b1 += vt[o1+int(ir1[q+1])]
		}
	}
	for ; q < len(ir0); q++ {
		o := int(off[q])
		a0 += vt[o+int(ir0[q])]
		b0 += vt[o+int(ir1[q])]
	}
	return a0 + a1, b0 + b1
}

// vdot4 is vdot1 of four output channels (rows of n indices in ir) sharing each offset
// read.
func vdot4(vt []int32, ir []uint8, n int, off []int32, u int) [4]int32 {
	r0, r1, r2, r3 := ir[:n], ir[n:2*n], ir[2*n:3*n], ir[3*n:4*n]
	off = off[:n]
	var s [4]int32
	q := 0
	switch u {
	case 4:
		for ; q+4 <= n; q += 4 {
			o0, o1, o2, o3 := int(off[q]), int(off[q+1]), int(off[q+2]), int(off[q+3])
			s[0] += vt[o0+int(r0[q])] + vt[o1+int(r0[q+1])] + vt[o2+int(r0[q+2])] + vt[o3+int(r0[q+3])]
			s[1] += vt[o0+int(r1[q])] + vt[o1+int(r1[q+1])] + vt[o2+int(r1[q+2])] + vt[o3+int(r1[q+3])]
			s[2] += vt[o0+int(r2[q])] + vt[o1+int(r2[q+1])] + vt[o2+int(r2[q+2])] + vt[o3+int(r2[q+3])]
			s[3] += vt[o0+int(r3[q])] + vt[o1+int(r3[q+1])] + vt[o2+int(r3[q+2])] + vt[o3+int(r3[q+3])]
		}
	case 2:
		for ; q+2 <= n; q += 2 {
			o0, o1 := int(off[q]), int(off[q+1])
			s[0] += vt[o0+int(r0[q])] + vt[o1+int(r0[q+1])]
			s[1] += vt[o0+int(r1[q])] + vt[o1+int(r1[q+1])]
			s[2] += vt[o0+int(r2[q])] + vt[o1+int(r2[q+1])]
			s[3] += vt[o0+int(r3[q])] + vt[o1+int(r3[q+1])]
		}
	}
	for ; q < n; q++ {
		o := int(off[q])
		s[0] += vt[o+int(r0[q])]
		s[1] += vt[o+int(r1[q])]
		s[2] += vt[o+int(r2[q])]
		s[3] += vt[o+int(r3[q])]
	}
	return s
}
