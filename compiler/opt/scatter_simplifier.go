package opt

import (
	"slices"
	"strconv"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// scatterSimplifier is XLA's ScatterSimplifier (xla/service/scatter_simplifier.cc), which
// XLA's CPU pipeline at XLACommit runs after scatterExpanderSimple when fusion emitters
// are on (the default; XLAPipeline). A scatter not already in XLA's simplified form
// (IsSimplifiedScatter: an operand of rank > 0, index_vector_dim the indices' last
// dimension, at most one scatter dimension in the updates, scatter_dims_to_operand_dims
// the identity, update dimension 0 not a window dimension, update_window_dims sorted, no
// inserted_window_dims) is rewritten into it (ExpandInstruction):
//   - the operands are transposed so that the dimensions scatter_dims_to_operand_dims
//     names come first, in its order, the others after (MakeOperandStartIndexPermutations);
//   - the indices become [index vectors, index vector] (TransformStartIndices: a trailing
//     dimension of 1 reshaped in when index_vector_dim is implicit, index_vector_dim
//     transposed last, the other dimensions collapsed into one by a reshape, or a
//     leading 1 reshaped in for rank 1);
//   - each update has its scatter dimensions transposed first and collapsed into one (or
//     a leading 1 reshaped in when there is none), dimensions of 1 reshaped in for the
//     inserted_window_dims, and the operand permutation applied to its window
//     dimensions (FlattenAndTransposeUpdates, MakeUpdatePermutation);
//   - the new scatter has update_window_dims={1..rank}, inserted_window_dims={},
//     scatter_dims_to_operand_dims={0..k-1}, index_vector_dim=1, and its result (each
//     tuple element for several operands) is transposed back by the inverse permutation
//     unless the permutation is the identity.
//
// A scatter into a scalar (rank 0 operands) is its combiner applied once: to_apply is
// inlined with the operands and the updates as arguments (XLA makes a call and inlines
// it). Transposes and reshapes of the identity are not made (MaybeTranspose); a
// reshape is made for each step that needs one, as XLA does, for algsimp to merge.
// Scatters with batching dimensions (which XLA's batched-gather-scatter-normalizer,
// not built here, removes first) are left. It may grow the op count (the transposes
// and reshapes).
func scatterSimplifier() Pass {
	p := newPass("scatter-simplifier", "a scatter not in XLA's simplified form → transposes/reshapes of its indices, operands and updates, a canonical scatter, the result transposed back (ScatterSimplifier)",
		runScatterSimplifier)
	p.Expands = true
	return p
}

// isSimplifiedScatter is XLA's ScatterSimplifier::IsSimplifiedScatter for a scatter of
// n operands with dimension numbers sd.
func isSimplifiedScatter(x *hlo.Instruction, sd scatterDims, n int) bool {
	if x.Operands[0].Shape.Rank() == 0 {
		return false
	}
	indices, updates := x.Operands[n], x.Operands[n+1]
	return sd.indexVectorDim+1 == indices.Shape.Rank() &&
		updates.Shape.Rank()-len(sd.updateWindow) <= 1 &&
		isIota(sd.toOperand) &&
		!slices.Contains(sd.updateWindow, 0) &&
		slices.IsSorted(sd.updateWindow) &&
		len(sd.insertedWindow) == 0
}

// consistentScatter reports whether the dimension numbers of scatter x (n operands) fit
// its shapes (the hlo verifier does not check them): a malformed scatter is left.
func consistentScatter(x *hlo.Instruction, sd scatterDims, n int) bool {
	rank := x.Operands[0].Shape.Rank()
	idx, upd := x.Operands[n].Shape, x.Operands[n+1].Shape
	if len(sd.updateWindow)+len(sd.insertedWindow) != rank || sd.indexVectorDim < 0 || sd.indexVectorDim > idx.Rank() {
		return false
	}
	vec, batch := 1, idx.Rank()
	if sd.indexVectorDim < idx.Rank() {
		vec, batch = idx.Dims[sd.indexVectorDim], batch-1
	}
	if vec != len(sd.toOperand) || upd.Rank() != len(sd.updateWindow)+batch {
		return false
	}
	for i, d := range sd.toOperand {
		if d < 0 || d >= rank || slices.Contains(sd.toOperand[:i], d) {
			return false
		}
	}
	distinctBelow := func(ds []int, limit int) bool {
		for i, d := range ds {
			if d < 0 || d >= limit || slices.Contains(ds[:i], d) {
				return false
			}
		}
		return true
	}
	return distinctBelow(sd.updateWindow, upd.Rank()) && distinctBelow(sd.insertedWindow, rank)
}

func runScatterSimplifier(m *hlo.Module) (bool, error) {
	changed, err := rewriteEach(m, false, nil, func(e *editor, x *hlo.Instruction) error {
		if x.Opcode != hlo.OpScatter || x.ToApply == nil {
			return nil
		}
		n := hlo.ScatterArity(x)
		sd, ok := scatterAttrs(x)
		if n == 0 || !ok || !consistentScatter(x, sd, n) || isSimplifiedScatter(x, sd, n) {
			return nil
		}
		e.replace(x, simplifyScatter(e, x, sd, n))
		return nil
	})
	if changed {
		removeUnreferenced(m) // a combiner inlined into a scalar scatter's place
	}
	return changed, err
}

// simplifyScatter builds the simplified form of scatter x (n operands) and returns the
// instruction that replaces it.
func simplifyScatter(e *editor, x *hlo.Instruction, sd scatterDims, n int) *hlo.Instruction {
	operands := slices.Clone(x.Operands[:n])
	indices := x.Operands[n]
	updates := slices.Clone(x.Operands[n+1:])
	rank := len(sd.updateWindow) + len(sd.insertedWindow)
	if rank == 0 {
		return inlineDeep(e, x.ToApply, append(operands, updates...))
	}
	// MakeOperandStartIndexPermutations, MakeUpdatePermutation.
	perm := slices.Clone(sd.toOperand)
	for i := 0; i < rank; i++ {
		if !slices.Contains(sd.toOperand, i) {
			perm = append(perm, i)
		}
	}
	inv := make([]int, rank)
	for i, p := range perm {
		inv[p] = i
	}
	updPerm := []int{0}
	for _, p := range perm {
		updPerm = append(updPerm, p+1)
	}
	// TransformStartIndices.
	idx := indices
	ir, ivd := idx.Shape.Rank(), sd.indexVectorDim
	if ivd == ir {
		idx = e.reshape(idx, append(slices.Clone(idx.Shape.Dims), 1))
		ir++
	} else if ivd < ir-1 {
		var p []int
		for i := 0; i < ir; i++ {
			if i != ivd {
				p = append(p, i)
			}
		}
		idx = e.transpose(idx, append(p, ivd))
	}
	if ir > 2 {
		idx = e.reshape(idx, collapseFirst(idx.Shape.Dims, ir-1))
	} else if ir == 1 {
		idx = e.reshape(idx, append([]int{1}, idx.Shape.Dims...))
	}
	// FlattenAndTransposeUpdates, then the update permutation.
	for k, u := range updates {
		ur := u.Shape.Rank()
		var p []int
		for i := 0; i < ur; i++ {
			if !slices.Contains(sd.updateWindow, i) {
				p = append(p, i)
			}
		}
		nScatter := len(p)
		u = e.transpose(u, append(p, sd.updateWindow...))
		switch {
		case nScatter > 1:
			u = e.add(&hlo.Instruction{Opcode: hlo.OpReshape, Operands: []*hlo.Instruction{u},
				Shape: hlo.Array(u.Shape.Elem, collapseFirst(u.Shape.Dims, nScatter)...)})
		case nScatter == 0:
			u = e.add(&hlo.Instruction{Opcode: hlo.OpReshape, Operands: []*hlo.Instruction{u},
				Shape: hlo.Array(u.Shape.Elem, append([]int{1}, u.Shape.Dims...)...)})
		}
		if len(sd.insertedWindow) > 0 {
			at := make([]int, len(sd.insertedWindow))
			for i, d := range sd.insertedWindow {
				at[i] = d + 1
			}
			slices.Sort(at)
			u = e.add(&hlo.Instruction{Opcode: hlo.OpReshape, Operands: []*hlo.Instruction{u},
				Shape: hlo.Array(u.Shape.Elem, insertOnes(u.Shape.Dims, at)...)})
		}
		updates[k] = e.transpose(u, updPerm)
	}
	for k, o := range operands {
		operands[k] = e.transpose(o, perm)
	}
	s := x.CloneShallow()
	s.Name = ""
	s.Metadata = x.Metadata
	s.Operands = append(append(operands, idx), updates...)
	s.Extra = nil
	for _, a := range x.Extra {
		switch a.Key {
		case "update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims", "index_vector_dim",
			"input_batching_dims", "scatter_indices_batching_dims":
		default:
			s.Extra = append(s.Extra, a)
		}
	}
	s.Extra = append(s.Extra,
		hlo.Attr{Key: "update_window_dims", Value: hlo.IntSet(seqFrom(1, rank+1))},
		hlo.Attr{Key: "inserted_window_dims", Value: "{}"},
		hlo.Attr{Key: "scatter_dims_to_operand_dims", Value: hlo.IntSet(seqFrom(0, len(sd.toOperand)))},
		hlo.Attr{Key: "index_vector_dim", Value: strconv.Itoa(1)})
	res := e.add(s)
	if isIota(perm) {
		return res
	}
	if n == 1 {
		return e.transpose(res, inv)
	}
	items := make([]*hlo.Instruction, n)
	for i := range items {
		g := e.add(&hlo.Instruction{Opcode: hlo.OpGetTupleElement, Operands: []*hlo.Instruction{res}, Index: i})
		items[i] = e.transpose(g, inv)
	}
	return e.op(hlo.OpTuple, hlo.Shape{}, items...)
}

// collapseFirst is dims with its first k dimensions collapsed into one (CollapseFirstNDims).
func collapseFirst(dims []int, k int) []int {
	p := 1
	for _, d := range dims[:k] {
		p *= d
	}
	return append([]int{p}, dims[k:]...)
}

// insertOnes is dims with dimensions of size 1 at the result positions at (sorted), as
// XLA's InsertDegenerateDims.
func insertOnes(dims, at []int) []int {
	out := make([]int, 0, len(dims)+len(at))
	j := 0
	for i := 0; i < len(dims)+len(at); i++ {
		if slices.Contains(at, i) {
			out = append(out, 1)
		} else {
			out = append(out, dims[j])
			j++
		}
	}
	return out
}

// seqFrom is lo, lo+1, ..., hi-1.
func seqFrom(lo, hi int) []int {
	out := make([]int, 0, max(hi-lo, 0))
	for i := lo; i < hi; i++ {
		out = append(out, i)
	}
	return out
}
