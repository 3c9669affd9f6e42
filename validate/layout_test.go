package validate

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/dataset/tpugraphs"
	"github.com/tpucost/tpucost/metric"
	"github.com/tpucost/tpucost/tpusim"
)

// realLayoutFile is TpuGraphs' layout tuning file (a 3,163-node 3D U-Net training step
// measured on a TPU v3 under 122 layout assignments; see dataset/tpugraphs/testdata).
const realLayoutFile = "../dataset/tpugraphs/testdata/module_tuning_data_layout.pb"

func kendallTau(x, y []float64, res float64) float64 {
	t, err := metric.KendallTauResolved(x, y, res)
	if err != nil {
		panic(err)
	}
	return t
}

func top1Slowdown(pred, meas []float64) float64 {
	s, err := metric.SlowdownAtK(metric.Kernel{True: meas, Pred: pred}, 1)
	if err != nil {
		panic(err)
	}
	return s
}

// TestReplayRealLayoutRuns replays the 112 timed layout runs of the real file on the
// uncalibrated v3 preset and scores the simulator against the hardware.
//
// Where the thresholds come from (measured with tpusim-1.3, this package's replay):
// the hardware's runs fall into three tiers (+0.77% when 15 weight gradients are laid out
// input-feature-minor, +1.62% when convolution.8588 is laid out with its 64 output
// features minor) and are otherwise equal within ~20 µs of measurement noise, so a
// perfect tier predictor scores τ ≈ 0.57 here. The simulator ranks the tiers exactly
// (τ = 0.57 when predictions within measurementResolution count as ties, as the
// hardware cannot order them) and, counting its sub-microsecond differences between
// runs of one tier (a fused copy's code, an XLU pass) as orderings, strictly τ = 0.28.
// tpusim-1.2's model scored 0.21 on the same configs, ranking HBM copies of batch-minor
// operands the TPU never paid for, and saw neither tier. The thresholds leave room for
// small timing changes elsewhere in the simulator, not for losing a tier.
func TestReplayRealLayoutRuns(t *testing.T) {
	const (
		// measurementResolution: identical configurations of this module measure up
		// to ~20 µs (2e-5 of 910 ms) apart on the TPU; predictions closer than 1e-5
		// are ties.
		measurementResolution = 1e-5
		minTau                = 0.5  // measured 0.57 (the tier ceiling)
		minStrictTau          = 0.2  // measured 0.28
		maxTop1               = 1e-3 // measured 3e-5: the simulator's best is in the fastest tier
	)
	if testing.Short() {
		t.Skip("compiles a 3,163-node module 113 times")
	}
	c, err := tpusim.Preset("v3")
	if err != nil {
		t.Fatal(err)
	}
	// Through Validate, as `tpucost validate` runs it: the report's layout half.
	rep, err := Validate([]string{realLayoutFile}, Options{Chip: c})
	if err != nil {
		t.Fatal(err)
	}
	lr := rep.Layout
	if rep.Tile != nil || lr == nil || lr.Programs != 1 || lr.Configs != 112 || lr.Sim == nil || lr.Analytical == nil || lr.Default == nil {
		t.Fatalf("report: tile %v, layout %+v", rep.Tile != nil, lr)
	}
	if lr.Sim.KendallTau < minTau || lr.Sim.KendallTauStrict < minStrictTau {
		t.Errorf("reported sim τ %.3f (strict %.3f)", lr.Sim.KendallTau, lr.Sim.KendallTauStrict)
	}
	r := lr.Replayed[0]
	if len(r.Runs) != 112 {
		t.Fatalf("%d runs replayed, want the 112 timed ones", len(r.Runs))
	}
	errRuns := 0
	for _, u := range r.Unmapped {
		if strings.Contains(u.Reason, "error run") {
			errRuns++
			continue
		}
		t.Errorf("unmapped %s: %s", u.Name, u.Reason)
	}
	if errRuns != 10 {
		t.Errorf("%d error runs listed, want 10", errRuns)
	}
	var meas, sim, an []float64
	def := -1
	for i, run := range r.Runs {
		meas = append(meas, run.MeasuredNs)
		sim = append(sim, run.SimNs)
		an = append(an, run.AnalyticalNs)
		if run.Default {
			def = i
		}
	}
	if def < 0 {
		t.Fatal("no default run")
	}
	tau, strict := kendallTau(sim, meas, measurementResolution), kendallTau(sim, meas, 0)
	t.Logf("sim: τ %.3f (strict %.3f), top-1 slowdown %.5f; analytical: τ %.3f (strict %.3f), top-1 %.5f; XLA default top-1 %.5f",
		tau, strict, top1Slowdown(sim, meas), kendallTau(an, meas, measurementResolution), kendallTau(an, meas, 0), top1Slowdown(an, meas),
		meas[def]/slices.Min(meas)-1)
	if tau < minTau || strict < minStrictTau {
		t.Errorf("sim τ %.3f (strict %.3f), want ≥ %.2f (strict ≥ %.2f)", tau, strict, minTau, minStrictTau)
	}
	if s := top1Slowdown(sim, meas); s > maxTop1 {
		t.Errorf("sim top-1 slowdown %.5f, want ≤ %g", s, maxTop1)
	}
	// The tiers' size: the simulator's mean time of each slow tier over the fast tier's
	// is within a factor of 2 of the hardware's (measured 7.0 and 14.7 ms; simulated
	// 8.3 and 20.0 ms).
	const tierFactor = 2
	tiers := func(x []float64) (t0, t1, t2 float64) {
		var a, b, c []float64
		lo := slices.Min(meas)
		for i, m := range meas {
			switch {
			case m > lo*1.012:
				c = append(c, x[i])
			case m > lo*1.005:
				b = append(b, x[i])
			default:
				a = append(a, x[i])
			}
		}
		return mean(a), mean(b), mean(c)
	}
	m0, m1, m2 := tiers(meas)
	s0, s1, s2 := tiers(sim)
	for _, tc := range []struct {
		name      string
		sim, meas float64
	}{{"weight gradients input-feature-minor", s1 - s0, m1 - m0}, {"convolution.8588 64-minor", s2 - s0, m2 - m0}} {
		if r := tc.sim / tc.meas; r < 1/float64(tierFactor) || r > tierFactor {
			t.Errorf("%s: simulated %.1f ms, measured %.1f ms", tc.name, tc.sim/1e6, tc.meas/1e6)
		}
	}
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

func TestCompleteLayout(t *testing.T) {
	rm := hlo.Array(hlo.BF16, 2, 96, 96, 96, 32)
	cm := rm.WithLayout(&hlo.Layout{MinorToMajor: []int{0, 1, 2, 3, 4}})
	for _, tc := range []struct {
		s      hlo.Shape
		prefix []int32
		want   []int
	}{
		{rm, []int32{4, 0}, []int{4, 0, 3, 2, 1}}, // TPU's batch-in-sublanes conv layout
		{rm, []int32{3, 4}, []int{3, 4, 2, 1, 0}},
		{rm, []int32{4, 3, 2, 1, 0}, []int{4, 3, 2, 1, 0}},
		{cm, []int32{4, 0}, []int{4, 0, 1, 2, 3}}, // the rest in the module's order
	} {
		got, err := CompleteLayout(tc.s, tc.prefix)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("CompleteLayout(%v, %v) = %v, %v; want %v", tc.s, tc.prefix, got, err, tc.want)
		}
	}
	for _, bad := range [][]int32{{4, 4}, {5}, {-1}} {
		if _, err := CompleteLayout(rm, bad); err == nil {
			t.Errorf("CompleteLayout(%v) accepted", bad)
		}
	}
}

