package validate

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/dataset/tpugraphs"
	"github.com/tpucost/tpucost/tpusim"
)

// The real TpuGraphs tuning files (TPU v3 measurements), shared with dataset/tpugraphs.
var (
	opFile     = filepath.Join("..", "dataset", "tpugraphs", "testdata", "op_tuning_data.pb")
	layoutFile = filepath.Join("..", "dataset", "tpugraphs", "testdata", "module_tuning_data_layout.pb")
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

// Fidelity bounds on the real tile runs, uncalibrated v3 preset. Measured with tpusim-1.5
// (the DMA engine's cost per contiguous run of the TPU's own boxes, and a broadcast
// operand re-read whenever its window changes on the TPU's grid): sim τ 0.832, top-1
// slowdown 2.10%, the same for every run cost from 5 to 10 ns (tpusim-1.4, which counted
// the runs of the flattened tile and read a broadcast operand once: 0.808 and 6.09%). The
// floor and the ceiling are those numbers with a margin of simTileMargin for deliberate
// model changes; the ceiling stays under the bar of 4%. The analytical model's
// floor is today's 0.765 less a margin of 0.02. XLA's default top-1 (1.84%) is a property
// of the data.
const (
	simTileMargin        = 0.015
	minSimTileTau        = 0.832 - simTileMargin
	maxSimTileTop1       = 0.0210 + simTileMargin
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
	if tr.Sim.Top1Slowdown > maxSimTileTop1 {
		t.Errorf("tile top-1 slowdown: sim %.4f (ceiling %.4f)", tr.Sim.Top1Slowdown, maxSimTileTop1)
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

// TestStridedBoxesRunSlower: on the TPU, fusion.232's box one tile row high (bounds
// 13x5x1x2: 65 runs of 8 KiB per step) took 78.5 µs and its contiguous box (2x26x4x2, one
// run per step) 57.2 µs, at the same bytes. The simulator says so only through the DMA
// engine's cost per contiguous run of the TPU's own box (cost.BoxRuns,
// cost.Operand.Runs): the flattened tile of both is whole rows (tpusim-1.4 timed the
// strided box 1% faster).
func TestStridedBoxesRunSlower(t *testing.T) {
	r, err := Validate([]string{opFile}, Options{Chip: v3(t)})
	if err != nil {
		t.Fatal(err)
	}
	sim := map[string]float64{}
	for _, k := range r.Tile.Replayed {
		if k.Name != "fusion.232" {
			continue
		}
		for _, run := range k.Runs {
			sim[run.Config] = run.SimNs
		}
	}
	const strided, contiguous = "output=13x5x1x2;kernel=-;input=-;iteration=-", "output=2x26x4x2;kernel=-;input=-;iteration=-"
	s, c := sim[strided], sim[contiguous]
	// minRatio: the measured ratio is 1.37; the model need only order the pair by a
	// clear margin (5%, above the files' run-to-run noise of about 1%).
	const minRatio = 1.05
	if s == 0 || c == 0 || s < minRatio*c {
		t.Errorf("fusion.232: strided box %.0f ns, contiguous %.0f ns; want the strided >= %.2f× (measured 78,541 vs 57,188 ns)", s, c, minRatio)
	}
}

// TestBroadcastRereads: fusion.232 reduces f32[32,26,26,192]{3,0,2,1} masked by a
// u32[32,26,192] broadcast along dimension 1 (the physically outermost). On the TPU its box
// 3x9x4x2 (9 boxes along dimension 1, 3 along dimension 2) took 73.5 µs and 2x26x4x2
// (13 along dimension 1, dimension 2 whole) 57.2 µs: the first re-reads the mask once
// per box along dimension 1 (9 times, 7.7 MB more at 450 GB/s: 17 µs), the second keeps
// its one window of the whole mask for every step. tpusim-1.5 before this model read the
// mask once in both and timed them equal.
func TestBroadcastRereads(t *testing.T) {
	s := hlo.Array(hlo.F32, 32, 26, 26, 192)
	s.Layout = &hlo.Layout{MinorToMajor: []int{3, 0, 2, 1}}
	mask := hlo.Array(hlo.U32, 32, 26, 192)
	mask.Layout = &hlo.Layout{MinorToMajor: []int{2, 0, 1}}
	bc := Broadcast{Param: 1, Dims: []int{0, 2, 3}}
	tgt := v3(t).Target
	for _, c := range []struct {
		ext   []int // per logical dimension
		reads float64
	}{
		{[]int{32, 2, 26, 192}, 1}, // 2x26x4x2: dimension 2 whole, the mask's window never moves
		{[]int{32, 3, 9, 192}, 9},  // 3x9x4x2: read whole once per box along dimension 1
		{[]int{32, 9, 7, 192}, 3},  // 9x7x4x2
		{[]int{8, 13, 5, 192}, 2},  // 13x5x1x2: moves along dimension 0 inside 2 boxes of dimension 1
	} {
		reads, runs := Box{Shape: s, Ext: c.ext}.BroadcastReads(bc, mask, tgt)
		if reads != c.reads || !(runs > 0) {
			t.Errorf("box %v: reads %g, runs %g per step; want %g reads, runs > 0", c.ext, reads, runs, c.reads)
		}
	}

	r, err := Validate([]string{opFile}, Options{Chip: v3(t)})
	if err != nil {
		t.Fatal(err)
	}
	sim := map[string]float64{}
	for _, k := range r.Tile.Replayed {
		if k.Name == "fusion.232" {
			for _, run := range k.Runs {
				sim[run.Config] = run.SimNs
			}
		}
	}
	const reread, once = "output=3x9x4x2;kernel=-;input=-;iteration=-", "output=2x26x4x2;kernel=-;input=-;iteration=-"
	// minRatio: the measured ratio is 1.29 (the model: 1.28); the model must order the
	// pair by a clear margin, well above the files' run-to-run noise of about 1%.
	const minRatio = 1.15
	if a, b := sim[reread], sim[once]; a == 0 || b == 0 || a < minRatio*b {
		t.Errorf("fusion.232: box re-reading the mask %.0f ns, box reading it once %.0f ns; want >= %.2f× (measured 73,545 vs 57,188 ns)", a, b, minRatio)
	}
}
