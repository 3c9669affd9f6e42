package spmd

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// lower rewrites every flow computation in place into its per-device form.
func (pt *partitioner) lower() error {
	pt.global = map[*hlo.Instruction]hlo.Shape{}
	pt.cur = map[*hlo.Instruction]*spec{}
	for _, c := range pt.flow {
		for _, in := range c.Instructions {
			pt.global[in] = in.Shape.Clone()
		}
	}
	for _, c := range pt.flow {
		if err := pt.lowerComp(c); err != nil {
			return err
		}
	}
	return nil
}

// target spec of in (replicated when propagation reached nothing).
func (pt *partitioner) want(in *hlo.Instruction) *spec {
	s := pt.sh[in]
	if s == nil {
		if pt.global[in].IsTuple() {
			return tupleRepl(pt.global[in])
		}
		return replicated()
	}
	return s
}

func tupleRepl(g hlo.Shape) *spec {
	if !g.IsTuple() {
		return replicated()
	}
	s := &spec{elems: make([]*spec, len(g.Tuple))}
	for i, e := range g.Tuple {
		s.elems[i] = tupleRepl(e)
	}
	return s
}

func (pt *partitioner) lowerComp(c *hlo.Computation) error {
	pt.out = make([]*hlo.Instruction, 0, len(c.Instructions))
	for _, in := range c.Instructions {
		if err := pt.lowerInstr(c, in); err != nil {
			return hlo.At(in, fmt.Errorf("spmd: %s: %w", in.Name, err))
		}
	}
	if a, ok := pt.aliases[c.Root]; ok {
		c.Root = a
	}
	if c != pt.m.Entry {
		// A loop's body returns its state in the state's sharding; a branch returns
		// replicated (its conditional reshards).
		var want *spec
		if pt.cond[c] {
			want = tupleOrRepl(pt.global[c.Root])
		} else if ps := c.Parameters(); len(ps) > 0 {
			want = pt.want(ps[0])
		}
		if want != nil {
			c.Root = pt.reshard(c.Root, want)
		}
	}
	c.Instructions = pt.out
	return nil
}

func tupleOrRepl(g hlo.Shape) *spec { return tupleRepl(g) }

// emit appends a new instruction to the computation being lowered.
func (pt *partitioner) emit(in *hlo.Instruction, s *spec) *hlo.Instruction {
	base := in.Name
	if base == "" {
		base = in.Opcode.String() + ".spmd"
	}
	name := base
	for i := 1; pt.names[name]; i++ {
		name = base + "." + strconv.Itoa(i)
	}
	pt.names[name] = true
	in.Name = name
	pt.out = append(pt.out, in)
	pt.cur[in] = s
	return in
}

// local sets in's shape to its per-device shape under s and keeps it.
func (pt *partitioner) keep(in *hlo.Instruction, s *spec) {
	in.Shape = localShape(pt.global[in], s)
	pt.out = append(pt.out, in)
	pt.cur[in] = s
}

