package opt

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// internalError is what the editor panics with when a pass builds something malformed;
// Pass.Run recovers it (and any other panic) into an error naming the pass.
type internalError struct{ msg string }

func internalf(format string, args ...any) {
	panic(internalError{fmt.Sprintf(format, args...)})
}

// guard runs f, turning a panic into an error that names the pass.
func guard(name string, f func() (bool, error)) (changed bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			if ie, ok := r.(internalError); ok {
				err = fmt.Errorf("opt: pass %s: internal error: %s", name, ie.msg)
			} else {
				err = fmt.Errorf("opt: pass %s: internal error: %v", name, r)
			}
			changed = true // the module may be partly rewritten
		}
	}()
	changed, err = f()
	if err != nil {
		err = fmt.Errorf("opt: pass %s: %w", name, err)
	}
	return changed, err
}

// modCtx is the per-run state a pass keeps about a module: the instruction names in use
// (new names must be unique module-wide), parsed literals and the purity of computations.
type modCtx struct {
	m     *hlo.Module
	names map[string]bool
	next  map[string]int
	lits  map[*hlo.Instruction]litResult
	pureC map[*hlo.Computation]bool
}

type litResult struct {
	vals []float64
	err  error
}

func newModCtx(m *hlo.Module) *modCtx {
	return &modCtx{m: m, next: map[string]int{}, lits: map[*hlo.Instruction]litResult{}, pureC: map[*hlo.Computation]bool{}}
}

// uniqueName returns base.N for the smallest N (from a per-base counter) not in use.
func (mc *modCtx) uniqueName(base string) string {
	if mc.names == nil { // built on first use: most pass runs create nothing
		mc.names = make(map[string]bool, mc.m.InstructionCount())
		for _, c := range mc.m.Computations {
			for _, in := range c.Instructions {
				mc.names[in.Name] = true
			}
		}
	}
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		if _, err := strconv.Atoi(base[i+1:]); err == nil {
			base = base[:i]
		}
	}
	for {
		n := mc.next[base]
		mc.next[base] = n + 1
		name := base + "." + strconv.Itoa(n)
		if !mc.names[name] {
			mc.names[name] = true
			return name
		}
	}
}

// literal returns the parsed values of a constant (see parseLiteral), cached.
func (mc *modCtx) literal(in *hlo.Instruction) ([]float64, error) {
	if r, ok := mc.lits[in]; ok {
		return r.vals, r.err
	}
	v, err := parseLiteral(in)
	mc.lits[in] = litResult{v, err}
	return v, err
}

