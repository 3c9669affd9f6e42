package tpusim

import (
	"slices"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/zoo"
)

// TestStagingCalibration pins the simulator's charge for VMEM staging on an elementwise
// chain of two memory-bound kernels (exp, then log, kept apart by the fusion config):
// staged, the intermediate array is neither written nor read back, so the chain moves
// half the HBM bytes; the report says what was avoided and which input was staged, and
// the staged program is faster.
func TestStagingCalibration(t *testing.T) {
	c := preset(t, "v4")
	const rows, cols = 2048, 1024 // f32: 8 MiB, aligned to (8,128) tiles
	const array = rows * cols * 4
	b := hlo.NewBuilder("chain")
	x := b.Param(hlo.F32, rows, cols)
	a := b.Unary(hlo.OpExp, x)
	l := b.Unary(hlo.OpLog, a)
	m := build(t, b, l)
	cfg := compiler.NewConfig()
	cfg.Fusion[a.Name+"->"+l.Name] = false
	report := func(mode compiler.StagingMode) *Report {
		t.Helper()
		p, err := compiler.Compile(m, cfg, compiler.Options{Target: c.Target, Check: true, Staging: mode, Strict: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Kernels) != 2 {
			t.Fatalf("%d kernels, want 2", len(p.Kernels))
		}
		r, err := Simulate(p, c)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	off, on := report(compiler.StagingOff), report(compiler.StagingOn)
	if off.HBMBytes != 4*array || off.StagedBytes != 0 {
		t.Errorf("off: %g HBM bytes (%g staged), want %d (0)", off.HBMBytes, off.StagedBytes, 4*array)
	}
	if on.HBMBytes != 2*array || on.StagedBytes != 2*array {
		t.Errorf("on: %g HBM bytes (%g staged), want half: %d (%d)", on.HBMBytes, on.StagedBytes, 2*array, 2*array)
	}
	prod, cons := on.Kernels[0].KernelReport, on.Kernels[1].KernelReport
	if !prod.StagedOutput || len(prod.StagedInputs) != 0 || prod.StagedBytes != array {
		t.Errorf("producer report %+v: want its output staged, %d bytes avoided", prod, array)
	}
	if !slices.Equal(cons.StagedInputs, []string{prod.Name}) || cons.StagedOutput || cons.StagedBytes != array {
		t.Errorf("consumer report %+v: want input %s staged, %d bytes avoided", cons, prod.Name, array)
	}
	// Memory-bound kernels: the time saved is close to the traffic saved at HBM
	// bandwidth (the kernels keep their compute, latency and launch).
	saved := off.TotalNs - on.TotalNs
	// (HBMBandwidth is per core; v4's megacore splits the blocks over its two cores.)
	atBandwidth := 2 * array / (c.HBMBandwidth * float64(c.DeviceCores())) * 1e9
	const calibTol = 0.25 // DMA latency and compute partly hide the transfer (sim.go's pipeline model)
	if saved <= 0 || saved < (1-calibTol)*atBandwidth || saved > (1+calibTol)*atBandwidth {
		t.Errorf("staging saved %.0f ns, want about %.0f ns (2 x 8 MiB at the device's HBM bandwidth)", saved, atBandwidth)
	}
}

// TestStagingNeverSlower compiles a handful of zoo models (inference and training) with
// staging off, auto and on at default tiles, on a megacore chip (v4: two cores, separate
// VMEMs, so fewer edges stage) and a one-core chip (v5e): staging only removes HBM traffic
// from kernels whose tiles still fit with the staged arrays, so it is never slower, and
// what it removes is exactly what the report says it avoided.
func TestStagingNeverSlower(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles zoo models")
	}
	models := []string{"mlp_1000x4_b64", "bert_tiny_s128_b32", "bert_tiny_s128_b32_train", "lstm_lm_h256_t16_b32_train",
		"dlrm_small_b32_train", "convdraw_s8_c32_r32_b16"}
	for _, chip := range []string{"v4", "v5e"} {
		c := preset(t, chip)
		avoided := 0.0
		for _, name := range models {
			zm, err := zoo.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			m, err := zm.Build()
			if err != nil {
				t.Fatal(err)
			}
			kc := &compiler.KernelCache{}
			times := map[compiler.StagingMode]*Report{}
			for _, mode := range []compiler.StagingMode{compiler.StagingOff, compiler.StagingAuto, compiler.StagingOn} {
				p, err := compiler.Compile(m, nil, compiler.Options{Target: c.Target, Kernels: kc, Staging: mode})
				if err != nil {
					t.Fatalf("%s --staging %s: %v", name, mode, err)
				}
				if times[mode], err = Simulate(p, c); err != nil {
					t.Fatal(err)
				}
			}
			off := times[compiler.StagingOff]
			// Float sums of the same kernel times in another order may differ in the last bits.
			const sumTol = 1e-9
			for _, mode := range []compiler.StagingMode{compiler.StagingAuto, compiler.StagingOn} {
				r := times[mode]
				if r.TotalNs > off.TotalNs*(1+sumTol) {
					t.Errorf("%s on %s: --staging %s takes %.0f ns, off %.0f ns", name, chip, mode, r.TotalNs, off.TotalNs)
				}
				if r.HBMBytes+r.StagedBytes < off.HBMBytes*(1-sumTol) || r.HBMBytes+r.StagedBytes > off.HBMBytes*(1+sumTol) {
					t.Errorf("%s on %s --staging %s: %g moved + %g avoided != %g moved with staging off", name, chip, mode, r.HBMBytes, r.StagedBytes, off.HBMBytes)
				}
			}
			avoided += times[compiler.StagingOn].StagedBytes
		}
		if avoided == 0 {
			t.Errorf("%s: --staging on avoids no traffic on any of %v", chip, models)
		}
	}
}