func (pt *partitioner) lowerInstr(c *hlo.Computation, in *hlo.Instruction) error {
	for i, op := range in.Operands {
		if a, ok := pt.aliases[op]; ok {
			in.Operands[i] = a
		}
	}
	S := pt.want(in)
	g := pt.global[in]
	switch {
	case in.Opcode == hlo.OpParameter:
		if c != pt.m.Entry {
			if pt.cond[c] {
				S = tupleOrRepl(g)
			}
		}
		pt.keep(in, S)
		return nil
	case S.manual:
		// Already per-device: operands pass as they are.
		if in.Opcode == hlo.OpCustomCall && target(in) == "SPMDFullToShardShape" {
			x := pt.reshard(in.Operands[0], pt.want(in.Operands[0]))
			in.Operands[0] = x
		}
		pt.keep(in, S)
		return nil
	case in.Opcode == hlo.OpCustomCall && target(in) == "SPMDShardToFullShape":
		pt.keep(in, S)
		in.Shape = in.Operands[0].Shape.Clone()
		return nil
	case isIdentityCall(in):
		x := pt.reshard(in.Operands[0], S)
		pt.alias(in, x)
		return nil
	case isElementwise(in):
		for i, op := range in.Operands {
			if pt.global[op].Rank() == g.Rank() {
				in.Operands[i] = pt.reshard(op, S)
			}
		}
		pt.keep(in, S)
		return nil
	}
	switch in.Opcode {
	case hlo.OpConstant:
		pt.keep(in, replicated())
		pt.alias(in, pt.reshardFrom(in, S))
		return nil
	case hlo.OpIota:
		pt.keep(in, S)
		return nil
	case hlo.OpBroadcast:
		t := ones(pt.global[in.Operands[0]].Rank())
		for k, d := range in.Dimensions {
			t[k] = S.tile(d)
		}
		in.Operands[0] = pt.reshard(in.Operands[0], arr(t))
		pt.keep(in, S)
		return nil
	case hlo.OpTranspose:
		t := ones(g.Rank())
		for k, p := range in.Dimensions {
			t[p] = S.tile(k)
		}
		in.Operands[0] = pt.reshard(in.Operands[0], arr(t))
		pt.keep(in, S)
		return nil
	case hlo.OpReshape:
		og := pt.global[in.Operands[0]]
		if t, ok := reshapeTiles(g.Dims, og.Dims, S.tilesOf(g.Rank())); ok {
			if back, ok2 := reshapeTiles(og.Dims, g.Dims, t); ok2 && arr(back).equal(S) &&
				localShape(og, arr(t)).Elements() == localShape(g, S).Elements() {
				in.Operands[0] = pt.reshard(in.Operands[0], arr(t))
				pt.keep(in, S)
				return nil
			}
		}
		in.Operands[0] = pt.reshard(in.Operands[0], replicated())
		pt.keep(in, replicated())
		pt.alias(in, pt.reshardFrom(in, S))
		return nil
	case hlo.OpDot, hlo.OpConvolution:
		return pt.lowerDot(in, S)
	case hlo.OpReduce:
		return pt.lowerReduce(in, S)
	case hlo.OpGather:
		if g, ok := gatherDims(in); ok {
			return pt.lowerGather(in, g, S)
		}
	case hlo.OpTuple:
		s := &spec{elems: make([]*spec, len(in.Operands))}
		for i, op := range in.Operands {
			s.elems[i] = pt.cur[op]
		}
		pt.keep(in, s)
		in.Shape = hlo.TupleOf(shapesOf(in.Operands)...)
		return nil
	case hlo.OpGetTupleElement:
		s := pt.cur[in.Operands[0]]
		var e *spec
		if s != nil && s.elems != nil && in.Index < len(s.elems) {
			e = s.elems[in.Index]
		}
		pt.keep(in, e)
		in.Shape = in.Operands[0].Shape.Tuple[in.Index].Clone()
		return nil
	case hlo.OpWhile:
		in.Operands[0] = pt.reshard(in.Operands[0], S)
		pt.keep(in, S)
		return nil
	case hlo.OpOptimizationBarrier:
		// An identity on its operand (a tuple, in JAX's rematerialization): its result
		// is the operand's pieces as they are, so no data moves.
		if len(in.Operands) == 1 {
			pt.keep(in, pt.cur[in.Operands[0]])
			in.Shape = in.Operands[0].Shape.Clone()
			return nil
		}
	}
	if pass, ok := passthrough(in, func(x *hlo.Instruction) hlo.Shape { return pt.global[x] }); ok {
		return pt.lowerPassthrough(in, pass, S)
	}
	// Any other op runs on whole (replicated) operands and its result is then split:
	// XLA's default for ops without a partitioning rule.
	for i, op := range in.Operands {
		if in.Opcode == hlo.OpConditional || !pt.global[op].IsTuple() {
			in.Operands[i] = pt.reshard(op, tupleRepl(pt.global[op]))
		}
	}
	pt.keep(in, tupleRepl(g))
	pt.alias(in, pt.reshardFrom(in, S))
	return nil
}

func shapesOf(ins []*hlo.Instruction) []hlo.Shape {
	out := make([]hlo.Shape, len(ins))
	for i, x := range ins {
		out[i] = x.Shape.Clone()
	}
	return out
}

// alias makes later users of in read x instead (in's lowered value).
func (pt *partitioner) alias(in, x *hlo.Instruction) {
	if x == in {
		return
	}
	if pt.aliases == nil {
		pt.aliases = map[*hlo.Instruction]*hlo.Instruction{}
	}
	pt.aliases[in] = x
}

// reshardFrom reshards the just-lowered in to s.
func (pt *partitioner) reshardFrom(in *hlo.Instruction, s *spec) *hlo.Instruction {
	return pt.reshard(in, s)
}

