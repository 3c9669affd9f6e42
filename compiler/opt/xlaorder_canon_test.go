package opt

import (
	"slices"
	"testing"
)

// TestXLAPipelineWithoutCanonicalization: the yardstick pipeline is XLAPipeline with
// exactly the canonicalizers removed, every other pass in its place, and every
// canonicalizer is a pass of All() that XLAPipeline runs.
func TestXLAPipelineWithoutCanonicalization(t *testing.T) {
	names := func(st []Stage) [][]string {
		var out [][]string
		for _, s := range st {
			var ns []string
			for _, p := range s.Passes {
				ns = append(ns, p.Name)
			}
			out = append(out, ns)
		}
		return out
	}
	full, without := names(XLAPipeline()), names(XLAPipelineWithoutCanonicalization())
	if len(full) != len(without) {
		t.Fatalf("%d stages, want %d", len(without), len(full))
	}
	all := Names()
	ran := map[string]bool{}
	for i := range full {
		want := slices.DeleteFunc(slices.Clone(full[i]), func(n string) bool { return slices.Contains(Canonicalizers(), n) })
		if !slices.Equal(without[i], want) {
			t.Errorf("stage %d: %v, want %v", i, without[i], want)
		}
		for _, n := range full[i] {
			ran[n] = true
		}
	}
	for _, c := range Canonicalizers() {
		if !slices.Contains(all, c) || !ran[c] {
			t.Errorf("canonicalizer %s: in All() %v, run by XLAPipeline %v", c, slices.Contains(all, c), ran[c])
		}
	}
}

// TestCanonicalizationGrowsEinsumDots: a 3-D dense layer as JAX emits it (a dot_general
// of [B,S,D] with a [D,O] kernel, two non-contracting dims on the left) is canonicalized
// by XLA's order into reshape, 2-D dot, reshape; without the canonicalizers it stays one
// dot. This is the gap the gym's no-canonicalization yardstick measures.
func TestCanonicalizationGrowsEinsumDots(t *testing.T) {
	const src = `HloModule dense3d

ENTRY main {
  x = f32[4,8,16] parameter(0)
  w = f32[16,32] parameter(1)
  ROOT d = f32[4,8,32] dot(x, w), lhs_contracting_dims={2}, rhs_contracting_dims={0}
}
`
	full, without := parseHLO(t, src), parseHLO(t, src)
	if _, err := RunStages(full, XLAPipeline(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := RunStages(without, XLAPipelineWithoutCanonicalization(), nil); err != nil {
		t.Fatal(err)
	}
	// XLA's DotDecomposer: reshape the lhs to [32,16], dot, reshape back ([4,8,32]).
	const wantFull, wantWithout = 3, 1
	if OpCount(full) != wantFull || OpCount(without) != wantWithout {
		t.Fatalf("ops: XLA's order %d (want %d), without canonicalization %d (want %d)\n%s", OpCount(full), wantFull, OpCount(without), wantWithout, full)
	}
}
