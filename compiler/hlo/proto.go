package hlo

// This file reads XLA's binary HLO: a serialized xla.HloModuleProto (or an xla.HloProto
// that wraps one), as --xla_dump_hlo_as_proto writes to *.hlo.pb. It decodes the wire
// format with protowire and renders the module as HLO text for Parse, so that a binary
// module goes through exactly the checks of a text one.
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
// Rendering to HLO text.

// protoElem maps XLA's PrimitiveType numbers to element types.
var protoElem = map[int64]ElemType{
	1: PRED, 2: S8, 3: S16, 4: S32, 5: S64, 6: U8, 7: U16, 8: U32, 9: U64, 10: F16, 11: F32,
	12: F64, 13: TupleType, 14: Opaque, 15: C64, 16: BF16, 17: Token, 18: C128, 19: F8E5M2,
	20: F8E4M3FN, 21: S4, 22: U4, 23: F8E4M3B11FNUZ, 24: F8E5M2FNUZ, 25: F8E4M3FNUZ, 26: S2,
	27: U2, 28: F8E4M3, 29: F8E3M4, 30: S1, 31: U1, 32: F4E2M1FN, 33: F8E8M0FNU,
}

// textWriterState renders one module, remembering which computation and instruction
// each line of text came from, for error messages.
type protoText struct {
	b     strings.Builder
	lines []string // lines[i] describes text line i+1
}

func (t *protoText) line(what, s string) {
	t.b.WriteString(s)
	t.b.WriteByte('\n')
	t.lines = append(t.lines, what)
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
	compRoot := map[int64]string{} // computation id -> root shape text, for while bodies
	for _, c := range comps {
		compName[c.Int(5)] = c.Str(1)
	}
	entryID := mod.Int(6)
	entryName := mod.Str(2)
	if entryName == "" {
		entryName = compName[entryID]
	}
	var t protoText
	t.line("the module header", "HloModule "+protoName(name))
	for _, c := range comps {
		cname := c.Str(1)
		instrs, err := c.Msgs(2)
		if err != nil {
			return nil, fail("computation %q: %v", cname, err)
		}
		ids := map[int64]string{}
		for _, in := range instrs {
			ids[in.Int(35)] = in.Str(1)
		}
		rootID := c.Int(6)
		for _, in := range instrs {
			if in.Int(35) == rootID {
				sh, _ := in.Msg(3)
				s, _ := protoShape(sh, 0)
				compRoot[c.Int(5)] = s
			}
		}
		head := "%" + protoName(cname) + " {"
		if cname == entryName {
			head = "ENTRY " + head
		}
		t.line(fmt.Sprintf("computation %q", cname), "")
		t.line(fmt.Sprintf("computation %q", cname), head)
		for _, in := range instrs {
			what := fmt.Sprintf("computation %q, instruction %q", cname, in.Str(1))
			s, err := protoInstruction(in, ids, compName, compRoot, in.Int(35) == rootID)
			if err != nil {
				return nil, fail("%s: %v", what, err)
			}
			t.line(what, "  "+s)
		}
		closing := "}"
		if th := c.Str(8); th != "" && th != "main" {
			closing += ", execution_thread=" + strconv.Quote(th)
		}
		t.line(fmt.Sprintf("computation %q", cname), closing)
	}
	m, err := Parse(filename, []byte(t.b.String()))
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) && pe.Line >= 1 && pe.Line <= len(t.lines) {
			msg := fmt.Sprintf("%s: %s: %s", filename, t.lines[pe.Line-1], pe.Msg)
			if cause := errors.Unwrap(err); cause != nil {
				return nil, fmt.Errorf("%s: %w", msg, cause)
			}
			return nil, errors.New(msg)
		}
		return nil, fmt.Errorf("%s: decoded module: %w", filename, err)
	}
	return m, nil
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