// knownLiteral returns a constant's values, ok=false when they are unknown, and an error
// when the literal is malformed.
func (mc *modCtx) knownLiteral(in *hlo.Instruction) ([]float64, bool, error) {
	if in.Opcode != hlo.OpConstant {
		return nil, false, nil
	}
	v, err := mc.literal(in)
	if errors.Is(err, errUnknownLiteral) { // wrapped with the constant and element
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return v, true, nil
}

// pure reports whether in has no side effects: its opcode is on the pure list and every
// computation it calls is pure.
func (mc *modCtx) pure(in *hlo.Instruction) bool {
	if !pureOpcode(in.Opcode) {
		return false
	}
	for _, c := range in.CalledComputations() {
		if !mc.pureComp(c) {
			return false
		}
	}
	return true
}

func (mc *modCtx) pureComp(c *hlo.Computation) bool {
	if p, ok := mc.pureC[c]; ok {
		return p
	}
	mc.pureC[c] = false // HLO call graphs are acyclic; this only guards malformed input
	p := true
	for _, in := range c.Instructions {
		if !mc.pure(in) {
			p = false
			break
		}
	}
	mc.pureC[c] = p
	return p
}

// removable reports whether an unused in may be deleted: pure and not a parameter.
func (mc *modCtx) removable(in *hlo.Instruction) bool {
	return in.Opcode != hlo.OpParameter && mc.pure(in)
}

// passFlow selects the computations the passes rewrite and OpCount counts: the entry and
// every computation reachable from it through call and while instructions, in module
// order; reducers (to_apply), fusion bodies, sort comparators and conditional branches
// are left alone.
func passFlow() hlo.FlowOptions { return hlo.FlowOptions{Calls: true, Order: hlo.ModuleOrder} }

// flowComputations returns the computations passFlow selects. newPass checks that the
// module's flow resolves before a pass runs, so a failure here means the pass broke it.
func flowComputations(m *hlo.Module) []*hlo.Computation {
	f, err := hlo.FlowComputations(m, passFlow())
	if err != nil {
		internalf("%v", err)
	}
	return f.Computations
}

// removeUnreferenced deletes the computations that no instruction reachable from the
// entry refers to (by a typed reference, by name in a raw *_computation(s) attribute such
// as a conditional's branch_computations, or by "%name" inside any raw attribute). It
// reports whether it removed any.
func removeUnreferenced(m *hlo.Module) bool {
	byName := make(map[string]*hlo.Computation, len(m.Computations))
	for _, c := range m.Computations {
		byName[c.Name] = c
	}
	reach := map[*hlo.Computation]bool{}
	var visit func(c *hlo.Computation)
	visit = func(c *hlo.Computation) {
		if c == nil || reach[c] {
			return
		}
		reach[c] = true
		for _, in := range c.Instructions {
			for _, cc := range in.CalledComputations() {
				visit(cc)
			}
			for _, a := range in.Extra {
				if strings.HasSuffix(a.Key, "_computation") || strings.HasSuffix(a.Key, "_computations") {
					// branch_computations={b1, b2}, true_computation=t: names with or
					// without the % sigil.
					for _, f := range strings.FieldsFunc(a.Value, func(r rune) bool { return r > 127 || !isNameByte(byte(r)) }) {
						visit(byName[f])
					}
				}
				for _, part := range strings.Split(a.Value, "%")[1:] {
					end := 0
					for end < len(part) && (isNameByte(part[end])) {
						end++
					}
					visit(byName[part[:end]])
				}
			}
		}
	}
	visit(m.Entry)
	kept := m.Computations[:0:0]
	for _, c := range m.Computations {
		if reach[c] {
			kept = append(kept, c)
		}
	}
	if len(kept) == len(m.Computations) {
		return false
	}
	m.Computations = kept
	return true
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// editor rewrites one computation in place. It indexes instructions by ID (their
// position when the edit began; new instructions get the next IDs) and keeps one user
// entry per operand slot, so that replacing an instruction and deleting what becomes
// dead are proportional to the instructions touched, not to the computation's size.
//
// New instructions are placed just before the anchor (the instruction being rewritten,
// which follows everything its rewrite may read); finish restores a topological order
// in any case and renumbers.
type editor struct {
	mc      *modCtx
	c       *hlo.Computation
	ins     []*hlo.Instruction   // by ID
	users   [][]*hlo.Instruction // by ID: one entry per operand slot that reads it
	dead    []bool               // by ID
	before  [][]*hlo.Instruction // by anchor ID: new instructions to place before it
	norig   int
	anchor  *hlo.Instruction
	changed bool
}

// rewriteEach is the loop of the local rewrite passes. With literals, the constant
// payloads of m's flow computations are checked first (a malformed one is an error before
// anything changes). Then in every flow computation, in order, f runs on each instruction
// that was there when the computation's edit began, is still used, and for which keep
// holds (nil: every one), with the anchor set to it (new instructions go just before it); the edit is
// finished before the next computation. It reports whether anything changed; an error
// from f stops it at once, with what was changed so far.
func rewriteEach(m *hlo.Module, literals bool, keep func(mc *modCtx, x *hlo.Instruction) bool,
	f func(e *editor, x *hlo.Instruction) error) (bool, error) {
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
			if e.unused(x) || (keep != nil && !keep(mc, x)) {
				continue
			}
			e.anchor = x
			if err := f(e, x); err != nil {
				return changed, err
			}
		}
		e.finish()
		changed = changed || e.changed
	}
	return changed, nil
}

