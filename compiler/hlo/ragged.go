package hlo

// Ragged tensors (after CoRa, Fegade et al., MLSys 2022): a dimension whose extent varies
// with an outer (batch) index, given by a lengths vector.
//
// # Text form
//
// A parameter carries the attribute
//
//	ragged={dim=D,outer=O,lengths={l1,l2,...}}
//
// when dimension D of its shape holds, at index b of its outer dimension O, lengths[b]
// valid entries (the rest is padding): the outer extent is len(lengths) and the extent of D
// at least max(lengths). With outer equal to dim the dimension is packed: it holds
// len(lengths) slots of extent Dims[D]/len(lengths) back to back (the [B·S, D] rows of a
// transformer), sequence b's valid entries the first lengths[b] of its slot. The
// attribute rides in Extra, so the parser reads it and the printer writes it back
// verbatim; ParseRagged and Ragged.String read and write its value.
//
// # Inference
//
// InferRagged carries raggedness from the parameters through a computation (RaggedDims
// per instruction): elementwise ops, broadcasts, transposes, the reshapes that split a
// packed dimension into (batch, seq) or merge them back (and leave the other dimensions'
// groups alone), dot with a ragged dimension among the rows, batched dot ragged × ragged
// (attention's scores are lᵢ × lᵢ per sequence, the context contracts over lᵢ),
// reductions over a sequence dimension (softmax), the slice of each sequence's first
// entry, a gather whose indices are ragged (an embedding lookup) and fusions. An op that
// cannot carry it (a reduction across the batch, a slice into the sequences, a ragged
// table) gets an explicit pad: its ragged operands are padded to the dense extent first
// and its result is dense; InferRagged lists every such op (RaggedPad). InsertRaggedPads
// makes each pad an instruction (a RaggedPadTarget custom-call before the op, which
// InferRagged then lists as an explicit pad and makes dense), so the compiled program runs
// and pays for it.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// RaggedAttr is the attribute key of a ragged parameter.
const RaggedAttr = "ragged"

// Ragged is a parameter's ragged attribute (see the text form above).
type Ragged struct {
	Dim, Outer int
	Lengths    []int
}

// Packed reports whether the ragged dimension is packed (outer == dim).
func (r Ragged) Packed() bool { return r.Dim == r.Outer }

// String writes the attribute's value: "{dim=1,outer=0,lengths={37,64}}".
func (r Ragged) String() string {
	ls := make([]string, len(r.Lengths))
	for i, l := range r.Lengths {
		ls[i] = strconv.Itoa(l)
	}
	return fmt.Sprintf("{dim=%d,outer=%d,lengths={%s}}", r.Dim, r.Outer, strings.Join(ls, ","))
}

// ParseRagged reads an attribute value written by Ragged.String. Every length must be
// at least 1 and the list non-empty.
func ParseRagged(s string) (Ragged, error) {
	bad := func(why string) (Ragged, error) {
		return Ragged{}, fmt.Errorf("ragged=%s: %s; want {dim=D,outer=O,lengths={L,...}}", s, why)
	}
	body, ok := strings.CutPrefix(strings.TrimSpace(s), "{")
	if !ok || !strings.HasSuffix(body, "}") {
		return bad("not in braces")
	}
	body = strings.TrimSuffix(body, "}")
	head, list, ok := strings.Cut(body, "lengths={")
	if !ok || !strings.HasSuffix(list, "}") {
		return bad("no lengths={...}")
	}
	r := Ragged{Dim: -1, Outer: -1}
	for _, kv := range strings.Split(strings.TrimSuffix(strings.TrimSpace(head), ","), ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n < 0 {
			return bad(fmt.Sprintf("%q is not KEY=N", kv))
		}
		switch k {
		case "dim":
			r.Dim = n
		case "outer":
			r.Outer = n
		default:
			return bad(fmt.Sprintf("unknown key %q", k))
		}
	}
	if r.Dim < 0 || r.Outer < 0 {
		return bad("dim and outer are both required")
	}
	items := strings.TrimSuffix(list, "}")
	if strings.TrimSpace(items) == "" {
		return bad("no lengths")
	}
	for _, it := range strings.Split(items, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(it))
		if err != nil || n < 1 {
			return bad(fmt.Sprintf("length %q is not an integer >= 1", it))
		}
		r.Lengths = append(r.Lengths, n)
	}
	return r, nil
}

