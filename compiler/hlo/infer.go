package hlo

import (
	"fmt"
	"strconv"
	"strings"
)

// InferShape computes the shape an instruction must have from its opcode, operands and
// attributes, following XLA's shape rules. For ops whose result dimensions are not
// determined by their operands (parameter, constant, iota, broadcast, reshape, gather,
// dynamic-slice, custom-call, rng, ...), and for the result element type of convert-like
// ops, it takes them from in.Shape after checking that they are consistent with the
// operands. The returned shape carries no layout; callers compare with Compatible.
//
// Every shape it returns passes CheckSize: a derived shape larger than MaxArrayBytes (a
// concatenation, pad or dot of huge operands) is an error, never an overflowed size.
func InferShape(in *Instruction) (Shape, error) {
	s, err := inferShape(in)
	if err != nil {
		return Shape{}, err
	}
	if err := s.CheckSize(); err != nil {
		return Shape{}, fmt.Errorf("%s result: %w", in.Opcode, err)
	}
	return s, nil
}

func inferShape(in *Instruction) (Shape, error) {
	info := in.Info()
	if in.Opcode == OpInvalid || in.Opcode >= numOpcodes {
		return Shape{}, fmt.Errorf("invalid opcode")
	}
	if info.Arity != Variadic && len(in.Operands) != info.Arity {
		return Shape{}, fmt.Errorf("%s takes %d operands, got %d", in.Opcode, info.Arity, len(in.Operands))
	}
	ops := in.Operands
	decl := in.Shape
	arr := func(i int) error {
		if !ops[i].Shape.IsArray() {
			return fmt.Errorf("operand %d of %s must be an array, got %s", i, in.Opcode, ops[i].Shape.StringNoLayout())
		}
		return nil
	}
	if needsArrayOperands(in.Opcode) {
		for i := range ops {
			if err := arr(i); err != nil {
				return Shape{}, err
			}
		}
	}
	if s, ok, err := inferExtended(in); ok {
		return s, err
	}
	switch in.Opcode {
	case OpParameter, OpConstant, OpRng, OpRngBitGenerator, OpCustomCall, OpAfterAll, OpAllReduce:
		return decl.Clone(), nil
	case OpIota:
		if !decl.IsArray() || decl.Rank() == 0 {
			return Shape{}, fmt.Errorf("iota needs an array shape of rank >= 1")
		}
		return decl.Clone(), nil
	}

	switch info.Category {
	case CatElementwise, CatTranscendental:
		return inferElementwise(in)
	}

	switch in.Opcode {
	case OpCopy, OpReverse:
		if in.Opcode == OpReverse {
			if err := checkDimList(in.Dimensions, ops[0].Shape.Rank(), "reverse dimensions"); err != nil {
				return Shape{}, err
			}
		}
		return Array(ops[0].Shape.Elem, ops[0].Shape.Dims...), nil
	case OpBroadcast:
		out := decl
		if !out.IsArray() {
			return Shape{}, fmt.Errorf("broadcast needs an array result shape")
		}
		if len(in.Dimensions) != ops[0].Shape.Rank() {
			return Shape{}, fmt.Errorf("broadcast dimensions has %d entries, operand rank is %d", len(in.Dimensions), ops[0].Shape.Rank())
		}
		for i, d := range in.Dimensions {
			if d < 0 || d >= out.Rank() {
				return Shape{}, fmt.Errorf("broadcast dimension %d out of range for rank %d", d, out.Rank())
			}
			if out.Dims[d] != ops[0].Shape.Dims[i] {
				return Shape{}, fmt.Errorf("broadcast operand dim %d (size %d) does not match result dim %d (size %d)", i, ops[0].Shape.Dims[i], d, out.Dims[d])
			}
		}
		return Array(ops[0].Shape.Elem, out.Dims...), nil
	case OpReshape:
		if decl.Elements() != ops[0].Shape.Elements() {
			return Shape{}, fmt.Errorf("reshape from %s to %s changes the element count", ops[0].Shape.StringNoLayout(), decl.StringNoLayout())
		}
		return Array(ops[0].Shape.Elem, decl.Dims...), nil
	case OpBitcast:
		if decl.Bytes() != ops[0].Shape.Bytes() {
			return Shape{}, fmt.Errorf("bitcast from %s to %s changes the byte size", ops[0].Shape.StringNoLayout(), decl.StringNoLayout())
		}
		return Array(decl.Elem, decl.Dims...), nil
	case OpTranspose:
		r := ops[0].Shape.Rank()
		if err := checkPermutation(in.Dimensions, r); err != nil {
			return Shape{}, fmt.Errorf("transpose: %w", err)
		}
		dims := make([]int, r)
		for i, d := range in.Dimensions {
			dims[i] = ops[0].Shape.Dims[d]
		}
		return Array(ops[0].Shape.Elem, dims...), nil
	case OpSlice:
		s := ops[0].Shape
		if len(in.Slice) != s.Rank() {
			return Shape{}, fmt.Errorf("slice has %d dimensions, operand rank is %d", len(in.Slice), s.Rank())
		}
		dims := make([]int, s.Rank())
		for i, sd := range in.Slice {
			st := sd.Stride
			if st <= 0 {
				return Shape{}, fmt.Errorf("slice stride must be positive in dimension %d", i)
			}
			if sd.Start < 0 || sd.Limit > s.Dims[i] || sd.Start > sd.Limit {
				return Shape{}, fmt.Errorf("slice [%d:%d] out of bounds for dimension %d of size %d", sd.Start, sd.Limit, i, s.Dims[i])
			}
			dims[i] = (sd.Limit - sd.Start + st - 1) / st
		}
		return Array(s.Elem, dims...), nil
	case OpConcatenate:
		if len(ops) == 0 || len(in.Dimensions) != 1 {
			return Shape{}, fmt.Errorf("concatenate needs operands and one dimension")
		}
		d := in.Dimensions[0]
		first := ops[0].Shape
		if d < 0 || d >= first.Rank() {
			return Shape{}, fmt.Errorf("concatenate dimension %d out of range for rank %d", d, first.Rank())
		}
		dims := append([]int{}, first.Dims...)
		elem := first.Elem
		for i, op := range ops[1:] {
			s := op.Shape
			if s.Rank() != first.Rank() || (s.Elem != first.Elem && !(s.Elem.IsFloat() && first.Elem.IsFloat())) {
				return Shape{}, fmt.Errorf("concatenate operand %d is %s, want rank %d %s", i+1, s.StringNoLayout(), first.Rank(), first.Elem)
			}
			elem = HigherPrecision(elem, s.Elem) // XLA: mixed float precisions give the higher
			for k := range dims {
				if k != d && s.Dims[k] != first.Dims[k] {
					return Shape{}, fmt.Errorf("concatenate operand %d dimension %d is %d, want %d", i+1, k, s.Dims[k], first.Dims[k])
				}
			}
			dims[d] += s.Dims[d]
		}
		return Array(elem, dims...), nil
	case OpPad:
		s := ops[0].Shape
		if ops[1].Shape.Rank() != 0 {
			return Shape{}, fmt.Errorf("pad value must be a scalar")
		}
		if len(in.Padding) != s.Rank() {
			return Shape{}, fmt.Errorf("padding has %d dimensions, operand rank is %d", len(in.Padding), s.Rank())
		}
		dims := make([]int, s.Rank())
		for i, p := range in.Padding {
			if p.Interior < 0 {
				return Shape{}, fmt.Errorf("negative interior padding in dimension %d", i)
			}
			if !inLimit(p.Interior, p.Lo, p.Hi) {
				return Shape{}, fmt.Errorf("padding %d_%d_%d in dimension %d exceeds the size limit of 2^40", p.Lo, p.Hi, p.Interior, i)
			}
			n := s.Dims[i]
			if n > 0 {
				if p.Interior > 0 && n-1 > (1<<62)/p.Interior {
					return Shape{}, fmt.Errorf("interior padding %d of a dimension of size %d exceeds the size limit", p.Interior, n)
				}
				n += (n - 1) * p.Interior
			}
			dims[i] = n + p.Lo + p.Hi
			if dims[i] < 0 {
				return Shape{}, fmt.Errorf("padding makes dimension %d negative", i)
			}
		}
		return Array(s.Elem, dims...), nil
	case OpReduce:
		return inferReduce(in)
	case OpReduceWindow:
		return inferReduceWindow(in)
	case OpSelectAndScatter:
		return Array(ops[0].Shape.Elem, ops[0].Shape.Dims...), nil
	case OpDot:
		return inferDot(in)
	case OpConvolution:
		return inferConv(in)
	case OpGather:
		if !decl.IsArray() {
			return Shape{}, fmt.Errorf("gather needs an array result shape")
		}
		return Array(ops[0].Shape.Elem, decl.Dims...), nil
	case OpScatter:
		return inferScatter(in)
	case OpDynamicSlice:
		if len(ops) < 1 || !decl.IsArray() || decl.Rank() != ops[0].Shape.Rank() {
			return Shape{}, fmt.Errorf("dynamic-slice result must have the operand's rank")
		}
		for i, d := range decl.Dims {
			if d > ops[0].Shape.Dims[i] {
				return Shape{}, fmt.Errorf("dynamic-slice size %d exceeds operand dimension %d of size %d", d, i, ops[0].Shape.Dims[i])
			}
		}
		return Array(ops[0].Shape.Elem, decl.Dims...), nil
	case OpDynamicUpdateSlice:
		if len(ops) < 2 || ops[1].Shape.Rank() != ops[0].Shape.Rank() {
			return Shape{}, fmt.Errorf("dynamic-update-slice update must have the operand's rank")
		}
		return Array(ops[0].Shape.Elem, ops[0].Shape.Dims...), nil
	case OpTuple:
		elems := make([]Shape, len(ops))
		for i, op := range ops {
			elems[i] = op.Shape.Clone()
			stripLayouts(&elems[i])
		}
		return TupleOf(elems...), nil
	case OpGetTupleElement:
		s := ops[0].Shape
		if !s.IsTuple() || in.Index < 0 || in.Index >= len(s.Tuple) {
			return Shape{}, fmt.Errorf("get-tuple-element index %d invalid for %s", in.Index, s.StringNoLayout())
		}
		e := s.Tuple[in.Index].Clone()
		stripLayouts(&e)
		return e, nil
	case OpFusion, OpCall:
		c := in.Calls
		if c == nil {
			return Shape{}, fmt.Errorf("%s needs calls=", in.Opcode)
		}
		if n := len(c.Parameters()); n != len(ops) {
			return Shape{}, fmt.Errorf("%s passes %d operands to %s, which takes %d", in.Opcode, len(ops), c.Name, n)
		}
		// As XLA's verifier: each operand has its parameter's shape (layouts aside).
		for i, p := range c.Parameters() {
			if !ops[i].Shape.Compatible(p.Shape) {
				return Shape{}, fmt.Errorf("%s operand %d is %s, but parameter %d of %s is %s", in.Opcode, i,
					ops[i].Shape.StringNoLayout(), i, c.Name, p.Shape.StringNoLayout())
			}
		}
		s := c.Root.Shape.Clone()
		stripLayouts(&s)
		return s, nil
	case OpWhile:
		s := ops[0].Shape.Clone()
		stripLayouts(&s)
		return s, nil
	default:
		return decl.Clone(), nil
	}
}

