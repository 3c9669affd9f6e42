package tune

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/zoo"
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
	faster := func(a, b float64) bool { return a*(1+c.Margin) < b }
	// With a store, the start may differ from the default compile, which is then measured.
	withDefault := c.DefaultNs != 0 || r.StartNs != r.DefaultNs
	progs := 2
	if r.StartNs != r.DefaultNs && c.DefaultNs == 0 {
		t.Errorf("%s: start %.1f ns differs from the default %.1f ns, but the confirmation did not measure the default: %+v", r.Program, r.StartNs, r.DefaultNs, c)
	}
	if withDefault {
		progs = 3 // at most: the winner may be the start or the default
	}
	switch c.Outcome {
	case KeptWinner:
		if c.Measurements < 2 || c.Measurements > progs || !faster(c.WinnerNs, c.StartNs) || (withDefault && !faster(c.WinnerNs, c.DefaultNs)) {
			t.Errorf("%s: kept the winner on %+v", r.Program, c)
		}
	case KeptStart:
		if c.Measurements < 2 || c.Measurements > progs || r.TunedNs != r.StartNs || faster(c.WinnerNs, c.StartNs) || (withDefault && !faster(c.StartNs, c.DefaultNs)) {
			t.Errorf("%s: kept the start on %+v (tuned %.1f, start %.1f)", r.Program, c, r.TunedNs, r.StartNs)
		}
	case KeptDefault:
		if !withDefault || c.Measurements < 2 || c.Measurements > 3 || r.TunedNs != r.DefaultNs || faster(c.StartNs, c.DefaultNs) {
			t.Errorf("%s: kept the default on %+v (tuned %.1f, start %.1f, default %.1f)", r.Program, c, r.TunedNs, r.StartNs, r.DefaultNs)
		}
	case NoChange:
		if c.Measurements != 0 || r.TunedNs != r.StartNs || withDefault {
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

// TestNeverSlowerThanDefaultWithStore: with a store seeded by another program, the
// store-repaired start can be slower than the default compile; the result must still never
// be slower than the default (noiseless). The reported case: `tune bert_mini_s128_b16_train
// --budget 40 --noise 0.3 --runs 1 --store s.db`, then `tune bert_small_s128_b8` with the
// same flags and store handed back 0.976x (the confirmation compared with the store's start
// only).
func TestNeverSlowerThanDefaultWithStore(t *testing.T) {
	chip := testChip(t)
	seeder, err := zoo.Resolve("bert_mini_s128_b16_train")
	if err != nil {
		t.Fatal(err)
	}
	target, err := zoo.Resolve("bert_small_s128_b8")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "s.db")
	seed, err := OpenStore(path, "v4", tpusim.Version)
	if err != nil {
		t.Fatal(err)
	}
	mustRun(t, seeder, Options{Chip: chip, Budget: 40, Seed: 1, Noise: 0.3, Runs: 1, Store: seed})
	if err := seed.Close(); err != nil { // checkpoints the WAL into the file
		t.Fatal(err)
	}
	snapshot, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sawSlowStart := false
	for _, st := range Strategies() {
		for _, noise := range []float64{0, 0.3} {
			// Each run starts from the seeded store alone (runs record what they find).
			p := filepath.Join(t.TempDir(), "s.db")
			if err := os.WriteFile(p, snapshot, 0o644); err != nil {
				t.Fatal(err)
			}
			r := mustRun(t, target, forStrategy(st, Options{Chip: chip, Budget: 40, Seed: 1, Noise: noise, Runs: 1, Store: openStore(t, p, "v4")}))
			if r.StartNs > r.DefaultNs {
				sawSlowStart = true
			}
			if r.TunedNs > r.DefaultNs {
				t.Errorf("%s noise %g: tuned %.1f ns slower than default %.1f ns (store start %.1f ns, confirmation %+v)",
					st, noise, r.TunedNs, r.DefaultNs, r.StartNs, r.Confirmation)
			}
			checkConfirmation(t, r)
		}
	}
	if !sawSlowStart {
		t.Error("the seeded store no longer makes a start slower than the default: the case does not test the confirmation against the default")
	}
}

// TestNothingToTune: a program that compiles to no kernels (the reported case: a module
// whose root is a parameter; aliased to the output here, since an unaliased parameter
// output gets the copy kernel XLA's copy insertion adds) has nothing to tune. The report is the default compile, with
// no measurements, default_ns = tuned_ns and speedup 1, never NaN, so that --json encodes
// it; with a store too, and in a batch (whose geometric mean it must not poison).
func TestNothingToTune(t *testing.T) {
	m, err := hlo.Parse("t.hlo", []byte("HloModule m, input_output_alias={ {}: (0, {}, may-alias) }\nENTRY e {\n  ROOT p = f32[4] parameter(0)\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	chip := testChip(t)
	for _, st := range Strategies() {
		for _, store := range []bool{false, true} {
			o := forStrategy(st, Options{Chip: chip, Budget: 3, Seed: 1, Noise: 0.02})
			if store {
				o.Store = openStore(t, filepath.Join(t.TempDir(), "s.db"), "v4")
			}
			r := mustRun(t, m, o)
			if !r.NothingToTune || r.Speedup != 1 || r.DefaultNs != r.TunedNs || r.Measurements != 0 || r.HardwareS != 0 ||
				r.Confirmation.Outcome != NoChange || r.Config == nil {
				t.Errorf("%s store %v: %+v", st, store, r)
			}
			if _, err := json.Marshal(r); err != nil {
				t.Errorf("%s store %v: --json fails: %v", st, store, err)
			}
		}
	}
	path := filepath.Join(t.TempDir(), "t.hlo")
	if err := os.WriteFile(path, []byte("HloModule m, input_output_alias={ {}: (0, {}, may-alias) }\nENTRY e {\n  ROOT p = f32[4] parameter(0)\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := RunMany(t.Context(), []string{path, "mlp_96x2_b1"}, Options{Chip: chip, Budget: 5, Seed: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []float64{b.MeanSpeedup, b.GeomeanSpeedup, b.MaxSpeedup} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 1 {
			t.Errorf("batch summary %+v", b)
		}
	}
	if _, err := json.Marshal(b); err != nil {
		t.Errorf("batch --json fails: %v", err)
	}
}
