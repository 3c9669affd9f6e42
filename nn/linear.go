package nn

import (
	"fmt"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Linear is a fully connected layer as one op: y = act(a + Σ_i x_i·w_i + b) with x_i
// [N, K_i], w_i [K_i, H], b [H] (nil: none), a [N, H] (nil: none), act ReLU when relu is
// set, else the identity. The products are one matrix product of [x_1 | x_2 | …] with
// the stacked weights; the backward is hand-written (two products) and, like SAGE's
// fused layer, the op reuses its buffers from run to run, so one graph's machine must
// not run concurrently with itself.
func Linear(xs, ws []*G.Node, b, a *G.Node, relu bool) *G.Node {
	return LinearData(xs, ws, b, a, relu, nil)
}

// LinearData is Linear where the inputs x_i with data[i] set are data (a batch's
// features), whose gradient no one reads: the op has none with respect to them
// (DiffWRT), and its backward skips their part of dx = dz·Wᵀ — for a network's input
// layer most of that product, for a head layer over configuration features all of it.
// data may be shorter than xs (missing: false).
func LinearData(xs, ws []*G.Node, b, a *G.Node, relu bool, data []bool) *G.Node {
	if len(xs) == 0 || len(xs) != len(ws) || len(xs) > 64 || len(data) > len(xs) {
		panic(fmt.Sprintf("nn.Linear: %d inputs, %d weights and %d data flags", len(xs), len(ws), len(data)))
	}
	op := denseOp{k: len(xs), bias: b != nil, add: a != nil, relu: relu, st: &denseState{}}
	for i, d := range data {
		if d {
			op.data |= 1 << i
		}
	}
	op.ID = fmt.Sprintf("nn.dense{%d,%t,%t,%t}", op.k, op.bias, op.add, op.relu)
	if op.data != 0 {
		op.ID = fmt.Sprintf("nn.dense{%d,%t,%t,%t,data%b}", op.k, op.bias, op.add, op.relu, op.data)
	}
	in := append(append(G.Nodes{}, xs...), ws...)
	if b != nil {
		in = append(in, b)
	}
	if a != nil {
		in = append(in, a)
	}
	return G.Must(G.ApplyOp(op, in...))
}

// denseOp is Linear's op: inputs x_1..x_k, w_1..w_k, then b and a when present.
type denseOp struct {
	OpBase
	k               int
	bias, add, relu bool
	data            uint64 // bit i: x_i is data, without a gradient (LinearData)
	st              *denseState
}

// isData reports whether x_i is data (LinearData).
func (op denseOp) isData(i int) bool { return op.data&(1<<i) != 0 }

type denseState struct {
	f32 denseBufs[float32]
	f64 denseBufs[float64]
}

type denseBufs[T float32 | float64] struct {
	x, w, z, y []T // [N, ΣK], [ΣK, H], [N, H] before the activation, [N, H]
	gz, dx     []T // backward: [N, H], [N, ΣK]
	grads      []T // backward: [dx_1 … dx_k | dW (ΣK·H) | db (H) | da (N·H)]
}

func (op denseOp) Arity() int {
	n := 2 * op.k
	if op.bias {
		n++
	}
	if op.add {
		n++
	}
	return n
}

func (op denseOp) types() []hm.Type {
	var ts []hm.Type
	for range 2 * op.k {
		ts = append(ts, tt(2))
	}
	if op.bias {
		ts = append(ts, tt(1))
	}
	if op.add {
		ts = append(ts, tt(2))
	}
	return ts
}

func (op denseOp) Type() hm.Type { return hm.NewFnType(append(op.types(), tt(2))...) }

func (op denseOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	if len(in) != op.Arity() {
		return nil, fmt.Errorf("%v: want %d inputs, got %d", op, op.Arity(), len(in))
	}
	xs, err := ShapeOf(in[0])
	if err != nil {
		return nil, err
	}
	ws, err := ShapeOf(in[op.k])
	if err != nil {
		return nil, err
	}
	for i := range op.k {
		x, err1 := ShapeOf(in[i])
		w, err2 := ShapeOf(in[op.k+i])
		if err1 != nil || err2 != nil || len(x) != 2 || len(w) != 2 || x[0] != xs[0] || x[1] != w[0] || w[1] != ws[1] {
			return nil, fmt.Errorf("%v: input %d %v and weights %v do not match", op, i, in[i], in[op.k+i])
		}
	}
	return tensor.Shape{xs[0], ws[1]}, nil
}

// denseIn are a Linear op's inputs, checked.
type denseIn[T float32 | float64] struct {
	xs, ws  [][]T
	ks      []int // K_i
	b, a    []T
	n, k, h int // N, ΣK, H
}

func denseInputs[T float32 | float64](op denseOp, vals []G.Value) (denseIn[T], error) {
	var d denseIn[T]
	get := func(v G.Value) ([]T, error) {
		s, ok := v.Data().([]T)
		if !ok {
			return nil, fmt.Errorf("%v: inputs of mixed types", op)
		}
		return s, nil
	}
	d.n = vals[0].Shape()[0]
	d.h = vals[op.k].Shape()[1]
	for i := range op.k {
		x, err := get(vals[i])
		if err != nil {
			return d, err
		}
		w, err := get(vals[op.k+i])
		if err != nil {
			return d, err
		}
		ki := vals[i].Shape()[1]
		if len(x) != d.n*ki || len(w) != ki*d.h {
			return d, fmt.Errorf("%v: input %d of inconsistent size", op, i)
		}
		d.xs, d.ws, d.ks = append(d.xs, x), append(d.ws, w), append(d.ks, ki)
		d.k += ki
	}
	j := 2 * op.k
	if op.bias {
		b, err := get(vals[j])
		if err != nil {
			return d, err
		}
		if len(b) != d.h {
			return d, fmt.Errorf("%v: bias of %d, want %d", op, len(b), d.h)
		}
		d.b = b
		j++
	}
	if op.add {
		a, err := get(vals[j])
		if err != nil {
			return d, err
		}
		if len(a) != d.n*d.h {
			return d, fmt.Errorf("%v: addend of %d, want %d", op, len(a), d.n*d.h)
		}
		d.a = a
	}
	return d, nil
}

func (op denseOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != op.Arity() {
		return nil, fmt.Errorf("%v: want %d inputs, got %d", op, op.Arity(), len(vals))
	}
	switch vals[0].Data().(type) {
	case []float32:
		return denseForward(op, &op.st.f32, vals)
	case []float64:
		return denseForward(op, &op.st.f64, vals)
	}
	return nil, fmt.Errorf("%v: unsupported data %T", op, vals[0].Data())
}

func denseForward[T float32 | float64](op denseOp, bf *denseBufs[T], vals []G.Value) (G.Value, error) {
	d, err := denseInputs[T](op, vals)
	if err != nil {
		return nil, err
	}
	N, K, H := d.n, d.k, d.h
	bf.x, bf.w, bf.z, bf.y = grow(bf.x, N*K), grow(bf.w, K*H), grow(bf.z, N*H), grow(bf.y, N*H)
	x, w := bf.x, bf.w
	if op.k == 1 {
		x, w = d.xs[0], d.ws[0] // no concatenation to make
	} else {
		off := 0
		for i, xi := range d.xs {
			ki := d.ks[i]
			for v := 0; v < N; v++ {
				copy(x[v*K+off:v*K+off+ki], xi[v*ki:(v+1)*ki])
			}
			copy(w[off*H:], d.ws[i])
			off += ki
		}
	}
	// z = a + b + x·w: the addend and bias rows first, then the product onto them.
	z := bf.z
	switch {
	case d.a != nil:
		copy(z, d.a)
		if d.b != nil {
			for v := 0; v < N; v++ {
				for j, bj := range d.b {
					z[v*H+j] += bj
				}
			}
		}
	case d.b != nil:
		for v := 0; v < N; v++ {
			copy(z[v*H:(v+1)*H], d.b)
		}
	default:
		clear(z)
	}
	gemm(false, false, N, H, K, x, K, w, H, 1, z, H)
	if !op.relu {
		copy(bf.y, z)
	} else {
		reluInto(bf.y, z)
	}
	return tensor.New(tensor.WithShape(N, H), tensor.WithBacking(bf.y)), nil
}

func (op denseOp) DiffWRT(n int) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = i >= op.k || !op.isData(i)
	}
	return out
}