// lowerPassthrough lowers slice, pad, concatenate, dynamic-slice, dynamic-update-slice,
// reduce-window and sort: tiled along the dimensions they leave whole, whole along the
// others.
func (pt *partitioner) lowerPassthrough(in *hlo.Instruction, pass []bool, S *spec) error {
	g := pt.global[in]
	t := ones(g.Rank())
	for d := range t {
		if pass[d] {
			t[d] = S.tile(d)
		}
	}
	sop := arr(t)
	for i, op := range in.Operands {
		if pt.global[op].Rank() == g.Rank() {
			in.Operands[i] = pt.reshard(op, sop)
		}
	}
	ls := localShape(g, sop)
	switch in.Opcode {
	case hlo.OpSlice:
		for d := range in.Slice {
			if pass[d] {
				in.Slice[d].Limit = ls.Dims[d]
			}
		}
	case hlo.OpDynamicSlice:
		setIntSetAttr(in, "dynamic_slice_sizes", ls.Dims)
	}
	pt.keep(in, sop)
	pt.alias(in, pt.reshardFrom(in, S))
	return nil
}

// lowerDot partitions a dot or convolution (dot_handler.cc): the contraction is tiled as
// its operands are (the more tiled one; the other is sliced to match), the output as
// wanted within what the devices left over allow; a tiled contraction leaves partial
// sums, combined by a reduce-scatter when the wanted output is tiled one dimension
// further by exactly the contraction's devices, else by an all-reduce.
func (pt *partitioner) lowerDot(in *hlo.Instruction, S *spec) error {
	var m dotMap
	if in.Opcode == hlo.OpDot {
		m = dotDims(in)
	} else {
		m = convDims(in)
	}
	l, r := pt.cur[in.Operands[0]], pt.cur[in.Operands[1]]
	if l != nil && l.manual || r != nil && r.manual {
		pt.keep(in, &spec{manual: true})
		in.Shape = pt.global[in]
		return nil
	}
	rank := pt.global[in].Rank()
	lg, rg, og := pt.global[in.Operands[0]], pt.global[in.Operands[1]], pt.global[in]
	// The strategies XLA's dot handler weighs, reduced to three: contract as the lhs is
	// tiled, as the rhs is (the other operand sliced to match), or not at all (both
	// gathered along it); the output as wanted within the devices left. The one moving
	// the fewest bytes between devices wins (ties: the order listed).
	type plan struct {
		ct, lt, rt, out []int
		c               int
		bytes           float64
	}
	var best *plan
	cands := [][]int{make([]int, len(m.cl)), make([]int, len(m.cl)), ones(len(m.cl))}
	for k := range m.cl {
		cands[0][k] = l.tile(m.cl[k])
		cands[1][k] = r.tile(m.cr[k])
	}
	for _, ct := range cands {
		c := 1
		for _, x := range ct {
			c *= x
		}
		if c > pt.n {
			continue
		}
		// The output as wanted, or as the operands give it (then resharded).
		outs := [][]int{S.tilesOf(rank), pt.dotOut(m, l, r, rank)}
		for _, out := range outs {
			for d := rank - 1; d >= 0 && c*arr(out).numTiles() > pt.n; d-- {
				out[d] = 1
			}
			lt, rt := ones(lg.Rank()), ones(rg.Rank())
			for d := range rank {
				if m.outL[d] >= 0 {
					lt[m.outL[d]] = out[d]
				}
				if m.outR[d] >= 0 {
					rt[m.outR[d]] = out[d]
				}
			}
			for k := range m.cl {
				lt[m.cl[k]], rt[m.cr[k]] = ct[k], ct[k]
			}
			b := reshardBytes(lg, l, arr(lt)) + reshardBytes(rg, r, arr(rt))
			sop := arr(out)
			if c > 1 {
				if scatterDim(sop, S, c, rank) >= 0 {
					b += float64(localShape(og, sop).Bytes())
				} else {
					b += 2*float64(localShape(og, sop).Bytes()) + reshardBytes(og, sop, S)
				}
			} else {
				b += reshardBytes(og, sop, S)
			}
			if best == nil || b < best.bytes {
				best = &plan{ct: ct, lt: lt, rt: rt, out: out, c: c, bytes: b}
			}
		}
	}
	if best == nil {
		best = &plan{ct: ones(len(m.cl)), lt: ones(lg.Rank()), rt: ones(rg.Rank()), out: ones(rank), c: 1}
	}
	lt, rt, out, c := best.lt, best.rt, best.out, best.c
	sop := arr(out)
	in.Operands[0] = pt.reshard(in.Operands[0], arr(lt))
	in.Operands[1] = pt.reshard(in.Operands[1], arr(rt))
	pt.keep(in, sop)
	x := pt.combine(in, sop, S, c, pt.addComp(pt.global[in].Elem))
	pt.alias(in, pt.reshard(x, S))
	return nil
}

