// Package opt holds tpucost's target-independent HLO simplification passes, the ones an
// XLA-like compiler runs before layout assignment, named after their XLA counterparts:
//
//	call-inliner                 inline call instructions; delete callees left unused
//	zero-sized-hlo-elimination   zero-element results → constants; ops on empty operands
//	tuple-simplifier             get-tuple-element(tuple) → operand; tuple(gte(t, 0..n-1)) → t
//	while-loop-constant-sinking  loop-invariant constant tuple elements → constants in body/cond
//	while-loop-simplifier        trip count 0 → init, 1 → inlined body; dead loop-carried values
//	algsimp                      algebraic identities, converts, data movement of data movement
//	constant-folding             evaluate pure ops on known constants (≤ MaxFoldElements)
//	reshape-mover                sink reshapes/transposes below elementwise ops toward cancellation
//	broadcast-sinking            elementwise(broadcasts) → broadcast(elementwise)
//	transpose-folding            transposes of dot/convolution operands and results → dim numbers
//	slice-sinker                 elementwise ops on slices tiling arrays → one op, then slices
//	pad-add-to-concat            add(pad(a, 0), pad(b, 0)) of adjacent windows → pad(concatenate)
//	cse                          common-subexpression elimination
//	dce                          dead-code elimination (instructions and computations)
//
// and, after XLA's expanders, decomposers, mergers and cleanups (xla.go; * may grow
// OpCount, Pass.Expands):
//
//	logistic-expander *            logistic(x) → 1 / (1 + exp(-x))
//	batchnorm-expander *           batch-norm-inference → elementwise ops
//	dot-decomposer *               dots → canonical [batch, M, K] x [batch, K, N] (transposes, reshapes)
//	dot-merger *                   dots sharing an operand → one dot of a concatenation, sliced
//	batch-dot-simplification *     size-1 batch dimensions of dots → reshapes
//	operand-upcaster *             dot/convolution with a wider result → converted operands
//	result-caster *                dot/convolution with a narrower result → computed wide, converted
//	map-inliner *                  map of a one-instruction computation → that op
//	real-imag-expander             real/imag of real values → the value / zeros
//	optimization-barrier-expander  opt-barrier(x) → x
//	all-reduce-combiner *          independent all-reduces → one tuple all-reduce
//	all-gather-combiner *          independent all-gathers → one tuple all-gather
//	while-loop-unroller *          loops of a known trip count ≤ 64 → the body repeated
//	broadcast-canonicalizer *      broadcasts with unsorted dimensions → sorted + transpose
//	convert-mover                  widening converts sink, narrowing converts rise, through data movement
//	flatten-call-graph             one computation per call site of calls and loops
//	comparison-expander *          float compare(type=TOTALORDER) → signed compare of bit patterns (xlamore.go)
//	gather-expander *              one-index gathers → dynamic-slice; whole-operand gathers → broadcast
//	conditional-simplifier         conditionals with a constant selector → the branch, inlined
//	scatter-expander *             every scatter → a counted while loop (scatter.go; XLA's CPU order without fusion emitters)
//	sort-simplifier                variadic sorts lose unread operands
//	while-loop-invariant-code-motion *  loop-invariant body work → before the loop (licm.go)
//	reduce-decomposer *            reduces whose result layout is not their natural one → reduce + copy (reduce_decomposer.go)
//	scatter-expander-simple *      a scatter of one index vector → scatter-expander's one-trip loop (kEliminateSimpleScatters)
//	scatter-simplifier *           scatters → XLA's canonical form: transposes/reshapes around a simplified scatter (scatter_simplifier.go)
//
// All returns them in that order (actions of the pass-ordering gym keep their index),
// Lookup finds one by name. SimplifyPipelines lists the compile pipeline's
// simplification groups: the default, "xla" (XLAOrderPasses: call-inliner, XLA's CPU
// simplification group without the passes that may grow a TPU program, then
// broadcast-sinking, transpose-folding, slice-sinker, pad-add-to-concat and cse), and
// "legacy" (LegacyPasses, the first 14, the default before issue 36). Default is the
// default group as one pass, iterated to a fixed point (at most DefaultMaxIterations
// times).
// XLAPipeline is XLA's own order over these passes (its CPU pipeline up to layout
// assignment, with its two fixed-point simplification groups; XLACommit), which
// RunStages runs.
// Run and RunToFixedPoint apply any list; FixedPoint is the fixed-point loop they and the
// compiler's simplification group share. OpCount is the measure every pass may only
// reduce (the pass-ordering gym's reward is its reduction). The passes rewrite the
// computations hlo.FlowComputations gives with calls followed, in module order.
//
// # Contract
//
// A pass mutates a module that passes hlo.Verify in place, reports whether it changed
// it, and leaves a module that passes hlo.Verify and computes the same entry result (the
// tests check this with a reference evaluator on random inputs). Passes rewrite the
// flow computations only — the entry and the computations it runs through call and
// while — and are layout-insensitive (they run before layout assignment; a rewritten
// value takes the layout of the instruction it replaces when it has none). Runs are
// deterministic: the same input module gives byte-identical printed output. Passes
// interact: one pass's rewrite exposes work for another (broadcast-sinking makes ops on
// constants that constant-folding folds; reshape-mover brings transposes together for
// algsimp; while-loop-constant-sinking gives while-loop-simplifier its trip counts and
// dead elements; call-inliner and while-loop-simplifier leave tuples for
// tuple-simplifier), which is what makes their order matter.
//
// # Purity
//
// Only instructions whose opcode is on an explicit list (pureOpcode: elementwise and
// transcendental ops, data movement, dot, convolution, reductions, gather/scatter,
// dynamic slices, tuples, constants, iota; call, while and fusion when everything they
// call is pure) are merged, deleted, evaluated or rewritten. Every other opcode —
// custom-call, rng, collectives, send/recv, infeed/outfeed, after-all, sort,
// conditional, and opcodes added later — is opaque: never deleted, merged or duplicated.
//
// # Constants
//
// Constant values are read from their literals (scalars, "{1, 2}", nested arrays,
// inf/nan). A payload the text elides ("{...}", as the zoo builders write weights) is an
// unknown value: such constants are never folded, merged or taken for a splat.
package opt
