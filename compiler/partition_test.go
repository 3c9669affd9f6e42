package compiler

import (
	"math"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/zoo"
)

// partitionOf returns the partition label (root instruction name) of every instruction
// of m's entry that is in a partition of two or more, by formPartitions with the given
// seed edges.
func partitionsOf(m *hlo.Module, seed func(p, x *hlo.Instruction) bool) map[string]string {
	c := m.Entry
	g := formPartitions(c, seed)
	size := map[int]int{}
	for _, p := range g.part {
		if p >= 0 {
			size[p]++
		}
	}
	out := map[string]string{}
	for i, p := range g.part {
		if p >= 0 && size[p] > 1 {
			out[c.Instructions[i].Name] = c.Instructions[p].Name
		}
	}
	return out
}

func noSeed(_, _ *hlo.Instruction) bool { return false }

// TestFormPartitionsRule checks the rule on a graph where every clause applies once:
// a dot with a transpose prologue, a bias add the dot and a row sum both want (the sum,
// met first from the root up, takes it as its input; the dot then has a second hero on
// the far side and stays alone with its prologue), the sum's elementwise epilogue, and
// an elementwise op whose two consumers (independent, memory-bound) are siblings.
func TestFormPartitionsRule(t *testing.T) {
	b := hlo.NewBuilder("rule")
	x := b.Param(hlo.F32, 256, 512)
	w := b.Param(hlo.F32, 256, 512) // read transposed
	bias := b.Param(hlo.F32, 256, 256)
	wt := b.Transpose(w, 1, 0) // prologue of d: a layout op with one user
	d := b.MatMul(x, wt)       // [256,256]
	e := b.AddOp(d, bias)      // epilogue of d: elementwise, same elements, d's only user
	r := b.ReduceSum(e, 1)     // a second hero: joins no partition of d
	s := b.Sqrt(r)             // epilogue of r
	a := b.Exp(x)              // two memory-bound users: siblings
	n1 := b.Neg(a)             // sibling 1
	n2 := b.Tanh(a)            // sibling 2
	m, err := b.Build(s, n1, n2)
	if err != nil {
		t.Fatal(err)
	}
	got := partitionsOf(m, noSeed)
	want := map[string]string{
		wt.Name: wt.Name, d.Name: wt.Name, // dot and its prologue
		e.Name: e.Name, r.Name: e.Name, s.Name: e.Name, // reduce, its input and its epilogue
		a.Name: a.Name, n1.Name: a.Name, n2.Name: a.Name, // the producer and its siblings
	}
	for name, p := range want {
		if got[name] != p {
			t.Errorf("%s in partition %q, want %q", name, got[name], p)
		}
	}
	if len(got) != len(want) {
		t.Errorf("partitioned %d instructions (%v), want %d", len(got), got, len(want))
	}
}

// TestFormPartitionsSeedFirst: a seed edge joins its ends even when the rule would not
// (two heroes), and the rule then respects the one-hero bound around them: the reduce's
// epilogue no longer joins.
func TestFormPartitionsSeedFirst(t *testing.T) {
	b := hlo.NewBuilder("seed")
	x := b.Param(hlo.F32, 256, 512)
	y := b.Param(hlo.F32, 512, 256)
	d := b.MatMul(x, y)
	r := b.ReduceSum(d, 1) // the rule never joins two heroes
	s := b.Sqrt(r)
	m, err := b.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := partitionsOf(m, noSeed); got[d.Name] != "" {
		t.Errorf("without a seed the dot joined %q, want no partition", got[d.Name])
	}
	got := partitionsOf(m, func(p, x *hlo.Instruction) bool { return p == d && x == r })
	if got[d.Name] == "" || got[d.Name] != got[r.Name] || got[s.Name] != "" {
		t.Errorf("with the seed dot->reduce: partitions %v, want dot and reduce together, sqrt alone", got)
	}
}

// Tolerances of the analytical checks below. The analytical time of a streaming kernel
// is bytes / bandwidth plus a launch, the pipeline's first and last steps and a step
// overhead each (cost.KernelInfo.Analytical); at the sizes here (16 MiB arrays, ~28 us
// each at 600 GB/s) those add under 3%, which the byte ratios are compared within.
const byteRatioTol = 0.03

// siblingModule: a = exp(x) read by two independent ops, a row sum and a negation, both
// outputs. XLA materializes a (two users that do not rejoin through elementwise ops);
// partition fusion computes a in both consumers' kernels.
func siblingModule(t *testing.T) (*hlo.Module, *hlo.Instruction, []*hlo.Instruction) {
	t.Helper()
	b := hlo.NewBuilder("siblings")
	x := b.Param(hlo.F32, 4096, 1024) // S = 16 MiB
	a := b.Exp(x)
	users := []*hlo.Instruction{b.ReduceSum(a, 1), b.Neg(a)}
	m, err := b.Build(users...)
	if err != nil {
		t.Fatal(err)
	}
	return m, a, users
}

