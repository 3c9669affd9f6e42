package cost

import (
	"fmt"
	"math"
	"slices"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// KernelKind is how a kernel iterates: its hero decides.
type KernelKind uint8

// Kernel kinds.
const (
	KindLoop   KernelKind = iota // elementwise / data movement over the output
	KindReduce                   // a reduce hero, row (lane) or column (sublane) reduction
	KindGEMM                     // a dot or convolution hero, as a tiled matrix multiply
	KindOpaque                   // sort, custom-call, while...: one untiled step
)

var kindNames = [...]string{"loop", "reduce", "gemm", "opaque"}

func (k KernelKind) String() string { return kindNames[k] }

// Role is how a kernel input travels between HBM and VMEM.
type Role uint8

// Input roles.
const (
	RoleStream   Role = iota // a window per step, proportional to the tile
	RoleResident             // small; loaded once and kept in VMEM
	RoleLHS                  // GEMM left operand: a tm x tk window per step
	RoleRHS                  // GEMM right operand: a tk x tn window per step
	RoleEpilogue             // GEMM output-shaped input: a tm x tn window per output block
	RoleGather               // indexed rows: one DMA burst per row
	RoleAliased              // updated in place (dynamic-update-slice operand): not read
)

var roleNames = [...]string{"stream", "resident", "lhs", "rhs", "epilogue", "gather", "aliased"}

func (r Role) String() string { return roleNames[r] }

// ResidentMaxBytes is the padded size under which an input smaller than the iteration
// space (a broadcast bias, a scale vector) is loaded once and kept in VMEM.
const ResidentMaxBytes = 256 << 10

// Operand describes one kernel input or the output.
type Operand struct {
	Param      int       // fusion parameter number; -1 for the output
	Shape      hlo.Shape // with its physical layout
	Role       Role
	Transposed bool    // its physical minor dimension is not the iteration's lane dimension
	Ratio      float64 // its elements per element of the iteration space it streams with
	Bytes      float64 // logical bytes
	Padded     float64 // bytes after (8,128) tiling of its two minor physical dimensions
	ElemBytes  int
	Minor      int // size of its physical minor dimension (1 for scalars)
	// Staged marks an array resident in VMEM across kernels (see Staging): it moves no
	// HBM bytes. Only the copies Planned.Staged makes set it.
	Staged bool
	// Runs, when positive, is the contiguous HBM runs (BoxRuns) a DMA of one window of
	// this operand moves, for a kernel iterated over an N-dimensional grid of boxes whose
	// windows the flattened tile does not describe (a TPU tile replayed, validate);
	// 0: the runs follow from the flattened window (whole rows merge, partial rows are
	// one run per sublane group).
	Runs float64
	// Reads, when positive, is how many times a kernel iterated over an N-dimensional
	// grid of boxes moves this streamed operand's padded bytes in all: an operand
	// broadcast into the box's array is re-fetched whenever its window changes between
	// consecutive steps, so every loop outside the innermost one it varies along re-reads
	// it whole (validate sets it for a TPU tile); 0: at most once (the flattened
	// tile's rule, addStreamed). Runs is then the runs per step on average.
	Reads float64
}

// IterDim is one tiled dimension of a kernel's iteration space.
type IterDim struct {
	Name  string
	Size  int
	Align int // tile sizes are multiples of this (8/16/32 sublanes or 128 lanes)
	Max   int // largest tile considered
	// Min, when above Align, is the alignment of the tiles the compiler's options list
	// (TileOptions): finer tiles are valid (a config or a replayed TPU tile may give
	// them) but not searched.
	Min int
}

// KernelInfo is the analysis of one kernel (a fused computation): what it computes, how it
// is tiled and what moves. It is computed once per kernel and shared by the analytical
// model, the simulator and the features.
type KernelInfo struct {
	Kind   KernelKind
	Hero   hlo.Opcode // dot, convolution, reduce... or the root opcode of a loop kernel
	Dims   []IterDim  // the tiled dimensions; a Tile has one entry per IterDim
	Inputs []Operand
	Output Operand

	// Totals over the fused instructions, from Of (logical, unpadded).
	Flops, Transcendentals, VectorOps float64
	NumOps                            int // fused instructions that compute (not parameters)
	OpCounts                          map[hlo.Opcode]int
	// ApproxOps counts the fused instructions that the simulator times with the
	// streaming model only (see Approximate).
	ApproxOps int

	// Per element of the iteration space's stream (loop: output element; reduce: input
	// element; GEMM epilogue: output element; GEMM prologue: operand element).
	VecPerElem, TransPerElem       float64
	EpiVecPerElem, EpiTransPerElem float64
	ProVecPerElem, ProTransPerElem float64

	// GEMM shape: Batch independent M x K by K x N products. A convolution is an
	// implicit GEMM (IsConv) whose input windows overlap; a grouped one (Groups > 1)
	// multiplies each group's K inputs by its N/Groups outputs only.
	Batch, M, N, K int
	IsConv         bool
	// ColsDim is the output dimension whose extent runs along the MXU's columns (N) of
	// a convolution; DotSwapped marks a dot computed transposed (M and N exchanged: the
	// LHS free side on the columns). See analyzeGEMM.
	ColsDim                      int
	DotSwapped                   bool
	Groups                       int
	LHSTransposed, OutTransposed bool
	// RHSTransposed: the weight's physical minor dimension is a contracting one (K), not
	// N: its windows are N rows of K lanes in memory.
	RHSTransposed      bool
	LHSBytes, RHSBytes float64 // logical operand sizes

	// Reduce shape: InElems reduced to OutElems; RowReduce when the physical minor
	// dimension of the input is reduced (a cross-lane reduction).
	RowReduce         bool
	InElems, OutElems int64
	// FullReduce: every element is reduced to one; the kernel iterates over the input's
	// own physical (rows, lanes) view, in any order.
	FullReduce bool

	// base is the analysis a staged copy (Planned.Staged) was made from; nil in an
	// analysis Analyze made.
	base *KernelInfo
	// rowFrac is, while Analyze runs, the share of its elements a fused instruction
	// computes when less than all (gatherChains).
	rowFrac map[*hlo.Instruction]float64
}

// of is the cost of fused instruction x as the kernel computes it: Of(x), scaled by the
// share of its elements computed when it only feeds the rows a gather reads
// (gatherChains).
func (k *KernelInfo) of(x *hlo.Instruction) OpCost {
	c := Of(x)
	if f, ok := k.rowFrac[x]; ok {
		c.Flops *= f
		c.Transcendentals *= f
		c.VectorOps *= f
		c.BytesRead *= f
		c.BytesWritten *= f
	}
	return c
}

// Analyze computes the KernelInfo of a fused computation: its parameters are the kernel's
// inputs and its root the output. Every array shape should carry a layout (missing ones
// are taken as row-major).
func Analyze(fc *hlo.Computation, t Target) (*KernelInfo, error) {
	if fc == nil || fc.Root == nil {
		return nil, fmt.Errorf("kernel computation has no root")
	}
	k := &KernelInfo{OpCounts: map[hlo.Opcode]int{}, Groups: 1}
	_, k.rowFrac = gatherChains(fc)
	defer func() { k.rowFrac = nil }() // the analysis keeps no instruction
	var hero *hlo.Instruction
	for _, in := range fc.Instructions {
		if in.Opcode == hlo.OpParameter {
			continue
		}
		c := k.of(in)
		k.Flops += c.Flops
		k.Transcendentals += c.Transcendentals
		k.VectorOps += c.VectorOps
		k.OpCounts[in.Opcode]++
		if Approximate(in.Opcode) {
			k.ApproxOps++
		}
		if in.Opcode != hlo.OpConstant {
			k.NumOps++
		}
		switch in.Opcode.Category() {
		case hlo.CatDot, hlo.CatConvolution:
			if hero == nil || hero.Opcode.Category() == hlo.CatReduce {
				hero = in
			}
		case hlo.CatReduce:
			if hero == nil {
				hero = in
			}
		case hlo.CatOther, hlo.CatControl:
			if hero == nil || (hero.Opcode.Category() != hlo.CatDot && hero.Opcode.Category() != hlo.CatConvolution) {
				hero = in
			}
		}
	}
	root := fc.Root
	k.Output = makeOperand(-1, root.Shape, t)
	k.Hero = root.Opcode
	if hero != nil {
		k.Hero = hero.Opcode
	}
	params := fc.Parameters()
	switch {
	case hero != nil && (hero.Opcode.Category() == hlo.CatOther || hero.Opcode.Category() == hlo.CatControl):
		k.Kind = KindOpaque
		for _, p := range params {
			k.Inputs = append(k.Inputs, makeOperand(p.ParamNum, p.Shape, t))
		}
		k.OutElems = root.Shape.Elements()
	case hero != nil && (hero.Opcode == hlo.OpDot || hero.Opcode == hlo.OpConvolution):
		k.Kind = KindGEMM
		if err := analyzeGEMM(k, fc, hero, params, t); err != nil {
			return nil, err
		}
	case hero != nil && hero.Opcode == hlo.OpReduce:
		k.Kind = KindReduce
		analyzeReduce(k, fc, hero, params, t)
	default:
		k.Kind = KindLoop
		analyzeLoop(k, fc, params, t)
	}
	k.fitResidents(t)
	return k, nil
}

// fitResidents streams resident inputs instead, the largest first, while the resident
// inputs take more than half of VMEM and the kernel's smallest tile does not fit it with
// one buffer per window: a kernel that cannot hold all its small inputs at once (a
// concatenation of a hundred slices of an LSTM's state) reads each through a window of
// the blocks that need it, as every operand of a TPU kernel whose whole does not fit is
// blocked. Kernels that fit are left as they are.
func (k *KernelInfo) fitResidents(t Target) {
	if len(k.Dims) == 0 {
		return
	}
	vmem := float64(t.VMEMBytes)
	if k.planWhole(k.smallestTile(), t).Footprint(singleBuffer) <= vmem {
		return
	}
	streamed := RoleStream
	if k.Kind == KindGEMM {
		streamed = RoleEpilogue
	}
	for {
		total, big := 0.0, -1
		for i, in := range k.Inputs {
			if in.Role != RoleResident || in.Staged || arrayShape(in.Shape).Rank() == 0 {
				continue
			}
			total += in.Padded
			if big < 0 || in.Padded > k.Inputs[big].Padded {
				big = i
			}
		}
		if big < 0 || total <= vmem/2 {
			return
		}
		k.Inputs[big].Role = streamed
	}
}

// arrayShape returns s, or the first array element of a tuple.
func arrayShape(s hlo.Shape) hlo.Shape {
	for s.IsTuple() && len(s.Tuple) > 0 {
		s = s.Tuple[0]
	}
	return s
}

func makeOperand(param int, s hlo.Shape, t Target) Operand {
	a := arrayShape(s)
	o := Operand{Param: param, Shape: s, Ratio: 1, Bytes: float64(s.Bytes()), ElemBytes: max(a.Elem.Bytes(), 1)}
	o.Padded = PaddedBytes(s, t)
	if pd := a.PhysicalDims(); len(pd) > 0 {
		o.Minor = pd[len(pd)-1]
	} else {
		o.Minor = 1
	}
	return o
}

// PaddedBytes is the size of s in HBM under TPU tiling: the physical minor dimension is
// padded to a multiple of 128 lanes and the second-minor to the sublane tile of the
// element type (8 rows for 32-bit, 16 for 16-bit, 32 for 8-bit types); rank-1 arrays are
// padded to a multiple of 8x128 elements; scalars take one element. Tuples sum their
// elements.
func PaddedBytes(s hlo.Shape, t Target) float64 {
	if s.IsTuple() {
		total := 0.0
		for _, e := range s.Tuple {
			total += PaddedBytes(e, t)
		}
		return total
	}
	if !s.IsArray() {
		return 0
	}
	eb := s.Elem.Bytes()
	pd := s.PhysicalDims()
	switch len(pd) {
	case 0:
		return float64(eb)
	case 1:
		return float64(roundUp(pd[0], t.Lanes*t.Sublanes) * eb)
	}
	n := float64(roundUp(pd[len(pd)-1], t.Lanes)) * float64(roundUp(pd[len(pd)-2], t.SublaneTile(eb)))
	for _, d := range pd[:len(pd)-2] {
		n *= float64(d)
	}
	return n * float64(eb)
}

func roundUp(x, m int) int {
	if m <= 1 {
		return x
	}
	return (x + m - 1) / m * m
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func product(xs []int) int {
	p := 1
	for _, x := range xs {
		p *= x
	}
	return p
}

// laneMap finds, for every instruction of fc reachable from start, which of its logical
// dimensions runs along the iteration's lanes (the physical minor dimension of start), by
// walking operands: elementwise ops keep it, transposes permute it, broadcasts drop it
// (-1: the value does not vary along lanes), reduces map output dims to the kept input
// dims. -2 marks a conflict or an unknown mapping. lane is start's lane dimension.
func laneMap(fc *hlo.Computation, start *hlo.Instruction, lane int) map[*hlo.Instruction]int {
	m := map[*hlo.Instruction]int{start: lane}
	set := func(x *hlo.Instruction, d int) {
		if old, ok := m[x]; ok && old != d {
			m[x] = -2
			return
		}
		m[x] = d
	}
	for i := len(fc.Instructions) - 1; i >= 0; i-- {
		x := fc.Instructions[i]
		ld, ok := m[x]
		if !ok {
			continue
		}
		for j, op := range x.Operands {
			if !op.Shape.IsArray() || op.Shape.Rank() == 0 {
				continue
			}
			d := -2
			if ld >= 0 {
				switch {
				case x.Opcode == hlo.OpBroadcast:
					d = -1
					for i, od := range x.Dimensions {
						if od == ld {
							d = i
						}
					}
				case x.Opcode == hlo.OpTranspose:
					d = x.Dimensions[ld]
				case x.Opcode == hlo.OpReduce && j < len(x.Operands)/2:
					kept := hlo.KeptDims(op.Shape.Rank(), x.Dimensions)
					if ld < len(kept) {
						d = kept[ld]
					}
				case x.Opcode == hlo.OpReshape || x.Opcode == hlo.OpBitcast:
					if ld == x.Shape.Rank()-1 && op.Shape.Dims[op.Shape.Rank()-1] == x.Shape.Dims[ld] {
						d = op.Shape.Rank() - 1
					}
				case x.Opcode == hlo.OpGather:
					d = -2
				case op.Shape.Rank() == x.Shape.Rank():
					d = ld
				}
			} else if ld == -1 {
				d = -1
			}
			set(op, d)
		}
	}
	return m
}

// minorDim returns the logical dimension that is physically minor in s (-1 for scalars).
func minorDim(s hlo.Shape) int {
	if s.Rank() == 0 {
		return -1
	}
	return s.LayoutOrDefault().MinorToMajor[0]
}

// gatherTables maps each parameter read through a gather or dynamic-slice (as the
// indexed operand) to the number of elements gathered from it (gatherChains).
func gatherTables(fc *hlo.Computation) map[*hlo.Instruction]int64 {
	g, _ := gatherChains(fc)
	return g
}

// gatherChains finds what a kernel reads of the operands it indexes. A gather or
// dynamic-slice reads only the rows it indexes of its operand (operand 0), and the kernel
// computes what that operand is computed from element by element (a rotary table's
// complex(cos(t), sin(t)), a dequantized embedding's convert and multiply) for those
// rows only, as XLA's emitters compute a fused producer at the indices its consumer
// reads: the chain is the operand and its producers through bitcasts, reshapes, converts,
// copies, elementwise and transcendental ops down to parameters, broadcasts and
// constants, with every member used only by the chain (or as the gather's operand).
//
// tables maps each parameter of a chain, and each parameter that is the indexed operand
// through bitcasts, reshapes and converts only (whatever its other uses), to the elements
// read from it, summed over the gathers; frac maps each other member of a chain to the
// share of its elements computed (at most 1).
func gatherChains(fc *hlo.Computation) (tables map[*hlo.Instruction]int64, frac map[*hlo.Instruction]float64) {
	tables = map[*hlo.Instruction]int64{}
	var users map[*hlo.Instruction][]*hlo.Instruction
	read := map[*hlo.Instruction]float64{} // elements of each chain member read
	for _, g := range fc.Instructions {
		if g.Opcode != hlo.OpGather && g.Opcode != hlo.OpDynamicSlice {
			continue
		}
		n := g.Shape.Elements()
		src := g.Operands[0]
		direct := src
		for direct.Opcode == hlo.OpBitcast || direct.Opcode == hlo.OpReshape || direct.Opcode == hlo.OpConvert {
			direct = direct.Operands[0]
		}
		if direct.Opcode == hlo.OpParameter {
			tables[direct] += n
			continue
		}
		if users == nil {
			users = map[*hlo.Instruction][]*hlo.Instruction{}
			for _, in := range fc.Instructions {
				for _, op := range in.Operands {
					users[op] = append(users[op], in)
				}
			}
		}
		chain := rowChain(src, g, users)
		for x := range chain {
			if x.Opcode == hlo.OpParameter {
				tables[x] += n
			} else {
				read[x] += float64(n)
			}
		}
	}
	if len(read) > 0 {
		frac = make(map[*hlo.Instruction]float64, len(read))
		for x, r := range read {
			frac[x] = math.Min(r/float64(max(x.Shape.Elements(), 1)), 1)
		}
	}
	return tables, frac
}

// rowChain is the chain of gather (or dynamic-slice) g's indexed operand src
// (gatherChains): src and its element-preserving producers, without those used outside
// the chain (and, with them, what only they use).
func rowChain(src, g *hlo.Instruction, users map[*hlo.Instruction][]*hlo.Instruction) map[*hlo.Instruction]bool {
	elems := src.Shape.Elements()
	chain := map[*hlo.Instruction]bool{}
	stack := []*hlo.Instruction{src}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if chain[x] || !x.Shape.IsArray() || x.Shape.Elements() != elems {
			continue
		}
		switch cat := x.Opcode.Category(); {
		case x.Opcode == hlo.OpParameter, x.Opcode == hlo.OpConstant, x.Opcode == hlo.OpIota, x.Opcode == hlo.OpBroadcast:
			chain[x] = true // a leaf: computed (or read) per element
		case cat == hlo.CatElementwise, cat == hlo.CatTranscendental,
			x.Opcode == hlo.OpBitcast, x.Opcode == hlo.OpReshape, x.Opcode == hlo.OpConvert, x.Opcode == hlo.OpCopy:
			chain[x] = true
			stack = append(stack, x.Operands...)
		}
	}
	// Drop what is used outside the chain, until every member's users are in it.
	for changed := true; changed; {
		changed = false
		for x := range chain {
			for _, u := range users[x] {
				if chain[u] || (x == src && u == g && !slices.Contains(g.Operands[1:], x)) {
					continue
				}
				delete(chain, x)
				changed = true
				break
			}
		}
	}
	return chain
}

// demand computes how many elements of each instruction of fc a kernel actually reads
// when it produces `need` elements of start: elementwise ops and layout changes need what
// their users need; a slice or dynamic-slice needs only its window from its operand;
// broadcasts need at most their operand; reductions, windows, concatenations and pads
// scale by the ratio of operand to result size. An instruction used several times needs
// the most any use needs (the same elements are reused, not read twice).
func demand(fc *hlo.Computation, start *hlo.Instruction, need float64) map[*hlo.Instruction]float64 {
	d := map[*hlo.Instruction]float64{start: need}
	for i := len(fc.Instructions) - 1; i >= 0; i-- {
		x := fc.Instructions[i]
		n, ok := d[x]
		if !ok {
			continue
		}
		out := float64(max(arrayShape(x.Shape).Elements(), 1))
		for j, op := range x.Operands {
			if !op.Shape.IsArray() {
				continue
			}
			in := float64(max(op.Shape.Elements(), 1))
			var m float64
			switch {
			case x.Opcode == hlo.OpSlice || (x.Opcode == hlo.OpDynamicSlice && j == 0):
				m = n
			case x.Opcode == hlo.OpBroadcast:
				m = math.Min(in, n)
			default:
				m = n * in / out
			}
			m = math.Min(m, in)
			if m > d[op] {
				d[op] = m
			}
		}
	}
	return d
}

// classify sets the role, ratio and transposition of a streamed input given the lane map
// and the number of elements it streams with.
func classify(op *Operand, p *hlo.Instruction, lanes map[*hlo.Instruction]int, streamElems int64) {
	op.Ratio = float64(p.Shape.Elements()) / float64(max(streamElems, 1))
	ld, reached := lanes[p]
	switch {
	case p.Shape.Rank() == 0:
		op.Role = RoleResident
	case op.Ratio < 1 && op.Padded <= ResidentMaxBytes:
		op.Role = RoleResident
	default:
		op.Role = RoleStream
		op.Transposed = reached && (ld == -2 || (ld >= 0 && ld != minorDim(p.Shape)))
	}
}

func analyzeLoop(k *KernelInfo, fc *hlo.Computation, params []*hlo.Instruction, t Target) {
	root := fc.Root
	out := arrayShape(root.Shape)
	iter := out
	// In-place updates iterate over the update, not the whole operand.
	var aliased []*hlo.Instruction // updated in place: only the touched rows move
	switch root.Opcode {
	case hlo.OpDynamicUpdateSlice:
		iter = root.Operands[1].Shape
		aliased = root.Operands[:1]
		k.Output.Bytes = float64(iter.Bytes())
		k.Output.Padded = PaddedBytes(iter, t)
	case hlo.OpScatter:
		// N inputs updated in place: the loop runs over the (first) update; each update's
		// rows are written.
		n := hlo.ScatterArity(root)
		iter = root.Operands[n+1].Shape
		aliased = root.Operands[:n]
		k.Output.Bytes, k.Output.Padded = 0, 0
		for _, u := range root.Operands[n+1:] {
			k.Output.Bytes += float64(u.Shape.Bytes())
			k.Output.Padded += PaddedBytes(u.Shape, t)
		}
	}
	gathered := gatherTables(fc)
	need := demand(fc, root, float64(iter.Elements()))
	rows, lanes := loopView(iter)
	k.OutElems = iter.Elements()
	n := float64(max(k.OutElems, 1))
	k.VecPerElem = k.VectorOps / n
	k.TransPerElem = k.Transcendentals / n
	lm := laneMap(fc, root, minorDim(out))
	for _, p := range params {
		op := makeOperand(p.ParamNum, p.Shape, t)
		switch {
		case slices.Contains(aliased, p):
			op.Role = RoleAliased
		case gathered[p] > 0:
			op.Role = RoleGather
			op.Ratio = float64(gathered[p]) / float64(max(k.OutElems, 1))
		default:
			classify(&op, p, lm, k.OutElems)
			if n, ok := need[p]; ok && op.Role == RoleStream {
				op.Ratio = n / float64(max(k.OutElems, 1))
			}
		}
		k.Inputs = append(k.Inputs, op)
	}
	sub := t.SublaneTile(arrayShape(out).Elem.Bytes())
	k.Dims = []IterDim{
		{Name: "rows", Size: rows, Align: sub, Max: 2048},
		{Name: "lanes", Size: lanes, Align: t.Lanes, Max: 4096},
	}
}

// loopView is the (rows, lanes) view of an array in its physical layout: lanes is the
// minor dimension, rows the product of the rest; rank-1 arrays are viewed as rows of 128.
func loopView(s hlo.Shape) (rows, lanes int) {
	pd := s.PhysicalDims()
	switch len(pd) {
	case 0:
		return 1, 1
	case 1:
		if pd[0] > 128 {
			return ceilDiv(pd[0], 128), 128
		}
		return 1, pd[0]
	}
	return max(product(pd[:len(pd)-1]), 1), max(pd[len(pd)-1], 1)
}

func analyzeReduce(k *KernelInfo, fc *hlo.Computation, red *hlo.Instruction, params []*hlo.Instruction, t Target) {
	in := red.Operands[0]
	k.InElems = in.Shape.Elements()
	k.OutElems = max(arrayShape(red.Shape).Elements(), 1)
	reduced := 1
	for _, d := range red.Dimensions {
		reduced *= in.Shape.Dims[d]
	}
	kept := int(k.OutElems)
	md := minorDim(in.Shape)
	k.RowReduce = false
	for _, d := range red.Dimensions {
		if d == md {
			k.RowReduce = true
		}
	}
	// Work before and including the reduce runs per input element; after it, per output.
	after := descendants(fc, red)
	var preVec, preTrans, postVec, postTrans float64
	for _, x := range fc.Instructions {
		if x.Opcode == hlo.OpParameter {
			continue
		}
		c := k.of(x)
		if after[x] {
			postVec += c.VectorOps
			postTrans += c.Transcendentals
		} else {
			preVec += c.VectorOps
			preTrans += c.Transcendentals
		}
	}
	k.VecPerElem = preVec / float64(max(k.InElems, 1))
	k.TransPerElem = preTrans / float64(max(k.InElems, 1))
	k.EpiVecPerElem = postVec / float64(k.OutElems)
	k.EpiTransPerElem = postTrans / float64(k.OutElems)
	lm := laneMap(fc, in, md)
	gathered := gatherTables(fc)
	need := demand(fc, in, float64(k.InElems))
	for _, p := range params {
		op := makeOperand(p.ParamNum, p.Shape, t)
		if gathered[p] > 0 {
			op.Role = RoleGather
			op.Ratio = float64(gathered[p]) / float64(max(k.InElems, 1))
		} else if _, ok := lm[p]; ok {
			classify(&op, p, lm, k.InElems)
			if n, ok := need[p]; ok && op.Role == RoleStream {
				op.Ratio = n / float64(max(k.InElems, 1))
			}
		} else {
			// Only used after the reduce: streams with the output.
			classify(&op, p, laneMap(fc, fc.Root, minorDim(arrayShape(fc.Root.Shape))), k.OutElems)
			op.Ratio *= float64(k.OutElems) / float64(max(k.InElems, 1))
		}
		if k.OutElems == 1 {
			// A full reduction may read its input in any order: in its own layout.
			op.Transposed = false
		}
		k.Inputs = append(k.Inputs, op)
	}
	sub := t.SublaneTile(in.Shape.Elem.Bytes())
	if k.OutElems == 1 && in.Shape.Rank() >= 2 {
		k.FullReduce = true
		// Read in the layout of the largest input streamed with the reduction (the
		// array itself when the reduce reads a transposed view of it).
		view := in.Shape
		for _, op := range k.Inputs {
			if op.Role == RoleStream && arrayShape(op.Shape).Elements() == k.InElems {
				view = arrayShape(op.Shape)
				break
			}
		}
		rows, lanes := loopView(view)
		k.Dims = []IterDim{
			{Name: "reduce_rows", Size: rows, Align: sub, Max: 2048},
			{Name: "reduce_lanes", Size: lanes, Align: t.Lanes, Max: 4096},
		}
		return
	}
	if k.RowReduce {
		k.Dims = []IterDim{
			{Name: "out", Size: kept, Align: sub, Max: 2048},
			{Name: "reduce", Size: reduced, Align: t.Lanes, Max: 4096},
		}
	} else {
		k.Dims = []IterDim{
			{Name: "reduce", Size: reduced, Align: sub, Max: 2048},
			{Name: "out", Size: kept, Align: t.Lanes, Max: 4096},
		}
	}
}

// descendants returns the instructions of fc that depend on x (excluding x).
func descendants(fc *hlo.Computation, x *hlo.Instruction) map[*hlo.Instruction]bool {
	d := map[*hlo.Instruction]bool{}
	for _, in := range fc.Instructions {
		for _, op := range in.Operands {
			if op == x || d[op] {
				d[in] = true
				break
			}
		}
	}
	return d
}

// ancestors returns the instructions x depends on, including x.
func ancestors(x *hlo.Instruction) map[*hlo.Instruction]bool {
	a := map[*hlo.Instruction]bool{}
	stack := []*hlo.Instruction{x}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if a[n] {
			continue
		}
		a[n] = true
		stack = append(stack, n.Operands...)
	}
	return a
}

