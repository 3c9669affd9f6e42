package hlo

// This file reads XLA's binary HLO: a serialized xla.HloModuleProto (or an xla.HloProto
// that wraps one), as --xla_dump_hlo_as_proto writes to *.hlo.pb. It decodes the wire
// format with protowire and builds the IR directly (protoBuilder): each computation and
// instruction, with typed attributes and references by name, goes into the parser's
// pending state, which the parser's own resolution and checks finish, so that a binary
// module goes through exactly the checks of a text one without being rendered as text.
//
// Field numbers, from xla/service/hlo.proto and xla/xla_data.proto:
//
//	HloProto:            hlo_module=1 (HloModuleProto), buffer_assignment=3
//	HloModuleProto:      name=1, entry_computation_name=2, computations=3, id=5,
//	                     entry_computation_id=6
//	HloComputationProto: name=1, instructions=2, id=5, root_id=6, is_fusion_computation=7,
//	                     execution_thread=8
//	HloInstructionProto: name=1, opcode=2, shape=3, metadata=7, literal=8,
//	                     parameter_number=9, fusion_kind=11, tuple_index=13, dimensions=14,
//	                     window=15, convolution_dimension_numbers=16, slice_dimensions=17,
//	                     exponent_bits=18, mantissa_bits=19, dynamic_slice_sizes=20,
//	                     padding_config=21, distribution=23, epsilon=24 (float),
//	                     feature_index=25, channel_id=26, custom_call_target=28,
//	                     dot_dimension_numbers=30, fft_type=31, fft_length=32,
//	                     gather_dimension_numbers=33, gather_slice_sizes=34, id=35,
//	                     operand_ids=36, called_computation_ids=38, backend_config=43,
//	                     scatter_dimension_numbers=48, replica_groups=49,
//	                     feature_group_count=50, source_target_pairs=52,
//	                     batch_group_count=58, triangular_solve_options=59, is_stable=60,
//	                     cholesky_options=62, comparison_direction=63, rng_algorithm=70,
//	                     use_global_device_ids=71, comparison_type=72, k=81, largest=85
//	ShapeProto:          element_type=2, dimensions=3, tuple_shapes=4, layout=5,
//	                     is_dynamic_dimension=6
//	LayoutProto:         minor_to_major=1, tiles=6 (TileProto: dimensions=1)
//	OpMetadata:          op_type=1, op_name=2, source_file=3, source_line=4
//	LiteralProto:        preds=2, s32s=4, s64s=5, u32s=6, u64s=7, f32s=8, f64s=9
//	WindowDimension:     size=1, stride=2, padding_low=3, padding_high=4,
//	                     window_dilation=5, base_dilation=6, window_reversal=7
//	ConvolutionDimensionNumbers: kernel_input_feature_dimension=3,
//	                     kernel_output_feature_dimension=4, kernel_spatial_dimensions=6,
//	                     input_batch_dimension=7, input_feature_dimension=8,
//	                     output_batch_dimension=9, output_feature_dimension=10,
//	                     input_spatial_dimensions=11, output_spatial_dimensions=12
//	DotDimensionNumbers: lhs_contracting=1, rhs_contracting=2, lhs_batch=3, rhs_batch=4
//	GatherDimensionNumbers: offset_dims=1, collapsed_slice_dims=2, start_index_map=3,
//	                     index_vector_dim=4, operand_batching_dims=5,
//	                     start_indices_batching_dims=6
//	ScatterDimensionNumbers: update_window_dims=1, inserted_window_dims=2,
//	                     scatter_dims_to_operand_dims=3, index_vector_dim=4,
//	                     input_batching_dims=5, scatter_indices_batching_dims=6
//	PaddingConfigDimension: edge_padding_low=1, edge_padding_high=2, interior_padding=3
//	SliceDimensions:     start=1, limit=2, stride=3
//	ReplicaGroup:        replica_ids=1;   SourceTarget: source=1, target=2
//	TriangularSolveOptions: left_side=1, lower=2, unit_diagonal=3, transpose_a=4
//	CholeskyOptions:     lower=1
//	PrimitiveType:       PRED=1 S8=2 S16=3 S32=4 S64=5 U8=6 U16=7 U32=8 U64=9 F16=10
//	                     F32=11 F64=12 TUPLE=13 OPAQUE_TYPE=14 C64=15 BF16=16 TOKEN=17
//	                     C128=18 F8E5M2=19 F8E4M3FN=20 S4=21 U4=22 F8E4M3B11FNUZ=23
//	                     F8E5M2FNUZ=24 F8E4M3FNUZ=25 S2=26 U2=27 F8E4M3=28 F8E3M4=29
//	                     S1=30 U1=31 F4E2M1FN=32 F8E8M0FNU=33

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tpucost/tpucost/internal/inputfile"
	"github.com/tpucost/tpucost/internal/pbwire"
)

