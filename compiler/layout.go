package compiler

import (
	"fmt"
	"slices"

	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/compiler/hlo"
)

// LayoutConfigurable reports whether the layout pass lets a config choose in's result
// layout: the layout-sensitive ops dot, convolution, reshape and transpose, of rank >= 2.
func LayoutConfigurable(in *hlo.Instruction) bool {
	switch in.Opcode {
	case hlo.OpDot, hlo.OpConvolution, hlo.OpReshape, hlo.OpTranspose:
		return in.Shape.IsArray() && in.Shape.Rank() >= 2
	}
	return false
}

// LayoutOptions lists the physically distinct minor-to-major orders of s: every
// permutation of its dimensions for rank <= 5 (permutations that differ only in where
// size-1 dimensions go are the same physical layout and listed once), and for higher
// ranks every choice of the two minor dimensions (the ones (8,128) tiling sees) with the
// others in row-major order. The list starts with the options earlier versions listed,
// at the same indices — for rank <= 4 every permutation, row-major first; for higher
// ranks row-major, row-major with the two minor dimensions swapped, and column-major —
// so that stored option indices keep their meaning.
func LayoutOptions(s hlo.Shape) [][]int {
	r := s.Rank()
	rm := hlo.RowMajor(r).MinorToMajor
	cands := legacyLayoutCandidates(r)
	switch {
	case r <= 4:
	case r <= maxPermutedRank:
		cands = append(cands, permutations(rm)...)
	default:
		for _, a := range rm {
			for _, b := range rm {
				if a != b {
					cands = append(cands, completeOrder(r, []int{a, b}))
				}
			}
		}
	}
	return distinctLayouts(s, cands)
}

// maxPermutedRank is the highest rank whose layout options are every permutation (120
// at rank 5, the rank of the 3D convolutions TPU layout tuning configures); beyond it
// only the two minor dimensions are chosen (30 pairs at rank 6 instead of 720 orders
// that differ mostly in the strides of major dimensions).
const maxPermutedRank = 5

// legacyLayoutCandidates are the orders LayoutOptions listed before it listed every
// order of rank-5 and higher shapes: every permutation up to rank 4, else row-major,
// minor-swapped and column-major.
func legacyLayoutCandidates(r int) [][]int {
	rm := hlo.RowMajor(r).MinorToMajor
	if r <= 4 {
		return permutations(rm)
	}
	sw := slices.Clone(rm)
	sw[0], sw[1] = sw[1], sw[0]
	cm := make([]int, r)
	for i := range cm {
		cm[i] = i
	}
	return [][]int{rm, sw, cm}
}

// distinctLayouts keeps the first of every group of physically equal orders.
func distinctLayouts(s hlo.Shape, cands [][]int) [][]int {
	var out, sigs [][]int
	for _, c := range cands {
		sig := physicalSignature(s.Dims, c)
		if !slices.ContainsFunc(sigs, func(o []int) bool { return slices.Equal(o, sig) }) {
			sigs = append(sigs, sig)
			out = append(out, c)
		}
	}
	return out
}

// completeOrder completes a minor-to-major prefix of a rank-r shape: the listed
// dimensions are the minor ones, in order; the others follow in row-major order
// (descending dimension number). The prefix must hold distinct dimensions of the shape
// (see checkOrder).
func completeOrder(r int, prefix []int) []int {
	out := slices.Clone(prefix)
	for d := r - 1; d >= 0; d-- {
		if !slices.Contains(prefix, d) {
			out = append(out, d)
		}
	}
	return out
}

// checkOrder reports whether order is a minor-to-major order, or a prefix of one, of a
// rank-r shape: distinct dimensions in [0, r).
func checkOrder(r int, order []int) error {
	seen := make([]bool, r)
	for _, d := range order {
		if d < 0 || d >= r || seen[d] {
			return fmt.Errorf("%v is not a minor-to-major order (or prefix) of a rank-%d shape", order, r)
		}
		seen[d] = true
	}
	return nil
}

// physicalSignature is the minor-to-major order without size-1 dimensions.
func physicalSignature(dims, mtm []int) []int {
	var sig []int
	for _, d := range mtm {
		if dims[d] != 1 {
			sig = append(sig, d)
		}
	}
	return sig
}

