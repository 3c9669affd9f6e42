package hlo

import (
	"errors"
	"strings"
	"testing"
)

// parseErr parses src and returns its *ParseError (failing the test when there is none).
func parseErr(t *testing.T, src string) *ParseError {
	t.Helper()
	m, err := Parse("in.hlo", []byte(src))
	if err == nil {
		t.Fatalf("Parse succeeded, want an error\n%s", m)
	}
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v is %T, want *ParseError", err, err)
	}
	return pe
}

func mustParse(t *testing.T, src string) *Module {
	t.Helper()
	m, err := Parse("in.hlo", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, src)
	}
	if err := Verify(m); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return m
}

// Shapes whose element count or byte size overflows, or exceeds the documented limit,
// are rejected where they are written; shapes an op derives from huge operands too.
func TestOversizedShapesRejected(t *testing.T) {
	cases := []struct{ name, src, pos, msg string }{
		{"overflow", "HloModule m\nENTRY e {\n  p = f32[99999999999,99999999999] parameter(0)\n  ROOT n = f32[99999999999,99999999999] negate(p)\n}\n",
			"3:7", "f32[99999999999,99999999999] is too large: an array may hold at most 2^40 bytes"},
		{"just-over-limit", "HloModule m\nENTRY e {\n  ROOT p = u8[1099511627777] parameter(0)\n}\n", "3:12", "2^40 bytes"},
		{"tuple-element", "HloModule m\nENTRY e {\n  ROOT p = (f32[], f64[4611686018427387904]) parameter(0)\n}\n", "3:20", "too large"},
		{"dynamic-bound", "HloModule m\nENTRY e {\n  ROOT p = f32[<=99999999999999,2] parameter(0)\n}\n", "3:12", "too large"},
		{"derived-concat", "HloModule m\nENTRY e {\n  a = u8[1099511627776] parameter(0)\n  ROOT c = u8[2] concatenate(a, a), dimensions={0}\n}\n",
			"4:8", "concatenate result: u8[2199023255552] is too large"},
		{"derived-pad", "HloModule m\nENTRY e {\n  a = f32[1000] parameter(0)\n  z = f32[] constant(0)\n  ROOT c = f32[2] pad(a, z), padding=0_0_9223372036854775807\n}\n",
			"5:8", "exceeds the size limit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pe := parseErr(t, tc.src)
			if got := pe.Error(); !strings.HasPrefix(got, "in.hlo:"+tc.pos+": ") || !strings.Contains(got, tc.msg) {
				t.Errorf("error = %q, want at %s containing %q", got, tc.pos, tc.msg)
			}
		})
	}
	// The limit itself is accepted.
	mustParse(t, "HloModule m\nENTRY e {\n  ROOT p = u8[1099511627776] parameter(0)\n}\n")
}

func TestShapeSizesSaturate(t *testing.T) {
	s := Array(F32, 1<<40, 1<<40)
	if s.Elements() <= 0 || s.Bytes() <= 0 {
		t.Errorf("Elements=%d Bytes=%d, want saturated positive values", s.Elements(), s.Bytes())
	}
	if s.CheckSize() == nil {
		t.Errorf("CheckSize accepted %s", s)
	}
	if err := Array(F32, -2).CheckSize(); err == nil {
		t.Errorf("CheckSize accepted a negative dimension")
	}
}

