package nn

import (
	"fmt"
	"hash"
	"hash/fnv"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// This file holds the ops besides Gather: bias addition, ReLU and L2 row normalization,
// each with its analytic gradient (the group sum is the bias's gradient) (checked against finite differences in
// ops_test.go), and the helpers for writing ops. Networks use Gorgonia's built-ins for
// matrix products and concatenation: one fused op per step allocates and dispatches
// less than Gorgonia's broadcast chains (Broadcast builds repeat nodes), which is most
// of the cost at these networks' sizes.

// OpBase implements the bookkeeping methods of G.Op from an identifying string, which
// must determine the op (its kind and parameters): embed it and define Arity, Type, Do
// (and InferShape when the result's shape is not the first input's).
type OpBase struct{ ID string }

func (o OpBase) ReturnsPtr() bool      { return false }
func (o OpBase) CallsExtern() bool     { return false }
func (o OpBase) OverwritesInput() int  { return -1 }
func (o OpBase) WriteHash(h hash.Hash) { fmt.Fprint(h, o.ID) }
func (o OpBase) String() string        { return o.ID }

// InferShape gives the result the shape of the first input (ops with another result
// shape define their own).
func (o OpBase) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := ShapeOf(in[0])
	if err != nil {
		return nil, err
	}
	return s.Clone(), nil
}

func (o OpBase) Hashcode() uint32 {
	h := fnv.New32a()
	fmt.Fprint(h, o.ID)
	return h.Sum32()
}

// TensorType is the type of a float tensor of rank dims (its element type a variable),
// for ops' Type methods.
func TensorType(dims int) G.TensorType { return G.TensorType{Dims: dims, Of: hm.TypeVariable('a')} }

func tt(dims int) G.TensorType { return TensorType(dims) }

