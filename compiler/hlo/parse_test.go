package hlo

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// roundTrip prints m, parses the text back and checks that the result equals m and
// prints to the same bytes. It returns the printed text.
func roundTrip(t *testing.T, m *Module) string {
	t.Helper()
	text := m.String()
	m2, err := Parse("printed.hlo", []byte(text))
	if err != nil {
		t.Fatalf("re-parsing printed module: %v\n%s", err, text)
	}
	if err := ModulesEqual(m, m2); err != nil {
		t.Fatalf("printed module re-parses differently: %v\n%s", err, text)
	}
	if text2 := m2.String(); text2 != text {
		t.Fatalf("printing is not stable:\n--- first\n%s\n--- second\n%s", text, text2)
	}
	return text
}

func mustParseFile(t *testing.T, path string) *Module {
	t.Helper()
	m, err := ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func find(t *testing.T, c *Computation, name string) *Instruction {
	t.Helper()
	in := c.Lookup(name)
	if in == nil {
		t.Fatalf("%s: no instruction %q", c.Name, name)
	}
	return in
}

func TestParseGraphSAGE(t *testing.T) {
	m := mustParseFile(t, "testdata/graphsage_tf.hlo")
	if err := Verify(m); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	e := m.Entry

	t.Run("counts", func(t *testing.T) {
		if got := len(m.Computations); got != 5 {
			t.Errorf("computations = %d, want 5", got)
		}
		if m.Computations[len(m.Computations)-1] != e {
			t.Errorf("entry is not the last computation")
		}
		if got := len(e.Instructions); got != 126 {
			t.Errorf("entry instructions = %d, want 126", got)
		}
		if got := e.Root.Opcode; got != OpGetTupleElement {
			t.Errorf("root opcode = %s, want get-tuple-element", got)
		}
		if got := len(m.Attrs); got != 2 || m.Attrs[0] != (Attr{"alias_passthrough_params", "true"}) {
			t.Errorf("header attrs = %v", m.Attrs)
		}
		if got, want := m.Attrs[1].Value, "{(s32[10]{0}, s32[128,10]{1,0}, s32[1]{0})->f32[1,121]{1,0}}"; got != want {
			t.Errorf("entry_computation_layout = %q, want %q", got, want)
		}
	})
	t.Run("gather", func(t *testing.T) {
		g := find(t, e, "embedding_lookup.3")
		want := []Attr{
			{"offset_dims", "{1}"}, {"collapsed_slice_dims", "{0}"}, {"start_index_map", "{0}"},
			{"index_vector_dim", "1"}, {"slice_sizes", "{1,50}"},
		}
		if g.Opcode != OpGather || !slices.Equal(g.Extra, want) {
			t.Errorf("gather = %s with Extra %v, want %v", g.Opcode, g.Extra, want)
		}
		if !strings.HasPrefix(g.Metadata, `op_type="GatherV2" op_name="embedding_lookup"`) {
			t.Errorf("metadata = %q", g.Metadata)
		}
	})
	t.Run("reduce", func(t *testing.T) {
		r := find(t, e, "Mean.30")
		if r.ToApply == nil || r.ToApply.Name != "meanaggregator_1_Mean-reduction.1" {
			t.Errorf("to_apply = %v", r.ToApply)
		}
		if !r.HasDimensions || !slices.Equal(r.Dimensions, []int{1}) {
			t.Errorf("dimensions = %v (written %v), want [1]", r.Dimensions, r.HasDimensions)
		}
	})
	t.Run("dot", func(t *testing.T) {
		d := find(t, e, "MatMul_1.10")
		if d.Dot == nil || !slices.Equal(d.Dot.LhsContracting, []int{1}) || !slices.Equal(d.Dot.RhsContracting, []int{0}) ||
			len(d.Dot.LhsBatch) != 0 || len(d.Dot.RhsBatch) != 0 {
			t.Errorf("dot dims = %+v", d.Dot)
		}
		if len(d.Extra) != 0 {
			t.Errorf("frontend_attributes should be dropped, Extra = %v", d.Extra)
		}
	})
	t.Run("transpose", func(t *testing.T) {
		tr := find(t, e, "transpose_1.1")
		if tr.Shape.Layout == nil || !slices.Equal(tr.Shape.Layout.MinorToMajor, []int{0, 1}) {
			t.Errorf("layout = %v, want {0,1}", tr.Shape.Layout)
		}
		if got := tr.Shape.String(); got != "s32[10,128]{0,1}" {
			t.Errorf("shape = %s", got)
		}
	})
	t.Run("parameter", func(t *testing.T) {
		p := find(t, e, "arg2.1")
		if p.ParamNum != 2 || !slices.Equal(p.Extra, []Attr{{"parameter_replication", "{false}"}}) {
			t.Errorf("arg2.1 = parameter(%d) Extra %v", p.ParamNum, p.Extra)
		}
	})
	t.Run("roundtrip", func(t *testing.T) {
		roundTrip(t, m)
	})
	t.Run("same-as-source", func(t *testing.T) {
		// The dump is already in canonical form except for the dropped frontend_attributes.
		src, err := os.ReadFile("testdata/graphsage_tf.hlo")
		if err != nil {
			t.Fatal(err)
		}
		want := string(src)
		for {
			i := strings.Index(want, ", frontend_attributes={")
			if i < 0 {
				break
			}
			j := strings.IndexByte(want[i:], '}')
			want = want[:i] + want[i+j+1:]
		}
		if got := m.String(); got != want {
			t.Errorf("printed module differs from the source")
		}
	})
}

// TestParseTestdata parses every .hlo file in testdata, verifies it and round-trips it.
func TestParseTestdata(t *testing.T) {
	files, err := filepath.Glob("testdata/*.hlo")
	if err != nil || len(files) < 6 {
		t.Fatalf("testdata: %v, %d files", err, len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			m := mustParseFile(t, f)
			if err := Verify(m); err != nil {
				t.Fatalf("Verify: %v", err)
			}
			roundTrip(t, m)
		})
	}
}

