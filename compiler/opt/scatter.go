package opt

import (
	"slices"
	"strconv"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// scatterExpander is XLA's ScatterExpander in its kEliminateAllScatters mode
// (xla/service/scatter_expander.cc): XLA's CPU pipeline runs it between its two
// simplification groups when fusion emitters are off (xla_cpu_use_fusion_emitters=false;
// the second group, post_scatter_expansion_simplification, cleans up after it). With
// fusion emitters on, XLA's default at XLACommit, the pipeline runs
// scatterExpanderSimple and scatterSimplifier there instead (XLAPipeline). Every
// scatter of one operand whose updates are not empty becomes a counted while
// loop over its index vectors (WhileUtil::MakeCountedLoop: state (i, operand, indices,
// updates), condition i < trip count, body ending in i + 1), as ExpandInstruction
// builds it:
//   - the indices are canonicalized to [trip count] (scalar indices) or [trip count,
//     index vector] (CanonicalizeScatterIndices: index_vector_dim moved last, the
//     scatter dimensions collapsed), the updates to [trip count, window dims...]
//     (PermuteScatterAndWindowDims, AdjustScatterDims);
//   - each iteration (ScatterLoopBody) takes index vector i (a dynamic-slice), expands
//     it into operand space (slices of it concatenated with zeros, per
//     scatter_dims_to_operand_dims), dynamic-slices update row i (reshaped, the
//     inserted_window_dims inserted), dynamic-slices the operand window there, combines
//     the two with a map of the scatter's to_apply, keeps the old window where the index
//     is out of bounds (CheckIndexValidity: 0 ≤ start ≤ operand dims − window, reduced
//     with and), and writes the window back with a dynamic-update-slice. Vector start
//     indices become one slice+reshape per dimension (MakeDynamicSliceHlo).
//
// Empty updates forward the operand. Scatters of several operands (a tuple result), of
// batching dimensions or of other than s32 indices are left. It grows the op count by
// about 45 ops per scatter (counted once, not per iteration, by OpCount) and turns a
// scatter into a loop of trip count many small ops.
func scatterExpander() Pass {
	p := newPass("scatter-expander", "every scatter → a counted while loop of dynamic-slice, map and dynamic-update-slice (kEliminateAllScatters; XLA's CPU order without fusion emitters)",
		func(m *hlo.Module) (bool, error) { return runScatterExpander(m, false) })
	p.Expands = true
	return p
}

// scatterExpanderSimple is XLA's ScatterExpander in its kEliminateSimpleScatters mode,
// which XLA's CPU pipeline at XLACommit runs between its simplification groups with
// fusion emitters on (the default): only a scatter whose loop would run once
// (ScatterIndicesCount, the product of the indices' dimensions other than
// index_vector_dim, is 1: InstructionMatchesPattern) is expanded, into the same loop
// scatterExpander builds; every other scatter stays a scatter. The simplification group
// after it removes the one-trip loop (while-loop-simplifier inlines its body; algsimp,
// tuple-simplifier and constant-folding fold the rest): what is left is a
// dynamic-update-slice of the operand at the index, writing a select, by the bounds
// check, between the combiner's map over the operand window and the update, and the old
// window (16 ops on scatter_expander_test.cc's trivial scatter; TestScatterExpanderSimple).
// It has scatterExpander's limits: a scatter of several operands, which XLA's simple mode
// expands too, is left.
func scatterExpanderSimple() Pass {
	p := newPass("scatter-expander-simple", "a scatter of one index vector (trip count 1) → the one-trip loop of scatter-expander (kEliminateSimpleScatters, XLA's CPU default)",
		func(m *hlo.Module) (bool, error) { return runScatterExpander(m, true) })
	p.Expands = true
	return p
}

// scatterTripCount is XLA's ScatterIndicesCount: the number of index vectors of a
// scatter, the product of its indices' dimensions other than index_vector_dim.
func scatterTripCount(indices hlo.Shape, indexVectorDim int) int {
	trips := 1
	for i, d := range indices.Dims {
		if i != indexVectorDim {
			trips *= d
		}
	}
	return trips
}

// scatterDims is a scatter's dimension numbers.
type scatterDims struct {
	updateWindow, insertedWindow, toOperand []int
	indexVectorDim                          int
}

func scatterAttrs(x *hlo.Instruction) (s scatterDims, ok bool) {
	get := x.IntSetAttr
	var o1, o2, o3 bool
	s.updateWindow, o1 = get("update_window_dims")
	s.insertedWindow, o2 = get("inserted_window_dims")
	s.toOperand, o3 = get("scatter_dims_to_operand_dims")
	if !o1 || !o2 || !o3 {
		return s, false
	}
	for _, k := range []string{"input_batching_dims", "scatter_indices_batching_dims"} {
		if b, has := get(k); has && len(b) > 0 {
			return s, false
		}
	}
	iv, has := x.ExtraAttr("index_vector_dim")
	if !has {
		return s, false
	}
	n, err := strconv.Atoi(iv)
	if err != nil {
		return s, false
	}
	s.indexVectorDim = n
	return s, true
}

// runScatterExpander expands every scatter it can (scatterExpander), or with simple
// only those of trip count 1 (scatterExpanderSimple).
func runScatterExpander(m *hlo.Module, simple bool) (bool, error) {
	compNames := map[string]bool{}
	for _, c := range m.Computations {
		compNames[c.Name] = true
	}
	return rewriteEach(m, false, nil, func(e *editor, x *hlo.Instruction) error {
		if x.Opcode != hlo.OpScatter || len(x.Operands) != 3 || x.ToApply == nil || !x.Shape.IsArray() {
			return nil
		}
		sd, ok := scatterAttrs(x)
		operand, indices, updates := x.Operands[0], x.Operands[1], x.Operands[2]
		if !ok || !isInt(indices.Shape.Elem) || indices.Shape.Elem != hlo.S32 {
			return nil
		}
		if simple && scatterTripCount(indices.Shape, sd.indexVectorDim) != 1 {
			return nil
		}
		if updates.Shape.Elements() == 0 {
			e.replace(x, operand)
			return nil
		}
		expandScatter(e, m, compNames, x, sd)
		return nil
	})
}

// loopComp builds a new computation of the module (a loop condition or body, a
// reducer): instructions get module-unique names and inferred shapes.
type loopComp struct {
	mc *modCtx
	c  *hlo.Computation
}

func newLoopComp(mc *modCtx, names map[string]bool, base string) *loopComp {
	name := base
	for k := 1; names[name]; k++ {
		name = base + "." + strconv.Itoa(k)
	}
	names[name] = true
	return &loopComp{mc: mc, c: &hlo.Computation{Name: name}}
}

func (b *loopComp) add(in *hlo.Instruction) *hlo.Instruction {
	s, err := hlo.InferShape(in)
	if err != nil {
		internalf("new %s in %s: %v", in.Opcode, b.c.Name, err)
	}
	in.Shape = s
	in.Name = b.mc.uniqueName(in.Opcode.String())
	b.c.Instructions = append(b.c.Instructions, in)
	return in
}

func (b *loopComp) op(op hlo.Opcode, s hlo.Shape, operands ...*hlo.Instruction) *hlo.Instruction {
	return b.add(&hlo.Instruction{Opcode: op, Shape: s, Operands: operands})
}

func (b *loopComp) constant(s hlo.Shape, lit string) *hlo.Instruction {
	return b.add(&hlo.Instruction{Opcode: hlo.OpConstant, Shape: s, Literal: lit})
}

func (b *loopComp) reshape(x *hlo.Instruction, dims []int) *hlo.Instruction {
	return b.op(hlo.OpReshape, hlo.Array(x.Shape.Elem, dims...), x)
}

func (b *loopComp) slice1(x *hlo.Instruction, k int) *hlo.Instruction {
	return b.add(&hlo.Instruction{Opcode: hlo.OpSlice, Operands: []*hlo.Instruction{x},
		Slice: []hlo.SliceDim{{Start: k, Limit: k + 1, Stride: 1}}})
}

// scalars splits an s32[n] start vector into n scalars (slice + reshape each), as
// XLA's MakeDynamicSliceHlo and MakeDynamicUpdateSliceHlo do.
func (b *loopComp) scalars(v *hlo.Instruction) []*hlo.Instruction {
	out := make([]*hlo.Instruction, v.Shape.Dims[0])
	for k := range out {
		out[k] = b.reshape(b.slice1(v, k), nil)
	}
	return out
}

func (b *loopComp) dynSlice(x, start *hlo.Instruction, sizes []int) *hlo.Instruction {
	return b.add(&hlo.Instruction{Opcode: hlo.OpDynamicSlice, Shape: hlo.Array(x.Shape.Elem, sizes...),
		Operands: append([]*hlo.Instruction{x}, b.scalars(start)...),
		Extra:    []hlo.Attr{{Key: "dynamic_slice_sizes", Value: hlo.IntSet(sizes)}}})
}

// padZeros pads an s32[1] vector with hi zeros at the end (PadVectorWithZeros).
func (b *loopComp) padZeros(v *hlo.Instruction, hi int) *hlo.Instruction {
	if hi == 0 {
		return v
	}
	z := b.constant(hlo.Array(v.Shape.Elem), "0")
	return b.add(&hlo.Instruction{Opcode: hlo.OpPad, Operands: []*hlo.Instruction{v, z},
		Padding: []hlo.PadDim{{Lo: 0, Hi: hi}}})
}

// expandScatter replaces scatter x (in e's computation) by its counted loop.
func expandScatter(e *editor, m *hlo.Module, names map[string]bool, x *hlo.Instruction, sd scatterDims) {
	operand, indices, updates := x.Operands[0], x.Operands[1], x.Operands[2]
	ir := indices.Shape.Rank()
	ivd := sd.indexVectorDim
	trips := scatterTripCount(indices.Shape, ivd)
	// CanonicalizeScatterIndices.
	ti := indices
	if ivd < ir && ivd != ir-1 {
		var perm []int
		for i := 0; i < ir; i++ {
			if i != ivd {
				perm = append(perm, i)
			}
		}
		ti = e.transpose(indices, append(perm, ivd))
	}
	scalarIdx := ivd == ir || (ir == ivd+1 && indices.Shape.Dims[ivd] == 1)
	idxDims := 1
	if scalarIdx {
		idxDims = 0
	}
	var canonIdx *hlo.Instruction
	if ti.Shape.Rank() == idxDims {
		canonIdx = e.reshape(ti, append([]int{1}, ti.Shape.Dims...))
	} else {
		canonIdx = e.reshape(ti, append([]int{trips}, ti.Shape.Dims[ti.Shape.Rank()-idxDims:]...))
	}
	// PermuteScatterAndWindowDims, AdjustScatterDims.
	ur := updates.Shape.Rank()
	var perm []int
	for i := 0; i < ur; i++ {
		if !slices.Contains(sd.updateWindow, i) {
			perm = append(perm, i)
		}
	}
	perm = append(perm, sd.updateWindow...)
	cu := e.transpose(updates, perm)
	nScatter := ir
	if ivd < ir {
		nScatter--
	}
	if nScatter == 0 {
		cu = e.reshape(cu, append([]int{1}, cu.Shape.Dims...))
	} else {
		cu = e.reshape(cu, append([]int{trips}, cu.Shape.Dims[nScatter:]...))
	}

	s32 := hlo.Array(hlo.S32)
	state := []*hlo.Instruction{operand, canonIdx, cu}
	stateShapes := []hlo.Shape{s32}
	for _, s := range state {
		stateShapes = append(stateShapes, s.Shape.Clone())
	}
	stateShape := hlo.TupleOf(stateShapes...)

	// Condition: get-tuple-element(p, 0) < trips.
	cond := newLoopComp(e.mc, names, "scatter_cond")
	cp := cond.add(&hlo.Instruction{Opcode: hlo.OpParameter, Shape: stateShape.Clone(), ParamNum: 0})
	ci := cond.add(&hlo.Instruction{Opcode: hlo.OpGetTupleElement, Operands: []*hlo.Instruction{cp}, Index: 0})
	cond.c.Root = cond.add(&hlo.Instruction{Opcode: hlo.OpCompare, Shape: hlo.Array(hlo.PRED),
		Operands: []*hlo.Instruction{ci, cond.constant(s32, strconv.Itoa(trips))}, Direction: "LT"})

	// The and-reducer of CheckIndexValidity.
	and := newLoopComp(e.mc, names, "scatter_valid_and")
	a0 := and.add(&hlo.Instruction{Opcode: hlo.OpParameter, Shape: hlo.Array(hlo.PRED), ParamNum: 0})
	a1 := and.add(&hlo.Instruction{Opcode: hlo.OpParameter, Shape: hlo.Array(hlo.PRED), ParamNum: 1})
	and.c.Root = and.op(hlo.OpAnd, hlo.Shape{}, a0, a1)

	// Body: ScatterLoopBody.
	body := newLoopComp(e.mc, names, "scatter_body")
	bp := body.add(&hlo.Instruction{Opcode: hlo.OpParameter, Shape: stateShape.Clone(), ParamNum: 0})
	gte := func(i int) *hlo.Instruction {
		return body.add(&hlo.Instruction{Opcode: hlo.OpGetTupleElement, Operands: []*hlo.Instruction{bp}, Index: i})
	}
	iv, bOperand, bIdx, bUpd := gte(0), gte(1), gte(2), gte(3)
	ivec := body.add(&hlo.Instruction{Opcode: hlo.OpBroadcast, Shape: hlo.Array(hlo.S32, 1), Operands: []*hlo.Instruction{iv},
		Dimensions: []int{}, HasDimensions: true})
	var indexVector *hlo.Instruction
	if bIdx.Shape.Rank() == 1 {
		indexVector = body.dynSlice(bIdx, ivec, []int{1})
	} else {
		n := bIdx.Shape.Dims[1]
		iv2 := body.dynSlice(bIdx, body.padZeros(ivec, 1), []int{1, n})
		indexVector = body.reshape(iv2, []int{n})
	}
	or := operand.Shape.Rank()
	var start *hlo.Instruction
	if or == 0 {
		start = body.constant(hlo.Array(hlo.S32, 0), "{}")
	} else {
		zero := body.constant(hlo.Array(hlo.S32, 1), "{0}")
		var comps []*hlo.Instruction
		for i := 0; i < or; i++ {
			if k := slices.Index(sd.toOperand, i); k >= 0 {
				comps = append(comps, body.slice1(indexVector, k))
			} else {
				comps = append(comps, zero)
			}
		}
		start = body.add(&hlo.Instruction{Opcode: hlo.OpConcatenate, Operands: comps, Dimensions: []int{0}, HasDimensions: true})
	}
	uDims := bUpd.Shape.Dims
	bounds := append([]int{1}, uDims[1:]...)
	us := body.dynSlice(bUpd, body.padZeros(ivec, len(uDims)-1), bounds)
	us = body.reshape(us, uDims[1:])
	// InsertDegenerateDims(inserted_window_dims).
	var win []int
	rest := us.Shape.Dims
	for i, j := 0, 0; i < len(rest)+len(sd.insertedWindow); i++ {
		if slices.Contains(sd.insertedWindow, i) {
			win = append(win, 1)
		} else {
			win = append(win, rest[j])
			j++
		}
	}
	us = body.reshape(us, win)
	os := body.dynSlice(bOperand, start, win)
	// CheckIndexValidity.
	var valid *hlo.Instruction
	if or > 0 {
		z := body.add(&hlo.Instruction{Opcode: hlo.OpBroadcast, Shape: hlo.Array(hlo.S32, or),
			Operands: []*hlo.Instruction{body.constant(s32, "0")}, Dimensions: []int{}, HasDimensions: true})
		neg := body.add(&hlo.Instruction{Opcode: hlo.OpCompare, Shape: hlo.Array(hlo.PRED, or), Operands: []*hlo.Instruction{z, start}, Direction: "LE"})
		maxv := make([]float64, or)
		for i := range maxv {
			maxv[i] = float64(operand.Shape.Dims[i] - win[i])
		}
		mc := body.constant(hlo.Array(hlo.S32, or), formatLiteral(hlo.Array(hlo.S32, or), maxv))
		oob := body.add(&hlo.Instruction{Opcode: hlo.OpCompare, Shape: hlo.Array(hlo.PRED, or), Operands: []*hlo.Instruction{mc, start}, Direction: "GE"})
		both := body.op(hlo.OpAnd, hlo.Shape{}, neg, oob)
		red := body.add(&hlo.Instruction{Opcode: hlo.OpReduce, Operands: []*hlo.Instruction{both, body.constant(hlo.Array(hlo.PRED), "true")},
			Dimensions: []int{0}, HasDimensions: true, ToApply: and.c})
		valid = body.add(&hlo.Instruction{Opcode: hlo.OpBroadcast, Shape: hlo.Array(hlo.PRED, win...), Operands: []*hlo.Instruction{red},
			Dimensions: []int{}, HasDimensions: true})
	} else {
		valid = body.constant(hlo.Array(hlo.PRED), "true")
	}
	mapped := body.add(&hlo.Instruction{Opcode: hlo.OpMap, Operands: []*hlo.Instruction{os, us}, ToApply: x.ToApply,
		Dimensions: seq(len(win)), HasDimensions: true})
	sel := body.op(hlo.OpSelect, hlo.Shape{}, valid, mapped, os)
	dus := body.add(&hlo.Instruction{Opcode: hlo.OpDynamicUpdateSlice, Operands: append([]*hlo.Instruction{bOperand, sel}, body.scalars(start)...)})
	next := body.op(hlo.OpAdd, hlo.Shape{}, iv, body.constant(s32, "1"))
	body.c.Root = body.op(hlo.OpTuple, hlo.Shape{}, next, dus, bIdx, bUpd)

	// Insert the new computations before the one being edited (callees first).
	at := slices.Index(m.Computations, e.c)
	m.Computations = slices.Insert(m.Computations, at, and.c, cond.c, body.c)

	init := e.op(hlo.OpTuple, hlo.Shape{}, append([]*hlo.Instruction{e.scalar(hlo.S32, 0)}, state...)...)
	w := e.add(&hlo.Instruction{Opcode: hlo.OpWhile, Operands: []*hlo.Instruction{init}, Condition: cond.c, Body: body.c})
	res := e.add(&hlo.Instruction{Opcode: hlo.OpGetTupleElement, Operands: []*hlo.Instruction{w}, Index: 1})
	e.replace(x, res)
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
