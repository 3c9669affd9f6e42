package tune

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/zoo"
)

var graphKinds = []compiler.Kind{compiler.KindLayout, compiler.KindFusion}

// bruteForce returns the distinct programs of the small module's layout x fusion space
// (as enumerated from the default) and the optimum's noiseless time, independently of the
// strategies.
func bruteForce(t *testing.T) (distinct int, best float64) {
	t.Helper()
	m := smallModule(t)
	chip := testChip(t)
	def, err := compiler.Compile(m, nil, compiler.Options{Target: chip.Target})
	if err != nil {
		t.Fatal(err)
	}
	var dims [][]func(*compiler.Config)
	for _, l := range def.Space.Layout {
		var opts []func(*compiler.Config)
		for _, o := range l.Options {
			opts = append(opts, func(c *compiler.Config) { c.Layout[l.Name] = o })
		}
		dims = append(dims, opts)
	}
	for _, f := range def.Space.Fusion {
		dims = append(dims, []func(*compiler.Config){
			func(c *compiler.Config) { c.Fusion[f.Name] = false },
			func(c *compiler.Config) { c.Fusion[f.Name] = true },
		})
	}
	seen := map[string]bool{}
	best = math.Inf(1)
	idx := make([]int, len(dims))
	for {
		cfg := def.Config.Clone()
		for i, d := range dims {
			d[idx[i]](cfg)
		}
		p, err := compiler.Compile(m, cfg, compiler.Options{Target: chip.Target})
		if err != nil {
			t.Fatal(err)
		}
		r, err := tpusim.Simulate(p, chip)
		if err != nil {
			t.Fatal(err)
		}
		var sig strings.Builder
		for _, k := range r.Kernels {
			sig.WriteString(k.Key + k.Tile.String() + k.Flags + ";")
		}
		seen[sig.String()] = true
		best = math.Min(best, r.TotalNs)
		i := len(idx) - 1
		for ; i >= 0; i-- {
			if idx[i]++; idx[i] < len(dims[i]) {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			break
		}
	}
	return len(seen), best
}

// TestStrategiesFindKnownOptimum: on the small module's layout x fusion space (1024
// configs, 208 distinct programs), exhaustive search with a budget past the space finds
// the optimum and measures every distinct program once; every other strategy finds the
// exact optimum within 120 measurements and comes within 1% of it within 60 (noise off,
// seeds 1-3).
func TestStrategiesFindKnownOptimum(t *testing.T) {
	distinct, best := bruteForce(t)
	m := smallModule(t)
	chip := testChip(t)
	r := mustRun(t, m, Options{Chip: chip, Strategy: Exhaustive, Budget: 1000, Kinds: graphKinds})
	if r.TunedNs != best {
		t.Errorf("exhaustive: tuned %.1f ns, optimum %.1f ns", r.TunedNs, best)
	}
	if r.Measurements != distinct {
		t.Errorf("exhaustive: %d measurements, the space has %d distinct programs", r.Measurements, distinct)
	}
	for _, st := range []Strategy{Random, Annealing, Evolution, MBO} {
		for seed := int64(1); seed <= 3; seed++ {
			r := mustRun(t, m, Options{Chip: chip, Strategy: st, Budget: 120, Seed: seed, Kinds: graphKinds})
			if r.TunedNs != best {
				t.Errorf("%s seed %d, budget 120: tuned %.1f ns, optimum %.1f ns", st, seed, r.TunedNs, best)
			}
			r = mustRun(t, m, Options{Chip: chip, Strategy: st, Budget: 60, Seed: seed, Kinds: graphKinds})
			if r.TunedNs > best*1.01 {
				t.Errorf("%s seed %d, budget 60: tuned %.1f ns, more than 1%% above the optimum %.1f ns", st, seed, r.TunedNs, best)
			}
		}
	}
}

// measureLog records every measurement a run takes.
type measureLog struct{ ids []string }

func (l *measureLog) hook(id string) { l.ids = append(l.ids, id) }

// TestBudgetAndDedupe: every strategy takes exactly the budget when the space is larger,
// never more, and never measures a program or a kernel configuration twice.
func TestBudgetAndDedupe(t *testing.T) {
	m, err := zoo.Resolve("mlp_768x3_b8")
	if err != nil {
		t.Fatal(err)
	}
	chip := testChip(t)
	for _, st := range Strategies() {
		if st == RL {
			continue // needs a policy and fusion-only kinds: TestRLBudgetExact
		}
		for _, budget := range []int{1, 7, 45} {
			var log measureLog
			r := mustRun(t, m, Options{Chip: chip, Strategy: st, Budget: budget, Seed: 3, Noise: 0.02, measured: log.hook})
			if r.Measurements != budget || len(log.ids) != budget {
				t.Errorf("%s budget %d: %d measurements reported, %d taken", st, budget, r.Measurements, len(log.ids))
			}
			seen := map[string]bool{}
			for _, id := range log.ids {
				if seen[id] {
					t.Errorf("%s budget %d: %s measured twice", st, budget, id)
				}
				seen[id] = true
			}
			if r.ProgramMeasures+r.KernelMeasures != r.Measurements {
				t.Errorf("%s: %d program + %d kernel measurements != %d", st, r.ProgramMeasures, r.KernelMeasures, r.Measurements)
			}
			if r.HardwareS <= 0 {
				t.Errorf("%s: hardware_s %g", st, r.HardwareS)
			}
		}
	}
	// A space smaller than the budget is measured once over and the search stops.
	small := smallModule(t)
	var log measureLog
	r := mustRun(t, small, Options{Chip: chip, Strategy: Annealing, Budget: 1000, Kinds: graphKinds, measured: log.hook})
	if r.Measurements >= 1000 || r.Measurements != len(log.ids) {
		t.Errorf("sa on a 208-program space with budget 1000: %d measurements (%d taken)", r.Measurements, len(log.ids))
	}
}

// TestDeterminism: the same seed gives the same tuned config and report (but wall time)
// with 1 and 2 workers, noise on.
func TestDeterminism(t *testing.T) {
	m, err := zoo.Resolve("mlp_96x2_b1")
	if err != nil {
		t.Fatal(err)
	}
	chip := testChip(t)
	for _, st := range Strategies() {
		if st == RL {
			continue // needs a policy and fusion-only kinds: TestRLDeterminism
		}
		o := Options{Chip: chip, Strategy: st, Budget: 40, Seed: 11, Noise: 0.03}
		o.Workers = 1
		a := reportJSON(t, mustRun(t, m, o))
		o.Workers = 2
		b := reportJSON(t, mustRun(t, m, o))
		if a != b {
			t.Errorf("%s: 1 and 2 workers differ:\n%s\n%s", st, a, b)
		}
	}
}

// TestXTATKernelPhases: with noise off and enough budget, the schedule leaves every
// kernel with the fastest flags for its tile and the fastest tile under the tile phase's
// flags rule, and is never slower than the start.
func TestXTATKernelPhases(t *testing.T) {
	m := smallModule(t)
	chip := testChip(t)
	r := mustRun(t, m, Options{Chip: chip, Budget: 2000, Seed: 1})
	if r.TunedNs > r.DefaultNs {
		t.Errorf("tuned %.0f ns slower than default %.0f ns", r.TunedNs, r.DefaultNs)
	}
	if r.Measurements >= 2000 {
		t.Errorf("%d measurements: the kernel phases should exhaust the space", r.Measurements)
	}
	p, err := compiler.Compile(m, r.Config, compiler.Options{Target: chip.Target, Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := truth(t, p, chip); got != r.TunedNs {
		t.Errorf("the tuned config compiles to %.1f ns, report says %.1f", got, r.TunedNs)
	}
	for _, k := range p.Kernels {
		kt := func(f cost.Flags) float64 {
			c, err := k.Choice.WithFlags(f)
			if err != nil {
				return math.Inf(1)
			}
			x, err := tpusim.SimulateChoice(c, chip)
			if err != nil {
				return math.Inf(1)
			}
			return x.Ns
		}
		have := kt(k.Choice.Config.Flags)
		for _, f := range k.Choice.FlagOptions() {
			if kt(f) < have {
				t.Errorf("kernel %s: flags %s (%.0f ns) beat the tuned %s (%.0f ns)", k.Name, f, kt(f), k.Choice.Config.Flags, have)
			}
		}
	}
}

// TestModelGuided: with a fake model, the graph level measures only the model's top k
// programs and each kernel only its top k options.
func TestModelGuided(t *testing.T) {
	m, err := zoo.Resolve("mlp_768x3_b8")
	if err != nil {
		t.Fatal(err)
	}
	chip := testChip(t)
	abs := simModel{chip: chip, err: 0.05}
	rel := simModel{chip: chip, err: 0.05, relative: true}
	var log measureLog
	r := mustRun(t, m, Options{Chip: chip, Budget: 500, Seed: 2, GraphModel: abs, KernelModel: rel, ModelEvals: 120, measured: log.hook})
	if r.ProgramMeasures != 10 {
		t.Errorf("%d program measurements, want the top 10", r.ProgramMeasures)
	}
	if r.ModelEvaluations != 120 {
		t.Errorf("%d model evaluations, want 120", r.ModelEvaluations)
	}
	p, err := compiler.Compile(m, r.Config, compiler.Options{Target: chip.Target, Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	perKernel := 0
	seen := map[string]bool{}
	for _, k := range p.Kernels {
		if seen[k.Key] {
			continue
		}
		seen[k.Key] = true
		perKernel++
	}
	if r.KernelMeasures > 2*5*perKernel {
		t.Errorf("%d kernel measurements for %d kernels: more than the top 5 per kernel per phase", r.KernelMeasures, perKernel)
	}
	if !r.ModelGuided || r.TunedNs > r.DefaultNs*1.001 {
		t.Errorf("model-guided: tuned %.0f ns vs default %.0f ns (guided %v)", r.TunedNs, r.DefaultNs, r.ModelGuided)
	}
	// The same with the joint strategies: only the top k are measured.
	for _, st := range []Strategy{Annealing, MBO} {
		r := mustRun(t, m, Options{Chip: chip, Strategy: st, Budget: 500, Seed: 2, GraphModel: abs, TopKGraph: 4, ModelEvals: 60})
		if r.Measurements != 4 || r.ModelEvaluations != 60 {
			t.Errorf("%s: %d measurements, %d model evaluations; want 4 and 60", st, r.Measurements, r.ModelEvaluations)
		}
	}
	// A relative model cannot score whole programs.
	if _, err := Run(context.Background(), m, Options{Chip: chip, Budget: 5, GraphModel: rel}); err == nil {
		t.Error("a relative graph model was accepted")
	}
}

// TestUncertainKernels: an ensemble kernel model unsure of every pick has twice the top k
// options of each kernel measured, and the report counts the kernels; a sure one the
// top k.
func TestUncertainKernels(t *testing.T) {
	m, err := zoo.Resolve("mlp_768x3_b8")
	if err != nil {
		t.Fatal(err)
	}
	chip := testChip(t)
	rel := simModel{chip: chip, err: 0.05, relative: true}
	run := func(spread float64) *Report {
		return mustRun(t, m, Options{Chip: chip, Budget: 500, Seed: 2, KernelModel: spreadModel{rel, spread}, TopKKernel: 2, Kinds: []compiler.Kind{compiler.KindTile}})
	}
	sure, unsure := run(0.01), run(1)
	if sure.ModelKernels == 0 || sure.UncertainKernels != 0 || unsure.UncertainKernels != unsure.ModelKernels {
		t.Errorf("uncertain kernels: sure %d of %d, unsure %d of %d", sure.UncertainKernels, sure.ModelKernels, unsure.UncertainKernels, unsure.ModelKernels)
	}
	if unsure.KernelMeasures <= sure.KernelMeasures {
		t.Errorf("kernel measurements: %d when unsure, %d when sure: want more when unsure", unsure.KernelMeasures, sure.KernelMeasures)
	}
}

func TestOptionErrors(t *testing.T) {
	m := smallModule(t)
	chip := testChip(t)
	for _, o := range []Options{
		{Chip: chip},
		{Chip: chip, Budget: 5, Strategy: "nope"},
		{Chip: chip, Budget: 5, Noise: -1},
		{Chip: chip, Budget: 5, Kinds: []compiler.Kind{"tiles"}},
		{Budget: 5},
	} {
		if _, err := Run(context.Background(), m, o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	if _, err := ParseStrategy("SA"); err != nil {
		t.Error(err)
	}
}

// TestOptionsValidate: every invalid option is an *OptionError naming the field and the
// valid values, with no default substituted, both from Validate (as given) and from Run
// (where only zeros take defaults).
func TestOptionsValidate(t *testing.T) {
	chip := testChip(t)
	good := Defaults()
	good.Chip, good.Budget = chip, 5
	if err := good.Validate(); err != nil {
		t.Fatalf("defaults with a chip and a budget: %v", err)
	}
	for _, tc := range []struct {
		field string
		set   func(o *Options)
		inRun bool // also invalid in Run (not a zero that takes a default)
	}{
		{"Budget", func(o *Options) { o.Budget = 0 }, true},
		{"Budget", func(o *Options) { o.Budget = -1 }, true},
		{"TopKGraph", func(o *Options) { o.TopKGraph = -1 }, true},
		{"TopKGraph", func(o *Options) { o.TopKGraph = 0 }, false},
		{"TopKKernel", func(o *Options) { o.TopKKernel = 0 }, false},
		{"TopKKernel", func(o *Options) { o.TopKKernel = -5 }, true},
		{"ModelEvals", func(o *Options) { o.ModelEvals = -1 }, true},
		{"Runs", func(o *Options) { o.Runs = 0 }, false},
		{"Runs", func(o *Options) { o.Runs = -2 }, true},
		{"Runs", func(o *Options) { o.Runs = maxRuns + 1 }, true},
		{"Workers", func(o *Options) { o.Workers = -1 }, true},
		{"Workers", func(o *Options) { o.Workers = MaxWorkers + 1 }, true},
		{"Batch", func(o *Options) { o.Batch = -1 }, true},
		{"Noise", func(o *Options) { o.Noise = -0.01 }, true},
		{"Noise", func(o *Options) { o.Noise = math.NaN() }, true},
		{"Noise", func(o *Options) { o.Noise = math.Inf(1) }, true},
		{"GraphShare", func(o *Options) { o.GraphShare = 1.5 }, true},
		{"Strategy", func(o *Options) { o.Strategy = "nope" }, true},
		{"Strategy", func(o *Options) { o.Strategy = "" }, false},
		{"Kinds", func(o *Options) { o.Kinds = []compiler.Kind{"tiles"} }, true},
		{"Fusion", func(o *Options) { o.Fusion = "apollo" }, true},
		{"Fusion", func(o *Options) { o.Strategy, o.Fusion = Partition, compiler.FusionXLA }, true},
	} {
		o := good
		tc.set(&o)
		var oe *OptionError
		if err := o.Validate(); !errors.As(err, &oe) || oe.Field != tc.field || oe.Want == "" {
			t.Errorf("%s: Validate gives %v, want an OptionError for %s", tc.field, err, tc.field)
		}
		_, err := o.resolve()
		if tc.inRun && (!errors.As(err, &oe) || oe.Field != tc.field) {
			t.Errorf("%s: Run accepts it (%v)", tc.field, err)
		}
		if !tc.inRun && err != nil {
			t.Errorf("%s: zero takes the default in Run, got %v", tc.field, err)
		}
	}
	// Workers 0 means all cores (as for every --workers), in Validate as in Run.
	o0 := good
	o0.Workers = 0
	if err := o0.Validate(); err != nil {
		t.Errorf("Workers 0 (all cores): %v", err)
	}
	if r, err := o0.resolve(); err != nil || r.Workers != runtime.GOMAXPROCS(0) {
		t.Errorf("Workers 0 resolves to %d workers (%v), want GOMAXPROCS", r.Workers, err)
	}
	// A valid but non-canonical strategy spelling is accepted and canonicalized.
	o := good
	o.Strategy = "SA"
	if r, err := o.resolve(); err != nil || r.Strategy != Annealing {
		t.Errorf("strategy SA: %v, %q", err, r.Strategy)
	}
}

func TestAssignRoles(t *testing.T) {
	chip := testChip(t)
	abs, rel := simModel{chip: chip}, simModel{chip: chip, relative: true}
	g, k, err := AssignRoles([]Model{rel, abs}, []string{"r", "a"})
	if err != nil || g != Model(abs) || k != Model(rel) {
		t.Errorf("AssignRoles = %v, %v, %v", g, k, err)
	}
	if _, _, err := AssignRoles([]Model{abs, abs}, []string{"a1", "a2"}); err == nil || !strings.Contains(err.Error(), "a2") {
		t.Errorf("two absolute models: %v", err)
	}
}