// ParseProtoFile is ParseProtoFileContext under context.Background(): the default size
// limit, a read that cannot be interrupted.
func ParseProtoFile(path string) (*Module, error) {
	return ParseProtoFileContext(context.Background(), path)
}

// ParseProtoFileContext reads a binary HLO module (see DecodeModuleProto) from path, at
// most inputfile.Max(ctx, inputfile.HLOProto) bytes (2 GiB unless ctx carries
// --max-input-bytes); a read still waiting when ctx is cancelled stops (as
// ParseFileContext's).
func ParseProtoFileContext(ctx context.Context, path string) (*Module, error) {
	data, err := inputfile.ReadFile(ctx, path, inputfile.HLOProto)
	if err != nil {
		return nil, fmt.Errorf("hlo: %w", err)
	}
	return DecodeModuleProto(path, data)
}

// DecodeModuleProto decodes a serialized xla.HloModuleProto, or an xla.HloProto whose
// hlo_module field holds one, into a module checked like Parse's (filename is used in
// errors only). Errors name the file and, for a module that decodes but is not valid,
// the computation and instruction at fault. Constants keep scalar values; array
// constants become "{...}" (their values are not needed to time them).
func DecodeModuleProto(filename string, data []byte) (*Module, error) {
	top, err := pbwire.Parse(data)
	if err != nil {
		return nil, pbwire.Invalid(filename, "HloModuleProto", data, err)
	}
	mod, err := findModule(top)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filename, err)
	}
	m, err := decodeModule(filename, mod)
	if de := (*pbwire.DecodeError)(nil); errors.As(err, &de) {
		return nil, pbwire.Invalid(filename, "HloModuleProto", data, err)
	}
	return m, err
}

// DecodeModuleProtoField decodes the HloModuleProto embedded as field number field of
// the message in data (for example tpu_graphs.ModuleTuningData, whose module is field 1).
func DecodeModuleProtoField(filename string, data []byte, field int) (*Module, error) {
	top, err := pbwire.Parse(data)
	if err != nil {
		return nil, pbwire.Invalid(filename, "protocol buffer", data, err)
	}
	b, ok := top.Bytes(protowire.Number(field))
	if !ok {
		return nil, fmt.Errorf("%s: field %d holds no message", filename, field)
	}
	return DecodeModuleProto(filename, b)
}

// findModule returns the HloModuleProto in top: top itself, or the module that a wrapper
// holds in its field 1 (xla.HloProto's hlo_module, tpu_graphs.ModuleTuningData's module),
// looking at most three wrappers deep. A message whose field 1 repeats (a collection of
// several modules, such as a file of tuning records) is an error naming the count: it
// holds no single module to compile.
func findModule(top pbwire.Message) (pbwire.Message, error) {
	m := top
	for depth := 0; depth < 4; depth++ {
		if isModuleProto(m) {
			return m, nil
		}
		inner := m.All(1)
		if len(inner) > 1 && inner[0].Type == protowire.BytesType {
			if sub, err := pbwire.Parse(inner[0].B); err == nil {
				if _, err := findModule(sub); err == nil {
					return nil, fmt.Errorf("it holds %d records with a module each, not one module (a TpuGraphs tuning-data collection: import it with `tpucost import tpugraphs`)", len(inner))
				}
			}
		}
		if len(inner) != 1 || inner[0].Type != protowire.BytesType {
			break
		}
		next, err := pbwire.Parse(inner[0].B)
		if err != nil {
			break
		}
		m = next
	}
	return nil, errors.New("no HloModuleProto found (fields 1 name, 3 computations) in it or in its field 1")
}

// isModuleProto reports whether m has the shape of an xla.HloModuleProto: one name
// (field 1, bytes), at most one entry computation name (field 2, bytes) and at least one
// computation (field 3), each a message with a name (field 1, bytes) and instructions
// (field 2, messages).
func isModuleProto(m pbwire.Message) bool {
	one := func(m pbwire.Message, n protowire.Number, opt bool) bool {
		fs := m.All(n)
		return (opt && len(fs) == 0) || (len(fs) == 1 && fs[0].Type == protowire.BytesType)
	}
	if !one(m, 1, false) || !one(m, 2, true) {
		return false
	}
	comps := m.All(3)
	if len(comps) == 0 {
		return false
	}
	for _, c := range comps {
		if c.Type != protowire.BytesType {
			return false
		}
		cm, err := pbwire.Parse(c.B)
		if err != nil || !one(cm, 1, false) {
			return false
		}
		for _, in := range cm.All(2) {
			if in.Type != protowire.BytesType {
				return false
			}
		}
	}
	return true
}

// ---------------------------------------------------------------------------------
// Building the IR.

