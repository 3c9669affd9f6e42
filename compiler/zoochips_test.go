package compiler_test

import (
	"math/rand/v2"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/internal/stablehash"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/zoo"
)

// randomConfigsPerChip is how many random configs of every zoo model each chip preset
// compiles (beside the default): a small seeded sample, so that the test stays fast (all
// four presets and 117 models in well under a minute on 2 cores); which configs are drawn
// changes with zooChipsSeed.
const randomConfigsPerChip = 2

// raceZooStride: under the race detector (about ten times slower) every raceZooStride-th
// zoo model is compiled, which keeps the concurrent kernel cache exercised at a tenth of
// the cost; the ordinary run covers the whole zoo.
const raceZooStride = 10

// zooChipsSeed seeds the sample of random configs.
const zooChipsSeed = 31

// TestEveryZooModelCompilesOnEveryChip compiles every zoo model on every chip preset
// (v2, v3, v4, v5e) at its default config and at a seeded sample of random ones — layouts
// and fusion decisions drawn as dataset generation's variants draw them
// (compiler.Space.Perturb, a share of decisions flipped from a few percent to all): the
// compiler never refuses a program of the zoo (issue 31: a random layout of
// ssdlite320_coco_b16_train had no tile that fit v4's VMEM, and gen stopped there).
func TestEveryZooModelCompilesOnEveryChip(t *testing.T) {
	var targets []tpusim.Chip
	for _, name := range tpusim.PresetNames() {
		c, err := tpusim.Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, c)
	}
	if len(targets) < 4 {
		t.Fatalf("presets %v, want v2, v3, v4 and v5e at least", tpusim.PresetNames())
	}
	for i, m := range zoo.All() {
		if raceEnabled && i%raceZooStride != 0 {
			continue
		}
		t.Run(m.Name, func(t *testing.T) {
			t.Parallel()
			mod, err := m.Build()
			if err != nil {
				t.Fatal(err)
			}
			for _, chip := range targets {
				// One cache per model and chip: the random configs re-form many of the
				// default's kernels (and it memoizes the passes before layout).
				cache := &compiler.KernelCache{}
				o := compiler.Options{Target: chip.Target, Kernels: cache}
				def, err := compiler.Compile(mod, nil, o)
				if err != nil {
					t.Fatalf("%s, default config: %v", chip.Name, err)
				}
				h := stablehash.New()
				h.Label(m.Name)
				h.Label(chip.Name)
				r := rand.New(rand.NewPCG(zooChipsSeed, h.Sum64()))
				for i := range randomConfigsPerChip {
					p := 0.05 + 0.95*r.Float64()
					cfg := def.Space.Perturb(nil, []compiler.Kind{compiler.KindLayout, compiler.KindFusion}, p, r)
					if _, err := compiler.Compile(mod, cfg, o); err != nil {
						t.Errorf("%s, random config %d (%.0f%% of decisions redrawn): %v", chip.Name, i, 100*p, err)
					}
				}
				cache.Release(mod)
			}
		})
	}
}
