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

// Reduction is a reduction over a group of gathered rows.
type Reduction string

// The reductions.
const (
	ReduceSum  Reduction = "sum"
	ReduceMean Reduction = "mean"
	ReduceMax  Reduction = "max"
)

// Valid reports whether r is one of the reductions.
func (r Reduction) Valid() bool { return r == ReduceSum || r == ReduceMean || r == ReduceMax }

// Gather gathers rows of h [R, W] by index and reduces each group of slots consecutive
// indices: out[k] = red_{s<slots, idx[k·slots+s] ≥ 0} h[idx[k·slots+s]], out [len(idx)/slots, W].
// Index −1 is padding and is skipped; a group with no valid index gives a zero row (the
// mean of a group is over its valid indices). It serves embedding lookups (sum, one
// slot), GraphSAGE's neighbour means (mean, a fixed number of slots per node) and pooling
// over a graph's nodes (sum, mean, max). Its gradient with respect to h is analytic; idx
// has none.
func Gather(h, idx *G.Node, red Reduction, slots int) *G.Node {
	return G.Must(G.ApplyOp(gatherOp{red: red, slots: slots, st: &gatherState{}}, h, idx))
}

// gatherState holds a gather's output and gradient buffers, reused from one run to the
// next like the fused layers' (a graph's machine runs one batch at a time): a training
// step allocated about 400 KB in the gathers' outputs, which the allocator zeroed and the
// collector then swept (issue 25's profile). Each run clears what it accumulates into.
type gatherState struct {
	f32 gatherBufs[float32]
	f64 gatherBufs[float64]
}

type gatherBufs[T float32 | float64] struct {
	out, dh []T
	best    []T   // backward of max: each column's running maximum
	arg     []int // and the row holding it
}

// gatherOp is Gather's op.
//
// Gorgonia's own Max sends the gradient to every element equal to the maximum, which
// double-counts exact ties (identical nodes are common in kernels); this op sends it to
// the first maximal element, the derivative of the function actually computed. It also
// replaces a ByIndices, Reshape, Sum and broadcast product chain with one pass.
type gatherOp struct {
	red   Reduction
	slots int
	st    *gatherState
}

func (op gatherOp) Arity() int { return 2 }

func (op gatherOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	m := G.TensorType{Dims: 2, Of: a}
	return hm.NewFnType(m, G.TensorType{Dims: 1, Of: tensor.Int}, m)
}

func (op gatherOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	if len(in) != 2 {
		return nil, fmt.Errorf("%v: want 2 inputs, got %d", op, len(in))
	}
	hs, ok1 := in[0].(tensor.Shape)
	is, ok2 := in[1].(tensor.Shape)
	if !ok1 || !ok2 || len(hs) != 2 {
		return nil, fmt.Errorf("%v: want a matrix and an index vector, got %v and %v", op, in[0], in[1])
	}
	n := is.TotalSize()
	if n%op.slots != 0 {
		return nil, fmt.Errorf("%v: %d indices are not groups of %d", op, n, op.slots)
	}
	return tensor.Shape{n / op.slots, hs[1]}, nil
}

func (op gatherOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != 2 {
		return nil, fmt.Errorf("%v: want 2 inputs, got %d", op, len(vals))
	}
	idx, ok := vals[1].Data().([]int)
	if !ok {
		return nil, fmt.Errorf("%v: indices are %T, want []int", op, vals[1].Data())
	}
	shp := vals[0].Shape()
	rows, width := shp[0], shp[1]
	groups := len(idx) / op.slots
	switch h := vals[0].Data().(type) {
	case []float32:
		bf := &op.st.f32
		bf.out = grow(bf.out, groups*width)
		clear(bf.out)
		if err := gatherForward(op, h, idx, rows, width, bf.out); err != nil {
			return nil, err
		}
		return tensor.New(tensor.WithShape(groups, width), tensor.WithBacking(bf.out)), nil
	case []float64:
		bf := &op.st.f64
		bf.out = grow(bf.out, groups*width)
		clear(bf.out)
		if err := gatherForward(op, h, idx, rows, width, bf.out); err != nil {
			return nil, err
		}
		return tensor.New(tensor.WithShape(groups, width), tensor.WithBacking(bf.out)), nil
	}
	return nil, fmt.Errorf("%v: unsupported data %T", op, vals[0].Data())
}

func gatherForward[T float32 | float64](op gatherOp, h []T, idx []int, rows, width int, out []T) error {
	for k := 0; k < len(idx)/op.slots; k++ {
		o := out[k*width : (k+1)*width]
		n := 0
		for _, r := range idx[k*op.slots : (k+1)*op.slots] {
			if r < 0 {
				continue
			}
			if r >= rows {
				return fmt.Errorf("%v: index %d out of range for %d rows", op, r, rows)
			}
			row := h[r*width : (r+1)*width]
			if op.red == ReduceMax && n > 0 {
				for j, x := range row {
					if x > o[j] {
						o[j] = x
					}
				}
			} else if op.red == ReduceMax {
				copy(o, row)
			} else {
				o := o[:len(row)]
				for j, x := range row {
					o[j] += x
				}
			}
			n++
		}
		if op.red == ReduceMean && n > 1 {
			inv := 1 / T(n)
			for j := range o {
				o[j] *= inv
			}
		}
	}
	return nil
}

