package opt

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// The passes of this file are XLA's expanders, decomposers, mergers and cleanups that
// XLA's CPU pipeline runs before or between its simplification groups
// (xla/service/cpu/cpu_compiler.cc, RunHloPassesThroughLayoutAssn). Several of them grow
// the op count (Pass.Expands): they trade ops for a canonical form another pass relies
// on, or undo what another pass did (dot-decomposer and transpose-folding,
// dot-merger and algsimp's slice rules), which is what makes their order matter.

// logisticExpander is XLA's LogisticExpander (xla/hlo/transforms/expanders/
// logistic_expander.cc): logistic(x) → 1 / (1 + exp(-x)), the constant 1 broadcast.
func logisticExpander() Pass {
	return expanderPass("logistic-expander", "logistic(x) → divide(1, add(1, exp(negate(x))))",
		func(e *editor, x *hlo.Instruction) {
			if x.Opcode != hlo.OpLogistic || !x.Shape.IsArray() || !isFloat(x.Shape.Elem) {
				return
			}
			one := e.broadcast(e.scalar(x.Shape.Elem, 1), nil, x.Shape.Dims)
			ex := e.op(hlo.OpExp, hlo.Shape{}, e.op(hlo.OpNegate, hlo.Shape{}, x.Operands[0]))
			e.replace(x, e.op(hlo.OpDivide, hlo.Shape{}, one, e.op(hlo.OpAdd, hlo.Shape{}, one, ex)))
		})
}

func isFloat(t hlo.ElemType) bool { return numericType(t) && !isInt(t) && t != hlo.PRED }

// expanderPass is a pass that rewrites each used instruction of the flow computations
// with f (which may replace it) and may grow the op count.
func expanderPass(name, doc string, f func(e *editor, x *hlo.Instruction)) Pass {
	p := newPass(name, doc, func(m *hlo.Module) (bool, error) {
		return rewriteEach(m, false, nil, func(e *editor, x *hlo.Instruction) error { f(e, x); return nil })
	})
	p.Expands = true
	return p
}

// cleanupPass is expanderPass for a pass that never grows the op count.
func cleanupPass(name, doc string, f func(e *editor, x *hlo.Instruction)) Pass {
	p := expanderPass(name, doc, f)
	p.Expands = false
	return p
}

// dotDecomposer is XLA's DotDecomposer (xla/hlo/transforms/expanders/dot_decomposer.cc):
// it brings every dot to the canonical form [batch..., M, K] x [batch..., K, N] (batch
// dimensions leading and in order, one contracting dimension, at most one
// non-contracting dimension per side), transposing each operand into batch,
// non-contracting, contracting order (batch, contracting, non-contracting for the rhs),
// reshaping it (always, as XLA does; algsimp removes a no-op reshape) and reshaping the
// result back. A side without non-contracting dimensions gets no M (or N) dimension.
// Dots that are already canonical are left alone.
func dotDecomposer() Pass {
	return expanderPass("dot-decomposer", "dots → canonical [batch, M, K] x [batch, K, N] with transposes and reshapes",
		func(e *editor, x *hlo.Instruction) {
			if x.Opcode != hlo.OpDot || x.Dot == nil || len(x.Operands) != 2 || !x.Shape.IsArray() || dotCanonical(x) {
				return
			}
			d := x.Dot
			lhs, rhs := x.Operands[0], x.Operands[1]
			lnc := freeDims(lhs.Shape.Rank(), d.LhsBatch, d.LhsContracting)
			rnc := freeDims(rhs.Shape.Rank(), d.RhsBatch, d.RhsContracting)
			nb := len(d.LhsBatch)
			var bdims []int
			for _, b := range d.LhsBatch {
				bdims = append(bdims, lhs.Shape.Dims[b])
			}
			k := prodDims(lhs.Shape.Dims, d.LhsContracting)
			ldims, rdims, outDims := slices.Clone(bdims), slices.Clone(bdims), slices.Clone(bdims)
			if len(lnc) > 0 {
				ldims = append(ldims, prodDims(lhs.Shape.Dims, lnc))
				outDims = append(outDims, prodDims(lhs.Shape.Dims, lnc))
			}
			ldims = append(ldims, k)
			rdims = append(rdims, k)
			if len(rnc) > 0 {
				rdims = append(rdims, prodDims(rhs.Shape.Dims, rnc))
				outDims = append(outDims, prodDims(rhs.Shape.Dims, rnc))
			}
			l := e.add(&hlo.Instruction{Opcode: hlo.OpReshape, Shape: hlo.Array(lhs.Shape.Elem, ldims...),
				Operands: []*hlo.Instruction{e.transpose(lhs, slices.Concat(d.LhsBatch, lnc, d.LhsContracting))}})
			r := e.add(&hlo.Instruction{Opcode: hlo.OpReshape, Shape: hlo.Array(rhs.Shape.Elem, rdims...),
				Operands: []*hlo.Instruction{e.transpose(rhs, slices.Concat(d.RhsBatch, d.RhsContracting, rnc))}})
			iota := make([]int, nb)
			for i := range iota {
				iota[i] = i
			}
			dot := x.CloneShallow()
			dot.Name, dot.Operands = "", []*hlo.Instruction{l, r}
			dot.Dot = &hlo.DotDims{LhsBatch: iota, RhsBatch: slices.Clone(iota),
				LhsContracting: []int{len(ldims) - 1}, RhsContracting: []int{nb}}
			dot.Shape = hlo.Array(x.Shape.Elem, outDims...)
			nd := e.add(dot)
			nd.Shape = hlo.Array(x.Shape.Elem, outDims...)
			e.replace(x, e.add(&hlo.Instruction{Opcode: hlo.OpReshape, Operands: []*hlo.Instruction{nd}, Shape: hlo.Array(x.Shape.Elem, x.Shape.Dims...)}))
		})
}

