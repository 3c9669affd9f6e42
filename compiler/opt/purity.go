package opt

import "github.com/tpucost/tpucost/compiler/hlo"

// pureOpcode reports whether op is on the explicit list of opcodes whose instructions
// compute a value from their operands and attributes alone: no side effects, no
// dependence on state, no nondeterminism. Only such instructions may be merged (CSE),
// removed when unused (DCE), evaluated at compile time (constant folding) or rewritten.
//
// Every opcode not listed — custom-call, rng, rng-bit-generator, all-reduce and the
// other collectives, send/recv, infeed/outfeed, after-all, optimization barriers, sort,
// conditional, and any opcode added to the hlo package later — is opaque: the passes
// never remove, merge, duplicate or look inside it. call, while and fusion are pure
// when every computation they call is (see modCtx.pure).
func pureOpcode(op hlo.Opcode) bool {
	switch op {
	case hlo.OpParameter, hlo.OpConstant, hlo.OpIota,
		// elementwise unary
		hlo.OpAbs, hlo.OpNegate, hlo.OpSign, hlo.OpNot, hlo.OpFloor, hlo.OpCeil,
		hlo.OpRoundNearestAfz, hlo.OpRoundNearestEven, hlo.OpConvert, hlo.OpBitcastConvert,
		hlo.OpCopy, hlo.OpIsFinite, hlo.OpPopulationCount, hlo.OpReal, hlo.OpImag,
		// elementwise binary and ternary
		hlo.OpAdd, hlo.OpSubtract, hlo.OpMultiply, hlo.OpDivide, hlo.OpRemainder,
		hlo.OpMaximum, hlo.OpMinimum, hlo.OpAnd, hlo.OpOr, hlo.OpXor, hlo.OpShiftLeft,
		hlo.OpShiftRightArithmetic, hlo.OpShiftRightLogical, hlo.OpCompare,
		hlo.OpSelect, hlo.OpClamp,
		// transcendental
		hlo.OpExp, hlo.OpExpm1, hlo.OpLog, hlo.OpLog1p, hlo.OpSqrt, hlo.OpRsqrt, hlo.OpCbrt,
		hlo.OpTanh, hlo.OpLogistic, hlo.OpSine, hlo.OpCosine, hlo.OpTan, hlo.OpErf,
		hlo.OpPower, hlo.OpAtan2,
		// contractions and reductions (their to_apply must be pure too)
		hlo.OpDot, hlo.OpConvolution, hlo.OpReduce, hlo.OpReduceWindow, hlo.OpSelectAndScatter,
		// data movement
		hlo.OpBroadcast, hlo.OpReshape, hlo.OpTranspose, hlo.OpBitcast, hlo.OpSlice,
		hlo.OpConcatenate, hlo.OpPad, hlo.OpReverse,
		// indexed
		hlo.OpGather, hlo.OpScatter, hlo.OpDynamicSlice, hlo.OpDynamicUpdateSlice,
		// tuples
		hlo.OpTuple, hlo.OpGetTupleElement,
		// pure when their callees are
		hlo.OpCall, hlo.OpWhile, hlo.OpFusion:
		return true
	}
	return false
}

// elementwiseOpcode reports whether op is on the explicit list of pure elementwise ops
// that the movers (reshape-mover, broadcast-sinking) may commute with data movement:
// result element i depends only on operand element i.
func elementwiseOpcode(op hlo.Opcode) bool {
	switch op {
	case hlo.OpAbs, hlo.OpNegate, hlo.OpSign, hlo.OpNot, hlo.OpFloor, hlo.OpCeil,
		hlo.OpRoundNearestAfz, hlo.OpRoundNearestEven, hlo.OpConvert, hlo.OpIsFinite,
		hlo.OpPopulationCount,
		hlo.OpAdd, hlo.OpSubtract, hlo.OpMultiply, hlo.OpDivide, hlo.OpRemainder,
		hlo.OpMaximum, hlo.OpMinimum, hlo.OpAnd, hlo.OpOr, hlo.OpXor, hlo.OpShiftLeft,
		hlo.OpShiftRightArithmetic, hlo.OpShiftRightLogical, hlo.OpCompare,
		hlo.OpSelect, hlo.OpClamp,
		hlo.OpExp, hlo.OpExpm1, hlo.OpLog, hlo.OpLog1p, hlo.OpSqrt, hlo.OpRsqrt, hlo.OpCbrt,
		hlo.OpTanh, hlo.OpLogistic, hlo.OpSine, hlo.OpCosine, hlo.OpTan, hlo.OpErf,
		hlo.OpPower, hlo.OpAtan2:
		return true
	}
	return false
}

// commutative reports whether in's two operands may be swapped.
func commutative(in *hlo.Instruction) bool {
	switch in.Opcode {
	case hlo.OpAdd, hlo.OpMultiply, hlo.OpMaximum, hlo.OpMinimum, hlo.OpAnd, hlo.OpOr, hlo.OpXor:
		return true
	case hlo.OpCompare:
		return in.Direction == "EQ" || in.Direction == "NE"
	}
	return false
}
