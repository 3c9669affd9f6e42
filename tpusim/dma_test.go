package tpusim

import (
	"math"
	"testing"

	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/compiler/hlo"
)

// addKernel is a DMA-bound elementwise kernel of two f32[8192,1024] arrays, analyzed
// for c.
func addKernel(t *testing.T, c Chip) *cost.KernelInfo {
	t.Helper()
	b := hlo.NewBuilder("ew")
	x, y := b.Param(hlo.F32, 8192, 1024), b.Param(hlo.F32, 8192, 1024)
	return compileDefault(t, build(t, b, b.AddOp(x, y)), c, nil).Kernels[0].Info
}

// TestShortRunsCostMorePerByte: the same bytes moved as shorter contiguous runs (the
// window of one input split into 8 or 64 runs, as a strided TPU box is) take longer, and
// without double buffering (DMA and compute serialized) the difference is exactly the
// extra runs times the chip's cost per run (BurstNs) over every step.
func TestShortRunsCostMorePerByte(t *testing.T) {
	c := preset(t, "v3")
	info := addKernel(t, c)
	tile := cost.Tile{256, 1024}
	serial := cost.Flags{Unroll: 1, PipelineDepth: 1}
	timeWith := func(runs float64, f cost.Flags) KernelTime {
		t.Helper()
		k := *info
		k.Inputs = append([]cost.Operand(nil), info.Inputs...)
		k.Inputs[0].Runs = runs
		kt, err := SimulateKernel(&k, tile, f, c)
		if err != nil {
			t.Fatal(err)
		}
		return kt
	}
	prev := timeWith(0, cost.DefaultFlags())
	for _, runs := range []float64{8, 64} {
		kt := timeWith(runs, cost.DefaultFlags())
		if kt.HBMBytes != prev.HBMBytes || !(kt.Ns > prev.Ns) {
			t.Errorf("%g runs per window: %.0f ns for %g bytes, want more than %.0f ns for %g", runs, kt.Ns, kt.HBMBytes, prev.Ns, prev.HBMBytes)
		}
		prev = kt
	}
	one, many := timeWith(1, serial), timeWith(64, serial)
	want := float64(one.Steps) * 63 * c.BurstNs
	if d := many.Ns - one.Ns; math.Abs(d-want) > 1e-6*want {
		t.Errorf("64 runs instead of 1 over %d steps add %.1f ns, want %.1f (63 runs × %g ns per step)", one.Steps, d, want, c.BurstNs)
	}
}

// TestStepCostScalesWithSteps: at equal bytes, a tile with k times the grid steps pays
// the per-step cost (loop overhead, DMA issue) k times: without double buffering, the
// time grows by at least (extra steps) × (step overhead + DMA latency + a run per window).
func TestStepCostScalesWithSteps(t *testing.T) {
	c := preset(t, "v3")
	info := addKernel(t, c)
	serial := cost.Flags{Unroll: 1, PipelineDepth: 1}
	big, err := SimulateKernel(info, cost.Tile{512, 1024}, serial, c)
	if err != nil {
		t.Fatal(err)
	}
	small, err := SimulateKernel(info, cost.Tile{64, 1024}, serial, c)
	if err != nil {
		t.Fatal(err)
	}
	if big.HBMBytes != small.HBMBytes || small.Steps != 8*big.Steps {
		t.Fatalf("bytes %g vs %g, steps %d vs %d", small.HBMBytes, big.HBMBytes, small.Steps, big.Steps)
	}
	perStep := c.StepOverheadCycles*1e9/c.ClockHz + c.DMALatencyNs + 2*c.BurstNs
	if d, floor := small.Ns-big.Ns, float64(small.Steps-big.Steps)*perStep; d < floor {
		t.Errorf("8× the steps add %.0f ns, want >= %.0f (%d extra steps × %.0f ns)", d, floor, small.Steps-big.Steps, perStep)
	}
}