func prodDims(dims, which []int) int {
	p := 1
	for _, i := range which {
		p *= dims[i]
	}
	return p
}

// DotCanonical reports whether dot instruction x is in the form XLA's DotDecomposer
// leaves alone (dotCanonical); false for anything but a two-operand dot with dimension
// numbers. The zoo's dot-form tables count with it.
func DotCanonical(x *hlo.Instruction) bool {
	return x != nil && x.Opcode == hlo.OpDot && x.Dot != nil && len(x.Operands) == 2 && dotCanonical(x)
}

// dotCanonical is DotDecomposer's test: batch dimensions are 0..b-1 on both sides, one
// contracting dimension and at most one non-contracting dimension on each side, and
// the lhs has a non-contracting dimension or the rhs has (a dot with neither is left
// alone, as XLA's DontCanonicalizeIfNoNoncontractingDims).
func dotCanonical(x *hlo.Instruction) bool {
	d := x.Dot
	lr, rr := x.Operands[0].Shape.Rank(), x.Operands[1].Shape.Rank()
	for i := range d.LhsBatch {
		if d.LhsBatch[i] != i || d.RhsBatch[i] != i {
			return false
		}
	}
	if len(d.LhsContracting) != 1 || len(d.RhsContracting) != 1 {
		return false
	}
	nb := len(d.LhsBatch)
	lnc, rnc := lr-nb-1, rr-nb-1
	if lnc > 1 || rnc > 1 {
		return false
	}
	return true
}

// dotMerger is XLA's DotMerger (xla/hlo/transforms/simplifiers/dot_merger.cc): two dots
// that share an operand, have the same dimension numbers and types, and do not depend
// on each other, become one dot of the shared operand and the concatenation of the
// other operands along their non-contracting dimension, followed by a slice per
// original dot. Only operands with exactly one non-contracting dimension are
// concatenated, batch dimensions must be 0..b-1 and there must be one contracting
// dimension per side (XLA's MergeWithUnsortedBatchDims, NoMergeMultipleOuterDims and
// NoMergeMultipleContractingDims leave such dots alone); the merged dot must not exceed
// DotMergerMaxElements result elements.
func dotMerger() Pass {
	p := newPass("dot-merger", "dot(a, b), dot(a, c) → slices of dot(a, concatenate(b, c))", runDotMerger)
	p.Expands = true
	return p
}

// DotMergerMaxElements caps the merged dot's result size in elements (XLA's DotMerger
// takes the cap, max_size_to_merge, from its pipeline; this one is 4 Mi elements).
const DotMergerMaxElements = 4 << 20

func runDotMerger(m *hlo.Module) (bool, error) {
	mc := newModCtx(m)
	changed := false
	for _, c := range flowComputations(m) {
		for {
			a, b, side := findMergeableDots(c)
			if a == nil {
				break
			}
			e := mc.edit(c)
			e.anchor = laterOf(a, b)
			mergeDots(e, a, b, side)
			e.finish()
			changed = true
		}
	}
	return changed, nil
}

func laterOf(a, b *hlo.Instruction) *hlo.Instruction {
	if a.ID > b.ID {
		return a
	}
	return b
}

// findMergeableDots returns the first pair of dots (in instruction order) that share
// operand side (0 lhs, 1 rhs) and can be merged.
func findMergeableDots(c *hlo.Computation) (*hlo.Instruction, *hlo.Instruction, int) {
	c.Renumber()
	var dots []*hlo.Instruction
	for _, in := range c.Instructions {
		if in.Opcode == hlo.OpDot && in.Dot != nil && len(in.Operands) == 2 && in.Shape.IsArray() {
			dots = append(dots, in)
		}
	}
	for i, a := range dots {
		for _, b := range dots[i+1:] {
			for side := 0; side < 2; side++ {
				if a.Operands[side] == b.Operands[side] && mergeableDots(a, b, side) && !reaches(a, b) {
					return a, b, side
				}
			}
		}
	}
	return nil, nil, 0
}