// protoElem maps XLA's PrimitiveType numbers to element types.
var protoElem = map[int64]ElemType{
	1: PRED, 2: S8, 3: S16, 4: S32, 5: S64, 6: U8, 7: U16, 8: U32, 9: U64, 10: F16, 11: F32,
	12: F64, 13: TupleType, 14: Opaque, 15: C64, 16: BF16, 17: Token, 18: C128, 19: F8E5M2,
	20: F8E4M3FN, 21: S4, 22: U4, 23: F8E4M3B11FNUZ, 24: F8E5M2FNUZ, 25: F8E4M3FNUZ, 26: S2,
	27: U2, 28: F8E4M3, 29: F8E3M4, 30: S1, 31: U1, 32: F4E2M1FN, 33: F8E8M0FNU,
}

// protoBuilder builds a module from its proto into the parser's pending state (the
// computations, their instructions with typed attributes and operand and computation
// references by name), which the parser's own resolution and checks finish
// (finishComputation, finish): a binary module goes through exactly the checks of a text
// one, without being rendered as text. The parser reports errors at offsets into its
// source; here the source is a table of places, one line per computation or instruction
// (an offset is a place's index), so that an error names the computation and the
// instruction at fault.
type protoBuilder struct {
	p      *parser
	places []string
}

// place records a place for errors and returns its offset.
func (b *protoBuilder) place(what string) int {
	b.places = append(b.places, what)
	return len(b.places) - 1
}

func decodeModule(filename string, mod pbwire.Message) (*Module, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s", filename, fmt.Sprintf(format, args...))
	}
	name := mod.Str(1)
	if name == "" {
		name = "module"
	}
	comps, err := mod.Msgs(3)
	if err != nil {
		return nil, fail("computations: %v", err)
	}
	if len(comps) == 0 {
		return nil, fail("the HloModuleProto has no computations")
	}
	compName := map[int64]string{}
	compRoot := map[int64]Shape{} // computation id -> root shape, for while bodies
	for _, c := range comps {
		compName[c.Int(5)] = c.Str(1)
	}
	entryID := mod.Int(6)
	entryName := mod.Str(2)
	if entryName == "" {
		entryName = compName[entryID]
	}
	b := &protoBuilder{p: &parser{file: filename, compByName: map[string]int{}, instrDefs: map[string]int{}}}
	b.place("the module header")
	// The places: every computation's and instruction's, numbered before any is built so
	// that the parser's source (one line per place) exists when it reports an error.
	instrs := make([][]pbwire.Message, len(comps))
	for i, c := range comps {
		if instrs[i], err = c.Msgs(2); err != nil {
			return nil, fail("computation %q: %v", c.Str(1), err)
		}
		rootID := c.Int(6)
		for _, in := range instrs[i] {
			if in.Int(35) == rootID {
				sh, _ := in.Msg(3)
				s, _ := protoShape(sh, 0)
				compRoot[c.Int(5)] = s
			}
		}
	}
	n := len(b.places)
	for i := range comps {
		n += 2 + len(instrs[i])
	}
	b.p.src = make([]byte, n)
	for i := range b.p.src {
		b.p.src[i] = '\n'
	}
	m := &Module{Name: protoName(name)}
	for i, c := range comps {
		if err := b.computation(c, instrs[i], entryName, compName, compRoot); err != nil {
			return nil, b.mapErr(err)
		}
	}
	if b.p.entry == nil {
		// As in XLA, without an ENTRY mark the last computation is the entry.
		b.p.entry = b.p.comps[len(b.p.comps)-1]
	}
	if err := b.p.finish(m); err != nil {
		return nil, b.mapErr(err)
	}
	return m, nil
}

// mapErr turns an error at a place into one naming the file and the place.
func (b *protoBuilder) mapErr(err error) error {
	filename := b.p.file
	var pe *ParseError
	if errors.As(err, &pe) && pe.Line >= 1 && pe.Line <= len(b.places) {
		msg := fmt.Sprintf("%s: %s: %s", filename, b.places[pe.Line-1], pe.Msg)
		if cause := errors.Unwrap(err); cause != nil {
			return fmt.Errorf("%s: %w", msg, cause)
		}
		return errors.New(msg)
	}
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: decoded module: %w", filename, err)
	}
	return err
}

// placeErr is an error at place pos (the parser's form, mapped by mapErr).
func (b *protoBuilder) placeErr(pos int, format string, args ...any) error {
	return b.p.errAt(pos, format, args...)
}

