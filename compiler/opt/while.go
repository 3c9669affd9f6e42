package opt

import (
	"github.com/tpucost/tpucost/compiler/hlo"
)

// refCounts counts, for every computation, the instructions of m that call it.
func refCounts(m *hlo.Module) map[*hlo.Computation]int {
	n := map[*hlo.Computation]int{}
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			for _, cc := range in.CalledComputations() {
				n[cc]++
			}
		}
	}
	return n
}

// whileParts returns the pieces of a while loop that the loop passes rewrite: its init
// tuple instruction (nil when the init is not a tuple instruction) and the root tuples of
// the body (nil when not a tuple instruction).
func whileParts(w *hlo.Instruction) (init, bodyRoot *hlo.Instruction) {
	if t := w.Operands[0]; t.Opcode == hlo.OpTuple {
		init = t
	}
	if r := w.Body.Root; r.Opcode == hlo.OpTuple && len(r.Operands) == len(w.Shape.Tuple) {
		bodyRoot = r
	}
	return init, bodyRoot
}

// loopParam returns the single parameter of a loop computation.
func loopParam(c *hlo.Computation) *hlo.Instruction {
	ps := c.Parameters()
	if len(ps) != 1 {
		return nil
	}
	return ps[0]
}

func whileLoopConstantSinking() Pass {
	return newPass("while-loop-constant-sinking",
		"replaces reads of loop-invariant tuple elements whose init is a constant by that constant, in the body, the condition and after the loop",
		runWhileConstantSinking)
}

// runWhileConstantSinking is WhileLoopConstantSinking. For a while loop whose init is a
// tuple instruction and whose body returns a tuple instruction, an element i that the
// body passes through unchanged (root operand i is get-tuple-element(param, i)) and whose
// init is a constant with a known value holds that constant in every iteration. Each get-tuple-element
// reading element i — in the body (including the pass-through itself), in the condition,
// and of the loop's result — is replaced by a copy of the constant, so the element is no
// longer read and while-loop-simplifier can remove it, and a comparison against it
// becomes a comparison against a constant (which the trip-count analysis needs). Loops
// whose body or condition is called from elsewhere too are left alone. OpCount does not
// grow: each rewritten get-tuple-element is replaced by one constant per computation.
func runWhileConstantSinking(m *hlo.Module) (bool, error) {
	mc := newModCtx(m)
	comps := flowComputations(m)
	if err := mc.checkLiterals(comps); err != nil {
		return false, err
	}
	refs := refCounts(m)
	changed := false
	for _, c := range comps {
		for _, w := range c.Instructions {
			if w.Opcode != hlo.OpWhile || w.Body == nil || w.Condition == nil || refs[w.Body] != 1 || refs[w.Condition] != 1 {
				continue
			}
			init, root := whileParts(w)
			if init == nil || root == nil {
				continue
			}
			bp, cp := loopParam(w.Body), loopParam(w.Condition)
			if bp == nil || cp == nil {
				continue
			}
			var sink []int
			for i, op := range root.Operands {
				if op.Opcode == hlo.OpGetTupleElement && op.Operands[0] == bp && op.Index == i {
					if _, known, _ := mc.knownLiteral(init.Operands[i]); known {
						sink = append(sink, i)
					}
				}
			}
			if len(sink) == 0 {
				continue
			}
			for _, comp := range []*hlo.Computation{w.Body, w.Condition} {
				if sinkConstants(mc, comp, loopParam(comp), init, sink) {
					changed = true
				}
			}
		}
		// reads of the loop's result: the init constant itself
		e := mc.edit(c)
		for i := 0; i < e.norig; i++ {
			g := e.ins[i]
			if e.unused(g) || g.Opcode != hlo.OpGetTupleElement || g.Operands[0].Opcode != hlo.OpWhile {
				continue
			}
			w := g.Operands[0]
			init, root := whileParts(w)
			if init == nil || root == nil || refs[w.Body] != 1 {
				continue
			}
			if k := init.Operands[g.Index]; sameConstant(mc, k, root.Operands[g.Index]) {
				e.anchor = g
				e.replace(g, k)
			}
		}
		e.finish()
		changed = changed || e.changed
	}
	return changed, nil
}