// reaches reports whether b depends on a (a before b in the renumbered computation): a
// search from b through operands that never goes below a's position.
func reaches(a, b *hlo.Instruction) bool {
	seen := map[*hlo.Instruction]bool{}
	stack := []*hlo.Instruction{b}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, op := range x.Operands {
			if op == a {
				return true
			}
			if op.ID > a.ID && !seen[op] {
				seen[op] = true
				stack = append(stack, op)
			}
		}
	}
	return false
}

func mergeableDots(a, b *hlo.Instruction, side int) bool {
	if !dotDimsEqual(a.Dot, b.Dot) || a.Shape.Elem != b.Shape.Elem || a.Sharding != nil || b.Sharding != nil {
		return false
	}
	// XLA merges only dots with canonical batch dimensions (0..b-1 on both sides, so
	// MergeWithUnsortedBatchDims is left alone) and one contracting dimension each
	// (NoMergeMultipleContractingDims)
	for i := range a.Dot.LhsBatch {
		if a.Dot.LhsBatch[i] != i || a.Dot.RhsBatch[i] != i {
			return false
		}
	}
	if len(a.Dot.LhsContracting) != 1 || len(a.Dot.RhsContracting) != 1 {
		return false
	}
	o := 1 - side
	oa, ob := a.Operands[o], b.Operands[o]
	if oa.Shape.Elem != ob.Shape.Elem || oa.Shape.Rank() != ob.Shape.Rank() {
		return false
	}
	batch, contr := a.Dot.LhsBatch, a.Dot.LhsContracting
	if o == 1 {
		batch, contr = a.Dot.RhsBatch, a.Dot.RhsContracting
	}
	nc := freeDims(oa.Shape.Rank(), batch, contr)
	if len(nc) != 1 {
		return false
	}
	for i := range oa.Shape.Dims {
		if i != nc[0] && oa.Shape.Dims[i] != ob.Shape.Dims[i] {
			return false
		}
	}
	n := 1
	for _, v := range a.Shape.Dims {
		n *= v
	}
	return n/max(1, oa.Shape.Dims[nc[0]])*(oa.Shape.Dims[nc[0]]+ob.Shape.Dims[nc[0]]) <= DotMergerMaxElements
}

func dotDimsEqual(a, b *hlo.DotDims) bool {
	return intsEq(a.LhsBatch, b.LhsBatch) && intsEq(a.RhsBatch, b.RhsBatch) &&
		intsEq(a.LhsContracting, b.LhsContracting) && intsEq(a.RhsContracting, b.RhsContracting)
}

func mergeDots(e *editor, a, b *hlo.Instruction, side int) {
	o := 1 - side
	oa, ob := a.Operands[o], b.Operands[o]
	batch, contr := a.Dot.LhsBatch, a.Dot.LhsContracting
	if o == 1 {
		batch, contr = a.Dot.RhsBatch, a.Dot.RhsContracting
	}
	cd := freeDims(oa.Shape.Rank(), batch, contr)[0]
	cat := e.add(&hlo.Instruction{Opcode: hlo.OpConcatenate, Operands: []*hlo.Instruction{oa, ob}, Dimensions: []int{cd}, HasDimensions: true})
	ops := []*hlo.Instruction{a.Operands[0], a.Operands[1]}
	ops[o] = cat
	nd := e.clone(a, hlo.Shape{}, ops...)
	// the result dimension of the concatenated operand's non-contracting dimension
	nb := len(a.Dot.LhsBatch)
	rd := nb + len(freeDims(a.Operands[0].Shape.Rank(), a.Dot.LhsBatch, a.Dot.LhsContracting)) - 1
	if o == 0 {
		rd = nb
	}
	if o == 1 {
		rd = a.Shape.Rank() - 1
	}
	slice := func(lo, hi int) *hlo.Instruction {
		sd := make([]hlo.SliceDim, nd.Shape.Rank())
		for i, v := range nd.Shape.Dims {
			sd[i] = hlo.SliceDim{Start: 0, Limit: v, Stride: 1}
		}
		sd[rd] = hlo.SliceDim{Start: lo, Limit: hi, Stride: 1}
		return e.sliceOf(nd, sd)
	}
	na := oa.Shape.Dims[cd]
	sa := slice(0, na)
	sb := slice(na, na+ob.Shape.Dims[cd])
	e.replace(a, sa)
	e.replace(b, sb)
}