// permutations lists the permutations of first, starting with first itself, in a fixed
// order (Heap-free lexicographic enumeration over positions).
func permutations(first []int) [][]int {
	n := len(first)
	var out [][]int
	used := make([]bool, n)
	cur := make([]int, 0, n)
	var rec func()
	rec = func() {
		if len(cur) == n {
			out = append(out, slices.Clone(cur))
			return
		}
		for i := 0; i < n; i++ {
			if !used[i] {
				used[i] = true
				cur = append(cur, first[i])
				rec()
				cur = cur[:len(cur)-1]
				used[i] = false
			}
		}
	}
	rec()
	return out
}

// layoutAgnostic instructions take whatever layout their users want.
func layoutAgnostic(in *hlo.Instruction) bool {
	switch in.Opcode {
	case hlo.OpBroadcast, hlo.OpIota:
		return true
	case hlo.OpConstant:
		return in.Shape.Rank() > 0
	}
	return false
}

// sameLayoutOperands reports whether op requires its same-rank array operands to share
// its result layout.
func sameLayoutOperands(in *hlo.Instruction) bool {
	if in.Opcode.IsElementwise() && in.Opcode != hlo.OpCopy {
		return true
	}
	switch in.Opcode {
	case hlo.OpSlice, hlo.OpPad, hlo.OpReverse, hlo.OpConcatenate, hlo.OpDynamicSlice,
		hlo.OpDynamicUpdateSlice, hlo.OpReduceWindow, hlo.OpSelectAndScatter, hlo.OpScatter, hlo.OpSort:
		return true
	}
	return false
}

// rowMajorOperands reports whether op requires its operands in the default layout.
func rowMajorOperands(in *hlo.Instruction) bool {
	switch in.Opcode.Category() {
	case hlo.CatControl, hlo.CatOther:
		return in.Opcode != hlo.OpSort
	}
	return in.Opcode == hlo.OpGather
}

// defaultLayout is the XLA-like default choice among a configurable node's options. It
// chooses among the options earlier versions listed (legacyLayoutCandidates: for rank >=
// 5 row-major, minor-swap and column-major), so that the default compile did not change
// when the space grew to every order.
func defaultLayout(in *hlo.Instruction, opts [][]int, t cost.Target) int {
	s := in.Shape
	opts = opts[:min(len(opts), len(distinctLayouts(s, legacyLayoutCandidates(s.Rank()))))]
	switch in.Opcode {
	case hlo.OpConvolution:
		// Feature dimension minor, then spatial dimensions, batch major (TPU's NHWC
		// preference).
		cd := in.Conv
		want := []int{cd.OutputFeature}
		for i := len(cd.OutputSpatial) - 1; i >= 0; i-- {
			want = append(want, cd.OutputSpatial[i])
		}
		want = append(want, cd.OutputBatch)
		return findLayout(s, opts, want)
	case hlo.OpDot:
		// Row-major, unless swapping the two minor dimensions more than halves the
		// padded size (a tiny minor dimension padded to 128 lanes).
		rm := hlo.RowMajor(s.Rank()).MinorToMajor
		sw := slices.Clone(rm)
		sw[0], sw[1] = sw[1], sw[0]
		if cost.PaddedBytes(s.WithLayout(&hlo.Layout{MinorToMajor: sw}), t)*2 < cost.PaddedBytes(s.WithLayout(&hlo.Layout{MinorToMajor: rm}), t) {
			return findLayout(s, opts, sw)
		}
		return findLayout(s, opts, rm)
	case hlo.OpTranspose:
		// The layout that makes the transpose a bitcast of its operand.
		return findLayout(s, opts, bitcastTransposeLayout(in))
	}
	return 0
}

// findLayout returns the index of the option physically equal to want (0 if none).
func findLayout(s hlo.Shape, opts [][]int, want []int) int {
	sig := physicalSignature(s.Dims, want)
	for i, o := range opts {
		if slices.Equal(physicalSignature(s.Dims, o), sig) {
			return i
		}
	}
	return 0
}