// sameConstant reports whether a and b are constants with the same shape and the same
// known values.
func sameConstant(mc *modCtx, a, b *hlo.Instruction) bool {
	va, ka, _ := mc.knownLiteral(a)
	vb, kb, _ := mc.knownLiteral(b)
	if !ka || !kb || !a.Shape.Compatible(b.Shape) {
		return false
	}
	for i := range va {
		if !sameValue(va[i], vb[i]) {
			return false
		}
	}
	return true
}

// sinkConstants replaces, in comp, every get-tuple-element(param, i) for i in idx by one
// copy of the init constant of element i.
func sinkConstants(mc *modCtx, comp *hlo.Computation, param, init *hlo.Instruction, idx []int) bool {
	e := mc.edit(comp)
	copies := map[int]*hlo.Instruction{}
	for k := 0; k < e.norig; k++ {
		g := e.ins[k]
		if e.dead[k] || g.Opcode != hlo.OpGetTupleElement || g.Operands[0] != param {
			continue
		}
		for _, i := range idx {
			if g.Index != i {
				continue
			}
			e.anchor = g
			kc, ok := copies[i]
			if !ok {
				src := init.Operands[i]
				kc = e.add(&hlo.Instruction{Opcode: hlo.OpConstant, Shape: src.Shape.Clone(), Literal: src.Literal})
				kc.Shape.Layout = src.Shape.Layout.Clone()
				copies[i] = kc
			}
			e.replace(g, kc)
		}
	}
	e.finish()
	return e.changed
}

func whileLoopSimplifier() Pass {
	return newPass("while-loop-simplifier",
		"removes while loops that run 0 times, inlines loops that run once (trip count from the condition's compare against constants), and removes dead loop-carried tuple elements",
		runWhileSimplifier)
}

// runWhileSimplifier is WhileLoopSimplifier, for while loops in flow computations:
//
//   - trip count: when the condition's root is compare(get-tuple-element(param, i), K)
//     (either order; K a scalar integer constant in the condition), the init is a tuple
//     instruction whose element i is a scalar integer constant, and the body's root tuple
//     computes element i as element i plus or minus a scalar integer constant, the loop's
//     trip count is known. A loop that runs 0 times is replaced by its init; a loop that
//     runs once is replaced by a copy of its body applied to the init. Both need a pure
//     condition (it is no longer evaluated).
//   - dead loop-carried values: when the init is a tuple instruction used only by the
//     loop, the body's root is a tuple instruction, the parameters of the body and
//     condition and the loop's result are only read through get-tuple-element, and the
//     body and condition are called by this loop only, every element that the condition
//     does not read, that is not read after the loop, and that no live element (or
//     side-effecting instruction) of the body depends on is removed from the loop state.
func runWhileSimplifier(m *hlo.Module) (bool, error) {
	mc := newModCtx(m)
	comps := flowComputations(m)
	if err := mc.checkLiterals(comps); err != nil {
		return false, err
	}
	refs := refCounts(m)
	changed := false
	for _, c := range comps {
		e := mc.edit(c)
		for i := 0; i < e.norig; i++ {
			w := e.ins[i]
			if e.dead[i] || w.Opcode != hlo.OpWhile || w.Body == nil || w.Condition == nil || !w.Shape.IsTuple() {
				continue
			}
			e.anchor = w
			switch n, ok := tripCount(mc, w); {
			case ok && n == 0 && mc.pureComp(w.Condition):
				e.replace(w, w.Operands[0])
				e.kill(w)
				continue
			case ok && n == 1 && mc.pureComp(w.Condition):
				r := inlineDeep(e, w.Body, []*hlo.Instruction{w.Operands[0]})
				e.replace(w, r)
				e.kill(w)
				continue
			}
			if refs[w.Body] == 1 && refs[w.Condition] == 1 {
				removeDeadElements(e, w)
			}
		}
		e.finish()
		changed = changed || e.changed
	}
	if changed {
		removeUnreferenced(m)
	}
	return changed, nil
}