// combine sums the partial results x (tiled as sop) over the c devices of a tiled
// contraction: a reduce-scatter when S tiles one more dimension by exactly c, else an
// all-reduce. It returns x itself when c is 1.
func (pt *partitioner) combine(x *hlo.Instruction, sop, S *spec, c int, apply *hlo.Computation) *hlo.Instruction {
	if c <= 1 {
		return x
	}
	g := pt.global[x]
	scatter := scatterDim(sop, S, c, g.Rank())
	if scatter >= 0 && apply != nil {
		rs := &hlo.Instruction{Name: "reduce-scatter.spmd", Opcode: hlo.OpReduceScatter, Operands: []*hlo.Instruction{x},
			Dimensions: []int{scatter}, HasDimensions: true, ToApply: apply}
		pt.global[rs] = g
		rs.Shape = localShape(g, S)
		pt.collective(rs, c)
		pt.emit(rs, S)
		return rs
	}
	ar := &hlo.Instruction{Name: "all-reduce.spmd", Opcode: hlo.OpAllReduce, Operands: []*hlo.Instruction{x},
		Shape: x.Shape.Clone(), ToApply: apply}
	pt.global[ar] = g
	pt.collective(ar, c)
	pt.emit(ar, sop)
	return ar
}

// lowerReduce partitions a reduce: the operand stays tiled as it is; a tiled reduced
// dimension leaves partial results, combined with the reduce's own computation.
func (pt *partitioner) lowerReduce(in *hlo.Instruction, S *spec) error {
	g := pt.global[in]
	if g.IsTuple() || len(in.Operands) != 2 {
		for i, op := range in.Operands {
			in.Operands[i] = pt.reshard(op, tupleRepl(pt.global[op]))
		}
		pt.keep(in, tupleRepl(g))
		pt.alias(in, pt.reshardFrom(in, S))
		return nil
	}
	a := pt.cur[in.Operands[0]]
	if a == nil || a.manual || a.elems != nil {
		a = replicated()
	}
	r := pt.global[in.Operands[0]].Rank()
	var out []int
	c := 1
	for d := range r {
		if slices.Contains(in.Dimensions, d) {
			c *= a.tile(d)
		} else {
			out = append(out, a.tile(d))
		}
	}
	sop := arr(out)
	// Keep the operand's tiling; let the output take more tiles where S wants them and
	// devices are left.
	in.Operands[0] = pt.reshard(in.Operands[0], arr(a.tilesOf(r)))
	pt.keep(in, sop)
	x := pt.combine(in, sop, S, c, in.ToApply)
	pt.alias(in, pt.reshard(x, S))
	return nil
}

// lowerGather partitions a gather: the output tiled as wanted along its batch and
// whole-slice offset dimensions (from the indices and the operand); an operand tiled
// along a dimension it indexes one row of is kept tiled, each device gathering the rows
// it holds (masked), and the partial results are summed by an all-reduce
// (gather_scatter_handler.cc, trivially sliced operand dimensions).
func (pt *partitioner) lowerGather(in *hlo.Instruction, gm gatherMap, S *spec) error {
	g := pt.global[in]
	og := pt.global[in.Operands[0]]
	a := pt.cur[in.Operands[0]]
	if a == nil || a.manual || a.elems != nil {
		a = replicated()
	}
	out := S.tilesOf(g.Rank())
	opT := ones(og.Rank())
	for k, d := range gm.offOut {
		od := gm.offOperand[k]
		if gm.sizes[od] == og.Dims[od] {
			opT[od] = out[d]
		} else {
			out[d] = 1
		}
	}
	c := 1
	for _, d := range gm.collapsed {
		if gm.sizes[d] == 1 && a.tile(d) > 1 {
			opT[d] = a.tile(d)
			c *= a.tile(d)
		}
	}
	if c*arr(out).numTiles() > pt.n {
		for _, d := range gm.collapsed {
			opT[d] = 1
		}
		c = 1
	}
	idxT := ones(pt.global[in.Operands[1]].Rank())
	for k, d := range gm.batchOut {
		idxT[gm.batchIdx[k]] = out[d]
	}
	in.Operands[0] = pt.reshard(in.Operands[0], arr(opT))
	in.Operands[1] = pt.reshard(in.Operands[1], arr(idxT))
	sizes := slices.Clone(gm.sizes)
	for d := range sizes {
		if opT[d] > 1 && sizes[d] == og.Dims[d] {
			sizes[d] = (sizes[d] + opT[d] - 1) / opT[d]
		}
	}
	setIntSetAttr(in, "slice_sizes", sizes)
	sop := arr(out)
	pt.keep(in, sop)
	x := pt.combine(in, sop, S, c, pt.addComp(g.Elem))
	pt.alias(in, pt.reshard(x, S))
	return nil
}