// bitcastTransposeLayout is the result layout under which transpose in moves no data.
func bitcastTransposeLayout(in *hlo.Instruction) []int {
	perm := in.Dimensions
	inv := make([]int, len(perm))
	for i, p := range perm {
		inv[p] = i
	}
	lin := in.Operands[0].Shape.LayoutOrDefault().MinorToMajor
	out := make([]int, len(lin))
	for j, d := range lin {
		out[j] = inv[d]
	}
	return out
}

func layoutsPhysicallyEqual(s hlo.Shape, a, b []int) bool {
	return slices.Equal(physicalSignature(s.Dims, a), physicalSignature(s.Dims, b))
}

// isBitcast reports whether a transpose or reshape moves no data under the assigned
// layouts.
func isBitcast(in *hlo.Instruction) bool {
	op := in.Operands[0].Shape
	switch in.Opcode {
	case hlo.OpTranspose:
		return layoutsPhysicallyEqual(in.Shape, in.Shape.Layout.MinorToMajor, bitcastTransposeLayout(in))
	case hlo.OpReshape:
		return isRowMajorIgnoringUnit(op) && isRowMajorIgnoringUnit(in.Shape)
	}
	return false
}

func isRowMajorIgnoringUnit(s hlo.Shape) bool {
	return slices.Equal(physicalSignature(s.Dims, s.LayoutOrDefault().MinorToMajor),
		physicalSignature(s.Dims, hlo.RowMajor(s.Rank()).MinorToMajor))
}

func setLayout(s *hlo.Shape, mtm []int) {
	if s.IsTuple() {
		// A tuple result (a variadic sort, reduce-window, ...): its elements keep the
		// layouts they have and the others take the default, so that no array a
		// get-tuple-element reads from it is left without one.
		setDefaultLayouts(s)
		return
	}
	if s.IsArray() {
		s.Layout = &hlo.Layout{MinorToMajor: slices.Clone(mtm)}
	}
}

func setDefaultLayouts(s *hlo.Shape) {
	if s.IsTuple() {
		for i := range s.Tuple {
			setDefaultLayouts(&s.Tuple[i])
		}
		return
	}
	if s.IsArray() && s.Layout == nil {
		s.Layout = hlo.RowMajor(s.Rank())
	}
}

// runLayout is the layout assignment pass. Configurable nodes (LayoutConfigurable) take
// their result layout from the config, else the store, else the XLA-like default, and
// read their operands in the layouts the config's operand_layout entry sets (copies
// where the operand has another); the
// other instructions' layouts are propagated (elementwise ops follow their first operand
// that has a layout of its own, reduces keep the input's order, broadcasts and iotas take
// their first user's layout); where an operand's layout differs from what its user
// requires, a copy is inserted; transposes and reshapes that move no data become
// bitcasts.
//
// Every flow computation (the entry, loop bodies and conditions, conditional branches) is
// laid out this way, the entry first; other computations (reducers) take default layouts.
func runLayout(m *hlo.Module, s *State) (bool, error) {
	flow := map[*hlo.Computation]bool{}
	for _, c := range s.Flow {
		flow[c] = true
	}
	for _, c := range m.Computations {
		if flow[c] {
			continue
		}
		for _, in := range c.Instructions {
			setDefaultLayouts(&in.Shape)
		}
	}
	changed := false
	for _, c := range s.Flow {
		ch, err := layoutComputation(c, s)
		if err != nil {
			return false, err
		}
		changed = changed || ch
	}
	return changed, nil
}

// chooseLayout picks a layout option index for node name: config, else store, else
// default. A config's order may be a prefix (completeOrder) and may differ from the option
// it selects in where size-1 dimensions go; an order that is not a valid one is an error.
func (s *State) chooseLayout(name, key string, shape hlo.Shape, opts [][]int, def int) (int, error) {
	choice := def
	if want, fromConfig, ok := s.want(KindLayout, name, key); ok {
		idx := -1
		order := want.Layout
		if checkOrder(shape.Rank(), order) == nil {
			order = completeOrder(shape.Rank(), order)
			for i, o := range opts {
				if slices.Equal(o, order) {
					idx = i
				}
			}
			if idx < 0 {
				idx = findLayoutIndex(shape, opts, order)
			}
		}
		switch {
		case idx >= 0:
			choice = idx
		case fromConfig:
			return 0, fmt.Errorf("layout of %s: %v is not a valid option (valid: %d orders of its %d dimensions)", name, want.Layout, len(opts), shape.Rank())
		}
	}
	s.Effective.Layout[name] = slices.Clone(opts[choice])
	s.Space.Layout = append(s.Space.Layout, LayoutChoice{Name: name, Key: key, Options: opts, Default: def, Chosen: choice})
	return choice, nil
}