// needsArrayOperands reports whether every operand of op must be an array.
func needsArrayOperands(op Opcode) bool {
	switch op.Category() {
	case CatElementwise, CatTranscendental, CatDot, CatConvolution, CatReduce, CatReduceWindow,
		CatDataMovement, CatIndexed:
		return true
	}
	switch op {
	case OpSort, OpRng, OpRngBitGenerator, OpBatchNormTraining, OpBatchNormInference, OpBatchNormGrad,
		OpCholesky, OpTriangularSolve, OpFft, OpTopK, OpMap, OpRaggedDot, OpScaledDot,
		OpGetDimensionSize, OpSetDimensionSize, OpDynamicReshape:
		return true
	}
	return false
}

// inferExtended is the shape rule of the opcodes appended for XLA's full opcode list
// (ok is false for the others). Ops whose result XLA derives from attributes this
// package keeps verbatim (collectives, asynchronous wrappers, transfers, fft, ...) take
// the declared shape, which must then be written.
func inferExtended(in *Instruction) (s Shape, ok bool, err error) {
	ops := in.Operands
	decl := in.Shape
	same := func(i int) Shape {
		c := ops[i].Shape.Clone()
		stripLayouts(&c)
		return c
	}
	scalarOf := func(t ElemType) Shape { return Scalar(t) }
	switch in.Opcode {
	case OpComplex:
		t := C64
		switch ops[0].Shape.Elem {
		case F32:
		case F64:
			t = C128
		default:
			return Shape{}, true, fmt.Errorf("complex needs f32 or f64 operands, got %s", ops[0].Shape.Elem)
		}
		if !ops[0].Shape.Compatible(ops[1].Shape) {
			return Shape{}, true, fmt.Errorf("complex operands differ: %s vs %s", ops[0].Shape.StringNoLayout(), ops[1].Shape.StringNoLayout())
		}
		return Array(t, ops[0].Shape.Dims...), true, nil
	case OpStochasticConvert:
		if !decl.IsArray() {
			return Shape{}, true, fmt.Errorf("stochastic-convert needs an array result type")
		}
		return Array(decl.Elem, ops[0].Shape.Dims...), true, nil
	case OpAddDependency, OpDomain, OpOptimizationBarrier:
		return same(0), true, nil
	case OpPartitionID, OpReplicaID:
		return scalarOf(U32), true, nil
	case OpGetDimensionSize:
		return scalarOf(S32), true, nil
	case OpSetDimensionSize:
		return Array(ops[0].Shape.Elem, ops[0].Shape.Dims...), true, nil
	case OpCholesky:
		x := ops[0].Shape
		if r := x.Rank(); r < 2 || x.Dims[r-1] != x.Dims[r-2] {
			return Shape{}, true, fmt.Errorf("cholesky needs square matrices, got %s", x.StringNoLayout())
		}
		return same(0), true, nil
	case OpTriangularSolve:
		a, b := ops[0].Shape, ops[1].Shape
		if r := a.Rank(); r < 2 || a.Dims[r-1] != a.Dims[r-2] || b.Rank() != r {
			return Shape{}, true, fmt.Errorf("triangular-solve needs square matrices a and b of the same rank, got %s and %s",
				a.StringNoLayout(), b.StringNoLayout())
		}
		return same(1), true, nil
	case OpBatchNormTraining, OpBatchNormInference, OpBatchNormGrad:
		x := ops[0].Shape
		fi := -1
		if v, found := in.ExtraAttr("feature_index"); found {
			fi = atoiOr(v, -1)
		}
		if fi < 0 || fi >= x.Rank() {
			return Shape{}, true, fmt.Errorf("%s needs feature_index in 0..%d", in.Opcode, x.Rank()-1)
		}
		feat := Array(x.Elem, x.Dims[fi])
		for i, op := range ops[1:] {
			want := feat
			if in.Opcode == OpBatchNormGrad && i == 3 { // grad_output has the operand's shape
				want = Array(x.Elem, x.Dims...)
			}
			if !op.Shape.Compatible(want) {
				return Shape{}, true, fmt.Errorf("%s operand %d is %s, want %s", in.Opcode, i+1, op.Shape.StringNoLayout(), want.StringNoLayout())
			}
		}
		switch in.Opcode {
		case OpBatchNormTraining:
			return TupleOf(Array(x.Elem, x.Dims...), feat, feat), true, nil
		case OpBatchNormInference:
			return Array(x.Elem, x.Dims...), true, nil
		}
		return TupleOf(Array(x.Elem, x.Dims...), feat, feat), true, nil
	case OpTopK:
		x := ops[0].Shape
		v, found := in.ExtraAttr("k")
		k := atoiOr(v, -1)
		if !found || k < 0 || x.Rank() == 0 || k > x.Dims[x.Rank()-1] {
			return Shape{}, true, fmt.Errorf("topk needs k= between 0 and the last dimension of %s", x.StringNoLayout())
		}
		dims := append([]int(nil), x.Dims...)
		dims[len(dims)-1] = k
		return TupleOf(Array(x.Elem, dims...), Array(S32, dims...)), true, nil
	case OpMap:
		if in.ToApply == nil || in.ToApply.Root == nil || len(ops) == 0 {
			return Shape{}, true, fmt.Errorf("map needs operands and to_apply=")
		}
		for i, op := range ops[1:] {
			if !op.Shape.SameDims(ops[0].Shape) {
				return Shape{}, true, fmt.Errorf("map operand %d is %s, want the dimensions of %s", i+1, op.Shape.StringNoLayout(), ops[0].Shape.StringNoLayout())
			}
		}
		return Array(in.ToApply.Root.Shape.Elem, ops[0].Shape.Dims...), true, nil
	case OpAcos, OpAcosh, OpAsin, OpAsinh, OpAtan, OpAtanh, OpCosh, OpSinh, OpClz, OpReducePrecision, OpMulhi:
		return Shape{}, false, nil // elementwise rules
	}
	if in.Opcode > OpAfterAll && in.Opcode < numOpcodes {
		// Collectives, asynchronous and transfer ops, fft, dynamic-reshape, ragged and
		// scaled dots, scan, shuffle, rng-get-and-update-state: the declared shape.
		if decl.Elem == Invalid {
			return Shape{}, true, fmt.Errorf("the result shape of %s must be written", in.Opcode)
		}
		return decl.Clone(), true, nil
	}
	return Shape{}, false, nil
}

