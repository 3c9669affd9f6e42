package compiler

import (
	"slices"
	"sort"
	"strconv"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// MaxFusionSize bounds the instructions of one kernel (XLA bounds fusion size too); the
// default heuristic stops earlier, at DefaultFusionSize.
const (
	MaxFusionSize     = 128
	DefaultFusionSize = 64
)

// isHero reports whether in is the one expensive op a kernel is built around.
func isHero(in *hlo.Instruction) bool {
	switch in.Opcode {
	case hlo.OpDot, hlo.OpConvolution, hlo.OpReduce:
		return true
	}
	return false
}

// fusibleProducer reports whether in may ever be fused into a consumer's kernel.
func fusibleProducer(in *hlo.Instruction) bool {
	if !in.Shape.IsArray() {
		return false
	}
	switch in.Opcode.Category() {
	case hlo.CatElementwise, hlo.CatTranscendental, hlo.CatDot, hlo.CatConvolution, hlo.CatReduce:
		return true
	case hlo.CatDataMovement:
		return true
	case hlo.CatSource:
		return in.Opcode == hlo.OpIota
	case hlo.CatIndexed:
		return in.Opcode == hlo.OpGather || in.Opcode == hlo.OpDynamicSlice
	}
	return false
}

// isFree reports whether an instruction of a flow computation never becomes a kernel:
// sources, tuples and bitcasts; control flow (while, conditional: their computations are
// compiled on their own); collectives (timed by the interconnect model); custom-calls
// that move no data (Sharding, SPMD shape changes).
func isFree(in *hlo.Instruction) bool {
	switch in.Opcode {
	case hlo.OpParameter, hlo.OpConstant, hlo.OpTuple, hlo.OpGetTupleElement, hlo.OpBitcast, hlo.OpAfterAll,
		hlo.OpAddDependency, hlo.OpDomain, hlo.OpOptimizationBarrier: // scheduling only: no data moves
		return true
	case hlo.OpWhile, hlo.OpConditional, hlo.OpCall:
		return true
	}
	if _, ok := collectiveKind(in); ok {
		return true
	}
	return isFreeCustomCall(in)
}

// cheapToDuplicate ops are recomputed in every consumer rather than materialized: they
// read at most as much as they write and pull in no expensive work.
func cheapToDuplicate(in *hlo.Instruction) bool {
	switch in.Opcode {
	case hlo.OpBroadcast, hlo.OpIota, hlo.OpBitcast, hlo.OpReshape, hlo.OpConvert, hlo.OpConstant:
		return true
	}
	return false
}

// cheapPrologue ops may be fused into the operand side of a dot or convolution.
func cheapPrologue(in *hlo.Instruction) bool {
	switch in.Opcode {
	case hlo.OpConvert, hlo.OpBroadcast, hlo.OpBitcast, hlo.OpCopy, hlo.OpReshape, hlo.OpTranspose,
		hlo.OpNegate, hlo.OpMultiply, hlo.OpAdd, hlo.OpSubtract, hlo.OpMaximum, hlo.OpMinimum, hlo.OpSelect, hlo.OpCompare, hlo.OpIota:
		return true
	}
	return false
}

// group is one kernel under construction: a root and the producers fused into it.
type group struct {
	root     *hlo.Instruction
	members  map[*hlo.Instruction]bool
	hero     *hlo.Instruction
	prologue map[*hlo.Instruction]bool
}

func (g *group) add(p *hlo.Instruction, via *hlo.Instruction) {
	g.members[p] = true
	if isHero(p) {
		g.hero = p
	}
	if g.hero != nil && (via == g.hero || g.prologue[via]) {
		g.prologue[p] = true
	}
}

// fusionLegal reports whether producer p may join g through its user x. dup says whether
// fusing would duplicate p: it has several users, or x itself is in several kernels.
func fusionLegal(p, x *hlo.Instruction, g *group, dup bool) bool {
	if !fusibleProducer(p) || len(g.members) >= MaxFusionSize {
		return false
	}
	if isHero(p) {
		// One hero per kernel, no duplication of a hero, and only an epilogue of the
		// hero's own size after it (output fusion: bias, activation, scaling).
		return g.hero == nil && !dup && g.root.Shape.IsArray() && g.root.Shape.Elements() == p.Shape.Elements()
	}
	if g.hero != nil && (g.hero.Opcode == hlo.OpDot || g.hero.Opcode == hlo.OpConvolution) && (x == g.hero || g.prologue[x]) {
		return cheapPrologue(p)
	}
	return true
}

// defaultFuse is the XLA-like instruction fusion heuristic for edge p -> x in kernel g:
// output fusion of elementwise consumers into dots and convolutions; no fusion of
// reductions as producers; only converts, broadcasts, bitcasts and copies (layout
// changes) on the operand side of a dot or convolution; a producer read by several kernels is materialized unless it is
// cheap to duplicate (broadcast, iota, bitcast, reshape, convert); other elementwise and
// data-movement producers always; kernels capped at DefaultFusionSize.
func defaultFuse(p, x *hlo.Instruction, g *group, dup bool) bool {
	switch {
	case p.Opcode == hlo.OpDot || p.Opcode == hlo.OpConvolution:
		return x.Opcode.IsElementwise() || x.Opcode == hlo.OpBitcast
	case p.Opcode == hlo.OpReduce:
		return false
	case g.hero != nil && (g.hero.Opcode == hlo.OpDot || g.hero.Opcode == hlo.OpConvolution) && (x == g.hero || g.prologue[x]):
		// A copy there is an operand layout constraint's relayout: the kernel reads the
		// operand in its producer's layout and relayouts its tiles in VMEM, as TPU
		// convolution emitters read operands in any layout, rather than writing a
		// relaid-out copy to HBM first.
		return p.Opcode == hlo.OpConvert || p.Opcode == hlo.OpBroadcast || p.Opcode == hlo.OpBitcast || p.Opcode == hlo.OpCopy
	case dup && !cheapToDuplicate(p):
		// A producer that several kernels read is materialized once: duplicating it
		// would also pull its whole input cone into each of them (along a residual
		// stream that snowballs).
		return false
	case len(g.members) >= DefaultFusionSize:
		return false
	}
	return true
}

// fusionConfigurable reports whether the edge p -> x appears in the fusion space.
func fusionConfigurable(p *hlo.Instruction, nUsers int) bool {
	return fusibleProducer(p) && p.Opcode != hlo.OpBitcast && !(isHero(p) && nUsers != 1)
}

// runFusion is the fusion pass. It visits the entry computation from the root toward the
// parameters; every instruction that some consumer needs materialized roots a kernel, and
// each kernel pulls in producers edge by edge when the config (else the store, else
// defaultFuse) says so and the fusion is legal (fusionLegal). A producer fused into
// several kernels is duplicated into each; it is materialized as well when any consumer
// does not fuse it. Bitcasts and scalar constants are always fused. The result replaces
// every kernel by a fusion instruction calling a fused computation.
//
// Every flow computation is fused this way, the entry first. The kernels it forms are the
// kernel table, State.Kernels (ProductKernels).
func runFusion(m *hlo.Module, s *State) (bool, error) {
	var fused []*hlo.Computation
	changed := false
	flow := map[*hlo.Computation]bool{}
	s.Kernels = nil
	copied := copyAliasedOutputs(m)
	for _, c := range s.Flow {
		fc, ch := fuseComputation(c, s)
		fused = append(fused, fc...)
		changed = changed || ch
		flow[c] = true
	}
	// Callees before callers: other computations, the fused ones, then the flow
	// computations in their original order (the entry last).
	comps := make([]*hlo.Computation, 0, len(m.Computations)+len(fused))
	var flows []*hlo.Computation
	for _, c := range m.Computations {
		if flow[c] {
			if c != m.Entry {
				flows = append(flows, c)
			}
		} else {
			comps = append(comps, c)
		}
	}
	comps = append(comps, fused...)
	comps = append(comps, flows...)
	m.Computations = append(comps, m.Entry)
	return changed || copied, nil
}

// copyAliasedOutputs gives every result of the entry that is an entry parameter or a
// constant (itself or through bitcasts, add-dependency, domain, custom-calls that move
// no data such as Sharding, and get-tuple-elements of tuples and opt-barriers: the same
// buffer) a copy
// into a buffer of its own, as XLA's copy insertion does (AddSpecialCaseCopies: a
// program's output buffers are its own, never its inputs' or a read-only constant's).
// Parameters the module declares aliased to outputs (input_output_alias) are left to
// that aliasing. The copy becomes a kernel: an entry that only bitcasts its input (or
// whose result folds to a constant) still writes its output, as on the hardware. It
// reports whether it added a copy.
func copyAliasedOutputs(m *hlo.Module) bool {
	e := m.Entry
	if e == nil || e.Root == nil {
		return false
	}
	declared := false
	for _, a := range m.Attrs {
		declared = declared || a.Key == "input_output_alias"
	}
	aliased := func(x *hlo.Instruction) bool {
		for len(x.Operands) >= 1 {
			switch {
			case x.Opcode == hlo.OpBitcast || x.Opcode == hlo.OpAddDependency || x.Opcode == hlo.OpDomain || isFreeCustomCall(x):
				x = x.Operands[0]
				continue
			case x.Opcode == hlo.OpGetTupleElement:
				// The element of a tuple, through identities (an opt-barrier): the
				// tuple's operand; of a tuple-shaped parameter: the parameter.
				t := x.Operands[0]
				for t.Opcode == hlo.OpOptimizationBarrier && len(t.Operands) == 1 {
					t = t.Operands[0]
				}
				if t.Opcode == hlo.OpTuple && x.Index < len(t.Operands) {
					x = t.Operands[x.Index]
				} else {
					x = t
				}
				continue
			}
			break
		}
		return x.Opcode == hlo.OpConstant || x.Opcode == hlo.OpParameter && !declared
	}
	// before[u] are the copies that u (a tuple, or nil for a new root) reads, which go
	// just before it.
	before := map[*hlo.Instruction][]*hlo.Instruction{}
	added := 0
	taken := map[string]bool{}
	add := func(in *hlo.Instruction, user *hlo.Instruction) *hlo.Instruction {
		base := in.Name
		for i := 1; e.Lookup(in.Name) != nil || taken[in.Name]; i++ {
			in.Name = base + "." + strconv.Itoa(i)
		}
		taken[in.Name] = true
		before[user] = append(before[user], in)
		added++
		return in
	}
	copyOf := func(x, user *hlo.Instruction) *hlo.Instruction {
		return add(&hlo.Instruction{Name: x.Name + ".output_copy", Opcode: hlo.OpCopy, Shape: x.Shape, Operands: []*hlo.Instruction{x}}, user)
	}
	element := func(x *hlo.Instruction, i int) *hlo.Instruction {
		return &hlo.Instruction{Name: x.Name + ".output_element", Opcode: hlo.OpGetTupleElement, Index: i,
			Shape: x.Shape.Tuple[i].Clone(), Operands: []*hlo.Instruction{x}}
	}
	// needsCopy reports whether an output value (an array, or a tuple-shaped value that
	// is not a tuple instruction: a tuple parameter, an opt-barrier) has a leaf to copy.
	var needsCopy func(x *hlo.Instruction) bool
	needsCopy = func(x *hlo.Instruction) bool {
		if x.Shape.IsArray() {
			return aliased(x)
		}
		for i := range x.Shape.Tuple {
			if needsCopy(element(x, i)) {
				return true
			}
		}
		return false
	}
	// output returns what user (nil: the new root) reads in place of the output value x:
	// x with the leaves that alias an input or a constant copied. A tuple instruction is
	// rewritten in place; another tuple-shaped value is taken apart (get-tuple-element)
	// and put back together around the copies.
	var output func(x, user *hlo.Instruction) *hlo.Instruction
	output = func(x, user *hlo.Instruction) *hlo.Instruction {
		switch {
		case x.Opcode == hlo.OpTuple:
			for j, op := range x.Operands {
				x.Operands[j] = output(op, x)
			}
			return x
		case !needsCopy(x):
			return x
		case x.Shape.IsArray():
			return copyOf(x, user)
		}
		elems := make([]*hlo.Instruction, len(x.Shape.Tuple))
		for i := range elems {
			elems[i] = output(add(element(x, i), user), user)
		}
		return add(&hlo.Instruction{Name: x.Name + ".output_tuple", Opcode: hlo.OpTuple, Shape: x.Shape.Clone(), Operands: elems}, user)
	}
	e.Root = output(e.Root, nil)
	if added == 0 {
		return false
	}
	out := make([]*hlo.Instruction, 0, len(e.Instructions)+added)
	for _, in := range e.Instructions {
		out = append(out, before[in]...)
		out = append(out, in)
	}
	out = append(out, before[nil]...)
	e.Instructions = out
	e.Renumber()
	return true
}

// fuseComputation fuses one flow computation (see runFusion), adds its kernels to the
// kernel table and returns the fused computations it made and whether it changed e (any
// kernel formed or dead op dropped).
func fuseComputation(e *hlo.Computation, s *State) ([]*hlo.Computation, bool) {
	firstEdge := len(s.Space.Fusion)
	users := e.Users()
	nUsers := func(x *hlo.Instruction) int { return len(users[x.ID]) }
	inEntry := func(x *hlo.Instruction) bool { return x.ID < len(e.Instructions) && e.Instructions[x.ID] == x }
	memberOf := make([][]*group, len(e.Instructions))
	material := make([]bool, len(e.Instructions))
	own := make([]*group, len(e.Instructions))
	material[e.Root.ID] = true
	seenEdge := map[string]bool{}
	diamond := localDiamonds(e, users)

	for i := len(e.Instructions) - 1; i >= 0; i-- {
		x := e.Instructions[i]
		if isFree(x) {
			if x.Opcode == hlo.OpBitcast && len(memberOf[i]) > 0 {
				// A bitcast inside kernels: pull its operand like any producer.
			} else {
				for _, op := range x.Operands {
					if inEntry(op) && !(op.Opcode == hlo.OpConstant && op.Shape.Rank() == 0) {
						material[op.ID] = true
					}
				}
				continue
			}
		}
		contexts := memberOf[i]
		if material[i] && !isFree(x) {
			g := &group{root: x, members: map[*hlo.Instruction]bool{x: true}, prologue: map[*hlo.Instruction]bool{}}
			if isHero(x) {
				g.hero = x
			}
			own[i] = g
			contexts = append([]*group{g}, contexts...)
		}
		if x.Opcode == hlo.OpBitcast && material[i] {
			// A materialized bitcast aliases its operand, which must exist.
			if op := x.Operands[0]; inEntry(op) {
				material[op.ID] = true
			}
		}
		for _, g := range contexts {
			for j, p := range x.Operands {
				if !inEntry(p) || g.members[p] {
					continue
				}
				if !p.Shape.IsArray() {
					// A tuple-shaped producer (copy-start, recv, a variadic reduce) is
					// never fused into its consumer: it is a kernel or free of its own.
					material[p.ID] = true
					continue
				}
				switch {
				case p.Opcode == hlo.OpConstant && p.Shape.Rank() == 0:
					g.add(p, x)
					continue
				case p.Opcode == hlo.OpParameter || p.Opcode == hlo.OpConstant || p.Opcode == hlo.OpGetTupleElement:
					continue
				case p.Opcode == hlo.OpBitcast:
					if len(g.members) < MaxFusionSize {
						g.add(p, x)
						memberOf[p.ID] = append(memberOf[p.ID], g)
					} else {
						material[p.ID] = true
					}
					continue
				}
				n := nUsers(p)
				// dup: fusing copies p (several users, or x in several kernels). For
				// the default heuristic, users that rejoin within a short elementwise
				// diamond (GELU, softmax arithmetic) will share one kernel: no copy.
				dup := n > 1 || len(contexts) > 1
				defDup := (n > 1 && !diamond[p.ID]) || len(contexts) > 1
				fuse := false
				if fusionConfigurable(p, n) {
					name := s.qualName(e, EdgeName(p, x))
					key := EdgeKey(p, x, j)
					def := defaultFuse(p, x, g, defDup)
					fuse = def
					if want, _, ok := s.want(KindFusion, name, key); ok {
						fuse = want.Fusion
					}
					if !seenEdge[name] {
						seenEdge[name] = true
						s.Effective.Fusion[name] = fuse
						s.Space.Fusion = append(s.Space.Fusion, FusionChoice{Name: name, Key: key, Default: def, Chosen: fuse})
					}
				}
				if fuse && fusionLegal(p, x, g, dup) {
					g.add(p, x)
					memberOf[p.ID] = append(memberOf[p.ID], g)
				} else {
					material[p.ID] = true
				}
			}
		}
	}
	// The space lists edges in program order (they were met from the root up).
	slices.Reverse(s.Space.Fusion[firstEdge:])

	// Build fused computations and the new entry.
	var fused []*hlo.Computation
	remap := map[*hlo.Instruction]*hlo.Instruction{}
	sites := map[*hlo.Instruction]*KernelSite{}
	var out []*hlo.Instruction
	n := len(e.Instructions)
	for i, x := range e.Instructions {
		if g := own[i]; g != nil {
			fi, fc := s.buildFusion(g, e, remap)
			sites[fi] = &KernelSite{Fusion: fi, Computation: e, Root: g.root.Name}
			fused = append(fused, fc)
			remap[x] = fi
			out = append(out, fi)
			continue
		}
		if isFree(x) && (x.Opcode != hlo.OpBitcast || material[i] || len(memberOf[i]) == 0) {
			for j, op := range x.Operands {
				if r, ok := remap[op]; ok {
					x.Operands[j] = r
				}
			}
			out = append(out, x)
		}
	}
	e.Instructions = out
	if r, ok := remap[e.Root]; ok {
		e.Root = r
	}
	// Drop standalone bitcasts and constants nothing uses any more.
	e.Instructions = liveInstructions(e)
	for _, in := range e.Instructions {
		if site := sites[in]; site != nil {
			s.Kernels = append(s.Kernels, site)
		}
	}
	// Wrapping even a single op in a fusion instruction changes the module.
	return fused, len(fused) > 0 || len(e.Instructions) != n
}

// liveInstructions returns the instructions of c that the root depends on, parameters
// always included, in order.
func liveInstructions(c *hlo.Computation) []*hlo.Instruction {
	live := map[*hlo.Instruction]bool{}
	stack := []*hlo.Instruction{c.Root}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if live[n] {
			continue
		}
		live[n] = true
		stack = append(stack, n.Operands...)
	}
	var out []*hlo.Instruction
	for _, in := range c.Instructions {
		if live[in] || in.Opcode == hlo.OpParameter {
			out = append(out, in)
		}
	}
	return out
}