func (mc *modCtx) edit(c *hlo.Computation) *editor {
	n := len(c.Instructions)
	e := &editor{mc: mc, c: c, ins: append([]*hlo.Instruction(nil), c.Instructions...),
		users: make([][]*hlo.Instruction, n), dead: make([]bool, n), before: make([][]*hlo.Instruction, n), norig: n}
	c.Renumber()
	// Every instruction's users get their own region of one backing array (capped, so
	// that growing one list reallocates it rather than overwrite the next).
	count := make([]int32, n)
	slots := 0
	for _, in := range c.Instructions {
		for _, op := range in.Operands {
			if op == nil || op.ID >= n || c.Instructions[op.ID] != op {
				internalf("computation %s: %%%s reads an operand outside the computation (the module does not verify)", c.Name, in.Name)
			}
			count[op.ID]++
			slots++
		}
	}
	backing := make([]*hlo.Instruction, slots)
	off := 0
	for i, k := range count {
		e.users[i] = backing[off : off : off+int(k)]
		off += int(k)
	}
	for _, in := range c.Instructions {
		for _, op := range in.Operands {
			e.users[op.ID] = append(e.users[op.ID], in)
		}
	}
	return e
}

// live reports whether in belongs to the computation being edited and was not deleted.
func (e *editor) live(in *hlo.Instruction) bool {
	return in.ID < len(e.ins) && e.ins[in.ID] == in && !e.dead[in.ID]
}

// unused reports whether in was deleted or nothing reads it (dead code, which the
// rewriting passes leave to DCE).
func (e *editor) unused(in *hlo.Instruction) bool {
	return e.dead[in.ID] || (in != e.c.Root && len(e.users[in.ID]) == 0)
}

// fresh reports whether in was created during this edit.
func (e *editor) fresh(in *hlo.Instruction) bool { return in.ID >= e.norig && e.ins[in.ID] == in }

// userCount is the number of operand slots reading in (the root counts as one more).
func (e *editor) userCount(in *hlo.Instruction) int {
	n := len(e.users[in.ID])
	if in == e.c.Root {
		n++
	}
	return n
}

// users lists the distinct users of in in a deterministic order.
func (e *editor) usersOf(in *hlo.Instruction) []*hlo.Instruction {
	us := e.users[in.ID]
	out := make([]*hlo.Instruction, 0, len(us))
	for _, u := range us {
		dup := false
		for _, v := range out {
			if v == u {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, u)
		}
	}
	return out
}

// onlyUsedBy reports whether every use of in is by u (in is not the root).
func (e *editor) onlyUsedBy(in, u *hlo.Instruction) bool {
	if in == e.c.Root {
		return false
	}
	for _, x := range e.users[in.ID] {
		if x != u {
			return false
		}
	}
	return len(e.users[in.ID]) > 0
}

// wouldDie reports whether in is deleted once its uses by u are gone.
func (e *editor) wouldDie(in, u *hlo.Instruction) bool {
	return e.onlyUsedBy(in, u) && e.mc.removable(in)
}

// add names in (when it has no name), infers and sets its shape (without layout), and
// inserts it before the current anchor. in.Shape must carry the dimensions of ops whose
// result is not implied by their operands (broadcast, reshape, constant, iota, ...).
func (e *editor) add(in *hlo.Instruction) *hlo.Instruction {
	for _, op := range in.Operands {
		if !e.live(op) {
			internalf("new %s reads %%%s, which is not live in %s", in.Opcode, op.Name, e.c.Name)
		}
	}
	s, err := hlo.InferShape(in)
	if err != nil {
		internalf("new %s in %s: %v", in.Opcode, e.c.Name, err)
	}
	in.Shape = s
	if in.Name == "" {
		in.Name = e.mc.uniqueName(in.Opcode.String())
	}
	in.ID = len(e.ins)
	e.ins = append(e.ins, in)
	e.users = append(e.users, nil)
	e.dead = append(e.dead, false)
	e.before = append(e.before, nil)
	for _, op := range in.Operands {
		e.users[op.ID] = append(e.users[op.ID], in)
	}
	if e.anchor == nil {
		internalf("new %s in %s without an anchor", in.Opcode, e.c.Name)
	}
	e.before[e.anchor.ID] = append(e.before[e.anchor.ID], in)
	e.changed = true
	return in
}

// op builds and adds an instruction of the given opcode, result shape and operands.
func (e *editor) op(op hlo.Opcode, shape hlo.Shape, operands ...*hlo.Instruction) *hlo.Instruction {
	return e.add(&hlo.Instruction{Opcode: op, Shape: shape, Operands: operands})
}

