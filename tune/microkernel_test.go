package tune

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/zoo"
)

// microList is the small list the micro-kernel tests tune: four sizes of shapesModel, so
// that a run (with its range of dispatch compiles) stays within a few seconds.
var microList = zoo.ShapeList{Name: "seq", Values: []int{24, 64, 136, 256}}

// TestMicroModelLinear: observations of one micro-kernel at two amounts of charge give its
// fixed cost (the intercept) and its scale, and the prediction at a third amount of charge
// is the line through them.
func TestMicroModelLinear(t *testing.T) {
	const fixed, scale = 2500.0, 1.25 // a made-up kernel: time = 2500 ns + 1.25 × its charge
	// exact is the tolerance of a prediction from exact observations: float rounding only.
	const exact = 1e-9
	m := NewMicroCostModel(1000)
	mk := MicroKernel{Family: "fusion.1", Tile: cost.Tile{8, 128}, Box: cost.Tile{8, 128}, Whole: []bool{false, false}}
	if m.Measured(mk) != 0 || !math.IsNaN(m.Scale(mk, 4000)) {
		t.Fatalf("an empty model knows %s", mk.ID())
	}
	m.Observe(mk, 4000, fixed+4000*scale)
	m.Observe(mk, 64000, fixed+64000*scale)
	if got := m.Fixed(mk.Family); math.Abs(got-fixed) > exact*fixed {
		t.Errorf("fixed cost %g, want %g", got, fixed)
	}
	if got, want := m.Predict(mk, 16000), fixed+16000*scale; math.Abs(got-want) > exact*want {
		t.Errorf("prediction at charge 16000 %g, want %g", got, want)
	}
	// A sibling micro-kernel of the family never observed at two amounts of charge takes
	// the family's fixed cost.
	sib := MicroKernel{Family: "fusion.1", Tile: cost.Tile{16, 128}, Box: cost.Tile{16, 128}, Whole: []bool{false, false}}
	m.Observe(sib, 8000, fixed+8000*0.9)
	if got, want := m.Predict(sib, 32000), fixed+32000*0.9; math.Abs(got-want) > exact*want {
		t.Errorf("sibling at charge 32000 %g, want %g", got, want)
	}
	// A box whole along a dimension is one micro-kernel whatever that dimension's extent.
	w1 := MicroKernel{Family: "f", Box: cost.Tile{312, 128}, Whole: []bool{true, false}}
	w2 := MicroKernel{Family: "f", Box: cost.Tile{576, 128}, Whole: []bool{true, false}}
	if w1.ID() != w2.ID() {
		t.Errorf("whole boxes %s and %s differ", w1.ID(), w2.ID())
	}
}

// chargeCarryTol bounds the p90 relative error of a micro-kernel's time carried from two
// shapes to others by its Charge (a line through the two in charge): measured 3.1% over
// BERT's micro-kernels common to seq=128, 136, 200 and 256; with plain invocations in its
// place (compute and DMA of a padded last tile charged alike) it is 12.4%.
const chargeCarryTol = 0.05

