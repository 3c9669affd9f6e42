package zoo

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// maxModelNodes bounds the size of any zoo model so that compiling and simulating the
// whole zoo stays fast.
const maxModelNodes = 15000

func TestAllModelsBuildAndVerify(t *testing.T) {
	for _, m := range All() {
		t.Run(m.Name, func(t *testing.T) {
			t.Parallel()
			mod, err := m.Build()
			if err != nil {
				t.Fatal(err)
			}
			if err := hlo.Verify(mod); err != nil {
				t.Fatalf("verify: %v", err)
			}
			if mod.Name != m.Name || mod.Entry.Name != m.Name {
				t.Errorf("module %q, entry %q; want both %q", mod.Name, mod.Entry.Name, m.Name)
			}
			if c := mod.InstructionCount(); c > maxModelNodes {
				t.Errorf("%d instructions, more than %d", c, maxModelNodes)
			}
		})
	}
}

func TestRegistry(t *testing.T) {
	all := All()
	if !sort.SliceIsSorted(all, func(i, j int) bool { return all[i].Name < all[j].Name }) {
		t.Error("All is not sorted by name")
	}
	seen := map[string]bool{}
	kinds := map[Kind]int{}
	perFamily := map[string]int{}
	for _, m := range all {
		if seen[m.Name] {
			t.Errorf("duplicate name %s", m.Name)
		}
		seen[m.Name] = true
		kinds[m.Kind]++
		if m.Kind == Inference {
			perFamily[m.Family]++
		}
		if (m.Kind == Training) != strings.HasSuffix(m.Name, "_train") {
			t.Errorf("%s: kind %s does not match its name", m.Name, m.Kind)
		}
		if m.Kind == Training && !seen[strings.TrimSuffix(m.Name, "_train")] {
			t.Errorf("%s has no inference variant", m.Name)
		}
	}
	if kinds[Inference] < 60 {
		t.Errorf("%d inference models, want >= 60", kinds[Inference])
	}
	if kinds[Training] < 30 {
		t.Errorf("%d training models, want >= 30", kinds[Training])
	}
	if kinds[Inference]+kinds[Training] != len(all) {
		t.Errorf("models of unknown kinds: %v", kinds)
	}
	fams := Families()
	if len(fams) < 13 {
		t.Errorf("%d families, want >= 13", len(fams))
	}
	if !sort.StringsAreSorted(fams) {
		t.Error("Families is not sorted")
	}
	for _, f := range fams {
		if perFamily[f] < 3 {
			t.Errorf("family %s has %d variants, want >= 3", f, perFamily[f])
		}
	}
	want := []string{"mlp", "resnet_v1", "resnet_v2", "mobilenet", "ssd", "unet", "bert", "gpt2",
		"translation", "lstm", "wavernn", "convdraw", "dlrm", "vit"}
	for _, f := range want {
		if !slices.Contains(fams, f) {
			t.Errorf("family %s is missing", f)
		}
	}
}

func TestLookup(t *testing.T) {
	m, err := Lookup("resnet50_b32_train")
	if err != nil {
		t.Fatal(err)
	}
	if m.Family != "resnet_v1" || m.Kind != Training {
		t.Errorf("Lookup gave %+v", m)
	}
	_, err = Lookup("resnet50_b33")
	if err == nil {
		t.Fatal("Lookup found a model that does not exist")
	}
	if !strings.Contains(err.Error(), "resnet50_b32") {
		t.Errorf("error %q does not suggest resnet50_b32", err)
	}
	if _, err := Lookup("bert_base"); err == nil || !strings.Contains(err.Error(), "bert_base_s128_b8") {
		t.Errorf("error %v does not suggest a bert_base model", err)
	}
	if _, err := (Model{Name: "x"}).Build(); err == nil {
		t.Error("a zero Model built")
	}
}

// signature is the name/opcode/shape sequence of a module.
func signature(m *hlo.Module) []string {
	var out []string
	for _, c := range m.Computations {
		out = append(out, "computation "+c.Name)
		for _, in := range c.Instructions {
			out = append(out, in.Name+" "+in.Opcode.String()+" "+in.Shape.StringNoLayout())
		}
	}
	return out
}