// operandUpcaster is XLA's OperandUpcaster (xla/hlo/transforms/operand_upcaster.cc): a
// dot or convolution whose result type is wider than its operands' (bf16 x bf16 → f32)
// gets its operands converted to the result type.
func operandUpcaster() Pass {
	return expanderPass("operand-upcaster", "dot/convolution with a wider result type → converts of the operands",
		func(e *editor, x *hlo.Instruction) {
			if (x.Opcode != hlo.OpDot && x.Opcode != hlo.OpConvolution) || len(x.Operands) != 2 || !x.Shape.IsArray() {
				return
			}
			t := x.Shape.Elem
			if x.Operands[0].Shape.Elem == t && x.Operands[1].Shape.Elem == t {
				return
			}
			for _, op := range x.Operands {
				if !widens(op.Shape.Elem, t) && op.Shape.Elem != t {
					return
				}
			}
			for i, op := range x.Operands {
				if op.Shape.Elem != t {
					e.setOperand(x, i, e.add(&hlo.Instruction{Opcode: hlo.OpConvert, Operands: []*hlo.Instruction{op}, Shape: hlo.Array(t, op.Shape.Dims...)}))
				}
			}
		})
}

// widens reports whether to is a strictly wider type of the same kind as from (every
// value of from is exact in to).
func widens(from, to hlo.ElemType) bool {
	return from != to && exactlyRepresents(from, to) && isFloat(from) == isFloat(to)
}

// resultCaster is XLA's ResultCaster (xla/hlo/transforms/result_caster.cc): a dot or
// convolution whose result type is narrower than its operands' (f32 x f32 → bf16) is
// computed in the operands' type and converted to the result type.
func resultCaster() Pass {
	return expanderPass("result-caster", "dot/convolution with a narrower result type → convert(dot in the operands' type)",
		func(e *editor, x *hlo.Instruction) {
			if (x.Opcode != hlo.OpDot && x.Opcode != hlo.OpConvolution) || len(x.Operands) != 2 || !x.Shape.IsArray() {
				return
			}
			t := x.Operands[0].Shape.Elem
			if x.Operands[1].Shape.Elem != t || !widens(x.Shape.Elem, t) {
				return
			}
			nd := e.clone(x, hlo.Array(t, x.Shape.Dims...), x.Operands...)
			nd.Shape = hlo.Array(t, x.Shape.Dims...)
			e.replace(x, e.add(&hlo.Instruction{Opcode: hlo.OpConvert, Operands: []*hlo.Instruction{nd}, Shape: hlo.Array(x.Shape.Elem, x.Shape.Dims...)}))
		})
}

// mapInliner is XLA's MapInliner (xla/hlo/transforms/simplifiers/map_inliner.cc): a map
// whose computation is a single elementwise instruction of its parameters becomes that
// instruction on the map's operands; a computation returning a parameter becomes that
// operand, and one returning a constant a broadcast of it (one op more).
func mapInliner() Pass {
	return expanderPass("map-inliner", "map with a one-instruction computation → that elementwise op",
		func(e *editor, x *hlo.Instruction) {
			if x.Opcode != hlo.OpMap || x.ToApply == nil || !x.Shape.IsArray() {
				return
			}
			root := x.ToApply.Root
			switch {
			case root.Opcode == hlo.OpParameter:
				if root.ParamNum < len(x.Operands) {
					e.replaceOpaque(x, x.Operands[root.ParamNum])
				}
			case root.Opcode == hlo.OpConstant && root.Shape.Rank() == 0:
				c := e.add(&hlo.Instruction{Opcode: hlo.OpConstant, Shape: hlo.Array(root.Shape.Elem), Literal: root.Literal})
				e.replaceOpaque(x, e.broadcast(c, nil, x.Shape.Dims))
			case elementwiseOpcode(root.Opcode):
				ops := make([]*hlo.Instruction, len(root.Operands))
				for i, o := range root.Operands {
					if o.Opcode != hlo.OpParameter || o.ParamNum >= len(x.Operands) {
						return
					}
					ops[i] = x.Operands[o.ParamNum]
				}
				n := root.CloneShallow()
				n.Name, n.Operands, n.Metadata = "", ops, x.Metadata
				n.Shape = hlo.Array(root.Shape.Elem, x.Shape.Dims...)
				e.replaceOpaque(x, e.add(n))
			}
		})
}

// optimizationBarrierExpander is XLA's OptimizationBarrierExpander
// (xla/hlo/transforms/expanders/optimization_barrier_expander.cc): every
// opt-barrier is replaced by its operand.
func optimizationBarrierExpander() Pass {
	return cleanupPass("optimization-barrier-expander", "opt-barrier(x) → x",
		func(e *editor, x *hlo.Instruction) {
			if x.Opcode == hlo.OpOptimizationBarrier && len(x.Operands) == 1 {
				e.replaceOpaque(x, x.Operands[0])
			}
		})
}

