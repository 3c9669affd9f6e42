package opt

import (
	"slices"
	"strconv"
	"strings"

	"github.com/tpucost/tpucost/compiler/hlo"
)

func cse() Pass {
	return newPass("cse",
		"common-subexpression elimination: merges pure instructions with the same opcode, shape, operands and attributes, and constants with the same known value",
		runCSE)
}

// runCSE is HloCSE. In each flow computation, in order, a pure instruction (not a
// parameter) is replaced by an earlier one that computes the same value:
//
//   - constants: the same shape (with layout) and the same known values; constants
//     with unknown payloads ("{...}") are never merged;
//   - other instructions: the same opcode, shape (with layout), operands (after earlier
//     merges; either order for commutative ops: add, multiply, maximum, minimum, and,
//     or, xor, compare EQ/NE) and attributes (metadata ignored), calling structurally
//     identical computations.
//
// Side-effecting and opaque instructions are never merged.
func runCSE(m *hlo.Module) (bool, error) {
	mc := newModCtx(m)
	comps := flowComputations(m)
	if err := mc.checkLiterals(comps); err != nil {
		return false, err
	}
	classes := computationClasses(m)
	changed := false
	for _, c := range comps {
		e := mc.edit(c)
		// Candidates are bucketed by a cheap hash of what every key renders (opcode,
		// dimensions, operands); the full key is rendered only for an instruction whose
		// bucket already holds one, so the first earlier instruction with an equal key is
		// found as a map of keys would find it. A candidate's key does not change once it
		// is visited: its operands precede it and were merged before.
		buckets := make(map[uint64][]*cseCand, len(c.Instructions))
		for i := 0; i < e.norig; i++ {
			x := e.ins[i]
			if e.unused(x) || x.Opcode == hlo.OpParameter || !mc.pure(x) {
				continue
			}
			h := cseHash(x)
			b := buckets[h]
			if len(b) == 0 {
				buckets[h] = append(b, &cseCand{x: x})
				continue
			}
			key, ok := cseKey(mc, classes, x)
			if !ok {
				continue
			}
			var y *hlo.Instruction
			for _, cd := range b {
				if !cd.keyed {
					cd.key, cd.ok = cseKey(mc, classes, cd.x)
					cd.keyed = true
				}
				if cd.ok && cd.key == key {
					y = cd.x
					break
				}
			}
			if y != nil {
				e.anchor = x
				e.replace(x, y)
				continue
			}
			buckets[h] = append(b, &cseCand{x: x, key: key, ok: true, keyed: true})
		}
		e.finish()
		changed = changed || e.changed
	}
	return changed, nil
}

// cseCand is an instruction CSE may merge later ones into, with its key once rendered.
type cseCand struct {
	x         *hlo.Instruction
	key       string
	ok, keyed bool
}

// cseHash hashes the parts of x that cseKey renders and that are cheap to read: the
// opcode, the result's element type and dimensions and the operands (in cseKey's order
// for commutative ops). Instructions with equal keys have equal hashes.
func cseHash(x *hlo.Instruction) uint64 {
	h := uint64(14695981039346656037)
	mix := func(v uint64) { h = (h ^ v) * 1099511628211 }
	mix(uint64(x.Opcode))
	mix(uint64(x.Shape.Elem))
	mix(uint64(len(x.Shape.Dims)))
	for _, d := range x.Shape.Dims {
		mix(uint64(d))
	}
	mix(uint64(len(x.Operands)))
	ops := x.Operands
	swap := commutative(x) && len(ops) >= 2 && ops[1].ID < ops[0].ID
	for j, op := range ops {
		if swap && j < 2 {
			op = ops[1-j]
		}
		mix(uint64(op.ID))
	}
	return h
}

// cseKey renders everything that determines x's value, or ok=false when x must not be
// merged.
func cseKey(mc *modCtx, classes map[*hlo.Computation]*hlo.Computation, x *hlo.Instruction) (string, bool) {
	if x.Opcode == hlo.OpConstant {
		vals, ok, _ := mc.knownLiteral(x)
		if !ok {
			return "", false
		}
		return "constant " + x.Shape.String() + " " + formatLiteral(x.Shape, vals), true
	}
	k := x.CloneShallow()
	k.Name = "k"
	k.Metadata = ""
	if commutative(k) && k.Operands[1].ID < k.Operands[0].ID {
		k.Operands[0], k.Operands[1] = k.Operands[1], k.Operands[0]
	}
	k.ToApply = classRep(classes, k.ToApply)
	k.Calls = classRep(classes, k.Calls)
	k.Condition = classRep(classes, k.Condition)
	k.Body = classRep(classes, k.Body)
	return k.Text(), true
}