// Every XLA element type parses, prints back and has its storage width; sub-byte types
// are packed.
func TestElementTypes(t *testing.T) {
	widths := map[string]int{
		"pred": 8, "s1": 1, "s2": 2, "s4": 4, "s8": 8, "s16": 16, "s32": 32, "s64": 64,
		"u1": 1, "u2": 2, "u4": 4, "u8": 8, "u16": 16, "u32": 32, "u64": 64,
		"f16": 16, "bf16": 16, "f32": 32, "f64": 64, "c64": 64, "c128": 128,
		"f8e5m2": 8, "f8e4m3": 8, "f8e4m3fn": 8, "f8e4m3b11fnuz": 8, "f8e3m4": 8,
		"f8e5m2fnuz": 8, "f8e4m3fnuz": 8, "f4e2m1fn": 4, "f8e8m0fnu": 8,
	}
	for name, bits := range widths {
		et, ok := ParseElemType(name)
		if !ok {
			t.Errorf("%s does not parse", name)
			continue
		}
		if et.Bits() != bits || et.String() != name {
			t.Errorf("%s: Bits=%d String=%q, want %d", name, et.Bits(), et, bits)
		}
		m := mustParse(t, "HloModule m\nENTRY e {\n  ROOT p = "+name+"[3,5] parameter(0)\n}\n")
		if got, want := m.Entry.Root.Shape.Bytes(), int64((15*bits+7)/8); got != want {
			t.Errorf("%s[3,5] is %d bytes, want %d (packed)", name, got, want)
		}
		roundTrip(t, m)
	}
	m := mustParse(t, "HloModule m\nENTRY e {\n  a = token[] after-all()\n  ROOT p = (opaque[], token[]) parameter(0)\n}\n")
	if m.Entry.Root.Shape.Bytes() != 0 || m.Entry.Root.Shape.Tuple[0].IsArray() {
		t.Errorf("opaque must be a non-array of size 0")
	}
	roundTrip(t, m)
}

// Bounded dynamic dimensions keep their flag, are sized at their bound and print back.
func TestDynamicDimensions(t *testing.T) {
	src := "HloModule m\nENTRY e {\n  p = f32[<=8,3]{1,0} parameter(0)\n  ROOT r = f32[<=8,3]{1,0} negate(f32[<=8,3] p)\n}\n"
	m := mustParse(t, src)
	s := m.Entry.Root.Shape
	if !s.IsDynamic(0) || s.IsDynamic(1) || !s.HasDynamic() || s.Elements() != 24 {
		t.Errorf("shape %s: dynamic flags %v, elements %d; want dim 0 dynamic, 24 elements", s, s.Dynamic, s.Elements())
	}
	if got := s.String(); got != "f32[<=8,3]{1,0}" {
		t.Errorf("printed %q", got)
	}
	if s.Equal(Array(F32, 8, 3).WithLayout(s.Layout)) {
		t.Errorf("Equal ignores dynamic dimensions")
	}
	roundTrip(t, m)
}

// The same instruction name in two computations is legal; within one it is not.
func TestNamesScopedPerComputation(t *testing.T) {
	src := "HloModule m\nf {\n  p0 = f32[2] parameter(0)\n  ROOT n = f32[2] negate(p0)\n}\nENTRY e {\n  p0 = f32[2] parameter(0)\n  ROOT n = f32[2] call(p0), to_apply=f\n}\n"
	m := mustParse(t, src)
	if m.Entry.Root.Operands[0] != m.Entry.Lookup("p0") || m.Computation("f").Lookup("p0") == m.Entry.Lookup("p0") {
		t.Errorf("operands resolved across computations")
	}
	roundTrip(t, m)
	pe := parseErr(t, "HloModule m\nENTRY e {\n  p0 = f32[2] parameter(0)\n  p0 = f32[2] parameter(1)\n  ROOT n = f32[2] add(p0, p0)\n}\n")
	if pe.Line != 4 || pe.Col != 3 || !strings.Contains(pe.Msg, `duplicate instruction name "p0" in computation "e"`) {
		t.Errorf("error %v", pe)
	}
}

const stackFrameHeader = `HloModule jit_f, entry_computation_layout={(f32[2]{0})->f32[2]{0}}

FileNames
1 "a.py"
2 "<embedded module '_launcher'>"

FunctionNames
1 "f"

FileLocations
1 {file_name_id=1 function_name_id=1 line=6 end_line=6 column=11 end_column=20}
2 {file_name_id=2 function_name_id=1 line=7 end_line=7 column=1 end_column=2}

StackFrames
1 {file_location_id=1 parent_frame_id=0}
2 {file_location_id=2 parent_frame_id=1}

ENTRY main {
  p = f32[2]{0} parameter(0), metadata={op_name="x" stack_frame_id=2}
  ROOT n = f32[2]{0} negate(p), metadata={op_name="y" stack_frame_id=1}
}
`

