package opt

import (
	"math"
	"slices"

	"github.com/tpucost/tpucost/compiler/hlo"
)

func algsimp() Pass {
	return newPass("algsimp",
		"algebraic simplification: identities (x+0, x*1, x/1, --x, ...), redundant converts and copies, data movement of data movement, identity data movement, selects on constant predicates, reduces of broadcasts and reduces",
		runAlgsimp)
}

// checkLiterals parses every constant of the computations and returns the first
// malformed literal as an error (unknown payloads are fine).
func (mc *modCtx) checkLiterals(cs []*hlo.Computation) error {
	for _, c := range cs {
		for _, in := range c.Instructions {
			if in.Opcode == hlo.OpConstant {
				if _, _, err := mc.knownLiteral(in); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// splat returns v when x is a constant all of whose elements are v, or a broadcast of
// one (NaN payloads are not distinguished).
func (mc *modCtx) splat(x *hlo.Instruction) (float64, bool) {
	for x.Opcode == hlo.OpBroadcast {
		x = x.Operands[0]
	}
	vals, ok, _ := mc.knownLiteral(x)
	if !ok || len(vals) == 0 {
		return 0, false
	}
	v := vals[0]
	for _, w := range vals[1:] {
		if !sameValue(v, w) {
			return 0, false
		}
	}
	return v, true
}

func sameValue(a, b float64) bool {
	return a == b && math.Signbit(a) == math.Signbit(b) || math.IsNaN(a) && math.IsNaN(b)
}

// isSplat reports whether every element of x (a constant or a broadcast of one) equals
// v numerically (+0 and -0 both match 0).
func (mc *modCtx) isSplat(x *hlo.Instruction, v float64) bool {
	for x.Opcode == hlo.OpBroadcast {
		x = x.Operands[0]
	}
	vals, ok, _ := mc.knownLiteral(x)
	if !ok || len(vals) == 0 {
		return false
	}
	for _, w := range vals {
		if w != v {
			return false
		}
	}
	return true
}

// scalarBroadcast reports whether x is a broadcast of a rank-0 value.
func scalarBroadcast(x *hlo.Instruction) bool {
	return x.Opcode == hlo.OpBroadcast && x.Operands[0].Shape.Rank() == 0
}

// runAlgsimp is XLA's AlgebraicSimplifier, restricted to rewrites that are exact in
// IEEE arithmetic (except that x+0 → x may turn a -0 result into +0, as in XLA) and that
// never increase OpCount. It visits every instruction of every flow computation once, in
// order, so a rewrite's result is seen by the rewrites of its users in the same run:
//
//   - add(x, 0), add(0, x), subtract(x, 0), multiply(x, 1), multiply(1, x), divide(x, 1),
//     power(x, 1) → x; multiply(x, 0) → 0 for integers; max(x, -inf), min(x, +inf) → x
//     for floats; max/min/and/or(x, x) → x; and(x, true), or(x, false) → x; and(x, false)
//     → false; or(x, true) → true
//   - negate(negate(x)), not(not(x)) → x; abs(abs(x)), abs(negate(x)) → abs(x);
//     add(x, negate(y)) → subtract(x, y); add(negate(x), y) → subtract(y, x);
//     subtract(x, negate(y)) → add(x, y) (when the negate dies)
//   - select(true, a, b) → a; select(false, a, b) → b; select(p, a, a) → a;
//     select(not(p), a, b) → select(p, b, a) (when the not dies)
//   - convert to the operand's type → x; convert(convert(x: A→B)→C) → convert(x: A→C), or
//     x when C = A, if B represents every value of A exactly (and, for integers through a
//     float type to integers, C does too); copy with equal layouts → x
//   - broadcast, reshape, transpose, slice, pad, reverse and concatenate that are
//     identities → x; broadcast(broadcast), reshape(reshape), transpose(transpose),
//     slice(slice), reverse(reverse) → one op; a transpose that only moves size-1
//     dimensions → reshape; reshape/transpose/slice/reverse of a broadcast scalar → a
//     broadcast of the scalar
//   - slice of a concatenate inside one operand → slice of that operand; slice of a pad
//     inside the padded operand → slice of the operand, or entirely in the padding → a
//     broadcast of the pad value; concatenate of adjacent slices of one array → one slice;
//     concatenate of a concatenate along the same dimension → one concatenate
//   - reduce over size-1 (or no) dimensions with the reducer's identity as init → reshape;
//     reduce-max/min/and/or of a broadcast over broadcast dimensions → broadcast of the
//     operand; reduce of a reduce with the same reducer (identity inits) → one reduce
//   - dynamic-slice at constant start indices → slice (indices clamped as XLA does)
func runAlgsimp(m *hlo.Module) (bool, error) {
	return rewriteEach(m, true, pureArray, func(e *editor, x *hlo.Instruction) error {
		if y := simplify(e, x); y != nil && y != x {
			e.replace(x, y)
		}
		return nil
	})
}

// pureArray is rewriteEach's filter of the passes that rewrite pure array-valued
// instructions.
func pureArray(mc *modCtx, x *hlo.Instruction) bool { return mc.pure(x) && x.Shape.IsArray() }

// simplify returns a replacement for x (possibly new), or nil.
func simplify(e *editor, x *hlo.Instruction) *hlo.Instruction {
	mc := e.mc
	ops := x.Operands
	t := x.Shape.Elem
	switch x.Opcode {
	case hlo.OpAdd:
		a, b := ops[0], ops[1]
		switch {
		case mc.isSplat(b, 0):
			return a
		case mc.isSplat(a, 0):
			return b
		case b.Opcode == hlo.OpNegate && e.wouldDie(b, x):
			return e.op(hlo.OpSubtract, x.Shape, a, b.Operands[0])
		case a.Opcode == hlo.OpNegate && e.wouldDie(a, x):
			return e.op(hlo.OpSubtract, x.Shape, b, a.Operands[0])
		}
	case hlo.OpSubtract:
		a, b := ops[0], ops[1]
		switch {
		case mc.isSplat(b, 0):
			return a
		case b.Opcode == hlo.OpNegate && e.wouldDie(b, x):
			return e.op(hlo.OpAdd, x.Shape, a, b.Operands[0])
		}
	case hlo.OpMultiply:
		a, b := ops[0], ops[1]
		switch {
		case mc.isSplat(b, 1):
			return a
		case mc.isSplat(a, 1):
			return b
		case isInt(t) && mc.isSplat(b, 0):
			return b
		case isInt(t) && mc.isSplat(a, 0):
			return a
		}
	case hlo.OpDivide, hlo.OpPower:
		if mc.isSplat(ops[1], 1) {
			return ops[0]
		}
	case hlo.OpMaximum, hlo.OpMinimum:
		a, b := ops[0], ops[1]
		if a == b {
			return a
		}
		if t.IsFloat() {
			id := math.Inf(-1)
			if x.Opcode == hlo.OpMinimum {
				id = math.Inf(1)
			}
			if mc.isSplat(b, id) {
				return a
			}
			if mc.isSplat(a, id) {
				return b
			}
		}
	case hlo.OpAnd, hlo.OpOr:
		a, b := ops[0], ops[1]
		if a == b {
			return a
		}
		if t == hlo.PRED {
			keep, absorb := 1.0, 0.0 // and: x&true = x, x&false = false
			if x.Opcode == hlo.OpOr {
				keep, absorb = 0, 1
			}
			switch {
			case mc.isSplat(b, keep):
				return a
			case mc.isSplat(a, keep):
				return b
			case mc.isSplat(b, absorb):
				return b
			case mc.isSplat(a, absorb):
				return a
			}
		}
	case hlo.OpNegate, hlo.OpNot:
		if ops[0].Opcode == x.Opcode {
			return ops[0].Operands[0]
		}
	case hlo.OpAbs:
		switch ops[0].Opcode {
		case hlo.OpAbs:
			return ops[0]
		case hlo.OpNegate:
			e.setOperand(x, 0, ops[0].Operands[0])
			return nil
		}
	case hlo.OpSelect:
		p, a, b := ops[0], ops[1], ops[2]
		if a == b {
			return a
		}
		if v, ok := mc.splat(p); ok {
			if v != 0 {
				return a
			}
			return b
		}
		if p.Opcode == hlo.OpNot && e.wouldDie(p, x) {
			return e.op(hlo.OpSelect, x.Shape, p.Operands[0], b, a)
		}
	case hlo.OpConvert:
		a := ops[0]
		if a.Shape.Elem == t {
			return a
		}
		if a.Opcode == hlo.OpConvert {
			src := a.Operands[0]
			if exactChain(src.Shape.Elem, a.Shape.Elem, t) {
				if src.Shape.Elem == t {
					return src
				}
				e.setOperand(x, 0, src)
				return nil
			}
		}
	case hlo.OpCopy:
		if ops[0].Shape.Layout.Equal(x.Shape.Layout) {
			return ops[0]
		}
	case hlo.OpBroadcast:
		return simplifyBroadcast(e, x)
	case hlo.OpReshape:
		a := ops[0]
		switch {
		case intsEq(a.Shape.Dims, x.Shape.Dims):
			return a
		case a.Opcode == hlo.OpReshape:
			return e.reshape(a.Operands[0], x.Shape.Dims)
		case scalarBroadcast(a):
			return e.broadcast(a.Operands[0], nil, x.Shape.Dims)
		}
	case hlo.OpTranspose:
		return simplifyTranspose(e, x)
	case hlo.OpSlice:
		return simplifySlice(e, x)
	case hlo.OpConcatenate:
		return simplifyConcat(e, x)
	case hlo.OpPad:
		for _, p := range x.Padding {
			if p != (hlo.PadDim{}) {
				return nil
			}
		}
		return ops[0]
	case hlo.OpReverse:
		a := ops[0]
		var ds []int
		for _, d := range x.Dimensions {
			if a.Shape.Dims[d] > 1 {
				ds = append(ds, d)
			}
		}
		switch {
		case len(ds) == 0:
			return a
		case scalarBroadcast(a):
			return e.broadcast(a.Operands[0], nil, x.Shape.Dims)
		case a.Opcode == hlo.OpReverse && sameSet(ds, nonUnit(a.Operands[0].Shape.Dims, a.Dimensions)):
			return a.Operands[0]
		}
	case hlo.OpReduce:
		return simplifyReduce(e, x)
	case hlo.OpDynamicSlice:
		return simplifyDynamicSlice(e, x)
	}
	return nil
}

// exactChain reports whether converting a → b → c equals converting a → c: b holds
// every value of a exactly, and b → c treats those values as a → c does (an integer
// reaching an integer through a float type would be converted with float-to-integer
// semantics, which differ from wrapping on overflow, unless c holds all of a).
func exactChain(a, b, c hlo.ElemType) bool {
	if !exactlyRepresents(a, b) {
		return false
	}
	if isInt(a) && b.IsFloat() && isInt(c) {
		return exactlyRepresents(a, c)
	}
	return true
}

func nonUnit(dims, ds []int) []int {
	var out []int
	for _, d := range ds {
		if dims[d] > 1 {
			out = append(out, d)
		}
	}
	return out
}

func sameSet(a, b []int) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func simplifyBroadcast(e *editor, x *hlo.Instruction) *hlo.Instruction {
	a := x.Operands[0]
	if intsEq(a.Shape.Dims, x.Shape.Dims) && isIota(x.Dimensions) {
		return a
	}
	if a.Opcode == hlo.OpBroadcast {
		// y → a: y's dim i at a's dim a.Dimensions[i] → x's dim x.Dimensions[a.Dimensions[i]]
		bd := make([]int, len(a.Dimensions))
		for i, d := range a.Dimensions {
			bd[i] = x.Dimensions[d]
		}
		return e.broadcast(a.Operands[0], bd, x.Shape.Dims)
	}
	return nil
}

func simplifyTranspose(e *editor, x *hlo.Instruction) *hlo.Instruction {
	a := x.Operands[0]
	perm := x.Dimensions
	switch {
	case isIota(perm):
		return a
	case a.Opcode == hlo.OpTranspose:
		p := make([]int, len(perm))
		for i, d := range perm {
			p[i] = a.Dimensions[d]
		}
		return e.transpose(a.Operands[0], p)
	case scalarBroadcast(a):
		return e.broadcast(a.Operands[0], nil, x.Shape.Dims)
	}
	// a transpose that keeps the order of the dimensions larger than 1 moves no data
	last := -1
	for _, d := range perm {
		if a.Shape.Dims[d] == 1 {
			continue
		}
		if d < last {
			return nil
		}
		last = d
	}
	return e.reshape(a, x.Shape.Dims)
}

func fullSlice(sd []hlo.SliceDim, dims []int) bool {
	for i, s := range sd {
		if s.Start != 0 || s.Limit != dims[i] || s.Stride != 1 {
			return false
		}
	}
	return true
}

// sliceOf adds slice(a, sd) (a itself for a full slice).
func (e *editor) sliceOf(a *hlo.Instruction, sd []hlo.SliceDim) *hlo.Instruction {
	if fullSlice(sd, a.Shape.Dims) {
		return a
	}
	return e.add(&hlo.Instruction{Opcode: hlo.OpSlice, Operands: []*hlo.Instruction{a}, Slice: sd})
}

func simplifySlice(e *editor, x *hlo.Instruction) *hlo.Instruction {
	a := x.Operands[0]
	if fullSlice(x.Slice, a.Shape.Dims) {
		return a
	}
	n := x.Shape.Dims
	switch {
	case scalarBroadcast(a):
		return e.broadcast(a.Operands[0], nil, n)
	case a.Opcode == hlo.OpSlice:
		sd := make([]hlo.SliceDim, len(x.Slice))
		for i, s := range x.Slice {
			in := a.Slice[i]
			st := s.Stride * in.Stride
			start := in.Start + s.Start*in.Stride
			sd[i] = hlo.SliceDim{Start: start, Limit: start + max(n[i]-1, 0)*st + min(n[i], 1), Stride: st}
			if n[i] == 0 {
				sd[i] = hlo.SliceDim{Stride: 1} // any empty window
			}
		}
		return e.sliceOf(a.Operands[0], sd)
	case a.Opcode == hlo.OpConcatenate:
		d := a.Dimensions[0]
		s := x.Slice[d]
		if n[d] == 0 {
			return nil
		}
		last := s.Start + (n[d]-1)*s.Stride
		off := 0
		for _, op := range a.Operands {
			size := op.Shape.Dims[d]
			if s.Start >= off && last < off+size {
				sd := slices.Clone(x.Slice)
				sd[d] = hlo.SliceDim{Start: s.Start - off, Limit: last - off + 1, Stride: s.Stride}
				return e.sliceOf(op, sd)
			}
			off += size
		}
	case a.Opcode == hlo.OpPad:
		src := a.Operands[0]
		inside, outside := true, false
		sd := make([]hlo.SliceDim, len(x.Slice))
		for i, s := range x.Slice {
			p := a.Padding[i]
			if p.Interior != 0 || p.Lo < 0 || p.Hi < 0 {
				return nil
			}
			if n[i] == 0 {
				return nil
			}
			last := s.Start + (n[i]-1)*s.Stride
			if last < p.Lo || s.Start >= p.Lo+src.Shape.Dims[i] {
				outside = true
			}
			if s.Start < p.Lo || last >= p.Lo+src.Shape.Dims[i] {
				inside = false
			}
			sd[i] = hlo.SliceDim{Start: s.Start - p.Lo, Limit: last - p.Lo + 1, Stride: s.Stride}
		}
		switch {
		case outside:
			return e.broadcast(a.Operands[1], nil, n)
		case inside:
			return e.sliceOf(src, sd)
		}
	}
	return nil
}

func simplifyConcat(e *editor, x *hlo.Instruction) *hlo.Instruction {
	ops := x.Operands
	if len(ops) == 1 {
		return ops[0]
	}
	d := x.Dimensions[0]
	// operands of inner concatenates that die with x are owned by those
	type operand struct{ in, owner *hlo.Instruction }
	var flat []operand
	changed := false
	for _, op := range ops {
		if op.Opcode == hlo.OpConcatenate && op.Dimensions[0] == d && e.wouldDie(op, x) {
			for _, o := range op.Operands {
				flat = append(flat, operand{o, op})
			}
			changed = true
			continue
		}
		flat = append(flat, operand{op, x})
	}
	// Merge runs of adjacent unit-stride slices of one array that die with x: a run
	// becomes one slice, built once at the end.
	type item struct {
		in *hlo.Instruction // an operand kept as it is, or the first slice of a run
		sd []hlo.SliceDim   // the run's union when it merged slices
	}
	var items []item
	dies := func(o operand) bool { return e.wouldDie(o.in, o.owner) }
	for k, op := range flat {
		if n := len(items); n > 0 && dies(op) {
			prev := items[n-1]
			if prev.in.Opcode == hlo.OpSlice && (prev.sd != nil || dies(flat[k-1])) {
				cur := prev.in.Slice
				if prev.sd != nil {
					cur = prev.sd
				}
				if u, ok := adjacentSlices(prev.in.Operands[0], cur, op.in, d); ok {
					items[n-1].sd = u
					changed = true
					continue
				}
			}
		}
		items = append(items, item{in: op.in})
	}
	if !changed {
		return nil
	}
	merged := make([]*hlo.Instruction, len(items))
	for i, it := range items {
		merged[i] = it.in
		if it.sd != nil {
			merged[i] = e.sliceOf(it.in.Operands[0], it.sd)
		}
	}
	if len(merged) == 1 {
		return merged[0]
	}
	return e.add(&hlo.Instruction{Opcode: hlo.OpConcatenate, Operands: merged, Dimensions: []int{d}, HasDimensions: true})
}

// adjacentSlices reports whether b is a unit-stride slice of src that continues the
// unit-stride slice sa of src along dimension d (equal elsewhere), and returns the union.
func adjacentSlices(src *hlo.Instruction, sa []hlo.SliceDim, b *hlo.Instruction, d int) ([]hlo.SliceDim, bool) {
	if b.Opcode != hlo.OpSlice || b.Operands[0] != src {
		return nil, false
	}
	for i := range sa {
		a, c := sa[i], b.Slice[i]
		if a.Stride != 1 || c.Stride != 1 {
			return nil, false
		}
		if i == d {
			if a.Limit != c.Start {
				return nil, false
			}
		} else if a != c {
			return nil, false
		}
	}
	u := slices.Clone(sa)
	u[d].Limit = b.Slice[d].Limit
	return u, true
}

func simplifyReduce(e *editor, x *hlo.Instruction) *hlo.Instruction {
	if len(x.Operands) != 2 {
		return nil
	}
	mc := e.mc
	a, init := x.Operands[0], x.Operands[1]
	kind := reducerKind(x.ToApply)
	if kind == hlo.OpInvalid {
		return nil
	}
	id, ok := identityOf(kind, init.Shape.Elem)
	if !ok || !mc.isSplat(init, id) {
		return nil
	}
	// reducing size-1 dimensions only: a reshape
	unit := true
	for _, d := range x.Dimensions {
		if a.Shape.Dims[d] != 1 {
			unit = false
		}
	}
	if unit {
		return e.reshape(a, x.Shape.Dims)
	}
	kept := hlo.KeptDims(a.Shape.Rank(), x.Dimensions)
	switch {
	case a.Opcode == hlo.OpBroadcast && (kind == hlo.OpMaximum || kind == hlo.OpMinimum || kind == hlo.OpAnd || kind == hlo.OpOr):
		// idempotent reducer over dimensions the broadcast added: the operand, broadcast
		// to the kept dimensions
		pos := make(map[int]int, len(kept))
		for i, d := range kept {
			pos[d] = i
		}
		bd := make([]int, len(a.Dimensions))
		for i, d := range a.Dimensions {
			p, ok := pos[d]
			if !ok {
				return nil // reduces an operand dimension
			}
			bd[i] = p
		}
		return e.broadcast(a.Operands[0], bd, x.Shape.Dims)
	case a.Opcode == hlo.OpReduce && len(a.Operands) == 2 && reducerKind(a.ToApply) == kind &&
		mc.isSplat(a.Operands[1], id) && e.wouldDie(a, x):
		src := a.Operands[0]
		inner := hlo.KeptDims(src.Shape.Rank(), a.Dimensions)
		dims := slices.Clone(a.Dimensions)
		for _, d := range x.Dimensions {
			dims = append(dims, inner[d])
		}
		slices.Sort(dims)
		return e.add(&hlo.Instruction{Opcode: hlo.OpReduce, Operands: []*hlo.Instruction{src, init},
			Dimensions: dims, HasDimensions: true, ToApply: x.ToApply, Shape: hlo.Array(x.Shape.Elem, x.Shape.Dims...)})
	}
	return nil
}

func simplifyDynamicSlice(e *editor, x *hlo.Instruction) *hlo.Instruction {
	a := x.Operands[0]
	idx := x.Operands[1:]
	if len(idx) != a.Shape.Rank() {
		return nil
	}
	sd := make([]hlo.SliceDim, len(idx))
	for i, op := range idx {
		if op.Shape.Rank() != 0 {
			return nil
		}
		v, ok, _ := e.mc.knownLiteral(op)
		if !ok {
			return nil
		}
		size := x.Shape.Dims[i]
		start := int(math.Max(0, math.Min(v[0], float64(a.Shape.Dims[i]-size))))
		sd[i] = hlo.SliceDim{Start: start, Limit: start + size, Stride: 1}
	}
	return e.sliceOf(a, sd)
}