func atoiOr(s string, def int) int {
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return def
	}
	return v
}

func stripLayouts(s *Shape) {
	s.Layout = nil
	for i := range s.Tuple {
		stripLayouts(&s.Tuple[i])
	}
}

func inferElementwise(in *Instruction) (Shape, error) {
	ops := in.Operands
	switch in.Opcode {
	case OpConvert, OpBitcastConvert:
		if !in.Shape.IsArray() {
			return Shape{}, fmt.Errorf("%s needs an array result type", in.Opcode)
		}
		if in.Opcode == OpBitcastConvert {
			return bitcastConvertShape(ops[0].Shape, in.Shape.Elem)
		}
		return Array(in.Shape.Elem, ops[0].Shape.Dims...), nil
	case OpIsFinite:
		return Array(PRED, ops[0].Shape.Dims...), nil
	case OpReal, OpImag, OpAbs:
		// XLA: the real part, imaginary part and magnitude of a complex number are real
		// (c64 -> f32, c128 -> f64); of any other type, the operand's type.
		return Array(ops[0].Shape.Elem.ComplexComponent(), ops[0].Shape.Dims...), nil
	case OpSelect:
		if ops[0].Shape.Elem != PRED {
			return Shape{}, fmt.Errorf("select predicate must be pred, got %s", ops[0].Shape.Elem)
		}
		if !ops[1].Shape.CompatibleMixedPrecision(ops[2].Shape) {
			return Shape{}, fmt.Errorf("select branches differ: %s vs %s", ops[1].Shape.StringNoLayout(), ops[2].Shape.StringNoLayout())
		}
		if ops[0].Shape.Rank() != 0 && !ops[0].Shape.SameDims(ops[1].Shape) {
			return Shape{}, fmt.Errorf("select predicate %s does not match %s", ops[0].Shape.StringNoLayout(), ops[1].Shape.StringNoLayout())
		}
		return Array(HigherPrecision(ops[1].Shape.Elem, ops[2].Shape.Elem), ops[1].Shape.Dims...), nil
	case OpClamp:
		x := ops[1].Shape
		for _, i := range []int{0, 2} {
			s := ops[i].Shape
			if s.Elem != x.Elem || (s.Rank() != 0 && !s.SameDims(x)) {
				return Shape{}, fmt.Errorf("clamp bound %s does not match operand %s", s.StringNoLayout(), x.StringNoLayout())
			}
		}
		return Array(x.Elem, x.Dims...), nil
	}
	first := ops[0].Shape
	elem := first.Elem
	shift := in.Opcode == OpShiftLeft || in.Opcode == OpShiftRightArithmetic || in.Opcode == OpShiftRightLogical
	for i, op := range ops[1:] {
		s := op.Shape
		if !s.SameDims(first) {
			return Shape{}, fmt.Errorf("%s operand %d has shape %s, want dimensions of %s", in.Opcode, i+1, s.StringNoLayout(), first.StringNoLayout())
		}
		if s.Elem != first.Elem && !shift && !(s.Elem.IsFloat() && first.Elem.IsFloat()) { // mixed precision, as XLA allows on TPU
			return Shape{}, fmt.Errorf("%s mixes element types %s and %s", in.Opcode, first.Elem, s.Elem)
		}
		if !shift {
			elem = HigherPrecision(elem, s.Elem) // XLA: the mixed-precision result is the higher precision
		}
	}
	if in.Opcode == OpCompare {
		return Array(PRED, first.Dims...), nil
	}
	return Array(elem, first.Dims...), nil
}

