package zoo

import (
	"slices"
	"testing"
	"time"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// syntheticSizeTol is the allowed relative deviation of Synthetic's instruction count from
// the request (the contract says within 5%; the generator is exact, which this also
// accepts).
const syntheticSizeTol = 0.05

func TestSyntheticSizes(t *testing.T) {
	type size struct {
		nodes int
		seeds int64
	}
	sizes := []size{{2, 3}, {50, 3}, {199, 3}, {1000, 3}, {10000, 3}, {100000, 1}}
	if testing.Short() {
		sizes = sizes[:5]
	}
	for _, sz := range sizes {
		nodes := sz.nodes
		for seed := int64(0); seed < sz.seeds; seed++ {
			m, err := Synthetic(nodes, seed)
			if err != nil {
				t.Fatalf("Synthetic(%d, %d): %v", nodes, seed, err)
			}
			got := m.InstructionCount()
			if d := float64(got-nodes) / float64(nodes); d > syntheticSizeTol || d < -syntheticSizeTol {
				t.Errorf("Synthetic(%d, %d) has %d instructions", nodes, seed, got)
			}
			if err := hlo.Verify(m); err != nil {
				t.Errorf("Synthetic(%d, %d): %v", nodes, seed, err)
			}
		}
	}
	if _, err := Synthetic(1, 0); err == nil {
		t.Error("Synthetic(1) succeeded")
	}
}

func TestSyntheticVarietyAndDeterminism(t *testing.T) {
	a, err := Synthetic(20000, 7)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Synthetic(20000, 7)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(signature(a), signature(b)) {
		t.Error("Synthetic is not deterministic")
	}
	c, err := Synthetic(20000, 8)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(signature(a), signature(c)) {
		t.Error("different seeds gave the same module")
	}
	ops := map[hlo.Opcode]int{}
	widths := map[int]bool{}
	for _, in := range a.Entry.Instructions {
		ops[in.Opcode]++
		if in.Opcode == hlo.OpDot {
			widths[in.Shape.Dims[in.Shape.Rank()-1]] = true
		}
	}
	for _, op := range []hlo.Opcode{hlo.OpDot, hlo.OpReduce, hlo.OpBroadcast, hlo.OpTranspose, hlo.OpReshape, hlo.OpExp, hlo.OpAdd} {
		if ops[op] == 0 {
			t.Errorf("no %s in a synthetic module", op)
		}
	}
	if len(widths) < 4 {
		t.Errorf("only %d distinct dot widths", len(widths))
	}
}

func TestSyntheticLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("large build")
	}
	start := time.Now()
	m, err := Synthetic(500000, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.InstructionCount(); got != 500000 {
		t.Errorf("%d instructions, want 500000", got)
	}
	t.Logf("Synthetic(500000) built and verified in %v", time.Since(start))
}

func BenchmarkSynthetic500k(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Synthetic(500000, 1); err != nil {
			b.Fatal(err)
		}
	}
}
