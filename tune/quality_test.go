package tune

import (
	"math"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/zoo"
)

// auditModels span the zoo's families at sizes that keep the exhaustive kernel-level search
// of TestDefaultsAreSensible well under a second.
var auditModels = []string{
	"mlp_96x2_b1", "mlp_768x3_b8", "mlp_1000x4_b64", "mlp_96x2_b1_train", "dlrm_small_b32", "dlrm_criteo_b64",
	"rnn_char_h96_t24_b1", "resnet18_b1", "resnet20_cifar_b64", "mobilenet_v1_100_224_b1", "bert_tiny_s128_b32", "gpt2_tiny_s128_b8",
}

// Bounds on how far the compiler's default tile and flags may be from the exhaustive
// kernel-level optimum of the default program. The simulator is the ground truth, so its
// defaults must be the sensible XLA-like ones: every reported tuning speedup must be earned
// against a good default, not manufactured by a bad one. XTAT (PACT 2021) reports
// tile/flag autotuning gains over XLA's defaults of a few percent on average and up to
// ~20% on single programs; our defaults measured 1.00–1.16× per model and 1.06× geomean
// (2026-11, this test's table), so:
const (
	maxModelGap   = 1.25 // one model's optimum may be at most this much faster than its default
	maxGeomeanGap = 1.10 // geometric mean over auditModels
	// minGeomeanGap keeps the opposite failure visible: defaults that are already optimal
	// everywhere would leave the tuner nothing to find and hide a broken search space.
	minGeomeanGap = 1.005
)

// TestDefaultsAreSensible compares, per model, the default program's kernels under their
// default (tile, flags) with the best (tile, flags) of each kernel found exhaustively
// (noiseless simulator), and asserts the gap bounds above.
func TestDefaultsAreSensible(t *testing.T) {
	chip := testChip(t)
	logSum := 0.0
	for _, name := range auditModels {
		m, err := zoo.Resolve(name)
		if err != nil {
			t.Fatal(err)
		}
		p, err := compiler.Compile(m, nil, compiler.Options{Target: chip.Target})
		if err != nil {
			t.Fatal(err)
		}
		var def, best float64
		for _, k := range p.Kernels {
			kt := func(c cost.Planned, f cost.Flags) float64 {
				c, err := c.WithFlags(f)
				if err != nil {
					return math.Inf(1)
				}
				x, err := tpusim.SimulateChoice(c, chip)
				if err != nil {
					return math.Inf(1)
				}
				return x.Ns
			}
			d := kt(k.Choice, k.Choice.Config.Flags)
			if math.IsInf(d, 1) {
				t.Fatalf("%s: kernel %s: the default (%s) does not simulate", name, k.Name, k.Choice.Config)
			}
			b := d
			for i := range p.Space.Tile {
				tc := &p.Space.Tile[i]
				if tc.Key != k.Key {
					continue
				}
				for _, o := range tc.Planned() {
					for _, f := range o.FlagOptions() {
						b = math.Min(b, kt(o, f))
					}
				}
			}
			def += d
			best += b
		}
		gap := def / best
		logSum += math.Log(gap)
		t.Logf("%-26s %3d kernels  default %10.0f ns  kernel-level optimum %.3f× faster", name, len(p.Kernels), def, gap)
		if gap > maxModelGap {
			t.Errorf("%s: the exhaustive kernel-level optimum is %.3f× faster than the default compile (bound %.2f×): the default tile/flags heuristics are not sensible here", name, gap, maxModelGap)
		}
	}
	geo := math.Exp(logSum / float64(len(auditModels)))
	if geo > maxGeomeanGap || geo < minGeomeanGap {
		t.Errorf("geomean default-to-optimum gap %.4f×, want within [%.3f, %.2f]", geo, minGeomeanGap, maxGeomeanGap)
	}
}