// TestMicroCharge: one micro-kernel's measured time at two shapes predicts its time at
// shapes with padded last tiles through Charge; the test fails if Charge is replaced by
// the invocation count.
func TestMicroCharge(t *testing.T) {
	chip := testChip(t)
	kc := &compiler.KernelCache{}
	list := zoo.ShapeList{Name: "seq", Values: []int{128, 136, 200, 256}}
	type pt struct{ charge, ns float64 }
	byID := map[string][]pt{}
	for _, v := range list.Values {
		sh, err := newMicroShape(context.Background(), shapesModel, list, v, chip, kc)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range sh.fams {
			for k := range f.opts {
				o := &f.opts[k]
				ns, err := o.truthOf(chip)
				if err != nil {
					t.Fatal(err)
				}
				if PaddingWaste(o.p) < 0 || PaddingWaste(o.p) >= 1 {
					t.Fatalf("%s at seq=%d: padding waste %g", o.mk.ID(), v, PaddingWaste(o.p))
				}
				byID[o.mk.ID()] = append(byID[o.mk.ID()], pt{o.work, ns})
			}
		}
	}
	var errs []float64
	for _, pts := range byID {
		if len(pts) != len(list.Values) || pts[0].charge == pts[3].charge {
			continue
		}
		// Fixed cost and scale from seq=128 and seq=256 (both unpadded); predict 136 and 200.
		a, b := pts[0], pts[3]
		scale := (b.ns - a.ns) / (b.charge - a.charge)
		fixed := a.ns - scale*a.charge
		for _, p := range pts[1:3] {
			errs = append(errs, math.Abs((fixed+scale*p.charge)/p.ns-1))
		}
	}
	if len(errs) < 20 {
		t.Fatalf("%d carried predictions: too few micro-kernels common to the four shapes", len(errs))
	}
	slices.Sort(errs)
	t.Logf("p90 %.4f over %d", errs[len(errs)*9/10], len(errs))
	if p90 := errs[len(errs)*9/10]; p90 > chargeCarryTol {
		t.Errorf("charge carries a micro-kernel's time with p90 error %.3f over %d predictions, want <= %g", p90, len(errs), chargeCarryTol)
	}
}