func protoShape(m pbwire.Message, depth int) (string, error) {
	if depth > maxNesting {
		return "", fmt.Errorf("shape nested more than %d deep", maxNesting)
	}
	et, ok := protoElem[m.Int(2)]
	if !ok {
		return "", fmt.Errorf("unknown element type %d", m.Int(2))
	}
	if et == TupleType {
		elems, err := m.Msgs(4)
		if err != nil {
			return "", err
		}
		parts := make([]string, len(elems))
		for i, e := range elems {
			if parts[i], err = protoShape(e, depth+1); err != nil {
				return "", err
			}
		}
		return "(" + strings.Join(parts, ", ") + ")", nil
	}
	if et == Token || et == Opaque {
		return et.String() + "[]", nil
	}
	dims, err := m.Ints(3)
	if err != nil {
		return "", err
	}
	dyn, err := m.Ints(6)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(et.String())
	b.WriteByte('[')
	for i, d := range dims {
		if i > 0 {
			b.WriteByte(',')
		}
		if i < len(dyn) && dyn[i] != 0 {
			b.WriteString("<=")
		}
		if d < 0 {
			return "", fmt.Errorf("negative dimension %d", d)
		}
		b.WriteString(strconv.FormatInt(d, 10))
	}
	b.WriteByte(']')
	if m.Has(5) {
		l, err := m.Msg(5)
		if err != nil {
			return "", err
		}
		mtm, err := l.Ints(1)
		if err != nil {
			return "", err
		}
		if len(mtm) == len(dims) {
			b.WriteString("{" + joinInts(mtm, ","))
			tiles, err := l.Msgs(6)
			if err != nil {
				return "", err
			}
			if len(tiles) > 0 {
				b.WriteString(":")
				for _, tl := range tiles {
					td, err := tl.Ints(1)
					if err != nil {
						return "", err
					}
					b.WriteString("T(" + joinInts(td, ",") + ")")
				}
			}
			b.WriteString("}")
		}
	}
	return b.String(), nil
}

func joinInts(xs []int64, sep string) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.FormatInt(x, 10)
	}
	return strings.Join(s, sep)
}

func protoSet(xs []int64) string { return "{" + joinInts(xs, ",") + "}" }