// computation builds computation c with instructions instrs into the parser's state and
// finishes it (finishComputation), as the parser does for each computation it reads.
func (b *protoBuilder) computation(c pbwire.Message, instrs []pbwire.Message, entryName string, compName map[int64]string, compRoot map[int64]Shape) error {
	p := b.p
	cname := c.Str(1)
	what := fmt.Sprintf("computation %q", cname)
	pos := b.place(what)
	name := protoName(cname)
	if i, dup := p.compByName[name]; dup {
		return b.placeErr(pos, "duplicate computation name %q (first defined at %s)", name, p.posString(p.comps[i].pos))
	}
	cs := &compState{comp: &Computation{Name: name}, pos: pos, root: -1, defs: map[string]int{}}
	if cname == entryName {
		if p.entry != nil {
			return b.placeErr(pos, "expected one ENTRY computation, found a second (%q after %q)", name, p.entry.comp.Name)
		}
		p.entry = cs
	}
	p.compByName[name] = len(p.comps)
	p.comps = append(p.comps, cs)
	ids := map[int64]string{}
	for _, in := range instrs {
		ids[in.Int(35)] = in.Str(1)
	}
	rootID := c.Int(6)
	for _, in := range instrs {
		ipos := b.place(fmt.Sprintf("computation %q, instruction %q", cname, in.Str(1)))
		if err := b.instruction(cs, in, ipos, ids, compName, compRoot, in.Int(35) == rootID); err != nil {
			return err
		}
	}
	cs.closePos = b.place(what)
	if th := c.Str(8); th != "" && th != "main" {
		cs.comp.Attrs = append(cs.comp.Attrs, Attr{Key: "execution_thread", Value: strconv.Quote(th)})
	}
	return p.finishComputation(cs)
}

// protoShape builds a ShapeProto's shape, checked as the parser checks a written one:
// known element types, non-negative sizes, a size that fits (Shape.CheckSize) and a
// layout that is a permutation of the dimensions. A layout whose minor_to_major does not
// list every dimension is dropped (XLA writes such layouts for shapes without one).
func protoShape(m pbwire.Message, depth int) (Shape, error) {
	if depth > maxNesting {
		return Shape{}, fmt.Errorf("shape nested more than %d deep", maxNesting)
	}
	et, ok := protoElem[m.Int(2)]
	if !ok {
		return Shape{}, fmt.Errorf("unknown element type %d", m.Int(2))
	}
	if et == TupleType {
		elems, err := m.Msgs(4)
		if err != nil {
			return Shape{}, err
		}
		tuple := []Shape{}
		for _, e := range elems {
			s, err := protoShape(e, depth+1)
			if err != nil {
				return Shape{}, err
			}
			tuple = append(tuple, s)
		}
		return Shape{Elem: TupleType, Tuple: tuple}, nil
	}
	if et == Token || et == Opaque {
		return Shape{Elem: et, Dims: []int{}}, nil
	}
	pdims, err := m.Ints(3)
	if err != nil {
		return Shape{}, err
	}
	dyn, err := m.Ints(6)
	if err != nil {
		return Shape{}, err
	}
	dims := []int{}
	var dynamic []bool
	for i, d := range pdims {
		if d < 0 {
			return Shape{}, fmt.Errorf("negative dimension %d", d)
		}
		isDyn := i < len(dyn) && dyn[i] != 0
		if isDyn && dynamic == nil {
			dynamic = make([]bool, len(dims), len(dims)+1)
		}
		dims = append(dims, int(d))
		if dynamic != nil {
			dynamic = append(dynamic, isDyn)
		}
	}
	s := Shape{Elem: et, Dims: dims, Dynamic: dynamic}
	if err := s.CheckSize(); err != nil {
		return Shape{}, shapeCheckError{err}
	}
	if !m.Has(5) {
		return s, nil
	}
	lm, err := m.Msg(5)
	if err != nil {
		return Shape{}, err
	}
	mtm, err := lm.Ints(1)
	if err != nil {
		return Shape{}, err
	}
	if len(mtm) != len(pdims) {
		return s, nil
	}
	l := &Layout{MinorToMajor: []int{}}
	for _, d := range mtm {
		l.MinorToMajor = append(l.MinorToMajor, int(d))
	}
	tiles, err := lm.Msgs(6)
	if err != nil {
		return Shape{}, err
	}
	for _, tl := range tiles {
		td, err := tl.Ints(1)
		if err != nil {
			return Shape{}, err
		}
		if len(td) == 0 {
			return Shape{}, fmt.Errorf("a layout tile without dimensions")
		}
		tile := make([]int, len(td))
		for i, v := range td {
			if v < 0 {
				return Shape{}, fmt.Errorf("negative tile dimension %d", v)
			}
			tile[i] = int(v)
		}
		l.Tiles = append(l.Tiles, tile)
	}
	if err := checkPermutation(l.MinorToMajor, s.Rank()); err != nil {
		return Shape{}, shapeCheckError{fmt.Errorf("bad layout %s for %s: %w", l, s.StringNoLayout(), err)}
	}
	s.Layout = l
	return s, nil
}

// shapeCheckError is a shape that decodes but fails the parser's checks of a written
// shape (its size, its layout): reported as the parser reports it, without the "shape:"
// of a shape that does not decode.
type shapeCheckError struct{ error }

func (e shapeCheckError) Unwrap() error { return e.error }

// protoWord checks a proto string that names something (a comparison direction, a
// fusion kind) as the parser reads such a word: surrounding whitespace dropped, the rest
// made of name characters.
func protoWord(what, v string) (string, error) {
	i, j := 0, len(v)
	for i < j && isSpace(v[i]) {
		i++
	}
	for j > i && isSpace(v[j-1]) {
		j--
	}
	w := v[i:j]
	if w == "" {
		return "", fmt.Errorf("expected %s, found %q", what, v)
	}
	for k := 0; k < len(w); k++ {
		if !isNameChar(w[k]) {
			return "", fmt.Errorf("expected %s, found %q", what, v)
		}
	}
	return w, nil
}

