package hlo

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

// textWriter is what the printer writes to: a *strings.Builder or a *bufio.Writer
// (whose errors are sticky and reported by Flush).
type textWriter interface {
	io.StringWriter
	io.ByteWriter
}

// String renders m in XLA's HLO text format (see Print).
func (m *Module) String() string {
	var b strings.Builder
	writeModule(&b, m)
	return b.String()
}

// Print writes m to w in XLA's HLO text format: an "HloModule name, attrs" header, then
// each computation in m.Computations order, separated by blank lines, the entry marked
// ENTRY, each with an XLA-style signature and one instruction per line. Parse reads the
// output back into a module equal to m (ModulesEqual) when m is well formed (Verify) and
// its names are HLO names. It returns the first error of w.
func Print(w io.Writer, m *Module) error {
	bw := bufio.NewWriter(w)
	writeModule(bw, m)
	return bw.Flush()
}

// String renders c as it appears in a module: its signature line, its instructions and
// a closing brace, with no ENTRY prefix and a trailing newline.
func (c *Computation) String() string {
	var b strings.Builder
	writeComputation(&b, c, false)
	return b.String()
}

// Text renders the instruction as one line of HLO text without indentation or ROOT
// prefix: "%name = f32[2]{0} add(%a, %b), attr=..., metadata={...}".
func (in *Instruction) Text() string {
	var b strings.Builder
	writeInstruction(&b, in)
	return b.String()
}

func writeModule(w textWriter, m *Module) {
	w.WriteString("HloModule ")
	w.WriteString(m.Name)
	for _, a := range m.Attrs {
		w.WriteString(", ")
		w.WriteString(a.Key)
		w.WriteByte('=')
		w.WriteString(a.Value)
	}
	w.WriteByte('\n')
	writeStackFrames(w, m.StackFrames)
	for _, c := range m.Computations {
		w.WriteByte('\n')
		writeComputation(w, c, c == m.Entry)
	}
}

func writeComputation(w textWriter, c *Computation, entry bool) {
	if entry {
		w.WriteString("ENTRY ")
	}
	w.WriteByte('%')
	w.WriteString(c.Name)
	w.WriteString(" (")
	for i, p := range c.Parameters() {
		if i > 0 {
			w.WriteString(", ")
		}
		w.WriteString(p.Name)
		w.WriteString(": ")
		w.WriteString(p.Shape.StringNoLayout())
	}
	w.WriteString(") -> ")
	if c.Root != nil {
		w.WriteString(c.Root.Shape.StringNoLayout())
	} else {
		w.WriteString("()")
	}
	w.WriteString(" {\n")
	for _, in := range c.Instructions {
		w.WriteString("  ")
		if in == c.Root {
			w.WriteString("ROOT ")
		}
		writeInstruction(w, in)
		w.WriteByte('\n')
	}
	w.WriteString("}")
	for _, a := range c.Attrs {
		w.WriteString(", " + a.Key + "=" + a.Value)
	}
	w.WriteString("\n")
}

func writeInstruction(w textWriter, in *Instruction) {
	w.WriteByte('%')
	w.WriteString(in.Name)
	w.WriteString(" = ")
	w.WriteString(in.Shape.String())
	w.WriteByte(' ')
	w.WriteString(in.Opcode.String())
	w.WriteByte('(')
	switch in.Opcode {
	case OpParameter:
		w.WriteString(strconv.Itoa(in.ParamNum))
	case OpConstant:
		w.WriteString(in.Literal)
	default:
		for i, op := range in.Operands {
			if i > 0 {
				w.WriteString(", ")
			}
			if op == nil {
				w.WriteString("%<nil>")
				continue
			}
			w.WriteByte('%')
			w.WriteString(op.Name)
		}
	}
	w.WriteByte(')')
	writeAttrs(w, in)
}