// bitcastConvertShape is XLA's bitcast-convert rule: between types of one width the
// dimensions stay; to a narrower type a minor dimension of in/out bits is added
// (f32[4] -> s8[4,4]); to a wider type the operand's minor dimension, which must be
// out/in bits, is dropped (bf16[4,2] -> f32[4]).
func bitcastConvertShape(x Shape, out ElemType) (Shape, error) {
	ib, ob := x.Elem.Bits(), out.Bits()
	switch {
	case ib == ob || ib == 0 || ob == 0:
		return Array(out, x.Dims...), nil
	case ib > ob:
		if ib%ob != 0 {
			return Shape{}, fmt.Errorf("bitcast-convert from %s to %s: %d bits do not split into %d", x.Elem, out, ib, ob)
		}
		return Array(out, append(append([]int{}, x.Dims...), ib/ob)...), nil
	}
	r := x.Rank()
	if ob%ib != 0 || r == 0 || x.Dims[r-1] != ob/ib {
		return Shape{}, fmt.Errorf("bitcast-convert from %s to %s needs a minor dimension of %d, got %s", x.Elem, out, ob/max(ib, 1), x.StringNoLayout())
	}
	return Array(out, x.Dims[:r-1]...), nil
}

func inferReduce(in *Instruction) (Shape, error) {
	ops := in.Operands
	if len(ops) < 2 || len(ops)%2 != 0 {
		return Shape{}, fmt.Errorf("reduce needs inputs and as many init values, got %d operands", len(ops))
	}
	if in.ToApply == nil {
		return Shape{}, fmt.Errorf("reduce needs to_apply=")
	}
	n := len(ops) / 2
	in0 := ops[0].Shape
	if err := checkDimList(in.Dimensions, in0.Rank(), "reduce dimensions"); err != nil {
		return Shape{}, err
	}
	red := make(map[int]bool, len(in.Dimensions))
	for _, d := range in.Dimensions {
		red[d] = true
	}
	var dims []int
	for i, d := range in0.Dims {
		if !red[i] {
			dims = append(dims, d)
		}
	}
	if dims == nil {
		dims = []int{}
	}
	outs := make([]Shape, n)
	for i := 0; i < n; i++ {
		s := ops[i].Shape
		if !s.SameDims(in0) {
			return Shape{}, fmt.Errorf("reduce input %d has shape %s, want dimensions of %s", i, s.StringNoLayout(), in0.StringNoLayout())
		}
		if init := ops[n+i].Shape; init.Rank() != 0 {
			return Shape{}, fmt.Errorf("reduce init value %d must be a scalar, got %s", i, init.StringNoLayout())
		}
		// XLA: the result takes the reducer's accumulator type, the init value's (a bf16
		// input reduced into an f32 accumulator gives f32).
		outs[i] = Array(ops[n+i].Shape.Elem, dims...)
	}
	if n == 1 {
		return outs[0], nil
	}
	return TupleOf(outs...), nil
}