// A hand-built module: a run the TPU failed, a run without a time and a run whose order
// is not a valid one are listed in Unmapped with their reasons, never dropped; the timed
// runs are replayed with their configs; a layout that moves the dot's minor dimension
// (and its operand's) changes the simulated time.
func TestReplayLayoutSmall(t *testing.T) {
	m, err := hlo.Parse("small.hlo", []byte(`HloModule small
ENTRY e {
  a = bf16[512,2048] parameter(0)
  b = bf16[2048,64] parameter(1)
  ROOT d = bf16[512,64] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
`))
	if err != nil {
		t.Fatal(err)
	}
	var order [][2]string
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			order = append(order, [2]string{c.Name, in.Name})
		}
	}
	at := slices.Index(order, [2]string{m.Entry.Name, "d"})
	timed := func(ns int64, def bool, tensors ...[]int32) tpugraphs.Run {
		return tpugraphs.Run{Layout: &tpugraphs.LayoutConfig{Nodes: [][][]int32{tensors}}, HasProfile: true,
			Profile: tpugraphs.Profile{ComputeTimeNs: ns}, IsDefault: def}
	}
	failed := timed(0, false, []int32{0, 1})
	failed.Error = true
	mt := tpugraphs.ModuleTuning{Module: m, Instructions: order, ConfigIndexToNode: []uint64{uint64(at)},
		Runs: []tpugraphs.Run{
			timed(1000, true, []int32{1, 0}),
			timed(2000, false, []int32{0, 1}, []int32{1, 0}, nil),
			failed,
			timed(1, false, []int32{1, 0}),
			timed(3000, false, []int32{1, 1}),
		}}
	c, err := tpusim.Preset("v3")
	if err != nil {
		t.Fatal(err)
	}
	r, err := ReplayLayout(mt, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Runs) != 2 || r.Runs[0].Index != 0 || !r.Runs[0].Default || r.Runs[1].Index != 1 {
		t.Fatalf("runs %+v, want runs 0 (default) and 1", r.Runs)
	}
	if !strings.Contains(r.Runs[1].Config, `"d":[0,1]`) || !strings.Contains(r.Runs[1].Config, `"operand_layout":{"d":[[1,0],[]]}`) {
		t.Errorf("run 1 config %s", r.Runs[1].Config)
	}
	if r.Runs[1].SimNs == r.Runs[0].SimNs || !(r.Runs[0].AnalyticalNs > 0) {
		t.Errorf("512-minor output %g ns, 64-minor %g ns (analytical %g): the layout changes nothing", r.Runs[1].SimNs, r.Runs[0].SimNs, r.Runs[0].AnalyticalNs)
	}
	var names []string
	for _, u := range r.Unmapped {
		names = append(names, u.Name+": "+u.Reason)
	}
	sort.Strings(names)
	want := []string{"run 2: error run", "run 3: no measured compute time", "run 4: node d tensor 0"}
	if len(names) != len(want) {
		t.Fatalf("unmapped %q, want %d", names, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(names[i], w) {
			t.Errorf("unmapped %q, want %q...", names[i], w)
		}
	}
	mt.ConfigIndexToNode = []uint64{999}
	if _, err := ReplayLayout(mt, c); err == nil || !strings.Contains(err.Error(), "999") {
		t.Errorf("out-of-range config index: %v", err)
	}
}
