package hlo

import (
	"fmt"
	"strconv"
	"strings"
)

// Builder constructs a module one instruction at a time with shape inference. Errors are
// sticky: the first one is kept, later calls return a placeholder, and Build reports it,
// so model code can be written without an error check per op.
type Builder struct {
	name     string
	comp     *Computation
	counts   map[string]int
	reducers map[string]*Computation
	subs     []*Computation
	params   int
	err      error
}

// NewBuilder starts a module whose entry computation is named name.
func NewBuilder(name string) *Builder {
	return &Builder{
		name:     name,
		comp:     &Computation{Name: name},
		counts:   map[string]int{},
		reducers: map[string]*Computation{},
	}
}

// Err returns the first error met so far.
func (b *Builder) Err() error { return b.err }

func (b *Builder) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// Failf records an error (the first one wins), for model code that detects a problem.
func (b *Builder) Failf(format string, args ...any) { b.fail(fmt.Errorf(format, args...)) }

func (b *Builder) newName(base string) string {
	n := b.counts[base]
	b.counts[base] = n + 1
	return base + "." + strconv.Itoa(n)
}

// placeholder is returned after an error so that callers can keep going.
func (b *Builder) placeholder() *Instruction {
	return &Instruction{Name: "error", Opcode: OpParameter, Shape: Scalar(F32)}
}

// Add appends a fully specified instruction: its Shape must hold the declared result shape
// for ops whose result is not implied by the operands (see InferShape). The shape is
// checked and completed by inference. It returns in, or a placeholder after an error.
func (b *Builder) Add(in *Instruction) *Instruction {
	if b.err != nil {
		return b.placeholder()
	}
	for _, op := range in.Operands {
		if op == nil || op.Name == "error" {
			b.fail(fmt.Errorf("%s: operand is missing", in.Opcode))
			return b.placeholder()
		}
	}
	s, err := InferShape(in)
	if err != nil {
		b.fail(fmt.Errorf("%s %s: %w", b.name, in.Opcode, err))
		return b.placeholder()
	}
	in.Shape = s
	if in.Name == "" {
		in.Name = b.newName(in.Opcode.String())
	}
	b.comp.Instructions = append(b.comp.Instructions, in)
	return in
}

// Param adds a parameter of the given type and dimensions (numbered in call order).
func (b *Builder) Param(t ElemType, dims ...int) *Instruction {
	in := &Instruction{Opcode: OpParameter, Shape: Array(t, dims...), ParamNum: b.params}
	in.Name = b.newName("param")
	b.params++
	return b.Add(in)
}

// Constant adds a constant with an elided payload ("{...}") of the given shape; cost
// models only need its shape.
func (b *Builder) Constant(t ElemType, dims ...int) *Instruction {
	lit := "{...}"
	return b.Add(&Instruction{Opcode: OpConstant, Shape: Array(t, dims...), Literal: lit})
}

// ScalarConst adds a scalar constant with value v.
func (b *Builder) ScalarConst(t ElemType, v float64) *Instruction {
	lit := strconv.FormatFloat(v, 'g', -1, 64)
	if !t.IsFloat() {
		lit = strconv.FormatInt(int64(v), 10)
	} else if v == float64(int64(v)) {
		lit = strconv.FormatInt(int64(v), 10)
	}
	if t == PRED {
		lit = "false"
		if v != 0 {
			lit = "true"
		}
	}
	return b.Add(&Instruction{Opcode: OpConstant, Shape: Scalar(t), Literal: lit})
}

// Full broadcasts the scalar v to the given dimensions.
func (b *Builder) Full(t ElemType, v float64, dims ...int) *Instruction {
	return b.Broadcast(b.ScalarConst(t, v), nil, dims...)
}

// Iota adds iota with the given shape along dimension dim.
func (b *Builder) Iota(t ElemType, dim int, dims ...int) *Instruction {
	return b.Add(&Instruction{Opcode: OpIota, Shape: Array(t, dims...), Dimensions: []int{dim}, HasDimensions: true})
}

// Unary adds an elementwise unary op.
func (b *Builder) Unary(op Opcode, x *Instruction) *Instruction {
	return b.Add(&Instruction{Opcode: op, Operands: []*Instruction{x}})
}

// Binary adds an elementwise binary op.
func (b *Builder) Binary(op Opcode, x, y *Instruction) *Instruction {
	return b.Add(&Instruction{Opcode: op, Operands: []*Instruction{x, y}})
}