// Check reports whether r fits shape s: dim and outer in range, the outer extent
// len(Lengths) (packed: the extent a multiple of it) and every length within the ragged
// dimension's extent (packed: the slot's).
func (r Ragged) Check(s Shape) error {
	n := len(r.Lengths)
	switch {
	case !s.IsArray():
		return fmt.Errorf("ragged on a non-array shape %s", s)
	case r.Dim >= s.Rank() || r.Outer >= s.Rank():
		return fmt.Errorf("ragged dim=%d outer=%d out of range for %s", r.Dim, r.Outer, s)
	case n == 0:
		return fmt.Errorf("ragged with no lengths")
	}
	extent := s.Dims[r.Dim]
	if r.Packed() {
		if extent%n != 0 {
			return fmt.Errorf("packed ragged dim %d of %s: extent %d is not a multiple of %d sequences", r.Dim, s, extent, n)
		}
		extent /= n
	} else if s.Dims[r.Outer] != n {
		return fmt.Errorf("ragged outer dim %d of %s: extent %d, want %d (one per length)", r.Outer, s, s.Dims[r.Outer], n)
	}
	if m := slices.Max(r.Lengths); m > extent {
		return fmt.Errorf("ragged length %d above the extent %d of dim %d of %s", m, extent, r.Dim, s)
	}
	if slices.Min(r.Lengths) < 1 {
		return fmt.Errorf("ragged length %d, want >= 1", slices.Min(r.Lengths))
	}
	return nil
}

// RaggedOf returns the ragged attribute of in, if it has one.
func RaggedOf(in *Instruction) (Ragged, bool, error) {
	v, ok := in.ExtraAttr(RaggedAttr)
	if !ok {
		return Ragged{}, false, nil
	}
	r, err := ParseRagged(v)
	return r, true, err
}

// SetRagged sets (or replaces) in's ragged attribute.
func SetRagged(in *Instruction, r Ragged) {
	for i, a := range in.Extra {
		if a.Key == RaggedAttr {
			in.Extra[i].Value = r.String()
			return
		}
	}
	in.Extra = append(in.Extra, Attr{Key: RaggedAttr, Value: r.String()})
}

// RaggedDims is how an instruction's value is ragged: Seq lists the dimensions whose
// extent is per sequence (two for attention's lᵢ × lᵢ scores), Batch the outer dimension
// they vary with (-1 when none), Packed the dimension holding the sequences back to back
// (-1 when none). The zero value is not dense: use Dense.
type RaggedDims struct {
	Batch  int
	Seq    []int
	Packed int
}

// Dense returns the RaggedDims of a value with no ragged dimension.
func Dense() RaggedDims { return RaggedDims{Batch: -1, Packed: -1} }

// IsRagged reports whether d has a ragged dimension.
func (d RaggedDims) IsRagged() bool { return len(d.Seq) > 0 || d.Packed >= 0 }

// PerSequence reports whether d has a per-sequence dimension (not only packed rows).
func (d RaggedDims) PerSequence() bool { return len(d.Seq) > 0 }

// String writes d as "batch=0,seq=2+3", "packed=0" or "dense".
func (d RaggedDims) String() string {
	if !d.IsRagged() {
		return "dense"
	}
	var p []string
	if d.Batch >= 0 {
		p = append(p, fmt.Sprintf("batch=%d", d.Batch))
	}
	if len(d.Seq) > 0 {
		s := make([]string, len(d.Seq))
		for i, x := range d.Seq {
			s[i] = strconv.Itoa(x)
		}
		p = append(p, "seq="+strings.Join(s, "+"))
	}
	if d.Packed >= 0 {
		p = append(p, fmt.Sprintf("packed=%d", d.Packed))
	}
	return strings.Join(p, ",")
}

// mapped renames d's dimensions through to (operand dim → result dim, -1: gone); ok is
// false when a ragged dimension is gone.
func (d RaggedDims) mapped(to func(int) int) (RaggedDims, bool) {
	out := Dense()
	if !d.IsRagged() {
		return out, true
	}
	m := func(x int) (int, bool) {
		if x < 0 {
			return -1, true
		}
		y := to(x)
		return y, y >= 0
	}
	var ok bool
	if out.Batch, ok = m(d.Batch); !ok && len(d.Seq) > 0 {
		return out, false
	}
	if out.Packed, ok = m(d.Packed); !ok {
		return out, false
	}
	for _, s := range d.Seq {
		y, ok := m(s)
		if !ok {
			return out, false
		}
		out.Seq = append(out.Seq, y)
	}
	return out, true
}

