package compiler

import (
	"math"
	"math/bits"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// valueRange is what is known statically of the values of an integer array or scalar
// (each element v): Lo ≤ v when HasLo, v ≤ Hi when HasHi. Integer wrap-around is not modelled (as in the constant-start trip
// count): the ranges are those of the mathematical integers the ops compute.
type valueRange struct {
	Lo, Hi       int64
	HasLo, HasHi bool
}

func exactRange(v int64) valueRange { return valueRange{Lo: v, Hi: v, HasLo: true, HasHi: true} }

// maxRangeDepth bounds how far back through operands startRange looks.
const maxRangeDepth = 24

// startRange is the range of values that the computed scalar x (a loop's initial
// induction value) can take, from its defining ops: constants; pred, unsigned and
// converted-from-pred values (≥ 0); iota (0 to the dimension's size − 1); value-preserving
// ops (copy, convert, same-type bitcast, reshape, broadcast, transpose,
// slice, dynamic-slice, reverse); tuple/get-tuple-element pairs; add, subtract, multiply of
// non-negative operands, maximum, minimum, select, clamp; and reduce by add (init 0),
// maximum or minimum, as in a length computed as the sum of a 0/1 prompt mask. Anything
// else (a parameter of signed type, a loop-carried value, a float other than an integral
// constant) is unknown.
func startRange(x *hlo.Instruction) valueRange {
	return rangeOf(x, map[*hlo.Instruction]valueRange{}, 0)
}

func rangeOf(x *hlo.Instruction, memo map[*hlo.Instruction]valueRange, depth int) valueRange {
	if r, ok := memo[x]; ok {
		return r
	}
	var r valueRange
	if depth < maxRangeDepth {
		r = rangeOfOp(x, memo, depth+1)
	}
	if t := x.Shape.Elem; t == hlo.PRED || isUnsigned(t) {
		if !r.HasLo || r.Lo < 0 {
			r.Lo, r.HasLo = 0, true
		}
		if t == hlo.PRED && (!r.HasHi || r.Hi > 1) {
			r.Hi, r.HasHi = 1, true
		}
	}
	memo[x] = r
	return r
}

func isUnsigned(t hlo.ElemType) bool {
	switch t {
	case hlo.U1, hlo.U2, hlo.U4, hlo.U8, hlo.U16, hlo.U32, hlo.U64:
		return true
	}
	return false
}

func rangeOfOp(x *hlo.Instruction, memo map[*hlo.Instruction]valueRange, depth int) valueRange {
	op := func(i int) valueRange {
		if i >= len(x.Operands) {
			return valueRange{}
		}
		return rangeOf(x.Operands[i], memo, depth)
	}
	if v, ok := intConstant(x); ok { // through the wrappers peel skips, as before
		return exactRange(v)
	}
	switch x.Opcode {
	case hlo.OpConstant:
		if x.Shape.Elem == hlo.PRED && x.Shape.Rank() == 0 {
			return valueRange{Lo: 0, Hi: 1, HasLo: true, HasHi: true}
		}
	case hlo.OpIota:
		d := 0
		if len(x.Dimensions) > 0 {
			d = x.Dimensions[0]
		}
		if d < x.Shape.Rank() && x.Shape.Dims[d] > 0 {
			return valueRange{Lo: 0, Hi: int64(x.Shape.Dims[d]) - 1, HasLo: true, HasHi: true}
		}
	case hlo.OpConvert:
		if len(x.Operands) == 1 { // float ranges here come from integral values only
			return op(0)
		}
	case hlo.OpBitcast:
		if len(x.Operands) == 1 && x.Operands[0].Shape.Elem == x.Shape.Elem {
			return op(0)
		}
	case hlo.OpCopy, hlo.OpReshape, hlo.OpBroadcast, hlo.OpTranspose, hlo.OpSlice, hlo.OpDynamicSlice, hlo.OpReverse:
		return op(0)
	case hlo.OpGetTupleElement:
		if len(x.Operands) == 1 {
			if t := peel(x.Operands[0]); t.Opcode == hlo.OpTuple && x.Index < len(t.Operands) {
				return rangeOf(t.Operands[x.Index], memo, depth)
			}
		}
	case hlo.OpAdd:
		return addRanges(op(0), op(1))
	case hlo.OpSubtract:
		b := op(1)
		return addRanges(op(0), valueRange{Lo: negOr(b.Hi), Hi: negOr(b.Lo), HasLo: b.HasHi && b.Hi != math.MinInt64, HasHi: b.HasLo && b.Lo != math.MinInt64})
	case hlo.OpMultiply:
		a, b := op(0), op(1)
		if a.HasLo && b.HasLo && a.Lo >= 0 && b.Lo >= 0 {
			var r valueRange
			r.Lo, r.HasLo = mulChecked(a.Lo, b.Lo)
			if a.HasHi && b.HasHi {
				r.Hi, r.HasHi = mulChecked(a.Hi, b.Hi)
			}
			return r
		}
	case hlo.OpMaximum:
		return maxRanges(op(0), op(1))
	case hlo.OpMinimum:
		return minRanges(op(0), op(1))
	case hlo.OpSelect:
		a, b := op(1), op(2)
		return valueRange{Lo: min(a.Lo, b.Lo), Hi: max(a.Hi, b.Hi), HasLo: a.HasLo && b.HasLo, HasHi: a.HasHi && b.HasHi}
	case hlo.OpClamp: // clamp(lo, v, hi) = minimum(maximum(v, lo), hi)
		return minRanges(maxRanges(op(1), op(0)), op(2))
	case hlo.OpReduce:
		return reduceRange(x, op(0), op(1))
	}
	return valueRange{}
}

// reduceRange is the range of reduce x (one operand, ranges a of its elements and iv of
// its init value): a sum of n elements from init 0 lies in [n·a.Lo, n·a.Hi]; a maximum
// is at least the greatest known lower limit, a minimum at most the least known upper one.
func reduceRange(x *hlo.Instruction, a, iv valueRange) valueRange {
	if len(x.Operands) != 2 || x.ToApply == nil || x.ToApply.Root == nil {
		return valueRange{}
	}
	n := int64(1)
	for _, d := range x.Dimensions {
		if d < 0 || d >= x.Operands[0].Shape.Rank() {
			return valueRange{}
		}
		var ok bool
		if n, ok = mulChecked(n, int64(x.Operands[0].Shape.Dims[d])); !ok {
			return valueRange{}
		}
	}
	switch peel(x.ToApply.Root).Opcode {
	case hlo.OpAdd:
		if !(iv.HasLo && iv.HasHi && iv.Lo == 0 && iv.Hi == 0) {
			return valueRange{}
		}
		var r valueRange
		if a.HasLo {
			r.Lo, r.HasLo = mulChecked(n, a.Lo)
		}
		if a.HasHi {
			r.Hi, r.HasHi = mulChecked(n, a.Hi)
		}
		return r
	case hlo.OpMaximum:
		return maxRanges(a, iv)
	case hlo.OpMinimum:
		return minRanges(a, iv)
	}
	return valueRange{}
}

func addRanges(a, b valueRange) valueRange {
	var r valueRange
	if a.HasLo && b.HasLo {
		if s, ok := addChecked(a.Lo, b.Lo); ok {
			r.Lo, r.HasLo = s, true
		}
	}
	if a.HasHi && b.HasHi {
		if s, ok := addChecked(a.Hi, b.Hi); ok {
			r.Hi, r.HasHi = s, true
		}
	}
	return r
}

// maxRanges is the range of maximum(a, b): at least either operand's lower limit.
func maxRanges(a, b valueRange) valueRange {
	r := valueRange{HasLo: a.HasLo || b.HasLo, HasHi: a.HasHi && b.HasHi}
	switch {
	case a.HasLo && b.HasLo:
		r.Lo = max(a.Lo, b.Lo)
	case a.HasLo:
		r.Lo = a.Lo
	case b.HasLo:
		r.Lo = b.Lo
	}
	if r.HasHi {
		r.Hi = max(a.Hi, b.Hi)
	}
	return r
}

// minRanges is the range of minimum(a, b): at most either operand's upper limit.
func minRanges(a, b valueRange) valueRange {
	r := valueRange{HasLo: a.HasLo && b.HasLo, HasHi: a.HasHi || b.HasHi}
	if r.HasLo {
		r.Lo = min(a.Lo, b.Lo)
	}
	switch {
	case a.HasHi && b.HasHi:
		r.Hi = min(a.Hi, b.Hi)
	case a.HasHi:
		r.Hi = a.Hi
	case b.HasHi:
		r.Hi = b.Hi
	}
	return r
}

func negOr(v int64) int64 {
	if v == math.MinInt64 {
		return math.MaxInt64
	}
	return -v
}

func addChecked(a, b int64) (int64, bool) {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		return 0, false
	}
	return s, true
}

// mulChecked is a·b, and false when it overflows int64.
func mulChecked(a, b int64) (int64, bool) {
	hi, lo := bits.Mul64(absU(a), absU(b))
	neg := (a < 0) != (b < 0)
	switch {
	case hi != 0 || lo > math.MaxInt64+1 || (lo == math.MaxInt64+1 && !neg):
		return 0, false
	case neg:
		return -int64(lo), true // lo == 2^63 wraps to MinInt64, which is exact
	}
	return int64(lo), true
}

func absU(v int64) uint64 {
	if v < 0 {
		return uint64(-(v + 1)) + 1
	}
	return uint64(v)
}