// TestPartitionSiblingsFused: fused, the siblings move 3 S (the sum reads x; the
// negation reads x and writes S); as XLA's parts 5 S (a: 2 S, the sum S, the negation
// 2 S; the sum's 16 KiB output is negligible). The feedback keeps the partition fused and
// the program's planned cost falls to 3/5.
func TestPartitionSiblingsFused(t *testing.T) {
	m, a, users := siblingModule(t)
	cfg, st, err := PartitionConfig(m, nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		if e := EdgeName(a, u); !cfg.Fusion[e] {
			t.Errorf("edge %s not fused, want fused (sibling fusion)", e)
		}
	}
	if st.Partitions != 1 || st.Split != 0 {
		t.Errorf("partitions %d, split %d; want 1 partition, not split", st.Partitions, st.Split)
	}
	if r := st.ChosenNs / st.XLANs; math.Abs(r-3.0/5) > byteRatioTol {
		t.Errorf("planned cost partition/xla = %.3f, want 3/5 = %.3f within %.2f", r, 3.0/5, byteRatioTol)
	}
	xla, err := Compile(m, nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	// The verifier runs after every pass (Check).
	p, err := Compile(m, nil, Options{Target: testTarget, Check: true, Fusion: FusionPartition})
	if err != nil {
		t.Fatal(err)
	}
	if len(xla.Kernels) != 3 || len(p.Kernels) != 2 {
		t.Errorf("kernels: xla %d, partition %d; want 3 (exp, sum, neg) and 2 (exp duplicated into each)", len(xla.Kernels), len(p.Kernels))
	}
}

// TestPartitionFeedbackSplits: a = x1 + x2 + x3 + x4 (a chain of three adds) read by a
// row sum and two elementwise ops, all outputs. Fused, the sum's kernel reads the four
// inputs (4 S) and each elementwise kernel reads them and writes its output (5 S): 14 S.
// XLA's parts: a's kernel moves 5 S, the sum S, each elementwise op 2 S: 10 S. The fused
// partition is slower than its parts, so the feedback splits it back into them: the
// result is XLA's program.
func TestPartitionFeedbackSplits(t *testing.T) {
	b := hlo.NewBuilder("split")
	var xs []*hlo.Instruction
	for range 4 {
		xs = append(xs, b.Param(hlo.F32, 4096, 1024))
	}
	a := b.AddOp(b.AddOp(b.AddOp(xs[0], xs[1]), xs[2]), xs[3])
	m, err := b.Build(b.ReduceSum(a, 1), b.Neg(a), b.Tanh(a))
	if err != nil {
		t.Fatal(err)
	}
	cfg, st, err := PartitionConfig(m, nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	if st.Partitions != 1 || st.Split != 1 {
		t.Fatalf("partitions %d, split %d; want 1 partition, split", st.Partitions, st.Split)
	}
	if r := st.FusedNs / st.XLANs; math.Abs(r-14.0/10) > byteRatioTol {
		t.Errorf("planned cost fused/xla = %.3f, want 14/10 = %.3f within %.2f", r, 14.0/10, byteRatioTol)
	}
	xla, err := Compile(m, nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range xla.Config.Fusion {
		if cfg.Fusion[name] != v {
			t.Errorf("edge %s: partition %v, xla %v; want the split partition to be XLA's parts", name, cfg.Fusion[name], v)
		}
	}
	if st.ChosenNs != st.XLANs {
		t.Errorf("planned cost %g after the split, want XLA's %g", st.ChosenNs, st.XLANs)
	}
}

// TestPartitionConfigKeepsEntries: the config's own fusion entries win, and the result
// compiles under Strict (every entry names an edge of the program).
func TestPartitionConfigKeepsEntries(t *testing.T) {
	m, a, users := siblingModule(t)
	in := NewConfig()
	in.Fusion[EdgeName(a, users[0])] = false
	cfg, _, err := PartitionConfig(m, in, opts())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Fusion[EdgeName(a, users[0])] {
		t.Errorf("the config's entry %s=false was overridden", EdgeName(a, users[0]))
	}
	o := opts()
	o.Strict = true
	if _, err := Compile(m, cfg, o); err != nil {
		t.Errorf("strict compile of the partition config: %v", err)
	}
	if len(in.Fusion) != 1 {
		t.Errorf("PartitionConfig modified its input config: %v", in.Fusion)
	}
}

// TestPartitionZooVerifies compiles a training and an inference model of each of two
// families under partition fusion with the verifier after every pass, and checks that
// the planned cost never exceeds XLA's by more than the non-additivity the feedback
// cannot see (kernels are per partition, but the tiles of cheap duplicated producers
// follow their consumers): 1%.
func TestPartitionZooVerifies(t *testing.T) {
	const plannedTol = 0.01
	for _, name := range []string{"mlp_768x3_b8_train", "bert_tiny_s128_b32", "resnet18_b1"} {
		md, err := zoo.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		m, err := md.Build()
		if err != nil {
			t.Fatal(err)
		}
		kc := &KernelCache{}
		cfg, st, err := PartitionConfig(m, nil, Options{Target: testTarget, Kernels: kc})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if st.ChosenNs > st.XLANs*(1+plannedTol) {
			t.Errorf("%s: planned %.0f ns under partition fusion, XLA %.0f ns", name, st.ChosenNs, st.XLANs)
		}
		if _, err := Compile(m, cfg, Options{Target: testTarget, Kernels: kc, Check: true, Strict: true}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestParseFusionRule(t *testing.T) {
	for _, r := range FusionRules() {
		if got, err := ParseFusionRule(string(r)); err != nil || got != r {
			t.Errorf("ParseFusionRule(%q) = %q, %v", r, got, err)
		}
	}
	if _, err := ParseFusionRule("apollo"); err == nil {
		t.Error("ParseFusionRule(apollo) succeeded")
	}
	if _, err := Compile(&hlo.Module{Name: "x"}, nil, Options{Target: testTarget, Fusion: "apollo"}); err == nil {
		t.Error("Compile with fusion rule apollo succeeded")
	}
}
