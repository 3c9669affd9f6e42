package zoo

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
)

func TestParseShapes(t *testing.T) {
	s, err := ParseShapes(" seq = 64 , d1=3")
	if err != nil || len(s) != 2 || s[0] != (DimValue{"seq", 64}) || s[1] != (DimValue{"d1", 3}) {
		t.Fatalf("got %v, %v", s, err)
	}
	if s.String() != "seq=64,d1=3" {
		t.Errorf("String: %q", s.String())
	}
	for in, want := range map[string]string{
		"":             "empty",
		"seq=64,128":   "one value per dimension",
		"seq=64,":      "empty item",
		"seq":          "want NAME=V",
		"=64":          "want NAME=V",
		"seq=0":        "not an integer in [1, 65536]",
		"seq=-3":       "not an integer",
		"seq=x":        "not an integer",
		"seq=65537":    "not an integer",
		"seq=1,seq=2":  "given twice",
		"seq=64;d0=1":  "not an integer",
		"seq=12345678": "not an integer",
	} {
		if _, err := ParseShapes(in); err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseShapes(%q): %v, want one line with %q", in, err, want)
		}
	}
}

// TestSequenceModelsDeclareSeq: the transformer families and every model whose name
// carries a sequence length (_s<N>, or _t<N> for the unrolled recurrent models; not ViT,
// whose s16 is its size and patch) declare "seq", with the name's value as default; the
// others declare nothing.
func TestSequenceModelsDeclareSeq(t *testing.T) {
	n := 0
	for _, m := range All() {
		tagged := false
		for _, tag := range strings.Split(m.Name, "_") {
			if len(tag) > 1 && (tag[0] == 's' || tag[0] == 't') && allDigits(tag[1:]) && m.Family != "vit" {
				tagged = true
			}
		}
		if tagged != (len(m.Dynamic) == 1 && m.Dynamic[0].Name == "seq") {
			t.Errorf("%s: declares %v", m.Name, m.Dynamic)
		}
		for _, f := range []string{"bert", "gpt2", "distilgpt2", "transformer"} {
			if strings.HasPrefix(m.Name, f+"_") && len(m.Dynamic) == 0 {
				t.Errorf("%s: no dynamic dimension", m.Name)
			}
		}
		if len(m.Dynamic) == 1 {
			n++
			if !strings.Contains(m.Name, fmt.Sprintf("_s%d_", m.Dynamic[0].Default)) && !strings.Contains(m.Name, fmt.Sprintf("_t%d_", m.Dynamic[0].Default)) {
				t.Errorf("%s: seq default %d is not the name's", m.Name, m.Dynamic[0].Default)
			}
			if d := m.Dynamic[0]; d.Default < 1 || d.Default > d.Max || d.Max > MaxDimValue {
				t.Errorf("%s: %+v", m.Name, d)
			}
		}
	}
	if n < 20 {
		t.Errorf("%d models declare seq", n)
	}
}

func TestWithShapes(t *testing.T) {
	for _, name := range []string{"bert_tiny_s128_b32", "bert_tiny_s128_b32_train", "gpt2_tiny_s128_b8", "distilgpt2_s256_b4",
		"transformer_tiny_s32_b64", "nmt_lstm_h512_s24_b32", "lstm_lm_h256_t16_b32", "convdraw_s8_c32_r32_b16", "wavernn_h384_t16_b1"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m, err := Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			base, err := m.Build()
			if err != nil {
				t.Fatal(err)
			}
			sized, err := m.WithShapes(Shapes{{"seq", 5}})
			if err != nil {
				t.Fatal(err)
			}
			if sized.Name != name+"@seq=5" || len(sized.Dynamic) != 0 {
				t.Errorf("sized model %q, dynamic %v", sized.Name, sized.Dynamic)
			}
			mod, err := sized.Build()
			if err != nil {
				t.Fatal(err)
			}
			if err := hlo.Verify(mod); err != nil {
				t.Fatal(err)
			}
			if mod.Name != name+"@seq=5" || mod.Entry.Name != name {
				t.Errorf("module %q entry %q", mod.Name, mod.Entry.Name)
			}
			if mod.Name = base.Name; mod.String() == base.String() {
				t.Error("the sized module is the default one")
			}
			mod.Name = name + "@seq=5"
			// The sized module's text parses back (its name carries '@' and '=').
			back, err := hlo.Parse("sized", []byte(mod.String()))
			if err != nil || back.Name != mod.Name {
				t.Fatalf("re-parse: %v (name %q)", err, back.Name)
			}
			// The default value builds the default graph.
			def, err := m.WithShapes(Shapes{{"seq", m.Dynamic[0].Default}})
			if err != nil {
				t.Fatal(err)
			}
			dm, err := def.Build()
			if err != nil {
				t.Fatal(err)
			}
			dm.Name = base.Name
			if dm.String() != base.String() {
				t.Error("seq at its default builds another graph")
			}
		})
	}
}