func (d RaggedDims) equal(o RaggedDims) bool {
	return d.Batch == o.Batch && d.Packed == o.Packed && slices.Equal(d.Seq, o.Seq)
}

// RaggedPad is an op that cannot carry raggedness: the compiler pads its ragged operands
// to the dense extent and its result is dense. Before InsertRaggedPads, Instruction is
// the op and Pad is empty; an explicit pad (InsertRaggedPads) names the pad instruction
// (Pad), the ragged value it pads (Operand) and the op that needed it (Instruction).
type RaggedPad struct {
	Computation, Instruction string
	Opcode                   Opcode
	Reason                   string
	Pad, Operand             string
}

func (p RaggedPad) String() string {
	if p.Pad != "" {
		return fmt.Sprintf("%s: %%%s pads %%%s for %%%s (%s): %s", p.Computation, p.Pad, p.Operand, p.Instruction, p.Opcode, p.Reason)
	}
	return fmt.Sprintf("%s: %%%s (%s): %s", p.Computation, p.Instruction, p.Opcode, p.Reason)
}

// RaggedPadTarget is the custom_call_target of an explicit pad: a custom-call of one
// ragged operand whose result is the same array, dense (its padding filled), with the
// attribute ragged_pad="FOR: REASON" naming the op that needed it and why. In the text:
//
//	%add.3.ragged_pad = f32[64,16]{1,0} custom-call(%add.3), custom_call_target="RaggedPad", ragged_pad="reduce.4 (reduce): reduces across the batch"
const RaggedPadTarget = "RaggedPad"

// raggedPadAttr is the attribute of an explicit pad naming the op it pads for and why.
const raggedPadAttr = "ragged_pad"

// IsRaggedPad reports whether in is an explicit pad (RaggedPadTarget).
func IsRaggedPad(in *Instruction) bool {
	if in.Opcode != OpCustomCall {
		return false
	}
	v, _ := in.ExtraAttr("custom_call_target")
	return strings.Trim(v, `"`) == RaggedPadTarget
}

// explicitPad is the RaggedPad an explicit pad instruction records.
func explicitPad(c *Computation, in *Instruction) RaggedPad {
	p := RaggedPad{Computation: c.Name, Pad: in.Name, Opcode: OpCustomCall}
	if len(in.Operands) > 0 {
		p.Operand = in.Operands[0].Name
	}
	if v, ok := in.ExtraAttr(raggedPadAttr); ok {
		if u, err := strconv.Unquote(v); err == nil {
			v = u
		}
		forName, reason, _ := strings.Cut(v, ": ")
		p.Reason = reason
		if name, op, ok := strings.Cut(forName, " ("); ok {
			p.Instruction = name
			p.Opcode, _ = ParseOpcode(strings.TrimSuffix(op, ")"))
		} else {
			p.Instruction = forName
		}
	}
	return p
}

// InsertRaggedPads makes every pad of m explicit: before each op of the entry that cannot
// carry raggedness (InferRagged's Pads), each of its ragged operands goes through a new
// pad instruction (RaggedPadTarget), so the op reads a dense value and the program pays
// for the padding in a kernel of its own. It returns the explicit pads (those inserted
// now and any already there), in program order; none when m has no ragged parameter. An
// op that cannot carry raggedness inside a called computation is an error (its operand
// would have to be padded before the call).
func InsertRaggedPads(m *Module) ([]RaggedPad, error) {
	ri, err := InferRagged(m)
	if err != nil || ri == nil {
		return nil, err
	}
	for _, p := range ri.Pads {
		if p.Pad != "" {
			continue
		}
		if p.Computation != m.Entry.Name {
			return nil, fmt.Errorf("%s: %%%s (%s) cannot carry raggedness inside a called computation (%s): pad its operand before the call", p.Computation, p.Instruction, p.Opcode, p.Reason)
		}
		c := m.Entry
		in := c.Lookup(p.Instruction)
		if in == nil {
			return nil, fmt.Errorf("%s: no instruction %%%s", c.Name, p.Instruction)
		}
		at := slices.Index(c.Instructions, in)
		for i, op := range in.Operands {
			if !ri.Of(op).IsRagged() {
				continue
			}
			name := op.Name + ".ragged_pad"
			for k := 2; c.Lookup(name) != nil; k++ {
				name = fmt.Sprintf("%s.ragged_pad.%d", op.Name, k)
			}
			pad := &Instruction{Name: name, Opcode: OpCustomCall, Shape: op.Shape, Operands: []*Instruction{op},
				Extra: []Attr{{Key: "custom_call_target", Value: strconv.Quote(RaggedPadTarget)},
					{Key: raggedPadAttr, Value: strconv.Quote(fmt.Sprintf("%s (%s): %s", in.Name, in.Opcode, p.Reason))}}}
			c.Instructions = slices.Insert(c.Instructions, at, pad)
			at++
			in.Operands[i] = pad
		}
	}
	m.Entry.Renumber()
	after, err := InferRagged(m)
	if err != nil {
		return nil, err
	}
	for _, p := range after.Pads {
		if p.Pad == "" {
			return nil, fmt.Errorf("%s: %%%s (%s) still cannot carry raggedness after padding: %s", p.Computation, p.Instruction, p.Opcode, p.Reason)
		}
	}
	return after.Pads, nil
}

