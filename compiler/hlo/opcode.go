package hlo

// Opcode identifies an HLO operation. Its numeric value is internal to this process;
// persistent data must use Opcode.String (see the features package's vocabulary).
type Opcode uint8

// Category groups opcodes by how they compute, which is what fusion, layout
// assignment and cost analysis key on.
type Category uint8

// Opcode categories.
const (
	CatSource         Category = iota // parameter, constant, iota
	CatElementwise                    // cheap elementwise arithmetic, logic, compare, select, convert
	CatTranscendental                 // elementwise ops evaluated by a slow unit (exp, log, tanh, ...)
	CatDot                            // dot (matrix multiply)
	CatConvolution                    // convolution
	CatReduce                         // reduce
	CatReduceWindow                   // reduce-window, select-and-scatter
	CatDataMovement                   // broadcast, reshape, transpose, copy, slice, concatenate, pad, ...
	CatIndexed                        // gather, scatter, dynamic-slice, dynamic-update-slice
	CatTuple                          // tuple, get-tuple-element
	CatControl                        // fusion, call, while, conditional
	CatOther                          // sort, custom-call, rng, ...
)

var categoryNames = [...]string{
	CatSource: "source", CatElementwise: "elementwise", CatTranscendental: "transcendental",
	CatDot: "dot", CatConvolution: "convolution", CatReduce: "reduce",
	CatReduceWindow: "reduce-window", CatDataMovement: "data-movement", CatIndexed: "indexed",
	CatTuple: "tuple", CatControl: "control", CatOther: "other",
}

func (c Category) String() string { return categoryNames[c] }

// Variadic marks an op that takes any number of operands.
const Variadic = -1

// OpInfo is one row of the op table.
type OpInfo struct {
	Name     string
	Arity    int // number of operands, or Variadic
	Category Category
}

// The opcodes: every opcode of XLA's HLO_OPCODE_LIST (xla/hlo/ir/hlo_opcode.h). Their
// numeric values are hashed into kernel keys (and so into dataset keys): append new
// opcodes at the end, never insert or reorder.
const (
	OpInvalid Opcode = iota
	// sources
	OpParameter
	OpConstant
	OpIota
	// elementwise unary
	OpAbs
	OpNegate
	OpSign
	OpNot
	OpFloor
	OpCeil
	OpRoundNearestAfz
	OpRoundNearestEven
	OpConvert
	OpBitcastConvert
	OpCopy
	OpIsFinite
	OpPopulationCount
	OpReal
	OpImag
	// elementwise binary
	OpAdd
	OpSubtract
	OpMultiply
	OpDivide
	OpRemainder
	OpMaximum
	OpMinimum
	OpAnd
	OpOr
	OpXor
	OpShiftLeft
	OpShiftRightArithmetic
	OpShiftRightLogical
	OpCompare
	// elementwise ternary
	OpSelect
	OpClamp
	// transcendental
	OpExp
	OpExpm1
	OpLog
	OpLog1p
	OpSqrt
	OpRsqrt
	OpCbrt
	OpTanh
	OpLogistic
	OpSine
	OpCosine
	OpTan
	OpErf
	OpPower
	OpAtan2
	// dot and convolution
	OpDot
	OpConvolution
	// reductions
	OpReduce
	OpReduceWindow
	OpSelectAndScatter
	// data movement
	OpBroadcast
	OpReshape
	OpTranspose
	OpBitcast
	OpSlice
	OpConcatenate
	OpPad
	OpReverse
	// indexed
	OpGather
	OpScatter
	OpDynamicSlice
	OpDynamicUpdateSlice
	// tuples
	OpTuple
	OpGetTupleElement
	// control
	OpFusion
	OpCall
	OpWhile
	OpConditional
	// other
	OpSort
	OpCustomCall
	OpRng
	OpRngBitGenerator
	OpAllReduce
	OpAfterAll
	// Appended for XLA's full opcode list (keep this order).
	OpAcos
	OpAcosh
	OpAsin
	OpAsinh
	OpAtan
	OpAtanh
	OpCosh
	OpSinh
	OpClz
	OpReducePrecision
	OpComplex
	OpMulhi
	OpStochasticConvert
	OpAddDependency
	OpDomain
	OpOptimizationBarrier
	OpGetDimensionSize
	OpSetDimensionSize
	OpDynamicReshape
	OpCopyStart
	OpCopyDone
	OpAllGather
	OpAllGatherStart
	OpAllGatherDone
	OpAllReduceStart
	OpAllReduceDone
	OpAllToAll
	OpRaggedAllToAll
	OpReduceScatter
	OpCollectiveBroadcast
	OpCollectivePermute
	OpCollectivePermuteStart
	OpCollectivePermuteDone
	OpCollectiveReduce
	OpAsyncStart
	OpAsyncUpdate
	OpAsyncDone
	OpSend
	OpSendDone
	OpRecv
	OpRecvDone
	OpInfeed
	OpOutfeed
	OpPartitionID
	OpReplicaID
	OpBatchNormTraining
	OpBatchNormInference
	OpBatchNormGrad
	OpCholesky
	OpTriangularSolve
	OpFft
	OpTopK
	OpRngGetAndUpdateState
	OpMap
	OpRaggedDot
	OpScaledDot
	OpScan
	OpShuffle
	numOpcodes
)