// intsOf converts proto integers to ints (the parser's range: an int).
func intsOf(xs []int64) []int {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = int(x)
	}
	return out
}

// instruction builds one instruction into cs, as the parser's instruction does for its
// text: its typed attributes set, the others kept as Extra attributes in the order and
// form the text of XLA's printer gives them, operands and called computations as
// references by name.
func (b *protoBuilder) instruction(cs *compState, in pbwire.Message, pos int, ids map[int64]string, compName map[int64]string, compRoot map[int64]Shape, root bool) error {
	p := b.p
	name, opcode := protoName(in.Str(1)), in.Str(2)
	op, ok := opcodeByName[opcode]
	if !ok {
		return b.placeErr(pos, "unknown opcode %q", opcode)
	}
	shMsg, err := in.Msg(3)
	if err != nil {
		return b.placeErr(pos, "%v", err)
	}
	shape, err := protoShape(shMsg, 0)
	if ce := (shapeCheckError{}); errors.As(err, &ce) {
		return p.newErr(pos, ce.error, "%v", ce.error)
	} else if err != nil {
		return b.placeErr(pos, "shape: %v", err)
	}
	if prev, dup := cs.defs[name]; dup {
		return b.placeErr(pos, "duplicate instruction name %q in computation %q (first defined at %s)", name, cs.comp.Name, p.posString(prev))
	}
	cs.defs[name] = pos
	if _, ok := p.instrDefs[name]; !ok {
		p.instrDefs[name] = pos
	}
	x := &Instruction{Name: name, Opcode: op, Shape: shape}
	pi := pendingInstr{in: x, pos: pos, shapePos: pos}
	switch op {
	case OpParameter:
		n := in.Int(9)
		if n < 0 || n > math.MaxInt32 {
			return b.placeErr(pos, "expected parameter number, found %d", n)
		}
		x.ParamNum = int(n)
	case OpConstant:
		lit, err := in.Msg(8)
		if err != nil {
			return b.placeErr(pos, "%v", err)
		}
		x.Literal = protoLiteral(lit, shMsg)
		if err := literalCount(x.Shape, x.Literal); err != nil {
			return b.placeErr(pos, "constant literal: %v", err)
		}
	default:
		opIDs, err := in.Ints(36)
		if err != nil {
			return b.placeErr(pos, "%v", err)
		}
		for i, id := range opIDs {
			n, ok := ids[id]
			if !ok {
				return b.placeErr(pos, "operand %d refers to instruction id %d, which is not in the computation", i, id)
			}
			pi.ops = append(pi.ops, opRef{name: protoName(n), pos: pos})
		}
	}
	if err := b.attributes(cs, &pi, in, compName, compRoot); err != nil {
		var pe *ParseError
		if errors.As(err, &pe) {
			return err
		}
		return p.newErr(pos, err, "%v", err)
	}
	if op == OpDot && x.Dot == nil {
		x.Dot = &DotDims{}
	}
	if root {
		if cs.root >= 0 {
			return b.placeErr(pos, "expected one ROOT in computation %q, found a second (%q after %q)", cs.comp.Name, name, cs.instrs[cs.root].in.Name)
		}
		cs.root = len(cs.instrs)
	}
	cs.instrs = append(cs.instrs, pi)
	return nil
}

