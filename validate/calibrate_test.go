package validate

import (
	"math"
	"testing"
)

// TestCalibrateRecoversPerturbedConstants: measurements made by the simulator itself on
// a preset whose constants were perturbed are fitted back from the unperturbed preset.
// The real files' kernels and configurations are used, only their times are synthetic.
func TestCalibrateRecoversPerturbedConstants(t *testing.T) {
	base := v3(t)
	r, err := Validate([]string{opFile}, Options{Chip: base})
	if err != nil {
		t.Fatal(err)
	}
	truth := base.Constants()
	truth.StepOverheadCycles *= 2
	truth.DMALatencyNs *= 0.6
	truth.BurstNs *= 0.5
	truth.MXUFillCycles *= 1.5
	perturbed := base.WithConstants(truth)
	ks := make([]TileKernel, 0, len(r.Tile.Replayed))
	for _, k := range r.Tile.Replayed {
		times, err := k.Resimulate(perturbed)
		if err != nil {
			t.Fatal(err)
		}
		k.Runs = append([]TileRun(nil), k.Runs...)
		for i := range k.Runs {
			k.Runs[i].MeasuredNs = times[i]
		}
		ks = append(ks, k)
	}
	rep, err := CalibrateKernels(ks, CalibrateOptions{Base: base, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !(rep.LossAfter < rep.LossBefore/20) {
		t.Errorf("loss %.5f -> %.5f: the fit should remove most of it", rep.LossBefore, rep.LossAfter)
	}
	if rep.Heldout.After.KendallTau < rep.Heldout.Before.KendallTau {
		t.Errorf("held-out tau %.3f -> %.3f", rep.Heldout.Before.KendallTau, rep.Heldout.After.KendallTau)
	}
	// What these kernels' times identify comes back within recoverTolerance (relative):
	// the burst cost, the MXU fill, the launch, and the per-step latency of a
	// double-buffered pipeline, step overhead plus DMA latency (the two trade off one for
	// one on latency-bound steps, so each alone is not identified). The tolerance covers
	// the optimizer's stopping rule and the flat directions the constants leave.
	const recoverTolerance = 0.10
	got := rep.File.Constants
	cyc := 1e9 / base.ClockHz
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"burst_ns", got.BurstNs, truth.BurstNs},
		{"mxu_fill_cycles", got.MXUFillCycles, truth.MXUFillCycles},
		{"launch_ns", got.LaunchNs, truth.LaunchNs},
		{"step overhead + DMA latency (ns)", got.StepOverheadCycles*cyc + got.DMALatencyNs, truth.StepOverheadCycles*cyc + truth.DMALatencyNs},
	} {
		if math.Abs(c.got-c.want) > recoverTolerance*c.want {
			t.Errorf("%s: fitted %.4g, truth %.4g (tolerance %.0f%%)", c.name, c.got, c.want, 100*recoverTolerance)
		}
	}
}

// TestCalibrateRealRuns: on the real files, calibration does not lose held-out fidelity.
func TestCalibrateRealRuns(t *testing.T) {
	rep, err := Calibrate([]string{opFile}, CalibrateOptions{Base: v3(t), Seed: 1, Prior: PriorWeight})
	if err != nil {
		t.Fatal(err)
	}
	if rep.LossAfter > rep.LossBefore {
		t.Errorf("fit loss %.4f -> %.4f", rep.LossBefore, rep.LossAfter)
	}
	// Held out, the fitted preset picks no worse and fits the curves' shape no worse; τ
	// may move by noise: heldoutTauTolerance is three swapped pairs on each of the
	// 16-configuration kernels (one swap moves their τ by 2/120).
	const heldoutTauTolerance = 0.05
	h := rep.Heldout
	if h.After.KendallTau < h.Before.KendallTau-heldoutTauTolerance || h.After.Top1Slowdown > h.Before.Top1Slowdown || h.After.MAPEScaled > h.Before.MAPEScaled {
		t.Errorf("held out: before %+v, after %+v", h.Before, h.After)
	}
	if len(rep.Fit.Kernels)+len(rep.Heldout.Kernels) != 8 {
		t.Errorf("fit %v held out %v: want the 8 scored kernels", rep.Fit.Kernels, rep.Heldout.Kernels)
	}
	if _, err := rep.File.Chip(); err != nil {
		t.Errorf("fitted preset does not load: %v", err)
	}
}