// JAX's stack-frame tables are read into the module, never taken for computations, and
// print back.
func TestStackFrameTables(t *testing.T) {
	m := mustParse(t, stackFrameHeader)
	sf := m.StackFrames
	if len(m.Computations) != 1 || sf == nil || len(sf.FileNames) != 2 || sf.FileNames[1] != "<embedded module '_launcher'>" ||
		len(sf.FunctionNames) != 1 || len(sf.FileLocations) != 2 || sf.FileLocations[1].Line != 7 ||
		len(sf.StackFrames) != 2 || sf.StackFrames[1] != (StackFrame{FileLocationID: 2, ParentFrameID: 1}) {
		t.Fatalf("stack frames %+v, %d computations", sf, len(m.Computations))
	}
	text := roundTrip(t, m)
	if !strings.Contains(text, "\nStackFrames\n1 {file_location_id=1 parent_frame_id=0}\n") {
		t.Errorf("printed tables missing:\n%s", text)
	}
	bad := strings.Replace(stackFrameHeader, "2 {file_location_id=2", "3 {file_location_id=2", 1)
	if pe := parseErr(t, bad); !strings.Contains(pe.Msg, "expected id 2 in the StackFrames table, found 3") {
		t.Errorf("error %v", pe)
	}
	bad = strings.Replace(stackFrameHeader, "line=7", "lime=7", 1)
	if pe := parseErr(t, bad); !strings.Contains(pe.Msg, `unexpected or repeated field "lime"`) {
		t.Errorf("error %v", pe)
	}
	// A computation may be called like a table.
	mustParse(t, "HloModule m\nFileNames {\n  ROOT p = f32[] parameter(0)\n}\n")
}

// Older and terser forms XLA accepts: "HloModule name:", no ENTRY (the last
// computation), no ROOT (the last instruction), result shapes left to inference.
func TestTerseForms(t *testing.T) {
	m := mustParse(t, "HloModule conv.1:\n\nf {\n  a = f32[2] parameter(0)\n}\n\ne {\n  p0 = f64[3] parameter(0)\n  p1 = f64[3] parameter(1)\n  out = add(p0, p1)\n  t = tuple(out, p0)\n  g = get-tuple-element(t), index=1\n}\n")
	if m.Name != "conv.1" || m.Entry.Name != "e" || m.Entry.Root.Name != "g" || m.Computation("f").Root.Name != "a" {
		t.Fatalf("name %q entry %q root %q", m.Name, m.Entry.Name, m.Entry.Root.Name)
	}
	if got := m.Entry.Lookup("t").Shape.StringNoLayout(); got != "(f64[3], f64[3])" {
		t.Errorf("inferred tuple shape %s", got)
	}
	roundTrip(t, m)
	pe := parseErr(t, "HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT b = broadcast(a), dimensions={0}\n}\n")
	if pe.Line != 4 || pe.Col != 12 || !strings.Contains(pe.Msg, "expected the result shape of %b (broadcast)") {
		t.Errorf("error %v", pe)
	}
}

// Floating-point element types may differ between an op's operands and result (XLA's
// allow_mixed_precision, used for TPU dumps); integer and float may not.
func TestMixedPrecision(t *testing.T) {
	m := mustParse(t, "HloModule m\nENTRY e {\n  a = f32[6] parameter(0)\n  b = bf16[6] parameter(1)\n  r = bf16[2,3] reshape(a)\n  ROOT s = bf16[6] add(a, b)\n}\n")
	if got := m.Entry.Lookup("r").Shape.Elem; got != BF16 {
		t.Errorf("reshape result %s, want the declared bf16", got)
	}
	roundTrip(t, m)
	pe := parseErr(t, "HloModule m\nENTRY e {\n  a = s32[6] parameter(0)\n  ROOT r = f32[2,3] reshape(a)\n}\n")
	if !strings.Contains(pe.Msg, "%r is declared f32[2,3], but reshape of its operands gives s32[2,3]") {
		t.Errorf("error %v", pe)
	}
}

// The builder's derived shapes go through the same size check.
func TestBuilderRejectsOversizedShapes(t *testing.T) {
	b := NewBuilder("m")
	x := b.Param(U8, 1<<40)
	b.Concat(0, x, x) // 2^41 bytes
	if err := b.Err(); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("concatenate to 2^41 bytes: error %v", err)
	}
	b = NewBuilder("m")
	b.Param(F32, 1<<40, 1<<40)
	if err := b.Err(); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("oversized parameter: error %v", err)
	}
}
