package opt

import (
	"math"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// This file evaluates single instructions on known values, for constant folding. Values
// are float64s rounded to the element type after every operation; integers are exact
// (held in int64 while computing, wrapped to their width). An evaluation that the folder
// cannot do exactly as the hardware would — integer division by zero, out-of-range float
// to integer conversions, shifts, 64-bit integers beyond 2^53, complex types — reports
// ok=false and the instruction is left alone.

// strides returns the row-major strides of dims.
func strides(dims []int) []int {
	s := make([]int, len(dims))
	k := 1
	for i := len(dims) - 1; i >= 0; i-- {
		s[i] = k
		k *= dims[i]
	}
	return s
}

// forEachIndex calls f with every multi-index of dims in row-major order (f must not
// keep idx).
func forEachIndex(dims []int, f func(idx []int)) {
	n := 1
	for _, d := range dims {
		n *= d
	}
	if n == 0 {
		return
	}
	idx := make([]int, len(dims))
	for {
		f(idx)
		k := len(dims) - 1
		for k >= 0 {
			idx[k]++
			if idx[k] < dims[k] {
				break
			}
			idx[k] = 0
			k--
		}
		if k < 0 {
			return
		}
	}
}

// identityOf returns the identity element of reducer op for type t.
func identityOf(op hlo.Opcode, t hlo.ElemType) (float64, bool) {
	switch op {
	case hlo.OpAdd, hlo.OpOr:
		return 0, true
	case hlo.OpMultiply, hlo.OpAnd:
		return 1, true
	case hlo.OpMaximum:
		if t.IsFloat() {
			return math.Inf(-1), true
		}
		if t == hlo.PRED {
			return 0, true
		}
		lo, _ := intRange(t)
		return lo, true
	case hlo.OpMinimum:
		if t.IsFloat() {
			return math.Inf(1), true
		}
		if t == hlo.PRED {
			return 1, true
		}
		_, hi := intRange(t)
		return hi, true
	}
	return 0, false
}

// reducerKind returns the binary opcode a reducer computation applies — (p0, p1) →
// op(p0, p1) or op(p1, p0) on scalars of one type, for op add, multiply, maximum,
// minimum, and, or — or OpInvalid.
func reducerKind(c *hlo.Computation) hlo.Opcode {
	if c == nil || len(c.Instructions) != 3 || c.Root == nil {
		return hlo.OpInvalid
	}
	r := c.Root
	switch r.Opcode {
	case hlo.OpAdd, hlo.OpMultiply, hlo.OpMaximum, hlo.OpMinimum, hlo.OpAnd, hlo.OpOr:
	default:
		return hlo.OpInvalid
	}
	ps := c.Parameters()
	if len(ps) != 2 || ps[0].Shape.Rank() != 0 || !ps[0].Shape.Compatible(ps[1].Shape) || !r.Shape.Compatible(ps[0].Shape) {
		return hlo.OpInvalid
	}
	a, b := r.Operands[0], r.Operands[1]
	if (a == ps[0] && b == ps[1]) || (a == ps[1] && b == ps[0]) {
		return r.Opcode
	}
	return hlo.OpInvalid
}

// elemOp evaluates one element of an elementwise op: result type t, operand type ot,
// compare direction dir. ok=false means "do not fold".
func elemOp(op hlo.Opcode, t, ot hlo.ElemType, dir string, a ...float64) (float64, bool) {
	for _, v := range a {
		if isInt(ot) && math.Abs(v) > maxExactInt {
			return 0, false
		}
	}
	switch op {
	case hlo.OpConvert:
		return convertValue(a[0], ot, t)
	case hlo.OpCompare:
		return compareValues(dir, a[0], a[1])
	case hlo.OpSelect:
		if a[0] != 0 {
			return a[1], true
		}
		return a[2], true
	case hlo.OpClamp: // clamp(lo, x, hi)
		if ot.IsFloat() && (math.IsNaN(a[0]) || math.IsNaN(a[1]) || math.IsNaN(a[2])) {
			return math.NaN(), true
		}
		return math.Min(math.Max(a[1], a[0]), a[2]), true
	case hlo.OpIsFinite:
		if math.IsInf(a[0], 0) || math.IsNaN(a[0]) {
			return 0, true
		}
		return 1, true
	}
	switch {
	case t == hlo.PRED:
		return predOp(op, a...)
	case isInt(t):
		return intOp(op, t, a...)
	case t.IsFloat():
		v, ok := floatOp(op, a...)
		return roundTo(v, t), ok
	}
	return 0, false
}

func predOp(op hlo.Opcode, a ...float64) (float64, bool) {
	b := func(v float64) bool { return v != 0 }
	r := false
	switch op {
	case hlo.OpNot:
		r = !b(a[0])
	case hlo.OpAnd, hlo.OpMinimum, hlo.OpMultiply:
		r = b(a[0]) && b(a[1])
	case hlo.OpOr, hlo.OpMaximum:
		r = b(a[0]) || b(a[1])
	case hlo.OpXor:
		r = b(a[0]) != b(a[1])
	default:
		return 0, false
	}
	if r {
		return 1, true
	}
	return 0, true
}

func intOp(op hlo.Opcode, t hlo.ElemType, a ...float64) (float64, bool) {
	x := int64(a[0])
	var y int64
	if len(a) > 1 {
		y = int64(a[1])
	}
	var r int64
	switch op {
	case hlo.OpAbs:
		r = x
		if x < 0 {
			r = -x
		}
	case hlo.OpNegate:
		r = -x
	case hlo.OpSign:
		switch {
		case x > 0:
			r = 1
		case x < 0:
			r = -1
		}
	case hlo.OpNot:
		r = ^x
	case hlo.OpAdd:
		r = x + y
	case hlo.OpSubtract:
		r = x - y
	case hlo.OpMultiply:
		r = x * y
	case hlo.OpDivide:
		if y == 0 {
			return 0, false
		}
		r = x / y
	case hlo.OpRemainder:
		if y == 0 {
			return 0, false
		}
		r = x % y
	case hlo.OpMaximum:
		r = max(x, y)
	case hlo.OpMinimum:
		r = min(x, y)
	case hlo.OpAnd:
		r = x & y
	case hlo.OpOr:
		r = x | y
	case hlo.OpXor:
		r = x ^ y
	default:
		return 0, false
	}
	v := float64(r)
	if t.Bytes() == 8 {
		if r > maxExactInt || r < -maxExactInt || (isUnsigned(t) && r < 0) {
			return 0, false
		}
		return v, true
	}
	return wrapInt(v, t), true
}

func floatOp(op hlo.Opcode, a ...float64) (float64, bool) {
	x := a[0]
	var y float64
	if len(a) > 1 {
		y = a[1]
	}
	switch op {
	case hlo.OpAbs:
		return math.Abs(x), true
	case hlo.OpNegate:
		return -x, true
	case hlo.OpSign:
		switch {
		case math.IsNaN(x), x == 0:
			return x, true
		case x > 0:
			return 1, true
		}
		return -1, true
	case hlo.OpFloor:
		return math.Floor(x), true
	case hlo.OpCeil:
		return math.Ceil(x), true
	case hlo.OpRoundNearestAfz:
		return math.Round(x), true
	case hlo.OpRoundNearestEven:
		return math.RoundToEven(x), true
	case hlo.OpAdd:
		return x + y, true
	case hlo.OpSubtract:
		return x - y, true
	case hlo.OpMultiply:
		return x * y, true
	case hlo.OpDivide:
		return x / y, true
	case hlo.OpRemainder:
		return math.Mod(x, y), true
	case hlo.OpMaximum:
		if math.IsNaN(x) || math.IsNaN(y) {
			return math.NaN(), true
		}
		return math.Max(x, y), true
	case hlo.OpMinimum:
		if math.IsNaN(x) || math.IsNaN(y) {
			return math.NaN(), true
		}
		return math.Min(x, y), true
	case hlo.OpExp:
		return math.Exp(x), true
	case hlo.OpExpm1:
		return math.Expm1(x), true
	case hlo.OpLog:
		return math.Log(x), true
	case hlo.OpLog1p:
		return math.Log1p(x), true
	case hlo.OpSqrt:
		return math.Sqrt(x), true
	case hlo.OpRsqrt:
		return 1 / math.Sqrt(x), true
	case hlo.OpCbrt:
		return math.Cbrt(x), true
	case hlo.OpTanh:
		return math.Tanh(x), true
	case hlo.OpLogistic:
		return 1 / (1 + math.Exp(-x)), true
	case hlo.OpSine:
		return math.Sin(x), true
	case hlo.OpCosine:
		return math.Cos(x), true
	case hlo.OpTan:
		return math.Tan(x), true
	case hlo.OpErf:
		return math.Erf(x), true
	case hlo.OpPower:
		return math.Pow(x, y), true
	case hlo.OpAtan2:
		return math.Atan2(x, y), true
	}
	return 0, false
}

// convertValue converts v of type from to type to.
func convertValue(v float64, from, to hlo.ElemType) (float64, bool) {
	switch {
	case to == hlo.PRED:
		if v != 0 {
			return 1, true
		}
		return 0, true
	case isInt(to):
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, false
		}
		v = math.Trunc(v)
		if from.IsFloat() {
			lo, hi := intRange(to)
			if v < lo || v > hi {
				return 0, false // implementation-defined; leave it to the hardware
			}
			return v, true
		}
		return wrapInt(v, to), true
	case to.IsFloat():
		return roundTo(v, to), true
	}
	return 0, false
}