// writeAttrs writes the attributes in XLA's usual order: the typed ones, then Extra in
// its order, then metadata.
func writeAttrs(w textWriter, in *Instruction) {
	attr := func(key string) {
		w.WriteString(", ")
		w.WriteString(key)
		w.WriteByte('=')
	}
	if in.Opcode == OpGetTupleElement || in.Index != 0 {
		attr("index")
		w.WriteString(strconv.Itoa(in.Index))
	}
	switch {
	case in.Opcode == OpIota && in.HasDimensions && len(in.Dimensions) == 1:
		attr("iota_dimension")
		w.WriteString(strconv.Itoa(in.Dimensions[0]))
	case in.HasDimensions || len(in.Dimensions) > 0:
		attr("dimensions")
		writeIntSet(w, in.Dimensions)
	}
	if in.Slice != nil {
		attr("slice")
		w.WriteByte('{')
		for i, s := range in.Slice {
			if i > 0 {
				w.WriteString(", ")
			}
			w.WriteByte('[')
			w.WriteString(strconv.Itoa(s.Start))
			w.WriteByte(':')
			w.WriteString(strconv.Itoa(s.Limit))
			if s.Stride != 1 {
				w.WriteByte(':')
				w.WriteString(strconv.Itoa(s.Stride))
			}
			w.WriteByte(']')
		}
		w.WriteByte('}')
	}
	if len(in.Padding) > 0 {
		attr("padding")
		writePadding(w, in.Padding)
	}
	if in.Window != nil {
		attr("window")
		writeWindow(w, in.Window)
	}
	if in.Conv != nil {
		attr("dim_labels")
		writeDimLabels(w, in.Conv)
	}
	if in.FeatureGroupCount != 0 {
		attr("feature_group_count")
		w.WriteString(strconv.Itoa(in.FeatureGroupCount))
	}
	if in.BatchGroupCount != 0 {
		attr("batch_group_count")
		w.WriteString(strconv.Itoa(in.BatchGroupCount))
	}
	if d := in.Dot; d != nil {
		lists := []struct {
			key  string
			dims []int
		}{
			{"lhs_batch_dims", d.LhsBatch}, {"lhs_contracting_dims", d.LhsContracting},
			{"rhs_batch_dims", d.RhsBatch}, {"rhs_contracting_dims", d.RhsContracting},
		}
		printed := false
		for _, l := range lists {
			if len(l.dims) > 0 {
				printed = true
				attr(l.key)
				writeIntSet(w, l.dims)
			}
		}
		if !printed { // keep an all-empty DotDims distinct from an absent one
			w.WriteString(", lhs_contracting_dims={}, rhs_contracting_dims={}")
		}
	}
	if in.Direction != "" {
		attr("direction")
		w.WriteString(in.Direction)
	}
	if in.FusionKind != "" {
		attr("kind")
		w.WriteString(in.FusionKind)
	}
	for _, c := range []struct {
		key  string
		comp *Computation
	}{{"calls", in.Calls}, {"to_apply", in.ToApply}, {"condition", in.Condition}, {"body", in.Body}} {
		if c.comp != nil {
			attr(c.key)
			w.WriteByte('%')
			w.WriteString(c.comp.Name)
		}
	}
	for _, a := range in.Extra {
		attr(a.Key)
		w.WriteString(a.Value)
	}
	if in.Sharding != nil {
		attr("sharding")
		w.WriteString(in.Sharding.String())
	}
	if in.Metadata != "" {
		attr("metadata")
		w.WriteByte('{')
		w.WriteString(in.Metadata)
		w.WriteByte('}')
	}
}

func writeIntSet(w textWriter, xs []int) {
	w.WriteByte('{')
	for i, x := range xs {
		if i > 0 {
			w.WriteByte(',')
		}
		w.WriteString(strconv.Itoa(x))
	}
	w.WriteByte('}')
}

// writePadding writes "lo_hi" per dimension, or "lo_hi_interior" when any dimension
// has interior padding, separated by 'x'.
func writePadding(w textWriter, pads []PadDim) {
	interior := false
	for _, p := range pads {
		interior = interior || p.Interior != 0
	}
	for i, p := range pads {
		if i > 0 {
			w.WriteByte('x')
		}
		w.WriteString(strconv.Itoa(p.Lo))
		w.WriteByte('_')
		w.WriteString(strconv.Itoa(p.Hi))
		if interior {
			w.WriteByte('_')
			w.WriteString(strconv.Itoa(p.Interior))
		}
	}
}