// findLayoutIndex returns the index of the option physically equal to want, or -1.
func findLayoutIndex(s hlo.Shape, opts [][]int, want []int) int {
	sig := physicalSignature(s.Dims, want)
	for i, o := range opts {
		if slices.Equal(physicalSignature(s.Dims, o), sig) {
			return i
		}
	}
	return -1
}

// operandLayouts returns the operand layout constraints the config sets for node name
// (instruction in), completed to full orders (nil for an unconstrained operand), and
// records them in the effective config. An entry with more orders than in has operands,
// or an invalid order, is an error.
func (s *State) operandLayouts(name string, in *hlo.Instruction) ([][]int, error) {
	ops, ok := s.Config.OperandLayout[name]
	if !ok {
		return nil, nil
	}
	s.usedOperand[name] = true
	if len(ops) > len(in.Operands) {
		return nil, fmt.Errorf("operand layouts of %s: %d orders for %d operands", name, len(ops), len(in.Operands))
	}
	out := make([][]int, len(ops))
	for i, o := range ops {
		if len(o) == 0 || !in.Operands[i].Shape.IsArray() {
			continue
		}
		r := in.Operands[i].Shape.Rank()
		if err := checkOrder(r, o); err != nil {
			return nil, fmt.Errorf("operand layout %d of %s: %w", i, name, err)
		}
		out[i] = completeOrder(r, o)
	}
	eff := make([][]int, len(out))
	for i, o := range out {
		eff[i] = append([]int{}, o...) // [] for an unconstrained operand
	}
	s.Effective.OperandLayout[name] = eff
	return out, nil
}

