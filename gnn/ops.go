package gnn

import (
	"fmt"
	"hash"
	"hash/fnv"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// This file holds the model's own Gorgonia ops besides gatherOp: bias addition, ReLU, L2
// row normalization and the two losses, each with
// its analytic gradient (checked against finite differences in grad_test.go). The model
// uses Gorgonia's built-ins only for matrix products and concatenation: one fused op per
// step allocates and dispatches less than Gorgonia's broadcast chains (Broadcast builds
// repeat nodes), which is most of the cost at this model's sizes.

// opBase implements the bookkeeping methods of G.Op from an identifying string.
type opBase struct{ id string }

func (o opBase) ReturnsPtr() bool      { return false }
func (o opBase) CallsExtern() bool     { return false }
func (o opBase) OverwritesInput() int  { return -1 }
func (o opBase) WriteHash(h hash.Hash) { fmt.Fprint(h, o.id) }
func (o opBase) String() string        { return o.id }

// InferShape gives the result the shape of the first input (ops with another result
// shape define their own).
func (o opBase) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := shapeOf(in[0])
	if err != nil {
		return nil, err
	}
	return s.Clone(), nil
}

func (o opBase) Hashcode() uint32 {
	h := fnv.New32a()
	fmt.Fprint(h, o.id)
	return h.Sum32()
}

func tt(dims int) G.TensorType { return G.TensorType{Dims: dims, Of: hm.TypeVariable('a')} }

// floats returns a value's data as float32 or float64 (exactly one is non-nil).
func floats(v G.Value) ([]float32, []float64, error) {
	switch d := v.Data().(type) {
	case []float32:
		return d, nil, nil
	case []float64:
		return nil, d, nil
	case float32:
		return []float32{d}, nil, nil
	case float64:
		return nil, []float64{d}, nil
	}
	return nil, nil, fmt.Errorf("unsupported value data %T", v.Data())
}

func dense32(d []float32, shp ...int) G.Value {
	return tensor.New(tensor.WithShape(shp...), tensor.WithBacking(d))
}

func dense64(d []float64, shp ...int) G.Value {
	return tensor.New(tensor.WithShape(shp...), tensor.WithBacking(d))
}

// mapRows applies f (in the values' precision) to the first value and, when given, the
// second, and returns the result in the first value's shape.
func mapRows(vals []G.Value, f32 func(a, b []float32, shp tensor.Shape) []float32, f64 func(a, b []float64, shp tensor.Shape) []float64) (G.Value, error) {
	a32, a64, err := floats(vals[0])
	if err != nil {
		return nil, err
	}
	var b32 []float32
	var b64 []float64
	if len(vals) > 1 {
		if b32, b64, err = floats(vals[1]); err != nil {
			return nil, err
		}
	}
	shp := vals[0].Shape()
	if a32 != nil {
		return dense32(f32(a32, b32, shp), shp...), nil
	}
	return dense64(f64(a64, b64, shp), shp...), nil
}

func shapeOf(in G.DimSizer) (tensor.Shape, error) {
	s, ok := in.(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("input shape %v is %T", in, in)
	}
	return s, nil
}

// ---- bias: x [R, W] + b [W] ----

type biasOp struct{ opBase }

func newBiasOp() biasOp { return biasOp{opBase{"gnn.bias"}} }

func (op biasOp) Arity() int    { return 2 }
func (op biasOp) Type() hm.Type { return hm.NewFnType(tt(2), tt(1), tt(2)) }
func (op biasOp) Do(vals ...G.Value) (G.Value, error) {
	return mapRows(vals,
		func(x, b []float32, _ tensor.Shape) []float32 { return addBias(x, b) },
		func(x, b []float64, _ tensor.Shape) []float64 { return addBias(x, b) })
}

func addBias[T float32 | float64](x, b []T) []T {
	out := make([]T, len(x))
	w := len(b)
	for i := range x {
		out[i] = x[i] + b[i%w]
	}
	return out
}