// TestParseFeatures checks what the hand-written files parse into.
func TestParseFeatures(t *testing.T) {
	t.Run("conv", func(t *testing.T) {
		m := mustParseFile(t, "testdata/conv.hlo")
		e := m.Entry
		conv := find(t, e, "conv")
		if got := conv.Conv; got == nil || !convDimsEqual(got, ptr(NHWC())) {
			t.Errorf("dim_labels = %+v, want NHWC", got)
		}
		wantW := []WindowDim{
			{Size: 3, Stride: 2, PadLo: 0, PadHi: 1, LhsDilate: 1, RhsDilate: 1},
			{Size: 3, Stride: 2, PadLo: 0, PadHi: 1, LhsDilate: 1, RhsDilate: 1},
		}
		if conv.Window == nil || !slices.Equal(conv.Window.Dims, wantW) {
			t.Errorf("window = %+v, want %+v", conv.Window, wantW)
		}
		if conv.FeatureGroupCount != 2 || conv.GroupCount() != 2 {
			t.Errorf("feature_group_count = %d", conv.FeatureGroupCount)
		}
		dil := find(t, e, "dilated").Window.Dims
		if dil[0].RhsDilate != 2 || dil[0].Reversal || !dil[1].Reversal || dil[1].PadLo != 2 {
			t.Errorf("dilated window = %+v", dil)
		}
		if w := find(t, e, "fc").Window; w == nil || len(w.Dims) != 0 {
			t.Errorf("window={} parsed as %+v", w)
		}
		g := find(t, e, "grouped")
		want := ConvDims{InputBatch: 0, InputFeature: 1, InputSpatial: []int{},
			KernelInput: 1, KernelOutput: 0, KernelSpatial: []int{},
			OutputBatch: 1, OutputFeature: 0, OutputSpatial: []int{}}
		if !convDimsEqual(g.Conv, &want) || g.BatchGroupCount != 2 {
			t.Errorf("grouped = %+v batch_group_count=%d", g.Conv, g.BatchGroupCount)
		}
		if pool := find(t, e, "pool"); pool.ToApply == nil || pool.ToApply.Name != "max_f32" || pool.Window.Dims[1].Stride != 2 {
			t.Errorf("pool = %s", pool.Text())
		}
		if lit := find(t, e, "ninf").Literal; lit != "-inf" {
			t.Errorf("literal = %q", lit)
		}
		if len(m.Attrs) != 1 || m.Attrs[0] != (Attr{"is_scheduled", "false"}) {
			t.Errorf("attrs = %v", m.Attrs)
		}
	})
	t.Run("pad_slice", func(t *testing.T) {
		m := mustParseFile(t, "testdata/pad_slice.hlo")
		e := m.Entry
		if e.Name != "main" || len(m.Computations) != 1 {
			t.Errorf("entry %q, %d computations", e.Name, len(m.Computations))
		}
		if got := find(t, e, "padded").Padding; !slices.Equal(got, []PadDim{{0, 0, 0}, {1, 2, 1}}) {
			t.Errorf("padding = %v", got)
		}
		if got := find(t, e, "neg").Padding; !slices.Equal(got, []PadDim{{0, 0, 0}, {-1, -1, 0}}) {
			t.Errorf("negative padding = %v", got)
		}
		if got := find(t, e, "s").Slice; !slices.Equal(got, []SliceDim{{0, 4, 2}, {0, 14, 2}}) {
			t.Errorf("slice = %v", got)
		}
		if got := find(t, e, "s2").Slice; !slices.Equal(got, []SliceDim{{0, 4, 1}, {1, 4, 1}}) {
			t.Errorf("slice default stride = %v", got)
		}
		if io := find(t, e, "io"); !io.HasDimensions || !slices.Equal(io.Dimensions, []int{1}) {
			t.Errorf("iota dimension = %v", io.Dimensions)
		}
		if p := find(t, e, "p"); p.Shape.Layout != nil {
			t.Errorf("shape without layout got layout %v", p.Shape.Layout)
		}
	})
	t.Run("fusion_while", func(t *testing.T) {
		m := mustParseFile(t, "testdata/fusion_while.hlo")
		e := m.Entry
		fused := m.Computation("fused_computation")
		if fused == nil || !fused.IsFusion {
			t.Fatalf("fused_computation missing or not marked IsFusion")
		}
		for _, c := range m.Computations {
			if c != fused && c.IsFusion {
				t.Errorf("%s marked IsFusion", c.Name)
			}
		}
		body := m.Computation("body")
		f := find(t, body, "f")
		if f.FusionKind != "kLoop" || f.Calls != fused {
			t.Errorf("fusion = %s", f.Text())
		}
		loop := find(t, e, "loop")
		if loop.Condition != m.Computation("cond") || loop.Body != body {
			t.Errorf("while = %s", loop.Text())
		}
		if got := find(t, m.Computation("cond"), "lt").Direction; got != "LT" {
			t.Errorf("direction = %q", got)
		}
		if got := find(t, e, "res").Index; got != 1 {
			t.Errorf("index = %d", got)
		}
		bf := find(t, e, "bf").Shape.Layout
		if bf == nil || len(bf.Tiles) != 2 || !slices.Equal(bf.Tiles[0], []int{8, 128}) || !slices.Equal(bf.Tiles[1], []int{2, 1}) {
			t.Errorf("tiles = %v", bf)
		}
		cc := find(t, e, "cc")
		if v, _ := cc.ExtraAttr("backend_config"); v != `"{\"k\": [1, 2]}"` {
			t.Errorf("backend_config = %s", v)
		}
		if v, _ := cc.ExtraAttr("custom_call_target"); v != `"MyOp"` {
			t.Errorf("custom_call_target = %s", v)
		}
		if x := find(t, e, "x"); len(x.Extra) != 0 {
			t.Errorf("sharding kept: %v", x.Extra)
		}
		if got := find(t, e, "out").Metadata; got != `op_type="Cast" op_name="out"` {
			t.Errorf("metadata = %q", got)
		}
		// Callees come before their callers.
		idx := map[string]int{}
		for i, c := range m.Computations {
			idx[c.Name] = i
		}
		if !(idx["fused_computation"] < idx["body"] && idx["body"] < idx["main"] && idx["cond"] < idx["main"]) {
			t.Errorf("computation order %v", idx)
		}
	})
	t.Run("comments_order", func(t *testing.T) {
		m := mustParseFile(t, "testdata/comments_order.hlo")
		e := m.Entry
		var names []string
		for _, in := range e.Instructions {
			names = append(names, in.Name)
		}
		want := []string{"ints", "z", "sum", "m", "v", "flag", "ninf", "ints2", "r2", "t"}
		if !slices.Equal(names, want) {
			t.Errorf("order = %v, want %v", names, want)
		}
		if e.Root.Name != "t" || len(e.Root.Operands) != 6 {
			t.Errorf("root = %s", e.Root.Text())
		}
		lits := map[string]string{"ints": "{1, 2, 3}", "m": "{ {1, 2}, {3, 4} }", "v": "{-1.5e-3, nan, inf}",
			"flag": "true", "ninf": "-inf", "ints2": "{...}"}
		for name, lit := range lits {
			if got := find(t, e, name).Literal; got != lit {
				t.Errorf("%s literal = %q, want %q", name, got, lit)
			}
		}
		if find(t, e, "sum").ToApply != m.Computation("add_s32") || find(t, e, "r2").ToApply != m.Computation("add_s32") {
			t.Errorf("to_apply with and without %% not resolved")
		}
	})
	t.Run("dot_gather", func(t *testing.T) {
		m := mustParseFile(t, "testdata/dot_gather.hlo")
		e := m.Entry
		d := find(t, e, "dot").Dot
		want := DotDims{LhsBatch: []int{0}, LhsContracting: []int{2}, RhsBatch: []int{0}, RhsContracting: []int{1}}
		if !dotDimsEqual(d, &want) {
			t.Errorf("dot dims = %+v", d)
		}
		if v, _ := find(t, e, "dot").ExtraAttr("precision_config"); v != "{default,default}" {
			t.Errorf("precision_config = %q", v)
		}
		if got := find(t, e, "c").Literal; got != "(1, -2)" {
			t.Errorf("complex literal = %q", got)
		}
		if got := find(t, e, "tok").Shape; got.Elem != Token {
			t.Errorf("token shape = %s", got)
		}
		if sc := find(t, e, "sc"); sc.ToApply == nil || len(sc.Extra) != 4 {
			t.Errorf("scatter = %s", sc.Text())
		}
	})
}