// buildFusion makes the fused computation of g and the fusion instruction calling it.
// Members are cloned in entry order; every operand outside g becomes a parameter.
func (s *State) buildFusion(g *group, e *hlo.Computation, remap map[*hlo.Instruction]*hlo.Instruction) (*hlo.Instruction, *hlo.Computation) {
	members := make([]*hlo.Instruction, 0, len(g.members))
	for m := range g.members {
		members = append(members, m)
	}
	sort.Slice(members, func(a, b int) bool { return members[a].ID < members[b].ID })
	fc := &hlo.Computation{Name: s.uniqueName("fused_" + g.root.Name), IsFusion: true}
	clones := map[*hlo.Instruction]*hlo.Instruction{}
	params := map[*hlo.Instruction]*hlo.Instruction{}
	var operands []*hlo.Instruction
	param := func(op *hlo.Instruction) *hlo.Instruction {
		if p, ok := params[op]; ok {
			return p
		}
		p := &hlo.Instruction{Name: s.uniqueName(fc.Name + ".param_" + strconv.Itoa(len(operands))),
			Opcode: hlo.OpParameter, ParamNum: len(operands), Shape: op.Shape.Clone()}
		params[op] = p
		src := op
		if r, ok := remap[op]; ok {
			src = r
		}
		operands = append(operands, src)
		fc.Instructions = append(fc.Instructions, p)
		return p
	}
	for _, mbr := range members {
		c := mbr.CloneShallow()
		c.Name = s.uniqueName(mbr.Name + "." + fc.Name[len("fused_"):])
		for j, op := range mbr.Operands {
			if cl, ok := clones[op]; ok {
				c.Operands[j] = cl
			} else {
				c.Operands[j] = param(op)
			}
		}
		clones[mbr] = c
		fc.Instructions = append(fc.Instructions, c)
	}
	fc.Root = clones[g.root]
	kind := "kLoop"
	if g.hero != nil {
		switch g.hero.Opcode {
		case hlo.OpReduce:
			kind = "kInput"
		default:
			kind = "kOutput"
		}
	}
	fi := &hlo.Instruction{Name: s.uniqueName("fusion." + g.root.Name), Opcode: hlo.OpFusion,
		Operands: operands, Calls: fc, FusionKind: kind, Shape: g.root.Shape.Clone(),
		Line: g.root.Line, Col: g.root.Col} // errors about the kernel name its root's place
	return fi, fc
}