// ScatterArity returns the number of arrays N a scatter updates: its operands are N
// inputs, the indices and N updates (XLA's variadic scatter; N is 1 for the common form).
// It is 0 for an operand count that is not 2N + 1 with N >= 1.
func ScatterArity(in *Instruction) int {
	if n := len(in.Operands); n >= 3 && n%2 == 1 {
		return (n - 1) / 2
	}
	return 0
}

// inferScatter: N inputs of one shape, the indices, N updates of one shape, each update of
// its input's element type; the result is the input (N = 1) or the tuple of the N inputs.
func inferScatter(in *Instruction) (Shape, error) {
	ops := in.Operands
	n := ScatterArity(in)
	if n == 0 {
		return Shape{}, fmt.Errorf("scatter takes N inputs, the indices and N updates (2N+1 operands, N >= 1), got %d operands", len(ops))
	}
	outs := make([]Shape, n)
	for i := range n {
		s, u := ops[i].Shape, ops[n+1+i].Shape
		if !s.IsArray() || !u.IsArray() {
			return Shape{}, fmt.Errorf("scatter input %d and update %d must be arrays", i, i)
		}
		if !s.SameDims(ops[0].Shape) || !u.SameDims(ops[n+1].Shape) {
			return Shape{}, fmt.Errorf("scatter input %d %s and update %d %s: every input must have the first's dimensions and every update the first update's",
				i, s.StringNoLayout(), i, u.StringNoLayout())
		}
		if u.Elem != s.Elem && !(u.Elem.IsFloat() && s.Elem.IsFloat()) { // XLA ignores float precision here
			return Shape{}, fmt.Errorf("scatter update %d is %s, its input %s", i, u.Elem, s.Elem)
		}
		outs[i] = Array(s.Elem, s.Dims...)
	}
	if n == 1 {
		return outs[0], nil
	}
	return TupleOf(outs...), nil
}