func TestDeterministicBuilds(t *testing.T) {
	for _, m := range All() {
		t.Run(m.Name, func(t *testing.T) {
			t.Parallel()
			a, err := m.Build()
			if err != nil {
				t.Fatal(err)
			}
			b, err := m.Build()
			if err != nil {
				t.Fatal(err)
			}
			if a == b || a.Entry == b.Entry {
				t.Fatal("Build returned a shared module")
			}
			sa, sb := signature(a), signature(b)
			if !slices.Equal(sa, sb) {
				for i := range min(len(sa), len(sb)) {
					if sa[i] != sb[i] {
						t.Fatalf("builds differ at %d: %q vs %q", i, sa[i], sb[i])
					}
				}
				t.Fatalf("builds differ in length: %d vs %d", len(sa), len(sb))
			}
		})
	}
}

func countOps(m *hlo.Module, op hlo.Opcode) int {
	n := 0
	for _, in := range m.Entry.Instructions {
		if in.Opcode == op {
			n++
		}
	}
	return n
}

// TestTrainingGraphs checks the structure of every training step: its backward pass has
// at least as many of the family's heavy op (convolution or dot) as its forward pass, it
// differentiates the
// model's gather, slice, concatenate and reduce-window ops into their gradient ops, and its
// ROOT tuple holds the f32 loss and, for each trainable parameter, an updated value with
// the parameter's shape.
func TestTrainingGraphs(t *testing.T) {
	byName := map[string]Model{}
	for _, m := range All() {
		byName[m.Name] = m
	}
	// trainableParams counts each training model's trainable parameters by running its
	// graph function on a bare net.
	trainableParams := map[string]int{}
	for _, v := range variants() {
		if v.train {
			n := newNet(hlo.NewBuilder("count"), true, v.act)
			v.graph(n)
			trainableParams[v.name+"_train"] = len(n.params)
		}
	}
	for _, m := range All() {
		if m.Kind != Training {
			continue
		}
		t.Run(m.Name, func(t *testing.T) {
			t.Parallel()
			tr, err := m.Build()
			if err != nil {
				t.Fatal(err)
			}
			inf, err := byName[strings.TrimSuffix(m.Name, "_train")].Build()
			if err != nil {
				t.Fatal(err)
			}
			heavy := hlo.OpDot
			if countOps(inf, hlo.OpConvolution) > 0 {
				heavy = hlo.OpConvolution
			}
			// The backward pass (after the loss) has at least as many heavy ops as the
			// forward pass; a convolutional training step has more convolutions than the
			// inference graph (WaveRNN's inference graph applies its heads per step, so
			// only the first check applies to dots).
			loss := tr.Entry.Root.Operands[0]
			fwd, bwd, seenLoss := 0, 0, false
			for _, in := range tr.Entry.Instructions {
				if in.Opcode == heavy {
					if seenLoss {
						bwd++
					} else {
						fwd++
					}
				}
				seenLoss = seenLoss || in == loss
			}
			if fwd == 0 || bwd < fwd {
				t.Errorf("%d %s ops in the forward pass, %d in the backward pass", fwd, heavy, bwd)
			}
			if ci, ct := countOps(inf, heavy), countOps(tr, heavy); heavy == hlo.OpConvolution && ct <= ci {
				t.Errorf("%d convolutions in training, %d in inference", ct, ci)
			}
			if countOps(tr, hlo.OpGather) > 0 && countOps(tr, hlo.OpScatter) == 0 {
				t.Error("gathers but no scatter-add gradient")
			}
			if countOps(tr, hlo.OpReduceWindow) > 0 && countOps(tr, hlo.OpPad) == 0 {
				t.Error("pools but no pooling gradient")
			}
			root := tr.Entry.Root
			if root.Opcode != hlo.OpTuple {
				t.Fatalf("root is %s, want a tuple", root.Opcode)
			}
			if s := root.Operands[0].Shape; s.Rank() != 0 || s.Elem != hlo.F32 {
				t.Errorf("first root element is %s, want the f32[] loss", s.StringNoLayout())
			}
			// The root holds, after the loss, one updated value per trainable parameter
			// (p - step, or convert(convert(p) ± step) for Adam) with its shape, then the
			// optimizer state.
			updated := map[*hlo.Instruction]bool{}
			for _, r := range root.Operands[1:] {
				if p := updatedParam(r); p != nil {
					if !p.Shape.Compatible(r.Shape) {
						t.Errorf("update of %s has shape %s", p, r.Shape.StringNoLayout())
					}
					updated[p] = true
				}
			}
			if want := trainableParams[m.Name]; len(updated) != want {
				t.Errorf("%d updated parameters in the root, want %d", len(updated), want)
			}
		})
	}
}