// layoutComputation lays out one flow computation (see runLayout).
func layoutComputation(e *hlo.Computation, st *State) (bool, error) {
	changed := false
	agnostic := map[*hlo.Instruction]bool{}
	operandWant := map[*hlo.Instruction][][]int{} // configured operand layouts
	for _, in := range e.Instructions {
		s := &in.Shape
		switch {
		case in.Opcode == hlo.OpParameter:
			setDefaultLayouts(s)
		case in.Opcode == hlo.OpTuple:
			for i, op := range in.Operands {
				s.Tuple[i] = op.Shape.Clone()
			}
		case in.Opcode == hlo.OpGetTupleElement:
			*s = in.Operands[0].Shape.Tuple[in.Index].Clone()
		case LayoutConfigurable(in):
			opts := LayoutOptions(*s)
			def := defaultLayout(in, opts, st.Options.Target)
			key := NodeKey(in)
			choice, err := st.chooseLayout(st.qualName(e, in.Name), key, *s, opts, def)
			if err != nil {
				return false, err
			}
			setLayout(s, opts[choice])
			if choice != 0 {
				changed = true
			}
			ow, err := st.operandLayouts(st.qualName(e, in.Name), in)
			if err != nil {
				return false, err
			}
			if ow != nil {
				operandWant[in] = ow
			}
		case layoutAgnostic(in):
			agnostic[in] = true
			setLayout(s, hlo.RowMajor(s.Rank()).MinorToMajor)
		case in.Opcode == hlo.OpReduce:
			lin := in.Operands[0].Shape.LayoutOrDefault().MinorToMajor
			kept := map[int]int{}
			for i, d := range hlo.KeptDims(in.Operands[0].Shape.Rank(), in.Dimensions) {
				kept[d] = i
			}
			var mtm []int
			for _, d := range lin {
				if nd, ok := kept[d]; ok {
					mtm = append(mtm, nd)
				}
			}
			if s.IsTuple() {
				for i := range s.Tuple {
					setLayout(&s.Tuple[i], mtm)
				}
			} else {
				setLayout(s, mtm)
			}
		case sameLayoutOperands(in):
			mtm := hlo.RowMajor(s.Rank()).MinorToMajor
			for _, op := range in.Operands {
				if !agnostic[op] && op.Shape.IsArray() && op.Shape.Rank() == s.Rank() && s.Rank() > 0 {
					mtm = op.Shape.Layout.MinorToMajor
					break
				}
			}
			setLayout(s, mtm)
		default:
			setDefaultLayouts(s)
		}
	}
	// Agnostic instructions take the layout of their first user that constrains them.
	users := e.Users()
	for _, in := range e.Instructions {
		if !agnostic[in] {
			continue
		}
		for _, u := range users[in.ID] {
			if sameLayoutOperands(u) && u.Shape.IsArray() && u.Shape.Rank() == in.Shape.Rank() {
				setLayout(&in.Shape, u.Shape.Layout.MinorToMajor)
				break
			}
		}
	}
	// Insert copies where a user needs another layout.
	copies := map[string]*hlo.Instruction{}
	var out []*hlo.Instruction
	need := func(in *hlo.Instruction, i int, mtm []int) {
		op := in.Operands[i]
		if !op.Shape.IsArray() || op.Shape.Rank() == 0 || slices.Equal(op.Shape.Layout.MinorToMajor, mtm) {
			return
		}
		if layoutsPhysicallyEqual(op.Shape, op.Shape.Layout.MinorToMajor, mtm) {
			return
		}
		ck := op.Name + fmt.Sprint(mtm)
		cp, ok := copies[ck]
		if !ok {
			cp = &hlo.Instruction{Name: st.uniqueName(op.Name + ".copy"), Opcode: hlo.OpCopy,
				Operands: []*hlo.Instruction{op}, Shape: op.Shape.WithLayout(&hlo.Layout{MinorToMajor: slices.Clone(mtm)})}
			copies[ck] = cp
			out = append(out, cp)
			changed = true
		}
		in.Operands[i] = cp
	}
	for _, in := range e.Instructions {
		for i, mtm := range operandWant[in] {
			if mtm != nil {
				need(in, i, mtm)
			}
		}
		switch {
		case sameLayoutOperands(in) && in.Shape.IsArray():
			for i, op := range in.Operands {
				if op.Shape.IsArray() && op.Shape.Rank() == in.Shape.Rank() && in.Shape.Rank() > 0 {
					need(in, i, in.Shape.Layout.MinorToMajor)
				}
			}
		case rowMajorOperands(in):
			for i, op := range in.Operands {
				if op.Shape.IsArray() {
					need(in, i, hlo.RowMajor(op.Shape.Rank()).MinorToMajor)
				}
			}
		}
		if in == e.Root {
			root := in
			// The entry result is row-major.
			if root.Opcode == hlo.OpTuple {
				for i, op := range root.Operands {
					if op.Shape.IsArray() {
						need(root, i, hlo.RowMajor(op.Shape.Rank()).MinorToMajor)
						root.Shape.Tuple[i] = root.Operands[i].Shape.Clone()
					}
				}
				out = append(out, root)
				continue
			}
			out = append(out, in)
			if in.Shape.IsArray() && in.Shape.Rank() > 0 && !isRowMajorIgnoringUnit(in.Shape) {
				wrap := &hlo.Instruction{Operands: []*hlo.Instruction{in}}
				need(wrap, 0, hlo.RowMajor(in.Shape.Rank()).MinorToMajor)
				e.Root = wrap.Operands[0]
			}
			continue
		}
		out = append(out, in)
	}
	e.Instructions = out
	// Transposes and reshapes that move no data become bitcasts.
	for _, in := range e.Instructions {
		if (in.Opcode == hlo.OpTranspose || in.Opcode == hlo.OpReshape) && in.Shape.IsArray() && isBitcast(in) {
			in.Opcode = hlo.OpBitcast
			in.Dimensions, in.HasDimensions = nil, false
			changed = true
		}
	}
	// Tuple shapes follow their operands.
	for _, in := range e.Instructions {
		if in.Opcode == hlo.OpTuple {
			for i, op := range in.Operands {
				in.Shape.Tuple[i] = op.Shape.Clone()
			}
		}
	}
	return changed, nil
}