// TestMicroSharing: in the joint search, a measurement of a micro-kernel at one shape
// changes its predicted cost at another shape (the micro-kernel cost model is shared);
// in the per-shape baseline it does not. Removing the sharing (a model per shape in the
// joint arm, or observations that do not reach other shapes) fails this test.
func TestMicroSharing(t *testing.T) {
	chip := testChip(t)
	kc := &compiler.KernelCache{}
	var shapes []*microShape
	for _, v := range []int{128, 256} {
		sh, err := newMicroShape(context.Background(), shapesModel, microList, v, chip, kc)
		if err != nil {
			t.Fatal(err)
		}
		shapes = append(shapes, sh)
	}
	// A micro-kernel both shapes run, with twice the work at 256.
	var at0, at1 *microOpt
	for _, f := range shapes[0].fams {
		for k := range f.opts {
			for _, g := range shapes[1].fams {
				for j := range g.opts {
					if at0 == nil && g.opts[j].mk.ID() == f.opts[k].mk.ID() && g.opts[j].work > f.opts[k].work {
						at0, at1 = &f.opts[k], &g.opts[j]
					}
				}
			}
		}
	}
	if at0 == nil {
		t.Fatal("no micro-kernel common to seq=128 and seq=256")
	}
	sim, err := tpusim.New(chip, tpusim.Options{Runs: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, shared := range []bool{true, false} {
		a, err := newMicroArm(shapes, shared, sim, chip, 1, DefaultMicroTopK, 0)
		if err != nil {
			t.Fatal(err)
		}
		before := predictAt(a.models[1], at1)
		if err := a.measure(0, at0); err != nil {
			t.Fatal(err)
		}
		after := predictAt(a.models[1], at1)
		if shared && before == after {
			t.Errorf("joint: measuring %s at seq=128 left its prediction at seq=256 at %g ns", at0.mk.ID(), before)
		}
		if !shared && before != after {
			t.Errorf("per-shape: measuring at seq=128 moved the prediction at seq=256 (%g -> %g ns)", before, after)
		}
		if shared {
			// The shared prediction moved toward the truth at seq=256.
			truth, err := at1.truthOf(chip)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(math.Log(after/truth)) >= math.Abs(math.Log(before/truth)) {
				t.Errorf("joint: prediction at seq=256 %g -> %g ns, truth %g: no closer", before, after, truth)
			}
		}
	}
}

// microSpeedupFloor is the least mean speedup of the dispatched programs the tests accept:
// the run below measures 1.050x (1.017x to 1.062x) at its four held-out values; the
// default compile is 1.00x, so a dispatch replaced by the default fails.
const microSpeedupFloor = 1.01

// TestRunMicro: a joint run spends fewer measurements than the per-shape baseline, is never
// slower than the default at a tuned size, and its dispatch table, applied at held-out
// values (DispatchTable.Config), gives programs faster than the default compile: a
// dispatch replaced by the default config fails. The same seed gives the same report.
func TestRunMicro(t *testing.T) {
	chip := testChip(t)
	opts := Options{Chip: chip, Budget: 5000, Seed: 1, Noise: 0.02}
	spec := MicroSpec{Lo: 16, Hi: 256, Holdout: 4, Compare: true}
	rep, err := RunMicro(context.Background(), shapesModel, microList, opts, spec)
	if err != nil {
		t.Fatal(err)
	}
	if rep.PerShape == nil || rep.Measurements >= rep.PerShape.Measurements {
		t.Fatalf("joint %d measurements, per-shape %+v", rep.Measurements, rep.PerShape)
	}
	for _, s := range rep.Shapes {
		if s.Speedup < 1-1e-9 {
			t.Errorf("seq=%d: dispatched %.4fx, slower than the default", s.Value, s.Speedup)
		}
	}
	rc := rep.RangeCheck
	if rc == nil || len(rc.Values) != spec.Holdout || rc.MeanSpeedup < microSpeedupFloor || rc.MinSpeedup < 1-1e-9 {
		t.Fatalf("range check %+v", rc)
	}
	t.Logf("joint %d measurements, per-shape %d; range check %+v", rep.Measurements, rep.PerShape.Measurements, rc)
	// The table itself: applied at each held-out value, the program is what range_check timed.
	for i, v := range rc.Values {
		m, err := zoo.ResolveShapesContext(context.Background(), shapesModel, microList.At(v))
		if err != nil {
			t.Fatal(err)
		}
		def, err := compiler.Compile(m, nil, compiler.Options{Target: chip.Target})
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := rep.DispatchTable.Config(def, v)
		if err != nil {
			t.Fatal(err)
		}
		p, err := compiler.Compile(m, cfg, compiler.Options{Target: chip.Target})
		if err != nil {
			t.Fatal(err)
		}
		defNs, _ := truthNs(def, chip)
		ns, _ := truthNs(p, chip)
		if math.Abs(defNs/ns-rc.Speedups[i]) > 1e-9 {
			t.Errorf("seq=%d: the table gives %.4fx, range_check %.4fx", v, defNs/ns, rc.Speedups[i])
		}
	}
	// The table round-trips through its file form.
	b, err := json.Marshal(rep.DispatchTable)
	if err != nil {
		t.Fatal(err)
	}
	back, ok, err := ParseDispatchTable(b)
	if !ok || err != nil || len(back.Families) != len(rep.DispatchTable.Families) {
		t.Fatalf("round trip: %v %v", ok, err)
	}
	again, err := RunMicro(context.Background(), shapesModel, microList, opts, spec)
	if err != nil {
		t.Fatal(err)
	}
	rep.WallS, again.WallS = 0, 0
	x, _ := json.Marshal(rep)
	y, _ := json.Marshal(again)
	if string(x) != string(y) {
		t.Error("the same seed gave two reports")
	}
}

// TestRunMicroRefusals: what a micro-kernel run does not take is refused with one line.
func TestRunMicroRefusals(t *testing.T) {
	chip := testChip(t)
	ctx := context.Background()
	for _, c := range []struct {
		opts Options
		spec MicroSpec
		want string
	}{
		{Options{Chip: chip, Strategy: Annealing}, MicroSpec{}, "drop --strategy"},
		{Options{Chip: chip, Fusion: compiler.FusionPartition}, MicroSpec{}, "drop --fusion"},
		{Options{Chip: chip}, MicroSpec{Lo: 64, Hi: 100}, "range 64..100"},
		{Options{Chip: chip}, MicroSpec{TopK: -1}, "topk"},
	} {
		_, err := RunMicro(ctx, shapesModel, microList, c.opts, c.spec)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: %v, want one line with %q", c.spec, err, c.want)
		}
	}
	if _, ok, _ := ParseDispatchTable([]byte(`{"version": 1}`)); ok {
		t.Error("a config parsed as a dispatch table")
	}
	if _, ok, err := ParseDispatchTable([]byte(`{"kind": "micro-kernel-dispatch", "dim": "seq", "lo": 5, "hi": 2}`)); !ok || err == nil {
		t.Errorf("a bad range: %v %v", ok, err)
	}
}

// TestMicroDispatchFar: a family whose default micro-kernel was measured only farther than
// nearRatio of this shape's charge changes to a micro-kernel measured here when that one is
// predicted to win by more than farMargin, keeps the default when it wins by less, and
// keeps it when the default was never measured.
func TestMicroDispatchFar(t *testing.T) {
	def := MicroKernel{Family: "fusion.exponential.0", Box: cost.Tile{256, 4096}, Whole: []bool{true, false}}
	alt := MicroKernel{Family: "fusion.exponential.0", Box: cost.Tile{32, 2048}, Whole: []bool{false, false}}
	const here = 8000.0 // this shape's charge: 8× the default's farthest observation
	fam := &microFam{name: def.Family, def: 0, opts: []microOpt{{mk: def, work: here}, {mk: alt, work: here}}}
	for _, c := range []struct {
		name     string
		defObs   bool    // the default measured at charges 500 and 1000 (1000 ns + 1 × charge)
		altNs    float64 // alt measured at this charge
		wantDflt bool
	}{
		{"wins by 33%", true, 6000, false}, // the default predicted at 9000 ns here
		{"wins by 6%", true, 8500, true},   // under farMargin (10%)
		{"default never measured", false, 6000, true},
	} {
		m := NewMicroCostModel(1000)
		if c.defObs {
			m.Observe(def, 500, 1500)
			m.Observe(def, 1000, 2000)
		}
		m.Observe(alt, here, c.altNs)
		if m.MeasuredNear(def, here, nearRatio) {
			t.Fatalf("%s: the default counts as measured near charge %g", c.name, here)
		}
		if got := dispatchFam(m, fam) == fam.def; got != c.wantDflt {
			t.Errorf("%s: dispatched the default %v, want %v (default predicted %g ns, alt %g ns)", c.name, got, c.wantDflt, predictAt(m, &fam.opts[0]), predictAt(m, &fam.opts[1]))
		}
	}
}

// TestMicroDispatchAlias: where a kernel's name is another computation at other values (the
// LSTM's output projection is fusion.add.2T+1 at seq=T and a recurrent step at seq=T+1), a
// value never tuned dispatches its kernels as the tuned kernels of the same computation
// (familyAliases), not as whatever ran under their name: with families keyed by name
// alone, the projection at seq=5 keeps the default (its name's measurements at seq=6 are
// a step's), and the dispatch there is the default's speed.
func TestMicroDispatchAlias(t *testing.T) {
	const src = "lstm_lm_h256_t16_b32"
	chip := testChip(t)
	list := zoo.ShapeList{Name: "seq", Values: []int{4, 6}}
	rep, err := RunMicro(context.Background(), src, list, Options{Chip: chip, Budget: 5000, Seed: 1, Noise: 0.02}, MicroSpec{Holdout: 1})
	if err != nil {
		t.Fatal(err)
	}
	// The output projection at seq=5: the matrix-multiply kernel with the vocabulary (10000) as a
	// dimension.
	m, err := zoo.ResolveShapesContext(context.Background(), src, list.At(5))
	if err != nil {
		t.Fatal(err)
	}
	def, err := compiler.Compile(m, nil, compiler.Options{Target: chip.Target})
	if err != nil {
		t.Fatal(err)
	}
	head := ""
	for _, k := range def.Kernels {
		if k.Info.Kind == cost.KindGEMM && slices.ContainsFunc(k.Info.Dims, func(d cost.IterDim) bool { return d.Size == 10000 }) {
			head = k.Name
		}
	}
	if head == "" {
		t.Fatal("no output projection at seq=5")
	}
	r, ok := rep.DispatchTable.Rule(head, 5)
	if !ok || r.Default {
		t.Fatalf("%s at seq=5 keeps the default (rule %+v, %v)", head, r, ok)
	}
	rc := rep.RangeCheck
	if rc == nil || len(rc.Values) != 1 || rc.Values[0] != 5 || rc.MinSpeedup < 1-1e-9 {
		t.Fatalf("range check %+v", rc)
	}
	t.Logf("%s at seq=5: %+v; range check %+v", head, r, rc)
}
