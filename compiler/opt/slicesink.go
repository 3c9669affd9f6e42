package opt

import (
	"strconv"
	"strings"

	"github.com/tpucost/tpucost/compiler/hlo"
)

func sliceSinker() Pass {
	return newPass("slice-sinker",
		"elementwise ops that apply one op to slices that tile the same arrays → the op on the whole arrays, sliced afterwards",
		runSliceSinker)
}

// runSliceSinker is XLA's SliceSinker: a group of elementwise instructions with the same
// opcode and attributes, each of whose operands are unit-stride slices — with one slice
// window per instruction — of the same source arrays, where the windows of the group are
// disjoint and together cover the whole source shape, is replaced by one instruction on
// the sources and a slice of its result per member. No element is computed twice, and
// OpCount shrinks as the old slices die (the rewrite is skipped unless it does not grow).
func runSliceSinker(m *hlo.Module) (bool, error) {
	mc := newModCtx(m)
	changed := false
	for _, c := range flowComputations(m) {
		e := mc.edit(c)
		groups := map[string][]*hlo.Instruction{}
		var order []string
		for i := 0; i < e.norig; i++ {
			x := e.ins[i]
			if e.unused(x) || !elementwiseOpcode(x.Opcode) || !x.Shape.IsArray() {
				continue // dead code is DCE's
			}
			key, ok := sliceGroupKey(x)
			if !ok {
				continue
			}
			if _, seen := groups[key]; !seen {
				order = append(order, key)
			}
			groups[key] = append(groups[key], x)
		}
		for _, key := range order {
			sinkSliceGroup(e, groups[key])
		}
		e.finish()
		changed = changed || e.changed
	}
	return changed, nil
}

// sliceGroupKey identifies x's group: opcode, attributes and slice sources; ok=false when
// x's operands are not all unit-stride slices with one window of sources of one shape.
func sliceGroupKey(x *hlo.Instruction) (string, bool) {
	var b strings.Builder
	first := x.Operands[0]
	for _, op := range x.Operands {
		if op.Opcode != hlo.OpSlice || !sameWindow(op.Slice, first.Slice) ||
			!intsEq(op.Operands[0].Shape.Dims, first.Operands[0].Shape.Dims) {
			return "", false
		}
		for _, s := range op.Slice {
			if s.Stride != 1 {
				return "", false
			}
		}
		b.WriteString(strconv.Itoa(op.Operands[0].ID))
		b.WriteByte(',')
	}
	k := x.CloneShallow()
	k.Name, k.Metadata, k.Operands = "k", "", nil
	k.Shape = hlo.Scalar(x.Shape.Elem) // members differ in their window's dimensions
	b.WriteString(k.Text())
	return b.String(), true
}

func sameWindow(a, b []hlo.SliceDim) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func sinkSliceGroup(e *editor, g []*hlo.Instruction) {
	if len(g) < 2 {
		return
	}
	src := g[0].Operands[0].Operands[0].Shape.Dims
	var total int64
	for i, x := range g {
		w := x.Operands[0].Slice
		total += x.Shape.Elements()
		for _, y := range g[:i] {
			if overlaps(w, y.Operands[0].Slice) {
				return
			}
		}
	}
	n := int64(1)
	for _, d := range src {
		n *= int64(d)
	}
	if total != n {
		return
	}
	delta := 1 // the op on the sources; each member becomes one slice
	seen := map[*hlo.Instruction]bool{}
	for _, x := range g {
		for _, op := range x.Operands {
			if !seen[op] && e.wouldDie(op, x) {
				delta--
			}
			seen[op] = true
		}
	}
	if delta > 0 {
		return
	}
	x0 := g[0]
	e.anchor = x0
	srcs := make([]*hlo.Instruction, len(x0.Operands))
	for i, op := range x0.Operands {
		srcs[i] = op.Operands[0]
	}
	y := e.clone(x0, hlo.Array(x0.Shape.Elem, src...), srcs...)
	for _, x := range g {
		e.anchor = x
		e.replace(x, e.sliceOf(y, append([]hlo.SliceDim{}, x.Operands[0].Slice...)))
	}
}

// overlaps reports whether two unit-stride windows share an element.
func overlaps(a, b []hlo.SliceDim) bool {
	for i := range a {
		if a[i].Limit <= b[i].Start || b[i].Limit <= a[i].Start {
			return false
		}
	}
	return true
}

func zeroSizedElimination() Pass {
	return newPass("zero-sized-hlo-elimination",
		"replaces pure instructions with zero-element results by constants and simplifies ops on zero-element operands",
		runZeroSized)
}

// runZeroSized is XLA's ZeroSizedHloElimination plus algsimp's zero-element rules: a pure
// instruction (other than a constant or parameter) whose result has no elements becomes
// a constant with an empty literal; concatenate drops zero-element operands; pad of a
// zero-element array is a broadcast of the pad value; reduce of a zero-element array is
// a broadcast of the init value; dynamic-update-slice with a zero-element update is its
// operand; dot with a zero-element contraction is a broadcast zero (when OpCount does
// not grow).
func runZeroSized(m *hlo.Module) (bool, error) {
	return rewriteEach(m, false, func(mc *modCtx, x *hlo.Instruction) bool { return pureArray(mc, x) && x.Opcode != hlo.OpParameter }, func(e *editor, x *hlo.Instruction) error {
		if x.Shape.Elements() == 0 {
			if x.Opcode != hlo.OpConstant {
				e.replace(x, e.constant(x.Shape, nil))
			}
			return nil
		}
		ops := x.Operands
		switch x.Opcode {
		case hlo.OpConcatenate:
			var keep []*hlo.Instruction
			for _, op := range ops {
				if op.Shape.Elements() > 0 {
					keep = append(keep, op)
				}
			}
			switch {
			case len(keep) == len(ops) || len(keep) == 0:
			case len(keep) == 1:
				e.replace(x, keep[0])
			default:
				e.replace(x, e.add(&hlo.Instruction{Opcode: hlo.OpConcatenate, Operands: keep, Dimensions: x.Dimensions, HasDimensions: true}))
			}
		case hlo.OpPad:
			if ops[0].Shape.Elements() == 0 {
				e.replace(x, e.broadcast(ops[1], nil, x.Shape.Dims))
			}
		case hlo.OpReduce:
			if len(ops) == 2 && ops[0].Shape.Elements() == 0 {
				e.replace(x, e.broadcast(ops[1], nil, x.Shape.Dims))
			}
		case hlo.OpDynamicUpdateSlice:
			if ops[1].Shape.Elements() == 0 {
				e.replace(x, ops[0])
			}
		case hlo.OpDot:
			if (ops[0].Shape.Elements() == 0 || ops[1].Shape.Elements() == 0) && numericType(x.Shape.Elem) {
				dying := 0
				for _, op := range ops {
					if e.wouldDie(op, x) {
						dying++
					}
				}
				if dying >= 1 {
					e.replace(x, e.broadcast(e.scalar(x.Shape.Elem, 0), nil, x.Shape.Dims))
				}
			}
		}
		return nil
	})
}