func classRep(classes map[*hlo.Computation]*hlo.Computation, c *hlo.Computation) *hlo.Computation {
	if c == nil {
		return nil
	}
	if r, ok := classes[c]; ok {
		return r
	}
	return c
}

// computationClasses maps every called computation to the first one (in module order)
// that is structurally identical to it: the same instructions in the same order with
// the same opcodes, shapes, operand positions, attributes and (classes of) called
// computations, names and metadata aside.
func computationClasses(m *hlo.Module) map[*hlo.Computation]*hlo.Computation {
	called := map[*hlo.Computation]bool{}
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			for _, cc := range in.CalledComputations() {
				called[cc] = true
			}
		}
	}
	classes := make(map[*hlo.Computation]*hlo.Computation, len(called))
	byPrint := map[string]*hlo.Computation{}
	for _, c := range m.Computations { // callees come before callers
		if !called[c] {
			continue
		}
		fp := fingerprint(c, classes)
		if r, ok := byPrint[fp]; ok {
			classes[c] = r
		} else {
			byPrint[fp] = c
			classes[c] = c
		}
	}
	return classes
}

// fingerprint prints c with instructions renamed by position.
func fingerprint(c *hlo.Computation, classes map[*hlo.Computation]*hlo.Computation) string {
	pos := make(map[*hlo.Instruction]int, len(c.Instructions))
	named := make(map[*hlo.Instruction]*hlo.Instruction, len(c.Instructions))
	var b strings.Builder
	for i, in := range c.Instructions {
		pos[in] = i
		k := in.CloneShallow()
		k.Name = "i" + strconv.Itoa(i)
		k.Metadata = ""
		for j, op := range k.Operands {
			k.Operands[j] = named[op]
		}
		k.ToApply = classRep(classes, k.ToApply)
		k.Calls = classRep(classes, k.Calls)
		k.Condition = classRep(classes, k.Condition)
		k.Body = classRep(classes, k.Body)
		named[in] = k
		b.WriteString(k.Text())
		b.WriteByte('\n')
	}
	if c.IsFusion {
		b.WriteString("fusion ")
	}
	b.WriteString("root ")
	b.WriteString(strconv.Itoa(pos[c.Root]))
	return b.String()
}

func dce() Pass {
	return newPass("dce",
		"dead-code elimination: deletes unused pure instructions and computations nothing refers to",
		runDCE)
}

// runDCE is HloDCE: in each flow computation it deletes every pure instruction (not a
// parameter) whose value nobody reads and that is not the root — never a side-effecting
// or opaque one, nor a call/while whose callees are not pure — then deletes the
// computations that nothing reachable from the entry refers to.
func runDCE(m *hlo.Module) (bool, error) {
	mc := newModCtx(m)
	changed := false
	for _, c := range flowComputations(m) {
		e := mc.edit(c)
		e.sweep()
		e.finish()
		changed = changed || e.changed
	}
	if removeUnreferenced(m) {
		changed = true
	}
	return changed, nil
}

func tupleSimplifier() Pass {
	return newPass("tuple-simplifier",
		"get-tuple-element(tuple(...), i) → operand i; tuple(get-tuple-element(t, 0), ..., get-tuple-element(t, n-1)) → t",
		runTupleSimplifier)
}

// runTupleSimplifier is TupleSimplifier: get-tuple-element of a tuple instruction is
// replaced by the tuple's operand, and a tuple that reassembles every element of one
// tuple-shaped value, in order, is replaced by that value.
func runTupleSimplifier(m *hlo.Module) (bool, error) {
	return rewriteEach(m, false, nil, func(e *editor, x *hlo.Instruction) error {
		switch x.Opcode {
		case hlo.OpGetTupleElement:
			if t := x.Operands[0]; t.Opcode == hlo.OpTuple && x.Index < len(t.Operands) {
				e.replace(x, t.Operands[x.Index])
			}
		case hlo.OpTuple:
			if len(x.Operands) == 0 || x.Operands[0].Opcode != hlo.OpGetTupleElement {
				return nil
			}
			src := x.Operands[0].Operands[0]
			ok := len(src.Shape.Tuple) == len(x.Operands) && src.Shape.Compatible(x.Shape)
			for j, op := range x.Operands {
				ok = ok && op.Opcode == hlo.OpGetTupleElement && op.Operands[0] == src && op.Index == j
			}
			if ok {
				e.replace(x, src)
			}
		}
		return nil
	})
}