// physicalMinorDim returns the logical dimension of s that is physically minor, skipping
// size-1 dimensions (they occupy no lanes); -1 for scalars, the layout's minor dimension
// when every dimension has size 1.
func physicalMinorDim(s hlo.Shape) int {
	if s.Rank() == 0 {
		return -1
	}
	mtm := s.LayoutOrDefault().MinorToMajor
	for _, d := range mtm {
		if s.Dims[d] != 1 {
			return d
		}
	}
	return mtm[0]
}

// hbmShape is the shape of x as its kernel reads it from HBM: through the copies that
// relayout an operand in VMEM (an operand layout constraint's copy fused into a dot's or
// convolution's kernel), the shape of what they copy.
func hbmShape(x *hlo.Instruction) hlo.Shape {
	for x.Opcode == hlo.OpCopy && len(x.Operands) == 1 {
		x = x.Operands[0]
	}
	return x.Shape
}

// kSublane reports whether a GEMM's contraction K is the second-minor (sublane) side of
// both operands as they sit in HBM: a dot contracting both operands over non-minor
// dimensions, or a window-less convolution (a dot) whose input is not feature-minor and
// whose weight is output-feature-minor. Its K is then stored in sublane groups of 8 (16
// for bf16), not 128 lanes.
func kSublane(hero *hlo.Instruction, k *KernelInfo) bool {
	lhs, rhs := hero.Operands[0], hero.Operands[1]
	ls, rs := hbmShape(lhs), hbmShape(rhs)
	if ls.Rank() < 2 || rs.Rank() < 2 {
		return false
	}
	switch hero.Opcode {
	case hlo.OpDot:
		dd := hero.Dot
		if dd == nil {
			return false
		}
		return !slices.Contains(dd.LhsContracting, physicalMinorDim(ls)) && !slices.Contains(dd.RhsContracting, physicalMinorDim(rs))
	case hlo.OpConvolution:
		cd := hero.Conv
		if cd == nil || k.K != rs.Dims[cd.KernelInput] {
			return false
		}
		return physicalMinorDim(ls) != cd.InputFeature && physicalMinorDim(rs) == cd.KernelOutput
	}
	return false
}