// constant adds a constant of shape s with the given row-major values.
func (e *editor) constant(s hlo.Shape, vals []float64) *hlo.Instruction {
	in := e.add(&hlo.Instruction{Opcode: hlo.OpConstant, Shape: hlo.Array(s.Elem, s.Dims...), Literal: formatLiteral(s, vals)})
	e.mc.lits[in] = litResult{vals: vals}
	return in
}

// scalar adds a scalar constant of type t.
func (e *editor) scalar(t hlo.ElemType, v float64) *hlo.Instruction {
	return e.constant(hlo.Scalar(t), []float64{roundTo(v, t)})
}

// broadcast adds broadcast(x) to dims with x's dimension i at result dimension bd[i]
// (x itself when that is the identity).
func (e *editor) broadcast(x *hlo.Instruction, bd []int, dims []int) *hlo.Instruction {
	if x.Shape.Rank() == len(dims) && isIota(bd) && intsEq(x.Shape.Dims, dims) {
		return x
	}
	return e.add(&hlo.Instruction{Opcode: hlo.OpBroadcast, Operands: []*hlo.Instruction{x},
		Shape: hlo.Array(x.Shape.Elem, dims...), Dimensions: append([]int{}, bd...), HasDimensions: true})
}

// reshape adds reshape(x) to dims (x itself when the dimensions already match).
func (e *editor) reshape(x *hlo.Instruction, dims []int) *hlo.Instruction {
	if intsEq(x.Shape.Dims, dims) {
		return x
	}
	return e.add(&hlo.Instruction{Opcode: hlo.OpReshape, Operands: []*hlo.Instruction{x}, Shape: hlo.Array(x.Shape.Elem, dims...)})
}

// transpose adds transpose(x, perm) (x itself for the identity permutation).
func (e *editor) transpose(x *hlo.Instruction, perm []int) *hlo.Instruction {
	if isIota(perm) {
		return x
	}
	return e.add(&hlo.Instruction{Opcode: hlo.OpTranspose, Operands: []*hlo.Instruction{x},
		Dimensions: append([]int{}, perm...), HasDimensions: true})
}

// clone adds a copy of in's opcode and attributes with new operands and result shape s
// (dimensions as required by add).
func (e *editor) clone(in *hlo.Instruction, s hlo.Shape, operands ...*hlo.Instruction) *hlo.Instruction {
	c := in.CloneShallow()
	c.Name = ""
	c.Metadata = in.Metadata
	c.Shape = s
	c.Operands = operands
	return e.add(c)
}

// replace makes every use of old (and the root, if it is old) use nw instead, then
// deletes old and the operands that become dead (XLA's ReplaceInstruction). nw must
// compute the same value as old, with compatible shape.
func (e *editor) replace(old, nw *hlo.Instruction) {
	if old == nw {
		return
	}
	if !old.Shape.Compatible(nw.Shape) {
		internalf("replacing %s by %s in %s: shapes differ", old, nw, e.c.Name)
	}
	if !e.live(old) || !e.live(nw) {
		internalf("replacing %%%s by %%%s in %s: not live", old.Name, nw.Name, e.c.Name)
	}
	if e.fresh(nw) {
		if nw.Metadata == "" {
			nw.Metadata = old.Metadata
		}
		if nw.Shape.Layout == nil && old.Shape.Layout != nil {
			nw.Shape.Layout = old.Shape.Layout.Clone()
		}
	}
	us := e.users[old.ID]
	var keep []*hlo.Instruction
	for _, u := range us {
		if u == nw { // nw reads old: keep that use
			keep = append(keep, u)
			continue
		}
		for j, op := range u.Operands {
			if op == old {
				u.Operands[j] = nw
				break
			}
		}
		e.users[nw.ID] = append(e.users[nw.ID], u)
	}
	e.users[old.ID] = keep
	if e.c.Root == old {
		e.c.Root = nw
	}
	e.changed = true
	e.removeIfDead(old)
}

