package opt

import (
	"slices"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// reduceDecomposer is XLA's ReduceDecomposer (xla/hlo/transforms/expanders/
// reduce_decomposer.cc, without a custom_layout_allowed predicate). Both of its parts
// are about layouts, which this IR carries on shapes (hlo.Layout; a shape without one is
// row-major):
//
//   - VariadicReductionLayoutEqualizer: a variadic reduce whose inputs do not all have
//     the first input's layout reads copies of the others in that layout;
//   - ReduceDecomposerVisitor: a reduce whose result layout is not the one its input's
//     layout gives with the reduced dimensions deleted (ShapeUtil::DeleteDimensions) is
//     rewritten to reduce into that layout and copy into the requested one: reduce' then
//     copy; for a reduce whose one user is a convert, reduce', the convert in the new reduce's
//     layout, then the copy (XLA keeps reduce and convert adjacent); for a variadic
//     reduce, a copy of each get-tuple-element of reduce', in a tuple.
//
// A module without layouts (the zoo before layout assignment) has every reduce in its
// natural layout, and the pass changes nothing (ReduceNaturalLayout). XLA's CPU
// pipeline runs it after layout assignment (RunHloPassesAfterLayoutAssn's "hlo
// normalization"), so XLAPipeline, which ends there, does not. Where XLA fails a
// RET_CHECK (variadic results of different layouts, layouts with tiles it would carry
// over) the reduce is left. The copies grow the op count (Expands).
func reduceDecomposer() Pass {
	p := newPass("reduce-decomposer", "reduces whose result layout is not their input's → reduce in the input's layout + copy; variadic inputs → one layout",
		func(m *hlo.Module) (bool, error) {
			eq, err := rewriteEach(m, false, nil, func(e *editor, x *hlo.Instruction) error { equalizeReduceLayouts(e, x); return nil })
			if err != nil {
				return eq, err
			}
			dec, err := rewriteEach(m, false, nil, func(e *editor, x *hlo.Instruction) error { decomposeReduce(e, x); return nil })
			return eq || dec, err
		})
	p.Expands = true
	return p
}

// reduceInputs returns the inputs of a reduce (its first half of operands) and whether x
// is a well-formed reduce of array inputs.
func reduceInputs(x *hlo.Instruction) ([]*hlo.Instruction, bool) {
	if x.Opcode != hlo.OpReduce || len(x.Operands) == 0 || len(x.Operands)%2 != 0 || x.ToApply == nil {
		return nil, false
	}
	in := x.Operands[:len(x.Operands)/2]
	for _, op := range in {
		if !op.Shape.IsArray() || len(op.Shape.LayoutOrDefault().Tiles) > 0 {
			return nil, false
		}
	}
	return in, true
}

// equalizeReduceLayouts is VariadicReductionLayoutEqualizer's HandleReduce.
func equalizeReduceLayouts(e *editor, x *hlo.Instruction) {
	in, ok := reduceInputs(x)
	if !ok || len(in) < 2 {
		return
	}
	first := in[0].Shape.LayoutOrDefault()
	ops := slices.Clone(x.Operands)
	changed := false
	for i, op := range in {
		l := op.Shape.LayoutOrDefault()
		if slices.Equal(l.MinorToMajor, first.MinorToMajor) {
			continue
		}
		s := op.Shape.Clone()
		s.Layout = &hlo.Layout{MinorToMajor: slices.Clone(first.MinorToMajor), ElementSizeBits: l.ElementSizeBits, MemorySpace: l.MemorySpace}
		c := e.op(hlo.OpCopy, s, op)
		c.Shape.Layout = s.Layout
		ops[i] = c
		changed = true
	}
	if !changed {
		return
	}
	nr := e.clone(x, x.Shape.Clone(), ops...)
	nr.Shape = x.Shape.Clone()
	e.replace(x, nr)
}

// reducedLayout is ShapeUtil::DeleteDimensions on a layout: the input's minor-to-major
// order without the reduced dimensions, renumbered.
func reducedLayout(l *hlo.Layout, reduced []int) *hlo.Layout {
	out := &hlo.Layout{ElementSizeBits: l.ElementSizeBits, MemorySpace: l.MemorySpace, MinorToMajor: []int{}}
	for _, d := range l.MinorToMajor {
		if slices.Contains(reduced, d) {
			continue
		}
		n := d
		for _, r := range reduced {
			if r < d {
				n--
			}
		}
		out.MinorToMajor = append(out.MinorToMajor, n)
	}
	return out
}

// decomposeReduce is ReduceDecomposerVisitor's HandleReduce.
func decomposeReduce(e *editor, x *hlo.Instruction) {
	in, ok := reduceInputs(x)
	if !ok {
		return
	}
	var outs []hlo.Shape
	if x.Shape.IsTuple() {
		outs = x.Shape.Tuple
	} else {
		outs = []hlo.Shape{x.Shape}
	}
	if len(outs) != len(in) {
		return
	}
	first := in[0].Shape.LayoutOrDefault()
	want := reducedLayout(first, x.Dimensions)
	decompose := false
	for i, o := range outs {
		if !o.IsArray() || o.Rank() != len(want.MinorToMajor) || len(o.LayoutOrDefault().Tiles) > 0 ||
			!slices.Equal(in[i].Shape.LayoutOrDefault().MinorToMajor, first.MinorToMajor) ||
			!slices.Equal(o.LayoutOrDefault().MinorToMajor, outs[0].LayoutOrDefault().MinorToMajor) {
			return // XLA's RET_CHECKs: inputs of one layout, outputs of one layout
		}
		if !slices.Equal(o.LayoutOrDefault().MinorToMajor, want.MinorToMajor) {
			decompose = true
		}
	}
	if !decompose {
		return
	}
	withLayout := func(s hlo.Shape, l *hlo.Layout) hlo.Shape {
		c := s.Clone()
		c.Layout = l.Clone()
		return c
	}
	rs := x.Shape.Clone()
	if rs.IsTuple() {
		for i := range rs.Tuple {
			rs.Tuple[i] = withLayout(rs.Tuple[i], want)
		}
	} else {
		rs = withLayout(rs, want)
	}
	r := e.clone(x, rs, x.Operands...)
	r.Shape = rs
	copyTo := func(from *hlo.Instruction, s hlo.Shape) *hlo.Instruction {
		c := e.op(hlo.OpCopy, s, from)
		c.Shape = s.Clone()
		return c
	}
	if !x.Shape.IsTuple() {
		users := e.usersOf(x)
		if len(users) == 1 && users[0].Opcode == hlo.OpConvert && e.c.Root != x {
			cv := users[0]
			e.anchor = cv
			nc := e.clone(cv, withLayout(cv.Shape, want), r)
			nc.Shape = withLayout(cv.Shape, want)
			out := x.Shape.Clone()
			out.Elem = cv.Shape.Elem
			e.replace(cv, copyTo(nc, out))
			return
		}
		e.replace(x, copyTo(r, x.Shape))
		return
	}
	var copies []*hlo.Instruction
	for i := range outs {
		g := e.add(&hlo.Instruction{Opcode: hlo.OpGetTupleElement, Operands: []*hlo.Instruction{r}, Index: i})
		g.Shape = withLayout(g.Shape, want)
		copies = append(copies, copyTo(g, outs[i]))
	}
	t := e.add(&hlo.Instruction{Opcode: hlo.OpTuple, Operands: copies})
	t.Shape = x.Shape.Clone()
	e.replace(x, t)
}
