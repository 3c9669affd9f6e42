package zoo

import (
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// TestBuildRaggedCarries: the ragged form of the sequence models carries raggedness from
// the token inputs to the attention scores (lᵢ × lᵢ per sequence) and the feed-forward
// rows (packed), the printed text parses back with the same attribute, and the only pads
// are where the batch is reduced or sliced across (none in inference).
func TestBuildRaggedCarries(t *testing.T) {
	for _, name := range []string{"bert_tiny_s128_b32", "gpt2_tiny_s128_b8"} {
		m, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		mod, err := m.BuildRagged([]int{8, 128, 37})
		if err != nil {
			t.Fatal(err)
		}
		ri, err := hlo.InferRagged(mod)
		if err != nil || ri == nil {
			t.Fatalf("%s: %v %v", name, ri, err)
		}
		scores, packedDots := 0, 0
		for in, d := range ri.Dims {
			if in.Opcode == hlo.OpDot && len(d.Seq) == 2 {
				scores++
			}
			if in.Opcode == hlo.OpDot && d.Packed >= 0 {
				packedDots++
			}
		}
		if scores == 0 || packedDots == 0 {
			t.Errorf("%s: %d lᵢ×lᵢ dots, %d packed dots", name, scores, packedDots)
		}
		for _, p := range ri.Pads {
			t.Logf("%s: pad %s", name, p)
		}
		text := mod.String()
		if !strings.Contains(text, "ragged={dim=0,outer=0,lengths={8,128,37}}") {
			t.Errorf("%s: attribute not printed", name)
		}
		back, err := hlo.Parse(name+".hlo", []byte(text))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if back.String() != text {
			t.Errorf("%s: round trip changed the text", name)
		}
	}
}

// TestLayerProgram: a bert_* or gpt2_* model's one-layer program takes the hidden states
// (and BERT's mask) and holds one layer's attention (two dots over the sequence: scores
// and context) and four projections' worth of packed dots; its ragged form carries the
// raggedness from the hidden states without a pad. Other models have none.
func TestLayerProgram(t *testing.T) {
	for _, c := range []struct {
		name   string
		params int // inputs before the weights
	}{{"bert_tiny_s128_b32", 2}, {"gpt2_tiny_s128_b8", 1}} {
		m, err := Lookup(c.name)
		if err != nil {
			t.Fatal(err)
		}
		l, err := m.Layer()
		if err != nil {
			t.Fatal(err)
		}
		if l.Name != c.name+LayerSuffix || !l.Raggable() {
			t.Errorf("%s: layer named %s, raggable %v", c.name, l.Name, l.Raggable())
		}
		mod, err := l.BuildRagged([]int{8, 100, 37})
		if err != nil {
			t.Fatal(err)
		}
		ragged := 0
		for _, p := range mod.Entry.Parameters() {
			if _, ok, _ := hlo.RaggedOf(p); ok {
				ragged++
			}
		}
		ri, err := hlo.InferRagged(mod)
		if err != nil || ri == nil {
			t.Fatalf("%s layer: %v %v", c.name, ri, err)
		}
		perSeq, packed := 0, 0
		for in, d := range ri.Dims {
			if in.Opcode != hlo.OpDot {
				continue
			}
			if len(d.Seq) > 0 {
				perSeq++
			} else if d.Packed >= 0 {
				packed++
			}
		}
		if ragged != c.params || len(ri.Pads) != 0 || perSeq != 2 || packed < 3 {
			t.Errorf("%s layer: %d ragged inputs (want %d), pads %v, %d per-sequence and %d packed dots", c.name, ragged, c.params, ri.Pads, perSeq, packed)
		}
		full, err := m.BuildAt(3, 100)
		if err != nil {
			t.Fatal(err)
		}
		one, err := l.BuildAt(3, 100)
		if err != nil {
			t.Fatal(err)
		}
		if !(one.InstructionCount() < full.InstructionCount()) {
			t.Errorf("%s: the layer has %d instructions, the model %d", c.name, one.InstructionCount(), full.InstructionCount())
		}
	}
	r, _ := Lookup("resnet18_b1")
	if _, err := r.Layer(); err == nil {
		t.Error("resnet18_b1 has a layer program")
	}
}