// scalarInt returns the value of a scalar integer constant.
func scalarInt(mc *modCtx, x *hlo.Instruction) (int64, bool) {
	if x.Opcode != hlo.OpConstant || x.Shape.Rank() != 0 || !isInt(x.Shape.Elem) {
		return 0, false
	}
	v, ok, _ := mc.knownLiteral(x)
	if !ok {
		return 0, false
	}
	return int64(v[0]), true
}

// tripCount derives how many times w runs, when it is 0 or 1 (n = 2 means "2 or more").
func tripCount(mc *modCtx, w *hlo.Instruction) (n int, ok bool) { return tripCountUpTo(mc, w, 2) }

// tripCountUpTo derives how many times w runs, when it is below limit (n = limit means
// "limit or more").
func tripCountUpTo(mc *modCtx, w *hlo.Instruction, limit int) (n int, ok bool) {
	init, root := whileParts(w)
	cp, bp := loopParam(w.Condition), loopParam(w.Body)
	cmp := w.Condition.Root
	if init == nil || root == nil || cp == nil || bp == nil || cmp.Opcode != hlo.OpCompare {
		return 0, false
	}
	if _, typed := cmp.ExtraAttr("type"); typed && !isInt(cmp.Operands[0].Shape.Elem) {
		return 0, false
	}
	dir := cmp.Direction
	a, b := cmp.Operands[0], cmp.Operands[1]
	if b.Opcode == hlo.OpGetTupleElement && b.Operands[0] == cp {
		a, b = b, a
		dir = map[string]string{"LT": "GT", "GT": "LT", "LE": "GE", "GE": "LE", "EQ": "EQ", "NE": "NE"}[dir]
	}
	if a.Opcode != hlo.OpGetTupleElement || a.Operands[0] != cp || dir == "" {
		return 0, false
	}
	i := a.Index
	bound, ok1 := scalarInt(mc, b)
	v, ok2 := scalarInt(mc, init.Operands[i])
	if !ok1 || !ok2 {
		return 0, false
	}
	next := root.Operands[i]
	var step int64
	switch {
	case next.Opcode == hlo.OpAdd || next.Opcode == hlo.OpSubtract:
		x, k := next.Operands[0], next.Operands[1]
		if next.Opcode == hlo.OpAdd && !(x.Opcode == hlo.OpGetTupleElement && x.Operands[0] == bp && x.Index == i) {
			x, k = k, x
		}
		s, ok := scalarInt(mc, k)
		if !ok || x.Opcode != hlo.OpGetTupleElement || x.Operands[0] != bp || x.Index != i {
			return 0, false
		}
		step = s
		if next.Opcode == hlo.OpSubtract {
			step = -s
		}
	default:
		return 0, false
	}
	t := a.Shape.Elem
	holds := func(v int64) bool {
		r, _ := compareValues(dir, float64(v), float64(bound))
		return r != 0
	}
	for n = 0; n < limit; n++ {
		if !holds(v) {
			return n, true
		}
		v = int64(wrapInt(float64(v+step), t))
	}
	return limit, true
}

