package compiler

import (
	"slices"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/zoo"
)

// TestPlanRaggedBert: the ragged attribute survives the passes (verified after each), and
// bert_tiny's ragged form lowers with no pad to per-sequence attention kernels (the
// scores' dot among them), packed row kernels (the projections' dots) and dense ones
// after the [CLS] slice.
func TestPlanRaggedBert(t *testing.T) {
	m, err := zoo.Lookup("bert_tiny_s128_b32")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := m.BuildRagged([]int{8, 128, 37})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(mod, nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	rp, err := PlanRagged(p)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rp.Lengths, []int{8, 128, 37}) || len(rp.Pads) != 0 || len(rp.Kernels) != len(p.Kernels) {
		t.Fatalf("lengths %v, pads %v, %d of %d kernels", rp.Lengths, rp.Pads, len(rp.Kernels), len(p.Kernels))
	}
	dotsBy := map[RaggedKind]int{}
	for i, k := range p.Kernels {
		for _, in := range k.Comp.Instructions {
			if in.Opcode == hlo.OpDot {
				dotsBy[rp.Kernels[i].Kind]++
			}
		}
		if rp.Kernels[i].Kind == RaggedPerSequence && !rp.Kernels[i].Offsets {
			t.Errorf("%s: a per-sequence kernel that does not read the offsets", k.Name)
		}
	}
	// Two layers: scores and context per layer are per-sequence; q, k, v (fused or not),
	// the output projection and the feed-forward are packed.
	if dotsBy[RaggedPerSequence] != 4 || dotsBy[RaggedPacked] < 8 || rp.Count(RaggedDense) == 0 {
		t.Errorf("dots by kind %v, %d dense kernels", dotsBy, rp.Count(RaggedDense))
	}
	if _, err := PlanRagged(mustCompile(t, "bert_tiny_s128_b32")); err == nil {
		t.Errorf("a program without a ragged parameter was planned")
	}
}

func mustCompile(t *testing.T, name string) *Program {
	t.Helper()
	m, err := zoo.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := m.Build()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(mod, nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRaggedPadKernel: an op that cannot carry raggedness (a sum across the packed rows
// after a ragged projection) gets an explicit pad, compiled as a kernel of its own that
// PlanRagged marks pad; the sum then runs dense, and the plan reports where the pad is.
func TestRaggedPadKernel(t *testing.T) {
	const S, D = 16, 128
	lengths := []int{5, 16, 9, 12}
	b := hlo.NewBuilder("ragged_pad")
	x := b.Param(hlo.F32, len(lengths)*S, D)
	hlo.SetRagged(x, hlo.Ragged{Dim: 0, Outer: 0, Lengths: lengths})
	w := b.Param(hlo.F32, D, D)
	y := b.Tanh(b.MatMul(x, w))
	mod, err := b.Build(y, b.ReduceSum(y, 0))
	if err != nil {
		t.Fatal(err)
	}
	pads, err := InsertRaggedPads(mod)
	if err != nil || len(pads) != 1 || pads[0].Opcode != hlo.OpReduce {
		t.Fatalf("pads %v, %v", pads, err)
	}
	p, err := Compile(mod, nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	rp, err := PlanRagged(p)
	if err != nil {
		t.Fatal(err)
	}
	if rp.Count(RaggedPadKernel) != 1 || rp.Count(RaggedPacked) == 0 || len(rp.Pads) != 1 || rp.Pads[0].Pad == "" {
		t.Errorf("kernels %+v, pads %v", rp.Kernels, rp.Pads)
	}
	for i, k := range rp.Kernels {
		if k.Kind == RaggedPadKernel && (len(p.Kernels[i].Comp.Instructions) > 2 || !k.Offsets) {
			t.Errorf("pad kernel %s: %d instructions, offsets %v", k.Name, len(p.Kernels[i].Comp.Instructions), k.Offsets)
		}
	}
}