// replaceOpaque is replace for an instruction that is not on the pure list (it is not
// deleted by replace, so it is marked dead here once nothing reads it).
func (e *editor) replaceOpaque(old, nw *hlo.Instruction) {
	e.replace(old, nw)
	if len(e.users[old.ID]) == 0 && old != e.c.Root && !e.dead[old.ID] {
		e.dead[old.ID] = true
		for _, op := range old.Operands {
			e.dropUse(op, old)
			e.removeIfDead(op)
		}
	}
}

// realImagExpander is XLA's RealImagExpander (xla/hlo/transforms/expanders/
// real_imag_expander.cc): real(x) of a real-typed x → x, imag(x) → zeros.
func realImagExpander() Pass {
	return cleanupPass("real-imag-expander", "real(x) of a real x → x; imag(x) → broadcast(0)",
		func(e *editor, x *hlo.Instruction) {
			if (x.Opcode != hlo.OpReal && x.Opcode != hlo.OpImag) || len(x.Operands) != 1 || !numericType(x.Operands[0].Shape.Elem) {
				return
			}
			if x.Opcode == hlo.OpReal {
				e.replace(x, x.Operands[0])
				return
			}
			e.replace(x, e.broadcast(e.scalar(x.Shape.Elem, 0), nil, x.Shape.Dims))
		})
}

// batchNormExpander is XLA's BatchNormExpander (xla/service/batchnorm_expander.cc) for
// batch-norm-inference: with the scale, offset, mean and variance broadcast along
// feature_index, y = x * (scale * rsqrt(var + epsilon)) + (offset - mean * scale *
// rsqrt(var + epsilon)), as XLA computes it. batch-norm-training and -grad are left as
// they are.
func batchNormExpander() Pass {
	return expanderPass("batchnorm-expander", "batch-norm-inference → elementwise ops on broadcast scale and shift",
		func(e *editor, x *hlo.Instruction) {
			if x.Opcode != hlo.OpBatchNormInference || len(x.Operands) != 5 || !x.Shape.IsArray() {
				return
			}
			eps, fi, ok := batchNormAttrs(x)
			if !ok {
				return
			}
			t := x.Shape.Elem
			op, scale, offset, mean, v := x.Operands[0], x.Operands[1], x.Operands[2], x.Operands[3], x.Operands[4]
			fdims := scale.Shape.Dims
			epsB := e.broadcast(e.scalar(t, eps), nil, fdims)
			trueScale := e.op(hlo.OpMultiply, hlo.Shape{}, scale, e.op(hlo.OpRsqrt, hlo.Shape{}, e.op(hlo.OpAdd, hlo.Shape{}, v, epsB)))
			trueShift := e.op(hlo.OpSubtract, hlo.Shape{}, offset, e.op(hlo.OpMultiply, hlo.Shape{}, mean, trueScale))
			bs := e.broadcast(trueScale, []int{fi}, op.Shape.Dims)
			bsh := e.broadcast(trueShift, []int{fi}, op.Shape.Dims)
			e.replace(x, e.op(hlo.OpAdd, hlo.Shape{}, e.op(hlo.OpMultiply, hlo.Shape{}, op, bs), bsh))
		})
}

func batchNormAttrs(x *hlo.Instruction) (eps float64, fi int, ok bool) {
	es, ok1 := x.ExtraAttr("epsilon")
	fs, ok2 := x.ExtraAttr("feature_index")
	if !ok1 || !ok2 {
		return 0, 0, false
	}
	eps, err1 := strconv.ParseFloat(strings.TrimSpace(es), 64)
	fi, err2 := strconv.Atoi(strings.TrimSpace(fs))
	if err1 != nil || err2 != nil || fi < 0 || fi >= x.Shape.Rank() {
		return 0, 0, false
	}
	return eps, fi, true
}

