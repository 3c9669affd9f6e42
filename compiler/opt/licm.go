package opt

import (
	"github.com/tpucost/tpucost/compiler/hlo"
)

// whileLoopInvariantCodeMotion is XLA's WhileLoopInvariantCodeMotion with the defaults
// XLA's CPU simplification group uses (xla/hlo/transforms/simplifiers/
// while_loop_invariant_code_motion.cc: hoist_constants=false, hoist_reshapes=false,
// hoist_other=true, no size-inflation limit). For a while loop of tuple shape that may
// run more than once (ComputeWhileLoopTripCountUpperBound > 1 or unknown):
//   - the invariant values are the array-shaped get-tuple-elements of the body
//     parameter that the body's root tuple passes through at the same index
//     (WhileUtil::GetInvariantGTEsForWhileBody), constants, and what is computed from
//     them only;
//   - in the body's order, a pure instruction whose operands are all invariant is
//     hoisted — copied before the loop, with the invariant get-tuple-elements read
//     from the loop's init and the constants and cheap invariant operands copied with
//     it (WhileUtil::CreateLoopInvariantCopy) — unless it is a constant, bitcast,
//     broadcast, iota, reshape, reverse, slice, transpose or tuple
//     (NotWorthHoistingIndividually), which only move along with a hoisted user;
//   - each hoisted instruction still read in the body becomes a new element of the loop
//     state (appended to the init tuple and passed through by the body's root) and is
//     read there with a get-tuple-element (WhileUtil::MakeInstructionsLiveIn).
//
// XLA makes every hoisted instruction live-in and then runs DCE and tuple-simplifier
// (and leaves the unread new elements to while-loop-simplifier); here only the ones
// still read become elements, and no get-tuple-element/tuple pairs are left, which is
// the same module after those cleanups (a loop whose whole result is read, e.g. as the
// root, gets a tuple of get-tuple-elements of the old elements, as in XLA). Restrictions
// of this build: the loop's init is a tuple instruction read only by the loop, its
// body's and condition's parameters are read only through get-tuple-element, the body and condition are called by this loop
// only (flatten-call-graph makes them so), and calls, loops and conditionals in the body
// are not hoisted. OpCount: a hoisted instruction moves (same count), each new element
// adds a get-tuple-element in the body, and copies of shared cheap operands are added
// before the loop; the work per iteration shrinks.
func whileLoopInvariantCodeMotion() Pass {
	p := newPass("while-loop-invariant-code-motion", "hoists loop-invariant work out of while bodies into new loop-state elements",
		func(m *hlo.Module) (bool, error) {
			mc := newModCtx(m)
			refs := refCounts(m)
			changed := false
			for _, c := range flowComputations(m) {
				e := mc.edit(c)
				for i := 0; i < e.norig; i++ {
					w := e.ins[i]
					if e.dead[i] || w.Opcode != hlo.OpWhile || w.Body == nil || w.Condition == nil {
						continue
					}
					if refs[w.Body] != 1 || refs[w.Condition] != 1 {
						continue
					}
					e.anchor = w
					hoistInvariants(e, w)
				}
				e.finish()
				changed = changed || e.changed
			}
			return changed, nil
		})
	p.Expands = true
	return p
}

// notWorthHoistingIndividually is XLA's list (hoist_constants and hoist_reshapes false).
func notWorthHoistingIndividually(op hlo.Opcode) bool {
	switch op {
	case hlo.OpConstant, hlo.OpReshape, hlo.OpBitcast, hlo.OpBroadcast, hlo.OpIota, hlo.OpReverse,
		hlo.OpSlice, hlo.OpTranspose, hlo.OpTuple:
		return true
	}
	return false
}

// onlyGTEUsers reports whether every instruction of c reading x is a get-tuple-element
// (and x is not c's root).
func onlyGTEUsers(c *hlo.Computation, x *hlo.Instruction) bool {
	if c.Root == x {
		return false
	}
	for _, in := range c.Instructions {
		for _, op := range in.Operands {
			if op == x && in.Opcode != hlo.OpGetTupleElement {
				return false
			}
		}
	}
	return true
}