func ptr[T any](v T) *T { return &v }

// TestParseSmall covers single syntax points with exact expectations.
func TestParseSmall(t *testing.T) {
	wrap := func(body string) string {
		return "HloModule m\n\nENTRY %e {\n" + body + "\n}\n"
	}
	tests := []struct {
		name  string
		src   string
		check func(t *testing.T, m *Module)
	}{
		{"call-to-apply-is-calls", "HloModule m\nf {\n ROOT p = f32[] parameter(0)\n}\nENTRY e {\n x = f32[] parameter(0)\n ROOT c = f32[] call(x), to_apply=f\n}\n",
			func(t *testing.T, m *Module) {
				c := m.Entry.Root
				if c.Calls == nil || c.ToApply != nil {
					t.Errorf("call: calls=%v to_apply=%v", c.Calls, c.ToApply)
				}
			}},
		{"scalar-layout", wrap("  ROOT x = f32[]{} parameter(0)"),
			func(t *testing.T, m *Module) {
				if l := m.Entry.Root.Shape.Layout; l == nil || len(l.MinorToMajor) != 0 {
					t.Errorf("layout = %v", l)
				}
			}},
		{"signature-result-layout", "HloModule m\nENTRY e (x: f32[2]{0}) -> f32[2]{0} {\n ROOT x = f32[2]{0} parameter(0)\n}\n",
			func(t *testing.T, m *Module) {}},
		{"nested-tuple", wrap("  ROOT x = ((f32[], (s32[2]{0}, token[])), ()) parameter(0)"),
			func(t *testing.T, m *Module) {
				s := m.Entry.Root.Shape
				if got := s.String(); got != "((f32[], (s32[2]{0}, token[])), ())" {
					t.Errorf("shape = %s", got)
				}
			}},
		{"dimensions-empty", wrap("  a = f32[] parameter(0)\n  ROOT b = f32[3] broadcast(a), dimensions={}"),
			func(t *testing.T, m *Module) {
				if b := m.Entry.Root; !b.HasDimensions || len(b.Dimensions) != 0 {
					t.Errorf("dimensions = %v has=%v", b.Dimensions, b.HasDimensions)
				}
			}},
		// As in XLA (its parser and printer): no dimension numbers written is none, an
		// outer product, which is how XLA dumps one.
		{"dot-without-dims", wrap("  a = f32[2,3] parameter(0)\n  b = f32[4] parameter(1)\n  ROOT d = f32[2,3,4] dot(a, b)"),
			func(t *testing.T, m *Module) {
				if d := m.Entry.Root.Dot; d == nil || len(d.LhsContracting)+len(d.RhsContracting)+len(d.LhsBatch)+len(d.RhsBatch) != 0 {
					t.Errorf("Dot = %+v, want empty dimension numbers (an outer product) when none is written", d)
				}
			}},
		{"extra-nested-groups", wrap(`  ROOT a = f32[] custom-call(), custom_call_target="x,}", sharding={{devices=[2,1]0,1}, {replicated}}, backend_config={"a": [1, {"b": "}"}]}, output_to_operand_aliasing={{}: (0, {})}`),
			func(t *testing.T, m *Module) {
				want := []Attr{{"custom_call_target", `"x,}"`}, {"backend_config", `{"a": [1, {"b": "}"}]}`}, {"output_to_operand_aliasing", "{{}: (0, {})}"}}
				if got := m.Entry.Root.Extra; !slices.Equal(got, want) {
					t.Errorf("Extra = %q, want %q", got, want)
				}
			}},
		{"raw-whitespace-normalized", wrap("  ROOT a = f32[] custom-call(), backend_config={\n    \"a\":\t[1,  2],\n    \"s\": \"x  \\\"  y\"\n  }, metadata={\n op_name=\"a  b\"\t source_line=3 }"),
			func(t *testing.T, m *Module) {
				r := m.Entry.Root
				if got, want := r.Extra[0].Value, `{ "a": [1, 2], "s": "x  \"  y" }`; got != want {
					t.Errorf("backend_config = %s, want %s", got, want)
				}
				if got, want := r.Metadata, `op_name="a  b" source_line=3`; got != want {
					t.Errorf("metadata = %s, want %s", got, want)
				}
			}},
		{"comments-in-attr-groups", wrap("  ROOT a = f32[] custom-call(), foo={1, /*index=1*/2 /* } */}, bar={x // }\n y}, baz=\"/*not a comment*/\""),
			func(t *testing.T, m *Module) {
				want := []Attr{{"foo", "{1, 2 }"}, {"bar", "{x y}"}, {"baz", `"/*not a comment*/"`}}
				if got := m.Entry.Root.Extra; !slices.Equal(got, want) {
					t.Errorf("Extra = %q, want %q", got, want)
				}
			}},
		{"line-comment-at-eof", wrap("  ROOT a = f32[] parameter(0)") + "// done",
			func(t *testing.T, m *Module) {}},
		{"literal-nan-payload", wrap("  ROOT a = f32[2] constant({nan(0x7fc00000), -nan})"),
			func(t *testing.T, m *Module) {
				if got := m.Entry.Root.Literal; got != "{nan(0x7fc00000), -nan}" {
					t.Errorf("literal = %q", got)
				}
			}},
		{"iota-dimensions", wrap("  ROOT a = s32[2,3] iota(), dimensions={1}"),
			func(t *testing.T, m *Module) {
				if got := m.Entry.Root.Text(); got != "%a = s32[2,3] iota(), iota_dimension=1" {
					t.Errorf("text = %s", got)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse("small.hlo", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if err := Verify(m); err != nil {
				t.Fatalf("Verify: %v", err)
			}
			tt.check(t, m)
			roundTrip(t, m)
		})
	}
}

// builderModule builds a small model that uses most of the Builder.
func builderModule(t testing.TB) *Module {
	b := NewBuilder("builder_model")
	x := b.Param(F32, 2, 16, 16, 3)
	k := b.Param(F32, 3, 3, 3, 8)
	ids := b.Param(S32, 4)
	conv := b.Relu(b.Conv2D(x, k, 2, 1))                                  // [2,8,8,8]
	pool := b.ReduceWindow(conv, OpMaximum, -1, Window{Dims: []WindowDim{ // [2,4,4,8]
		{Size: 1, Stride: 1}, {Size: 2, Stride: 2}, {Size: 2, Stride: 2}, {Size: 1, Stride: 1}}})
	flat := b.Reshape(pool, 2, 128)
	w := b.Constant(F32, 128, 10)
	logits := b.AddOp(b.MatMul(flat, w), b.BroadcastTrailing(b.Constant(F32, 10), 2, 10))
	table := b.Constant(F32, 100, 10)
	emb := b.Gather(table, ids)                                                 // [4,10]
	padded := b.Pad(emb, b.ScalarConst(F32, 0), []PadDim{{0, 0, 0}, {1, 1, 1}}) // [4,21]
	sl := b.Slice(padded, []int{0, 0}, []int{2, 10})                            // [2,10]
	cat := b.Concat(1, logits, sl)                                              // [2,20]
	tr := b.Transpose(cat, 1, 0)                                                // [20,2]
	sum := b.ReduceSum(tr, 0)                                                   // [2]
	bmm := b.BatchMatMul(b.Constant(F32, 4, 2, 3), b.Constant(F32, 4, 3, 5))
	io := b.Iota(S32, 1, 2, 20)
	mask := b.Compare("LT", io, b.Full(S32, 10, 2, 20))
	sel := b.Select(mask, cat, b.Neg(cat))
	sc := b.ScatterAdd(table, ids, emb)
	ds := b.DynamicSlice(table, []*Instruction{b.ScalarConst(S32, 3), b.ScalarConst(S32, 0)}, 2, 10)
	mean := b.Div(sum, b.Full(F32, 20, 2))
	m, err := b.Build(mean, bmm, sel, sc, ds, b.Convert(b.Sigmoid(logits), BF16))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestBuilderRoundTrip(t *testing.T) {
	m := builderModule(t)
	text := roundTrip(t, m)
	for _, want := range []string{
		"dim_labels=b01f_01io->b01f", "window={size=3x3 stride=2x2 pad=0_1x0_1}",
		"reduce-window(", "padding=0_0_0x1_1_1", "slice={[0:2], [0:10]}", "concatenate(",
		"transpose(", "dimensions={1,0}", "gather(", "lhs_batch_dims={0}", "iota_dimension=1",
		"direction=LT", "to_apply=%add_f32", "dynamic_slice_sizes={2,10}",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("printed module lacks %q", want)
		}
	}
	m2, err := Parse("builder.hlo", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(m2); err != nil {
		t.Errorf("Verify(parsed builder module): %v", err)
	}
}

// malformedCase is an input Parse must reject at pos ("line:col") with a message
// containing msg.
type malformedCase struct {
	name, src, pos, msg string
}

func malformedCases() []malformedCase {
	const head = "HloModule m\n\nENTRY %e {\n"
	return []malformedCase{
		{"empty", "", "1:1", `expected "HloModule" (or, as XLA reads a module without its header, ENTRY or a computation's name and '{'), found end of input`},
		{"not-a-module", "HloModul m", "1:1", `expected "HloModule" (or, as XLA reads a module without its header, ENTRY or a computation's name and '{'), found "HloModul"`},
		{"missing-rparen", head + "  %a = f32[] parameter(0)\n  ROOT %b = f32[] negate(%a foo\n}\n", "5:29",
			`expected ')' after operands, found "foo"`},
		{"missing-rparen-eof", head + "  ROOT %a = f32[] parameter(0", "4:30", `expected ')' after parameter number, found end of input`},
		{"unknown-opcode", head + "  %a = f32[] parameter(0)\n  ROOT %b = f32[] frobnicate(%a)\n}\n", "5:19",
			`unknown opcode "frobnicate"`},
		{"missing-opcode", head + "  ROOT %b = f32[] (%a)\n}\n", "4:19", `expected opcode, found '('`},
		{"bad-shape", head + "  ROOT %a = f32[2, parameter(0)\n}\n", "4:20", `expected dimension size, found "parameter"`},
		{"bad-shape-eof", head + "  ROOT %a = f32[2,", "4:19", `expected dimension size, found end of input`},
		{"bad-shape-close", head + "  ROOT %a = f32[2} parameter(0)\n}\n", "4:18", `expected ',' or ']' in shape dimensions, found '}'`},
		{"unknown-type", head + "  ROOT %a = f31[2] parameter(0)\n}\n", "4:13", `unknown element type "f31"`},
		{"missing-shape", head + "  ROOT %a = parameter(0)\n}\n", "4:13", `expected the result shape of %a (parameter): it cannot be inferred`},
		{"negative-dim", head + "  ROOT %a = f32[-2] parameter(0)\n}\n", "4:17", `expected dimension size, found "-2"`},
		{"token-dims", head + "  ROOT %a = token[2] after-all()\n}\n", "4:13", `expected token[], found token with dimensions`},
		{"undefined-operand", head + "  %a = f32[] parameter(0)\n  ROOT %b = f32[] negate(%c)\n}\n", "5:26",
			`undefined operand %c`},
		{"operand-in-other-computation", "HloModule m\nf {\n  ROOT x = f32[] parameter(0)\n}\nENTRY e {\n  ROOT y = f32[] negate(x)\n}\n", "6:25",
			`undefined operand %x: it is defined in another computation`},
		{"unknown-computation", head + "  %a = f32[2] parameter(0)\n  %z = f32[] constant(0)\n  ROOT %r = f32[] reduce(%a, %z), dimensions={0}, to_apply=%nosuch\n}\n",
			"6:60", `unknown computation "nosuch"`},
		{"shape-mismatch", head + "  %a = f32[2] parameter(0)\n  %b = f32[2] parameter(1)\n  ROOT %c = f32[3] add(f32[2] %a, f32[2] %b)\n}\n", "6:8",
			`%c is declared f32[3], but add of its operands gives f32[2]`},
		{"shape-rule-error", head + "  %a = f32[2] parameter(0)\n  %b = f32[3] parameter(1)\n  ROOT %c = f32[2] add(%a, %b)\n}\n", "6:8",
			`%c: add operand 1 has shape f32[3], want dimensions of f32[2]`},
		{"arity", head + "  %a = f32[2] parameter(0)\n  ROOT %c = f32[2] add(%a)\n}\n", "5:8", `%c: add takes 2 operands, got 1`},
		{"typed-operand-mismatch", head + "  %a = f32[2] parameter(0)\n  ROOT %c = f32[2] negate(s32[2] %a)\n}\n", "5:27",
			`operand %a is written as s32[2], but defined as f32[2]`},
		{"duplicate-name", head + "  %a = f32[] parameter(0)\n  %a = f32[] parameter(1)\n  ROOT %b = f32[] add(%a, %a)\n}\n", "5:3",
			`duplicate instruction name "a" in computation "e" (first defined at 4:3)`},

		{"duplicate-computation", "HloModule m\nf {\n  ROOT a = f32[] parameter(0)\n}\nENTRY f {\n  ROOT b = f32[] parameter(0)\n}\n", "5:7",
			`duplicate computation name "f" (first defined at 2:1)`},
		{"empty-computation", head + "}\n", "4:1", `expected an instruction in computation "e", found '}'`},
		{"two-roots", head + "  ROOT %a = f32[] parameter(0)\n  ROOT %b = f32[] negate(%a)\n}\n", "5:3",
			`expected one ROOT in computation "e", found a second ("b" after "a")`},
		{"no-computation", "HloModule m\n", "2:1", `expected a computation, found end of input`},
		{"two-entries", "HloModule m\nENTRY f {\n  ROOT a = f32[] parameter(0)\n}\nENTRY g {\n  ROOT b = f32[] parameter(0)\n}\n", "5:1",
			`expected one ENTRY computation, found a second ("g" after "f")`},
		{"unterminated-comment", head + "  ROOT %a = f32[] parameter(0) /* oops\n}\n", "4:32", `unterminated comment: expected "*/", found end of input`},
		{"unterminated-comment-at-end", head + "  ROOT %a = f32[] parameter(0)\n}\n/*", "6:1", `unterminated comment`},
		{"bad-layout", head + "  ROOT %a = f32[2,3]{1,1} parameter(0)\n}\n", "4:21", `bad layout {1,1} for f32[2,3]: [1 1] is not a permutation of 0..1`},
		{"bad-layout-rank", head + "  ROOT %a = f32[2,3]{0} parameter(0)\n}\n", "4:21", `bad layout {0} for f32[2,3]`},
		{"bad-layout-syntax", head + "  ROOT %a = f32[2]{0,} parameter(0)\n}\n", "4:22", `expected layout dimension, found '}'`},
		{"unsupported-layout-attr", head + "  ROOT %a = f32[2]{0:D(C)} parameter(0)\n}\n", "4:22", `layout attribute D(...) is not supported`},
		{"empty-layout-attrs", head + "  ROOT %a = f32[2]{0:} parameter(0)\n}\n", "4:22", `expected a layout attribute (T, E or S) after ':' in layout, found '}'`},
		{"layout-attr-twice", head + "  ROOT %a = f32[2]{0:S(1)S(2)} parameter(0)\n}\n", "4:26", `layout attribute S given twice`},
		{"layout-attr-no-paren", head + "  ROOT %a = f32[2]{0:E4} parameter(0)\n}\n", "4:23", `expected '(' after layout attribute E`},
		{"scatter-even-operands", head + "  x = f32[8] parameter(0)\n  i = s32[2,1] parameter(1)\n  u = f32[2] parameter(2)\n  ROOT s = f32[8] scatter(x, i, u, u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1\n}\n", "7:8", `scatter takes N inputs, the indices and N updates (2N+1 operands, N >= 1), got 4 operands`},
		{"scatter-update-type", head + "  x = f32[8] parameter(0)\n  i = s32[2,1] parameter(1)\n  u = s32[2] parameter(2)\n  ROOT s = f32[8] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1\n}\n", "7:8", `scatter update 0 is s32, its input f32`},
		{"literal-count", head + "  ROOT %c = s8[10] constant(1)\n}\n", "4:29", `constant literal: 1 values for s8[10], which has 10 elements`},
		{"second-module", "HloModule a\n\nENTRY %e {\n  ROOT %c = f32[] constant(1)\n}\n// -----\nHloModule b\n", "7:1", `a second "HloModule": a file holds one module`},
		{"cycle", head + "  %a = f32[] negate(%b)\n  %b = f32[] negate(%a)\n  ROOT %c = f32[] negate(%b)\n}\n", "4:21",
			`operand %b of %a is part of a dependency cycle`},
		{"self-cycle", head + "  ROOT %a = f32[] negate(%a)\n}\n", "4:26", `operand %a of %a is part of a dependency cycle`},
		{"call-cycle", "HloModule m\nf {\n  x = f32[] parameter(0)\n  ROOT c = f32[] call(x), to_apply=f\n}\nENTRY e {\n  y = f32[] parameter(0)\n  ROOT d = f32[] call(y), to_apply=f\n}\n", "4:36",
			`computation "f" calls "f", which is part of a call cycle`},
		{"duplicate-attribute", head + "  %a = f32[2] parameter(0)\n  ROOT %b = f32[2] reverse(%a), dimensions={0}, dimensions={0}\n}\n", "5:49",
			`duplicate attribute "dimensions"`},
		{"missing-attr-value", head + "  ROOT %a = f32[] parameter(0), foo=\n}\n", "5:1", `expected value of foo, found '}'`},
		{"unbalanced-attr", head + "  ROOT %a = f32[] parameter(0), foo={1, 2)\n}\n", "4:42", `expected '}' to close '{' at 4:37, found ')'`},
		{"unterminated-comment-in-attr", head + "  ROOT %a = f32[] parameter(0), foo={1 /* 2}\n}\n", "4:40", `unterminated comment: expected "*/", found end of input`},
		{"unterminated-string", head + "  ROOT %a = f32[] custom-call(), custom_call_target=\"abc\n}\n", "4:53", `unterminated string`},
		{"bad-window-field", head + "  %x = f32[4] parameter(0)\n  %i = f32[] constant(0)\n  ROOT %r = f32[2] reduce-window(%x, %i), window={size=2 strides=2}, to_apply=%e\n}\n",
			"6:58", `unknown window field "strides"`},
		{"bad-window-dims", head + "  %x = f32[4,4] parameter(0)\n  %i = f32[] constant(0)\n  ROOT %r = f32[2,2] reduce-window(%x, %i), window={size=2x2 stride=2}\n}\n",
			"6:62", `window stride has 1 dimensions, but size has 2`},
		{"bad-window-pad", head + "  %x = f32[4] parameter(0)\n  %i = f32[] constant(0)\n  ROOT %r = f32[2] reduce-window(%x, %i), window={size=2 pad=1}\n}\n",
			"6:62", `bad window pad "1": expected lo_hi per dimension, separated by 'x'`},
		{"bad-padding", head + "  %x = f32[4] parameter(0)\n  %z = f32[] constant(0)\n  ROOT %p = f32[6] pad(%x, %z), padding=1_1_1_1\n}\n",
			"6:41", `bad padding "1_1_1_1": expected lo_hi or lo_hi_interior per dimension`},
		{"bad-dim-labels", head + "  %x = f32[1,4,4,2] parameter(0)\n  %k = f32[3,3,2,2] parameter(1)\n  ROOT %c = f32[1,2,2,2] convolution(%x, %k), window={size=3x3}, dim_labels=b01f_01oo->b01f\n}\n",
			"6:77", `bad dim_labels "b01f_01oo->b01f": kernel labels "01oo"`},
		{"bad-slice", head + "  %x = f32[4] parameter(0)\n  ROOT %s = f32[2] slice(%x), slice={[0]}\n}\n", "5:40", `expected ':' in slice dimension, found ']'`},
		{"gte-no-tuple", head + "  %x = f32[4] parameter(0)\n  ROOT %g = f32[4] get-tuple-element(%x), index=0\n}\n", "5:8",
			`get-tuple-element index 0 invalid for f32[4]`},
		{"param-number", head + "  ROOT %a = f32[] parameter(1)\n}\n", "4:8", `parameter number 1 out of range: computation "e" has 1 parameters`},
		{"param-duplicate", head + "  %a = f32[] parameter(0)\n  ROOT %b = f32[] parameter(0)\n}\n", "5:8", `duplicate parameter number 0 (also %a)`},
		{"signature-result", "HloModule m\nENTRY e (x: f32[]) -> s32[] {\n  ROOT x = f32[] parameter(0)\n}\n", "2:23",
			`signature of computation "e" returns s32[], but its ROOT %x is f32[]`},
		{"signature-arrow", "HloModule m\nENTRY e (x: f32[]) f32[] {\n  ROOT x = f32[] parameter(0)\n}\n", "2:20",
			`expected "->" after the parameters of computation "e", found "f32"`},
		{"missing-equals", head + "  ROOT %a f32[] parameter(0)\n}\n", "4:11", `expected '=' after instruction name, found "f32"`},
		{"missing-close-brace", head + "  ROOT %a = f32[] parameter(0)\n", "5:1", `expected '}' to end computation "e", found end of input`},
		{"bad-literal", head + "  ROOT %a = f32[2] constant({1 2})\n}\n", "4:32", `expected ',' or '}' in constant literal, found "2"`},
		{"empty-literal", head + "  ROOT %a = f32[2] constant()\n}\n", "4:29", `expected constant literal, found ')'`},
		{"big-int", head + "  ROOT %a = f32[99999999999999999999] parameter(0)\n}\n", "4:17", `dimension size 99999999999999999999 is out of range`},
		{"group-count", head + "  ROOT %a = f32[] parameter(0), feature_group_count=0\n}\n", "4:53", `expected a positive feature_group_count, found 0`},
		{"metadata-not-braced", head + "  ROOT %a = f32[] parameter(0), metadata=x\n}\n", "4:42", `expected '{' after metadata=, found "x"`},
		{"deep-tuple", head + "  ROOT %a = " + strings.Repeat("(", 200) + "f32[]" + strings.Repeat(")", 200) + " parameter(0)\n}\n", "4:114",
			`shape nested more than 100 deep`},
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range malformedCases() {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse("bad.hlo", []byte(tc.src))
			if err == nil {
				t.Fatalf("Parse succeeded, want error\n%s", m)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is %T, want *ParseError", err, err)
			}
			want := "bad.hlo:" + tc.pos + ": "
			if got := err.Error(); !strings.HasPrefix(got, want) || !strings.Contains(got, tc.msg) {
				t.Errorf("error = %q\nwant prefix %q and substring %q", got, want, tc.msg)
			}
			if got := fmt.Sprintf("%s:%d:%d: %s", pe.File, pe.Line, pe.Col, pe.Msg); got != err.Error() {
				t.Errorf("Error() = %q, want file:line:col: msg = %q", err.Error(), got)
			}
		})
	}
}

func TestParseErrorUnwrap(t *testing.T) {
	src := "HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT b = f32[2] add(a)\n}\n"
	_, err := Parse("x.hlo", []byte(src))
	var pe *ParseError
	if !errors.As(err, &pe) || errors.Unwrap(err) == nil {
		t.Fatalf("error %v does not wrap the shape inference error", err)
	}
}

func TestParseFileMissing(t *testing.T) {
	_, err := ParseFile("testdata/no-such-file.hlo")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ParseFile of a missing file: %v, want an error wrapping fs.ErrNotExist", err)
	}
}

// largeModule generates a module with n instructions in its entry computation. When
// reversed is set every definition follows its use, so the parser must reorder.
func largeModule(n int, reversed bool) []byte {
	lines := make([]string, 0, n)
	lines = append(lines, "  %p.0 = f32[128,256]{1,0} parameter(0)", "  %p.1 = f32[128,256]{1,0} parameter(1)")
	ops := []string{"add", "multiply", "maximum", "subtract"}
	for i := 2; i < n-1; i++ {
		a, b := fmt.Sprintf("%%v.%d", i-1), fmt.Sprintf("%%v.%d", i-2)
		if i == 2 {
			a, b = "%p.1", "%p.0"
		} else if i == 3 {
			b = "%p.1"
		}
		lines = append(lines, fmt.Sprintf("  %%v.%d = f32[128,256]{1,0} %s(%s, %s), metadata={op_type=\"Op\" op_name=\"layer/%d\" source_file=\"model.py\" source_line=%d}",
			i, ops[i%len(ops)], a, b, i, i))
	}
	lines = append(lines, fmt.Sprintf("  ROOT %%out = f32[128,256]{1,0} tanh(%%v.%d)", n-2))
	if reversed {
		slices.Reverse(lines)
	}
	return []byte("HloModule large\n\nENTRY %main (p.0: f32[128,256], p.1: f32[128,256]) -> f32[128,256] {\n" +
		strings.Join(lines, "\n") + "\n}\n")
}

func TestParseLarge(t *testing.T) {
	for _, reversed := range []bool{false, true} {
		t.Run(fmt.Sprintf("reversed=%v", reversed), func(t *testing.T) {
			m, err := Parse("large.hlo", largeModule(5000, reversed))
			if err != nil {
				t.Fatal(err)
			}
			if got := len(m.Entry.Instructions); got != 5000 {
				t.Fatalf("instructions = %d", got)
			}
			if err := Verify(m); err != nil {
				t.Fatal(err)
			}
			roundTrip(t, m)
		})
	}
}

// BenchmarkParse parses generated modules of growing size; instructions/s should stay
// flat as the size grows (parsing is linear).
func BenchmarkParse(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		for _, reversed := range []bool{false, true} {
			src := largeModule(n, reversed)
			b.Run(fmt.Sprintf("n=%d/reversed=%v", n, reversed), func(b *testing.B) {
				b.SetBytes(int64(len(src)))
				for b.Loop() {
					if _, err := Parse("large.hlo", src); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "instrs/s")
			})
		}
	}
}