// maxDiamond bounds the region of a local diamond.
const maxDiamond = 32

// localDiamonds marks the instructions of c (by ID) whose several users all rejoin at
// their immediate post-dominator through at most maxDiamond elementwise or cheap data
// movement instructions: such a producer and its users can share one kernel, so fusing
// it duplicates nothing. (A residual stream's add is no diamond: its paths to the next
// add cross matrix multiplies.)
func localDiamonds(c *hlo.Computation, users [][]*hlo.Instruction) []bool {
	n := len(c.Instructions)
	// Immediate post-dominators on the DAG (Cooper, Harvey and Kennedy's intersection
	// walk over a topological order; n is the virtual exit every sink reaches).
	ipdom := make([]int, n)
	intersect := func(a, b int) int {
		for a != b {
			for a < b {
				a = ipdom[a]
			}
			for b < a {
				b = ipdom[b]
			}
		}
		return a
	}
	for i := n - 1; i >= 0; i-- {
		us := users[i]
		if len(us) == 0 || c.Instructions[i] == c.Root {
			ipdom[i] = n
			continue
		}
		d := us[0].ID
		for _, u := range us[1:] {
			d = intersect(d, u.ID)
		}
		ipdom[i] = d
	}
	out := make([]bool, n)
	for i, x := range c.Instructions {
		if len(users[i]) < 2 || ipdom[i] == n || !x.Opcode.IsElementwise() && !cheapToDuplicate(x) {
			continue
		}
		d := ipdom[i]
		seen := map[int]bool{}
		stack := append([]*hlo.Instruction(nil), users[i]...)
		ok := true
		for len(stack) > 0 && ok {
			y := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if y.ID == d || seen[y.ID] {
				continue
			}
			seen[y.ID] = true
			if len(seen) > maxDiamond || !(y.Opcode.IsElementwise() || cheapToDuplicate(y)) {
				ok = false
				break
			}
			stack = append(stack, users[y.ID]...)
		}
		out[i] = ok
	}
	return out
}