// inferReduceWindow: XLA's reduce-window of N inputs of one shape and N scalar init
// values (2N operands, N >= 1, the variadic form as reduce's); each result is its input
// windowed, of its init value's type, and the result is the tuple of them for N > 1.
func inferReduceWindow(in *Instruction) (Shape, error) {
	ops := in.Operands
	if len(ops) < 2 || len(ops)%2 != 0 {
		return Shape{}, fmt.Errorf("reduce-window needs inputs and as many init values, got %d operands", len(ops))
	}
	n := len(ops) / 2
	s := ops[0].Shape
	if in.Window == nil || len(in.Window.Dims) != s.Rank() {
		return Shape{}, fmt.Errorf("reduce-window needs a window of rank %d", s.Rank())
	}
	dims := make([]int, s.Rank())
	for i, w := range in.Window.Dims {
		d, err := windowOut(s.Dims[i], w)
		if err != nil {
			return Shape{}, fmt.Errorf("reduce-window dimension %d: %w", i, err)
		}
		dims[i] = d
	}
	outs := make([]Shape, n)
	for i := range n {
		if x := ops[i].Shape; !x.SameDims(s) {
			return Shape{}, fmt.Errorf("reduce-window input %d has shape %s, want dimensions of %s", i, x.StringNoLayout(), s.StringNoLayout())
		}
		init := ops[n+i].Shape
		if init.Rank() != 0 {
			return Shape{}, fmt.Errorf("reduce-window init value must be a scalar, got %s", init.StringNoLayout())
		}
		// As reduce: the accumulator's (init value's) type.
		outs[i] = Array(init.Elem, dims...)
	}
	if n == 1 {
		return outs[0], nil
	}
	return TupleOf(outs...), nil
}

