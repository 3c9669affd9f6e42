package ragged

import (
	"math"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/zoo"
)

// equalTolerance bounds how much slower the compiled ragged program of a batch of equal
// lengths may be than the dense one: the per-sequence kernels' own steps and pipeline
// fills and the offsets reads. Measured 2.5% (gpt2_tiny), 6.7% (distilgpt2), 8.4%
// (bert_small) and 11.9% (bert_tiny) at 8 × 128 on v4 (docs/ragged.md).
const equalTolerance = 0.15

// steps1 is the steps of the kernel computing root in model name built at batch 1 and
// length l, compiled and timed for one core.
func steps1(t *testing.T, name, root string, l int) int64 {
	t.Helper()
	m, err := zoo.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := m.BuildAt(1, l)
	if err != nil {
		t.Fatal(err)
	}
	c := testChip(t)
	c.Cores = 1
	p, err := compiler.Compile(mod, nil, compiler.Options{Target: c.Target})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := byRoot(p, c)
	if err != nil {
		t.Fatal(err)
	}
	k, ok := ts[root]
	if !ok {
		t.Fatalf("%s at batch 1 seq %d: no kernel computes %s", name, l, root)
	}
	return k.kt.Steps
}

// TestAttentionPerSequenceSteps: over lengths {8, 512} the attention kernels (scores,
// softmax, context) run each sequence's own steps, steps(8) + steps(512), not 2 ×
// steps(512) as a padded kernel does, and take less time than the padded kernels.
func TestAttentionPerSequenceSteps(t *testing.T) {
	const name = "bert_tiny_s128_b32"
	r, err := TimeZoo(name, []int{8, 512}, testChip(t))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := zoo.Lookup(name)
	mod, _ := m.BuildRagged([]int{8, 512})
	p, err := compiler.Compile(mod, nil, compiler.Options{Target: testChip(t).Target})
	if err != nil {
		t.Fatal(err)
	}
	per, fewer := 0, 0
	for i, k := range r.Kernels {
		if k.Kind != string(compiler.RaggedPerSequence) {
			continue
		}
		per++
		root := p.Kernels[i].Root
		s8, s512 := steps1(t, name, root, 8), steps1(t, name, root, 512)
		if k.Steps != s8+s512 {
			t.Errorf("%s (%s): %d steps, want %d + %d (not 2 × %d)", k.Name, root, k.Steps, s8, s512, s512)
		}
		if s8 < s512 {
			fewer++ // the scores and context matmuls: lᵢ × lᵢ tiles
		}
		if !(k.Ns < k.PaddedNs) || !k.Ragged {
			t.Errorf("%s: ragged %.0f ns, padded %.0f ns", k.Name, k.Ns, k.PaddedNs)
		}
	}
	if per < 4 || fewer < 2 { // scores, max, sum, context per layer at least
		t.Errorf("%d per-sequence kernels, %d of them with fewer steps at 8 than at 512", per, fewer)
	}
	if !(r.RaggedNs < r.PaddedNs) {
		t.Errorf("ragged %.0f ns, padded %.0f ns", r.RaggedNs, r.PaddedNs)
	}
}

// TestEqualLengthsCompiled: a batch of equal lengths compiles to a ragged program within
// equalTolerance of the dense one, and never faster than the bound.
func TestEqualLengthsCompiled(t *testing.T) {
	for _, name := range []string{"bert_tiny_s128_b32", "gpt2_tiny_s128_b8"} {
		r, err := TimeZoo(name, []int{128, 128, 128, 128, 128, 128, 128, 128}, testChip(t))
		if err != nil {
			t.Fatal(err)
		}
		if r.IdealNs != r.PaddedNs || r.PackNs != 0 || r.PaddingShare != 0 {
			t.Errorf("%s: ideal %.0f padded %.0f pack %.0f", name, r.IdealNs, r.PaddedNs, r.PackNs)
		}
		if math.Abs(r.RaggedNs/r.PaddedNs-1) > equalTolerance {
			t.Errorf("%s: ragged %.0f ns, dense %.0f ns: %.1f%% apart, want within %.0f%%", name, r.RaggedNs, r.PaddedNs,
				100*math.Abs(r.RaggedNs/r.PaddedNs-1), 100*equalTolerance)
		}
	}
}