func (op gatherOp) ReturnsPtr() bool      { return false }
func (op gatherOp) CallsExtern() bool     { return false }
func (op gatherOp) OverwritesInput() int  { return -1 }
func (op gatherOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op gatherOp) Hashcode() uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}
func (op gatherOp) String() string { return fmt.Sprintf("nn.gather{%s,%d}", op.red, op.slots) }

func (op gatherOp) DiffWRT(inputs int) []bool { return []bool{true, false} }

func (op gatherOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if len(inputs) != 2 {
		return nil, fmt.Errorf("%v: want 2 inputs, got %d", op, len(inputs))
	}
	d, err := G.ApplyOp(gatherDiffOp{op}, inputs[0], inputs[1], grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{d, nil}, nil
}

// gatherDiffOp is gatherOp's gradient with respect to h: (h, idx, dOut) → dh, scattering
// (and, for the mean, scaling) each group's output gradient back to its rows.
type gatherDiffOp struct{ gatherOp }

func (op gatherDiffOp) Arity() int { return 3 }

func (op gatherDiffOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	m := G.TensorType{Dims: 2, Of: a}
	return hm.NewFnType(m, G.TensorType{Dims: 1, Of: tensor.Int}, m, m)
}

func (op gatherDiffOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	hs, ok := in[0].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("%v: input shape %v", op, in[0])
	}
	return hs.Clone(), nil
}

func (op gatherDiffOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != 3 {
		return nil, fmt.Errorf("%v: want 3 inputs, got %d", op, len(vals))
	}
	idx, ok := vals[1].Data().([]int)
	if !ok {
		return nil, fmt.Errorf("%v: indices are %T, want []int", op, vals[1].Data())
	}
	shp := vals[0].Shape()
	rows, width := shp[0], shp[1]
	switch h := vals[0].Data().(type) {
	case []float32:
		g, ok := vals[2].Data().([]float32)
		if !ok {
			return nil, fmt.Errorf("%v: gradient is %T", op, vals[2].Data())
		}
		bf := &op.st.f32
		bf.dh = grow(bf.dh, rows*width)
		clear(bf.dh)
		gatherBackward(op.gatherOp, bf, h, idx, width, g)
		return tensor.New(tensor.WithShape(rows, width), tensor.WithBacking(bf.dh)), nil
	case []float64:
		g, ok := vals[2].Data().([]float64)
		if !ok {
			return nil, fmt.Errorf("%v: gradient is %T", op, vals[2].Data())
		}
		bf := &op.st.f64
		bf.dh = grow(bf.dh, rows*width)
		clear(bf.dh)
		gatherBackward(op.gatherOp, bf, h, idx, width, g)
		return tensor.New(tensor.WithShape(rows, width), tensor.WithBacking(bf.dh)), nil
	}
	return nil, fmt.Errorf("%v: unsupported data %T", op, vals[0].Data())
}

// gatherBackward accumulates into bf.dh (cleared) the gradient g of the gather's output.
func gatherBackward[T float32 | float64](op gatherOp, bf *gatherBufs[T], h []T, idx []int, width int, g []T) {
	dh := bf.dh
	best, arg := bf.best, bf.arg
	defer func() { bf.best, bf.arg = best, arg }()
	for k := 0; k < len(idx)/op.slots; k++ {
		group := idx[k*op.slots : (k+1)*op.slots]
		gk := g[k*width : (k+1)*width]
		if op.red == ReduceMax {
			// The first row (in slot order) holding each column's maximum gets the
			// column's gradient: the rows scanned in order, a column's best replaced only
			// by a strictly greater value (contiguous rows instead of strided columns).
			best, arg = grow(best, width), growInt(arg, width)
			for j := range arg {
				best[j], arg[j] = T(math.Inf(-1)), -1
			}
			for _, r := range group {
				if r < 0 {
					continue
				}
				row := h[r*width : (r+1)*width]
				b, a := best[:len(row)], arg[:len(row)]
				for j, x := range row {
					if x > b[j] {
						b[j], a[j] = x, r
					}
				}
			}
			for j, r := range arg[:len(gk)] {
				if r >= 0 {
					dh[r*width+j] += gk[j]
				}
			}
			continue
		}
		scale := T(1)
		if op.red == ReduceMean {
			n := 0
			for _, r := range group {
				if r >= 0 {
					n++
				}
			}
			if n == 0 {
				continue
			}
			scale = 1 / T(n)
		}
		for _, r := range group {
			if r < 0 {
				continue
			}
			d := dh[r*width : (r+1)*width][:len(gk)]
			for j, x := range gk {
				d[j] += x * scale
			}
		}
	}
}

func (op gatherDiffOp) String() string        { return fmt.Sprintf("nn.gatherDiff{%s,%d}", op.red, op.slots) }
func (op gatherDiffOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op gatherDiffOp) Hashcode() uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}