// SymDiff returns every input's gradient: views of one packed gradient that
// denseDiffOp computes.
func (op denseOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if len(inputs) != op.Arity() {
		return nil, fmt.Errorf("%v: want %d inputs, got %d", op, op.Arity(), len(inputs))
	}
	args := append(append(G.Nodes{}, inputs...), grad)
	d, err := G.ApplyOp(denseDiffOp{OpBase{"nn.denseDiff" + op.ID[len("nn.dense"):]}, op}, args...)
	if err != nil {
		return nil, err
	}
	N, H := inputs[0].Shape()[0], inputs[op.k].Shape()[1]
	out := make(G.Nodes, len(inputs))
	off := 0
	view := func(i int, shp ...int) error {
		if out[i], err = G.ApplyOp(newPartOp(off, shp), d); err != nil {
			return err
		}
		off += tensor.Shape(shp).TotalSize()
		return nil
	}
	for i := range op.k {
		if op.isData(i) { // no gradient: not in the packed vector
			continue
		}
		if err := view(i, N, inputs[i].Shape()[1]); err != nil {
			return nil, err
		}
	}
	for i := range op.k {
		if err := view(op.k+i, inputs[op.k+i].Shape()[0], H); err != nil {
			return nil, err
		}
	}
	j := 2 * op.k
	if op.bias {
		if err := view(j, H); err != nil {
			return nil, err
		}
		j++
	}
	if op.add {
		if err := view(j, N, H); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// denseDiffOp is denseOp's backward: (inputs…, dy) → the packed gradient
// [dx_1 … dx_k | dw_1 … dw_k | db | da], without the dx_i of data inputs. It reads the
// forward's buffers of the same run.
type denseDiffOp struct {
	OpBase
	fwd denseOp
}

func (op denseDiffOp) Arity() int { return op.fwd.Arity() + 1 }

func (op denseDiffOp) Type() hm.Type {
	return hm.NewFnType(append(op.fwd.types(), tt(2), tt(1))...)
}

func (op denseDiffOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	n := 0
	for i := 0; i < op.fwd.Arity(); i++ {
		if i < op.fwd.k && op.fwd.isData(i) {
			continue
		}
		s, err := ShapeOf(in[i])
		if err != nil {
			return nil, err
		}
		n += s.TotalSize()
	}
	return tensor.Shape{n}, nil
}

func (op denseDiffOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != op.Arity() {
		return nil, fmt.Errorf("%v: want %d inputs, got %d", op, op.Arity(), len(vals))
	}
	switch vals[0].Data().(type) {
	case []float32:
		return denseBackward(op.fwd, &op.fwd.st.f32, vals)
	case []float64:
		return denseBackward(op.fwd, &op.fwd.st.f64, vals)
	}
	return nil, fmt.Errorf("%v: unsupported data %T", op, vals[0].Data())
}

func denseBackward[T float32 | float64](op denseOp, bf *denseBufs[T], vals []G.Value) (G.Value, error) {
	d, err := denseInputs[T](op, vals[:len(vals)-1])
	if err != nil {
		return nil, err
	}
	N, K, H := d.n, d.k, d.h
	dy, ok := vals[len(vals)-1].Data().([]T)
	if !ok || len(dy) != N*H || len(bf.z) != N*H || len(bf.x) != N*K {
		return nil, fmt.Errorf("%v: backward without its forward, or of another shape", op)
	}
	kg := 0 // the columns of the inputs with a gradient
	for i, ki := range d.ks {
		if !op.isData(i) {
			kg += ki
		}
	}
	size := N*kg + K*H
	if op.bias {
		size += H
	}
	if op.add {
		size += N * H
	}
	bf.gz, bf.dx, bf.grads = grow(bf.gz, N*H), grow(bf.dx, N*K), grow(bf.grads, size)
	gz := bf.gz
	if !op.relu {
		copy(gz, dy)
	} else if !op.bias {
		reluGrad(gz, dy, bf.z)
	}
	x, w := bf.x, bf.w
	if op.k == 1 {
		x, w = d.xs[0], d.ws[0]
	}
	grads := bf.grads
	dxs, dw, rest := grads[:N*kg], grads[N*kg:N*kg+K*H], grads[N*kg+K*H:]
	if op.bias { // db = Σ_rows dz (with ReLU, dz masked here, row by row)
		db := rest[:H]
		clear(db)
		for v := 0; v < N; v++ {
			row := gz[v*H : (v+1)*H]
			if op.relu {
				reluGradSum(row, dy[v*H:(v+1)*H], bf.z[v*H:(v+1)*H], db)
				continue
			}
			db := db[:len(row)]
			for j, g := range row {
				db[j] += g
			}
		}
		rest = rest[H:]
	}
	gemm(true, false, K, H, N, x, K, gz, H, 0, dw, H) // dW = xᵀ·dz, the blocks dw_i in order
	switch {
	case kg == 0: // every input is data
	case op.k == 1:
		gemm(false, true, N, K, H, gz, H, w, H, 0, dxs, K) // dx = dz·Wᵀ
	case op.data != 0:
		// dx_i = dz·W_iᵀ for the inputs with a gradient, each its own product (W_i: rows
		// off..off+K_i of W), written packed.
		off, at := 0, 0
		for i, ki := range d.ks {
			if !op.isData(i) {
				gemm(false, true, N, ki, H, gz, H, w[off*H:(off+ki)*H], H, 0, dxs[at:at+N*ki], ki)
				at += N * ki
			}
			off += ki
		}
	default:
		gemm(false, true, N, K, H, gz, H, w, H, 0, bf.dx, K)
		off, at := 0, 0
		for _, ki := range d.ks { // dx_i: the column block of dx, packed
			for v := 0; v < N; v++ {
				copy(dxs[at+v*ki:at+(v+1)*ki], bf.dx[v*K+off:v*K+off+ki])
			}
			off += ki
			at += N * ki
		}
	}
	if op.add {
		copy(rest, gz)
	}
	return tensor.New(tensor.WithShape(size), tensor.WithBacking(grads)), nil
}
