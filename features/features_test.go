package features

import (
	"math"
	"slices"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/zoo"
)

var v4 = cost.Target{Name: "v4", ClockHz: 1.049e9, MXUs: 4, MXUDim: 128, Lanes: 128, Sublanes: 8,
	HBMBandwidth: 600e9, VMEMBytes: 32 << 20, LaunchNs: 1000, StepOverheadCycles: 96}

func TestWidths(t *testing.T) {
	s := CurrentSchema()
	if len(s.Node) != NodeWidth || len(s.Kernel) != KernelWidth || len(s.Config) != ConfigWidth {
		t.Fatalf("widths: node %d/%d kernel %d/%d config %d/%d", len(s.Node), NodeWidth, len(s.Kernel), KernelWidth, len(s.Config), ConfigWidth)
	}
	for _, names := range [][]string{s.Node, s.Kernel, s.Config} {
		seen := map[string]bool{}
		for _, n := range names {
			if seen[n] {
				t.Errorf("feature name %q twice", n)
			}
			seen[n] = true
		}
	}
}

func TestVocabularyIsStable(t *testing.T) {
	// Ids are persisted in datasets: these must never change (append new opcodes only).
	for name, id := range map[string]int32{"<unk>": 0, "parameter": 1, "add": 19, "dot": 50, "convolution": 51, "after-all": 78} {
		if got := slices.Index(Vocabulary(), name); got != int(id) {
			t.Errorf("vocabulary id of %s = %d, want %d", name, got, id)
		}
	}
	for _, op := range hlo.AllOpcodes() {
		if OpcodeID(op) == 0 {
			t.Errorf("opcode %s is not in the vocabulary", op)
		}
	}
}

func compile(t *testing.T, name string) *compiler.Program {
	t.Helper()
	m, err := zoo.Resolve(name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := compiler.Compile(m, nil, compiler.Options{Target: v4})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestKernelGraphs(t *testing.T) {
	// One model per structural family (convolutions, attention, embeddings, recurrence,
	// training graphs); a name the zoo does not have fails the test (compile).
	for _, name := range []string{"resnet50_b32", "bert_base_s128_b8", "dlrm_small_b32", "lstm_lm_h256_t16_b32", "unet_d3_c32_r128_b8_train"} {
		p := compile(t, name)
		for _, k := range p.Kernels {
			g := OfKernel(k, v4)
			if err := g.Validate(); err != nil {
				t.Fatalf("%s/%s: %v", name, k.Name, err)
			}
			if g.Nodes() != len(k.Comp.Instructions) {
				t.Errorf("%s: %d nodes for %d instructions", k.Name, g.Nodes(), len(k.Comp.Instructions))
			}
			for _, v := range append(append([]float32{}, g.NodeFeats...), g.KernelFeats...) {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					t.Fatalf("%s: non-finite feature", k.Name)
				}
			}
			// Same kernel, same tensors.
			g2 := OfKernel(k, v4)
			if !slices.Equal(g.NodeFeats, g2.NodeFeats) || !slices.Equal(g.EdgeSrc, g2.EdgeSrc) {
				t.Fatalf("%s: features are not deterministic", k.Name)
			}
		}
	}
}

func TestConfigFeaturesDistinguishConfigs(t *testing.T) {
	p := compile(t, "resnet50_b32")
	for _, tc := range p.Space.Tile[:5] {
		k := p.KernelByName(tc.Kernels[0])
		seen := map[string]bool{}
		for _, o := range tc.Planned() {
			tile := o.Config.Tile
			for _, f := range o.FlagOptions() {
				c, err := o.WithFlags(f)
				if err != nil {
					t.Fatal(err)
				}
				v := Config(c)
				for _, x := range v {
					if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
						t.Fatalf("%s %s %s: non-finite config feature", k.Name, tile, f)
					}
				}
				key := string(float32Bytes(v))
				if seen[key] {
					t.Errorf("%s: configs %s %s share a feature vector", k.Name, tile, f)
				}
				seen[key] = true
			}
		}
	}
	// An invalid tile cannot be planned, so it has no features.
	if _, err := cost.PlanConfig(p.Kernels[0].Info, p.Kernels[0].Key, cost.KernelConfig{Tile: cost.Tile{3}, Flags: cost.DefaultFlags()}, v4); err == nil {
		t.Error("invalid tile accepted")
	}
}

func float32Bytes(v []float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		u := math.Float32bits(x)
		b = append(b, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
	}
	return b
}

// TestPaperSetIsRawTileAndFlags: the paper set is exactly the raw tile and flag features,
// a prefix of the stored vector, and reads nothing of the plan.
func TestPaperSetIsRawTileAndFlags(t *testing.T) {
	want := []string{"tile0_log", "tile0_fraction", "blocks0_log", "tile1_log", "tile1_fraction", "blocks1_log",
		"tile2_log", "tile2_fraction", "blocks2_log", "double_buffer", "pipeline_depth", "unroll_log"}
	if got := ConfigPaper.Names(); !slices.Equal(got, want) {
		t.Errorf("paper features %v, want %v", got, want)
	}
	if got := ConfigPlan.Names(); len(got) != ConfigWidth {
		t.Errorf("plan set has %d features, want all %d", len(got), ConfigWidth)
	}
	if _, err := ParseConfigSet("oracle"); err == nil {
		t.Error("unknown feature set accepted")
	}
}

// TestDynamicDimensionsAreMarked: a bounded dynamic dimension (f32[<=N], simulated at its
// bound) is visible to the model as the fraction of dynamic dimensions of a node.
func TestDynamicDimensionsAreMarked(t *testing.T) {
	m, err := hlo.Parse("dyn.hlo", []byte(`HloModule dyn
ENTRY e {
  p = f32[<=64,128] parameter(0)
  ROOT n = f32[<=64,128] negate(p)
}
`))
	if err != nil {
		t.Fatal(err)
	}
	col := slices.Index(nodeNames(), "dynamic_dims_fraction")
	f := make([]float32, NodeWidth)
	nodeFeatures(f, m.Entry.Root, 0, true, v4)
	if col < 0 || f[col] != 0.5 {
		t.Errorf("dynamic_dims_fraction of f32[<=64,128] = %v (column %d), want 0.5", f[col], col)
	}
	static := make([]float32, NodeWidth)
	s, _ := hlo.Parse("s.hlo", []byte("HloModule s\nENTRY e {\n  ROOT p = f32[64,128] parameter(0)\n}\n"))
	nodeFeatures(static, s.Entry.Root, 0, true, v4)
	if static[col] != 0 {
		t.Errorf("a static shape has dynamic_dims_fraction %v", static[col])
	}
}

// lg's table gives exactly what the formula gives.
func TestLgTable(t *testing.T) {
	for i := 0; i < lgTableSize+10; i++ {
		x := float64(i)
		want := float32(0)
		if x > 0 {
			want = float32(math.Log2(1 + x))
		}
		if got := lg(x); got != want {
			t.Fatalf("lg(%d) = %v, want %v", i, got, want)
		}
	}
}
