package opt

import (
	"github.com/tpucost/tpucost/compiler/hlo"
)

// eachElementwise runs f on every live pure elementwise instruction of every flow
// computation, in order, with the anchor set.
func eachElementwise(m *hlo.Module, f func(e *editor, x *hlo.Instruction)) bool {
	keep := func(_ *modCtx, x *hlo.Instruction) bool {
		return elementwiseOpcode(x.Opcode) && x.Shape.IsArray() && x.Shape.Rank() > 0
	}
	changed, _ := rewriteEach(m, false, keep, func(e *editor, x *hlo.Instruction) error { f(e, x); return nil })
	return changed
}

// scalarOperandOK reports whether operand i of x may stay a rank-0 value when x is
// rebuilt at another shape (select's predicate, clamp's bounds).
func scalarOperandOK(x *hlo.Instruction, i int) bool {
	return x.Opcode == hlo.OpSelect && i == 0 || x.Opcode == hlo.OpClamp && i != 1
}

func reshapeMover() Pass {
	return newPass("reshape-mover",
		"sinks reshapes and transposes below elementwise ops whose array operands are all the same reshape/transpose (or broadcast scalars), so they meet and cancel",
		func(m *hlo.Module) (bool, error) { return eachElementwise(m, sinkReshape), nil })
}

// sinkReshape is XLA's ReshapeMover: elementwise(transpose(a, p), transpose(b, p), ...)
// → transpose(elementwise(a, b, ...), p), and likewise for reshapes from one input shape;
// operands that are broadcasts of scalars are re-broadcast to the input shape, rank-0
// operands of select/clamp stay. It moves only when OpCount does not grow (the moved
// reshapes/transposes die), so a sequence of moves carries a transpose down to the
// inverse transpose, where algsimp cancels the pair.
func sinkReshape(e *editor, x *hlo.Instruction) {
	var kind *hlo.Instruction
	for _, op := range x.Operands {
		if op.Opcode == hlo.OpTranspose || op.Opcode == hlo.OpReshape {
			kind = op
			break
		}
	}
	if kind == nil {
		return
	}
	in := kind.Operands[0].Shape.Dims
	delta := 1 // the transpose/reshape after x
	seen := map[*hlo.Instruction]bool{}
	for i, op := range x.Operands {
		switch {
		case op.Opcode == kind.Opcode && intsEq(op.Operands[0].Shape.Dims, in) &&
			(op.Opcode == hlo.OpReshape || intsEq(op.Dimensions, kind.Dimensions)):
			if !seen[op] && e.wouldDie(op, x) {
				delta--
			}
		case scalarBroadcast(op):
			if !seen[op] {
				delta++
				if e.wouldDie(op, x) {
					delta--
				}
			}
		case op.Shape.Rank() == 0 && scalarOperandOK(x, i):
		default:
			return
		}
		seen[op] = true
	}
	if delta > 0 {
		return
	}
	ops := make([]*hlo.Instruction, len(x.Operands))
	rebroadcast := map[*hlo.Instruction]*hlo.Instruction{}
	for i, op := range x.Operands {
		switch {
		case op.Opcode == kind.Opcode:
			ops[i] = op.Operands[0]
		case scalarBroadcast(op):
			if rebroadcast[op] == nil {
				rebroadcast[op] = e.broadcast(op.Operands[0], nil, in)
			}
			ops[i] = rebroadcast[op]
		default:
			ops[i] = op
		}
	}
	y := e.clone(x, hlo.Array(x.Shape.Elem, in...), ops...)
	if kind.Opcode == hlo.OpTranspose {
		e.replace(x, e.transpose(y, kind.Dimensions))
	} else {
		e.replace(x, e.reshape(y, x.Shape.Dims))
	}
}

func broadcastSinking() Pass {
	return newPass("broadcast-sinking",
		"elementwise ops of broadcasts → a broadcast of the elementwise op on the smaller operands",
		func(m *hlo.Module) (bool, error) { return eachElementwise(m, sinkBroadcast), nil })
}