// removeDeadElements shrinks w's loop state to its live elements (see runWhileSimplifier).
func removeDeadElements(e *editor, w *hlo.Instruction) {
	mc := e.mc
	init, root := whileParts(w)
	bp, cp := loopParam(w.Body), loopParam(w.Condition)
	if init == nil || root == nil || bp == nil || cp == nil || !e.onlyUsedBy(init, w) {
		return
	}
	n := len(w.Shape.Tuple)
	live := make([]bool, n)
	// the loop's result and the condition
	for _, u := range e.usersOf(w) {
		if u.Opcode != hlo.OpGetTupleElement {
			return
		}
		live[u.Index] = true
	}
	if w == e.c.Root {
		return
	}
	// the condition: the elements its result (or a side effect) depends on
	if w.Condition.Root == cp {
		return
	}
	var cstack []*hlo.Instruction
	cseen := map[*hlo.Instruction]bool{}
	cpush := func(x *hlo.Instruction) {
		if !cseen[x] {
			cseen[x] = true
			cstack = append(cstack, x)
		}
	}
	cpush(w.Condition.Root)
	for _, in := range w.Condition.Instructions {
		for _, op := range in.Operands {
			if op == cp && in.Opcode != hlo.OpGetTupleElement {
				return
			}
		}
		if in.Opcode != hlo.OpParameter && !mc.removable(in) {
			cpush(in)
		}
	}
	for len(cstack) > 0 {
		x := cstack[len(cstack)-1]
		cstack = cstack[:len(cstack)-1]
		if x.Opcode == hlo.OpGetTupleElement && x.Operands[0] == cp {
			live[x.Index] = true
		}
		for _, op := range x.Operands {
			cpush(op)
		}
	}
	// the body: what live elements and side effects depend on
	onPath := map[*hlo.Instruction]bool{}
	var stack []*hlo.Instruction
	push := func(x *hlo.Instruction) {
		if !onPath[x] {
			onPath[x] = true
			stack = append(stack, x)
		}
	}
	for _, in := range w.Body.Instructions {
		for _, op := range in.Operands {
			if op == bp && in.Opcode != hlo.OpGetTupleElement {
				return
			}
		}
		if in != root && in.Opcode != hlo.OpParameter && !mc.removable(in) {
			push(in)
		}
	}
	for i := range live {
		if live[i] {
			push(root.Operands[i])
		}
	}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if x.Opcode == hlo.OpGetTupleElement && x.Operands[0] == bp && !live[x.Index] {
			live[x.Index] = true
			push(root.Operands[x.Index])
		}
		for _, op := range x.Operands {
			push(op)
		}
	}
	var keep []int
	newIdx := make([]int, n)
	for i, l := range live {
		newIdx[i] = -1
		if l {
			newIdx[i] = len(keep)
			keep = append(keep, i)
		}
	}
	if len(keep) == n || len(keep) == 0 {
		return
	}
	shapes := make([]hlo.Shape, len(keep))
	for j, i := range keep {
		shapes[j] = w.Shape.Tuple[i].Clone()
	}
	state := hlo.TupleOf(shapes...)

	// body and condition: the parameter takes the smaller state, reads are renumbered,
	// the body returns only the live elements
	for _, comp := range []*hlo.Computation{w.Body, w.Condition} {
		ce := mc.edit(comp)
		ce.sweep()
		p := loopParam(comp)
		if comp == w.Body {
			ce.anchor = root
			ops := make([]*hlo.Instruction, len(keep))
			for j, i := range keep {
				ops[j] = root.Operands[i]
			}
			ce.setRoot(ce.add(&hlo.Instruction{Opcode: hlo.OpTuple, Operands: ops}))
		}
		for _, g := range ce.usersOf(p) {
			if newIdx[g.Index] < 0 {
				internalf("%s still reads the dead loop element %d", comp.Name, g.Index)
			}
			g.Index = newIdx[g.Index]
		}
		p.Shape = state.Clone()
		ce.finish()
	}
	// the loop and its users
	ops := make([]*hlo.Instruction, len(keep))
	for j, i := range keep {
		ops[j] = init.Operands[i]
	}
	nt := e.add(&hlo.Instruction{Opcode: hlo.OpTuple, Operands: ops})
	nw := w.CloneShallow()
	nw.Name = ""
	nw.Operands = []*hlo.Instruction{nt}
	nw.Shape = state.Clone()
	nw = e.add(nw)
	for _, g := range e.usersOf(w) {
		e.anchor = g
		e.replace(g, e.add(&hlo.Instruction{Opcode: hlo.OpGetTupleElement, Operands: []*hlo.Instruction{nw}, Index: newIdx[g.Index]}))
	}
	e.kill(w)
}
