package tune

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/zoo"
)

// shapesModel is a small transformer with a sequence dimension (zoo: seq<=512).
const shapesModel = "bert_tiny_s128_b32"

// TestRunShapes: one shape-generic run spends at most its budget, counted over every
// size (each measurement seen once by the measured hook), gives every size a config that
// compiles strictly at that size to the program it reports, and is never slower than a
// size's default compile, with noise off and at a high noise.
func TestRunShapes(t *testing.T) {
	list := zoo.ShapeList{Name: "seq", Values: []int{32, 96, 128}}
	for _, noise := range []float64{0, 0.3} {
		seen := map[string]bool{}
		opts := Options{Chip: testChip(t), Budget: 40, Seed: 3, Noise: noise, Strategy: Evolution,
			measured: func(id string) {
				if seen[id] {
					t.Errorf("noise %g: %s measured twice", noise, id)
				}
				seen[id] = true
			}}
		rep, err := RunShapes(context.Background(), shapesModel, list, opts, false)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Measurements > opts.Budget || rep.Measurements != len(seen) {
			t.Errorf("noise %g: %d measurements reported, %d taken, budget %d", noise, rep.Measurements, len(seen), opts.Budget)
		}
		// Every candidate is measured at every size unless a size's program was measured
		// before: at most 3 per candidate, and the budget leaves fewer than 3 unused.
		if rep.Measurements > 3*rep.Candidates || rep.Measurements < opts.Budget-2-3 {
			t.Errorf("noise %g: %d measurements for %d candidates at 3 sizes, budget %d", noise, rep.Measurements, rep.Candidates, opts.Budget)
		}
		if len(rep.Shapes) != 3 {
			t.Fatalf("%d shapes", len(rep.Shapes))
		}
		for i, s := range rep.Shapes {
			if s.Value != list.Values[i] {
				t.Errorf("shape %d: value %d", i, s.Value)
			}
			if s.TunedNs > s.DefaultNs {
				t.Errorf("noise %g seq=%d: tuned %.0f ns slower than default %.0f ns (%+v)", noise, s.Value, s.TunedNs, s.DefaultNs, s.Confirmation)
			}
			m, err := zoo.ResolveShapes(shapesModel, list.At(s.Value))
			if err != nil {
				t.Fatal(err)
			}
			p, err := compiler.Compile(m, s.Config, compiler.Options{Target: opts.Chip.Target, Strict: true})
			if err != nil {
				t.Fatalf("seq=%d: the config does not compile strictly: %v", s.Value, err)
			}
			if got := truth(t, p, opts.Chip); got != s.TunedNs {
				t.Errorf("seq=%d: config compiles to %.0f ns, report says %.0f ns", s.Value, got, s.TunedNs)
			}
		}
	}
}

// TestRunShapesPerShape: the per-shape baseline tunes each size with the full budget and
// is deterministic: the same seed gives the same reports.
func TestRunShapesPerShape(t *testing.T) {
	list := zoo.ShapeList{Name: "seq", Values: []int{64, 128}}
	opts := Options{Chip: testChip(t), Budget: 12, Seed: 1, Noise: 0.02, Strategy: Random}
	a, err := RunShapes(context.Background(), shapesModel, list, opts, true)
	if err != nil {
		t.Fatal(err)
	}
	p := a.PerShape
	if p == nil || len(p.Shapes) != 2 || p.Measurements != 2*opts.Budget {
		t.Fatalf("per-shape: %+v", p)
	}
	if p.MeasurementsToBest > p.Measurements || p.MeasurementsToBest < 2 {
		t.Errorf("measurements to best %d of %d", p.MeasurementsToBest, p.Measurements)
	}
	for _, s := range p.Shapes {
		if s.Speedup < 1 {
			t.Errorf("per-shape seq=%d slower than its default: %.3fx", s.Value, s.Speedup)
		}
	}
	b, err := RunShapes(context.Background(), shapesModel, list, opts, true)
	if err != nil {
		t.Fatal(err)
	}
	for i := range a.Shapes {
		if a.Shapes[i].TunedNs != b.Shapes[i].TunedNs || a.PerShape.Shapes[i] != b.PerShape.Shapes[i] {
			t.Errorf("seq=%d: not deterministic: %+v vs %+v", a.Shapes[i].Value, a.Shapes[i], b.Shapes[i])
		}
	}
}