// setOperand makes u read x in operand slot i, deleting the old operand if it dies.
func (e *editor) setOperand(u *hlo.Instruction, i int, x *hlo.Instruction) {
	old := u.Operands[i]
	if old == x {
		return
	}
	e.dropUse(old, u)
	u.Operands[i] = x
	e.users[x.ID] = append(e.users[x.ID], u)
	e.changed = true
	e.removeIfDead(old)
}

// dropUse removes one user entry u from in's users.
func (e *editor) dropUse(in, u *hlo.Instruction) {
	us := e.users[in.ID]
	for k, x := range us {
		if x == u {
			copy(us[k:], us[k+1:])
			e.users[in.ID] = us[:len(us)-1]
			return
		}
	}
	internalf("%%%s is not a user of %%%s", u.Name, in.Name)
}

// removeIfDead deletes in when nothing reads it and it is removable, then does the same
// for its operands.
func (e *editor) removeIfDead(in *hlo.Instruction) {
	stack := []*hlo.Instruction{in}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if e.dead[x.ID] || len(e.users[x.ID]) > 0 || x == e.c.Root || !e.mc.removable(x) {
			continue
		}
		e.dead[x.ID] = true
		e.changed = true
		for _, op := range x.Operands {
			e.dropUse(op, x)
			stack = append(stack, op)
		}
	}
}

// sweep deletes the dead code of the computation (what DCE deletes).
func (e *editor) sweep() {
	for i := len(e.ins) - 1; i >= 0; i-- {
		e.removeIfDead(e.ins[i])
	}
}

// finish writes the edited instruction list back to the computation in a topological
// order (the original order with new instructions before their anchors, fixed up where
// needed) and renumbers it.
func (e *editor) finish() {
	if e.dead[e.c.Root.ID] {
		internalf("the root of %s was deleted", e.c.Name)
	}
	// new instructions nothing reads (replacements of dead code) go again
	for i := len(e.ins) - 1; i >= e.norig; i-- {
		e.removeIfDead(e.ins[i])
	}
	if e.inOrder() {
		return // nothing was added or deleted and the order is topological: it stays
	}
	planned := make([]*hlo.Instruction, 0, len(e.ins))
	var plan func(x *hlo.Instruction)
	plan = func(x *hlo.Instruction) {
		for _, b := range e.before[x.ID] {
			plan(b)
		}
		if !e.dead[x.ID] {
			planned = append(planned, x)
		}
	}
	for _, x := range e.c.Instructions {
		plan(x)
	}
	state := make([]uint8, len(e.ins)) // 0 new, 1 visiting, 2 done
	out := make([]*hlo.Instruction, 0, len(planned))
	var emit func(x *hlo.Instruction)
	emit = func(x *hlo.Instruction) {
		switch state[x.ID] {
		case 2:
			return
		case 1:
			internalf("cycle through %%%s in %s", x.Name, e.c.Name)
		}
		if e.dead[x.ID] {
			internalf("a live instruction of %s reads the deleted %%%s", e.c.Name, x.Name)
		}
		state[x.ID] = 1
		for _, op := range x.Operands {
			emit(op)
		}
		state[x.ID] = 2
		out = append(out, x)
	}
	for _, x := range planned {
		emit(x)
	}
	e.c.Instructions = out
	e.c.Renumber()
}

// inOrder reports whether the computation's instruction list is what finish would write:
// the edit added and deleted nothing and every instruction follows its operands.
func (e *editor) inOrder() bool {
	if len(e.ins) != e.norig || len(e.c.Instructions) != e.norig {
		return false
	}
	for i, x := range e.c.Instructions {
		if x != e.ins[i] || x.ID != i || e.dead[i] || len(e.before[i]) > 0 {
			return false
		}
		for _, op := range x.Operands {
			if op == nil || op.ID >= i || e.ins[op.ID] != op {
				return false
			}
		}
	}
	return true
}

// setRoot makes nw the computation's root and deletes the old root if it dies. Unlike
// replace, the shapes may differ (the caller changes the computation's signature).
func (e *editor) setRoot(nw *hlo.Instruction) {
	old := e.c.Root
	if old == nw {
		return
	}
	e.c.Root = nw
	e.changed = true
	e.removeIfDead(old)
}

func isIota(p []int) bool {
	for i, d := range p {
		if d != i {
			return false
		}
	}
	return true
}

func intsEq(a, b []int) bool {
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