// TestThirdPadding: on a batch whose tokens are a third padding the compiled ragged
// program sits between the bound and the padded program: ideal <= ragged < padded, and
// the gap to the bound is accounted for (offsets, imbalance, steps).
func TestThirdPadding(t *testing.T) {
	lengths, err := ParseLengths("uniform:40-128:32:2")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"bert_small_s128_b8", "gpt2_tiny_s128_b8"} {
		r, err := TimeZoo(name, lengths, testChip(t))
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(r.PaddingShare-1.0/3) > 0.01 { // "a third" (33.3% here)
			t.Fatalf("%s: padding share %.3f, want about 1/3", name, r.PaddingShare)
		}
		if !(r.IdealNs <= r.RaggedNs && r.RaggedNs < r.PaddedNs) {
			t.Errorf("%s: ideal %.0f ragged %.0f padded %.0f, want ideal <= ragged < padded", name, r.IdealNs, r.RaggedNs, r.PaddedNs)
		}
		gap := r.OffsetsNs + r.ImbalanceNs + r.StepsNs
		if math.Abs(r.IdealNs+gap-r.RaggedNs) > exact*r.RaggedNs || !(r.OffsetsNs > 0) {
			t.Errorf("%s: gap %.0f + ideal %.0f != ragged %.0f", name, gap, r.IdealNs, r.RaggedNs)
		}
	}
}

// TestBalance: whole sequences go longest first to the least loaded core.
func TestBalance(t *testing.T) {
	// 5 and 4 first, then 3 to the core with 4 (7), 3 to the one with 5 (8), 3 to 7.
	if b, m := balance([]float64{3, 5, 3, 4, 3}, 2); b != 10 || m != 9 {
		t.Errorf("busiest %g mean %g, want 10 9", b, m)
	}
	if b, m := balance([]float64{8, 1}, 2); b != 8 || m != 4.5 {
		t.Errorf("busiest %g mean %g, want 8 4.5", b, m)
	}
}

// TestPadKernelCharged: an op that cannot carry raggedness (a sum across the packed rows)
// gets an explicit pad (compiler.InsertRaggedPads), and the ragged program charges it: a
// pad kernel timed as the gather of the N·L token slots out of the packed rows plus the
// offsets read, part of the program's time; the sum itself runs dense.
func TestPadKernelCharged(t *testing.T) {
	const S, D = 64, 256
	lengths := []int{5, 64, 9, 30}
	c := testChip(t)
	build := func(rows int, ragged bool) *hlo.Module {
		b := hlo.NewBuilder("ragged_pad")
		x := b.Param(hlo.F32, rows, D)
		if ragged {
			hlo.SetRagged(x, hlo.Ragged{Dim: 0, Outer: 0, Lengths: lengths})
		}
		w := b.Param(hlo.F32, D, D)
		y := b.Tanh(b.MatMul(x, w))
		m, err := b.Build(y, b.ReduceSum(y, 0))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	p := &Parts{Model: zoo.Model{Name: "ragged_pad"}, Lengths: lengths, Chip: c, Ragged: build(len(lengths)*S, true)}
	for _, l := range lengths {
		p.PackedRows += padTo(l)
	}
	p.Packed = build(p.PackedRows, false)
	pads, err := compiler.InsertRaggedPads(p.Ragged)
	if err != nil || len(pads) != 1 {
		t.Fatalf("pads %v, %v", pads, err)
	}
	pr := &Programs{}
	for _, x := range []struct {
		m  *hlo.Module
		to **compiler.Program
	}{{p.Ragged, &pr.Ragged}, {p.Packed, &pr.Packed}} {
		if *x.to, err = compiler.Compile(x.m, nil, compiler.Options{Target: c.Target}); err != nil {
			t.Fatal(err)
		}
	}
	cr, err := p.Time(pr)
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := gatherTime(p.PackedRows+1, len(lengths)*S, D*4, c)
	if err != nil {
		t.Fatal(err)
	}
	want += OffsetsNs(len(lengths), c)
	pad, sum := 0, 0.0
	for i, k := range cr.Kernels {
		sum += k.Ns * pr.Ragged.Kernels[i].Weight
		if k.Kind != string(compiler.RaggedPadKernel) {
			continue
		}
		pad++
		if math.Abs(k.Ns-want) > 1e-9*want || !(k.Ns > 0) || k.Steps == 0 {
			t.Errorf("pad kernel %s: %.1f ns, %d steps; the unpack gather and offsets take %.1f ns", k.Name, k.Ns, k.Steps, want)
		}
	}
	if pad != 1 || len(cr.Pads) != 1 || math.Abs(sum-cr.Ns) > 1e-9*cr.Ns {
		t.Errorf("%d pad kernels, pads %v; kernels sum to %.1f ns, program %.1f ns", pad, cr.Pads, sum, cr.Ns)
	}
}
