package hlo

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func tinyModule(t *testing.T) *Module {
	t.Helper()
	b := NewBuilder("tiny")
	x := b.Param(F32, 2, 3)
	y := b.Param(F32, 3)
	s := b.AddOp(x, b.BroadcastTrailing(y, 2, 3))
	r := b.ReduceSum(s, 1)
	m, err := b.Build(r, b.Transpose(s, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	s.Shape.Layout = &Layout{MinorToMajor: []int{0, 1}}
	s.Metadata = `op_type="Add" op_name="s"`
	m.Attrs = []Attr{{"is_scheduled", "true"}}
	return m
}

const tinyText = `HloModule tiny, is_scheduled=true

%add_f32 (add_f32.x: f32[], add_f32.y: f32[]) -> f32[] {
  %add_f32.x = f32[] parameter(0)
  %add_f32.y = f32[] parameter(1)
  ROOT %add_f32.r = f32[] add(%add_f32.x, %add_f32.y)
}

ENTRY %tiny (param.0: f32[2,3], param.1: f32[3]) -> (f32[2], f32[3,2]) {
  %param.0 = f32[2,3] parameter(0)
  %param.1 = f32[3] parameter(1)
  %broadcast.0 = f32[2,3] broadcast(%param.1), dimensions={1}
  %add.0 = f32[2,3]{0,1} add(%param.0, %broadcast.0), metadata={op_type="Add" op_name="s"}
  %constant.0 = f32[] constant(0)
  %reduce.0 = f32[2] reduce(%add.0, %constant.0), dimensions={1}, to_apply=%add_f32
  %transpose.0 = f32[3,2] transpose(%add.0), dimensions={1,0}
  ROOT %tuple.0 = (f32[2], f32[3,2]) tuple(%reduce.0, %transpose.0)
}
`

func TestPrintModule(t *testing.T) {
	m := tinyModule(t)
	if got := m.String(); got != tinyText {
		t.Errorf("String() =\n%s\nwant\n%s", got, tinyText)
	}
	var buf bytes.Buffer
	if err := Print(&buf, m); err != nil {
		t.Fatal(err)
	}
	if buf.String() != tinyText {
		t.Errorf("Print differs from String")
	}
	roundTrip(t, m)
}

func TestComputationString(t *testing.T) {
	m := tinyModule(t)
	want := "%add_f32 (add_f32.x: f32[], add_f32.y: f32[]) -> f32[] {\n" +
		"  %add_f32.x = f32[] parameter(0)\n  %add_f32.y = f32[] parameter(1)\n" +
		"  ROOT %add_f32.r = f32[] add(%add_f32.x, %add_f32.y)\n}\n"
	if got := m.Computations[0].String(); got != want {
		t.Errorf("String() =\n%s\nwant\n%s", got, want)
	}
	// The entry printed alone has no ENTRY prefix.
	if got := m.Entry.String(); !strings.HasPrefix(got, "%tiny (") {
		t.Errorf("entry String() = %q", got)
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n += len(p); w.n > 10 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

func TestPrintWriterError(t *testing.T) {
	m := mustParseFile(t, "testdata/graphsage_tf.hlo")
	if err := Print(&failWriter{}, m); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Print to a failing writer: %v", err)
	}
}

func TestInstructionText(t *testing.T) {
	f32 := func(dims ...int) *Instruction {
		return &Instruction{Name: "x", Opcode: OpParameter, Shape: Array(F32, dims...)}
	}
	x4, k4, s := f32(1, 8, 8, 4), f32(3, 3, 2, 8), f32()
	k4.Name, s.Name = "k", "s"
	fused := &Computation{Name: "fused"}
	tests := []struct {
		name string
		in   *Instruction
		want string
	}{
		{"conv", &Instruction{Name: "c", Opcode: OpConvolution, Shape: Array(F32, 1, 4, 4, 8), Operands: []*Instruction{x4, k4},
			Window: &Window{Dims: []WindowDim{
				{Size: 3, Stride: 2, PadLo: 0, PadHi: 1, LhsDilate: 1, RhsDilate: 1},
				{Size: 3, Stride: 2, PadLo: 1, PadHi: 1, LhsDilate: 1, RhsDilate: 2, Reversal: true}}},
			Conv: ptr(NHWC()), FeatureGroupCount: 2},
			"%c = f32[1,4,4,8] convolution(%x, %k), window={size=3x3 stride=2x2 pad=0_1x1_1 rhs_dilate=1x2 rhs_reversal=0x1}, dim_labels=b01f_01io->b01f, feature_group_count=2"},
		{"conv-zero-fields", &Instruction{Name: "c", Opcode: OpConvolution, Shape: Array(F32, 2), Operands: []*Instruction{x4, k4},
			Window: &Window{Dims: []WindowDim{{Size: 3}}}, Conv: &ConvDims{InputFeature: 1, InputSpatial: []int{2}, KernelOutput: 2,
				KernelInput: 1, KernelSpatial: []int{0}, OutputBatch: 2, OutputSpatial: []int{1}}},
			"%c = f32[2] convolution(%x, %k), window={size=3 stride=0 lhs_dilate=0 rhs_dilate=0}, dim_labels=bf0_0io->f0b"},
		{"window-empty", &Instruction{Name: "c", Opcode: OpConvolution, Shape: Array(F32, 2, 3), Operands: []*Instruction{x4, k4},
			Window: &Window{}, Conv: &ConvDims{InputFeature: 1, KernelOutput: 1, OutputFeature: 1}},
			"%c = f32[2,3] convolution(%x, %k), window={}, dim_labels=bf_io->bf"},
		{"pad-interior", &Instruction{Name: "p", Opcode: OpPad, Shape: Array(F32, 4, 14), Operands: []*Instruction{x4, s},
			Padding: []PadDim{{0, 0, 0}, {1, 2, 1}}},
			"%p = f32[4,14] pad(%x, %s), padding=0_0_0x1_2_1"},
		{"pad", &Instruction{Name: "p", Opcode: OpPad, Shape: Array(F32, 4, 14), Operands: []*Instruction{x4, s},
			Padding: []PadDim{{0, 0, 0}, {-1, 2, 0}}},
			"%p = f32[4,14] pad(%x, %s), padding=0_0x-1_2"},
		{"slice", &Instruction{Name: "s", Opcode: OpSlice, Shape: Array(F32, 1, 2), Operands: []*Instruction{x4},
			Slice: []SliceDim{{0, 1, 1}, {0, 8, 4}}},
			"%s = f32[1,2] slice(%x), slice={[0:1], [0:8:4]}"},
		{"dot", &Instruction{Name: "d", Opcode: OpDot, Shape: Array(F32, 2), Operands: []*Instruction{x4, k4},
			Dot: &DotDims{LhsContracting: []int{1}, RhsContracting: []int{0}}},
			"%d = f32[2] dot(%x, %k), lhs_contracting_dims={1}, rhs_contracting_dims={0}"},
		{"dot-empty", &Instruction{Name: "d", Opcode: OpDot, Shape: Array(F32, 2), Operands: []*Instruction{x4, k4}, Dot: &DotDims{}},
			"%d = f32[2] dot(%x, %k), lhs_contracting_dims={}, rhs_contracting_dims={}"},
		{"gte", &Instruction{Name: "g", Opcode: OpGetTupleElement, Shape: Scalar(S32), Operands: []*Instruction{x4}},
			"%g = s32[] get-tuple-element(%x), index=0"},
		{"iota", &Instruction{Name: "i", Opcode: OpIota, Shape: Array(S32, 2, 3), Dimensions: []int{1}, HasDimensions: true},
			"%i = s32[2,3] iota(), iota_dimension=1"},
		{"broadcast-scalar", &Instruction{Name: "b", Opcode: OpBroadcast, Shape: Array(F32, 3), Operands: []*Instruction{s}, HasDimensions: true},
			"%b = f32[3] broadcast(%s), dimensions={}"},
		{"fusion", &Instruction{Name: "f", Opcode: OpFusion, Shape: Array(BF16, 8, 128).WithLayout(&Layout{MinorToMajor: []int{1, 0}, Tiles: [][]int{{8, 128}, {2, 1}}}),
			Operands: []*Instruction{x4, s}, FusionKind: "kLoop", Calls: fused,
			Extra: []Attr{{"backend_config", `"{}"`}, {"output_to_operand_aliasing", "{{}: (0, {})}"}}, Metadata: `op_name="f"`},
			`%f = bf16[8,128]{1,0:T(8,128)(2,1)} fusion(%x, %s), kind=kLoop, calls=%fused, backend_config="{}", output_to_operand_aliasing={{}: (0, {})}, metadata={op_name="f"}`},
		{"while", &Instruction{Name: "w", Opcode: OpWhile, Shape: TupleOf(Scalar(S32), Array(F32, 2).WithLayout(RowMajor(1))), Operands: []*Instruction{x4},
			Condition: &Computation{Name: "c"}, Body: &Computation{Name: "b"}},
			"%w = (s32[], f32[2]{0}) while(%x), condition=%c, body=%b"},
		{"compare", &Instruction{Name: "c", Opcode: OpCompare, Shape: Scalar(PRED), Operands: []*Instruction{s, s}, Direction: "GT"},
			"%c = pred[] compare(%s, %s), direction=GT"},
		{"constant", &Instruction{Name: "k", Opcode: OpConstant, Shape: Array(F32, 2, 2), Literal: "{ {1, 2}, {3, 4} }"},
			"%k = f32[2,2] constant({ {1, 2}, {3, 4} })"},
		{"token", &Instruction{Name: "t", Opcode: OpAfterAll, Shape: Shape{Elem: Token}},
			"%t = token[] after-all()"},
		{"reduce-window", &Instruction{Name: "r", Opcode: OpReduceWindow, Shape: Array(F32, 2), Operands: []*Instruction{x4, s},
			Window: &Window{Dims: []WindowDim{{Size: 2, Stride: 2, LhsDilate: 2, RhsDilate: 1}}}, ToApply: &Computation{Name: "max"}},
			"%r = f32[2] reduce-window(%x, %s), window={size=2 stride=2 lhs_dilate=2}, to_apply=%max"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.Text(); got != tt.want {
				t.Errorf("Text() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestModulesEqualDetects(t *testing.T) {
	base := mustParseFile(t, "testdata/conv.hlo")
	if err := ModulesEqual(base, base.Clone()); err != nil {
		t.Fatalf("a clone differs: %v", err)
	}
	entry := func(m *Module) *Computation { return m.Entry }
	conv := func(m *Module) *Instruction { return m.Entry.Lookup("conv") }
	tests := []struct {
		name   string
		mutate func(m *Module)
		want   string
	}{
		{"module-name", func(m *Module) { m.Name = "other" }, "module name"},
		{"header", func(m *Module) { m.Attrs[0].Value = "true" }, "header attributes"},
		{"computation-name", func(m *Module) { m.Computations[0].Name = "x" }, `computation "max_f32" is only in the first module`},
		{"computation-order", func(m *Module) {
			m.Computations[0], m.Computations[1] = m.Computations[1], m.Computations[0]
		}, "computation 0 is"},
		{"fusion-flag", func(m *Module) { m.Computations[0].IsFusion = true }, "IsFusion"},
		{"root", func(m *Module) { entry(m).Root = conv(m) }, "ROOT"},
		{"instruction-name", func(m *Module) { conv(m).Name = "conv2" }, "name conv != conv2"},
		{"layout", func(m *Module) { conv(m).Shape.Layout = nil }, "shape"},
		{"operand", func(m *Module) { conv(m).Operands[0] = entry(m).Lookup("k") }, "operand 0 %x != %k"},
		{"window", func(m *Module) { conv(m).Window.Dims[0].PadHi = 7 }, "window"},
		{"dim-labels", func(m *Module) { conv(m).Conv.InputSpatial[0] = 9 }, "dim_labels"},
		{"groups", func(m *Module) { conv(m).FeatureGroupCount = 1 }, "feature_group_count"},
		{"dot", func(m *Module) { conv(m).Dot = &DotDims{} }, "dot dimensions"},
		{"extra", func(m *Module) { conv(m).Extra = []Attr{{"a", "b"}} }, "attributes"},
		{"metadata", func(m *Module) { conv(m).Metadata = "op_name=\"x\"" }, "metadata"},
		{"dimensions-written", func(m *Module) { conv(m).HasDimensions = true }, "dimensions"},
		{"to-apply", func(m *Module) { entry(m).Lookup("pool").ToApply = m.Entry }, "to_apply max_f32 != main"},
		{"literal", func(m *Module) { entry(m).Lookup("ninf").Literal = "inf" }, "literal"},
		{"entry", func(m *Module) { m.Entry = m.Computations[0] }, "entry computation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := base.Clone()
			tt.mutate(m)
			err := ModulesEqual(base, m)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ModulesEqual = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