func compareValues(dir string, x, y float64) (float64, bool) {
	var r bool
	switch dir {
	case "EQ":
		r = x == y
	case "NE":
		r = x != y
	case "LT":
		r = x < y
	case "LE":
		r = x <= y
	case "GT":
		r = x > y
	case "GE":
		r = x >= y
	default:
		return 0, false
	}
	if r {
		return 1, true
	}
	return 0, true
}

// foldInstruction evaluates in on its operands' values (row-major, one slice per
// operand). ok=false means the instruction is not folded.
func foldInstruction(in *hlo.Instruction, vals [][]float64) ([]float64, bool) {
	if !in.Shape.IsArray() || !numericType(in.Shape.Elem) {
		return nil, false
	}
	for _, op := range in.Operands {
		if !op.Shape.IsArray() || !numericType(op.Shape.Elem) {
			return nil, false
		}
	}
	out := make([]float64, in.Shape.Elements())
	switch {
	case elementwiseOpcode(in.Opcode):
		if len(in.Operands) == 0 {
			return nil, false
		}
		if in.Opcode == hlo.OpCompare {
			if _, typed := in.ExtraAttr("type"); typed {
				return nil, false // total-order compares differ on NaN and -0
			}
		}
		ot := in.Operands[len(in.Operands)-1].Shape.Elem
		if in.Opcode == hlo.OpShiftLeft || in.Opcode == hlo.OpShiftRightArithmetic || in.Opcode == hlo.OpShiftRightLogical || in.Opcode == hlo.OpPopulationCount {
			return nil, false
		}
		args := make([]float64, len(vals))
		for i := range out {
			for k, v := range vals {
				if len(v) == 1 && len(out) != 1 { // scalar operand of select / clamp
					args[k] = v[0]
				} else {
					args[k] = v[i]
				}
			}
			r, ok := elemOp(in.Opcode, in.Shape.Elem, ot, in.Direction, args...)
			if !ok {
				return nil, false
			}
			out[i] = r
		}
		return out, true
	}
	x := in.Operands[0].Shape
	switch in.Opcode {
	case hlo.OpCopy, hlo.OpReshape:
		copy(out, vals[0])
	case hlo.OpTranspose:
		xs := strides(x.Dims)
		k := 0
		forEachIndex(in.Shape.Dims, func(idx []int) {
			off := 0
			for i, p := range in.Dimensions {
				off += idx[i] * xs[p]
			}
			out[k] = vals[0][off]
			k++
		})
	case hlo.OpReverse:
		xs := strides(x.Dims)
		rev := make([]bool, x.Rank())
		for _, d := range in.Dimensions {
			rev[d] = true
		}
		k := 0
		forEachIndex(in.Shape.Dims, func(idx []int) {
			off := 0
			for i, j := range idx {
				if rev[i] {
					j = x.Dims[i] - 1 - j
				}
				off += j * xs[i]
			}
			out[k] = vals[0][off]
			k++
		})
	case hlo.OpSlice:
		xs := strides(x.Dims)
		k := 0
		forEachIndex(in.Shape.Dims, func(idx []int) {
			off := 0
			for i, j := range idx {
				off += (in.Slice[i].Start + j*in.Slice[i].Stride) * xs[i]
			}
			out[k] = vals[0][off]
			k++
		})
	case hlo.OpConcatenate:
		d := in.Dimensions[0]
		k := 0
		forEachIndex(in.Shape.Dims, func(idx []int) {
			j := idx[d]
			for oi, op := range in.Operands {
				if j < op.Shape.Dims[d] {
					os := strides(op.Shape.Dims)
					off := 0
					for i, v := range idx {
						if i == d {
							v = j
						}
						off += v * os[i]
					}
					out[k] = vals[oi][off]
					break
				}
				j -= op.Shape.Dims[d]
			}
			k++
		})
	case hlo.OpPad:
		pv := vals[1][0]
		xs := strides(x.Dims)
		k := 0
		forEachIndex(in.Shape.Dims, func(idx []int) {
			off := 0
			inside := true
			for i, j := range idx {
				p := in.Padding[i]
				t := j - p.Lo
				if t < 0 || t%(p.Interior+1) != 0 || t/(p.Interior+1) >= x.Dims[i] {
					inside = false
					break
				}
				off += t / (p.Interior + 1) * xs[i]
			}
			if inside {
				out[k] = vals[0][off]
			} else {
				out[k] = pv
			}
			k++
		})
	case hlo.OpReduce:
		kind := reducerKind(in.ToApply)
		if len(in.Operands) != 2 || kind == hlo.OpInvalid {
			return nil, false
		}
		t := in.Shape.Elem
		for i := range out {
			out[i] = vals[1][0]
		}
		kept := hlo.KeptDims(x.Rank(), in.Dimensions)
		os := strides(in.Shape.Dims)
		k := 0
		ok := true
		forEachIndex(x.Dims, func(idx []int) {
			o := 0
			for i, d := range kept {
				o += idx[d] * os[i]
			}
			r, good := elemOp(kind, t, t, "", out[o], vals[0][k])
			ok = ok && good
			out[o] = r
			k++
		})
		if !ok {
			return nil, false
		}
	case hlo.OpDot:
		return foldDot(in, vals)
	default:
		return nil, false
	}
	return out, true
}