// attributes sets pi's attributes from the proto, in XLA's printed order: typed fields
// where the parser has one, Extra attributes (normalized as the parser keeps them)
// otherwise.
func (b *protoBuilder) attributes(cs *compState, pi *pendingInstr, in pbwire.Message, compName map[int64]string, compRoot map[int64]Shape) (err error) {
	p := b.p
	x, op := pi.in, pi.in.Opcode
	extra := func(k, v string) { x.Extra = append(x.Extra, Attr{Key: k, Value: normalize([]byte(v))}) }
	ints := func(n protowire.Number) []int64 {
		v, e := in.Ints(n)
		if e != nil && err == nil {
			err = e
		}
		return v
	}
	sub := func(n protowire.Number) pbwire.Message {
		v, e := in.Msg(n)
		if e != nil && err == nil {
			err = e
		}
		return v
	}
	ref := func(slot int, id int64) error {
		n, ok := compName[id]
		if !ok {
			return fmt.Errorf("calls computation id %d, which is not in the module", id)
		}
		p.refs = append(p.refs, compRef{in: x, comp: len(p.comps) - 1, slot: slot, name: protoName(n), pos: pi.pos})
		return nil
	}
	if op == OpGetTupleElement {
		x.Index = int(in.Int(13))
	}
	if d := ints(14); len(d) > 0 || dimsAlwaysWritten(op) {
		x.Dimensions, x.HasDimensions = intsOf(d), true
	}
	if in.Has(17) {
		sds, e := in.Msgs(17)
		if e != nil {
			return e
		}
		x.Slice = []SliceDim{}
		for _, sd := range sds {
			x.Slice = append(x.Slice, SliceDim{Start: int(sd.Int(1)), Limit: int(sd.Int(2)), Stride: int(max(sd.Int(3), 1))})
		}
	}
	if in.Has(21) {
		pds, e := sub(21).Msgs(1)
		if e != nil {
			return e
		}
		if len(pds) == 0 {
			return fmt.Errorf("expected padding, found none")
		}
		x.Padding = make([]PadDim, len(pds))
		for i, pd := range pds {
			x.Padding[i] = PadDim{Lo: int(pd.Int(1)), Hi: int(pd.Int(2)), Interior: int(pd.Int(3))}
		}
	}
	if in.Has(15) {
		w := sub(15)
		if err != nil {
			return err
		}
		if x.Window, err = protoWindow(w); err != nil {
			return err
		}
	}
	if in.Has(16) {
		cd := sub(16)
		if err != nil {
			return err
		}
		if x.Conv, err = protoConvDims(cd); err != nil {
			return err
		}
	}
	if v := in.Int(50); v > 1 {
		x.FeatureGroupCount = int(v)
	}
	if v := in.Int(58); v > 1 {
		x.BatchGroupCount = int(v)
	}
	if in.Has(30) {
		dd := sub(30)
		x.Dot = &DotDims{}
		for _, f := range []struct {
			dst    *[]int
			n      protowire.Number
			always bool
		}{{&x.Dot.LhsBatch, 3, false}, {&x.Dot.LhsContracting, 1, true}, {&x.Dot.RhsBatch, 4, false}, {&x.Dot.RhsContracting, 2, true}} {
			v, e := dd.Ints(f.n)
			if e != nil {
				return e
			}
			if len(v) > 0 || f.always {
				*f.dst = intsOf(v)
			}
		}
	}
	if v := in.Str(63); v != "" {
		if x.Direction, err = protoWord("comparison direction", v); err != nil {
			return err
		}
	}
	if v := in.Str(72); v != "" {
		w, e := protoWord("comparison type", v)
		if e != nil {
			return e
		}
		extra("type", w)
	}
	if v := in.Str(11); v != "" && op == OpFusion {
		if x.FusionKind, err = protoWord("fusion kind", v); err != nil {
			return err
		}
	}
	called, e := in.Ints(38)
	if e != nil {
		return e
	}
	names := func() (string, error) {
		ns := make([]string, len(called))
		for i, id := range called {
			n, ok := compName[id]
			if !ok {
				return "", fmt.Errorf("calls computation id %d, which is not in the module", id)
			}
			ns[i] = "%" + protoName(n)
		}
		return strings.Join(ns, ", "), nil
	}
	switch {
	case len(called) == 0:
	case op == OpWhile && len(called) == 2:
		// The condition is the computation that returns pred[].
		c0, c1 := called[0], called[1]
		if r := compRoot[c0]; !(r.Elem == PRED && len(r.Dims) == 0) {
			c0, c1 = c1, c0
		}
		if err := errors.Join(ref(slotCondition, c0), ref(slotBody, c1)); err != nil {
			return err
		}
	case op == OpFusion || op == OpAsyncStart:
		if err := ref(slotCalls, called[0]); err != nil {
			return err
		}
	case op == OpConditional || op == OpCustomCall || op == OpSelectAndScatter || len(called) > 1:
		ns, err := names()
		if err != nil {
			return err
		}
		switch op {
		case OpConditional:
			extra("branch_computations", "{"+ns+"}")
		case OpSelectAndScatter:
			if len(called) == 2 {
				sel, sc, _ := strings.Cut(ns, ", ")
				extra("select", sel)
				extra("scatter", sc)
			}
		default:
			extra("called_computations", "{"+ns+"}")
		}
	default:
		slot := slotToApply
		if op == OpCall {
			slot = slotCalls
		}
		if err := ref(slot, called[0]); err != nil {
			return err
		}
	}
	// A gather's (field 33) or scatter's (48) dimension numbers: repeated fields 1-3 and
	// 5-6 named by names (1-3 always written, the batching dims only when present), field 4
	// the index vector dimension.
	dimNumbers := func(field protowire.Number, names [5]string) error {
		if !in.Has(field) {
			return nil
		}
		g := sub(field)
		for k, n := range []protowire.Number{1, 2, 3, 5, 6} {
			v, e := g.Ints(n)
			if e != nil {
				return e
			}
			if len(v) > 0 || n <= 3 {
				extra(names[k], protoSet(v))
			}
		}
		extra("index_vector_dim", strconv.FormatInt(g.Int(4), 10))
		return nil
	}
	if e := dimNumbers(33, [5]string{"offset_dims", "collapsed_slice_dims", "start_index_map", "operand_batching_dims", "start_indices_batching_dims"}); e != nil {
		return e
	}
	if v := ints(34); len(v) > 0 {
		extra("slice_sizes", protoSet(v))
	}
	if e := dimNumbers(48, [5]string{"update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims", "input_batching_dims", "scatter_indices_batching_dims"}); e != nil {
		return e
	}
	if v := ints(20); len(v) > 0 {
		extra("dynamic_slice_sizes", protoSet(v))
	}
	if op == OpReducePrecision {
		extra("exponent_bits", strconv.FormatInt(in.Int(18), 10))
		extra("mantissa_bits", strconv.FormatInt(in.Int(19), 10))
	}
	if op == OpBatchNormTraining || op == OpBatchNormInference || op == OpBatchNormGrad {
		extra("epsilon", strconv.FormatFloat(float64(math.Float32frombits(uint32(in.Int(24)))), 'g', -1, 32))
		extra("feature_index", strconv.FormatInt(in.Int(25), 10))
	}
	if v := in.Int(26); v > 0 {
		extra("channel_id", strconv.FormatInt(v, 10))
	}
	if in.Has(49) {
		rgs, e := in.Msgs(49)
		if e != nil {
			return e
		}
		parts := make([]string, len(rgs))
		for i, rg := range rgs {
			v, e := rg.Ints(1)
			if e != nil {
				return e
			}
			parts[i] = protoSet(v)
		}
		extra("replica_groups", "{"+strings.Join(parts, ",")+"}")
	}
	if in.Int(71) != 0 {
		extra("use_global_device_ids", "true")
	}
	if in.Has(52) {
		sts, e := in.Msgs(52)
		if e != nil {
			return e
		}
		parts := make([]string, len(sts))
		for i, st := range sts {
			parts[i] = fmt.Sprintf("{%d,%d}", st.Int(1), st.Int(2))
		}
		extra("source_target_pairs", "{"+strings.Join(parts, ",")+"}")
	}
	if v := in.Str(28); v != "" {
		extra("custom_call_target", strconv.Quote(v))
	}
	if op == OpFft {
		types := []string{"FFT", "IFFT", "RFFT", "IRFFT"}
		if t := in.Int(31); t >= 0 && int(t) < len(types) {
			extra("fft_type", types[t])
		}
		extra("fft_length", protoSet(ints(32)))
	}
	if op == OpTopK {
		extra("k", strconv.FormatInt(in.Int(81), 10))
		extra("largest", strconv.FormatBool(in.Int(85) != 0))
	}
	if op == OpCholesky {
		extra("lower", strconv.FormatBool(sub(62).Int(1) != 0))
	}
	if op == OpTriangularSolve {
		o := sub(59)
		extra("left_side", strconv.FormatBool(o.Int(1) != 0))
		extra("lower", strconv.FormatBool(o.Int(2) != 0))
		extra("unit_diagonal", strconv.FormatBool(o.Int(3) != 0))
		tr := []string{"TRANSPOSE_INVALID", "NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"}
		if t := o.Int(4); t >= 0 && int(t) < len(tr) {
			extra("transpose_a", tr[t])
		}
	}
	if in.Int(60) != 0 {
		extra("is_stable", "true")
	}
	if bc, ok := in.Bytes(43); ok && len(bc) > 0 {
		extra("backend_config", protoBackendConfig(bc))
	}
	if md := sub(7); len(md) > 0 {
		var parts []string
		if v := md.Str(1); v != "" {
			parts = append(parts, "op_type="+strconv.Quote(v))
		}
		if v := md.Str(2); v != "" {
			parts = append(parts, "op_name="+strconv.Quote(v))
		}
		if v := md.Str(3); v != "" {
			parts = append(parts, "source_file="+strconv.Quote(v))
		}
		if v := md.Int(4); v != 0 {
			parts = append(parts, "source_line="+strconv.FormatInt(v, 10))
		}
		if len(parts) > 0 {
			x.Metadata = normalize([]byte(strings.Join(parts, " ")))
		}
	}
	return err
}