// TestDispatchIndex: a size runs the config of the smallest listed size at or above it.
func TestDispatchIndex(t *testing.T) {
	r := &ShapesReport{Dim: "seq", Shapes: []ShapeResult{{Value: 64}, {Value: 128}, {Value: 256}, {Value: 512}}}
	for v, want := range map[int]int{1: 0, 63: 0, 64: 0, 65: 1, 128: 1, 129: 2, 200: 2, 256: 2, 300: 3, 512: 3} {
		got, err := r.DispatchIndex(v)
		if err != nil || got != want {
			t.Errorf("seq=%d: index %d (%v), want %d", v, got, err, want)
		}
	}
	for _, v := range []int{0, -3, 513} {
		if _, err := r.DispatchIndex(v); err == nil {
			t.Errorf("seq=%d dispatched", v)
		}
	}
}

// TestNearestTile: a reference tile maps to the option nearest in log2 size per
// dimension; a dimension above every option becomes the largest, ties go to the first
// option, and a tile of another rank has no match.
func TestNearestTile(t *testing.T) {
	opts := []cost.Tile{{8, 128}, {16, 128}, {64, 128}, {64, 256}}
	for _, c := range []struct {
		want cost.Tile
		i    int
	}{
		{cost.Tile{16, 128}, 1},
		{cost.Tile{1024, 128}, 2}, // row above every option: the largest
		{cost.Tile{1024, 512}, 3},
		{cost.Tile{32, 128}, 1}, // 16 and 64 are one octave away: the first
		{cost.Tile{8, 128, 128}, -1},
	} {
		if got := nearestTile(opts, c.want); got != c.i {
			t.Errorf("%s: option %d, want %d", c.want, got, c.i)
		}
	}
}

// TestScaleTile: a reference tile keeps its share of each dimension's padded extent at
// another size (the extent rounded up to the alignment); a kernel of another rank keeps
// the tile as it is.
func TestScaleTile(t *testing.T) {
	from := &cost.KernelInfo{Dims: []cost.IterDim{{Size: 2048, Align: 8}, {Size: 128, Align: 128}}}
	to := &cost.KernelInfo{Dims: []cost.IterDim{{Size: 250, Align: 8}, {Size: 128, Align: 128}}}
	// 250 pads to 256: a 1024-row tile (half of 2048) becomes 128, half of 256.
	if got := scaleTile(cost.Tile{1024, 128}, from, to); !got.Equal(cost.Tile{128, 128}) {
		t.Errorf("got %s, want 128x128", got)
	}
	if got := scaleTile(cost.Tile{8, 128}, from, to); !got.Equal(cost.Tile{1, 128}) {
		t.Errorf("got %s, want 1x128 (nearestTile then picks the smallest option)", got)
	}
	other := &cost.KernelInfo{Dims: []cost.IterDim{{Size: 256, Align: 8}}}
	if got := scaleTile(cost.Tile{1024, 128}, from, other); !got.Equal(cost.Tile{1024, 128}) {
		t.Errorf("another rank: got %s", got)
	}
}