// windowOut is the output size of one windowed dimension.
func windowOut(in int, w WindowDim) (int, error) {
	if !inLimit(w.Size, w.Stride, w.PadLo, w.PadHi, w.LhsDilate, w.RhsDilate) {
		return 0, fmt.Errorf("window %+v exceeds the size limit of 2^40", w)
	}
	ld, rd, st := max(w.LhsDilate, 1), max(w.RhsDilate, 1), max(w.Stride, 1)
	padded := w.PadLo + w.PadHi
	if in > 0 {
		if in-1 > (1<<62)/ld {
			return 0, fmt.Errorf("base dilation %d of a dimension of size %d exceeds the size limit", ld, in)
		}
		padded += (in-1)*ld + 1
	}
	win := (max(w.Size, 1)-1)*rd + 1 // both at most 2^40: no overflow
	if padded < win {
		return 0, fmt.Errorf("window of size %d does not fit the padded input of size %d", win, padded)
	}
	return (padded-win)/st + 1, nil
}

func inferDot(in *Instruction) (Shape, error) {
	l, r := in.Operands[0].Shape, in.Operands[1].Shape
	dd := in.Dot
	if dd == nil {
		dd = &DotDims{LhsContracting: []int{l.Rank() - 1}, RhsContracting: []int{0}}
	}
	if len(dd.LhsContracting) != len(dd.RhsContracting) || len(dd.LhsBatch) != len(dd.RhsBatch) {
		return Shape{}, fmt.Errorf("dot dimension numbers are unbalanced")
	}
	out, err := mixedResultType(in, "dot", l.Elem, r.Elem)
	if err != nil {
		return Shape{}, err
	}
	used := func(rank int, lists ...[]int) (map[int]bool, error) {
		m := map[int]bool{}
		for _, list := range lists {
			for _, d := range list {
				if d < 0 || d >= rank || m[d] {
					return nil, fmt.Errorf("dot dimension %d invalid for rank %d", d, rank)
				}
				m[d] = true
			}
		}
		return m, nil
	}
	lu, err := used(l.Rank(), dd.LhsBatch, dd.LhsContracting)
	if err != nil {
		return Shape{}, err
	}
	ru, err := used(r.Rank(), dd.RhsBatch, dd.RhsContracting)
	if err != nil {
		return Shape{}, err
	}
	for i := range dd.LhsContracting {
		if a, b := l.Dims[dd.LhsContracting[i]], r.Dims[dd.RhsContracting[i]]; a != b {
			return Shape{}, fmt.Errorf("dot contracting dimensions differ: %d vs %d", a, b)
		}
	}
	var dims []int
	for i := range dd.LhsBatch {
		a, b := l.Dims[dd.LhsBatch[i]], r.Dims[dd.RhsBatch[i]]
		if a != b {
			return Shape{}, fmt.Errorf("dot batch dimensions differ: %d vs %d", a, b)
		}
		dims = append(dims, a)
	}
	for i, d := range l.Dims {
		if !lu[i] {
			dims = append(dims, d)
		}
	}
	for i, d := range r.Dims {
		if !ru[i] {
			dims = append(dims, d)
		}
	}
	if dims == nil {
		dims = []int{}
	}
	return Array(out, dims...), nil
}

// mixedResultType is the element type of a dot or convolution: the declared one (XLA's
// preferred element type, which may differ from the operands', as in f8 x f8 -> bf16),
// else the operands' common type.
func mixedResultType(in *Instruction, what string, l, r ElemType) (ElemType, error) {
	if in.Shape.IsArray() {
		return in.Shape.Elem, nil
	}
	if l != r {
		return Invalid, fmt.Errorf("%s mixes element types %s and %s: write its result shape", what, l, r)
	}
	return l, nil
}