// collective names the devices a collective of group size k runs over: n/k groups of k
// consecutive devices (the minor mesh axis), with a channel as XLA's partitioner gives it.
func (pt *partitioner) collective(in *hlo.Instruction, k int) {
	pt.chans++
	in.Extra = append(in.Extra,
		hlo.Attr{Key: "channel_id", Value: strconv.Itoa(pt.chans)},
		hlo.Attr{Key: "replica_groups", Value: fmt.Sprintf("[%d,%d]<=[%d]", pt.n/k, k, pt.n)},
		hlo.Attr{Key: "use_global_device_ids", Value: "true"})
	pt.res.Collectives[in.Opcode.String()]++
}

// addComp returns the module's scalar add computation for t, adding it once.
func (pt *partitioner) addComp(t hlo.ElemType) *hlo.Computation {
	if c := pt.adds[t]; c != nil {
		return c
	}
	if pt.adds == nil {
		pt.adds = map[hlo.ElemType]*hlo.Computation{}
	}
	x := &hlo.Instruction{Name: "x", Opcode: hlo.OpParameter, Shape: hlo.Scalar(t)}
	y := &hlo.Instruction{Name: "y", Opcode: hlo.OpParameter, Shape: hlo.Scalar(t), ParamNum: 1}
	op := hlo.OpAdd
	if t == hlo.PRED {
		op = hlo.OpOr
	}
	s := &hlo.Instruction{Name: "sum", Opcode: op, Shape: hlo.Scalar(t), Operands: []*hlo.Instruction{x, y}}
	name := "spmd_add_" + t.String()
	c := &hlo.Computation{Name: name, Instructions: []*hlo.Instruction{x, y, s}, Root: s}
	c.Renumber()
	pt.m.Computations = append([]*hlo.Computation{c}, pt.m.Computations...)
	pt.adds[t] = c
	return c
}

