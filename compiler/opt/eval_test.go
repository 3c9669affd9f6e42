package opt

// A reference HLO evaluator for the tests, written independently of the passes' constant
// folder (fold.go): straightforward index loops over small shapes, float64 values rounded
// to the element type after every instruction, reducers and called computations
// evaluated by recursion. It is what the correctness tests compare a module with before
// and after a pass.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// tensor is a value: an array (row-major data) or a tuple.
type tensor struct {
	shape hlo.Shape
	data  []float64
	elems []*tensor
}

// maxWhileTrips bounds the iterations the evaluator runs a while loop for.
const maxWhileTrips = 10000

// refRound rounds v to element type t (independent of the package's roundTo for f32,
// bf16 and the integer types).
func refRound(v float64, t hlo.ElemType) float64 {
	switch t {
	case hlo.F64:
		return v
	case hlo.F32:
		return float64(float32(v))
	case hlo.BF16:
		f := float32(v)
		if math.IsNaN(float64(f)) {
			return v
		}
		b := math.Float32bits(f)
		b += 0x7fff + (b>>16)&1 // round to nearest even on the upper 16 bits
		return float64(math.Float32frombits(b &^ 0xffff))
	case hlo.F16:
		return roundTo(v, t)
	case hlo.PRED:
		if v != 0 {
			return 1
		}
		return 0
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	x := int64(math.Trunc(v))
	switch t {
	case hlo.S8:
		return float64(int8(x))
	case hlo.S16:
		return float64(int16(x))
	case hlo.S32:
		return float64(int32(x))
	case hlo.S64:
		return float64(x)
	case hlo.U8:
		return float64(uint8(x))
	case hlo.U16:
		return float64(uint16(x))
	case hlo.U32:
		return float64(uint32(x))
	case hlo.U64:
		return float64(uint64(x))
	}
	return v
}

func rowMajorStrides(dims []int) []int {
	s := make([]int, len(dims))
	k := 1
	for i := len(dims) - 1; i >= 0; i-- {
		s[i] = k
		k *= dims[i]
	}
	return s
}

// each visits every multi-index of dims in row-major order with its linear position.
func each(dims []int, f func(pos int, idx []int)) {
	n := 1
	for _, d := range dims {
		n *= d
	}
	idx := make([]int, len(dims))
	for pos := 0; pos < n; pos++ {
		r := pos
		for k := len(dims) - 1; k >= 0; k-- {
			idx[k] = r % dims[k]
			r /= dims[k]
		}
		f(pos, idx)
	}
}

func offset(idx, strides []int) int {
	o := 0
	for i, j := range idx {
		o += j * strides[i]
	}
	return o
}

func newArray(s hlo.Shape) *tensor {
	return &tensor{shape: s, data: make([]float64, s.Elements())}
}

// evalModule evaluates m's entry computation on args.
func evalModule(m *hlo.Module, args []*tensor) (*tensor, error) {
	return evalComp(m.Entry, args)
}

func evalComp(c *hlo.Computation, args []*tensor) (*tensor, error) {
	vals := make(map[*hlo.Instruction]*tensor, len(c.Instructions))
	for _, in := range c.Instructions {
		v, err := evalInstr(in, vals, args)
		if err != nil {
			return nil, fmt.Errorf("%s: %%%s: %w", c.Name, in.Name, err)
		}
		vals[in] = v
	}
	return vals[c.Root], nil
}

// scalarCall applies a reducer computation to two scalars.
func scalarCall(c *hlo.Computation, a, b float64, t hlo.ElemType) (float64, error) {
	s := hlo.Scalar(t)
	r, err := evalComp(c, []*tensor{{shape: s, data: []float64{a}}, {shape: s, data: []float64{b}}})
	if err != nil {
		return 0, err
	}
	return r.data[0], nil
}

func evalInstr(in *hlo.Instruction, vals map[*hlo.Instruction]*tensor, args []*tensor) (*tensor, error) {
	ops := make([]*tensor, len(in.Operands))
	for i, op := range in.Operands {
		ops[i] = vals[op]
	}
	s := in.Shape
	t := s.Elem
	switch in.Opcode {
	case hlo.OpParameter:
		if in.ParamNum >= len(args) {
			return nil, fmt.Errorf("no argument %d", in.ParamNum)
		}
		return args[in.ParamNum], nil
	case hlo.OpConstant:
		v, err := parseLiteral(in)
		if err == errUnknownLiteral && s.IsArray() {
			// an elided payload: values drawn from the constant's name, so that two
			// such constants differ
			r := rand.New(rand.NewPCG(seedOf(in.Name), 11))
			out := newArray(s)
			for i := range out.data {
				out.data[i] = refRound(r.Float64()*2-1, t)
			}
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		return &tensor{shape: s, data: v}, nil
	case hlo.OpIota:
		out := newArray(s)
		each(s.Dims, func(pos int, idx []int) { out.data[pos] = float64(idx[in.Dimensions[0]]) })
		return out, nil
	case hlo.OpTuple:
		return &tensor{shape: s, elems: ops}, nil
	case hlo.OpGetTupleElement:
		return ops[0].elems[in.Index], nil
	case hlo.OpCall, hlo.OpFusion:
		return evalComp(in.Calls, ops)
	case hlo.OpScatter:
		return refScatter(in, ops)
	case hlo.OpOptimizationBarrier: // the identity
		return ops[0], nil
	case hlo.OpAfterAll: // a token carries no value
		return &tensor{shape: s}, nil
	case hlo.OpSort:
		return refSort(in, ops)
	case hlo.OpWhile:
		state := ops[0]
		for trip := 0; ; trip++ {
			if trip > maxWhileTrips {
				return nil, fmt.Errorf("while loop ran more than %d times", maxWhileTrips)
			}
			p, err := evalComp(in.Condition, []*tensor{state})
			if err != nil {
				return nil, err
			}
			if p.data[0] == 0 {
				return state, nil
			}
			if state, err = evalComp(in.Body, []*tensor{state}); err != nil {
				return nil, err
			}
		}
	}
	out := newArray(s)
	if elementwiseOpcode(in.Opcode) {
		for i := range out.data {
			a := make([]float64, len(ops))
			for k, o := range ops {
				if len(o.data) == 1 && len(out.data) != 1 {
					a[k] = o.data[0]
				} else {
					a[k] = o.data[i]
				}
			}
			v, err := refElem(in, a)
			if err != nil {
				return nil, err
			}
			out.data[i] = refRound(v, t)
		}
		return out, nil
	}
	switch in.Opcode {
	case hlo.OpCopy, hlo.OpReshape, hlo.OpBitcast:
		copy(out.data, ops[0].data)
	case hlo.OpMap: // to_apply on each element of the (same-shaped) operands
		for i := range out.data {
			args := make([]*tensor, len(ops))
			for k, o := range ops {
				args[k] = &tensor{shape: hlo.Scalar(o.shape.Elem), data: []float64{o.data[i]}}
			}
			r, err := evalComp(in.ToApply, args)
			if err != nil {
				return nil, err
			}
			out.data[i] = refRound(r.data[0], t)
		}
	case hlo.OpBroadcast:
		xs := rowMajorStrides(ops[0].shape.Dims)
		each(s.Dims, func(pos int, idx []int) {
			o := 0
			for i, d := range in.Dimensions {
				o += idx[d] * xs[i]
			}
			out.data[pos] = ops[0].data[o]
		})
	case hlo.OpTranspose:
		xs := rowMajorStrides(ops[0].shape.Dims)
		each(s.Dims, func(pos int, idx []int) {
			o := 0
			for i, p := range in.Dimensions {
				o += idx[i] * xs[p]
			}
			out.data[pos] = ops[0].data[o]
		})
	case hlo.OpReverse:
		xd := ops[0].shape.Dims
		xs := rowMajorStrides(xd)
		each(s.Dims, func(pos int, idx []int) {
			j := append([]int{}, idx...)
			for _, d := range in.Dimensions {
				j[d] = xd[d] - 1 - j[d]
			}
			out.data[pos] = ops[0].data[offset(j, xs)]
		})
	case hlo.OpSlice:
		xs := rowMajorStrides(ops[0].shape.Dims)
		each(s.Dims, func(pos int, idx []int) {
			o := 0
			for i, j := range idx {
				o += (in.Slice[i].Start + j*in.Slice[i].Stride) * xs[i]
			}
			out.data[pos] = ops[0].data[o]
		})
	case hlo.OpConcatenate:
		d := in.Dimensions[0]
		each(s.Dims, func(pos int, idx []int) {
			j := append([]int{}, idx...)
			for _, o := range ops {
				if j[d] < o.shape.Dims[d] {
					out.data[pos] = o.data[offset(j, rowMajorStrides(o.shape.Dims))]
					return
				}
				j[d] -= o.shape.Dims[d]
			}
		})
	case hlo.OpPad:
		xd := ops[0].shape.Dims
		xs := rowMajorStrides(xd)
		each(s.Dims, func(pos int, idx []int) {
			out.data[pos] = ops[1].data[0]
			o := 0
			for i, j := range idx {
				p := in.Padding[i]
				k := j - p.Lo
				if k < 0 || k%(p.Interior+1) != 0 || k/(p.Interior+1) >= xd[i] {
					return
				}
				o += k / (p.Interior + 1) * xs[i]
			}
			out.data[pos] = ops[0].data[o]
		})
	case hlo.OpReduce:
		if len(ops) != 2 {
			return nil, fmt.Errorf("variadic reduce not supported")
		}
		for i := range out.data {
			out.data[i] = ops[1].data[0]
		}
		red := map[int]bool{}
		for _, d := range in.Dimensions {
			red[d] = true
		}
		os := rowMajorStrides(s.Dims)
		var err error
		each(ops[0].shape.Dims, func(pos int, idx []int) {
			o, k := 0, 0
			for i, j := range idx {
				if !red[i] {
					o += j * os[k]
					k++
				}
			}
			r, e := scalarCall(in.ToApply, out.data[o], ops[0].data[pos], t)
			if e != nil {
				err = e
			}
			out.data[o] = r
		})
		if err != nil {
			return nil, err
		}
	case hlo.OpDot:
		refDot(in, ops, out)
	case hlo.OpConvolution:
		if err := refConv(in, ops, out); err != nil {
			return nil, err
		}
	case hlo.OpDynamicSlice:
		xd := ops[0].shape.Dims
		start := make([]int, len(xd))
		for i := range xd {
			start[i] = int(math.Max(0, math.Min(ops[1+i].data[0], float64(xd[i]-s.Dims[i]))))
		}
		xs := rowMajorStrides(xd)
		each(s.Dims, func(pos int, idx []int) {
			j := make([]int, len(idx))
			for i := range idx {
				j[i] = idx[i] + start[i]
			}
			out.data[pos] = ops[0].data[offset(j, xs)]
		})
	case hlo.OpDynamicUpdateSlice:
		copy(out.data, ops[0].data)
		xd := ops[0].shape.Dims
		ud := ops[1].shape.Dims
		start := make([]int, len(xd))
		for i := range xd {
			start[i] = int(math.Max(0, math.Min(ops[2+i].data[0], float64(xd[i]-ud[i]))))
		}
		xs := rowMajorStrides(xd)
		each(ud, func(pos int, idx []int) {
			j := make([]int, len(idx))
			for i := range idx {
				j[i] = idx[i] + start[i]
			}
			out.data[offset(j, xs)] = ops[1].data[pos]
		})
	case hlo.OpCustomCall:
		// An opaque function the passes must keep: 1.5·Σ operands + 0.25 elementwise
		// when the shapes allow it, else zeros.
		for i := range out.data {
			v := 0.25
			for _, o := range ops {
				if len(o.data) == len(out.data) {
					v += 1.5 * o.data[i]
				}
			}
			out.data[i] = v
		}
	case hlo.OpRng: // deterministic stand-in: the middle of the range
		for i := range out.data {
			out.data[i] = (ops[0].data[0] + ops[1].data[0]) / 2
		}
	case hlo.OpGather:
		if err := refGather(in, ops, out); err != nil {
			return nil, err
		}
	case hlo.OpBitcastConvert:
		if err := refBitcastConvert(ops[0], out); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("the reference evaluator does not support %s", in.Opcode)
	}
	for i, v := range out.data {
		out.data[i] = refRound(v, t)
	}
	return out, nil
}

func refDot(in *hlo.Instruction, ops []*tensor, out *tensor) {
	l, r := ops[0].shape, ops[1].shape
	dd := hlo.DotDims{LhsContracting: []int{l.Rank() - 1}, RhsContracting: []int{0}}
	if in.Dot != nil {
		dd = *in.Dot
	}
	isIn := func(d int, lists ...[]int) bool {
		for _, l := range lists {
			for _, x := range l {
				if x == d {
					return true
				}
			}
		}
		return false
	}
	var lf, rf []int
	for d := 0; d < l.Rank(); d++ {
		if !isIn(d, dd.LhsBatch, dd.LhsContracting) {
			lf = append(lf, d)
		}
	}
	for d := 0; d < r.Rank(); d++ {
		if !isIn(d, dd.RhsBatch, dd.RhsContracting) {
			rf = append(rf, d)
		}
	}
	cd := make([]int, len(dd.LhsContracting))
	for i, d := range dd.LhsContracting {
		cd[i] = l.Dims[d]
	}
	ls, rs := rowMajorStrides(l.Dims), rowMajorStrides(r.Dims)
	nb := len(dd.LhsBatch)
	each(out.shape.Dims, func(pos int, idx []int) {
		li := make([]int, l.Rank())
		ri := make([]int, r.Rank())
		for i := 0; i < nb; i++ {
			li[dd.LhsBatch[i]] = idx[i]
			ri[dd.RhsBatch[i]] = idx[i]
		}
		for i, d := range lf {
			li[d] = idx[nb+i]
		}
		for i, d := range rf {
			ri[d] = idx[nb+len(lf)+i]
		}
		sum := 0.0
		each(cd, func(_ int, c []int) {
			for i, j := range c {
				li[dd.LhsContracting[i]] = j
				ri[dd.RhsContracting[i]] = j
			}
			sum += ops[0].data[offset(li, ls)] * ops[1].data[offset(ri, rs)]
		})
		out.data[pos] = sum
	})
}

// refConv evaluates a convolution with strides, padding, lhs/rhs dilation, window
// reversal and feature groups.
func refConv(in *hlo.Instruction, ops []*tensor, out *tensor) error {
	if in.BatchGroupCount > 1 {
		return fmt.Errorf("the reference evaluator does not support batch_group_count")
	}
	cd := in.Conv
	x, k := ops[0], ops[1]
	xs, ks := rowMajorStrides(x.shape.Dims), rowMajorStrides(k.shape.Dims)
	ns := len(cd.InputSpatial)
	win := make([]hlo.WindowDim, ns)
	for i := range win {
		if in.Window != nil && len(in.Window.Dims) == ns {
			win[i] = in.Window.Dims[i]
		} else {
			win[i] = hlo.WindowDim{Size: k.shape.Dims[cd.KernelSpatial[i]]}
		}
	}
	g := in.GroupCount()
	cinG := k.shape.Dims[cd.KernelInput]
	outF := k.shape.Dims[cd.KernelOutput]
	kdims := make([]int, ns)
	for i := range kdims {
		kdims[i] = k.shape.Dims[cd.KernelSpatial[i]]
	}
	each(out.shape.Dims, func(pos int, idx []int) {
		b, o := idx[cd.OutputBatch], idx[cd.OutputFeature]
		grp := o / (outF / g)
		sum := 0.0
		for ci := 0; ci < cinG; ci++ {
			each(kdims, func(_ int, kp []int) {
				xi := make([]int, x.shape.Rank())
				xi[cd.InputBatch] = b
				xi[cd.InputFeature] = grp*cinG + ci
				for s := 0; s < ns; s++ {
					w := win[s]
					st, ld, rd := max(w.Stride, 1), max(w.LhsDilate, 1), max(w.RhsDilate, 1)
					q := idx[cd.OutputSpatial[s]]*st + kp[s]*rd - w.PadLo
					if q < 0 || q%ld != 0 || q/ld >= x.shape.Dims[cd.InputSpatial[s]] {
						return
					}
					xi[cd.InputSpatial[s]] = q / ld
				}
				ki := make([]int, k.shape.Rank())
				ki[cd.KernelInput] = ci
				ki[cd.KernelOutput] = o
				for s := 0; s < ns; s++ {
					j := kp[s]
					if win[s].Reversal {
						j = kdims[s] - 1 - j
					}
					ki[cd.KernelSpatial[s]] = j
				}
				sum += x.data[offset(xi, xs)] * k.data[offset(ki, ks)]
			})
		}
		out.data[pos] = sum
	})
	return nil
}

// refElem evaluates one element of an elementwise op.
func refElem(in *hlo.Instruction, a []float64) (float64, error) {
	t := in.Operands[len(in.Operands)-1].Shape.Elem
	intT := isInt(t)
	b2 := func(x bool) float64 {
		if x {
			return 1
		}
		return 0
	}
	switch in.Opcode {
	case hlo.OpAdd:
		return a[0] + a[1], nil
	case hlo.OpSubtract:
		return a[0] - a[1], nil
	case hlo.OpMultiply:
		return a[0] * a[1], nil
	case hlo.OpDivide:
		if intT {
			if a[1] == 0 { // XLA: x / 0 = -1
				return -1, nil
			}
			return math.Trunc(a[0] / a[1]), nil
		}
		return a[0] / a[1], nil
	case hlo.OpRemainder:
		if intT && a[1] == 0 { // XLA: x % 0 = x
			return a[0], nil
		}
		return math.Mod(a[0], a[1]), nil
	case hlo.OpMaximum:
		if math.IsNaN(a[0]) || math.IsNaN(a[1]) {
			return math.NaN(), nil
		}
		return math.Max(a[0], a[1]), nil
	case hlo.OpMinimum:
		if math.IsNaN(a[0]) || math.IsNaN(a[1]) {
			return math.NaN(), nil
		}
		return math.Min(a[0], a[1]), nil
	case hlo.OpAnd:
		if t == hlo.PRED {
			return b2(a[0] != 0 && a[1] != 0), nil
		}
		return float64(int64(a[0]) & int64(a[1])), nil
	case hlo.OpOr:
		if t == hlo.PRED {
			return b2(a[0] != 0 || a[1] != 0), nil
		}
		return float64(int64(a[0]) | int64(a[1])), nil
	case hlo.OpXor:
		if t == hlo.PRED {
			return b2((a[0] != 0) != (a[1] != 0)), nil
		}
		return float64(int64(a[0]) ^ int64(a[1])), nil
	case hlo.OpNot:
		if t == hlo.PRED {
			return b2(a[0] == 0), nil
		}
		return float64(^int64(a[0])), nil
	case hlo.OpShiftLeft, hlo.OpShiftRightLogical, hlo.OpShiftRightArithmetic:
		return refShift(in.Opcode, a[0], a[1], t)
	case hlo.OpNegate:
		return -a[0], nil
	case hlo.OpAbs:
		return math.Abs(a[0]), nil
	case hlo.OpSign:
		if a[0] == 0 || math.IsNaN(a[0]) {
			return a[0], nil
		}
		return math.Copysign(1, a[0]), nil
	case hlo.OpFloor:
		return math.Floor(a[0]), nil
	case hlo.OpCeil:
		return math.Ceil(a[0]), nil
	case hlo.OpConvert:
		return a[0], nil // rounded to the result type by the caller
	case hlo.OpCompare:
		x, y := a[0], a[1]
		switch in.Direction {
		case "EQ":
			return b2(x == y), nil
		case "NE":
			return b2(x != y), nil
		case "LT":
			return b2(x < y), nil
		case "LE":
			return b2(x <= y), nil
		case "GT":
			return b2(x > y), nil
		case "GE":
			return b2(x >= y), nil
		}
	case hlo.OpSelect:
		if a[0] != 0 {
			return a[1], nil
		}
		return a[2], nil
	case hlo.OpClamp:
		return math.Min(math.Max(a[1], a[0]), a[2]), nil
	case hlo.OpExp:
		return math.Exp(a[0]), nil
	case hlo.OpLog:
		return math.Log(a[0]), nil
	case hlo.OpTanh:
		return math.Tanh(a[0]), nil
	case hlo.OpLogistic:
		return 1 / (1 + math.Exp(-a[0])), nil
	case hlo.OpSqrt:
		return math.Sqrt(a[0]), nil
	case hlo.OpRsqrt:
		return 1 / math.Sqrt(a[0]), nil
	case hlo.OpPower:
		return math.Pow(a[0], a[1]), nil
	case hlo.OpSine:
		return math.Sin(a[0]), nil
	case hlo.OpCosine:
		return math.Cos(a[0]), nil
	case hlo.OpTan:
		return math.Tan(a[0]), nil
	case hlo.OpRoundNearestEven:
		return math.RoundToEven(a[0]), nil
	case hlo.OpRoundNearestAfz:
		return math.Round(a[0]), nil
	case hlo.OpExpm1:
		return math.Expm1(a[0]), nil
	case hlo.OpLog1p:
		return math.Log1p(a[0]), nil
	case hlo.OpCbrt:
		return math.Cbrt(a[0]), nil
	case hlo.OpErf:
		return math.Erf(a[0]), nil
	case hlo.OpAtan2:
		return math.Atan2(a[0], a[1]), nil
	case hlo.OpIsFinite:
		return b2(!math.IsInf(a[0], 0) && !math.IsNaN(a[0])), nil
	}
	return 0, fmt.Errorf("the reference evaluator does not support %s", in.Opcode)
}

// Tolerances of the equivalence checks, relative to the magnitude of the compared
// values (and absolute near zero). Rewrites are exact except where they reorder a
// floating-point reduction or contraction (reduce of a reduce, constant-folded dots
// accumulated in float64): a sum of n ≤ 64 terms of magnitude ≤ ~10 reassociated in a
// type with unit roundoff u moves by at most about n·u·Σ|x|, i.e. ≈ 4e-5 for f32
// (u = 2^-24) and 2^-2 · |x| for bf16 (u = 2^-8) in the worst case; the checks allow
// 1e-4 for f32, 1e-10 for f64 and 2^-4 for the 16-bit types, whose rewrites in the tests
// reorder at most a handful of terms.
const (
	tolF64    = 1e-10
	tolF32    = 1e-4
	tolNarrow = 1.0 / 16
)

func tolerance(t hlo.ElemType) float64 {
	switch t {
	case hlo.F64:
		return tolF64
	case hlo.F32:
		return tolF32
	case hlo.BF16, hlo.F16:
		return tolNarrow
	}
	return 0 // integers and pred: exact
}

// sameTensor reports whether got matches want within the element type's tolerance.
func sameTensor(want, got *tensor) error {
	if want.shape.IsTuple() {
		if !got.shape.IsTuple() || len(want.elems) != len(got.elems) {
			return fmt.Errorf("tuple shape %s vs %s", want.shape.StringNoLayout(), got.shape.StringNoLayout())
		}
		for i := range want.elems {
			if err := sameTensor(want.elems[i], got.elems[i]); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
		return nil
	}
	if !want.shape.Compatible(got.shape) {
		return fmt.Errorf("shape %s vs %s", want.shape.StringNoLayout(), got.shape.StringNoLayout())
	}
	tol := tolerance(want.shape.Elem)
	for i := range want.data {
		a, b := want.data[i], got.data[i]
		switch {
		case math.IsNaN(a) || math.IsNaN(b):
			if math.IsNaN(a) != math.IsNaN(b) {
				return fmt.Errorf("element %d: %v vs %v", i, a, b)
			}
		case math.IsInf(a, 0) || math.IsInf(b, 0):
			if a != b {
				return fmt.Errorf("element %d: %v vs %v", i, a, b)
			}
		case math.Abs(a-b) > tol*math.Max(1, math.Max(math.Abs(a), math.Abs(b))):
			return fmt.Errorf("element %d: %v vs %v (tolerance %g)", i, a, b, tol)
		}
	}
	return nil
}

// randomArgs draws values for the entry parameters: floats uniform in [-2, 2], integers
// in [-3, 3] ([0, 6] unsigned), preds fair coins.
func randomArgs(m *hlo.Module, r *rand.Rand) []*tensor {
	var args []*tensor
	for _, p := range m.Entry.Parameters() {
		args = append(args, randomTensor(p.Shape, r))
	}
	return args
}

func randomTensor(s hlo.Shape, r *rand.Rand) *tensor {
	if s.IsTuple() {
		t := &tensor{shape: s}
		for _, e := range s.Tuple {
			t.elems = append(t.elems, randomTensor(e, r))
		}
		return t
	}
	t := newArray(s)
	for i := range t.data {
		switch {
		case s.Elem == hlo.PRED:
			t.data[i] = float64(r.IntN(2))
		case isSigned(s.Elem):
			t.data[i] = float64(r.IntN(7) - 3)
		case isUnsigned(s.Elem):
			t.data[i] = float64(r.IntN(7))
		default:
			t.data[i] = refRound(r.Float64()*4-2, s.Elem)
		}
	}
	return t
}

// refScatter is XLA's scatter (HloEvaluator::HandleScatter) for N inputs of one shape,
// the indices and N updates, without batching dimensions: for every update element, its
// scatter dimensions pick an index vector (index_vector_dim of the indices, implicit when
// it equals their rank), scatter_dims_to_operand_dims places it in operand space, the
// update_window_dims give the offset within the window (inserted_window_dims are
// windows of size 1), and to_apply combines the inputs' current elements there with the
// updates' elements. A window any part of which is out of bounds is skipped whole.
func refScatter(in *hlo.Instruction, ops []*tensor) (*tensor, error) {
	n := (len(ops) - 1) / 2
	uwd, ok1 := in.IntSetAttr("update_window_dims")
	iwd, ok2 := in.IntSetAttr("inserted_window_dims")
	sdod, ok3 := in.IntSetAttr("scatter_dims_to_operand_dims")
	ivs, ok4 := in.ExtraAttr("index_vector_dim")
	ivd, err := strconv.Atoi(ivs)
	if !ok1 || !ok2 || !ok3 || !ok4 || err != nil || len(ops) != 2*n+1 {
		return nil, fmt.Errorf("the reference evaluator needs a scatter's dimension numbers")
	}
	for _, k := range []string{"input_batching_dims", "scatter_indices_batching_dims"} {
		if b, has := in.IntSetAttr(k); has && len(b) > 0 {
			return nil, fmt.Errorf("the reference evaluator does not support scatter batching dimensions")
		}
	}
	res := make([]*tensor, n)
	for i := range res {
		res[i] = &tensor{shape: ops[i].shape, data: slices.Clone(ops[i].data)}
	}
	od := ops[0].shape.Dims
	idx := ops[n]
	ud := ops[n+1].shape.Dims
	var scatterDims []int // update dimensions that pick an index vector
	for d := range ud {
		if !slices.Contains(uwd, d) {
			scatterDims = append(scatterDims, d)
		}
	}
	winOf := make([]int, len(od)) // operand dim -> its update window dim (-1: inserted)
	for d, k := 0, 0; d < len(od); d++ {
		if slices.Contains(iwd, d) {
			winOf[d] = -1
			continue
		}
		if k >= len(uwd) {
			return nil, fmt.Errorf("scatter window dimensions do not match the operand's rank")
		}
		winOf[d] = uwd[k]
		k++
	}
	is := rowMajorStrides(idx.shape.Dims)
	var evalErr error
	each(ud, func(pos int, u []int) {
		if evalErr != nil {
			return
		}
		// the index vector of this update element's scatter position
		at := make([]int, idx.shape.Rank())
		for i, j := 0, 0; i < len(at); i++ {
			if i == ivd {
				continue
			}
			at[i] = u[scatterDims[j]]
			j++
		}
		start := make([]int, len(od))
		for k, d := range sdod {
			if ivd < len(at) {
				at[ivd] = k
			}
			start[d] = int(idx.data[offset(at, is)])
		}
		full := make([]int, len(od))
		for d := range od {
			size := 1
			if winOf[d] >= 0 {
				size = ud[winOf[d]]
				full[d] = start[d] + u[winOf[d]]
			} else {
				full[d] = start[d]
			}
			if start[d] < 0 || start[d] > od[d]-size {
				return // the window is out of bounds: skipped
			}
		}
		o := offset(full, rowMajorStrides(od))
		args := make([]*tensor, 2*n)
		for i := 0; i < n; i++ {
			args[i] = &tensor{shape: hlo.Scalar(res[i].shape.Elem), data: []float64{res[i].data[o]}}
			args[n+i] = &tensor{shape: hlo.Scalar(ops[n+1+i].shape.Elem), data: []float64{ops[n+1+i].data[pos]}}
		}
		r, err := evalComp(in.ToApply, args)
		if err != nil {
			evalErr = err
			return
		}
		for i := 0; i < n; i++ {
			v := r
			if n > 1 {
				v = r.elems[i]
			}
			res[i].data[o] = refRound(v.data[0], res[i].shape.Elem)
		}
	})
	if evalErr != nil {
		return nil, evalErr
	}
	if n == 1 {
		return res[0], nil
	}
	return &tensor{shape: in.Shape, elems: res}, nil
}

// refGather is XLA's gather (HloEvaluator::HandleGather) without batching dimensions: the
// result's dimensions not in offset_dims are the batch dimensions, which index the start
// indices' dimensions other than index_vector_dim (an index_vector_dim equal to their rank
// is an implicit trailing 1); component k of the index vector found there is the start
// of operand dimension start_index_map[k], clamped so that the slice_sizes window fits;
// the offset dimensions walk the operand's dimensions not in collapsed_slice_dims, in
// order.
func refGather(in *hlo.Instruction, ops []*tensor, out *tensor) error {
	get := func(k string) []int {
		v, _ := in.IntSetAttr(k)
		return v
	}
	offsetDims, collapsed, startMap, sizes := get("offset_dims"), get("collapsed_slice_dims"), get("start_index_map"), get("slice_sizes")
	if len(get("operand_batching_dims")) > 0 || len(get("start_indices_batching_dims")) > 0 {
		return fmt.Errorf("the reference evaluator does not support gathers with batching dimensions")
	}
	ivs, _ := in.ExtraAttr("index_vector_dim")
	ivd, err := strconv.Atoi(ivs)
	if err != nil {
		return fmt.Errorf("gather: index_vector_dim %q: %w", ivs, err)
	}
	operand, indices := ops[0], ops[1]
	od, id := operand.shape.Dims, indices.shape.Dims
	if len(sizes) != len(od) {
		return fmt.Errorf("gather: %d slice_sizes for an operand of rank %d", len(sizes), len(od))
	}
	var windowDims []int // operand dimensions the offset dimensions walk
	for d := range od {
		if !slices.Contains(collapsed, d) {
			windowDims = append(windowDims, d)
		}
	}
	if len(windowDims) != len(offsetDims) {
		return fmt.Errorf("gather: %d offset_dims for %d window dimensions", len(offsetDims), len(windowDims))
	}
	var batchIdx []int // index dimensions other than index_vector_dim
	for d := range id {
		if d != ivd {
			batchIdx = append(batchIdx, d)
		}
	}
	ost, ist := rowMajorStrides(od), rowMajorStrides(id)
	var ferr error
	each(out.shape.Dims, func(pos int, idx []int) {
		start := make([]int, len(od))
		var b int
		iidx := make([]int, len(id))
		for d, x := range idx {
			if !slices.Contains(offsetDims, d) {
				if b < len(batchIdx) {
					iidx[batchIdx[b]] = x
				}
				b++
			}
		}
		for k, opd := range startMap {
			if ivd < len(id) {
				iidx[ivd] = k
			}
			v := int(indices.data[offset(iidx, ist)])
			start[opd] = min(max(v, 0), od[opd]-sizes[opd])
		}
		oidx := slices.Clone(start)
		for k, d := range offsetDims {
			oidx[windowDims[k]] += idx[d]
		}
		o := offset(oidx, ost)
		if o < 0 || o >= len(operand.data) {
			ferr = fmt.Errorf("gather: operand index %v out of range", oidx)
			return
		}
		out.data[pos] = operand.data[o]
	})
	return ferr
}

// refBitcastConvert reinterprets the bits of each element as the result's element type,
// for types of one width (the result has the operand's dimensions).
func refBitcastConvert(a, out *tensor) error {
	from, to := a.shape.Elem, out.shape.Elem
	if from.Bits() != to.Bits() || len(a.data) != len(out.data) {
		return fmt.Errorf("the reference evaluator does not support bitcast-convert from %v to %v", from, to)
	}
	for i, v := range a.data {
		bits, ok := refBits(v, from)
		if !ok {
			return fmt.Errorf("the reference evaluator does not support bitcast-convert from %v", from)
		}
		x, ok := refFromBits(bits, to)
		if !ok {
			return fmt.Errorf("the reference evaluator does not support bitcast-convert to %v", to)
		}
		out.data[i] = x
	}
	return nil
}

// refBits is the bit pattern of v as element type t (integers two's complement).
func refBits(v float64, t hlo.ElemType) (uint64, bool) {
	switch t {
	case hlo.F64:
		return math.Float64bits(v), true
	case hlo.F32:
		return uint64(math.Float32bits(float32(v))), true
	case hlo.BF16:
		return uint64(math.Float32bits(float32(v)) >> 16), true
	case hlo.S8, hlo.S16, hlo.S32, hlo.S64, hlo.U8, hlo.U16, hlo.U32:
		return uint64(int64(v)) & (1<<t.Bits() - 1), true
	case hlo.U64:
		return uint64(v), true
	}
	return 0, false
}

// refFromBits is the value whose bit pattern as element type t is b.
func refFromBits(b uint64, t hlo.ElemType) (float64, bool) {
	switch t {
	case hlo.F64:
		return math.Float64frombits(b), true
	case hlo.F32:
		return float64(math.Float32frombits(uint32(b))), true
	case hlo.BF16:
		return float64(math.Float32frombits(uint32(b) << 16)), true
	case hlo.U8, hlo.U16, hlo.U32, hlo.U64:
		return float64(b), true
	case hlo.S8, hlo.S16, hlo.S32, hlo.S64:
		n := uint(t.Bits())
		return float64(int64(b<<(64-n)) >> (64 - n)), true
	}
	return 0, false
}

// refShift is XLA's shift on element type t: the shift amount is read as unsigned, and
// one of at least the bit width gives 0 (shift-left, shift-right-logical) or the sign
// fill (shift-right-arithmetic).
func refShift(op hlo.Opcode, x, n float64, t hlo.ElemType) (float64, error) {
	bits, ok1 := refBits(x, t)
	amount, ok2 := refBits(n, t)
	if !ok1 || !ok2 || !isInt(t) {
		return 0, fmt.Errorf("the reference evaluator does not support %s on %v", op, t)
	}
	w := uint64(t.Bits())
	mask := uint64(1)<<w - 1 // all ones for w = 64
	var r uint64
	switch op {
	case hlo.OpShiftLeft:
		if amount < w {
			r = bits << amount & mask
		}
	case hlo.OpShiftRightLogical:
		if amount < w {
			r = bits >> amount
		}
	default:
		signed := int64(bits<<(64-w)) >> (64 - w)
		r = uint64(signed>>min(amount, 63)) & mask
	}
	v, _ := refFromBits(r, t)
	return v, nil
}

// refSort is XLA's sort: the operands (of one shape) are permuted alike along
// dimensions[0], each row ordered by the comparator (called on the 2N scalars of two
// positions, operand i's at parameters 2i and 2i+1), stably; one operand gives an array,
// several a tuple.
func refSort(in *hlo.Instruction, ops []*tensor) (*tensor, error) {
	if len(in.Dimensions) != 1 || in.ToApply == nil || len(ops) == 0 {
		return nil, fmt.Errorf("the reference evaluator does not support this sort")
	}
	dims := ops[0].shape.Dims
	d := in.Dimensions[0]
	outs := make([]*tensor, len(ops))
	for i, o := range ops {
		outs[i] = &tensor{shape: o.shape, data: slices.Clone(o.data)}
	}
	st := rowMajorStrides(dims)
	outer := slices.Clone(dims)
	outer[d] = 1
	var ferr error
	each(outer, func(_ int, idx []int) {
		base := offset(idx, st)
		perm := make([]int, dims[d])
		for k := range perm {
			perm[k] = k
		}
		slices.SortStableFunc(perm, func(a, b int) int {
			var args []*tensor
			for _, o := range ops {
				e := hlo.Scalar(o.shape.Elem)
				args = append(args, &tensor{shape: e, data: []float64{o.data[base+a*st[d]]}},
					&tensor{shape: e, data: []float64{o.data[base+b*st[d]]}})
			}
			less, err := evalComp(in.ToApply, args)
			if err != nil {
				ferr = err
				return 0
			}
			if less.data[0] != 0 {
				return -1
			}
			rev := slices.Clone(args)
			for i := 0; i < len(rev); i += 2 {
				rev[i], rev[i+1] = rev[i+1], rev[i]
			}
			greater, err := evalComp(in.ToApply, rev)
			if err != nil {
				ferr = err
				return 0
			}
			if greater.data[0] != 0 {
				return 1
			}
			return 0
		})
		for i, o := range ops {
			for k, p := range perm {
				outs[i].data[base+k*st[d]] = o.data[base+p*st[d]]
			}
		}
	})
	if ferr != nil {
		return nil, ferr
	}
	if len(ops) == 1 && !in.Shape.IsTuple() {
		return outs[0], nil
	}
	return &tensor{shape: in.Shape, elems: outs}, nil
}