// updatedParam returns the parameter p when r is p - step (SGD momentum),
// convert(convert(p) - step) (Adam) or convert(convert(p) + update) (optax's
// apply_updates), else nil.
func updatedParam(r *hlo.Instruction) *hlo.Instruction {
	if r.Opcode == hlo.OpConvert {
		r = r.Operands[0]
	}
	// Adam's step count t + 1 is an add of a constant, not an update.
	isUpdate := r.Opcode == hlo.OpAdd && r.Operands[1].Opcode != hlo.OpConstant
	if r.Opcode != hlo.OpSubtract && !isUpdate {
		return nil
	}
	p := r.Operands[0]
	if p.Opcode == hlo.OpConvert {
		p = p.Operands[0]
	}
	if p.Opcode != hlo.OpParameter {
		return nil
	}
	return p
}

func TestModelShapesRealistic(t *testing.T) {
	// The zoo must exercise TPU padding: some dot/convolution operands have minor
	// dimensions that are multiples of 128 and some that are not, and both bf16 and f32
	// models exist.
	var aligned, unaligned, bf16, f32 int
	for _, m := range All() {
		if m.Kind != Inference {
			continue
		}
		mod, err := m.Build()
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range mod.Entry.Instructions {
			if in.Opcode != hlo.OpDot && in.Opcode != hlo.OpConvolution {
				continue
			}
			d := in.Shape.Dims[in.Shape.Rank()-1]
			if d%128 == 0 {
				aligned++
			} else {
				unaligned++
			}
			if in.Shape.Elem == hlo.BF16 {
				bf16++
			} else if in.Shape.Elem == hlo.F32 {
				f32++
			}
		}
	}
	if aligned == 0 || unaligned == 0 || bf16 == 0 || f32 == 0 {
		t.Errorf("aligned %d, unaligned %d, bf16 %d, f32 %d matmuls/convolutions; want all > 0", aligned, unaligned, bf16, f32)
	}
}

func TestParseList(t *testing.T) {
	got, err := ParseList(" a, b.hlo ,c")
	if err != nil || !slices.Equal(got, []string{"a", "b.hlo", "c"}) {
		t.Errorf("ParseList = %v, %v", got, err)
	}
	for _, bad := range []string{"", "  ", "a,,b", "a,"} {
		if _, err := ParseList(bad); err == nil {
			t.Errorf("ParseList(%q) accepted", bad)
		}
	}
	if len(Names()) != len(All()) {
		t.Error("Names and All disagree")
	}
}

// TestLookupSuggestsClose: an unknown name suggests the models within a small edit
// distance, closest first, and nothing when no model is close ("nope" is not close to
// resnet18_b1).
func TestLookupSuggestsClose(t *testing.T) {
	for _, tc := range []struct{ name, first string }{
		{"resnet50_b33", "resnet50_b32"}, // a substitution
		{"renset18_b1", "resnet18_b1"},   // a transposition
		{"mlp_96x2_b1_trian", "mlp_96x2_b1_train"},
	} {
		_, err := Lookup(tc.name)
		if err == nil || !strings.Contains(err.Error(), "(close: "+tc.first) {
			t.Errorf("Lookup(%q): %v; want %s suggested first", tc.name, err, tc.first)
		}
	}
	_, err := Lookup("nope")
	if err == nil || strings.Contains(err.Error(), "close:") || !strings.Contains(err.Error(), "zoo list") {
		t.Errorf("Lookup(nope): %v; want no suggestion and a pointer to zoo list", err)
	}
}