// batchDotSimplification is XLA's BatchDotSimplification
// (xla/service/batch_dot_simplification.cc): batch dimensions of size 1 are removed
// from a dot's operands (reshapes) and put back on its result.
func batchDotSimplification() Pass {
	return expanderPass("batch-dot-simplification", "degenerate (size-1) batch dimensions of dots → reshapes",
		func(e *editor, x *hlo.Instruction) {
			if x.Opcode != hlo.OpDot || x.Dot == nil || len(x.Operands) != 2 || !x.Shape.IsArray() {
				return
			}
			d := x.Dot
			lhs, rhs := x.Operands[0], x.Operands[1]
			var degen []int // positions in the batch lists
			for i, b := range d.LhsBatch {
				if lhs.Shape.Dims[b] == 1 {
					degen = append(degen, i)
				}
			}
			if len(degen) == 0 {
				return
			}
			drop := func(op *hlo.Instruction, dims []int) (*hlo.Instruction, func(int) int) {
				var keep []int
				gone := map[int]bool{}
				for _, i := range degen {
					gone[dims[i]] = true
				}
				for i, v := range op.Shape.Dims {
					if !gone[i] {
						keep = append(keep, v)
					}
				}
				remap := func(k int) int {
					n := k
					for g := range gone {
						if g < k {
							n--
						}
					}
					return n
				}
				return e.add(&hlo.Instruction{Opcode: hlo.OpReshape, Operands: []*hlo.Instruction{op}, Shape: hlo.Array(op.Shape.Elem, keep...)}), remap
			}
			nl, lm := drop(lhs, d.LhsBatch)
			nr, rm := drop(rhs, d.RhsBatch)
			nd := &hlo.DotDims{}
			isDegen := map[int]bool{}
			for _, i := range degen {
				isDegen[i] = true
			}
			for i := range d.LhsBatch {
				if !isDegen[i] {
					nd.LhsBatch = append(nd.LhsBatch, lm(d.LhsBatch[i]))
					nd.RhsBatch = append(nd.RhsBatch, rm(d.RhsBatch[i]))
				}
			}
			for _, c := range d.LhsContracting {
				nd.LhsContracting = append(nd.LhsContracting, lm(c))
			}
			for _, c := range d.RhsContracting {
				nd.RhsContracting = append(nd.RhsContracting, rm(c))
			}
			var outDims []int
			for i, v := range x.Shape.Dims {
				if i >= len(d.LhsBatch) || !isDegen[i] {
					outDims = append(outDims, v)
				}
			}
			n := x.CloneShallow()
			n.Name, n.Operands, n.Dot = "", []*hlo.Instruction{nl, nr}, nd
			n.Shape = hlo.Array(x.Shape.Elem, outDims...)
			nn := e.add(n)
			nn.Shape = hlo.Array(x.Shape.Elem, outDims...)
			e.replace(x, e.add(&hlo.Instruction{Opcode: hlo.OpReshape, Operands: []*hlo.Instruction{nn}, Shape: hlo.Array(x.Shape.Elem, x.Shape.Dims...)}))
		})
}

// allReduceCombiner is XLA's AllReduceCombiner (xla/service/all_reduce_combiner.cc, and
// AllGatherCombiner for all-gather): independent array-shaped collectives of the same
// kind with the same attributes (reduction computation, replica groups, channel use,
// dimensions) in one computation become one variadic collective with a tuple result
// and a get-tuple-element per original, up to CombinerMaxCount operands each.
func allReduceCombiner() Pass {
	p := newPass("all-reduce-combiner", "independent all-reduces with equal attributes → one tuple all-reduce", func(m *hlo.Module) (bool, error) {
		return runCombiner(m, hlo.OpAllReduce)
	})
	p.Expands = true
	return p
}

func allGatherCombiner() Pass {
	p := newPass("all-gather-combiner", "independent all-gathers with equal attributes → one tuple all-gather", func(m *hlo.Module) (bool, error) {
		return runCombiner(m, hlo.OpAllGather)
	})
	p.Expands = true
	return p
}

// CombinerMaxCount is the most operands one combined collective takes (XLA's
// combine_threshold_count default, 256).
const CombinerMaxCount = 256

func runCombiner(m *hlo.Module, op hlo.Opcode) (bool, error) {
	mc := newModCtx(m)
	changed := false
	for _, c := range flowComputations(m) {
		c.Renumber()
		groups := map[string][]*hlo.Instruction{}
		var keys []string
		for _, in := range c.Instructions {
			if in.Opcode != op || len(in.Operands) != 1 || !in.Shape.IsArray() {
				continue
			}
			k := collectiveKey(in)
			if groups[k] == nil {
				keys = append(keys, k)
			}
			groups[k] = append(groups[k], in)
		}
		for _, k := range keys {
			g := groups[k]
			if len(g) < 2 {
				continue
			}
			// greedily take collectives in order that depend on none taken so far
			var take []*hlo.Instruction
			for _, in := range g {
				ok := len(take) < CombinerMaxCount
				for _, t := range take {
					if reaches(t, in) {
						ok = false
						break
					}
				}
				if ok {
					take = append(take, in)
				}
			}
			if len(take) < 2 {
				continue
			}
			e := mc.edit(c)
			e.anchor = take[len(take)-1]
			comb := take[0].CloneShallow()
			comb.Name, comb.Operands = "", nil
			var shapes []hlo.Shape
			for _, t := range take {
				comb.Operands = append(comb.Operands, t.Operands[0])
				shapes = append(shapes, t.Shape)
			}
			comb.Shape = hlo.TupleOf(shapes...)
			nc := e.add(comb)
			nc.Shape = hlo.TupleOf(shapes...)
			for i, t := range take {
				g := e.add(&hlo.Instruction{Opcode: hlo.OpGetTupleElement, Operands: []*hlo.Instruction{nc}, Index: i})
				e.replaceOpaque(t, g)
			}
			e.finish()
			c.Renumber()
			changed = true
		}
	}
	return changed, nil
}