// RaggedInfo is InferRagged's result: every instruction's RaggedDims (dense ones
// omitted), the lengths, and the pads.
type RaggedInfo struct {
	Lengths []int
	Dims    map[*Instruction]RaggedDims
	Pads    []RaggedPad
}

// Of returns in's RaggedDims (Dense when not ragged).
func (ri *RaggedInfo) Of(in *Instruction) RaggedDims {
	if d, ok := ri.Dims[in]; ok {
		return d
	}
	return Dense()
}

// InferRagged carries the ragged attributes of m's entry parameters through the entry
// and the computations it calls (fusions; the dims of a fused computation's instructions
// are recorded too). Every ragged parameter must have the same lengths and fit its shape;
// only parameters of the entry carry the attribute. It returns nil info and no error when
// no parameter is ragged.
func InferRagged(m *Module) (*RaggedInfo, error) {
	if m.Entry == nil {
		return nil, fmt.Errorf("module has no ENTRY computation")
	}
	ri := &RaggedInfo{Dims: map[*Instruction]RaggedDims{}}
	found := false
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			r, ok, err := RaggedOf(in)
			if !ok {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %%%s: %w", c.Name, in.Name, err)
			}
			if in.Opcode != OpParameter || c != m.Entry {
				return nil, fmt.Errorf("%s: %%%s: a ragged attribute on %s: only the entry's parameters take one", c.Name, in.Name, in.Opcode)
			}
			if err := r.Check(in.Shape); err != nil {
				return nil, fmt.Errorf("%s: %%%s: %w", c.Name, in.Name, err)
			}
			if found && !slices.Equal(r.Lengths, ri.Lengths) {
				return nil, fmt.Errorf("%s: %%%s: ragged lengths differ from another parameter's", c.Name, in.Name)
			}
			found = true
			ri.Lengths = r.Lengths
			d := Dense()
			if r.Packed() {
				d.Packed = r.Dim
			} else {
				d.Batch, d.Seq = r.Outer, []int{r.Dim}
			}
			ri.Dims[in] = d
		}
	}
	if !found {
		return nil, nil
	}
	ri.computation(m.Entry, nil)
	return ri, nil
}

// computation infers c's instructions; params gives a called computation's parameters'
// dims by parameter number (nil for the entry, whose parameters are set already).
func (ri *RaggedInfo) computation(c *Computation, params []RaggedDims) {
	for _, in := range c.Instructions {
		if in.Opcode == OpParameter {
			if params != nil && in.ParamNum < len(params) && params[in.ParamNum].IsRagged() {
				ri.Dims[in] = params[in.ParamNum]
			}
			continue
		}
		if IsRaggedPad(in) { // an explicit pad: its result is dense
			ri.Pads = append(ri.Pads, explicitPad(c, in))
			continue
		}
		d, why := ri.instruction(in)
		if why != "" {
			ri.Pads = append(ri.Pads, RaggedPad{Computation: c.Name, Instruction: in.Name, Opcode: in.Opcode, Reason: why})
			continue
		}
		if d.IsRagged() {
			ri.Dims[in] = d
		}
	}
}