func TestWithShapesRefusals(t *testing.T) {
	bert, _ := Lookup("bert_tiny_s128_b32")
	resnet, _ := Lookup("resnet18_b1")
	for _, c := range []struct {
		m    Model
		s    Shapes
		want string
	}{
		{bert, Shapes{{"seq", 513}}, "takes seq up to 512"},
		{bert, Shapes{{"len", 64}}, `no dynamic dimension "len" (it declares seq)`},
		{resnet, Shapes{{"seq", 64}}, `resnet18_b1 has no dynamic dimension "seq" (it declares none)`},
	} {
		if _, err := c.m.WithShapes(c.s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: %v, want %q", c.m.Name, c.s, err, c.want)
		}
	}
	if m, err := bert.WithShapes(nil); err != nil || m.Name != bert.Name {
		t.Errorf("no shapes: %q, %v", m.Name, err)
	}
}

func TestResolveShapes(t *testing.T) {
	m, err := ResolveShapes("bert_tiny_s128_b32", "seq=64")
	if err != nil || m.Name != "bert_tiny_s128_b32@seq=64" {
		t.Fatalf("%v, %v", m, err)
	}
	if m, err := ResolveShapes("bert_tiny_s128_b32", ""); err != nil || m.Name != "bert_tiny_s128_b32" {
		t.Fatalf("no shapes: %v", err)
	}
	for _, c := range []struct{ src, shapes, want string }{
		{"bert_tiny_s128_b32", "seq=64,128", "--shapes: "},
		{"bert_tiny_s128_b32", "seq=1000", "--shapes: seq=1000: bert_tiny_s128_b32 takes seq up to 512"},
		{"resnet18_b1", "seq=64", "--shapes: resnet18_b1 has no dynamic dimension"},
		{"no_such_model", "seq=64", "no model named"},
		{"testdata/nothere.hlo", "d0=1", "no such HLO file"},
		{"testdata/bounded.hlo", "d0=129", "--shapes: testdata/bounded.hlo: d0=129 is above its bound 128 (%p dimension 0)"},
		{"testdata/bounded.hlo", "seq=4", `no dimension "seq": the module's bounded dimensions are d0 (%p dimension 0, <=128), d1 (%m dimension 0, <=128), d2 (%q dimension 0, <=32)`},
		{"testdata/bounded.hlo", "d0=64,d1=32", "d0 and d1 share the bound 128"},
		{"testdata/merged.hlo", "d0=8", "the sized module is inconsistent"},
	} {
		_, err := ResolveShapes(c.src, c.shapes)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s --shapes %s: %v, want one line with %q", c.src, c.shapes, err, c.want)
		}
	}
}