// sinkBroadcast is AlgebraicSimplifier's TryToSinkBroadcastAfterOpWithUniqueNonScalar-
// Operand, generalized: elementwise(broadcast(a, d), broadcast(b, d), broadcast(s), ...)
// with a, b of one shape and s scalars → broadcast(elementwise(a, b, broadcast(s)), d);
// when every operand is a broadcast scalar the op runs on the scalars. The elementwise
// op then runs on fewer elements, and on constants it becomes foldable. It applies only
// when OpCount does not grow (the old broadcasts die).
func sinkBroadcast(e *editor, x *hlo.Instruction) {
	var ref *hlo.Instruction // a broadcast of a non-scalar
	for _, op := range x.Operands {
		if op.Opcode == hlo.OpBroadcast && op.Operands[0].Shape.Rank() > 0 {
			ref = op
			break
		}
	}
	var small []int // the dimensions the op runs at
	var bd []int
	if ref != nil {
		small, bd = ref.Operands[0].Shape.Dims, ref.Dimensions
	}
	delta := 1 // the broadcast after x
	seen := map[*hlo.Instruction]bool{}
	for i, op := range x.Operands {
		switch {
		case op.Opcode == hlo.OpBroadcast && op.Operands[0].Shape.Rank() > 0:
			if !intsEq(op.Operands[0].Shape.Dims, small) || !intsEq(op.Dimensions, bd) {
				return
			}
		case scalarBroadcast(op):
			if ref != nil && !seen[op] {
				delta++ // re-broadcast the scalar to small
			}
		case op.Shape.Rank() == 0 && scalarOperandOK(x, i):
		default:
			return
		}
		if op.Opcode == hlo.OpBroadcast && !seen[op] && e.wouldDie(op, x) {
			delta--
		}
		seen[op] = true
	}
	if delta > 0 {
		return
	}
	ops := make([]*hlo.Instruction, len(x.Operands))
	rebroadcast := map[*hlo.Instruction]*hlo.Instruction{}
	for i, op := range x.Operands {
		switch {
		case op.Opcode != hlo.OpBroadcast:
			ops[i] = op
		case op.Operands[0].Shape.Rank() > 0 || ref == nil:
			ops[i] = op.Operands[0]
		default:
			if rebroadcast[op] == nil {
				rebroadcast[op] = e.broadcast(op.Operands[0], nil, small)
			}
			ops[i] = rebroadcast[op]
		}
	}
	y := e.clone(x, hlo.Array(x.Shape.Elem, small...), ops...)
	e.replace(x, e.broadcast(y, bd, x.Shape.Dims))
}

func transposeFolding() Pass {
	return newPass("transpose-folding",
		"folds transposes of dot and convolution operands into their dimension numbers, and a transpose of a dot or convolution result into the op",
		runTransposeFolding)
}

// runTransposeFolding is XLA's TransposeFolding plus algsimp's transpose-of-dot rule:
//
//   - dot(transpose(a, p), b) → dot(a, b) with a's batch and contracting dimensions
//     mapped through p, when p keeps the order of a's free dimensions (the dot's result
//     lists free dimensions in operand order); likewise for the right operand;
//   - convolution(transpose(x, p), k) and convolution(x, transpose(k, p)) → the
//     convolution with its dimension labels mapped through p (always possible);
//   - transpose(dot(a, b)) whose permutation swaps the two blocks of free dimensions
//     (batch dimensions staying first) → dot(b, a); transpose(convolution) → the
//     convolution with its output labels permuted; both only when the transpose is the
//     op's only user.
func runTransposeFolding(m *hlo.Module) (bool, error) {
	return rewriteEach(m, false, (*modCtx).pure, func(e *editor, x *hlo.Instruction) error {
		switch x.Opcode {
		case hlo.OpDot:
			foldDotOperands(e, x)
		case hlo.OpConvolution:
			foldConvOperands(e, x)
		case hlo.OpTranspose:
			a := x.Operands[0]
			if !e.onlyUsedBy(a, x) || !e.mc.pure(a) {
				return nil
			}
			switch a.Opcode {
			case hlo.OpDot:
				if y := swapDot(e, x, a); y != nil {
					e.replace(x, y)
				}
			case hlo.OpConvolution:
				if a.Conv == nil {
					return nil
				}
				inv := invert(x.Dimensions)
				cd := cloneConv(a.Conv)
				cd.OutputBatch, cd.OutputFeature = inv[cd.OutputBatch], inv[cd.OutputFeature]
				for j, d := range cd.OutputSpatial {
					cd.OutputSpatial[j] = inv[d]
				}
				y := a.CloneShallow()
				y.Name = ""
				y.Conv = cd
				y.Shape = hlo.Array(x.Shape.Elem, x.Shape.Dims...)
				e.replace(x, e.add(y))
			}
		}
		return nil
	})
}