// opTable is the one declarative description of every opcode: its HLO name, arity and
// category. It is read-only.
var opTable = [numOpcodes]OpInfo{
	OpInvalid:   {"invalid", 0, CatOther},
	OpParameter: {"parameter", 0, CatSource},
	OpConstant:  {"constant", 0, CatSource},
	OpIota:      {"iota", 0, CatSource},

	OpAbs:              {"abs", 1, CatElementwise},
	OpNegate:           {"negate", 1, CatElementwise},
	OpSign:             {"sign", 1, CatElementwise},
	OpNot:              {"not", 1, CatElementwise},
	OpFloor:            {"floor", 1, CatElementwise},
	OpCeil:             {"ceil", 1, CatElementwise},
	OpRoundNearestAfz:  {"round-nearest-afz", 1, CatElementwise},
	OpRoundNearestEven: {"round-nearest-even", 1, CatElementwise},
	OpConvert:          {"convert", 1, CatElementwise},
	OpBitcastConvert:   {"bitcast-convert", 1, CatElementwise},
	OpCopy:             {"copy", 1, CatDataMovement},
	OpIsFinite:         {"is-finite", 1, CatElementwise},
	OpPopulationCount:  {"popcnt", 1, CatElementwise},
	OpReal:             {"real", 1, CatElementwise},
	OpImag:             {"imag", 1, CatElementwise},

	OpAdd:                  {"add", 2, CatElementwise},
	OpSubtract:             {"subtract", 2, CatElementwise},
	OpMultiply:             {"multiply", 2, CatElementwise},
	OpDivide:               {"divide", 2, CatElementwise},
	OpRemainder:            {"remainder", 2, CatElementwise},
	OpMaximum:              {"maximum", 2, CatElementwise},
	OpMinimum:              {"minimum", 2, CatElementwise},
	OpAnd:                  {"and", 2, CatElementwise},
	OpOr:                   {"or", 2, CatElementwise},
	OpXor:                  {"xor", 2, CatElementwise},
	OpShiftLeft:            {"shift-left", 2, CatElementwise},
	OpShiftRightArithmetic: {"shift-right-arithmetic", 2, CatElementwise},
	OpShiftRightLogical:    {"shift-right-logical", 2, CatElementwise},
	OpCompare:              {"compare", 2, CatElementwise},

	OpSelect: {"select", 3, CatElementwise},
	OpClamp:  {"clamp", 3, CatElementwise},

	OpExp:      {"exponential", 1, CatTranscendental},
	OpExpm1:    {"exponential-minus-one", 1, CatTranscendental},
	OpLog:      {"log", 1, CatTranscendental},
	OpLog1p:    {"log-plus-one", 1, CatTranscendental},
	OpSqrt:     {"sqrt", 1, CatTranscendental},
	OpRsqrt:    {"rsqrt", 1, CatTranscendental},
	OpCbrt:     {"cbrt", 1, CatTranscendental},
	OpTanh:     {"tanh", 1, CatTranscendental},
	OpLogistic: {"logistic", 1, CatTranscendental},
	OpSine:     {"sine", 1, CatTranscendental},
	OpCosine:   {"cosine", 1, CatTranscendental},
	OpTan:      {"tan", 1, CatTranscendental},
	OpErf:      {"erf", 1, CatTranscendental},
	OpPower:    {"power", 2, CatTranscendental},
	OpAtan2:    {"atan2", 2, CatTranscendental},

	OpDot:         {"dot", 2, CatDot},
	OpConvolution: {"convolution", 2, CatConvolution},

	OpReduce:           {"reduce", Variadic, CatReduce},
	OpReduceWindow:     {"reduce-window", Variadic, CatReduceWindow},
	OpSelectAndScatter: {"select-and-scatter", 3, CatReduceWindow},

	OpBroadcast:   {"broadcast", 1, CatDataMovement},
	OpReshape:     {"reshape", 1, CatDataMovement},
	OpTranspose:   {"transpose", 1, CatDataMovement},
	OpBitcast:     {"bitcast", 1, CatDataMovement},
	OpSlice:       {"slice", 1, CatDataMovement},
	OpConcatenate: {"concatenate", Variadic, CatDataMovement},
	OpPad:         {"pad", 2, CatDataMovement},
	OpReverse:     {"reverse", 1, CatDataMovement},

	OpGather:             {"gather", 2, CatIndexed},
	OpScatter:            {"scatter", Variadic, CatIndexed}, // N inputs, indices, N updates (inferScatter)
	OpDynamicSlice:       {"dynamic-slice", Variadic, CatIndexed},
	OpDynamicUpdateSlice: {"dynamic-update-slice", Variadic, CatIndexed},

	OpTuple:           {"tuple", Variadic, CatTuple},
	OpGetTupleElement: {"get-tuple-element", 1, CatTuple},

	OpFusion:      {"fusion", Variadic, CatControl},
	OpCall:        {"call", Variadic, CatControl},
	OpWhile:       {"while", 1, CatControl},
	OpConditional: {"conditional", Variadic, CatControl},

	OpSort:            {"sort", Variadic, CatOther},
	OpCustomCall:      {"custom-call", Variadic, CatOther},
	OpRng:             {"rng", Variadic, CatOther},
	OpRngBitGenerator: {"rng-bit-generator", 1, CatOther},
	OpAllReduce:       {"all-reduce", Variadic, CatOther},
	OpAfterAll:        {"after-all", Variadic, CatOther},

	OpAcos:              {"acos", 1, CatTranscendental},
	OpAcosh:             {"acosh", 1, CatTranscendental},
	OpAsin:              {"asin", 1, CatTranscendental},
	OpAsinh:             {"asinh", 1, CatTranscendental},
	OpAtan:              {"atan", 1, CatTranscendental},
	OpAtanh:             {"atanh", 1, CatTranscendental},
	OpCosh:              {"cosh", 1, CatTranscendental},
	OpSinh:              {"sinh", 1, CatTranscendental},
	OpClz:               {"count-leading-zeros", 1, CatElementwise},
	OpReducePrecision:   {"reduce-precision", 1, CatElementwise},
	OpComplex:           {"complex", 2, CatElementwise},
	OpMulhi:             {"mulhi", 2, CatElementwise},
	OpStochasticConvert: {"stochastic-convert", 2, CatElementwise},

	// Scheduling and metadata ops: no data moves.
	OpAddDependency:       {"add-dependency", 2, CatTuple},
	OpDomain:              {"domain", 1, CatTuple},
	OpOptimizationBarrier: {"opt-barrier", 1, CatTuple},
	OpGetDimensionSize:    {"get-dimension-size", 1, CatOther},
	OpSetDimensionSize:    {"set-dimension-size", 2, CatOther},
	OpDynamicReshape:      {"dynamic-reshape", Variadic, CatOther},
	OpCopyStart:           {"copy-start", 1, CatOther},
	OpCopyDone:            {"copy-done", 1, CatOther},

	// Collectives, asynchronous wrappers, host and device transfers.
	OpAllGather:              {"all-gather", Variadic, CatOther},
	OpAllGatherStart:         {"all-gather-start", Variadic, CatOther},
	OpAllGatherDone:          {"all-gather-done", 1, CatOther},
	OpAllReduceStart:         {"all-reduce-start", Variadic, CatOther},
	OpAllReduceDone:          {"all-reduce-done", 1, CatOther},
	OpAllToAll:               {"all-to-all", Variadic, CatOther},
	OpRaggedAllToAll:         {"ragged-all-to-all", 6, CatOther},
	OpReduceScatter:          {"reduce-scatter", Variadic, CatOther},
	OpCollectiveBroadcast:    {"collective-broadcast", Variadic, CatOther},
	OpCollectivePermute:      {"collective-permute", Variadic, CatOther},
	OpCollectivePermuteStart: {"collective-permute-start", Variadic, CatOther},
	OpCollectivePermuteDone:  {"collective-permute-done", 1, CatOther},
	OpCollectiveReduce:       {"collective-reduce", Variadic, CatOther},
	OpAsyncStart:             {"async-start", Variadic, CatOther},
	OpAsyncUpdate:            {"async-update", Variadic, CatOther},
	OpAsyncDone:              {"async-done", 1, CatOther},
	OpSend:                   {"send", 2, CatOther},
	OpSendDone:               {"send-done", 1, CatOther},
	OpRecv:                   {"recv", 1, CatOther},
	OpRecvDone:               {"recv-done", 1, CatOther},
	OpInfeed:                 {"infeed", 1, CatOther},
	OpOutfeed:                {"outfeed", 2, CatOther},
	OpPartitionID:            {"partition-id", 0, CatSource},
	OpReplicaID:              {"replica-id", 0, CatSource},

	// Library-like ops.
	OpBatchNormTraining:    {"batch-norm-training", 3, CatOther},
	OpBatchNormInference:   {"batch-norm-inference", 5, CatOther},
	OpBatchNormGrad:        {"batch-norm-grad", 5, CatOther},
	OpCholesky:             {"cholesky", 1, CatOther},
	OpTriangularSolve:      {"triangular-solve", 2, CatOther},
	OpFft:                  {"fft", 1, CatOther},
	OpTopK:                 {"topk", 1, CatOther},
	OpRngGetAndUpdateState: {"rng-get-and-update-state", 0, CatOther},
	OpMap:                  {"map", Variadic, CatOther},
	OpRaggedDot:            {"ragged-dot", 3, CatOther},
	OpScaledDot:            {"scaled-dot", 4, CatOther},
	OpScan:                 {"scan", Variadic, CatControl},
	OpShuffle:              {"shuffle", 1, CatOther},
}

// Info returns the op-table row of op.
func (op Opcode) Info() OpInfo {
	if op >= numOpcodes {
		return opTable[OpInvalid]
	}
	return opTable[op]
}

// String returns the HLO spelling of op.
func (op Opcode) String() string { return op.Info().Name }

// Category returns op's category.
func (op Opcode) Category() Category { return op.Info().Category }

// IsElementwise reports whether op maps elements one to one (cheap or transcendental).
func (op Opcode) IsElementwise() bool {
	c := op.Category()
	return c == CatElementwise || c == CatTranscendental
}

// ParseOpcode maps an HLO opcode spelling to its Opcode.
func ParseOpcode(s string) (Opcode, bool) {
	for i := 1; i < int(numOpcodes); i++ {
		if opTable[i].Name == s {
			return Opcode(i), true
		}
	}
	return OpInvalid, false
}

// AllOpcodes lists every valid opcode in table order.
func AllOpcodes() []Opcode {
	out := make([]Opcode, 0, numOpcodes-1)
	for i := 1; i < int(numOpcodes); i++ {
		out = append(out, Opcode(i))
	}
	return out
}
