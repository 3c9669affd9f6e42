package zoo

import (
	"slices"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// tpModels are the zoo's tensor-parallel variants, with the layer count of their graph
// (decoder-only: every layer has an attention block and an MLP block).
var tpModels = []struct {
	name   string
	layers int
}{
	{"gpt2_medium_s256_b2_tp8", 24},
	{"gpt2_megatron8b_s1024_b1_tp8", 72},
	{"transformer_big_s128_b4_tp8", 0}, // an encoder-decoder: counted in compiler/spmd
}

// TestTensorParallelVariants: each "_tp8" model is its variant's inference graph with the
// module header's num_partitions=8, every entry parameter annotated, and, in a GPT-2
// layer, the Megatron-LM split: two column-parallel weights (the fused QKV projection
// and the MLP's first matmul: devices=[1,8]) and two row-parallel ones (the attention's
// output projection and the MLP's second matmul: devices=[8,1]), plus one Sharding
// constraint (replicated) after each row-parallel matmul. The annotations survive a
// print/parse round trip.
func TestTensorParallelVariants(t *testing.T) {
	for _, tc := range tpModels {
		m, err := Lookup(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		base, err := Lookup(strings.TrimSuffix(tc.name, TensorParallelSuffix))
		if err != nil {
			t.Fatalf("%s has no base model: %v", tc.name, err)
		}
		if m.Kind != Inference || m.Family != base.Family || len(m.Dynamic) != len(base.Dynamic) {
			t.Errorf("%s: kind %s, family %s, dynamic %v; want the inference graph of %s (%s, %v)", tc.name, m.Kind, m.Family, m.Dynamic, base.Name, base.Family, base.Dynamic)
		}
		mod, err := m.Build()
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := attr(mod, "num_partitions"); !ok || v != "8" {
			t.Errorf("%s: num_partitions %q, want 8", tc.name, v)
		}
		counts := map[string]int{}
		constraints := 0
		for _, in := range mod.Entry.Instructions {
			switch {
			case in.Opcode == hlo.OpParameter && in.Sharding == nil:
				t.Errorf("%s: parameter %s has no sharding", tc.name, in.Name)
			case in.Opcode == hlo.OpParameter && in.Shape.Rank() == 2:
				counts[in.Sharding.String()]++
			case in.Opcode == hlo.OpCustomCall && in.Sharding != nil:
				constraints++
			}
		}
		if tc.layers > 0 {
			// 2 column-parallel and 2 row-parallel weights a layer; the vocabulary-split
			// embedding table is one more [8,1].
			if counts["{devices=[1,8]<=[8]}"] != 2*tc.layers || counts["{devices=[8,1]<=[8]}"] != 2*tc.layers+1 || constraints != 2*tc.layers {
				t.Errorf("%s: 2-D weights by sharding %v, %d constraints; want %d column-, %d row-parallel (+1 embedding), %d constraints",
					tc.name, counts, constraints, 2*tc.layers, 2*tc.layers, 2*tc.layers)
			}
		}
		back, err := hlo.Parse(tc.name+".hlo", []byte(mod.String()))
		if err != nil {
			t.Fatalf("%s: reparsing: %v", tc.name, err)
		}
		if v, _ := attr(back, "num_partitions"); v != "8" || !slices.EqualFunc(mod.Entry.Instructions, back.Entry.Instructions,
			func(a, b *hlo.Instruction) bool { return shardingText(a.Sharding) == shardingText(b.Sharding) }) {
			t.Errorf("%s: the shardings or num_partitions do not survive a print/parse round trip", tc.name)
		}
		if mod.Name != tc.name {
			t.Errorf("module named %s, want %s", mod.Name, tc.name)
		}
	}
	// Only the variants marked for it have one; the rest of the zoo is unannotated.
	base, err := Build("gpt2_medium_s256_b2")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := attr(base, "num_partitions"); ok {
		t.Errorf("gpt2_medium_s256_b2 carries num_partitions; only its _tp8 variant should")
	}
}

// TestTensorParallelAtOtherLengths: a tensor-parallel model built at another sequence
// length (--shapes seq=V) keeps its annotations.
func TestTensorParallelAtOtherLengths(t *testing.T) {
	m, err := Lookup("gpt2_medium_s256_b2_tp8")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseShapes("seq=512")
	if err != nil {
		t.Fatal(err)
	}
	sized, err := m.WithShapes(s)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := sized.Build()
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := attr(mod, "num_partitions"); v != "8" || mod.Entry.Instructions[0].Sharding == nil {
		t.Errorf("at seq=512: num_partitions %q, first parameter's sharding %v; want 8 and an annotation", v, mod.Entry.Instructions[0].Sharding)
	}
}

func attr(m *hlo.Module, key string) (string, bool) {
	for _, a := range m.Attrs {
		if a.Key == key {
			return a.Value, true
		}
	}
	return "", false
}

func shardingText(s *hlo.Sharding) string {
	if s == nil {
		return ""
	}
	return s.String()
}
