package tune

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/compiler/zoo"
	"github.com/tpucost/tpucost/tpusim"
)

// qualityModels are the zoo models of the quality study.
var qualityModels = []string{
	"mlp_96x2_b1", "mlp_768x3_b8", "mlp_1000x4_b64", "mlp_96x2_b1_train", "dlrm_small_b32", "dlrm_criteo_b64",
	"rnn_char_h96_t24_b1", "resnet18_b1", "resnet20_cifar_b64", "mobilenet_v1_100_224_b1", "bert_tiny_s128_b32", "gpt2_tiny_s128_b8",
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// kernelOracle is the optimum of the kernel-level space of p: every kernel with its best
// tile and flags (exhaustive, noiseless).
func kernelOracle(t testing.TB, p *compiler.Program, chip tpusim.Chip) float64 {
	total := 0.0
	for _, k := range p.Kernels {
		best := math.Inf(1)
		for _, tc := range p.Space.Tile {
			if tc.Key != k.Key {
				continue
			}
			for _, tile := range tc.Options {
				for _, f := range compiler.FlagOptions(k.Info, tile, chip.Target) {
					if kt, err := tpusim.SimulateKernel(k.Info, tile, f, chip); err == nil {
						best = math.Min(best, kt.Ns)
					}
				}
			}
		}
		total += best
	}
	return total
}

// TestQuality is the quality study (TPUCOST_TUNE_QUALITY=1; TUNE_MODELS, TUNE_STRATEGIES,
// TUNE_BUDGET, TUNE_NOISE, TUNE_SHARE, TUNE_SEED override; TUNE_FAKE_MODEL=E guides the
// search by a stand-in model, the simulator with a deterministic +-E error): per model and strategy at equal
// budget, default_ns, tuned_ns, speedup, measurements, hardware_s; the kernel-level
// optimum of the default program; mean and max speedup per strategy.
func TestQuality(t *testing.T) {
	if os.Getenv("TPUCOST_TUNE_QUALITY") == "" {
		t.Skip("set TPUCOST_TUNE_QUALITY=1 to run the quality study")
	}
	models := strings.Split(envOr("TUNE_MODELS", strings.Join(qualityModels, ",")), ",")
	var strats []Strategy
	for _, s := range strings.Split(envOr("TUNE_STRATEGIES", "xtat,exhaustive,random,sa,evo,mbo"), ",") {
		st, err := ParseStrategy(s)
		if err != nil {
			t.Fatal(err)
		}
		strats = append(strats, st)
	}
	budget, _ := strconv.Atoi(envOr("TUNE_BUDGET", "300"))
	noise, _ := strconv.ParseFloat(envOr("TUNE_NOISE", "0.02"), 64)
	share, _ := strconv.ParseFloat(envOr("TUNE_SHARE", "0"), 64)
	seed, _ := strconv.ParseInt(envOr("TUNE_SEED", "1"), 10, 64)
	fake, _ := strconv.ParseFloat(envOr("TUNE_FAKE_MODEL", "-1"), 64)
	chip := testChip(t)
	sum := map[Strategy][]float64{}
	fmt.Printf("budget %d, noise %g, seed %d, chip %s, stand-in model error %g\n\n", budget, noise, seed, chip.Name, fake)
	fmt.Println("| model | kernels | default_ns | kernel-level optimum (speedup) | strategy | tuned_ns | speedup | measurements (prog+kern) | hardware_s | wall_s |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, name := range models {
		m, err := zoo.Resolve(name)
		if err != nil {
			t.Fatal(err)
		}
		def, err := compiler.Compile(m, nil, compiler.Options{Target: chip.Target})
		if err != nil {
			t.Fatal(err)
		}
		orc := kernelOracle(t, def, chip)
		for _, st := range strats {
			o := Options{Chip: chip, Strategy: st, Budget: budget, Seed: seed, Noise: noise, GraphShare: share}
			if fake >= 0 { // a stand-in learned model: the simulator with +-fake error per config
				o.GraphModel, o.KernelModel = simModel{chip: chip, err: fake}, simModel{chip: chip, err: fake, relative: true}
			}
			r, err := Run(context.Background(), m, o)
			if err != nil {
				t.Fatal(err)
			}
			sum[st] = append(sum[st], r.Speedup)
			fmt.Printf("| %s | %d | %.0f | %.0f (%.3f) | %s | %.0f | %.3f | %d (%d+%d) | %.0f | %.1f |\n", name, len(def.Kernels), r.DefaultNs, orc, r.DefaultNs/orc,
				st, r.TunedNs, r.Speedup, r.Measurements, r.ProgramMeasures, r.KernelMeasures, r.HardwareS, r.WallS)
		}
	}
	fmt.Println("\n| strategy | mean speedup | geomean | max | min |")
	fmt.Println("|---|---|---|---|---|")
	for _, st := range strats {
		mean, lg, mx, mn := 0.0, 0.0, 0.0, math.Inf(1)
		for _, s := range sum[st] {
			mean += s / float64(len(sum[st]))
			lg += math.Log(s) / float64(len(sum[st]))
			mx, mn = math.Max(mx, s), math.Min(mn, s)
		}
		fmt.Printf("| %s | %.3f | %.3f | %.3f | %.3f |\n", st, mean, math.Exp(lg), mx, mn)
	}
}

var _ = cost.DefaultFlags

// TestDefaultsAudit checks the compiler's kernel-level defaults against the exhaustive
// optimum on the default program (TPUCOST_TUNE_QUALITY=1): per model, the speedup of the
// best flags for the default tile, of the best tile (with its default flags), of the
// best (tile, flags); and over all kernels, how often the default tile and flags are the
// best, and which flags win.
func TestDefaultsAudit(t *testing.T) {
	if os.Getenv("TPUCOST_TUNE_QUALITY") == "" {
		t.Skip("set TPUCOST_TUNE_QUALITY=1 to run the defaults audit")
	}
	models := strings.Split(envOr("TUNE_MODELS", strings.Join(qualityModels, ",")), ",")
	chip := testChip(t)
	wins := map[string]int{}
	var kernels, defFlagsBest, defTileBest, defBothBest int
	fmt.Println("| model | kernels | default_ns | best flags | best tile | best tile+flags |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, name := range models {
		m, err := zoo.Resolve(name)
		if err != nil {
			t.Fatal(err)
		}
		p, err := compiler.Compile(m, nil, compiler.Options{Target: chip.Target})
		if err != nil {
			t.Fatal(err)
		}
		var def, bf, bt, bb float64
		for _, k := range p.Kernels {
			kt := func(tile cost.Tile, f cost.Flags) float64 {
				x, err := tpusim.SimulateKernel(k.Info, tile, f, chip)
				if err != nil {
					return math.Inf(1)
				}
				return x.Ns
			}
			d := kt(k.Tile, k.Flags)
			def += d
			kernels++
			flagsBest := d
			for _, f := range compiler.FlagOptions(k.Info, k.Tile, chip.Target) {
				flagsBest = math.Min(flagsBest, kt(k.Tile, f))
			}
			bf += flagsBest
			if flagsBest == d {
				defFlagsBest++
			}
			tileBest, both, bothF := d, d, k.Flags
			for _, tc := range p.Space.Tile {
				if tc.Key != k.Key {
					continue
				}
				for _, tile := range tc.Options {
					if len(compiler.FlagOptions(k.Info, tile, chip.Target)) > 0 {
						tileBest = math.Min(tileBest, kt(tile, compiler.DefaultFlagsFor(k.Info, tile, chip.Target)))
					}
					for _, f := range compiler.FlagOptions(k.Info, tile, chip.Target) {
						if v := kt(tile, f); v < both {
							both, bothF = v, f
						}
					}
				}
			}
			bt += tileBest
			bb += both
			if tileBest == d {
				defTileBest++
			}
			if both == d {
				defBothBest++
			}
			wins[bothF.String()]++
		}
		fmt.Printf("| %s | %d | %.0f | %.3f | %.3f | %.3f |\n", name, len(p.Kernels), def, def/bf, def/bt, def/bb)
	}
	fmt.Printf("\nkernels: %d; default flags best for the default tile: %d; default tile best (default flags): %d; default (tile, flags) best: %d\n",
		kernels, defFlagsBest, defTileBest, defBothBest)
	fmt.Printf("flags of the best (tile, flags): %v\n", wins)
}
