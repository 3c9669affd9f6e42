package spmd

import (
	"slices"
	"strconv"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// This file propagates shardings from the annotated instructions to the others, after
// XLA's ShardingPropagation (xla/service/sharding_propagation.cc): forward from
// operands to users and backward from users to operands, until nothing changes. An
// annotated instruction keeps its annotation; an unannotated one takes the most
// specific spec (the most tiles) any rule gives it, so a conflict resolves to the more
// tiled operand, the first one on a tie, and the partitioner reshards the others.

// dotMap lists, per output dimension of a dot, the lhs and rhs dimension it comes from
// (-1: none), and the contracting pairs.
type dotMap struct {
	outL, outR []int
	cl, cr     []int
}

func dotDims(in *hlo.Instruction) dotMap {
	d := in.Dot
	lr, rr := in.Operands[0].Shape.Rank(), in.Operands[1].Shape.Rank()
	var m dotMap
	for i := range d.LhsBatch {
		m.outL = append(m.outL, d.LhsBatch[i])
		m.outR = append(m.outR, d.RhsBatch[i])
	}
	for k := range lr {
		if !slices.Contains(d.LhsBatch, k) && !slices.Contains(d.LhsContracting, k) {
			m.outL = append(m.outL, k)
			m.outR = append(m.outR, -1)
		}
	}
	for k := range rr {
		if !slices.Contains(d.RhsBatch, k) && !slices.Contains(d.RhsContracting, k) {
			m.outL = append(m.outL, -1)
			m.outR = append(m.outR, k)
		}
	}
	m.cl, m.cr = d.LhsContracting, d.RhsContracting
	return m
}

// convDims is dotMap for a convolution: batch and output feature carry tiles, the
// input feature is contracted; spatial dimensions stay whole (no halo exchange).
func convDims(in *hlo.Instruction) dotMap {
	c := in.Conv
	r := in.Shape.Rank()
	m := dotMap{outL: slices.Repeat([]int{-1}, r), outR: slices.Repeat([]int{-1}, r)}
	if in.GroupCount() > 1 || in.BatchGroupCount > 1 {
		m.outL[c.OutputBatch] = c.InputBatch
		return m
	}
	m.outL[c.OutputBatch] = c.InputBatch
	m.outR[c.OutputFeature] = c.KernelOutput
	m.cl, m.cr = []int{c.InputFeature}, []int{c.KernelInput}
	return m
}

// gatherMap relates a gather's output dimensions to its operand and indices.
type gatherMap struct {
	offOut, offOperand []int // offset output dims and the operand dims they window
	batchOut, batchIdx []int // batch output dims and the indices dims they come from
	sizes              []int
	collapsed          []int
}

func gatherDims(in *hlo.Instruction) (gatherMap, bool) {
	op, idx := in.Operands[0].Shape, in.Operands[1].Shape
	g := gatherMap{offOut: intSetAttr(in, "offset_dims"), sizes: intSetAttr(in, "slice_sizes"),
		collapsed: intSetAttr(in, "collapsed_slice_dims")}
	obatch := intSetAttr(in, "operand_batching_dims")
	ivd := idx.Rank()
	if v, ok := in.ExtraAttr("index_vector_dim"); ok {
		if x, err := strconv.Atoi(v); err == nil {
			ivd = x
		}
	}
	if len(g.sizes) != op.Rank() {
		return g, false
	}
	for d := range op.Rank() {
		if !slices.Contains(g.collapsed, d) && !slices.Contains(obatch, d) {
			g.offOperand = append(g.offOperand, d)
		}
	}
	for d := range in.Shape.Rank() {
		if !slices.Contains(g.offOut, d) {
			g.batchOut = append(g.batchOut, d)
		}
	}
	for d := range idx.Rank() {
		if d != ivd {
			g.batchIdx = append(g.batchIdx, d)
		}
	}
	return g, len(g.offOperand) == len(g.offOut) && len(g.batchOut) == len(g.batchIdx)
}

// passthrough reports, per dimension of a data-movement op's output, whether it is the
// operand's dimension unchanged (so its tiling carries through): slice, pad,
// concatenate, dynamic-slice, dynamic-update-slice and reduce-window leave the other
// dimensions whole. ok is false for ops that are not of this family.
// shape gives the global shape of an instruction (its operands' shapes are per-device
// ones while they are lowered).
func passthrough(in *hlo.Instruction, shape func(*hlo.Instruction) hlo.Shape) (pass []bool, ok bool) {
	out := shape(in)
	r := out.Rank()
	op0 := func() hlo.Shape { return shape(in.Operands[0]) }
	if out.IsTuple() {
		return nil, false
	}
	pass = make([]bool, r)
	switch in.Opcode {
	case hlo.OpSlice:
		for d, s := range in.Slice {
			pass[d] = s.Start == 0 && s.Stride == 1 && s.Limit == op0().Dims[d]
		}
	case hlo.OpPad:
		for d, p := range in.Padding {
			pass[d] = p == hlo.PadDim{}
		}
	case hlo.OpConcatenate:
		for d := range pass {
			pass[d] = len(in.Dimensions) == 1 && d != in.Dimensions[0]
		}
	case hlo.OpDynamicSlice:
		for d := range pass {
			pass[d] = out.Dims[d] == op0().Dims[d]
		}
	case hlo.OpDynamicUpdateSlice:
		for d := range pass {
			pass[d] = shape(in.Operands[1]).Dims[d] == out.Dims[d]
		}
	case hlo.OpReduceWindow:
		if len(in.Operands) != 2 || in.Window == nil || len(in.Window.Dims) != r {
			return nil, false
		}
		for d, w := range in.Window.Dims {
			pass[d] = w.Size == 1 && w.Stride == 1 && w.PadLo == 0 && w.PadHi == 0 && w.LhsDilate <= 1 && w.RhsDilate <= 1
		}
	case hlo.OpSort:
		if len(in.Operands) != 1 {
			return nil, false
		}
		for d := range pass {
			pass[d] = len(in.Dimensions) == 1 && d != in.Dimensions[0]
		}
	default:
		return nil, false
	}
	return pass, true
}

// isElementwise reports ops whose output element i depends on operand elements i only.
func isElementwise(in *hlo.Instruction) bool {
	switch in.Opcode.Category() {
	case hlo.CatElementwise, hlo.CatTranscendental:
		return !in.Shape.IsTuple()
	}
	return in.Opcode == hlo.OpCopy || in.Opcode == hlo.OpReverse
}

// isIdentityCall reports the custom-calls that only carry a sharding: XLA's Sharding
// and Shardy's round-trip markers (xla.sdy.*).
func isIdentityCall(in *hlo.Instruction) bool {
	if in.Opcode != hlo.OpCustomCall || len(in.Operands) != 1 {
		return false
	}
	t := target(in)
	return t == "Sharding" || len(t) > 8 && t[:8] == "xla.sdy." && in.Shape.Equal(in.Operands[0].Shape)
}

// forward infers in's spec from its operands' (nil: no rule or nothing known).
func (pt *partitioner) forward(in *hlo.Instruction) *spec {
	opSpec := func(i int) *spec { return pt.sh[in.Operands[i]] }
	r := in.Shape.Rank()
	switch {
	case isIdentityCall(in):
		return opSpec(0)
	case isElementwise(in):
		var best *spec
		for i, op := range in.Operands {
			if s := opSpec(i); op.Shape.Rank() == r && s.weight() > best.weight() && !s.manual {
				best = s
			}
		}
		return best
	}
	switch in.Opcode {
	case hlo.OpBroadcast:
		s := opSpec(0)
		if s == nil || s.manual {
			return s
		}
		t := ones(r)
		for i, d := range in.Dimensions {
			t[d] = s.tile(i)
		}
		return arr(t)
	case hlo.OpTranspose:
		s := opSpec(0)
		if s == nil || s.manual {
			return s
		}
		t := ones(r)
		for i, p := range in.Dimensions {
			t[i] = s.tile(p)
		}
		return arr(t)
	case hlo.OpReshape:
		s := opSpec(0)
		if s == nil || s.manual {
			return s
		}
		if t, ok := reshapeTiles(in.Operands[0].Shape.Dims, in.Shape.Dims, s.tilesOf(in.Operands[0].Shape.Rank())); ok {
			return arr(t)
		}
		return replicated()
	case hlo.OpDot, hlo.OpConvolution:
		var m dotMap
		if in.Opcode == hlo.OpDot {
			m = dotDims(in)
		} else {
			m = convDims(in)
		}
		l, rr := opSpec(0), opSpec(1)
		if l == nil && rr == nil {
			return nil
		}
		return arr(pt.dotOut(m, l, rr, r))
	case hlo.OpReduce:
		if in.Shape.IsTuple() {
			return nil
		}
		s := opSpec(0)
		if s == nil || s.manual {
			return s
		}
		var t []int
		for d := range in.Operands[0].Shape.Rank() {
			if !slices.Contains(in.Dimensions, d) {
				t = append(t, s.tile(d))
			}
		}
		return arr(t)
	case hlo.OpGather:
		g, ok := gatherDims(in)
		if !ok {
			return nil
		}
		s, is := opSpec(0), opSpec(1)
		if s == nil && is == nil {
			return nil
		}
		t := ones(r)
		for k, d := range g.offOut {
			od := g.offOperand[k]
			if g.sizes[od] == in.Operands[0].Shape.Dims[od] {
				t[d] = s.tile(od)
			}
		}
		for k, d := range g.batchOut {
			t[d] = is.tile(g.batchIdx[k])
		}
		return arr(pt.fit(t))
	case hlo.OpGetTupleElement:
		s := opSpec(0)
		if s == nil || s.elems == nil || in.Index >= len(s.elems) {
			return s
		}
		return s.elems[in.Index]
	case hlo.OpTuple:
		s := &spec{elems: make([]*spec, len(in.Operands))}
		any := false
		for i := range in.Operands {
			s.elems[i] = opSpec(i)
			if s.elems[i] == nil {
				s.elems[i] = replicated()
			} else {
				any = true
			}
		}
		if !any {
			return nil
		}
		return s
	case hlo.OpWhile:
		return merge(opSpec(0), pt.sh[in.Body.Root])
	}
	if pass, ok := passthrough(in, globalShape); ok {
		s := opSpec(0)
		if s == nil || s.manual {
			return s
		}
		t := ones(r)
		for d := range t {
			if pass[d] {
				t[d] = s.tile(d)
			}
		}
		return arr(t)
	}
	return nil
}

// backward infers the spec of operand i of in from in's spec (nil: no rule).
func (pt *partitioner) backward(in *hlo.Instruction, i int) *spec {
	s := pt.sh[in]
	if s == nil || s.manual || s.elems != nil {
		return nil
	}
	op := in.Operands[i]
	r := op.Shape.Rank()
	switch {
	case isIdentityCall(in):
		return s
	case isElementwise(in):
		if r == in.Shape.Rank() {
			return s
		}
		return nil
	}
	switch in.Opcode {
	case hlo.OpBroadcast:
		t := ones(r)
		for k, d := range in.Dimensions {
			t[k] = s.tile(d)
		}
		return arr(t)
	case hlo.OpTranspose:
		t := ones(r)
		for k, p := range in.Dimensions {
			t[p] = s.tile(k)
		}
		return arr(t)
	case hlo.OpReshape:
		if t, ok := reshapeTiles(in.Shape.Dims, op.Shape.Dims, s.tilesOf(in.Shape.Rank())); ok {
			return arr(t)
		}
	case hlo.OpReduce:
		if i != 0 {
			return nil
		}
		t := ones(r)
		k := 0
		for d := range r {
			if !slices.Contains(in.Dimensions, d) {
				t[d] = s.tile(k)
				k++
			}
		}
		return arr(t)
	}
	return nil
}

// merge returns, element by element, the more specific of two specs.
func merge(a, b *spec) *spec {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	if a.elems != nil && b.elems != nil && len(a.elems) == len(b.elems) {
		out := &spec{elems: make([]*spec, len(a.elems))}
		for i := range a.elems {
			out.elems[i] = merge(a.elems[i], b.elems[i])
		}
		return out
	}
	if b.weight() > a.weight() {
		return b
	}
	return a
}

// dotOut is the output tiling a dot or convolution takes from its operands: each output
// dimension the tiles of the operand dimension it comes from (the lhs first), kept
// within the device count (a tiled contraction only leaves partial sums: it does not
// tile the output, as in XLA's InferDotSharding).
func (pt *partitioner) dotOut(m dotMap, l, r *spec, rank int) []int {
	t := ones(rank)
	used := 1
	for d := range rank {
		x := 1
		if m.outL[d] >= 0 {
			x = l.tile(m.outL[d])
		}
		if x == 1 && m.outR[d] >= 0 {
			x = r.tile(m.outR[d])
		}
		if used*x <= pt.n {
			t[d] = x
			used *= x
		}
	}
	return t
}

// fit drops tiles from the last dimension back until their product fits the devices.
func (pt *partitioner) fit(t []int) []int {
	p := 1
	for _, x := range t {
		p *= x
	}
	for d := len(t) - 1; d >= 0 && p > pt.n; d-- {
		p /= t[d]
		t[d] = 1
	}
	return t
}

// propagate assigns a spec to every instruction of the flow computations.
func (pt *partitioner) propagate() {
	const maxRounds = 32 // each round only makes specs heavier; real modules settle in a few
	for range maxRounds {
		changed := false
		set := func(in *hlo.Instruction, s *spec) {
			if s == nil || pt.fixed[in] {
				return
			}
			if s.weight() > pt.sh[in].weight() {
				pt.sh[in] = s
				changed = true
			}
		}
		for _, c := range pt.flow {
			for _, in := range c.Instructions {
				s := pt.forward(in)
				if in.Opcode == hlo.OpWhile && s != nil {
					// The loop state has one sharding: operand, body parameter and root,
					// condition parameter and result (XLA keeps them equal).
					s = merge(s, pt.sh[in])
					pt.sh[in] = s
					for _, cc := range []*hlo.Computation{in.Body, in.Condition} {
						for _, p := range cc.Parameters() {
							if !pt.sh[p].equal(s) && s.weight() >= pt.sh[p].weight() {
								pt.sh[p] = s
								changed = true
							}
						}
					}
					continue
				}
				set(in, s)
			}
		}
		for i := len(pt.flow) - 1; i >= 0; i-- {
			c := pt.flow[i]
			for j := len(c.Instructions) - 1; j >= 0; j-- {
				in := c.Instructions[j]
				for k, op := range in.Operands {
					if op.Opcode == hlo.OpParameter && c != pt.m.Entry {
						continue // a loop's state: set by the while rule
					}
					set(op, pt.backward(in, k))
				}
			}
		}
		if !changed {
			return
		}
	}
}

// globalShape is an instruction's shape as written (before lowering).
func globalShape(in *hlo.Instruction) hlo.Shape { return in.Shape }