// writeWindow writes "{size=... stride=... ...}" with only the fields that differ from
// their defaults (stride and dilations 1, pads 0, no reversal); size always.
func writeWindow(w textWriter, win *Window) {
	w.WriteByte('{')
	dims := win.Dims
	field := func(key string, isDefault func(WindowDim) bool, write func(WindowDim)) {
		if key != "size" {
			all := true
			for _, d := range dims {
				all = all && isDefault(d)
			}
			if all {
				return
			}
			w.WriteByte(' ')
		}
		w.WriteString(key)
		w.WriteByte('=')
		for i, d := range dims {
			if i > 0 {
				w.WriteByte('x')
			}
			write(d)
		}
	}
	if len(dims) > 0 {
		itoa := func(v int) { w.WriteString(strconv.Itoa(v)) }
		field("size", nil, func(d WindowDim) { itoa(d.Size) })
		field("stride", func(d WindowDim) bool { return d.Stride == 1 }, func(d WindowDim) { itoa(d.Stride) })
		field("pad", func(d WindowDim) bool { return d.PadLo == 0 && d.PadHi == 0 }, func(d WindowDim) {
			itoa(d.PadLo)
			w.WriteByte('_')
			itoa(d.PadHi)
		})
		field("lhs_dilate", func(d WindowDim) bool { return d.LhsDilate == 1 }, func(d WindowDim) { itoa(d.LhsDilate) })
		field("rhs_dilate", func(d WindowDim) bool { return d.RhsDilate == 1 }, func(d WindowDim) { itoa(d.RhsDilate) })
		field("rhs_reversal", func(d WindowDim) bool { return !d.Reversal }, func(d WindowDim) {
			if d.Reversal {
				w.WriteByte('1')
			} else {
				w.WriteByte('0')
			}
		})
	}
	w.WriteByte('}')
}

// writeDimLabels writes a convolution's "b01f_01io->b01f". Positions that the
// dimension numbers leave unlabeled (a malformed ConvDims) print as '?'.
func writeDimLabels(w textWriter, cd *ConvDims) {
	label := func(a, b byte, pa, pb int, spatial []int) {
		s := make([]byte, len(spatial)+2)
		for i := range s {
			s[i] = '?'
		}
		set := func(pos int, c byte) {
			if pos >= 0 && pos < len(s) {
				s[pos] = c
			}
		}
		set(pa, a)
		set(pb, b)
		for i, pos := range spatial {
			if i < 10 {
				set(pos, byte('0'+i))
			}
		}
		w.WriteString(string(s))
	}
	label('b', 'f', cd.InputBatch, cd.InputFeature, cd.InputSpatial)
	w.WriteByte('_')
	label('i', 'o', cd.KernelInput, cd.KernelOutput, cd.KernelSpatial)
	w.WriteString("->")
	label('b', 'f', cd.OutputBatch, cd.OutputFeature, cd.OutputSpatial)
}

// writeStackFrames writes the stack-frame tables in XLA's text form (nothing for nil).
func writeStackFrames(w textWriter, sf *StackFrameIndex) {
	if sf == nil {
		return
	}
	itoa := strconv.Itoa
	table := func(name string, n int, entry func(i int) string) {
		if n == 0 {
			return
		}
		w.WriteString("\n" + name + "\n")
		for i := 0; i < n; i++ {
			w.WriteString(itoa(i+1) + " " + entry(i) + "\n")
		}
	}
	table("FileNames", len(sf.FileNames), func(i int) string { return strconv.Quote(sf.FileNames[i]) })
	table("FunctionNames", len(sf.FunctionNames), func(i int) string { return strconv.Quote(sf.FunctionNames[i]) })
	table("FileLocations", len(sf.FileLocations), func(i int) string {
		l := sf.FileLocations[i]
		return "{file_name_id=" + itoa(l.FileNameID) + " function_name_id=" + itoa(l.FunctionNameID) +
			" line=" + itoa(l.Line) + " end_line=" + itoa(l.EndLine) + " column=" + itoa(l.Column) +
			" end_column=" + itoa(l.EndColumn) + "}"
	})
	table("StackFrames", len(sf.StackFrames), func(i int) string {
		f := sf.StackFrames[i]
		return "{file_location_id=" + itoa(f.FileLocationID) + " parent_frame_id=" + itoa(f.ParentFrameID) + "}"
	})
}