// analyzeGEMM analyzes a dot or convolution kernel as an M x K by K x N matrix product.
//
// The MXU writes its results along the output's lanes: the output dimension that is
// physically minor runs along the MXU's 128 columns (the N side, the weight blocks'
// columns) and the rest of the output along its rows (M, passes of 8 rows). A
// convolution whose output is feature-minor has N = its output features; one whose
// output has another dimension minor (a weight gradient laid out input-feature-minor,
// a batch-minor activation) has N = that dimension's extent. A dot's N is its RHS free
// dimensions when one of them is minor in the output, its LHS free dimensions when one of
// those is (the product computed transposed). So the minor extent sets the MXU's column
// occupancy: a minor extent of 64 fills half of the 128 columns (and half the lanes of
// every output vreg) and takes as many passes as 128 would; 192 fills three quarters of
// two column blocks. A convolution's minor extent smaller than a sublane group
// (Target.Sublanes, 8) is not put on the columns when the other candidate is not tiny
// too: the output features are (or the batch, when the features are the tiny minor
// dimension) and the result is transposed into place through the XLU (OutTransposed),
// since an MXU pass yields 8 rows at a time and a tiny extent wastes at most one row
// group there rather than 120 of 128 columns. A dot keeps its RHS side on the columns
// (transposing the result) when its minor dimension is a tiny LHS free dimension or a
// batch dimension; a tiny RHS free minor dimension stays on the columns, as before this
// model (its LHS side is usually the batch of rows). A grouped convolution not
// feature-minor keeps its features on the columns and transposes the result.
func analyzeGEMM(k *KernelInfo, fc *hlo.Computation, hero *hlo.Instruction, params []*hlo.Instruction, t Target) error {
	lhs, rhs := hero.Operands[0], hero.Operands[1]
	ls, rs, os := lhs.Shape, rhs.Shape, hero.Shape
	switch hero.Opcode {
	case hlo.OpDot:
		dd := hero.Dot
		if dd == nil {
			dd = &hlo.DotDims{LhsContracting: []int{ls.Rank() - 1}, RhsContracting: []int{0}}
		}
		k.Batch, k.K = 1, 1
		for _, d := range dd.LhsBatch {
			k.Batch *= ls.Dims[d]
		}
		for _, d := range dd.LhsContracting {
			k.K *= ls.Dims[d]
		}
		k.M = max(int(ls.Elements())/max(k.Batch*k.K, 1), 1)
		k.N = max(int(rs.Elements())/max(k.Batch*k.K, 1), 1)
		lm := minorDim(ls)
		k.LHSTransposed = ls.Rank() > 0
		for _, d := range dd.LhsContracting {
			if d == lm {
				k.LHSTransposed = false
			}
		}
		// Output dims are batch, lhs free, rhs free: N runs along the last ones.
		nFree := rs.Rank() - len(dd.RhsBatch) - len(dd.RhsContracting)
		mFree := os.Rank() - len(dd.LhsBatch) - nFree
		om := physicalMinorDim(os)
		k.OutTransposed = nFree > 0 && om < os.Rank()-nFree
		if k.OutTransposed && mFree > 0 && om >= len(dd.LhsBatch) && os.Dims[om] >= t.Sublanes {
			// An LHS free dimension is minor in the output: the MXU computes the
			// product transposed (out^T = rhs^T lhs^T), the LHS side on its columns
			// and the result's lanes (see analyzeGEMM).
			k.M, k.N = k.N, k.M
			k.OutTransposed = false
			k.DotSwapped = true
		}
		if rm := physicalMinorDim(hbmShape(rhs)); !k.DotSwapped && rs.Rank() >= 2 {
			k.RHSTransposed = slices.Contains(dd.RhsContracting, rm)
		}
	case hlo.OpConvolution:
		cd := hero.Conv
		if cd == nil {
			return fmt.Errorf("convolution %s has no dimension numbers", hero.Name)
		}
		// Implicit GEMM: M output pixels, N output features (all groups), K the kernel
		// window times the input features of one group.
		// batch_group_count (the kernel gradient of a grouped convolution) splits the
		// work into independent groups just like feature groups do.
		g := hero.GroupCount() * max(hero.BatchGroupCount, 1)
		k.Groups = g
		win := 1
		for _, d := range cd.KernelSpatial {
			win *= rs.Dims[d]
		}
		k.IsConv = true
		k.Batch = 1
		k.M = max(int(os.Elements())/max(os.Dims[cd.OutputFeature], 1), 1)
		k.N = max(rs.Dims[cd.KernelOutput], 1)
		k.K = max(rs.Dims[cd.KernelInput]*win, 1)
		k.LHSTransposed = minorDim(ls) != cd.InputFeature
		om := physicalMinorDim(os)
		cols := cd.OutputFeature // the output dimension on the MXU's columns
		if g == 1 {
			cols = om
			if tiny := func(d int) bool { return os.Dims[d] < t.Sublanes }; tiny(om) {
				switch {
				case om != cd.OutputFeature && !tiny(cd.OutputFeature):
					cols = cd.OutputFeature
				case om == cd.OutputFeature && !tiny(cd.OutputBatch):
					cols = cd.OutputBatch
				}
			}
		}
		k.ColsDim = cols
		// A window-less convolution is a dot: its weight is K x N, read K-minor when its
		// input features are minor. (A windowed one's weight windows span the window
		// positions too; their transposition is not modelled.)
		k.RHSTransposed = win == 1 && rs.Rank() >= 2 && physicalMinorDim(hbmShape(rhs)) == cd.KernelInput
		if cols != cd.OutputFeature {
			k.N = max(os.Dims[cols], 1)
			k.M = max(int(os.Elements())/k.N, 1)
		}
		k.OutTransposed = cols != om
	}
	k.LHSBytes = float64(ls.Bytes())
	k.RHSBytes = float64(rs.Bytes())
	k.OutElems = os.Elements()

	// Split the fused work into prologue (feeding the operands), hero and epilogue.
	la, ra := ancestors(lhs), ancestors(rhs)
	after := descendants(fc, hero)
	var proVec, proTrans, epiVec, epiTrans float64
	for _, x := range fc.Instructions {
		if x.Opcode == hlo.OpParameter || x == hero {
			continue
		}
		c := k.of(x)
		switch {
		case after[x]:
			epiVec += c.VectorOps
			epiTrans += c.Transcendentals
		case la[x] || ra[x]:
			proVec += c.VectorOps
			proTrans += c.Transcendentals
		}
	}
	opElems := float64(max(ls.Elements()+rs.Elements(), 1))
	k.ProVecPerElem, k.ProTransPerElem = proVec/opElems, proTrans/opElems
	k.EpiVecPerElem = epiVec / float64(max(k.OutElems, 1))
	k.EpiTransPerElem = epiTrans / float64(max(k.OutElems, 1))

	rootLanes := laneMap(fc, fc.Root, minorDim(arrayShape(fc.Root.Shape)))
	lneed := demand(fc, lhs, float64(ls.Elements()))
	rneed := demand(fc, rhs, float64(rs.Elements()))
	for _, p := range params {
		op := makeOperand(p.ParamNum, p.Shape, t)
		switch {
		case la[p]:
			op.Role = RoleLHS
			op.Ratio = lneed[p] / float64(max(ls.Elements(), 1))
		case ra[p]:
			op.Role = RoleRHS
			op.Ratio = rneed[p] / float64(max(rs.Elements(), 1))
		default:
			classify(&op, p, rootLanes, k.OutElems)
			if op.Role == RoleStream {
				op.Role = RoleEpilogue
			}
		}
		k.Inputs = append(k.Inputs, op)
	}
	subL := t.SublaneTile(ls.Elem.Bytes())
	// K is tiled in whole memory tiles of both operands: 128 lanes where it is an
	// operand's minor dimension, a sublane group where it is the second-minor of both
	// (a weight gradient's batch contraction, X^T·dY, as a dot or a window-less
	// convolution): there a step may take 8 rows of K. The compiler still searches
	// 128-multiples (Min).
	kAlign := t.Lanes
	if kSublane(hero, k) && !k.DotSwapped {
		kAlign = max(subL, t.SublaneTile(rs.Elem.Bytes()))
	}
	k.Dims = []IterDim{
		{Name: "m", Size: k.M, Align: subL, Max: 2048},
		{Name: "n", Size: k.N, Align: t.Lanes, Max: 2048},
		{Name: "k", Size: k.K, Align: kAlign, Max: 4096, Min: t.Lanes},
	}
	return nil
}