// Elementwise helpers.
func (b *Builder) AddOp(x, y *Instruction) *Instruction { return b.Binary(OpAdd, x, y) }
func (b *Builder) Sub(x, y *Instruction) *Instruction   { return b.Binary(OpSubtract, x, y) }
func (b *Builder) Mul(x, y *Instruction) *Instruction   { return b.Binary(OpMultiply, x, y) }
func (b *Builder) Div(x, y *Instruction) *Instruction   { return b.Binary(OpDivide, x, y) }
func (b *Builder) Max(x, y *Instruction) *Instruction   { return b.Binary(OpMaximum, x, y) }
func (b *Builder) Min(x, y *Instruction) *Instruction   { return b.Binary(OpMinimum, x, y) }
func (b *Builder) Neg(x *Instruction) *Instruction      { return b.Unary(OpNegate, x) }
func (b *Builder) Exp(x *Instruction) *Instruction      { return b.Unary(OpExp, x) }
func (b *Builder) Log(x *Instruction) *Instruction      { return b.Unary(OpLog, x) }
func (b *Builder) Tanh(x *Instruction) *Instruction     { return b.Unary(OpTanh, x) }
func (b *Builder) Sigmoid(x *Instruction) *Instruction  { return b.Unary(OpLogistic, x) }
func (b *Builder) Sqrt(x *Instruction) *Instruction     { return b.Unary(OpSqrt, x) }
func (b *Builder) Rsqrt(x *Instruction) *Instruction    { return b.Unary(OpRsqrt, x) }

// Convert changes the element type of x.
func (b *Builder) Convert(x *Instruction, t ElemType) *Instruction {
	if x.Shape.Elem == t {
		return x
	}
	return b.Add(&Instruction{Opcode: OpConvert, Operands: []*Instruction{x}, Shape: Array(t)})
}

// Compare adds compare(x, y) with direction dir (EQ, NE, LT, LE, GT, GE).
func (b *Builder) Compare(dir string, x, y *Instruction) *Instruction {
	return b.Add(&Instruction{Opcode: OpCompare, Operands: []*Instruction{x, y}, Direction: dir})
}

// Select adds select(pred, onTrue, onFalse).
func (b *Builder) Select(pred, onTrue, onFalse *Instruction) *Instruction {
	return b.Add(&Instruction{Opcode: OpSelect, Operands: []*Instruction{pred, onTrue, onFalse}})
}

// Relu is max(x, 0).
func (b *Builder) Relu(x *Instruction) *Instruction {
	return b.Max(x, b.Full(x.Shape.Elem, 0, x.Shape.Dims...))
}

// Broadcast maps operand dimension i to result dimension dims[i] of a result with the
// given dimensions. A nil dims broadcasts a scalar.
func (b *Builder) Broadcast(x *Instruction, dims []int, out ...int) *Instruction {
	if dims == nil {
		dims = []int{}
	}
	return b.Add(&Instruction{Opcode: OpBroadcast, Operands: []*Instruction{x},
		Shape: Array(x.Shape.Elem, out...), Dimensions: dims, HasDimensions: true})
}

// BroadcastTrailing broadcasts x to out, aligning x's dimensions with out's last ones
// (numpy-style, e.g. a bias [n] onto [b, n]).
func (b *Builder) BroadcastTrailing(x *Instruction, out ...int) *Instruction {
	r := x.Shape.Rank()
	dims := make([]int, r)
	for i := range dims {
		dims[i] = len(out) - r + i
	}
	return b.Broadcast(x, dims, out...)
}

// Reshape changes x's dimensions, keeping its elements.
func (b *Builder) Reshape(x *Instruction, dims ...int) *Instruction {
	if intsEqual(x.Shape.Dims, dims) {
		return x
	}
	return b.Add(&Instruction{Opcode: OpReshape, Operands: []*Instruction{x}, Shape: Array(x.Shape.Elem, dims...)})
}

// Transpose permutes x's dimensions: result dim i is operand dim perm[i].
func (b *Builder) Transpose(x *Instruction, perm ...int) *Instruction {
	return b.Add(&Instruction{Opcode: OpTranspose, Operands: []*Instruction{x}, Dimensions: perm, HasDimensions: true})
}

// Slice takes [start, limit) with stride 1 in every dimension.
func (b *Builder) Slice(x *Instruction, start, limit []int) *Instruction {
	sd := make([]SliceDim, len(start))
	for i := range start {
		sd[i] = SliceDim{Start: start[i], Limit: limit[i], Stride: 1}
	}
	return b.Add(&Instruction{Opcode: OpSlice, Operands: []*Instruction{x}, Slice: sd})
}

// Concat concatenates xs along dim.
func (b *Builder) Concat(dim int, xs ...*Instruction) *Instruction {
	return b.Add(&Instruction{Opcode: OpConcatenate, Operands: xs, Dimensions: []int{dim}, HasDimensions: true})
}