func callInliner() Pass {
	return newPass("call-inliner",
		"inlines every call instruction (not fusion) into its caller and deletes callees left unused",
		runCallInliner)
}

// runCallInliner is CallInliner: every call in a flow computation is replaced by a copy
// of its callee's instructions (parameters replaced by the call's operands; calls inside
// the callee inlined too), and callees nothing refers to any more are deleted. The
// copied instructions get fresh names derived from the callee's. Side-effecting
// instructions in the callee are copied once per call site, so each still runs exactly
// once per execution of the call.
func runCallInliner(m *hlo.Module) (bool, error) {
	return inlineEach(m, false, func(e *editor, x *hlo.Instruction) *hlo.Instruction {
		if x.Opcode != hlo.OpCall || x.Calls == nil || x.Calls.IsFusion {
			return nil
		}
		return inlineDeep(e, x.Calls, x.Operands)
	})
}

// inlineEach is the loop of the inlining passes (CallInliner, WhileLoopUnroller). With
// literals, the constant payloads of m's flow computations are checked first (a
// malformed one is an error before anything changes). Then in every flow computation, in
// order, expand runs on each instruction that was there when the computation's edit
// began and is not dead (an unused one too: a call or loop may have side effects), with
// the anchor set to it; the instruction it returns (nil: leave x) replaces x, which is
// killed. When anything changed, the computations nothing refers to any more are
// deleted. It reports whether anything changed.
func inlineEach(m *hlo.Module, literals bool, expand func(e *editor, x *hlo.Instruction) *hlo.Instruction) (bool, error) {
	mc := newModCtx(m)
	comps := flowComputations(m)
	if literals {
		if err := mc.checkLiterals(comps); err != nil {
			return false, err
		}
	}
	changed := false
	for _, c := range comps {
		e := mc.edit(c)
		for i := 0; i < e.norig; i++ {
			x := e.ins[i]
			if e.dead[i] {
				continue
			}
			e.anchor = x
			if r := expand(e, x); r != nil {
				e.replace(x, r)
				e.kill(x)
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

// inlineDeep is inlineInto with the calls inside callee inlined as well.
func inlineDeep(e *editor, callee *hlo.Computation, args []*hlo.Instruction) *hlo.Instruction {
	vals := make(map[*hlo.Instruction]*hlo.Instruction, len(callee.Instructions))
	for _, in := range callee.Instructions {
		switch {
		case in.Opcode == hlo.OpParameter:
			if in.ParamNum < 0 || in.ParamNum >= len(args) {
				internalf("%s has parameter %d, the call passes %d operands", callee.Name, in.ParamNum, len(args))
			}
			vals[in] = args[in.ParamNum]
		case in.Opcode == hlo.OpCall && in.Calls != nil && !in.Calls.IsFusion:
			sub := make([]*hlo.Instruction, len(in.Operands))
			for j, op := range in.Operands {
				sub[j] = vals[op]
			}
			vals[in] = inlineDeep(e, in.Calls, sub)
		default:
			k := in.CloneShallow()
			k.Name = e.mc.uniqueName(in.Name)
			for j, op := range in.Operands {
				k.Operands[j] = vals[op]
			}
			layout := in.Shape.Layout.Clone()
			vals[in] = e.add(k)
			vals[in].Shape.Layout = layout
		}
	}
	return vals[callee.Root]
}

// kill deletes x, which nothing may read any more, even when it is not pure (a call or
// while whose work was copied elsewhere).
func (e *editor) kill(x *hlo.Instruction) {
	if e.dead[x.ID] {
		return
	}
	if len(e.users[x.ID]) > 0 || x == e.c.Root {
		internalf("deleting %%%s in %s, which is still used", x.Name, e.c.Name)
	}
	e.dead[x.ID] = true
	e.changed = true
	ops := slices.Clone(x.Operands)
	for _, op := range ops {
		e.dropUse(op, x)
	}
	for _, op := range ops {
		e.removeIfDead(op)
	}
}