func TestSizeBounded(t *testing.T) {
	m, err := Resolve("testdata/bounded.hlo")
	if err != nil {
		t.Fatal(err)
	}
	dims := BoundedDims(m)
	want := []BoundedDim{{"d0", "p", 0, 128}, {"d1", "m", 0, 128}, {"d2", "q", 0, 32}}
	if len(dims) != len(want) {
		t.Fatalf("dims %v", dims)
	}
	for i := range want {
		if dims[i] != want[i] {
			t.Errorf("dim %d: %+v, want %+v", i, dims[i], want[i])
		}
	}
	if err := SizeBounded(m, Shapes{{"d0", 64}, {"d2", 32}}); err != nil {
		t.Fatal(err)
	}
	if m.Name != "bounded@d0=64,d2=32" {
		t.Errorf("name %q", m.Name)
	}
	for name, shape := range map[string]string{"p": "f32[64,64]", "m": "f32[64]", "r": "f32[64,256]", "q": "f32[32,8]", "n": "f32[32,8]"} {
		if got := m.Entry.Lookup(name).Shape.StringNoLayout(); got != shape {
			t.Errorf("%%%s: %s, want %s", name, got, shape)
		}
	}
	if err := hlo.Verify(m); err != nil {
		t.Fatal(err)
	}
	// Unsized dims keep their bound, dynamic.
	m2, _ := Resolve("testdata/bounded.hlo")
	if err := SizeBounded(m2, Shapes{{"d2", 3}}); err != nil {
		t.Fatal(err)
	}
	if s := m2.Entry.Lookup("r").Shape; s.StringNoLayout() != "f32[<=128,256]" {
		t.Errorf("%%r: %s", s.StringNoLayout())
	}
	// A module without bounded dims has nothing to size.
	g, err := Resolve("../compiler/hlo/testdata/graphsage_tf.hlo")
	if err != nil {
		t.Fatal(err)
	}
	if err := SizeBounded(g, Shapes{{"d0", 1}}); err == nil || !strings.Contains(err.Error(), "no bounded dynamic dimension") {
		t.Errorf("graphsage: %v", err)
	}
}

// TestVariantOfSizedProgram: a program built at a shape is its model's variant, so that
// held-out evaluation never counts another shape of a trained model as unseen.
func TestVariantOfSizedProgram(t *testing.T) {
	for in, want := range map[string]string{
		"bert_tiny_s128_b32@seq=64":       "bert_tiny_s128",
		"bert_tiny_s128_b32_train@seq=64": "bert_tiny_s128",
		"bounded@d0=3":                    "bounded",
	} {
		if got := Variant(in); got != want {
			t.Errorf("Variant(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestParseShapeList: a list of one dimension's sizes parses sorted; an empty list, a
// non-numeric or out-of-range item, a repeat, a stray comma or a second dimension fail.
func TestParseShapeList(t *testing.T) {
	l, err := ParseShapeList("seq=256, 64,128")
	if err != nil || l.Name != "seq" || !slices.Equal(l.Values, []int{64, 128, 256}) || l.String() != "seq=64,128,256" || l.At(64) != "seq=64" {
		t.Fatalf("%+v %v", l, err)
	}
	for _, bad := range []string{"", "seq=", "seq=64,abc", "seq=64,,128", "seq=64,64", "seq=0", "seq=64,d0=3", "=64", "64,128", "seq=70000"} {
		if _, err := ParseShapeList(bad); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestParseShapeRange: the range forms of a --shapes list: every value, or a seeded uniform
// sample that holds both ends and repeats for a seed.
func TestParseShapeRange(t *testing.T) {
	l, err := ParseShapeList("seq=3..7")
	if err != nil || !slices.Equal(l.Values, []int{3, 4, 5, 6, 7}) || l.String() != "seq=3..7" || l.Lo != 3 || l.Hi != 7 {
		t.Fatalf("%+v %v", l, err)
	}
	a, err := ParseShapeList("seq=uniform:1-512:16:1")
	if err != nil || len(a.Values) != 16 || a.Values[0] != 1 || a.Values[15] != 512 || !slices.IsSorted(a.Values) || a.String() != "seq=uniform:1-512:16:1" {
		t.Fatalf("%+v %v", a, err)
	}
	b, _ := ParseShapeList("seq=uniform:1-512:16:1")
	c, _ := ParseShapeList("seq=uniform:1-512:16:2")
	if !slices.Equal(a.Values, b.Values) || slices.Equal(a.Values, c.Values) {
		t.Errorf("seed 1 twice: %v %v; seed 2: %v", a.Values, b.Values, c.Values)
	}
	for _, bad := range []string{"seq=5..3", "seq=0..4", "seq=1..x", "seq=uniform:1-10:11:1", "seq=uniform:1-10:1:1", "seq=uniform:1-10:4", "seq=uniform:1..10:4:1x", "seq=1..70000"} {
		if _, err := ParseShapeList(bad); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