// instruction infers in's dims from its operands'; why is non-empty when in cannot carry
// a ragged operand (a pad).
func (ri *RaggedInfo) instruction(in *Instruction) (RaggedDims, string) {
	ops := make([]RaggedDims, len(in.Operands))
	someRagged := false
	for i, op := range in.Operands {
		ops[i] = ri.Of(op)
		someRagged = someRagged || ops[i].IsRagged()
	}
	if in.Opcode == OpFusion && in.Calls != nil {
		ri.computation(in.Calls, ops)
		return ri.Of(in.Calls.Root), ""
	}
	if !someRagged {
		return Dense(), ""
	}
	switch cat := in.Info().Category; {
	case in.Opcode == OpTuple:
		// The program's outputs (or a loop's state) gathered: each element keeps its own
		// raggedness; the tuple itself is not an array.
		return Dense(), ""
	case cat == CatElementwise || cat == CatTranscendental || in.Opcode == OpCopy:
		// Operands ragged on some of the same sequence dimensions (a mask over the keys
		// added to lᵢ × lᵢ scores) combine into the union; packed ones must agree.
		var out RaggedDims
		set := false
		for _, d := range ops {
			if !d.IsRagged() {
				continue
			}
			switch {
			case !set:
				out, set = d, true
			case out.equal(d):
			case out.Packed < 0 && d.Packed < 0 && out.Batch == d.Batch:
				out.Seq = slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(out.Seq), d.Seq...))))
			default:
				return Dense(), fmt.Sprintf("operands ragged differently (%s, %s)", out, d)
			}
		}
		return out, ""
	case in.Opcode == OpBroadcast:
		return mappedOr(ops[0], func(x int) int { return in.Dimensions[x] }, "broadcast drops a ragged dimension")
	case in.Opcode == OpTranspose:
		inv := make([]int, len(in.Dimensions))
		for i, p := range in.Dimensions {
			inv[p] = i
		}
		return mappedOr(ops[0], func(x int) int { return inv[x] }, "transpose drops a ragged dimension")
	case in.Opcode == OpReshape:
		return ri.reshape(in.Operands[0].Shape.Dims, in.Shape.Dims, ops[0])
	case in.Opcode == OpBitcast:
		return ri.bitcast(in, ops[0])
	case in.Opcode == OpDot && in.Dot != nil:
		return ri.dot(in, ops[0], ops[1])
	case in.Opcode == OpReduce:
		return ri.reduce(in, ops)
	case in.Opcode == OpSlice:
		return ri.slice(in, ops[0])
	case in.Opcode == OpGather && !ops[0].IsRagged() && len(in.Operands) == 2:
		return ri.gather(in, ops[1])
	}
	return Dense(), fmt.Sprintf("%s cannot carry a ragged operand", in.Opcode)
}

// mappedOr is mapped with a pad reason when a ragged dimension is gone.
func mappedOr(d RaggedDims, to func(int) int, why string) (RaggedDims, string) {
	out, ok := d.mapped(to)
	if !ok {
		return Dense(), why
	}
	return out, ""
}

// reshape keeps raggedness when the reshape factors into groups of dimensions of equal
// size, each ragged group a packed dimension split into (batch, slot) [and the rest
// untouched], (batch, seq) merged into a packed one, or a ragged dimension kept as it is.
func (ri *RaggedInfo) reshape(from, to []int, d RaggedDims) (RaggedDims, string) {
	n := len(ri.Lengths)
	out := Dense()
	i, j := 0, 0
	for i < len(from) || j < len(to) {
		// One group: the shortest runs from[i:i2], to[j:j2] of equal product.
		i2, j2 := i, j
		pf, pt := 1, 1
		for {
			if pf <= pt && i2 < len(from) {
				pf *= from[i2]
				i2++
			} else if j2 < len(to) {
				pt *= to[j2]
				j2++
			} else if i2 < len(from) {
				pf *= from[i2]
				i2++
			} else {
				break
			}
			if pf == pt && (i2 == len(from) || from[i2] != 1) && (j2 == len(to) || to[j2] != 1) {
				break
			}
		}
		if pf != pt {
			return Dense(), "reshape does not factor into groups"
		}
		inGroup := func(x int) bool { return x >= i && x < i2 }
		hasBatch, hasPacked := inGroup(d.Batch), inGroup(d.Packed)
		var seqs []int
		for _, s := range d.Seq {
			if inGroup(s) {
				seqs = append(seqs, s)
			}
		}
		switch {
		case !hasBatch && !hasPacked && len(seqs) == 0:
		case i2-i == 1 && j2-j == 1: // kept as it is
			if hasBatch {
				out.Batch = j
			}
			if hasPacked {
				out.Packed = j
			}
			for range seqs {
				out.Seq = append(out.Seq, j)
			}
		case hasPacked && i2-i == 1 && j2-j == 2 && to[j] == n: // packed → (batch, seq)
			out.Batch, out.Seq = j, append(out.Seq, j+1)
		case hasBatch && len(seqs) == 1 && i2-i == 2 && d.Batch == i && seqs[0] == i+1 && j2-j == 1: // (batch, seq) → packed
			out.Packed = j
		default:
			return Dense(), "reshape mixes a ragged dimension with others"
		}
		i, j = i2, j2
	}
	if len(out.Seq) > 0 && out.Batch < 0 {
		// The batch went into another group than its sequences.
		return Dense(), "reshape separates the sequences from their batch"
	}
	if d.Batch >= 0 && out.Batch < 0 && out.Packed < 0 {
		return Dense(), "reshape drops the batch"
	}
	slices.Sort(out.Seq)
	return out, ""
}

