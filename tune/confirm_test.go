package tune

import (
	"math"
	"testing"

	"github.com/tpucost/tpucost/compiler/zoo"
)

// TestNeverSlowerThanStart: whatever the strategy, seed and noise, the tuned program is
// never slower than the default (noiseless simulator times; no store, so the start is the
// default compile). Without the final confirmation, sa/evo/random under noise hand back
// programs slower than the default here.
func TestNeverSlowerThanStart(t *testing.T) {
	chip := testChip(t)
	models := []string{"mlp_96x2_b1", "dlrm_small_b32", "bert_tiny_s128_b32"}
	noises := []float64{0, 0.02, 0.3} // off, the CLI default, high
	for _, name := range models {
		m, err := zoo.Resolve(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range Strategies() {
			for _, noise := range noises {
				for seed := int64(1); seed <= 2; seed++ {
					r := mustRun(t, m, forStrategy(st, Options{Chip: chip, Budget: 16, Seed: seed, Noise: noise}))
					if r.TunedNs > r.DefaultNs {
						t.Errorf("%s %s noise %g seed %d: tuned %.1f ns slower than default %.1f ns (confirmation %+v)",
							name, st, noise, seed, r.TunedNs, r.DefaultNs, r.Confirmation)
					}
					checkConfirmation(t, r)
				}
			}
		}
	}
}

// checkConfirmation checks the report's confirmation is consistent with its result.
func checkConfirmation(t *testing.T, r *Report) {
	t.Helper()
	c := r.Confirmation
	switch c.Outcome {
	case KeptWinner:
		if c.Measurements != 2 || !(c.WinnerNs*(1+c.Margin) < c.StartNs) {
			t.Errorf("%s: kept the winner on %+v", r.Program, c)
		}
	case KeptStart:
		if c.Measurements != 2 || r.TunedNs != r.StartNs || c.WinnerNs*(1+c.Margin) < c.StartNs {
			t.Errorf("%s: kept the start on %+v (tuned %.1f, start %.1f)", r.Program, c, r.TunedNs, r.StartNs)
		}
	case NoChange:
		if c.Measurements != 0 || r.TunedNs != r.StartNs {
			t.Errorf("%s: no change, but %+v (tuned %.1f, start %.1f)", r.Program, c, r.TunedNs, r.StartNs)
		}
	default:
		t.Errorf("%s: confirmation outcome %q", r.Program, c.Outcome)
	}
	if c.RunsEach != confirmRuns(3) || (c.Measurements > 0) != (c.HardwareS > 0) {
		t.Errorf("%s: confirmation %+v", r.Program, c)
	}
}

// TestConfirmationRegressionCase is the reported case: `tune bert_base_s384_b1 --strategy
// sa --budget 60 --seed 1` (CLI defaults noise 0.02, 3 runs) handed back a program 0.3%
// slower than the default. Whatever the search finds on today's programs, the result is
// never slower than the default, a kept winner is truly (noiselessly) faster than the
// start, and the confirmation's cost is in the hardware time but not in the budget.
// (Until the simplification passes, this case ended kept-start; since, sa finds a real
// 1.3% win here.)
func TestConfirmationRegressionCase(t *testing.T) {
	m, err := zoo.Resolve("bert_base_s384_b1")
	if err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, m, Options{Chip: testChip(t), Strategy: Annealing, Budget: 60, Seed: 1, Noise: 0.02, Runs: 3})
	if r.TunedNs > r.DefaultNs {
		t.Errorf("tuned %.1f ns slower than default %.1f ns", r.TunedNs, r.DefaultNs)
	}
	checkConfirmation(t, r)
	if r.Confirmation.Outcome == KeptWinner && !(r.TunedNs < r.StartNs) {
		t.Errorf("kept a winner that is not faster: tuned %.1f ns, start %.1f ns", r.TunedNs, r.StartNs)
	}
	if r.Measurements != 60 {
		t.Errorf("%d measurements, want the budget, 60 (the confirmation is not counted)", r.Measurements)
	}
	if r.HardwareS <= r.Confirmation.HardwareS || r.Confirmation.HardwareS <= 0 {
		t.Errorf("hardware %.1f s, confirmation %.1f s", r.HardwareS, r.Confirmation.HardwareS)
	}
}

// TestConfirmationKeepsRealWins: a search that finds a faster program keeps it: with
// noise off (the comparison is exact), and with noise when the win (15% on dlrm_small_b32
// at this budget) is larger than the margin.
func TestConfirmationKeepsRealWins(t *testing.T) {
	m, err := zoo.Resolve("dlrm_small_b32")
	if err != nil {
		t.Fatal(err)
	}
	chip := testChip(t)
	for _, noise := range []float64{0, 0.02} {
		r := mustRun(t, m, Options{Chip: chip, Budget: 40, Seed: 1, Noise: noise})
		if r.Confirmation.Outcome != KeptWinner || r.TunedNs >= r.DefaultNs {
			t.Errorf("noise %g: confirmation %+v, tuned %.1f ns, default %.1f ns", noise, r.Confirmation, r.TunedNs, r.DefaultNs)
		}
	}
}

// TestConfirmMargin: the margin c·σ makes the chance that the start's minimum over n runs
// exceeds its true time by more than the margin, (2(1−Φ(c)))^n = erfc(c/√2)^n, equal to
// confirmFalseKeep.
func TestConfirmMargin(t *testing.T) {
	const relTol = 1e-9 // float64 round trip through Erfinv and Erfc
	for _, n := range []int{10, 15, 30} {
		sigma := 0.02
		c := confirmMargin(sigma, n) / sigma
		if got := math.Pow(math.Erfc(c/math.Sqrt2), float64(n)); math.Abs(got-confirmFalseKeep) > relTol*confirmFalseKeep {
			t.Errorf("n %d: c %.4f gives a false-keep probability %.3g, want %g", n, c, got, confirmFalseKeep)
		}
	}
	if confirmMargin(0, 10) != 0 {
		t.Error("noise off: the margin must be 0")
	}
	if confirmRuns(1) != 30 || confirmRuns(5) != 50 {
		t.Errorf("confirmRuns: %d, %d", confirmRuns(1), confirmRuns(5))
	}
}
