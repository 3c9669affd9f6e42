package nn

import (
	"fmt"
	"math"

	"github.com/chewxy/hm"
	"gonum.org/v1/gonum/blas"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// This file holds the fused GraphSAGE layer: gathers, the layer's matrix product,
// bias, ReLU and L2 normalization as one Gorgonia op, with a hand-written backward (one
// op for all the gradients and a view op per input). At these networks' sizes (tens of
// nodes per kernel, a hidden width of 64) the unfused chain of ten forward and about
// twenty backward ops spent most of a training step allocating and zeroing their
// outputs; the fused op keeps its buffers from one run to the next and does one matrix
// product forward and two backward, each over all three weight blocks at once.

// sageOp is one GraphSAGE layer: inputs h [N, Hin], the in and out slot index vectors
// [N·din], [N·dout], wSelf, wIn, wOut [Hin, H], b [H]; output y [N, H] (see SAGE).
type sageOp struct {
	OpBase
	din, dout int
	eps       float64
	st        *sageState
}

// sageState holds a layer's buffers: those of the float32 and float64 modes, reused from
// one run to the next (a net runs one batch at a time), and the forward's intermediates
// that its backward reads in the same run.
type sageState struct {
	f32 sageBufs[float32]
	f64 sageBufs[float64]
}

type sageBufs[T float32 | float64] struct {
	x      []T // [N, 3Hin]: [h | mean_in(h) | mean_out(h)]
	w      []T // [3Hin, H]: [wSelf; wIn; wOut]
	z      []T // [N, H]: x·w + b (before the ReLU)
	y      []T // [N, H]: the output
	inv    []T // [N]: 1 / √(‖ReLU(z_v)‖² + eps) (L2 normalization)
	invIn  []T // [N]: 1 / (node v's operands), 0 for none
	invOut []T // [N]: 1 / (node v's users), 0 for none
	gz, dx []T // backward: [N, H] dz, [N, 3Hin] dx
	grads  []T // backward: [N·Hin dh | 3Hin·H dW | H db]
}

// grow returns s resized to n elements (its contents are not kept or cleared).
// growInt is grow for an int slice.
func growInt(s []int, n int) []int {
	if cap(s) < n {
		return make([]int, n)
	}
	return s[:n]
}

func grow[T float32 | float64](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

func newSageOp(din, dout int, eps float64) sageOp {
	return sageOp{OpBase{fmt.Sprintf("nn.sage{%d,%d,%g}", din, dout, eps)}, din, dout, eps, &sageState{}}
}

func (op sageOp) Arity() int { return 7 }

func intVec() G.TensorType { return G.TensorType{Dims: 1, Of: tensor.Int} }

func (op sageOp) Type() hm.Type {
	return hm.NewFnType(tt(2), intVec(), intVec(), tt(2), tt(2), tt(2), tt(1), tt(2))
}

func (op sageOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	if len(in) != 7 {
		return nil, fmt.Errorf("%v: want 7 inputs, got %d", op, len(in))
	}
	hs, err := ShapeOf(in[0])
	if err != nil {
		return nil, err
	}
	ws, err := ShapeOf(in[3])
	if err != nil {
		return nil, err
	}
	if len(hs) != 2 || len(ws) != 2 || ws[0] != hs[1] {
		return nil, fmt.Errorf("%v: h %v and weights %v do not match", op, hs, ws)
	}
	return tensor.Shape{hs[0], ws[1]}, nil
}

// sageIn are a layer's inputs, checked.
type sageIn[T float32 | float64] struct {
	h, ws, wi, wo, b []T
	in, out          []int
	n, hin, hout     int
}

func sageInputs[T float32 | float64](op sageOp, vals []G.Value) (sageIn[T], error) {
	var s sageIn[T]
	var ok [5]bool
	s.h, ok[0] = vals[0].Data().([]T)
	s.ws, ok[1] = vals[3].Data().([]T)
	s.wi, ok[2] = vals[4].Data().([]T)
	s.wo, ok[3] = vals[5].Data().([]T)
	s.b, ok[4] = vals[6].Data().([]T)
	for _, k := range ok {
		if !k {
			return s, fmt.Errorf("%v: inputs of mixed types", op)
		}
	}
	var ok1, ok2 bool
	s.in, ok1 = vals[1].Data().([]int)
	s.out, ok2 = vals[2].Data().([]int)
	if !ok1 || !ok2 {
		return s, fmt.Errorf("%v: indices are %T and %T, want []int", op, vals[1].Data(), vals[2].Data())
	}
	hs, wsh := vals[0].Shape(), vals[3].Shape()
	s.n, s.hin, s.hout = hs[0], hs[1], wsh[1]
	if len(s.in) != s.n*op.din || len(s.out) != s.n*op.dout || len(s.wi) != len(s.ws) || len(s.wo) != len(s.ws) || len(s.b) != s.hout {
		return s, fmt.Errorf("%v: inputs of inconsistent sizes", op)
	}
	for _, idx := range [][]int{s.in, s.out} {
		for _, u := range idx {
			if u >= s.n {
				return s, fmt.Errorf("%v: index %d out of range for %d rows", op, u, s.n)
			}
		}
	}
	return s, nil
}

func (op sageOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != 7 {
		return nil, fmt.Errorf("%v: want 7 inputs, got %d", op, len(vals))
	}
	switch vals[0].Data().(type) {
	case []float32:
		return sageForward(op, &op.st.f32, vals)
	case []float64:
		return sageForward(op, &op.st.f64, vals)
	}
	return nil, fmt.Errorf("%v: unsupported data %T", op, vals[0].Data())
}

// meanInv writes 1/(valid slots) of every node's group of d slots (0 for none).
func meanInv[T float32 | float64](dst []T, idx []int, d int) {
	for v := range dst {
		n := 0
		for _, u := range idx[v*d : (v+1)*d] {
			if u >= 0 {
				n++
			}
		}
		dst[v] = 0
		if n > 0 {
			dst[v] = 1 / T(n)
		}
	}
}

func sageForward[T float32 | float64](op sageOp, bf *sageBufs[T], vals []G.Value) (G.Value, error) {
	s, err := sageInputs[T](op, vals)
	if err != nil {
		return nil, err
	}
	N, Hin, H := s.n, s.hin, s.hout
	K := 3 * Hin
	bf.x, bf.w = grow(bf.x, N*K), grow(bf.w, K*H)
	bf.z, bf.y, bf.inv = grow(bf.z, N*H), grow(bf.y, N*H), grow(bf.inv, N)
	bf.invIn, bf.invOut = grow(bf.invIn, N), grow(bf.invOut, N)
	meanInv(bf.invIn, s.in, op.din)
	meanInv(bf.invOut, s.out, op.dout)
	// x = [h | mean_in(h) | mean_out(h)]: each mean sums its rows in slot order, then
	// scales by 1/n.
	for v := 0; v < N; v++ {
		row := bf.x[v*K : (v+1)*K]
		copy(row[:Hin], s.h[v*Hin:(v+1)*Hin])
		for part, nb := range [2]struct {
			idx []int
			d   int
			inv T
		}{{s.in, op.din, bf.invIn[v]}, {s.out, op.dout, bf.invOut[v]}} {
			o := row[(part+1)*Hin : (part+2)*Hin]
			clear(o)
			for _, u := range nb.idx[v*nb.d : (v+1)*nb.d] {
				if u < 0 {
					continue
				}
				row := s.h[u*Hin : (u+1)*Hin]
				o := o[:len(row)]
				for j, x := range row {
					o[j] += x
				}
			}
			if nb.inv != 1 {
				for j := range o {
					o[j] *= nb.inv
				}
			}
		}
	}
	copy(bf.w, s.ws)
	copy(bf.w[Hin*H:], s.wi)
	copy(bf.w[2*Hin*H:], s.wo)
	// z = b + x·w: the bias rows, then one product accumulated onto them.
	for v := 0; v < N; v++ {
		copy(bf.z[v*H:(v+1)*H], s.b)
	}
	gemm(false, false, N, H, K, bf.x, K, bf.w, H, 1, bf.z, H)
	reluInto(bf.y, bf.z)
	if op.eps > 0 {
		// ‖y_v‖² for four rows at a time: each row's sum in column order as before, the
		// four independent chains interleaved (a float64 add's latency, not its
		// throughput, bounded one row's loop).
		v := 0
		for ; v+4 <= N; v += 4 {
			y0, y1, y2, y3 := bf.y[v*H:(v+1)*H], bf.y[(v+1)*H:(v+2)*H], bf.y[(v+2)*H:(v+3)*H], bf.y[(v+3)*H:(v+4)*H]
			var s0, s1, s2, s3 float64
			for j := range y0 {
				s0 += float64(y0[j]) * float64(y0[j])
				s1 += float64(y1[j]) * float64(y1[j])
				s2 += float64(y2[j]) * float64(y2[j])
				s3 += float64(y3[j]) * float64(y3[j])
			}
			sageScale(bf, v, H, s0, op.eps)
			sageScale(bf, v+1, H, s1, op.eps)
			sageScale(bf, v+2, H, s2, op.eps)
			sageScale(bf, v+3, H, s3, op.eps)
		}
		for ; v < N; v++ {
			var ss float64
			for _, r := range bf.y[v*H : (v+1)*H] {
				ss += float64(r) * float64(r)
			}
			sageScale(bf, v, H, ss, op.eps)
		}
	}
	return tensor.New(tensor.WithShape(N, H), tensor.WithBacking(bf.y)), nil
}

// sageScale L2-normalizes row v of bf.y given its squared norm ss: y_v ← y_v/√(ss+eps),
// keeping the factor in bf.inv for the backward.
func sageScale[T float32 | float64](bf *sageBufs[T], v, H int, ss, eps float64) {
	inv := 1 / math.Sqrt(ss+eps)
	bf.inv[v] = T(inv)
	y := bf.y[v*H : (v+1)*H]
	for j, r := range y {
		y[j] = T(float64(r) * inv)
	}
}

// gemm is C = A·B + beta·C (row-major; A transposed when ta, B when tb) on the BLAS
// Gorgonia uses (gonum's pure Go, or OpenBLAS in the blas build).
func gemm[T float32 | float64](ta, tb bool, m, n, k int, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	tA, tB := blas.NoTrans, blas.NoTrans
	if ta {
		tA = blas.Trans
	}
	if tb {
		tB = blas.Trans
	}
	switch a := any(a).(type) {
	case []float32:
		G.WhichBLAS().Sgemm(tA, tB, m, n, k, 1, a, lda, any(b).([]float32), ldb, float32(beta), any(c).([]float32), ldc)
	case []float64:
		G.WhichBLAS().Dgemm(tA, tB, m, n, k, 1, a, lda, any(b).([]float64), ldb, float64(beta), any(c).([]float64), ldc)
	}
}

func (op sageOp) DiffWRT(int) []bool { return []bool{true, false, false, true, true, true, true} }

// SymDiff returns the gradients of h, wSelf, wIn, wOut and b: views of one packed
// gradient that sageDiffOp computes.
func (op sageOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if len(inputs) != 7 {
		return nil, fmt.Errorf("%v: want 7 inputs, got %d", op, len(inputs))
	}
	args := append(append(G.Nodes{}, inputs...), output, grad)
	d, err := G.ApplyOp(sageDiffOp{OpBase{"nn.sageDiff" + op.ID[len("nn.sage"):]}, op}, args...)
	if err != nil {
		return nil, err
	}
	hs, ws := inputs[0].Shape(), inputs[3].Shape()
	N, Hin, H := hs[0], hs[1], ws[1]
	part := func(off int, shp ...int) (*G.Node, error) {
		return G.ApplyOp(newPartOp(off, shp), d)
	}
	out := G.Nodes{nil, nil, nil, nil, nil, nil, nil}
	offs := []struct {
		i, off int
		shp    []int
	}{{0, 0, []int{N, Hin}}, {3, N * Hin, []int{Hin, H}}, {4, N*Hin + Hin*H, []int{Hin, H}}, {5, N*Hin + 2*Hin*H, []int{Hin, H}}, {6, N*Hin + 3*Hin*H, []int{H}}}
	for _, p := range offs {
		if out[p.i], err = part(p.off, p.shp...); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// sageDiffOp is sageOp's backward: (h, in, out, wSelf, wIn, wOut, b, y, dy) → the packed
// gradient [dh (N·Hin) | dwSelf, dwIn, dwOut (Hin·H each) | db (H)]. It reads the
// forward's intermediates of the same run from the layer's state.
type sageDiffOp struct {
	OpBase
	fwd sageOp
}

func (op sageDiffOp) Arity() int { return 9 }

func (op sageDiffOp) Type() hm.Type {
	return hm.NewFnType(tt(2), intVec(), intVec(), tt(2), tt(2), tt(2), tt(1), tt(2), tt(2), tt(1))
}

func (op sageDiffOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	hs, err := ShapeOf(in[0])
	if err != nil {
		return nil, err
	}
	ws, err := ShapeOf(in[3])
	if err != nil {
		return nil, err
	}
	return tensor.Shape{hs[0]*hs[1] + 3*ws[0]*ws[1] + ws[1]}, nil
}

func (op sageDiffOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != 9 {
		return nil, fmt.Errorf("%v: want 9 inputs, got %d", op, len(vals))
	}
	switch vals[0].Data().(type) {
	case []float32:
		return sageBackward(op.fwd, &op.fwd.st.f32, vals)
	case []float64:
		return sageBackward(op.fwd, &op.fwd.st.f64, vals)
	}
	return nil, fmt.Errorf("%v: unsupported data %T", op, vals[0].Data())
}

func sageBackward[T float32 | float64](op sageOp, bf *sageBufs[T], vals []G.Value) (G.Value, error) {
	s, err := sageInputs[T](op, vals)
	if err != nil {
		return nil, err
	}
	y, ok1 := vals[7].Data().([]T)
	dy, ok2 := vals[8].Data().([]T)
	N, Hin, H := s.n, s.hin, s.hout
	K := 3 * Hin
	if !ok1 || !ok2 || len(y) != N*H || len(dy) != N*H || len(bf.z) != N*H || len(bf.x) != N*K {
		return nil, fmt.Errorf("%v: backward without its forward, or of another shape", op)
	}
	bf.gz, bf.dx = grow(bf.gz, N*H), grow(bf.dx, N*K)
	bf.grads = grow(bf.grads, N*Hin+K*H+H)
	dh, dw, db := bf.grads[:N*Hin], bf.grads[N*Hin:N*Hin+K*H], bf.grads[N*Hin+K*H:]
	// dz = ReLU'(z) · L2'(dy): for y = r / n, dr = (dy − y (y·dy)) / n.
	if op.eps > 0 {
		// y·dy per row, four rows' chains interleaved (each in column order).
		v := 0
		for ; v+4 <= N; v += 4 {
			var d [4]float64
			y0, y1, y2, y3 := y[v*H:(v+1)*H], y[(v+1)*H:(v+2)*H], y[(v+2)*H:(v+3)*H], y[(v+3)*H:(v+4)*H]
			g0, g1, g2, g3 := dy[v*H:(v+1)*H], dy[(v+1)*H:(v+2)*H], dy[(v+2)*H:(v+3)*H], dy[(v+3)*H:(v+4)*H]
			for j := range y0 {
				d[0] += float64(y0[j]) * float64(g0[j])
				d[1] += float64(y1[j]) * float64(g1[j])
				d[2] += float64(y2[j]) * float64(g2[j])
				d[3] += float64(y3[j]) * float64(g3[j])
			}
			for r, yg := range d {
				sageDNorm(bf, y, dy, v+r, H, yg)
			}
		}
		for ; v < N; v++ {
			var yg float64
			g := dy[v*H : (v+1)*H]
			for j, x := range y[v*H : (v+1)*H] {
				yg += float64(x) * float64(g[j])
			}
			sageDNorm(bf, y, dy, v, H, yg)
		}
	} else {
		reluGrad(bf.gz, dy, bf.z)
	}
	clear(db)
	for v := 0; v < N; v++ {
		row := bf.gz[v*H : (v+1)*H]
		db := db[:len(row)]
		for j, x := range row {
			db[j] += x
		}
	}
	gemm(true, false, K, H, N, bf.x, K, bf.gz, H, 0, dw, H)    // dW = xᵀ·dz
	gemm(false, true, N, K, H, bf.gz, H, bf.w, H, 0, bf.dx, K) // dx = dz·Wᵀ
	// dh: the self block, then each neighbour block scattered to the rows it averaged.
	for v := 0; v < N; v++ {
		copy(dh[v*Hin:(v+1)*Hin], bf.dx[v*K:v*K+Hin])
	}
	for part, nb := range [2]struct {
		idx []int
		d   int
		inv []T
	}{{s.in, op.din, bf.invIn}, {s.out, op.dout, bf.invOut}} {
		for v := 0; v < N; v++ {
			g := bf.dx[v*K+(part+1)*Hin : v*K+(part+2)*Hin]
			scale := nb.inv[v]
			for _, u := range nb.idx[v*nb.d : (v+1)*nb.d] {
				if u < 0 {
					continue
				}
				d := dh[u*Hin : (u+1)*Hin][:len(g)]
				for j, x := range g {
					d[j] += x * scale
				}
			}
		}
	}
	return tensor.New(tensor.WithShape(len(bf.grads)), tensor.WithBacking(bf.grads)), nil
}

// sageDNorm sets row v of bf.gz to ReLU'(z_v) · L2'(dy) = [z > 0] (dy − y (y·dy)) / n
// for the row's y·dy (the mask applied while the row is in cache).
func sageDNorm[T float32 | float64](bf *sageBufs[T], y, dy []T, v, H int, yg float64) {
	inv := float64(bf.inv[v])
	yr, g, gz, z := y[v*H:(v+1)*H], dy[v*H:(v+1)*H], bf.gz[v*H:(v+1)*H], bf.z[v*H:(v+1)*H]
	g, gz, z = g[:len(yr)], gz[:len(yr)], z[:len(yr)]
	for j, x := range yr {
		gz[j] = T((float64(g[j]) - float64(x)*yg) * inv)
	}
	reluGrad(gz, gz, z)
}

// partOp views part of a packed vector, [off, off+size), as a tensor of shape shp (no
// copy: the view is valid while the packed vector is).
type partOp struct {
	OpBase
	off int
	shp tensor.Shape
}

func newPartOp(off int, shp []int) partOp {
	return partOp{OpBase{fmt.Sprintf("nn.part{%d,%v}", off, shp)}, off, tensor.Shape(shp).Clone()}
}

func (op partOp) Arity() int    { return 1 }
func (op partOp) Type() hm.Type { return hm.NewFnType(tt(1), tt(op.shp.Dims())) }
func (op partOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return op.shp.Clone(), nil
}

func (op partOp) Do(vals ...G.Value) (G.Value, error) {
	n := op.shp.TotalSize()
	switch d := vals[0].Data().(type) {
	case []float32:
		if op.off+n > len(d) {
			return nil, fmt.Errorf("%v: packed vector of %d", op, len(d))
		}
		return Dense(d[op.off:op.off+n:op.off+n], op.shp...), nil
	case []float64:
		if op.off+n > len(d) {
			return nil, fmt.Errorf("%v: packed vector of %d", op, len(d))
		}
		return Dense(d[op.off:op.off+n:op.off+n], op.shp...), nil
	}
	return nil, fmt.Errorf("%v: unsupported data %T", op, vals[0].Data())
}