// Pad pads x with the scalar value v.
func (b *Builder) Pad(x, v *Instruction, pads []PadDim) *Instruction {
	return b.Add(&Instruction{Opcode: OpPad, Operands: []*Instruction{x, v}, Padding: pads})
}

// Reducer returns the scalar computation (x, y) -> op(x, y) for t, shared per builder.
func (b *Builder) Reducer(op Opcode, t ElemType) *Computation {
	key := op.String() + "_" + t.String()
	if c, ok := b.reducers[key]; ok {
		return c
	}
	x := &Instruction{Name: key + ".x", Opcode: OpParameter, Shape: Scalar(t), ParamNum: 0}
	y := &Instruction{Name: key + ".y", Opcode: OpParameter, Shape: Scalar(t), ParamNum: 1}
	r := &Instruction{Name: key + ".r", Opcode: op, Shape: Scalar(t), Operands: []*Instruction{x, y}}
	c := &Computation{Name: key, Instructions: []*Instruction{x, y, r}, Root: r}
	b.reducers[key] = c
	b.subs = append(b.subs, c)
	return c
}

// Reduce reduces x over dims with op (OpAdd, OpMaximum, ...) from init value init.
func (b *Builder) Reduce(x *Instruction, op Opcode, init float64, dims ...int) *Instruction {
	iv := b.ScalarConst(x.Shape.Elem, init)
	return b.Add(&Instruction{Opcode: OpReduce, Operands: []*Instruction{x, iv},
		Dimensions: dims, HasDimensions: true, ToApply: b.Reducer(op, x.Shape.Elem)})
}

// ReduceSum sums x over dims.
func (b *Builder) ReduceSum(x *Instruction, dims ...int) *Instruction {
	return b.Reduce(x, OpAdd, 0, dims...)
}

// ReduceWindow reduces windows of x with op (e.g. max pooling).
func (b *Builder) ReduceWindow(x *Instruction, op Opcode, init float64, w Window) *Instruction {
	iv := b.ScalarConst(x.Shape.Elem, init)
	return b.Add(&Instruction{Opcode: OpReduceWindow, Operands: []*Instruction{x, iv}, Window: &w,
		ToApply: b.Reducer(op, x.Shape.Elem)})
}

// Dot adds a dot with the given dimension numbers.
func (b *Builder) Dot(x, y *Instruction, dd DotDims) *Instruction {
	return b.Add(&Instruction{Opcode: OpDot, Operands: []*Instruction{x, y}, Dot: &dd})
}

// MatMul contracts the last dimension of x with dimension 0 of y (x may have leading dims).
func (b *Builder) MatMul(x, y *Instruction) *Instruction {
	return b.Dot(x, y, DotDims{LhsContracting: []int{x.Shape.Rank() - 1}, RhsContracting: []int{0}})
}

// BatchMatMul multiplies [..., m, k] by [..., k, n] with all leading dims as batch dims.
func (b *Builder) BatchMatMul(x, y *Instruction) *Instruction {
	r := x.Shape.Rank()
	batch := make([]int, r-2)
	for i := range batch {
		batch[i] = i
	}
	return b.Dot(x, y, DotDims{LhsBatch: batch, RhsBatch: batch, LhsContracting: []int{r - 1}, RhsContracting: []int{r - 2}})
}

// Conv adds a convolution with dimension numbers cd, window w and feature groups.
func (b *Builder) Conv(x, k *Instruction, cd ConvDims, w Window, groups int) *Instruction {
	in := &Instruction{Opcode: OpConvolution, Operands: []*Instruction{x, k}, Conv: &cd, Window: &w}
	if groups > 1 {
		in.FeatureGroupCount = groups
	}
	return b.Add(in)
}

// NHWC is the dimension numbering b01f_01io->b01f for 2-D convolutions.
func NHWC() ConvDims {
	return ConvDims{InputBatch: 0, InputFeature: 3, InputSpatial: []int{1, 2},
		KernelInput: 2, KernelOutput: 3, KernelSpatial: []int{0, 1},
		OutputBatch: 0, OutputFeature: 3, OutputSpatial: []int{1, 2}}
}

// Conv2D convolves NHWC x with an HWIO kernel k with the given stride and SAME padding.
func (b *Builder) Conv2D(x, k *Instruction, stride, groups int) *Instruction {
	kh, kw := k.Shape.Dims[0], k.Shape.Dims[1]
	w := Window{Dims: []WindowDim{samePad(x.Shape.Dims[1], kh, stride), samePad(x.Shape.Dims[2], kw, stride)}}
	return b.Conv(x, k, NHWC(), w, groups)
}