func dotDims(x *hlo.Instruction) hlo.DotDims {
	if x.Dot != nil {
		return hlo.DotDims{LhsBatch: append([]int{}, x.Dot.LhsBatch...), LhsContracting: append([]int{}, x.Dot.LhsContracting...),
			RhsBatch: append([]int{}, x.Dot.RhsBatch...), RhsContracting: append([]int{}, x.Dot.RhsContracting...)}
	}
	return hlo.DotDims{LhsContracting: []int{x.Operands[0].Shape.Rank() - 1}, RhsContracting: []int{0}}
}

func foldDotOperands(e *editor, x *hlo.Instruction) {
	for k := 0; k < 2; k++ {
		t := x.Operands[k]
		if t.Opcode != hlo.OpTranspose {
			continue
		}
		dd := dotDims(x)
		batch, contr := &dd.LhsBatch, &dd.LhsContracting
		if k == 1 {
			batch, contr = &dd.RhsBatch, &dd.RhsContracting
		}
		p := t.Dimensions
		last := -1
		ok := true
		for _, f := range freeDims(t.Shape.Rank(), *batch, *contr) {
			if p[f] < last {
				ok = false
			}
			last = p[f]
		}
		if !ok {
			continue
		}
		for j, d := range *batch {
			(*batch)[j] = p[d]
		}
		for j, d := range *contr {
			(*contr)[j] = p[d]
		}
		x.Dot = &dd
		e.setOperand(x, k, t.Operands[0])
	}
}

func cloneConv(cd *hlo.ConvDims) *hlo.ConvDims {
	c := *cd
	c.InputSpatial = append([]int{}, cd.InputSpatial...)
	c.KernelSpatial = append([]int{}, cd.KernelSpatial...)
	c.OutputSpatial = append([]int{}, cd.OutputSpatial...)
	return &c
}

func foldConvOperands(e *editor, x *hlo.Instruction) {
	if x.Conv == nil {
		return
	}
	for k := 0; k < 2; k++ {
		t := x.Operands[k]
		if t.Opcode != hlo.OpTranspose {
			continue
		}
		p := t.Dimensions
		cd := cloneConv(x.Conv)
		if k == 0 {
			cd.InputBatch, cd.InputFeature = p[cd.InputBatch], p[cd.InputFeature]
			for j, d := range cd.InputSpatial {
				cd.InputSpatial[j] = p[d]
			}
		} else {
			cd.KernelInput, cd.KernelOutput = p[cd.KernelInput], p[cd.KernelOutput]
			for j, d := range cd.KernelSpatial {
				cd.KernelSpatial[j] = p[d]
			}
		}
		x.Conv = cd
		e.setOperand(x, k, t.Operands[0])
	}
}

// swapDot returns dot(b, a) equal to transpose x of d = dot(a, b), or nil.
func swapDot(e *editor, x, d *hlo.Instruction) *hlo.Instruction {
	dd := dotDims(d)
	nb := len(dd.LhsBatch)
	nl := d.Operands[0].Shape.Rank() - nb - len(dd.LhsContracting)
	nr := d.Operands[1].Shape.Rank() - nb - len(dd.RhsContracting)
	if nl == 0 || nr == 0 {
		return nil
	}
	want := make([]int, 0, nb+nl+nr)
	for i := 0; i < nb; i++ {
		want = append(want, i)
	}
	for i := 0; i < nr; i++ {
		want = append(want, nb+nl+i)
	}
	for i := 0; i < nl; i++ {
		want = append(want, nb+i)
	}
	if !intsEq(x.Dimensions, want) {
		return nil
	}
	y := d.CloneShallow()
	y.Name = ""
	y.Operands = []*hlo.Instruction{d.Operands[1], d.Operands[0]}
	y.Dot = &hlo.DotDims{LhsBatch: dd.RhsBatch, LhsContracting: dd.RhsContracting, RhsBatch: dd.LhsBatch, RhsContracting: dd.LhsContracting}
	return e.add(y)
}

func invert(p []int) []int {
	inv := make([]int, len(p))
	for i, d := range p {
		inv[d] = i
	}
	return inv
}