// collectiveKey is what two collectives must share to be combined: the element type,
// the reduction computation's kind, the dimensions and every other attribute.
func collectiveKey(in *hlo.Instruction) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%v|", in.Shape.Elem, in.Dimensions)
	if in.ToApply != nil {
		b.WriteString(reducerKind(in.ToApply).String())
	}
	for _, a := range in.Extra {
		if a.Key == "channel_id" { // each has its own channel; the combined one keeps the first's
			b.WriteString("|channel")
			continue
		}
		fmt.Fprintf(&b, "|%s=%s", a.Key, a.Value)
	}
	return b.String()
}

// whileLoopUnroller is XLA's WhileLoopUnroller (xla/hlo/transforms/while_loop_unroller.cc)
// with full unrolling (unroll_factor -1): a loop whose trip count the loop analysis
// derives (the induction variable of while-loop-simplifier: a constant init, a constant
// step, a compare against a constant) and is at most WhileUnrollMaxTrips, whose body
// has at most WhileUnrollMaxBodyOps instructions and whose unrolled size is at most
// WhileUnrollMaxExpanded, is replaced by that many copies of its body applied in
// sequence to the init. The condition must be pure (it is no longer evaluated).
func whileLoopUnroller() Pass {
	p := newPass("while-loop-unroller", "loops with a known trip count ≤ 64 → the body repeated", runWhileUnroller)
	p.Expands = true
	return p
}

// XLA's WhileLoopUnroller thresholds (while_loop_unroller.h: kUnrollTripCountThreshold,
// kUnrollInstructionCountThreshold, kUnrollExpandFactorThreshold).
const (
	WhileUnrollMaxTrips    = 64
	WhileUnrollMaxBodyOps  = 800
	WhileUnrollMaxExpanded = 10000
)

func runWhileUnroller(m *hlo.Module) (bool, error) {
	return inlineEach(m, true, func(e *editor, w *hlo.Instruction) *hlo.Instruction {
		mc := e.mc
		if w.Opcode != hlo.OpWhile || w.Body == nil || w.Condition == nil || !w.Shape.IsTuple() || !mc.pureComp(w.Condition) {
			return nil
		}
		n, ok := tripCountUpTo(mc, w, WhileUnrollMaxTrips+1)
		body := len(w.Body.Instructions)
		if !ok || n > WhileUnrollMaxTrips || body > WhileUnrollMaxBodyOps || n*body > WhileUnrollMaxExpanded {
			return nil
		}
		r := w.Operands[0]
		for k := 0; k < n; k++ {
			r = inlineDeep(e, w.Body, []*hlo.Instruction{r})
		}
		return r
	})
}

// broadcastCanonicalizer is XLA's BroadcastCanonicalizer
// (xla/service/broadcast_canonicalizer.cc): a broadcast whose dimensions are not in
// increasing order becomes a broadcast with sorted dimensions followed by a transpose.
func broadcastCanonicalizer() Pass {
	return expanderPass("broadcast-canonicalizer", "broadcast with unsorted dimensions → sorted broadcast + transpose",
		func(e *editor, x *hlo.Instruction) {
			if x.Opcode != hlo.OpBroadcast || !x.Shape.IsArray() || slices.IsSorted(x.Dimensions) {
				return
			}
			sorted := slices.Clone(x.Dimensions)
			slices.Sort(sorted)
			// the sorted broadcast puts operand dimension j at sorted[j]; the transpose
			// moves it to x.Dimensions[i] for the operand dimension i it really is.
			// operand dims in the order of their target positions
			order := make([]int, len(x.Dimensions))
			for i := range order {
				order[i] = i
			}
			slices.SortFunc(order, func(a, b int) int { return x.Dimensions[a] - x.Dimensions[b] })
			// transposed operand: operand dimension order[j] at position j, so that
			// broadcasting it to sorted dims is monotone
			t := e.transpose(x.Operands[0], order)
			e.replace(x, e.broadcast(t, sorted, x.Shape.Dims))
		})
}

