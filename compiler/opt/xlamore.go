package opt

import (
	"slices"
	"strconv"
	"strings"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// The passes of this file complete the target-independent passes XLA's CPU pipeline
// runs before and inside its simplification group (xla/service/cpu/cpu_compiler.cc):
// comparison-expander before the group, gather-expander and conditional-simplifier in
// it. See XLAPipeline for where each runs.

// comparisonExpander is XLA's ComparisonExpander (xla/hlo/transforms/expanders/
// comparison_expander.cc): a floating-point compare with type=TOTALORDER becomes a
// signed-integer compare of the operands' bit patterns, each bit pattern x (bitcast to
// the signed integer type of the same width) mapped to select(x < 0, max_int xor x, x),
// so that -NaN < -inf < ... < -0 < 0 < ... < inf < NaN. The zero, min and max constants
// are broadcast to the operand shape as XLA does. Grows the op count (one compare of
// arrays becomes 13 ops).
func comparisonExpander() Pass {
	return expanderPass("comparison-expander", "compare(type=TOTALORDER) of floats → signed compare of sign-flipped bit patterns",
		func(e *editor, x *hlo.Instruction) {
			if x.Opcode != hlo.OpCompare || len(x.Operands) != 2 {
				return
			}
			if t, ok := x.ExtraAttr("type"); !ok || strings.TrimSpace(t) != "TOTALORDER" {
				return
			}
			lhs, rhs := x.Operands[0], x.Operands[1]
			ft := lhs.Shape.Elem
			var st hlo.ElemType
			switch ft {
			case hlo.F16, hlo.BF16:
				st = hlo.S16
			case hlo.F32:
				st = hlo.S32
			case hlo.F64:
				st = hlo.S64
			default:
				return
			}
			dims := lhs.Shape.Dims
			bits := st.Bits()
			intConst := func(v string) *hlo.Instruction {
				c := e.add(&hlo.Instruction{Opcode: hlo.OpConstant, Shape: hlo.Array(st), Literal: v})
				return e.broadcast(c, nil, dims)
			}
			zero := intConst("0")
			// XLA also builds min_value, read only for float types without a negative
			// zero (none here); its DCE deletes it, so it is not built.
			maxv := intConst(strconv.FormatInt(1<<(bits-1)-1, 10))
			flip := func(v *hlo.Instruction) *hlo.Instruction {
				sv := e.op(hlo.OpBitcastConvert, hlo.Array(st, dims...), v)
				flipped := e.op(hlo.OpXor, hlo.Shape{}, maxv, sv)
				neg := e.add(&hlo.Instruction{Opcode: hlo.OpCompare, Shape: hlo.Array(hlo.PRED, dims...),
					Operands: []*hlo.Instruction{sv, zero}, Direction: "LT"})
				return e.op(hlo.OpSelect, hlo.Shape{}, neg, flipped, sv)
			}
			l, r := flip(lhs), flip(rhs)
			nc := &hlo.Instruction{Opcode: hlo.OpCompare, Shape: x.Shape, Operands: []*hlo.Instruction{l, r},
				Direction: x.Direction, Extra: []hlo.Attr{{Key: "type", Value: "SIGNED"}}}
			e.replace(x, e.add(nc))
		})
}

// gatherDims is a gather's dimension numbers and slice sizes.
type gatherDims struct {
	offset, collapsed, startIndexMap, sliceSizes []int
	indexVectorDim                               int
}

// gatherAttrs reads a gather's dimension numbers; ok is false when one is missing or
// malformed, or when the gather has batching dimensions (which XLA's
// BatchedGatherScatterNormalizer removes first).
func gatherAttrs(x *hlo.Instruction) (g gatherDims, ok bool) {
	get := x.IntSetAttr
	var o1, o2, o3, o4 bool
	g.offset, o1 = get("offset_dims")
	g.collapsed, o2 = get("collapsed_slice_dims")
	g.startIndexMap, o3 = get("start_index_map")
	g.sliceSizes, o4 = get("slice_sizes")
	if !o1 || !o2 || !o3 || !o4 {
		return g, false
	}
	for _, k := range []string{"operand_batching_dims", "start_indices_batching_dims"} {
		if b, has := get(k); has && len(b) > 0 {
			return g, false
		}
	}
	iv, has := x.ExtraAttr("index_vector_dim")
	if !has {
		return g, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(iv))
	if err != nil {
		return g, false
	}
	g.indexVectorDim = n
	return g, true
}

// gatherExpander is XLA's GatherExpander in the kEliminateSimpleGathers mode XLA's CPU
// simplification group runs (xla/service/gather_expander.cc): a gather whose
// result is not empty and that either takes whole operand (slice_sizes equal the operand's
// dimensions: a broadcast, ExpandInstruction's GatherIsBroadcast case) or has a loop
// trip count of 1 (the start indices hold one index vector, GatherLoopTripCount) is
// rewritten without a gather:
//   - broadcast case: reshape(operand) without the collapsed dimensions, broadcast into
//     the result with offset_dims as the broadcast dimensions;
//   - trip count 1: dynamic-slice(operand, starts...) of slice_sizes, where the start of
//     operand dimension start_index_map[k] is component k of the index vector (a slice
//     of the indices reshaped to a scalar) and the other starts are 0, then a reshape to
//     the result. XLA builds a one-trip counted while loop around that dynamic-slice
//     (and a dynamic-update-slice into a [1, ...] accumulator); its simplification group
//     (while-loop-simplifier, algsimp) reduces it to this form, which is what is built
//     here directly. Both clamp the start indices alike.
//
// Gathers with more index vectors are left (XLA leaves them too in this mode).
func gatherExpander() Pass {
	return expanderPass("gather-expander", "gathers of one index vector → dynamic-slice + reshape; whole-operand gathers → broadcast",
		func(e *editor, x *hlo.Instruction) {
			if x.Opcode != hlo.OpGather || len(x.Operands) != 2 || !x.Shape.IsArray() || x.Shape.Elements() == 0 {
				return
			}
			g, ok := gatherAttrs(x)
			operand, indices := x.Operands[0], x.Operands[1]
			if !ok || !operand.Shape.IsArray() || !indices.Shape.IsArray() || len(g.sliceSizes) != operand.Shape.Rank() {
				return
			}
			if intsEq(g.sliceSizes, operand.Shape.Dims) {
				var kept []int
				for i, d := range operand.Shape.Dims {
					if !slices.Contains(g.collapsed, i) {
						kept = append(kept, d)
					}
				}
				if len(kept) != len(g.offset) {
					return
				}
				for i, d := range kept {
					if g.offset[i] < 0 || g.offset[i] >= x.Shape.Rank() || x.Shape.Dims[g.offset[i]] != d {
						return
					}
				}
				e.replace(x, e.broadcast(e.reshape(operand, kept), g.offset, x.Shape.Dims))
				return
			}
			rank := indices.Shape.Rank()
			trips, vecLen := 1, 1
			for i, d := range indices.Shape.Dims {
				if i == g.indexVectorDim {
					vecLen = d
				} else {
					trips *= d
				}
			}
			if trips != 1 || vecLen != len(g.startIndexMap) || !isInt(indices.Shape.Elem) {
				return
			}
			starts := make([]*hlo.Instruction, operand.Shape.Rank())
			for k, od := range g.startIndexMap {
				if od < 0 || od >= len(starts) || starts[od] != nil {
					return
				}
				comp := indices
				if g.indexVectorDim < rank {
					sd := make([]hlo.SliceDim, rank)
					for i, d := range indices.Shape.Dims {
						sd[i] = hlo.SliceDim{Start: 0, Limit: d, Stride: 1}
					}
					sd[g.indexVectorDim] = hlo.SliceDim{Start: k, Limit: k + 1, Stride: 1}
					comp = e.sliceOf(indices, sd)
				}
				starts[od] = e.reshape(comp, nil)
			}
			var zero *hlo.Instruction
			for i := range starts {
				if starts[i] == nil {
					if zero == nil {
						zero = e.scalar(indices.Shape.Elem, 0)
					}
					starts[i] = zero
				}
			}
			n := int64(1)
			for _, d := range g.sliceSizes {
				n *= int64(d)
			}
			if n != x.Shape.Elements() {
				return
			}
			ds := e.add(&hlo.Instruction{Opcode: hlo.OpDynamicSlice, Shape: hlo.Array(operand.Shape.Elem, g.sliceSizes...),
				Operands: append([]*hlo.Instruction{operand}, starts...),
				Extra:    []hlo.Attr{{Key: "dynamic_slice_sizes", Value: hlo.IntSet(g.sliceSizes)}}})
			e.replace(x, e.reshape(ds, x.Shape.Dims))
		})
}

// conditionalSimplifier is the constant-selector part of XLA's ConditionalSimplifier
// (xla/hlo/transforms/simplifiers/conditional_simplifier.cc, TryRemoveConditional): a
// conditional whose predicate or branch index is a constant is replaced by the branch
// it selects, inlined (XLA creates a call and inlines it with CallInliner). A branch
// index out of range selects the last branch, as the conditional does. Conditionals
// with side effects in a branch are left, as XLA leaves them. (XLA's other rewrites —
// a two-branch conditional of cheap branches to a select, removing unused tuple
// elements of the result — are not built.)
func conditionalSimplifier() Pass {
	return newPass("conditional-simplifier", "conditionals with a constant predicate or branch index → the selected branch, inlined",
		func(m *hlo.Module) (bool, error) {
			changed, err := rewriteEach(m, true, nil, func(e *editor, x *hlo.Instruction) error {
				if x.Opcode != hlo.OpConditional || len(x.Operands) < 2 {
					return nil
				}
				branches, err := hlo.BranchComputations(m, x)
				if err != nil || len(x.Operands) != len(branches)+1 {
					return nil
				}
				for _, b := range branches {
					if !e.mc.pureComp(b) {
						return nil
					}
				}
				sel := x.Operands[0]
				if sel.Opcode != hlo.OpConstant || !sel.Shape.IsArray() || sel.Shape.Rank() != 0 {
					return nil
				}
				vals, known, err := e.mc.knownLiteral(sel)
				if err != nil || !known || len(vals) != 1 {
					return nil
				}
				var idx int
				if sel.Shape.Elem == hlo.PRED {
					idx = 1 // false_computation
					if vals[0] != 0 {
						idx = 0
					}
				} else {
					v := vals[0]
					idx = len(branches) - 1
					if v >= 0 && v < float64(len(branches)) {
						idx = int(v)
					}
				}
				root := inlineDeep(e, branches[idx], []*hlo.Instruction{x.Operands[1+idx]})
				e.replace(x, root)
				e.kill(x)
				return nil
			})
			if changed {
				removeUnreferenced(m)
			}
			return changed, err
		})
}

// sortSimplifier is XLA's SortSimplifier (xla/hlo/transforms/simplifiers/
// sort_simplifier.cc): a sort of several operands whose result is read only through
// get-tuple-element loses the operands whose result nobody reads and whose comparator
// parameters (2i, 2i+1) the comparator does not read; the comparator is copied without
// those parameters. A sort left with one operand has an array result, which replaces
// the get-tuple-elements of index 0. The old sort is deleted (sort is not on the pure
// list; this pass replaces it, as XLA's does); the dropped operands' producers may
// become dead (DCE's job).
func sortSimplifier() Pass {
	return newPass("sort-simplifier", "variadic sorts lose the operands whose sorted result is not read",
		func(m *hlo.Module) (bool, error) {
			compNames := map[string]bool{}
			for _, c := range m.Computations {
				compNames[c.Name] = true
			}
			changed, err := rewriteEach(m, false, nil, func(e *editor, x *hlo.Instruction) error {
				if x.Opcode != hlo.OpSort || !x.Shape.IsTuple() || x.ToApply == nil || len(x.Operands) < 2 {
					return nil
				}
				users := e.usersOf(x)
				if e.c.Root == x || len(users) == 0 {
					return nil
				}
				used := make([]bool, len(x.Operands))
				for _, u := range users {
					if u.Opcode != hlo.OpGetTupleElement {
						return nil
					}
					used[u.Index] = true
				}
				cmp := x.ToApply
				for _, in := range cmp.Instructions {
					if in.Opcode != hlo.OpParameter {
						for _, op := range in.Operands {
							if op.Opcode == hlo.OpParameter {
								used[op.ParamNum/2] = true
							}
						}
					}
				}
				if cmp.Root != nil && cmp.Root.Opcode == hlo.OpParameter {
					used[cmp.Root.ParamNum/2] = true
				}
				var keep []int
				for i, u := range used {
					if u {
						keep = append(keep, i)
					}
				}
				if len(keep) == len(x.Operands) || len(keep) == 0 {
					return nil
				}
				// The comparator without the dropped parameters.
				nc := &hlo.Computation{Name: cmp.Name, Attrs: append([]hlo.Attr(nil), cmp.Attrs...)}
				for k := 1; compNames[nc.Name]; k++ {
					nc.Name = cmp.Name + ".sort_simplified." + strconv.Itoa(k)
				}
				compNames[nc.Name] = true
				newIdx := map[int]int{}
				for j, i := range keep {
					newIdx[i] = j
				}
				imap := map[*hlo.Instruction]*hlo.Instruction{}
				for _, in := range cmp.Instructions {
					if in.Opcode == hlo.OpParameter {
						j, ok := newIdx[in.ParamNum/2]
						if !ok {
							continue
						}
						ni := in.CloneShallow()
						ni.Name = e.mc.uniqueName(in.Name)
						ni.ParamNum = 2*j + in.ParamNum%2
						imap[in] = ni
						nc.Instructions = append(nc.Instructions, ni)
						continue
					}
					ni := in.CloneShallow()
					ni.Name = e.mc.uniqueName(in.Name)
					for j, op := range in.Operands {
						ni.Operands[j] = imap[op]
					}
					imap[in] = ni
					nc.Instructions = append(nc.Instructions, ni)
				}
				nc.Root = imap[cmp.Root]
				at := slices.Index(m.Computations, cmp)
				m.Computations = slices.Insert(m.Computations, at+1, nc)

				var ops []*hlo.Instruction
				var shapes []hlo.Shape
				for _, i := range keep {
					ops = append(ops, x.Operands[i])
					shapes = append(shapes, x.Operands[i].Shape.Clone())
				}
				s := hlo.TupleOf(shapes...)
				if len(keep) == 1 {
					s = shapes[0]
				}
				ns := x.CloneShallow()
				ns.Name = ""
				ns.Operands = ops
				ns.Shape = s
				ns.ToApply = nc
				ns = e.add(ns)
				for _, u := range users {
					j := newIdx[u.Index]
					if len(keep) == 1 {
						e.replace(u, ns)
					} else {
						e.replace(u, e.add(&hlo.Instruction{Opcode: hlo.OpGetTupleElement, Operands: []*hlo.Instruction{ns}, Index: j}))
					}
				}
				e.kill(x) // sort is not on the pure list: the old one is deleted here
				return nil
			})
			if changed {
				removeUnreferenced(m)
			}
			return changed, err
		})
}