// protoInstruction renders one instruction as a line of HLO text.
func protoInstruction(in pbwire.Message, ids map[int64]string, compName map[int64]string, compRoot map[int64]string, root bool) (string, error) {
	name, opcode := in.Str(1), in.Str(2)
	op, ok := opcodeByName[opcode]
	if !ok {
		return "", fmt.Errorf("unknown opcode %q", opcode)
	}
	shMsg, err := in.Msg(3)
	if err != nil {
		return "", err
	}
	shape, err := protoShape(shMsg, 0)
	if err != nil {
		return "", fmt.Errorf("shape: %w", err)
	}
	var b strings.Builder
	if root {
		b.WriteString("ROOT ")
	}
	b.WriteString("%" + protoName(name) + " = " + shape + " " + opcode + "(")
	switch op {
	case OpParameter:
		b.WriteString(strconv.FormatInt(in.Int(9), 10))
	case OpConstant:
		lit, err := in.Msg(8)
		if err != nil {
			return "", err
		}
		b.WriteString(protoLiteral(lit, shMsg))
	default:
		opIDs, err := in.Ints(36)
		if err != nil {
			return "", err
		}
		for i, id := range opIDs {
			n, ok := ids[id]
			if !ok {
				return "", fmt.Errorf("operand %d refers to instruction id %d, which is not in the computation", i, id)
			}
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("%" + protoName(n))
		}
	}
	b.WriteString(")")
	attr := func(k, v string) { b.WriteString(", " + k + "=" + v) }
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
	if op == OpGetTupleElement {
		attr("index", strconv.FormatInt(in.Int(13), 10))
	}
	if d := ints(14); len(d) > 0 || dimsAlwaysWritten(op) {
		if op == OpIota && len(d) == 1 {
			attr("iota_dimension", strconv.FormatInt(d[0], 10))
		} else {
			attr("dimensions", protoSet(d))
		}
	}
	if in.Has(17) {
		sds, e := in.Msgs(17)
		if e != nil {
			return "", e
		}
		parts := make([]string, len(sds))
		for i, sd := range sds {
			parts[i] = fmt.Sprintf("[%d:%d:%d]", sd.Int(1), sd.Int(2), max(sd.Int(3), 1))
		}
		attr("slice", "{"+strings.Join(parts, ", ")+"}")
	}
	if in.Has(21) {
		pc := sub(21)
		pds, e := pc.Msgs(1)
		if e != nil {
			return "", e
		}
		parts := make([]string, len(pds))
		for i, pd := range pds {
			parts[i] = fmt.Sprintf("%d_%d_%d", pd.Int(1), pd.Int(2), pd.Int(3))
		}
		attr("padding", strings.Join(parts, "x"))
	}
	if in.Has(15) {
		w, e := protoWindow(sub(15))
		if e != nil {
			return "", e
		}
		attr("window", w)
	}
	if in.Has(16) {
		attr("dim_labels", protoDimLabels(sub(16), &err))
	}
	if v := in.Int(50); v > 1 {
		attr("feature_group_count", strconv.FormatInt(v, 10))
	}
	if v := in.Int(58); v > 1 {
		attr("batch_group_count", strconv.FormatInt(v, 10))
	}
	if in.Has(30) {
		dd := sub(30)
		for _, f := range []struct {
			key string
			n   protowire.Number
		}{{"lhs_batch_dims", 3}, {"lhs_contracting_dims", 1}, {"rhs_batch_dims", 4}, {"rhs_contracting_dims", 2}} {
			v, e := dd.Ints(f.n)
			if e != nil {
				return "", e
			}
			if len(v) > 0 || strings.HasSuffix(f.key, "contracting_dims") {
				attr(f.key, protoSet(v))
			}
		}
	}
	if v := in.Str(63); v != "" {
		attr("direction", v)
	}
	if v := in.Str(72); v != "" {
		attr("type", v)
	}
	if v := in.Str(11); v != "" && op == OpFusion {
		attr("kind", v)
	}
	called, e := in.Ints(38)
	if e != nil {
		return "", e
	}
	cname := func(id int64) (string, error) {
		n, ok := compName[id]
		if !ok {
			return "", fmt.Errorf("calls computation id %d, which is not in the module", id)
		}
		return "%" + protoName(n), nil
	}
	switch {
	case len(called) == 0:
	case op == OpWhile && len(called) == 2:
		// The condition is the computation that returns pred[].
		c0, c1 := called[0], called[1]
		if !strings.HasPrefix(compRoot[c0], "pred[]") {
			c0, c1 = c1, c0
		}
		cond, e1 := cname(c0)
		body, e2 := cname(c1)
		if e := errors.Join(e1, e2); e != nil {
			return "", e
		}
		attr("condition", cond)
		attr("body", body)
	case op == OpFusion || op == OpAsyncStart:
		n, e := cname(called[0])
		if e != nil {
			return "", e
		}
		attr("calls", n)
	case op == OpConditional || op == OpCustomCall || op == OpSelectAndScatter || len(called) > 1:
		names := make([]string, len(called))
		for i, id := range called {
			if names[i], e = cname(id); e != nil {
				return "", e
			}
		}
		switch op {
		case OpConditional:
			attr("branch_computations", "{"+strings.Join(names, ", ")+"}")
		case OpSelectAndScatter:
			if len(names) == 2 {
				attr("select", names[0])
				attr("scatter", names[1])
			}
		default:
			attr("called_computations", "{"+strings.Join(names, ", ")+"}")
		}
	default:
		n, e := cname(called[0])
		if e != nil {
			return "", e
		}
		attr("to_apply", n)
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
				attr(names[k], protoSet(v))
			}
		}
		attr("index_vector_dim", strconv.FormatInt(g.Int(4), 10))
		return nil
	}
	if e := dimNumbers(33, [5]string{"offset_dims", "collapsed_slice_dims", "start_index_map", "operand_batching_dims", "start_indices_batching_dims"}); e != nil {
		return "", e
	}
	if v := ints(34); len(v) > 0 {
		attr("slice_sizes", protoSet(v))
	}
	if e := dimNumbers(48, [5]string{"update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims", "input_batching_dims", "scatter_indices_batching_dims"}); e != nil {
		return "", e
	}
	if v := ints(20); len(v) > 0 {
		attr("dynamic_slice_sizes", protoSet(v))
	}
	if op == OpReducePrecision {
		attr("exponent_bits", strconv.FormatInt(in.Int(18), 10))
		attr("mantissa_bits", strconv.FormatInt(in.Int(19), 10))
	}
	if op == OpBatchNormTraining || op == OpBatchNormInference || op == OpBatchNormGrad {
		attr("epsilon", strconv.FormatFloat(float64(math.Float32frombits(uint32(in.Int(24)))), 'g', -1, 32))
		attr("feature_index", strconv.FormatInt(in.Int(25), 10))
	}
	if v := in.Int(26); v > 0 {
		attr("channel_id", strconv.FormatInt(v, 10))
	}
	if in.Has(49) {
		rgs, e := in.Msgs(49)
		if e != nil {
			return "", e
		}
		parts := make([]string, len(rgs))
		for i, rg := range rgs {
			v, e := rg.Ints(1)
			if e != nil {
				return "", e
			}
			parts[i] = protoSet(v)
		}
		attr("replica_groups", "{"+strings.Join(parts, ",")+"}")
	}
	if in.Int(71) != 0 {
		attr("use_global_device_ids", "true")
	}
	if in.Has(52) {
		sts, e := in.Msgs(52)
		if e != nil {
			return "", e
		}
		parts := make([]string, len(sts))
		for i, st := range sts {
			parts[i] = fmt.Sprintf("{%d,%d}", st.Int(1), st.Int(2))
		}
		attr("source_target_pairs", "{"+strings.Join(parts, ",")+"}")
	}
	if v := in.Str(28); v != "" {
		attr("custom_call_target", strconv.Quote(v))
	}
	if op == OpFft {
		types := []string{"FFT", "IFFT", "RFFT", "IRFFT"}
		if t := in.Int(31); t >= 0 && int(t) < len(types) {
			attr("fft_type", types[t])
		}
		attr("fft_length", protoSet(ints(32)))
	}
	if op == OpTopK {
		attr("k", strconv.FormatInt(in.Int(81), 10))
		attr("largest", strconv.FormatBool(in.Int(85) != 0))
	}
	if op == OpCholesky {
		attr("lower", strconv.FormatBool(sub(62).Int(1) != 0))
	}
	if op == OpTriangularSolve {
		o := sub(59)
		attr("left_side", strconv.FormatBool(o.Int(1) != 0))
		attr("lower", strconv.FormatBool(o.Int(2) != 0))
		attr("unit_diagonal", strconv.FormatBool(o.Int(3) != 0))
		tr := []string{"TRANSPOSE_INVALID", "NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"}
		if t := o.Int(4); t >= 0 && int(t) < len(tr) {
			attr("transpose_a", tr[t])
		}
	}
	if in.Int(60) != 0 {
		attr("is_stable", "true")
	}
	if bc, ok := in.Bytes(43); ok && len(bc) > 0 {
		attr("backend_config", protoBackendConfig(bc))
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
			attr("metadata", "{"+strings.Join(parts, " ")+"}")
		}
	}
	if err != nil {
		return "", err
	}
	return b.String(), nil
}

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