// bitcast is a reshape of the physical (major-to-minor) dimensions of its operand into
// its result's.
func (ri *RaggedInfo) bitcast(in *Instruction, d RaggedDims) (RaggedDims, string) {
	src, dst := in.Operands[0].Shape, in.Shape
	order := func(s Shape) []int { // physical position → logical dim
		m2m := s.LayoutOrDefault().MinorToMajor
		o := make([]int, len(m2m))
		for i, x := range m2m {
			o[len(m2m)-1-i] = x
		}
		return o
	}
	so, do := order(src), order(dst)
	phys, ok := d.mapped(func(x int) int { return slices.Index(so, x) })
	if !ok {
		return Dense(), "bitcast of an unknown layout"
	}
	out, why := ri.reshape(src.PhysicalDims(), dst.PhysicalDims(), phys)
	if why != "" {
		return Dense(), why
	}
	out, _ = out.mapped(func(p int) int { return do[p] })
	slices.Sort(out.Seq)
	return out, ""
}

// dot carries the batch dimensions, each side's free dimensions and a contraction over a
// sequence dimension both sides share per sequence (attention's context).
func (ri *RaggedInfo) dot(in *Instruction, l, r RaggedDims) (RaggedDims, string) {
	dd := in.Dot
	lr, rr := in.Operands[0].Shape.Rank(), in.Operands[1].Shape.Rank()
	// Result dims: batch dims, then lhs free, then rhs free.
	free := func(rank int, batch, contr []int) []int {
		var f []int
		for x := 0; x < rank; x++ {
			if !slices.Contains(batch, x) && !slices.Contains(contr, x) {
				f = append(f, x)
			}
		}
		return f
	}
	lf, rf := free(lr, dd.LhsBatch, dd.LhsContracting), free(rr, dd.RhsBatch, dd.RhsContracting)
	nb := len(dd.LhsBatch)
	lto := func(x int) int {
		if k := slices.Index(dd.LhsBatch, x); k >= 0 {
			return k
		}
		if k := slices.Index(lf, x); k >= 0 {
			return nb + k
		}
		return -1
	}
	rto := func(x int) int {
		if k := slices.Index(dd.RhsBatch, x); k >= 0 {
			return k
		}
		if k := slices.Index(rf, x); k >= 0 {
			return nb + len(lf) + k
		}
		return -1
	}
	// Contractions over a ragged dimension: only a sequence dimension of both sides, with
	// the same batch dimension on both.
	for k, lc := range dd.LhsContracting {
		rc := dd.RhsContracting[k]
		lseq, rseq := slices.Contains(l.Seq, lc), slices.Contains(r.Seq, rc)
		switch {
		case lc == l.Packed || rc == r.Packed:
			return Dense(), "dot contracts the packed dimension (a reduction across the batch)"
		case lseq != rseq:
			return Dense(), "dot contracts a sequence dimension of one side only"
		case lseq && (lto(l.Batch) < 0 || lto(l.Batch) != rto(r.Batch)):
			return Dense(), "dot contracts sequences of different batch entries"
		}
	}
	drop := func(d RaggedDims, contr []int) RaggedDims {
		d.Seq = slices.DeleteFunc(slices.Clone(d.Seq), func(s int) bool { return slices.Contains(contr, s) })
		return d
	}
	lo, ok1 := drop(l, dd.LhsContracting).mapped(lto)
	ro, ok2 := drop(r, dd.RhsContracting).mapped(rto)
	if !ok1 || !ok2 {
		return Dense(), "dot loses a ragged dimension"
	}
	out := lo
	if !out.IsRagged() {
		out = ro
	} else if ro.IsRagged() {
		if ro.Packed >= 0 || lo.Packed >= 0 || (ro.Batch != lo.Batch) {
			return Dense(), fmt.Sprintf("dot of operands ragged differently (%s, %s)", lo, ro)
		}
		out.Seq = append(slices.Clone(lo.Seq), ro.Seq...)
		slices.Sort(out.Seq)
		out.Seq = slices.Compact(out.Seq)
	}
	return out, ""
}