func BenchmarkPrint(b *testing.B) {
	m, err := Parse("large.hlo", largeModule(100000, false))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		_ = m.String()
	}
	b.ReportMetric(100000*float64(b.N)/b.Elapsed().Seconds(), "instrs/s")
}

// TestModuleNameWithShape: a module built at a shape is named "model@seq=64"; its text
// parses back under that name.
func TestModuleNameWithShape(t *testing.T) {
	m, err := Parse("t", []byte("HloModule bert_tiny@seq=64, entry_computation_layout={()->f32[]}\nENTRY e {\n  ROOT c = f32[] constant(1)\n}\n"))
	if err != nil || m.Name != "bert_tiny@seq=64" || len(m.Attrs) != 1 {
		t.Fatalf("%v, %+v", err, m)
	}
}

// TestParseHeaderless checks modules without the "HloModule" header, which XLA's parser
// reads (HloParserImpl::Run) and XLA's own emitter and pass tests are written as: the text
// starts with ENTRY or with a computation's name and '{'; the entry is the ENTRY one or
// else the last computation, and the module is named "module_" + the entry's name.
func TestParseHeaderless(t *testing.T) {
	for _, c := range []struct{ name, src, module, entry string }{
		{"last-is-entry", `add {
  p0 = f32[] parameter(0)
  p1 = f32[] parameter(1)
  ROOT sum = f32[] add(p0, p1)
}

fusion {
  p0 = f32[8,128]{1,0} parameter(0)
  c = f32[] constant(0)
  ROOT r = f32[8]{0} reduce(p0, c), dimensions={1}, to_apply=add
}
`, "module_fusion", "fusion"},
		{"entry-first", `ENTRY %main (a: f32[4]) -> f32[4] {
  %a = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(%a)
}
`, "module_main", "main"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := Parse("h.hlo", []byte(c.src))
			if err != nil {
				t.Fatal(err)
			}
			if m.Name != c.module || m.Entry == nil || m.Entry.Name != c.entry {
				t.Fatalf("module %q entry %v, want %q entry %q", m.Name, m.Entry, c.module, c.entry)
			}
			if err := Verify(m); err != nil {
				t.Fatal(err)
			}
			// Printed, it gains the header and reads back the same.
			var b bytes.Buffer
			if err := Print(&b, m); err != nil {
				t.Fatal(err)
			}
			back, err := Parse("printed", b.Bytes())
			if err != nil {
				t.Fatalf("%v\n%s", err, b.String())
			}
			if err := ModulesEqual(m, back); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestLayoutElementSizeAndMemorySpace checks XLA's layout attributes E (packed element
// size in bits, as XLA writes s4 arrays) and S (memory space): read in XLA's order after
// the tiling, kept, printed back the same.
func TestLayoutElementSizeAndMemorySpace(t *testing.T) {
	src := `HloModule m

ENTRY %e (a: s4[16,128]) -> s4[16,128] {
  %a = s4[16,128]{1,0:T(8,128)(2,1)E(4)} parameter(0)
  ROOT %n = s4[16,128]{1,0:E(4)S(1)} negate(%a)
}
`
	m, err := Parse("l.hlo", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, in := range m.Entry.Instructions {
		l := in.Shape.Layout
		got = append(got, fmt.Sprintf("%v E%d S%d", l.Tiles, l.ElementSizeBits, l.MemorySpace))
	}
	if want := []string{"[[8 128] [2 1]] E4 S0", "[] E4 S1"}; !slices.Equal(got, want) {
		t.Fatalf("layouts %q, want %q", got, want)
	}
	var b bytes.Buffer
	if err := Print(&b, m); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"{1,0:T(8,128)(2,1)E(4)}", "{1,0:E(4)S(1)}"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("printed module lacks %s:\n%s", want, b.String())
		}
	}
	back, err := Parse("printed", b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if err := ModulesEqual(m, back); err != nil {
		t.Fatal(err)
	}
}

// TestVariadicScatterShape: XLA's scatter of N arrays (N inputs, the indices, N updates)
// gives the tuple of the N inputs' shapes; one array gives the array.
func TestVariadicScatterShape(t *testing.T) {
	m, err := ParseFile("testdata/variadic_scatter.hlo")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.Entry.Root.Shape.StringNoLayout(), "(f32[1000,128], s32[1000,128])"; got != want {
		t.Fatalf("variadic scatter's inferred shape %s, want %s", got, want)
	}
	if err := Verify(m); err != nil {
		t.Fatal(err)
	}
}