func foldDot(in *hlo.Instruction, vals [][]float64) ([]float64, bool) {
	l, r := in.Operands[0].Shape, in.Operands[1].Shape
	t := in.Shape.Elem
	if t == hlo.PRED || (!t.IsFloat() && !isInt(t)) {
		return nil, false
	}
	dd := hlo.DotDims{LhsContracting: []int{l.Rank() - 1}, RhsContracting: []int{0}}
	if in.Dot != nil {
		dd = *in.Dot
	}
	lf := freeDims(l.Rank(), dd.LhsBatch, dd.LhsContracting)
	rf := freeDims(r.Rank(), dd.RhsBatch, dd.RhsContracting)
	cdims := make([]int, len(dd.LhsContracting))
	for i, d := range dd.LhsContracting {
		cdims[i] = l.Dims[d]
	}
	ls, rs := strides(l.Dims), strides(r.Dims)
	out := make([]float64, in.Shape.Elements())
	nb := len(dd.LhsBatch)
	k := 0
	ok := true
	forEachIndex(in.Shape.Dims, func(idx []int) {
		lo, ro := 0, 0
		for i := 0; i < nb; i++ {
			lo += idx[i] * ls[dd.LhsBatch[i]]
			ro += idx[i] * rs[dd.RhsBatch[i]]
		}
		for i, d := range lf {
			lo += idx[nb+i] * ls[d]
		}
		for i, d := range rf {
			ro += idx[nb+len(lf)+i] * rs[d]
		}
		var sum float64
		var isum int64
		forEachIndex(cdims, func(c []int) {
			a, b := lo, ro
			for i, j := range c {
				a += j * ls[dd.LhsContracting[i]]
				b += j * rs[dd.RhsContracting[i]]
			}
			if t.IsFloat() {
				sum += vals[0][a] * vals[1][b]
			} else {
				isum += int64(vals[0][a]) * int64(vals[1][b])
			}
		})
		if t.IsFloat() {
			out[k] = roundTo(sum, t)
		} else {
			v, good := intOp(hlo.OpAdd, t, float64(isum), 0)
			ok = ok && good && math.Abs(float64(isum)) <= maxExactInt
			out[k] = v
		}
		k++
	})
	return out, ok
}

// freeDims lists, ascending, the dimensions of a rank-r array in neither list.
func freeDims(r int, a, b []int) []int {
	used := make([]bool, r)
	for _, d := range a {
		used[d] = true
	}
	for _, d := range b {
		used[d] = true
	}
	var out []int
	for d := 0; d < r; d++ {
		if !used[d] {
			out = append(out, d)
		}
	}
	return out
}