// protoName returns an HLO name for s: names XLA writes are already HLO names; other
// characters are replaced by '_'.
func protoName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !isNameChar(c) {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "_"
	}
	return string(b)
}

func joinInts(xs []int64, sep string) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.FormatInt(x, 10)
	}
	return strings.Join(s, sep)
}

func protoSet(xs []int64) string { return "{" + joinInts(xs, ",") + "}" }

// dimsAlwaysWritten marks ops whose dimensions attribute is meaningful when empty.
func dimsAlwaysWritten(op Opcode) bool {
	switch op {
	case OpBroadcast, OpReduce, OpTranspose, OpReverse:
		return true
	}
	return false
}

// protoBackendConfig writes a backend config as XLA's text does: JSON objects verbatim,
// anything else as a quoted string.
func protoBackendConfig(b []byte) string {
	s := string(b)
	if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") && !strings.ContainsAny(s, "\n\r") {
		p := &parser{src: b}
		if _, err := p.skipGroup(); err == nil && p.off == len(b) {
			return s
		}
	}
	return strconv.Quote(s)
}

// protoWindow builds a window: sizes, strides and dilations of at least 1 (XLA leaves
// them 0 when they are 1), pads as given.
func protoWindow(w pbwire.Message) (*Window, error) {
	dims, err := w.Msgs(1)
	if err != nil {
		return nil, err
	}
	if len(dims) == 0 {
		return &Window{}, nil
	}
	out := &Window{Dims: make([]WindowDim, len(dims))}
	for i, d := range dims {
		out.Dims[i] = WindowDim{Size: int(max(d.Int(1), 1)), Stride: int(max(d.Int(2), 1)), PadLo: int(d.Int(3)), PadHi: int(d.Int(4)),
			LhsDilate: int(max(d.Int(6), 1)), RhsDilate: int(max(d.Int(5), 1)), Reversal: d.Int(7) != 0}
	}
	return out, nil
}