func (op biasOp) DiffWRT(int) []bool { return []bool{true, true} }
func (op biasOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	rows := inputs[0].Shape()[0]
	db, err := G.ApplyOp(newGroupSumOp(rows, true), grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{grad, db}, nil
}

// ---- group sum: [G·size, W] → [G, W] (or [W] when vector and G = 1) ----

type groupSumOp struct {
	opBase
	size   int
	vector bool
}

func newGroupSumOp(size int, vector bool) groupSumOp {
	return groupSumOp{opBase{fmt.Sprintf("gnn.groupSum{%d,%t}", size, vector)}, size, vector}
}

func (op groupSumOp) Arity() int { return 1 }
func (op groupSumOp) Type() hm.Type {
	if op.vector {
		return hm.NewFnType(tt(2), tt(1))
	}
	return hm.NewFnType(tt(2), tt(2))
}
func (op groupSumOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := shapeOf(in[0])
	if err != nil {
		return nil, err
	}
	if len(s) != 2 || s[0]%op.size != 0 {
		return nil, fmt.Errorf("%v: input shape %v", op, s)
	}
	if op.vector {
		return tensor.Shape{s[1]}, nil
	}
	return tensor.Shape{s[0] / op.size, s[1]}, nil
}
func (op groupSumOp) Do(vals ...G.Value) (G.Value, error) {
	x32, x64, err := floats(vals[0])
	if err != nil {
		return nil, err
	}
	shp := vals[0].Shape()
	out := tensor.Shape{shp[0] / op.size, shp[1]}
	if op.vector {
		out = tensor.Shape{shp[1]}
	}
	if x32 != nil {
		return dense32(groupSum(x32, shp[1], op.size), out...), nil
	}
	return dense64(groupSum(x64, shp[1], op.size), out...), nil
}

func groupSum[T float32 | float64](x []T, width, size int) []T {
	groups := len(x) / width / size
	out := make([]T, groups*width)
	for g := 0; g < groups; g++ {
		o := out[g*width : (g+1)*width]
		for r := 0; r < size; r++ {
			for j, v := range x[(g*size+r)*width : (g*size+r+1)*width] {
				o[j] += v
			}
		}
	}
	return out
}

// ---- L2 row normalization: y_r = h_r / √(‖h_r‖² + eps) ----

type l2Op struct {
	opBase
	eps float64
}

func newL2Op(eps float64) l2Op { return l2Op{opBase{fmt.Sprintf("gnn.l2{%g}", eps)}, eps} }

func (op l2Op) Arity() int    { return 1 }
func (op l2Op) Type() hm.Type { return hm.NewFnType(tt(2), tt(2)) }
func (op l2Op) Do(vals ...G.Value) (G.Value, error) {
	return mapRows(vals,
		func(h, _ []float32, shp tensor.Shape) []float32 { return l2Rows(h, shp[1], op.eps, nil) },
		func(h, _ []float64, shp tensor.Shape) []float64 { return l2Rows(h, shp[1], op.eps, nil) })
}

// l2Rows normalizes rows; with g it instead returns the gradient with respect to h of
// Σ g·y: dh = (g − y (y·g)) / n with n = √(‖h‖² + eps).
func l2Rows[T float32 | float64](h []T, width int, eps float64, g []T) []T {
	out := make([]T, len(h))
	for r := 0; r < len(h)/width; r++ {
		row := h[r*width : (r+1)*width]
		var ss float64
		for _, x := range row {
			ss += float64(x) * float64(x)
		}
		inv := 1 / math.Sqrt(ss+eps)
		o := out[r*width : (r+1)*width]
		if g == nil {
			for j, x := range row {
				o[j] = T(float64(x) * inv)
			}
			continue
		}
		gr := g[r*width : (r+1)*width]
		var yg float64
		for j, x := range row {
			yg += float64(x) * inv * float64(gr[j])
		}
		for j, x := range row {
			o[j] = T((float64(gr[j]) - float64(x)*inv*yg) * inv)
		}
	}
	return out
}

func (op l2Op) DiffWRT(int) []bool { return []bool{true} }
func (op l2Op) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	d, err := G.ApplyOp(l2DiffOp{opBase{"gnn.l2Diff" + op.id[len("gnn.l2"):]}, op.eps}, inputs[0], grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{d}, nil
}

type l2DiffOp struct {
	opBase
	eps float64
}

func (op l2DiffOp) Arity() int    { return 2 }
func (op l2DiffOp) Type() hm.Type { return hm.NewFnType(tt(2), tt(2), tt(2)) }
func (op l2DiffOp) Do(vals ...G.Value) (G.Value, error) {
	return mapRows(vals,
		func(h, g []float32, shp tensor.Shape) []float32 { return l2Rows(h, shp[1], op.eps, g) },
		func(h, g []float64, shp tensor.Shape) []float64 { return l2Rows(h, shp[1], op.eps, g) })
}

// ---- losses ----

// scalarOf returns a scalar value as float64.
func scalarOf(v G.Value) (float64, error) {
	f32, f64, err := floats(v)
	if err != nil {
		return 0, err
	}
	if f32 != nil && len(f32) == 1 {
		return float64(f32[0]), nil
	}
	if f64 != nil && len(f64) == 1 {
		return f64[0], nil
	}
	return 0, fmt.Errorf("want a scalar, got shape %v", v.Shape())
}

func scalarValue(isF32 bool, x float64) G.Value {
	if isF32 {
		return G.NewF32(float32(x))
	}
	return G.NewF64(x)
}

// rankLossOp is Σ_k w_k Σ_{i,j∈k} φ(ŷ_i − ŷ_j)·[r_i > r_j] (pairwise losses) or
// Σ_k w_k L_k (ListMLE, listMLE in loss.go) for outputs ŷ [S], the rank
// r [S] of each sample's runtime within its kernel (the count of faster samples, so that
// r_i > r_j ⟺ t_i > t_j), kernel weights w [B] and the kernels' sample ranges
// span [B+1] (kernel k's samples are span[k]..span[k+1]−1); see loss.go.
type rankLossOp struct {
	opBase
	loss Loss
}

func newRankLossOp(l Loss) rankLossOp {
	return rankLossOp{opBase{fmt.Sprintf("gnn.rankLoss{%s}", l)}, l}
}

func (op rankLossOp) Arity() int { return 4 }
func (op rankLossOp) Type() hm.Type {
	return hm.NewFnType(tt(1), tt(1), tt(1), G.TensorType{Dims: 1, Of: tensor.Int}, hm.TypeVariable('a'))
}
func (op rankLossOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.ScalarShape(), nil
}
func (op rankLossOp) Do(vals ...G.Value) (G.Value, error) {
	span, ok := vals[3].Data().([]int)
	if !ok {
		return nil, fmt.Errorf("%v: spans are %T", op, vals[3].Data())
	}
	x32, x64, err := lossInputs(vals[:3])
	if err != nil {
		return nil, err
	}
	if x32[0] != nil {
		l, _ := rankLoss(op.loss, x32[0], x32[1], x32[2], span, false)
		return scalarValue(true, l), nil
	}
	l, _ := rankLoss(op.loss, x64[0], x64[1], x64[2], span, false)
	return scalarValue(false, l), nil
}

// rankLoss dispatches to the pairwise losses or listMLE.

func rankLoss[T float32 | float64](l Loss, out, rank, w []T, span []int, grad bool) (float64, []T) {
	if l == LossListMLE {
		return listMLE(out, rank, w, span, grad)
	}
	return pairLoss(l, out, rank, w, span, grad)
}

// pairLoss evaluates the weighted pairwise loss and, with grad, its gradient with respect
// to the outputs. φ'(z) is −1 (hinge, where 1 − z > 0) or −1/(1 + e^z) (logistic).
func pairLoss[T float32 | float64](l Loss, out, rank, w []T, span []int, grad bool) (float64, []T) {
	var sum float64
	var d []T
	if grad {
		d = make([]T, len(out))
	}
	for k := range w {
		wk := float64(w[k])
		if wk == 0 {
			continue
		}
		lo, hi := span[k], span[k+1]
		for i := lo; i < hi; i++ {
			for j := lo; j < hi; j++ {
				if rank[i] <= rank[j] {
					continue
				}
				z := float64(out[i]) - float64(out[j])
				sum += wk * phi(l, z)
				if grad {
					var dphi float64
					if l == LossRankHinge {
						if 1-z > 0 {
							dphi = -1
						}
					} else {
						dphi = -1 / (1 + math.Exp(z))
					}
					d[i] += T(wk * dphi)
					d[j] -= T(wk * dphi)
				}
			}
		}
	}
	return sum, d
}

func (op rankLossOp) DiffWRT(int) []bool { return []bool{true, false, false, false} }
func (op rankLossOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	d, err := G.ApplyOp(rankDiffOp{opBase{"gnn.rankDiff" + op.id[len("gnn.rankLoss"):]}, op.loss}, inputs[0], inputs[1], inputs[2], inputs[3], grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{d, nil, nil, nil}, nil
}

type rankDiffOp struct {
	opBase
	loss Loss
}

func (op rankDiffOp) Arity() int { return 5 }
func (op rankDiffOp) Type() hm.Type {
	return hm.NewFnType(tt(1), tt(1), tt(1), G.TensorType{Dims: 1, Of: tensor.Int}, hm.TypeVariable('a'), tt(1))
}
func (op rankDiffOp) Do(vals ...G.Value) (G.Value, error) {
	span, ok := vals[3].Data().([]int)
	if !ok {
		return nil, fmt.Errorf("%v: spans are %T", op, vals[3].Data())
	}
	return lossGrad(vals[:3], vals[4],
		func(o, r, w []float32) []float32 { _, d := rankLoss(op.loss, o, r, w, span, true); return d },
		func(o, r, w []float64) []float64 { _, d := rankLoss(op.loss, o, r, w, span, true); return d })
}

// mseOp is Σ_s w_s (ŷ_s − y_s)².
type mseOp struct{ opBase }

func newMSEOp() mseOp { return mseOp{opBase{"gnn.mse"}} }

func (op mseOp) Arity() int { return 3 }
func (op mseOp) Type() hm.Type {
	return hm.NewFnType(tt(1), tt(1), tt(1), hm.TypeVariable('a'))
}
func (op mseOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return tensor.ScalarShape(), nil }
func (op mseOp) Do(vals ...G.Value) (G.Value, error) {
	x32, x64, err := lossInputs(vals[:3])
	if err != nil {
		return nil, err
	}
	if x32[0] != nil {
		l, _ := mse(x32[0], x32[1], x32[2], false)
		return scalarValue(true, l), nil
	}
	l, _ := mse(x64[0], x64[1], x64[2], false)
	return scalarValue(false, l), nil
}

func mse[T float32 | float64](out, y, w []T, grad bool) (float64, []T) {
	var sum float64
	var d []T
	if grad {
		d = make([]T, len(out))
	}
	for i := range out {
		e := float64(out[i]) - float64(y[i])
		sum += float64(w[i]) * e * e
		if grad {
			d[i] = T(2 * float64(w[i]) * e)
		}
	}
	return sum, d
}

func (op mseOp) DiffWRT(int) []bool { return []bool{true, false, false} }
func (op mseOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	d, err := G.ApplyOp(mseDiffOp{opBase{"gnn.mseDiff"}}, inputs[0], inputs[1], inputs[2], grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{d, nil, nil}, nil
}

type mseDiffOp struct{ opBase }

func (op mseDiffOp) Arity() int { return 4 }
func (op mseDiffOp) Type() hm.Type {
	return hm.NewFnType(tt(1), tt(1), tt(1), hm.TypeVariable('a'), tt(1))
}
func (op mseDiffOp) Do(vals ...G.Value) (G.Value, error) {
	return lossGrad(vals[:3], vals[3],
		func(o, y, w []float32) []float32 { _, d := mse(o, y, w, true); return d },
		func(o, y, w []float64) []float64 { _, d := mse(o, y, w, true); return d })
}

// lossInputs reads a loss's three float inputs (outputs, targets, weights) in their
// precision: the float32 or the float64 array is set for each.
func lossInputs(in []G.Value) (x32 [3][]float32, x64 [3][]float64, err error) {
	for i, v := range in {
		if x32[i], x64[i], err = floats(v); err != nil {
			return x32, x64, err
		}
	}
	return x32, x64, nil
}

// lossGrad computes a loss's gradient with respect to its first input from the three
// float inputs (outputs, targets, weights) in their precision, scaled by the incoming
// scalar gradient g.
func lossGrad(in []G.Value, g G.Value, f32 func(a, b, c []float32) []float32, f64 func(a, b, c []float64) []float64) (G.Value, error) {
	x32, x64, err := lossInputs(in)
	if err != nil {
		return nil, err
	}
	scale, err := scalarOf(g)
	if err != nil {
		return nil, err
	}
	if x32[0] != nil {
		d := f32(x32[0], x32[1], x32[2])
		for i := range d {
			d[i] *= float32(scale)
		}
		return dense32(d, len(d)), nil
	}
	d := f64(x64[0], x64[1], x64[2])
	for i := range d {
		d[i] *= scale
	}
	return dense64(d, len(d)), nil
}

// ---- ReLU: max(0, x), gradient g·[y > 0] ----

type reluOp struct{ opBase }

func newReluOp() reluOp { return reluOp{opBase{"gnn.relu"}} }

func (op reluOp) Arity() int    { return 1 }
func (op reluOp) Type() hm.Type { return hm.NewFnType(hm.TypeVariable('a'), hm.TypeVariable('a')) }
func (op reluOp) Do(vals ...G.Value) (G.Value, error) {
	return mapRows(vals,
		func(x, _ []float32, _ tensor.Shape) []float32 { return relu(x, nil) },
		func(x, _ []float64, _ tensor.Shape) []float64 { return relu(x, nil) })
}

// relu returns max(0, x), or with g the gradient g·[x > 0].
func relu[T float32 | float64](x, g []T) []T {
	out := make([]T, len(x))
	for i, v := range x {
		if v > 0 {
			if g == nil {
				out[i] = v
			} else {
				out[i] = g[i]
			}
		}
	}
	return out
}

func (op reluOp) DiffWRT(int) []bool { return []bool{true} }
func (op reluOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	d, err := G.ApplyOp(reluDiffOp{opBase{"gnn.reluDiff"}}, output, grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{d}, nil
}

type reluDiffOp struct{ opBase }

func (op reluDiffOp) Arity() int { return 2 }
func (op reluDiffOp) Type() hm.Type {
	return hm.NewFnType(hm.TypeVariable('a'), hm.TypeVariable('a'), hm.TypeVariable('a'))
}
func (op reluDiffOp) Do(vals ...G.Value) (G.Value, error) {
	return mapRows(vals,
		func(y, g []float32, _ tensor.Shape) []float32 { return relu(y, g) },
		func(y, g []float64, _ tensor.Shape) []float64 { return relu(y, g) })
}

// reluNode applies reluOp.
func reluNode(x *G.Node) *G.Node { return G.Must(G.ApplyOp(newReluOp(), x)) }
