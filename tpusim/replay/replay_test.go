package replay

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/tpucost/tpucost/dataset/tpugraphs"
	"github.com/tpucost/tpucost/tpusim"
)

// The real TpuGraphs tuning files (TPU v3 measurements), shared with dataset/tpugraphs.
var (
	opFile     = filepath.Join("..", "..", "dataset", "tpugraphs", "testdata", "op_tuning_data.pb")
	layoutFile = filepath.Join("..", "..", "dataset", "tpugraphs", "testdata", "module_tuning_data_layout.pb")
)

func v3(t *testing.T) tpusim.Chip {
	t.Helper()
	c, err := tpusim.Preset("v3")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestMapTileHandChecked pins the bound mapping on runs checked by hand against each
// module's shapes (the text dump of op_tuning_data.pb): bounds count elements in major
// dimensions and (8,128) tiles in the two minor ones, in the tensor's layout order.
func TestMapTileHandChecked(t *testing.T) {
	mts, err := tpugraphs.ReadTuningFile(opFile)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]tpugraphs.ModuleTuning{}
	for _, mt := range mts {
		byName[mt.Module.Name] = mt
	}
	for _, c := range []struct {
		module string
		run    int
		want   []int
		approx string
		why    string
	}{
		// f32[32,26,26,192]{3,0,2,1} reduced over {0,1,2}: physical [26,26,32,192];
		// output_bounds 2,26,4,2 = 2 x 26 x 4·8 rows x 2·128 lanes (capped at 192) ->
		// reduce extent 2·26·32 = 1664, kept 192 (tile 256: whole, aligned).
		{"fusion.232", 0, []int{1664, 256}, "", "column reduction"},
		// 3,1,1,1: 3 x 1 x 8 of [26,26,32]: strided (the 26 inside is cut).
		{"fusion.232", 3, []int{24, 128}, "strided", "strided reduction"},
		// bf16[32,5,5,256]{3,2,1,0}, bounds 16,5,1,2: rows 16·5·min(8,5) = 400, lanes 256.
		{"copy.24", 0, []int{400, 256}, "", "copy to row-major"},
		// f32[4096]{0:T(1024)}, bound 4 = 4096 elements: 32 rows of 128.
		{"fusion.250", 0, []int{32, 128}, "", "rank 1 in units of 1024"},
		// f32[32,1000] reduced over its minor: out 4·8 = 32, reduce 8·128 -> 1000, tile 1024.
		{"fusion.206", 0, []int{32, 1024}, "", "row reduction"},
		// Convolution, output bf16[32,12,12,384]{3,0,2,1} (physical [12,12,32,384]) bounds
		// 12,4,4,3: m = 12·4·32 = 1536, n = 3·128 = 384; weight f32[3,3,192,384]{3,2,1,0}
		// bounds 3,1,24,3: k = 3·1·192 = 576 (window rows 3, columns 1, all 192 input
		// features), rounded up to 640 (K is aligned to 128 lanes in tpucost's GEMM).
		{"fusion.191", 0, []int{1536, 384, 640}, "rounded", "convolution"},
	} {
		mt, ok := byName[c.module]
		if !ok {
			t.Fatalf("no module %s", c.module)
		}
		var sk Skipped
		k, err := ReplayTile(mt, v3(t), &sk)
		if err != nil {
			t.Fatalf("%s: %v", c.module, err)
		}
		i := slices.IndexFunc(k.Runs, func(r TileRun) bool { return r.Index == c.run })
		if i < 0 {
			t.Fatalf("%s run %d not replayed (unmapped: %v)", c.module, c.run, k.Unmapped)
		}
		r := k.Runs[i]
		if !slices.Equal([]int(r.Tile), c.want) || r.Approx != c.approx {
			t.Errorf("%s (%s) run %d %s: tile %v approx %q, want %v %q", c.module, c.why, c.run, r.Config, r.Tile, r.Approx, c.want, c.approx)
		}
		if !(r.SimNs > 0 && r.AnalyticalNs > 0 && r.MeasuredNs > 0) {
			t.Errorf("%s run %d: times %+v", c.module, c.run, r)
		}
	}
}

// Fidelity floors on the real tile runs, uncalibrated v3 preset. The bar for the
// simulator is τ ≥ 0.8 (measured: tpusim-1.3 with the TPU's grid of boxes, 0.808); the
// analytical model's floor is today's 0.765 less a margin of 0.02 for deliberate model
// changes. XLA's default top-1 (1.84%) is a property of the data.
const (
	minSimTileTau        = 0.80
	minAnalyticalTileTau = 0.745
	wantDefaultTop1      = 0.0184 // XLA's default on the 8 scored kernels: a property of the data
	defaultTolerance     = 1e-3
)

func TestValidateRealTileRuns(t *testing.T) {
	r, err := Validate([]string{opFile}, Options{Chip: v3(t)})
	if err != nil {
		t.Fatal(err)
	}
	tr := r.Tile
	if tr == nil {
		t.Fatal("no tile report")
	}
	// 754 runs, 2 failed; fusion.181 (rng: an opaque kernel in tpucost) is unmapped by
	// name.
	if tr.Skipped.Error != 2 || tr.Configs+len(tr.Unmapped) != 752 {
		t.Errorf("configs %d + unmapped %d, skipped %+v; want 752 timed runs", tr.Configs, len(tr.Unmapped), tr.Skipped)
	}
	if tr.ScoredKernels != 8 {
		t.Errorf("%d scored kernels, want the 8 with >= 10 configs", tr.ScoredKernels)
	}
	if tr.Sim.KendallTau < minSimTileTau || tr.Analytical.KendallTau < minAnalyticalTileTau {
		t.Errorf("tile tau: sim %.3f (floor %.2f), analytical %.3f (floor %.2f)", tr.Sim.KendallTau, minSimTileTau, tr.Analytical.KendallTau, minAnalyticalTileTau)
	}
	if d := tr.Default.Top1Slowdown; d < wantDefaultTop1-defaultTolerance || d > wantDefaultTop1+defaultTolerance {
		t.Errorf("default top-1 slowdown %.4f, want %.4f", d, wantDefaultTop1)
	}
	for _, u := range tr.Unmapped {
		if u.Reason == "" || u.Name == "" {
			t.Errorf("unmapped without a name or reason: %+v", u)
		}
	}
}

func TestScoreDefinitions(t *testing.T) {
	g := []Group{{Name: "k", Measured: []float64{100, 200, 400}, Default: 1}}
	// A predictor with the right order but the wrong scale: τ 1, no slowdown, and a
	// scale-free MAPE of 0 (one scale fits it exactly).
	s, err := Score(g, [][]float64{{10, 20, 40}})
	if err != nil {
		t.Fatal(err)
	}
	if s.KendallTau != 1 || s.Top1Slowdown != 0 || s.MAPEScaled > 1e-9 {
		t.Errorf("scaled predictor: %+v", s)
	}
	// Reversed: τ −1, top-1 picks the 400 ns config (slowdown 3), top-5 covers all.
	s, err = Score(g, [][]float64{{3, 2, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if s.KendallTau != -1 || s.Top1Slowdown != 3 || s.Top5Slowdown != 0 {
		t.Errorf("reversed predictor: %+v", s)
	}
	if d := DefaultSlowdown(g); d != 1 {
		t.Errorf("default slowdown %g, want 1 (200 ns over 100)", d)
	}
}