// convertMover is XLA's ConvertMover (xla/hlo/transforms/simplifiers/convert_mover.cc):
// it moves widening converts down and narrowing converts up through the data movement
// ops that commute with a convert (reshape, transpose, reverse, slice, broadcast, copy,
// concatenate), where that cannot change a value: op(convert(a), ...) with every
// operand a widening convert from one type → convert(op(a, ...)); a narrowing
// convert(op(b)) of an op used only by it → op(convert(b)). A concatenate of k widening
// converts so needs one convert, not k. A convert read by anything else stays where it
// is (moving it would duplicate it).
func convertMover() Pass {
	return cleanupPass("convert-mover", "widening converts sink below data movement, narrowing converts rise above it",
		func(e *editor, x *hlo.Instruction) {
			if !x.Shape.IsArray() {
				return
			}
			switch x.Opcode {
			case hlo.OpReshape, hlo.OpTranspose, hlo.OpReverse, hlo.OpSlice, hlo.OpBroadcast, hlo.OpCopy, hlo.OpConcatenate:
				if len(x.Operands) == 0 {
					return
				}
				var src []*hlo.Instruction
				var from hlo.ElemType
				for i, op := range x.Operands {
					if op.Opcode != hlo.OpConvert || !op.Shape.IsArray() || !widens(op.Operands[0].Shape.Elem, op.Shape.Elem) || !e.onlyUsedBy(op, x) {
						return
					}
					if i == 0 {
						from = op.Operands[0].Shape.Elem
					} else if op.Operands[0].Shape.Elem != from {
						return
					}
					src = append(src, op.Operands[0])
				}
				n := e.clone(x, hlo.Array(from, x.Shape.Dims...), src...)
				e.replace(x, e.add(&hlo.Instruction{Opcode: hlo.OpConvert, Operands: []*hlo.Instruction{n}, Shape: hlo.Array(x.Shape.Elem, x.Shape.Dims...)}))
			case hlo.OpConvert:
				y := x.Operands[0]
				if !y.Shape.IsArray() || !widens(x.Shape.Elem, y.Shape.Elem) || len(y.Operands) != 1 || !e.onlyUsedBy(y, x) {
					return
				}
				switch y.Opcode {
				case hlo.OpReshape, hlo.OpTranspose, hlo.OpReverse, hlo.OpSlice, hlo.OpBroadcast, hlo.OpCopy:
				default:
					return
				}
				b := y.Operands[0]
				c := e.add(&hlo.Instruction{Opcode: hlo.OpConvert, Operands: []*hlo.Instruction{b}, Shape: hlo.Array(x.Shape.Elem, b.Shape.Dims...)})
				e.replace(x, e.clone(y, hlo.Array(x.Shape.Elem, y.Shape.Dims...), c))
			}
		})
}

// flattenCallGraph is XLA's FlattenCallGraph (xla/hlo/transforms/simplifiers/
// flatten_call_graph.cc): a computation run from more than one call site in a sequential
// context (the callee of a call, the condition or body of a while) is cloned so that
// every call site has its own. Reducers and other embedded computations are shared as
// before. OpCount does not change (it counts a callee at every call site); the loop
// passes, which leave loops whose body or condition is shared alone, then apply.
func flattenCallGraph() Pass {
	return newPass("flatten-call-graph", "clone computations called from more than one call or while", runFlattenCallGraph)
}

func runFlattenCallGraph(m *hlo.Module) (bool, error) {
	mc := newModCtx(m)
	changed := false
	compNames := map[string]bool{}
	for _, c := range m.Computations {
		compNames[c.Name] = true
	}
	for iter := 0; iter < len(m.Computations)+1; iter++ {
		seen := map[*hlo.Computation]bool{}
		did := false
		// walk flow computations callers-first; the first call site keeps the original
		comps := flowComputations(m)
		for i := len(comps) - 1; i >= 0; i-- {
			for _, in := range comps[i].Instructions {
				for _, slot := range []**hlo.Computation{&in.Calls, &in.Condition, &in.Body} {
					callee := *slot
					if callee == nil || callee.IsFusion || in.Opcode == hlo.OpFusion {
						continue
					}
					if !seen[callee] {
						seen[callee] = true
						continue
					}
					*slot = cloneComputation(mc, m, callee, compNames)
					did = true
				}
			}
		}
		if !did {
			break
		}
		changed = true
	}
	return changed, nil
}

// cloneComputation adds a copy of c to m right after c, with fresh instruction and
// computation names.
func cloneComputation(mc *modCtx, m *hlo.Module, c *hlo.Computation, compNames map[string]bool) *hlo.Computation {
	nc := &hlo.Computation{Name: c.Name, IsFusion: c.IsFusion, Attrs: append([]hlo.Attr(nil), c.Attrs...)}
	for k := 1; compNames[nc.Name]; k++ {
		nc.Name = c.Name + ".clone." + strconv.Itoa(k)
	}
	compNames[nc.Name] = true
	imap := map[*hlo.Instruction]*hlo.Instruction{}
	for _, in := range c.Instructions {
		ni := in.CloneShallow()
		ni.Name = mc.uniqueName(in.Name)
		for j, op := range in.Operands {
			ni.Operands[j] = imap[op]
		}
		imap[in] = ni
		nc.Instructions = append(nc.Instructions, ni)
	}
	nc.Root = imap[c.Root]
	i := slices.Index(m.Computations, c)
	m.Computations = slices.Insert(m.Computations, i+1, nc)
	return nc
}