func inferConv(in *Instruction) (Shape, error) {
	x, k := in.Operands[0].Shape, in.Operands[1].Shape
	cd := in.Conv
	if cd == nil {
		return Shape{}, fmt.Errorf("convolution needs dim_labels")
	}
	ns := len(cd.InputSpatial)
	if x.Rank() != ns+2 || k.Rank() != ns+2 || len(cd.KernelSpatial) != ns || len(cd.OutputSpatial) != ns {
		return Shape{}, fmt.Errorf("convolution ranks do not match its dim_labels (%d spatial dims)", ns)
	}
	outElem, err := mixedResultType(in, "convolution", x.Elem, k.Elem)
	if err != nil {
		return Shape{}, err
	}
	w := in.Window
	if w == nil {
		w = &Window{}
	}
	if len(w.Dims) != ns {
		if len(w.Dims) == 0 {
			wd := make([]WindowDim, ns)
			for i := range wd {
				wd[i] = WindowDim{Size: k.Dims[cd.KernelSpatial[i]], Stride: 1}
			}
			w = &Window{Dims: wd}
		} else {
			return Shape{}, fmt.Errorf("convolution window has %d dimensions, want %d", len(w.Dims), ns)
		}
	}
	g := in.GroupCount()
	bg := max(in.BatchGroupCount, 1)
	if x.Dims[cd.InputFeature] != k.Dims[cd.KernelInput]*g {
		return Shape{}, fmt.Errorf("convolution input features %d != kernel input features %d x feature_group_count %d",
			x.Dims[cd.InputFeature], k.Dims[cd.KernelInput], g)
	}
	if k.Dims[cd.KernelOutput]%g != 0 {
		return Shape{}, fmt.Errorf("convolution kernel output features %d not divisible by feature_group_count %d", k.Dims[cd.KernelOutput], g)
	}
	if bg > 1 {
		// batch_group_count (used by kernel gradients of grouped convolutions): output
		// feature group i reads input batch group i, so both must split evenly.
		if g > 1 {
			return Shape{}, fmt.Errorf("convolution cannot have both feature_group_count %d and batch_group_count %d", g, bg)
		}
		if x.Dims[cd.InputBatch]%bg != 0 {
			return Shape{}, fmt.Errorf("convolution input batch %d not divisible by batch_group_count %d", x.Dims[cd.InputBatch], bg)
		}
		if k.Dims[cd.KernelOutput]%bg != 0 {
			return Shape{}, fmt.Errorf("convolution kernel output features %d not divisible by batch_group_count %d", k.Dims[cd.KernelOutput], bg)
		}
	}
	dims := make([]int, ns+2)
	dims[cd.OutputBatch] = x.Dims[cd.InputBatch] / bg
	dims[cd.OutputFeature] = k.Dims[cd.KernelOutput]
	for i := 0; i < ns; i++ {
		wd := w.Dims[i]
		if wd.Size != k.Dims[cd.KernelSpatial[i]] {
			return Shape{}, fmt.Errorf("convolution window size %d != kernel spatial size %d", wd.Size, k.Dims[cd.KernelSpatial[i]])
		}
		o, err := windowOut(x.Dims[cd.InputSpatial[i]], wd)
		if err != nil {
			return Shape{}, fmt.Errorf("convolution spatial dimension %d: %w", i, err)
		}
		dims[cd.OutputSpatial[i]] = o
	}
	return Array(outElem, dims...), nil
}

func checkPermutation(p []int, rank int) error {
	if len(p) != rank {
		return fmt.Errorf("permutation %v has %d entries, want %d", p, len(p), rank)
	}
	seen := make([]bool, rank)
	for _, d := range p {
		if d < 0 || d >= rank || seen[d] {
			return fmt.Errorf("%v is not a permutation of 0..%d", p, rank-1)
		}
		seen[d] = true
	}
	return nil
}

func checkDimList(ds []int, rank int, what string) error {
	seen := make([]bool, rank)
	for _, d := range ds {
		if d < 0 || d >= rank || seen[d] {
			return fmt.Errorf("%s %v invalid for rank %d", what, ds, rank)
		}
		seen[d] = true
	}
	return nil
}

// KeptDims lists, in order, the dimensions of a rank-rank array that a reduction over the
// dimensions reduced keeps.
func KeptDims(rank int, reduced []int) []int {
	red := make([]bool, rank)
	for _, d := range reduced {
		if d >= 0 && d < rank {
			red[d] = true
		}
	}
	kept := []int{}
	for i := 0; i < rank; i++ {
		if !red[i] {
			kept = append(kept, i)
		}
	}
	return kept
}

// inLimit reports whether every |x| is at most MaxArrayBytes, so that products of two
// such values with a dimension size (also bounded by it) cannot overflow int64.
func inLimit(xs ...int) bool {
	for _, x := range xs {
		if int64(x) > MaxArrayBytes || int64(x) < -MaxArrayBytes {
			return false
		}
	}
	return true
}