// Floats returns a value's data (tensor or scalar) as float32 or float64: exactly one
// is non-nil.
func Floats(v G.Value) ([]float32, []float64, error) {
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

// Dense returns a dense tensor of shape shp backed by d.
func Dense[T float32 | float64](d []T, shp ...int) G.Value {
	return tensor.New(tensor.WithShape(shp...), tensor.WithBacking(d))
}

// MapRows applies f (in the values' precision) to the first value and, when given, the
// second, and returns the result in the first value's shape.
func MapRows(vals []G.Value, f32 func(a, b []float32, shp tensor.Shape) []float32, f64 func(a, b []float64, shp tensor.Shape) []float64) (G.Value, error) {
	a32, a64, err := Floats(vals[0])
	if err != nil {
		return nil, err
	}
	var b32 []float32
	var b64 []float64
	if len(vals) > 1 {
		if b32, b64, err = Floats(vals[1]); err != nil {
			return nil, err
		}
	}
	shp := vals[0].Shape()
	if a32 != nil {
		return Dense(f32(a32, b32, shp), shp...), nil
	}
	return Dense(f64(a64, b64, shp), shp...), nil
}

// ShapeOf returns an input's shape as a tensor.Shape (the form InferShape is given).
func ShapeOf(in G.DimSizer) (tensor.Shape, error) {
	s, ok := in.(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("input shape %v is %T", in, in)
	}
	return s, nil
}

// ---- bias: x [R, W] + b [W] ----

type biasOp struct{ OpBase }

func newBiasOp() biasOp { return biasOp{OpBase{"nn.bias"}} }

func (op biasOp) Arity() int    { return 2 }
func (op biasOp) Type() hm.Type { return hm.NewFnType(tt(2), tt(1), tt(2)) }
func (op biasOp) Do(vals ...G.Value) (G.Value, error) {
	return MapRows(vals,
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
	OpBase
	size   int
	vector bool
}

func newGroupSumOp(size int, vector bool) groupSumOp {
	return groupSumOp{OpBase{fmt.Sprintf("nn.groupSum{%d,%t}", size, vector)}, size, vector}
}

func (op groupSumOp) Arity() int { return 1 }
func (op groupSumOp) Type() hm.Type {
	if op.vector {
		return hm.NewFnType(tt(2), tt(1))
	}
	return hm.NewFnType(tt(2), tt(2))
}
func (op groupSumOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := ShapeOf(in[0])
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
	x32, x64, err := Floats(vals[0])
	if err != nil {
		return nil, err
	}
	shp := vals[0].Shape()
	out := tensor.Shape{shp[0] / op.size, shp[1]}
	if op.vector {
		out = tensor.Shape{shp[1]}
	}
	if x32 != nil {
		return Dense(groupSum(x32, shp[1], op.size), out...), nil
	}
	return Dense(groupSum(x64, shp[1], op.size), out...), nil
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
	OpBase
	eps float64
}

func newL2Op(eps float64) l2Op { return l2Op{OpBase{fmt.Sprintf("nn.l2{%g}", eps)}, eps} }

func (op l2Op) Arity() int    { return 1 }
func (op l2Op) Type() hm.Type { return hm.NewFnType(tt(2), tt(2)) }
func (op l2Op) Do(vals ...G.Value) (G.Value, error) {
	return MapRows(vals,
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
	d, err := G.ApplyOp(l2DiffOp{OpBase{"nn.l2Diff" + op.ID[len("nn.l2"):]}, op.eps}, inputs[0], grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{d}, nil
}

type l2DiffOp struct {
	OpBase
	eps float64
}

func (op l2DiffOp) Arity() int    { return 2 }
func (op l2DiffOp) Type() hm.Type { return hm.NewFnType(tt(2), tt(2), tt(2)) }
func (op l2DiffOp) Do(vals ...G.Value) (G.Value, error) {
	return MapRows(vals,
		func(h, g []float32, shp tensor.Shape) []float32 { return l2Rows(h, shp[1], op.eps, g) },
		func(h, g []float64, shp tensor.Shape) []float64 { return l2Rows(h, shp[1], op.eps, g) })
}

// ---- ReLU: max(0, x), gradient g·[y > 0] ----

type reluOp struct{ OpBase }

func newReluOp() reluOp { return reluOp{OpBase{"nn.relu"}} }

func (op reluOp) Arity() int    { return 1 }
func (op reluOp) Type() hm.Type { return hm.NewFnType(hm.TypeVariable('a'), hm.TypeVariable('a')) }
func (op reluOp) Do(vals ...G.Value) (G.Value, error) {
	return MapRows(vals,
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
	d, err := G.ApplyOp(reluDiffOp{OpBase{"nn.reluDiff"}}, output, grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{d}, nil
}

type reluDiffOp struct{ OpBase }

func (op reluDiffOp) Arity() int { return 2 }
func (op reluDiffOp) Type() hm.Type {
	return hm.NewFnType(hm.TypeVariable('a'), hm.TypeVariable('a'), hm.TypeVariable('a'))
}
func (op reluDiffOp) Do(vals ...G.Value) (G.Value, error) {
	return MapRows(vals,
		func(y, g []float32, _ tensor.Shape) []float32 { return relu(y, g) },
		func(y, g []float64, _ tensor.Shape) []float64 { return relu(y, g) })
}

// ReLU is max(0, x) elementwise, for a tensor of any shape; its gradient is g·[x > 0].
func ReLU(x *G.Node) *G.Node { return G.Must(G.ApplyOp(newReluOp(), x)) }

// Bias is x [R, W] + b [W], b added to every row.
func Bias(x, b *G.Node) *G.Node { return G.Must(G.ApplyOp(newBiasOp(), x, b)) }

// L2Norm normalizes every row of h [R, W]: y_r = h_r / √(‖h_r‖² + eps) (eps > 0 bounds
// the gain at 1/√eps for near-zero rows).
func L2Norm(h *G.Node, eps float64) *G.Node { return G.Must(G.ApplyOp(newL2Op(eps), h)) }
