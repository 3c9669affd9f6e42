package cost

import (
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// TestBoxRuns pins the contiguous runs of boxes checked by hand against the layout: the
// real TPU v3 boxes of TpuGraphs' fusion.232 over f32[32,26,26,192]{3,0,2,1} (physical
// [26,26,32,192], a grid of 26×26×4×2 tiles of 4 KiB) and a bf16 array (16-row tiles).
func TestBoxRuns(t *testing.T) {
	laid := func(s hlo.Shape, minorToMajor ...int) hlo.Shape {
		s.Layout = &hlo.Layout{MinorToMajor: minorToMajor}
		return s
	}
	f32 := laid(hlo.Array(hlo.F32, 32, 26, 26, 192), 3, 0, 2, 1)
	bf16 := laid(hlo.Array(hlo.BF16, 64, 256), 1, 0)
	for _, c := range []struct {
		s    hlo.Shape
		ext  []int // logical
		want float64
		why  string
	}{
		{f32, []int{32, 2, 26, 192}, 1, "bounds 2x26x4x2: whole rows of the two inner dims, one run"},
		{f32, []int{32, 26, 26, 192}, 1, "the whole array"},
		{f32, []int{8, 13, 5, 192}, 65, "bounds 13x5x1x2: one tile row high, a run per tile row"},
		{f32, []int{8, 3, 1, 128}, 3, "bounds 3x1x1x1: half the lanes, a run per tile"},
		{f32, []int{32, 3, 6, 192}, 3, "bounds 3x6x4x2: the 26 inside cut, a run per outer index"},
		{bf16, []int{16, 256}, 1, "one 16-row tile row of a bf16 array, whole lanes"},
		{bf16, []int{32, 128}, 2, "two bf16 tile rows, half the lanes"},
		{laid(hlo.Array(hlo.F32, 4096), 0), []int{1024}, 1, "rank 1"},
	} {
		if got := BoxRuns(c.s, c.ext, v4); got != c.want {
			t.Errorf("%s: BoxRuns(%s, %v) = %g, want %g", c.why, c.s, c.ext, got, c.want)
		}
	}
}

// TestOperandRunsSetBursts: an operand whose window is a box of many runs (Operand.Runs,
// as a replayed TPU box sets it) makes the plan count those runs, at the same bytes; 0
// keeps the flattened window's count.
func TestOperandRunsSetBursts(t *testing.T) {
	b := hlo.NewBuilder("add")
	x, y := b.Param(hlo.F32, 1024, 256), b.Param(hlo.F32, 1024, 256)
	k := kernel(t, b, b.AddOp(x, y))
	tile := Tile{256, 256}
	flat, err := k.PlanTile(tile, v4)
	if err != nil {
		t.Fatal(err)
	}
	c := *k
	c.Inputs = append([]Operand(nil), k.Inputs...)
	c.Inputs[0].Runs = 32
	boxed, err := c.PlanTile(tile, v4)
	if err != nil {
		t.Fatal(err)
	}
	if boxed.InBytesPerStep != flat.InBytesPerStep {
		t.Errorf("runs changed the bytes: %g vs %g", boxed.InBytesPerStep, flat.InBytesPerStep)
	}
	if want := flat.InBurstsPerStep - 1 + 32; boxed.InBurstsPerStep != want {
		t.Errorf("bursts per step %g (flat %g), want %g", boxed.InBurstsPerStep, flat.InBurstsPerStep, want)
	}
}