// reshard returns x (already lowered, tiled as pt.cur[x]) tiled as s: all-gathers along
// the dimensions it must have whole, an all-to-all when the tiles move from one
// dimension to another, local slices along those it must have tiled. Tuples reshard
// element by element; manual values pass as they are.
func (pt *partitioner) reshard(x *hlo.Instruction, s *spec) *hlo.Instruction {
	if a, ok := pt.aliases[x]; ok {
		x = a
	}
	from := pt.cur[x]
	g, ok := pt.global[x]
	if !ok {
		return x
	}
	if from == nil {
		from = tupleRepl(g)
	}
	if s == nil || from.equal(s) || from.manual || s.manual {
		return x
	}
	if g.IsTuple() {
		if s.elems == nil {
			s = tupleRepl(g)
		}
		elems := make([]*hlo.Instruction, len(g.Tuple))
		changed := false
		for i := range g.Tuple {
			e := &hlo.Instruction{Name: x.Name + ".e" + strconv.Itoa(i), Opcode: hlo.OpGetTupleElement, Index: i,
				Operands: []*hlo.Instruction{x}, Shape: x.Shape.Tuple[i].Clone()}
			var fe *spec
			if from.elems != nil && i < len(from.elems) {
				fe = from.elems[i]
			}
			pt.global[e] = g.Tuple[i]
			pt.emit(e, fe)
			var se *spec
			if i < len(s.elems) {
				se = s.elems[i]
			}
			elems[i] = pt.reshard(e, se)
			changed = changed || elems[i] != e
		}
		t := &hlo.Instruction{Name: x.Name + ".resharded", Opcode: hlo.OpTuple, Operands: elems, Shape: hlo.TupleOf(shapesOf(elems)...)}
		pt.global[t] = g
		cs := &spec{elems: make([]*spec, len(elems))}
		for i, e := range elems {
			cs.elems[i] = pt.cur[e]
		}
		pt.emit(t, cs)
		return t
	}
	r := g.Rank()
	cur := from.tilesOf(r)
	want := s.tilesOf(r)
	// All-to-all: one dimension loses exactly the tiles another gains.
	lose, gain := tileMoves(cur, want)
	if len(lose) == 1 && len(gain) == 1 && cur[lose[0]] == want[gain[0]] &&
		g.Dims[lose[0]]%cur[lose[0]] == 0 && g.Dims[gain[0]]%want[gain[0]] == 0 {
		k := cur[lose[0]]
		a2a := &hlo.Instruction{Name: "all-to-all.spmd", Opcode: hlo.OpAllToAll, Operands: []*hlo.Instruction{x},
			Dimensions: []int{gain[0]}, HasDimensions: true, Shape: x.Shape.Clone()}
		pt.global[a2a] = g
		pt.collective(a2a, k)
		pt.emit(a2a, from)
		// The exchanged pieces, laid out as the new tiling: a local relayout.
		rs := &hlo.Instruction{Name: "reshape.spmd", Opcode: hlo.OpReshape, Operands: []*hlo.Instruction{a2a}, Shape: localShape(g, s)}
		pt.global[rs] = g
		pt.emit(rs, s)
		return rs
	}
	y := x
	for _, d := range lose {
		k := cur[d]
		cur[d] = 1
		ag := &hlo.Instruction{Name: "all-gather.spmd", Opcode: hlo.OpAllGather, Operands: []*hlo.Instruction{y},
			Dimensions: []int{d}, HasDimensions: true}
		pt.global[ag] = g
		ag.Shape = localShape(g, arr(slices.Clone(cur)))
		pt.collective(ag, k)
		y = pt.emit(ag, arr(slices.Clone(cur)))
	}
	if arr(cur).equal(s) {
		return y
	}
	// Take this device's tile of the dimensions that are whole here and wanted tiled
	// (XLA: a dynamic-slice at the partition's offset; no communication).
	ls := localShape(g, s)
	sl := &hlo.Instruction{Name: "slice.spmd", Opcode: hlo.OpSlice, Operands: []*hlo.Instruction{y}, Shape: ls}
	for d := range r {
		sl.Slice = append(sl.Slice, hlo.SliceDim{Start: 0, Limit: ls.Dims[d], Stride: 1})
	}
	pt.global[sl] = g
	return pt.emit(sl, s)
}

// scatterDim is the dimension a reduce-scatter over c devices would tile to turn partial
// sums tiled as sop into S: the one dimension S tiles c-fold where sop does not, all
// others equal; -1 when there is none.
func scatterDim(sop, S *spec, c, rank int) int {
	scatter := -1
	for d := range rank {
		if sop.tile(d) == S.tile(d) {
			continue
		}
		if sop.tile(d) == 1 && S.tile(d) == c && scatter < 0 {
			scatter = d
			continue
		}
		return -1
	}
	return scatter
}

// reshardBytes estimates the bytes a device receives to reshard a value of global
// shape g from one tiling to another (as reshard does it): the gathered result of each
// all-gather, the local piece of an all-to-all, nothing for local slices.
func reshardBytes(g hlo.Shape, from, to *spec) float64 {
	if g.IsTuple() || from == nil || to == nil || from.manual || to.manual || from.equal(to) {
		return 0
	}
	r := g.Rank()
	cur, want := from.tilesOf(r), to.tilesOf(r)
	lose, gain := tileMoves(cur, want)
	if len(lose) == 0 {
		return 0
	}
	if len(lose) == 1 && len(gain) == 1 && cur[lose[0]] == want[gain[0]] {
		return float64(localShape(g, from).Bytes())
	}
	b := 0.0
	for _, d := range lose {
		cur[d] = 1
		b += float64(localShape(g, arr(slices.Clone(cur))).Bytes())
	}
	return b
}

// tileMoves compares a value's tiles per dimension before (cur) and after (want) a
// reshard: lose lists the dimensions whose tiling goes away or changes (a re-tiled
// dimension is gathered, then sliced), gain those tiled anew. One lost and one gained
// dimension with the same tile count is an all-to-all.
func tileMoves(cur, want []int) (lose, gain []int) {
	for d := range cur {
		switch {
		case cur[d] > 1 && want[d] == 1:
			lose = append(lose, d)
		case cur[d] == 1 && want[d] > 1:
			gain = append(gain, d)
		case cur[d] != want[d]:
			lose = append(lose, d)
		}
	}
	return lose, gain
}