// reduce drops reduced sequence dimensions (each sequence over its own length); reducing
// the batch or packed dimension is a reduction across the batch.
func (ri *RaggedInfo) reduce(in *Instruction, ops []RaggedDims) (RaggedDims, string) {
	d := ops[0]
	for _, o := range ops[len(ops)/2:] { // the init values
		if o.IsRagged() {
			return Dense(), "ragged init value"
		}
	}
	red := in.Dimensions
	if slices.Contains(red, d.Packed) || slices.Contains(red, d.Batch) {
		return Dense(), "reduce across the batch"
	}
	d.Seq = slices.DeleteFunc(slices.Clone(d.Seq), func(s int) bool { return slices.Contains(red, s) })
	if len(d.Seq) == 0 {
		d.Batch = -1 // every sequence reduced: the batch is a plain dimension
	}
	rank := in.Operands[0].Shape.Rank()
	to := make([]int, rank)
	k := 0
	for x := 0; x < rank; x++ {
		if slices.Contains(red, x) {
			to[x] = -1
			continue
		}
		to[x] = k
		k++
	}
	return mappedOr(d, func(x int) int { return to[x] }, "reduce drops a ragged dimension")
}

// slice keeps raggedness when it leaves the ragged dimensions whole or takes the first
// entry of every sequence (BERT's [CLS] token: then the dimension is dense).
func (ri *RaggedInfo) slice(in *Instruction, d RaggedDims) (RaggedDims, string) {
	src := in.Operands[0].Shape.Dims
	whole := func(x int) bool {
		s := in.Slice[x]
		return s.Start == 0 && s.Limit == src[x] && max(s.Stride, 1) == 1
	}
	if d.Packed >= 0 && !whole(d.Packed) || d.Batch >= 0 && !whole(d.Batch) {
		return Dense(), "slice into the batch"
	}
	var keep []int
	for _, s := range d.Seq {
		switch sl := in.Slice[s]; {
		case whole(s):
			keep = append(keep, s)
		case sl.Start == 0 && sl.Limit == 1: // every sequence has a first entry
		default:
			return Dense(), "slice into the sequences"
		}
	}
	d.Seq = keep
	if len(keep) == 0 {
		d.Batch = -1
	}
	return d, ""
}

// gather of rows of a dense table at ragged indices: the result's index dimensions are
// ragged as the indices are (an embedding lookup); offset dims are dense.
func (ri *RaggedInfo) gather(in *Instruction, idx RaggedDims) (RaggedDims, string) {
	offs := map[int]bool{}
	od, _ := in.IntSetAttr("offset_dims")
	for _, n := range od {
		offs[n] = true
	}
	ivd := in.Operands[1].Shape.Rank()
	if v, ok := in.ExtraAttr("index_vector_dim"); ok {
		if n, err := strconv.Atoi(v); err == nil {
			ivd = n
		}
	}
	var batchOut []int
	for x := 0; x < in.Shape.Rank(); x++ {
		if !offs[x] {
			batchOut = append(batchOut, x)
		}
	}
	return mappedOr(idx, func(x int) int {
		if x == ivd {
			return -1
		}
		k := x
		if x > ivd {
			k--
		}
		if k < len(batchOut) {
			return batchOut[k]
		}
		return -1
	}, "gather drops a ragged index dimension")
}

// verifyRagged checks the ragged attributes of m (InferRagged's checks); Verify runs it.
func verifyRagged(m *Module) error {
	_, err := InferRagged(m)
	return err
}