// streamElems is the number of elements of the iteration space an input's Ratio is
// relative to for a loop or reduce kernel (a loop's output, or its update for an in-place
// kernel; a reduce's input), 0 for the other kinds.
func (k *KernelInfo) streamElems() int64 {
	switch k.Kind {
	case KindLoop:
		return k.OutElems
	case KindReduce:
		return k.InElems
	}
	return 0
}

// ReadBytes returns the logical and padded bytes the kernel reads of one of its inputs
// from HBM on target t, once each: a gathered table (RoleGather) only the rows it gathers
// (Ratio per element of the iteration space; a row gathered twice is read twice), each
// row padded to whole lanes (t.Lanes) but not the table's row count to sublanes; an
// operand updated in place (RoleAliased) nothing; any other input all of it.
func (k *KernelInfo) ReadBytes(in Operand, t Target) (logical, padded float64) {
	switch in.Role {
	case RoleAliased:
		return 0, 0
	case RoleGather:
		logical = in.Ratio * float64(k.streamElems()) * float64(in.ElemBytes)
		if arrayShape(in.Shape).Rank() < 2 {
			return logical, logical
		}
		return logical, logical * float64(roundUp(in.Minor, t.Lanes)) / float64(max(in.Minor, 1))
	}
	return in.Bytes, in.Padded
}