func protoWindow(w pbwire.Message) (string, error) {
	dims, err := w.Msgs(1)
	if err != nil {
		return "", err
	}
	if len(dims) == 0 {
		return "{}", nil
	}
	field := func(f func(d pbwire.Message) string) string {
		parts := make([]string, len(dims))
		for i, d := range dims {
			parts[i] = f(d)
		}
		return strings.Join(parts, "x")
	}
	one := func(n protowire.Number) func(d pbwire.Message) string {
		return func(d pbwire.Message) string { return strconv.FormatInt(max(d.Int(n), 1), 10) }
	}
	s := "{size=" + field(one(1)) + " stride=" + field(one(2)) +
		" pad=" + field(func(d pbwire.Message) string { return fmt.Sprintf("%d_%d", d.Int(3), d.Int(4)) }) +
		" lhs_dilate=" + field(one(6)) + " rhs_dilate=" + field(one(5)) +
		" rhs_reversal=" + field(func(d pbwire.Message) string {
		if d.Int(7) != 0 {
			return "1"
		}
		return "0"
	}) + "}"
	return s, nil
}

// protoDimLabels renders convolution dimension numbers as "b01f_01io->b01f".
func protoDimLabels(cd pbwire.Message, errp *error) string {
	ints := func(n protowire.Number) []int64 {
		v, err := cd.Ints(n)
		if err != nil && *errp == nil {
			*errp = err
		}
		return v
	}
	label := func(a, b byte, pa, pb int64, spatial []int64) string {
		s := make([]byte, len(spatial)+2)
		for i := range s {
			s[i] = '?'
		}
		set := func(p int64, c byte) {
			if p >= 0 && p < int64(len(s)) {
				s[p] = c
			}
		}
		set(pa, a)
		set(pb, b)
		for i, p := range spatial {
			if i < 10 {
				set(p, byte('0'+i))
			}
		}
		return string(s)
	}
	return label('b', 'f', cd.Int(7), cd.Int(8), ints(11)) + "_" +
		label('i', 'o', cd.Int(3), cd.Int(4), ints(6)) + "->" +
		label('b', 'f', cd.Int(9), cd.Int(10), ints(12))
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