// TestRunShapesRefusals: what a shape-generic run does not take is refused with one line.
func TestRunShapesRefusals(t *testing.T) {
	chip := testChip(t)
	ctx := context.Background()
	for _, c := range []struct {
		src  string
		list zoo.ShapeList
		opts Options
		want string
	}{
		{shapesModel, zoo.ShapeList{Name: "len", Values: []int{64, 128}}, Options{Chip: chip, Budget: 10}, `no dynamic dimension "len"`},
		{shapesModel, zoo.ShapeList{Name: "seq", Values: []int{64, 1024}}, Options{Chip: chip, Budget: 10}, "seq=1024"},
		{"mlp_96x2_b1", zoo.ShapeList{Name: "seq", Values: []int{64, 128}}, Options{Chip: chip, Budget: 10}, "it declares none"},
		{shapesModel, zoo.ShapeList{Name: "seq"}, Options{Chip: chip, Budget: 10}, "no sizes"},
		{shapesModel, zoo.ShapeList{Name: "seq", Values: []int{64, 128}}, Options{Chip: chip, Budget: 10, Strategy: RL}, "rl"},
		{shapesModel, zoo.ShapeList{Name: "seq", Values: []int{64, 128}}, Options{Chip: chip, Budget: 10, Fusion: compiler.FusionPartition}, "drop --fusion partition"},
		{shapesModel, zoo.ShapeList{Name: "seq", Values: []int{64, 128}}, Options{Chip: chip, Budget: 10, Strategy: Partition}, "or --strategy partition"},
		{shapesModel, zoo.ShapeList{Name: "seq", Values: []int{64, 128}}, Options{Chip: chip, Budget: 10, Staging: compiler.StagingOn}, "--staging on"},
		{shapesModel, zoo.ShapeList{Name: "seq", Values: []int{32, 64, 128}}, Options{Chip: chip, Budget: 2}, "Budget: got 2, want at least the number of sizes, 3"},
		{shapesModel, zoo.ShapeList{Name: "seq", Values: []int{64, 128}}, Options{Chip: chip, Budget: 10, KernelModel: simModel{chip: chip, relative: true}}, "not a relative (tile/flags) one"},
	} {
		_, err := RunShapes(ctx, c.src, c.list, c.opts, false)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s %s: got %v, want one line with %q", c.src, c.list, err, c.want)
		}
	}
}

// TestRunShapesModelGuided: with an absolute model, the search runs on its predictions
// (at most ModelEvals programs scored: ModelEvals / sizes configs, each at every size)
// and only its top k configs, the default first, are
// measured at every size: measurements are at most TopKGraph x sizes and within the
// budget, each taken once; every size is never slower than its default, its config
// compiles strictly to the time reported, and the same seed gives the same report.
func TestRunShapesModelGuided(t *testing.T) {
	chip := testChip(t)
	list := zoo.ShapeList{Name: "seq", Values: []int{32, 96, 128}}
	run := func() *ShapesReport {
		seen := map[string]bool{}
		opts := Options{Chip: chip, Budget: 60, Seed: 5, Strategy: Annealing, TopKGraph: 4, ModelEvals: 24,
			GraphModel: simModel{chip: chip, err: 0.1},
			measured: func(id string) {
				if seen[id] {
					t.Errorf("%s measured twice", id)
				}
				seen[id] = true
			}}
		rep, err := RunShapes(context.Background(), shapesModel, list, opts, false)
		if err != nil {
			t.Fatal(err)
		}
		if cap := opts.ModelEvals / len(list.Values); !rep.ModelGuided || rep.ModelEvaluations == 0 || rep.ModelEvaluations > cap {
			t.Errorf("model_guided %v, %d configs scored (cap %d: %d programs over %d sizes)", rep.ModelGuided, rep.ModelEvaluations, cap, opts.ModelEvals, len(list.Values))
		}
		if rep.Measurements != len(seen) || rep.Measurements > opts.TopKGraph*len(list.Values) || rep.Candidates > opts.TopKGraph || rep.Candidates < 1 {
			t.Errorf("%d measurements (%d taken) for %d measured configs, top k %d at %d sizes", rep.Measurements, len(seen), rep.Candidates, opts.TopKGraph, len(list.Values))
		}
		for _, s := range rep.Shapes {
			if s.TunedNs > s.DefaultNs {
				t.Errorf("seq=%d: tuned %.0f ns slower than default %.0f ns", s.Value, s.TunedNs, s.DefaultNs)
			}
			m, err := zoo.ResolveShapes(shapesModel, list.At(s.Value))
			if err != nil {
				t.Fatal(err)
			}
			p, err := compiler.Compile(m, s.Config, compiler.Options{Target: chip.Target, Strict: true})
			if err != nil {
				t.Fatalf("seq=%d: the config does not compile strictly: %v", s.Value, err)
			}
			if got := truth(t, p, chip); got != s.TunedNs {
				t.Errorf("seq=%d: config compiles to %.0f ns, report says %.0f ns", s.Value, got, s.TunedNs)
			}
		}
		rep.WallS = 0
		return rep
	}
	a, b := run(), run()
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Errorf("same seed, different reports:\n%s\n%s", ja, jb)
	}
}