// hoistInvariants runs the motion on one loop w of e's computation.
func hoistInvariants(e *editor, w *hlo.Instruction) {
	init, root := whileParts(w)
	bp, cp := loopParam(w.Body), loopParam(w.Condition)
	if init == nil || root == nil || bp == nil || cp == nil || !w.Shape.IsTuple() || !e.onlyUsedBy(init, w) {
		return
	}
	if !onlyGTEUsers(w.Body, bp) || !onlyGTEUsers(w.Condition, cp) {
		return
	}
	if n, ok := tripCount(e.mc, w); ok && n <= 1 {
		return
	}
	body := w.Body
	unhoisted := map[*hlo.Instruction]bool{}
	invIndex := map[*hlo.Instruction]int{}
	for i, op := range root.Operands {
		if op.Opcode == hlo.OpGetTupleElement && op.Index == i && op.Operands[0] == bp && op.Shape.IsArray() {
			unhoisted[op] = true
			invIndex[op] = i
		}
	}
	if len(unhoisted) == 0 {
		return
	}
	hoisted := map[*hlo.Instruction]*hlo.Instruction{} // body instruction → its copy before the loop
	var copyOut func(x *hlo.Instruction) *hlo.Instruction
	copyOut = func(x *hlo.Instruction) *hlo.Instruction {
		if h, ok := hoisted[x]; ok {
			return h
		}
		if i, ok := invIndex[x]; ok {
			hoisted[x] = init.Operands[i]
			delete(unhoisted, x)
			return init.Operands[i]
		}
		k := x.CloneShallow()
		k.Name = e.mc.uniqueName(x.Name)
		for j, op := range x.Operands {
			k.Operands[j] = copyOut(op)
		}
		layout := x.Shape.Layout.Clone()
		h := e.add(k)
		h.Shape.Layout = layout
		if x.Opcode == hlo.OpConstant {
			if v, ok := e.mc.lits[x]; ok {
				e.mc.lits[h] = v
			}
		}
		hoisted[x] = h
		delete(unhoisted, x)
		return h
	}
	var toReplace []*hlo.Instruction
	replaced := map[*hlo.Instruction]bool{}
	for _, x := range body.Instructions {
		switch x.Opcode {
		case hlo.OpParameter, hlo.OpCall, hlo.OpWhile, hlo.OpConditional, hlo.OpFusion:
			continue
		}
		if !e.mc.pure(x) || x == body.Root {
			continue
		}
		inv := true
		for _, op := range x.Operands {
			if _, h := hoisted[op]; !h && !unhoisted[op] && op.Opcode != hlo.OpConstant {
				inv = false
				break
			}
		}
		if !inv {
			continue
		}
		if notWorthHoistingIndividually(x.Opcode) {
			if x.Opcode != hlo.OpConstant {
				unhoisted[x] = true
			}
			continue
		}
		copyOut(x)
		toReplace = append(toReplace, x)
		replaced[x] = true
	}
	if len(toReplace) == 0 {
		return
	}
	// Which body instructions die once the replaced ones are gone; a replaced one read
	// by a survivor (or by the root) becomes live-in.
	users := map[*hlo.Instruction][]*hlo.Instruction{}
	for _, in := range body.Instructions {
		for _, op := range in.Operands {
			users[op] = append(users[op], in)
		}
	}
	dies := map[*hlo.Instruction]bool{}
	for i := len(body.Instructions) - 1; i >= 0; i-- {
		x := body.Instructions[i]
		if replaced[x] {
			dies[x] = true
			continue
		}
		if x == body.Root || !e.mc.removable(x) || len(users[x]) == 0 {
			continue
		}
		all := true
		for _, u := range users[x] {
			if !dies[u] {
				all = false
				break
			}
		}
		dies[x] = all
	}
	var liveIn []*hlo.Instruction
	for _, x := range toReplace {
		for _, u := range users[x] {
			if !dies[u] {
				liveIn = append(liveIn, x)
				break
			}
		}
	}
	n := len(root.Operands)
	elems := append([]hlo.Shape(nil), w.Shape.Tuple...)
	for _, x := range liveIn {
		elems = append(elems, x.Shape.Clone())
	}
	state := hlo.TupleOf(elems...)
	bp.Shape, cp.Shape = state.Clone(), state.Clone()
	be := e.mc.edit(body)
	var gtes []*hlo.Instruction
	for k, x := range liveIn {
		be.anchor = x
		g := be.add(&hlo.Instruction{Opcode: hlo.OpGetTupleElement, Operands: []*hlo.Instruction{bp}, Index: n + k})
		gtes = append(gtes, g)
	}
	for k, x := range liveIn {
		be.replace(x, gtes[k])
	}
	for _, x := range toReplace {
		if be.live(x) && be.userCount(x) == 0 {
			be.removeIfDead(x)
		}
	}
	be.anchor = root
	nr := be.add(&hlo.Instruction{Opcode: hlo.OpTuple, Operands: append(append([]*hlo.Instruction(nil), root.Operands...), gtes...)})
	be.setRoot(nr)
	be.finish()
	var outs []*hlo.Instruction
	for _, x := range liveIn {
		outs = append(outs, hoisted[x])
	}
	ni := e.add(&hlo.Instruction{Opcode: hlo.OpTuple, Operands: append(append([]*hlo.Instruction(nil), init.Operands...), outs...)})
	var whole []*hlo.Instruction // users reading the loop's whole result
	for _, u := range e.usersOf(w) {
		if u.Opcode != hlo.OpGetTupleElement {
			whole = append(whole, u)
		}
	}
	e.setOperand(w, 0, ni)
	w.Shape = ni.Shape.Clone()
	e.changed = true
	if len(whole) == 0 && e.c.Root != w {
		return
	}
	// They read the old state: a tuple of its elements (XLA's MakeInstructionsLiveIn
	// does the same).
	var parts []*hlo.Instruction
	for i := 0; i < n; i++ {
		parts = append(parts, e.add(&hlo.Instruction{Opcode: hlo.OpGetTupleElement, Operands: []*hlo.Instruction{w}, Index: i}))
	}
	t := e.add(&hlo.Instruction{Opcode: hlo.OpTuple, Operands: parts})
	for _, u := range whole {
		for j, op := range u.Operands {
			if op == w {
				e.setOperand(u, j, t)
			}
		}
	}
	if e.c.Root == w {
		e.setRoot(t)
	}
}