// protoConvDims builds convolution dimension numbers, checked as the parser checks
// dim_labels: each of input, kernel and output has its two labelled dimensions and its
// spatial dimensions (at most 10, the same number in all three) at distinct positions
// 0..rank-1.
func protoConvDims(cd pbwire.Message) (*ConvDims, error) {
	part := func(what string, a, b protowire.Number, sp protowire.Number) (int, int, []int, error) {
		spatial, err := cd.Ints(sp)
		if err != nil {
			return 0, 0, nil, err
		}
		n := len(spatial)
		if n > 10 {
			return 0, 0, nil, fmt.Errorf("bad dim_labels: %s has %d spatial dimensions, at most 10", what, n)
		}
		seen := make([]bool, n+2)
		pos := append([]int64{cd.Int(a), cd.Int(b)}, spatial...)
		for _, p := range pos {
			if p < 0 || p >= int64(n+2) || seen[p] {
				return 0, 0, nil, fmt.Errorf("bad dim_labels: %s dimension numbers %v are not a permutation of 0..%d", what, pos, n+1)
			}
			seen[p] = true
		}
		return int(pos[0]), int(pos[1]), intsOf(spatial), nil
	}
	var c ConvDims
	var err error
	if c.InputBatch, c.InputFeature, c.InputSpatial, err = part("input", 7, 8, 11); err != nil {
		return nil, err
	}
	if c.KernelInput, c.KernelOutput, c.KernelSpatial, err = part("kernel", 3, 4, 6); err != nil {
		return nil, err
	}
	if c.OutputBatch, c.OutputFeature, c.OutputSpatial, err = part("output", 9, 10, 12); err != nil {
		return nil, err
	}
	if len(c.InputSpatial) != len(c.KernelSpatial) || len(c.InputSpatial) != len(c.OutputSpatial) {
		return nil, fmt.Errorf("bad dim_labels: input, kernel and output have different numbers of spatial dimensions")
	}
	return &c, nil
}

// protoLiteral renders a constant: scalars by value, arrays as "{...}".
func protoLiteral(lit, shape pbwire.Message) string {
	if dims, _ := shape.Ints(3); len(dims) > 0 || shape.Int(2) == 13 {
		return "{...}"
	}
	first := func(n protowire.Number) (uint64, bool) {
		fs := lit[n]
		if len(fs) == 0 {
			return 0, false
		}
		f := fs[0]
		if f.Type != protowire.BytesType {
			return f.V, true
		}
		switch n {
		case 8: // packed fixed32
			if len(f.B) >= 4 {
				v, _ := protowire.ConsumeFixed32(f.B)
				return uint64(v), true
			}
		case 9: // packed fixed64
			if len(f.B) >= 8 {
				v, _ := protowire.ConsumeFixed64(f.B)
				return v, true
			}
		default:
			if v, k := protowire.ConsumeVarint(f.B); k > 0 {
				return v, true
			}
		}
		return 0, false
	}
	switch protoElem[shape.Int(2)] {
	case PRED:
		if v, ok := first(2); ok {
			return strconv.FormatBool(v != 0)
		}
	case S32, S64:
		if v, ok := first(4); ok {
			return strconv.FormatInt(int64(int32(v)), 10)
		}
		if v, ok := first(5); ok {
			return strconv.FormatInt(int64(v), 10)
		}
	case U32, U64:
		for _, n := range []protowire.Number{6, 7} {
			if v, ok := first(n); ok {
				return strconv.FormatUint(v, 10)
			}
		}
	case F32:
		if v, ok := first(8); ok {
			return protoFloat(float64(math.Float32frombits(uint32(v))), 32)
		}
	case F64:
		if v, ok := first(9); ok {
			return protoFloat(math.Float64frombits(v), 64)
		}
	}
	return "{...}" // other scalar types: elided, as XLA elides large constants
}

func protoFloat(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', -1, bits)
}