// samePad returns the window dimension of a SAME-padded convolution.
func samePad(in, k, stride int) WindowDim {
	out := (in + stride - 1) / stride
	total := max((out-1)*stride+k-in, 0)
	return WindowDim{Size: k, Stride: stride, PadLo: total / 2, PadHi: total - total/2, LhsDilate: 1, RhsDilate: 1}
}

// SamePadding returns a SAME-padded window dimension for an input of size in, a window
// of size k and the given stride.
func SamePadding(in, k, stride int) WindowDim { return samePad(in, k, stride) }

// Gather looks up rows of table [V, D...] at indices s32[N] (an embedding lookup),
// giving [N, D...].
func (b *Builder) Gather(table, indices *Instruction) *Instruction {
	ts := table.Shape
	out := append([]int{indices.Shape.Dims[0]}, ts.Dims[1:]...)
	sizes := append([]int{1}, ts.Dims[1:]...)
	offs := make([]int, ts.Rank()-1)
	for i := range offs {
		offs[i] = i + 1
	}
	in := &Instruction{Opcode: OpGather, Operands: []*Instruction{table, indices}, Shape: Array(ts.Elem, out...),
		Extra: []Attr{
			{"offset_dims", IntSet(offs)}, {"collapsed_slice_dims", "{0}"}, {"start_index_map", "{0}"},
			{"index_vector_dim", "1"}, {"slice_sizes", IntSet(sizes)},
		}}
	return b.Add(in)
}

// ScatterAdd adds rows of updates [N, D...] into operand [V, D...] at indices s32[N]
// (the gradient of Gather).
func (b *Builder) ScatterAdd(operand, indices, updates *Instruction) *Instruction {
	win := make([]int, operand.Shape.Rank()-1)
	for i := range win {
		win[i] = i + 1
	}
	in := &Instruction{Opcode: OpScatter, Operands: []*Instruction{operand, indices, updates},
		ToApply: b.Reducer(OpAdd, operand.Shape.Elem),
		Extra: []Attr{
			{"update_window_dims", IntSet(win)}, {"inserted_window_dims", "{0}"},
			{"scatter_dims_to_operand_dims", "{0}"}, {"index_vector_dim", "1"},
		}}
	return b.Add(in)
}

// DynamicSlice takes a slice of the given sizes at scalar s32 start indices.
func (b *Builder) DynamicSlice(x *Instruction, starts []*Instruction, sizes ...int) *Instruction {
	ops := append([]*Instruction{x}, starts...)
	return b.Add(&Instruction{Opcode: OpDynamicSlice, Operands: ops, Shape: Array(x.Shape.Elem, sizes...),
		Extra: []Attr{{"dynamic_slice_sizes", IntSet(sizes)}}})
}

// DynamicUpdateSlice writes update into x at scalar s32 start indices.
func (b *Builder) DynamicUpdateSlice(x, update *Instruction, starts []*Instruction) *Instruction {
	ops := append([]*Instruction{x, update}, starts...)
	return b.Add(&Instruction{Opcode: OpDynamicUpdateSlice, Operands: ops})
}

// Tuple groups values.
func (b *Builder) Tuple(xs ...*Instruction) *Instruction {
	return b.Add(&Instruction{Opcode: OpTuple, Operands: xs})
}

// GetTupleElement extracts element i of tuple t.
func (b *Builder) GetTupleElement(t *Instruction, i int) *Instruction {
	return b.Add(&Instruction{Opcode: OpGetTupleElement, Operands: []*Instruction{t}, Index: i})
}

// Instructions returns the instructions added so far (read-only).
func (b *Builder) Instructions() []*Instruction { return b.comp.Instructions }

// Build finishes the module with root as the entry's ROOT (several roots are made into a
// tuple) and verifies it.
func (b *Builder) Build(roots ...*Instruction) (*Module, error) {
	if len(roots) == 0 {
		b.fail(fmt.Errorf("%s: no root", b.name))
	}
	root := roots[0]
	if len(roots) > 1 {
		root = b.Tuple(roots...)
	}
	if b.err != nil {
		return nil, b.err
	}
	b.comp.Root = root
	m := &Module{Name: b.name}
	m.Computations = append(m.Computations, b.subs...)
	m.Computations = append(m.Computations, b.comp)
	m.Entry = b.comp
	if err := Verify(m); err != nil {
		return nil, fmt.Errorf("building %s: %w", b.name, err)
	}
	return m, nil
}

// IntSet writes xs as HLO writes an integer-set attribute: "{1,2,3}" ("{}" when empty).
func IntSet(xs []int) string {
	var b strings.Builder
	writeIntSet(&b, xs)
	return b.String()
}
