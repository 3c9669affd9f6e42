package gym

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/compiler/opt"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/zoo"
)

// rewardTol is the tolerance of a sum of rewards against the total reduction: the rewards
// are exact ratios of integers, summed in float64 over at most DefaultMaxSteps steps.
const rewardTol = 1e-12

// smallPrograms are quick to optimize: a zoo training step and two real dumps (one with
// while loops and calls).
var smallPrograms = []string{"mlp_96x2_b1_train", "bench:graphsage_tf", "bench:bench_scan_N2000_M3"}

func newEnv(t *testing.T, o Options) *Env {
	t.Helper()
	o.Verify = true
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// checkObs checks an observation's invariants: the histogram sums to the op count, the
// graph tensors are consistent and the op count is opt.OpCount of the env's module.
func checkObs(t *testing.T, e *Env, o Observation) {
	t.Helper()
	sum := 0
	for _, c := range o.Histogram {
		sum += c
	}
	if sum != o.OpCount || o.OpCount != opt.OpCount(e.Module()) {
		t.Fatalf("%s step %d: histogram sums to %d, op count %d, opt.OpCount %d", o.Program, o.Step, sum, o.OpCount, opt.OpCount(e.Module()))
	}
	g := o.Graph
	if len(g.NodeFeats) != g.Nodes()*NodeWidth || len(g.EdgeSrc) != len(g.EdgeDst) {
		t.Fatalf("%s: graph tensors inconsistent: %d nodes, %d features, %d/%d edges", o.Program, g.Nodes(), len(g.NodeFeats), len(g.EdgeSrc), len(g.EdgeDst))
	}
	for j := range g.EdgeSrc {
		if s, d := g.EdgeSrc[j], g.EdgeDst[j]; s < 0 || int(s) >= g.Nodes() || d < 0 || int(d) >= g.Nodes() {
			t.Fatalf("%s: edge %d (%d->%d) out of range", o.Program, j, s, d)
		}
	}
	if g.Nodes() < o.OpCount {
		t.Fatalf("%s: %d graph nodes < %d ops", o.Program, g.Nodes(), o.OpCount)
	}
	if len(NodeFeatureNames()) != NodeWidth {
		t.Fatalf("NodeFeatureNames has %d names, NodeWidth is %d", len(NodeFeatureNames()), NodeWidth)
	}
}

// episode runs actions on program (stopping early when the episode ends) and returns the
// observations and rewards.
func episode(t *testing.T, e *Env, program string, actions []int) ([]Observation, []float64) {
	t.Helper()
	o, err := e.Reset(program)
	if err != nil {
		t.Fatal(err)
	}
	checkObs(t, e, o)
	obs, rs := []Observation{o}, []float64{}
	for _, a := range actions {
		o, r, done, err := e.Step(a)
		if err != nil {
			t.Fatalf("%s: step %d (action %d): %v", program, len(rs)+1, a, err)
		}
		checkObs(t, e, o)
		obs, rs = append(obs, o), append(rs, r)
		if done {
			break
		}
	}
	return obs, rs
}

func randomActions(seed uint64, n int) []int {
	rng := rand.New(rand.NewPCG(seed, 7))
	a := make([]int, n)
	for i := range a {
		a[i] = rng.IntN(Stop()) // passes only
	}
	return a
}

// TestRewardsSumToTotalReduction runs random pass sequences (the verifier after every
// step) and checks the rewards sum to (initial − final) / initial and each reward is the
// step's op-count change over the initial count.
func TestRewardsSumToTotalReduction(t *testing.T) {
	for _, p := range smallPrograms {
		for seed := range uint64(3) {
			e := newEnv(t, Options{})
			acts := randomActions(seed, DefaultMaxSteps)
			obs, rs := episode(t, e, p, acts)
			init, final := obs[0].OpCount, obs[len(obs)-1].OpCount
			sum := 0.0
			for i, r := range rs {
				want := float64(obs[i].OpCount-obs[i+1].OpCount) / float64(init)
				if r != want {
					t.Fatalf("%s step %d: reward %g, want %g", p, i+1, r, want)
				}
				if pass := opt.All()[acts[i]]; r < 0 && !pass.Expands {
					t.Fatalf("%s step %d: negative reward %g (%s, which never grows the op count, grew it)", p, i+1, r, pass.Name)
				}
				sum += r
			}
			if want := float64(init-final) / float64(init); math.Abs(sum-want) > rewardTol {
				t.Fatalf("%s: rewards sum to %g, total reduction / initial is %g", p, sum, want)
			}
			if obs[len(obs)-1].Step != len(rs) {
				t.Fatalf("%s: last observation at step %d after %d steps", p, obs[len(obs)-1].Step, len(rs))
			}
		}
	}
}

// TestDefaultOrderMatchesOpt: XLA's default order (opt.XLAPipeline), played as actions
// one pass at a time, reaches the op count opt.RunStages gives.
func TestDefaultOrderMatchesOpt(t *testing.T) {
	p := "bench:graphsage_tf"
	m, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	idx := map[string]int{}
	for i, n := range Actions() {
		idx[n] = i
	}
	var acts []int
	if _, err := opt.RunStages(m, opt.XLAPipeline(), func(q opt.Pass) error { acts = append(acts, idx[q.Name]); return nil }); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, Options{MaxSteps: len(acts)})
	obs, _ := episode(t, e, p, acts)
	if got, want := obs[len(obs)-1].OpCount, opt.OpCount(m); got != want {
		t.Fatalf("XLA's order played as %d actions leaves %d ops, opt.RunStages %d", len(acts), got, want)
	}
}

// TestDeterministic: the same program and actions give identical observations and
// rewards in two environments, and the same seed picks the same programs.
func TestDeterministic(t *testing.T) {
	for _, p := range smallPrograms {
		acts := randomActions(11, 12)
		o1, r1 := episode(t, newEnv(t, Options{}), p, acts)
		o2, r2 := episode(t, newEnv(t, Options{}), p, acts)
		if !reflect.DeepEqual(o1, o2) || !reflect.DeepEqual(r1, r2) {
			t.Fatalf("%s: two runs of the same actions differ", p)
		}
	}
	pick := func(seed int64) []string {
		e := newEnv(t, Options{Seed: seed, Programs: smallPrograms})
		var got []string
		for range 8 {
			o, err := e.Reset("")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, o.Program)
		}
		return got
	}
	a, b, c := pick(1), pick(1), pick(2)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("seed 1 picked %v then %v", a, b)
	}
	if reflect.DeepEqual(a, c) {
		t.Fatalf("seeds 1 and 2 picked the same 8 programs %v", a)
	}
}

// TestStopAndLimit: stop ends the episode with reward 0 and no change; the episode ends
// after MaxSteps steps; a step after the end is an error.
func TestStopAndLimit(t *testing.T) {
	e := newEnv(t, Options{MaxSteps: 3})
	o0, err := e.Reset("mlp_96x2_b1_train")
	if err != nil {
		t.Fatal(err)
	}
	o, r, done, err := e.Step(Stop())
	if err != nil || !done || r != 0 || o.OpCount != o0.OpCount || o.Step != 1 {
		t.Fatalf("stop: obs step %d ops %d (was %d), reward %g, done %v, err %v", o.Step, o.OpCount, o0.OpCount, r, done, err)
	}
	if _, _, _, err := e.Step(0); !errors.Is(err, ErrEpisodeOver) {
		t.Fatalf("step after stop: %v, want ErrEpisodeOver", err)
	}
	if _, err := e.Reset("mlp_96x2_b1_train"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		_, _, done, err := e.Step(0)
		if err != nil {
			t.Fatal(err)
		}
		if done != (i == 3) {
			t.Fatalf("step %d of a 3-step limit: done = %v", i, done)
		}
	}
	if _, _, _, err := e.Step(0); !errors.Is(err, ErrEpisodeOver) {
		t.Fatalf("step after the limit: %v, want ErrEpisodeOver", err)
	}
	if _, err := New(Options{MaxSteps: -1}); err == nil {
		t.Fatal("MaxSteps -1 accepted")
	}
}

// TestInvalidAction: an action out of range is an error wrapping ErrInvalidAction and
// leaves the episode running and unchanged.
func TestInvalidAction(t *testing.T) {
	e := newEnv(t, Options{})
	o0, err := e.Reset("mlp_96x2_b1_train")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []int{-1, Stop() + 1, 1 << 40} {
		if _, _, _, err := e.Step(a); !errors.Is(err, ErrInvalidAction) {
			t.Fatalf("action %d: %v, want ErrInvalidAction", a, err)
		}
	}
	o, _, _, err := e.Step(Stop())
	if err != nil || o.Step != 1 || o.OpCount != o0.OpCount {
		t.Fatalf("after invalid actions the episode should be at step 0 and running: %+v %v", o.Step, err)
	}
}

// TestPassErrorEndsEpisode: a failing pass is an error that ends the episode, never a
// reward.
func TestPassErrorEndsEpisode(t *testing.T) {
	e := newEnv(t, Options{})
	if _, err := e.Reset("mlp_96x2_b1_train"); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	e.passes[2] = opt.Pass{Name: "broken", Run: func(*hlo.Module) (bool, error) { return true, boom }}
	_, r, done, err := e.Step(2)
	if !errors.Is(err, boom) || !done || r != 0 {
		t.Fatalf("failing pass: reward %g, done %v, err %v", r, done, err)
	}
	if _, _, _, err := e.Step(0); !errors.Is(err, ErrEpisodeOver) {
		t.Fatalf("step after a failed pass: %v, want ErrEpisodeOver", err)
	}
}

// TestIdle: a pass that changed nothing is idle until another pass changes the module.
func TestIdle(t *testing.T) {
	e := newEnv(t, Options{})
	if _, err := e.Reset("bench:graphsage_tf"); err != nil {
		t.Fatal(err)
	}
	cse := passIndex(t, "cse")
	o, _, _, err := e.Step(cse)
	if err != nil {
		t.Fatal(err)
	}
	if o.Idle[cse] {
		t.Fatal("cse changed graphsage_tf but is idle")
	}
	o, r, _, err := e.Step(cse)
	if err != nil || r != 0 || !o.Idle[cse] {
		t.Fatalf("cse twice: reward %g, idle %v, err %v", r, o.Idle[cse], err)
	}
	o, _, _, err = e.Step(passIndex(t, "algsimp"))
	if err != nil || o.Idle[cse] {
		t.Fatalf("algsimp changed the module but cse stays idle (err %v)", err)
	}
}

func passIndex(t *testing.T, name string) int {
	t.Helper()
	for i, n := range Actions() {
		if n == name {
			return i
		}
	}
	t.Fatalf("no pass %s", name)
	return -1
}

// TestLoad: bundled benchmarks and zoo names load; unknown ones are errors naming them.
func TestLoad(t *testing.T) {
	for _, p := range BundledHLO() {
		m, err := Load(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := hlo.Verify(m); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	if len(BundledHLO()) != 7 { // testdata/README.md lists the seven files
		t.Fatalf("bundled: %v", BundledHLO())
	}
	if _, err := Load("bench:nope"); err == nil {
		t.Fatal("bench:nope loaded")
	}
	if _, err := New(Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := (&Env{}).Reset(""); err == nil {
		t.Fatal("reset without programs accepted")
	}
	ps, err := ExpandPrograms([]string{"train", "mlp_96x2_b1", "gpt2_tiny_s128_b8_train"})
	if err != nil || len(ps) != len(trainSet)+1 {
		t.Fatalf("expand: %v %v", ps, err)
	}
}

// TestBenchmarkSets: every benchmark program loads and verifies, and the sets split the
// programs by model variant (Variant): no variant is both trained on and held out (not
// even as another batch size or the inference graph of a training step); every zoo
// program of the held-out set is another size variant of a family that trains, except
// ViT, held out whole; and the real dumps are in the sets.
func TestBenchmarkSets(t *testing.T) {
	all, err := Programs("all")
	if err != nil {
		t.Fatal(err)
	}
	trainVariant := map[string]string{}
	trainFamily := map[string]bool{}
	for _, p := range trainSet {
		if q, ok := trainVariant[zoo.Variant(p)]; ok {
			t.Errorf("training programs %s and %s are one variant", p, q)
		}
		trainVariant[zoo.Variant(p)] = p
		if !strings.HasPrefix(p, BenchPrefix) {
			m, err := zoo.Lookup(p)
			if err != nil {
				t.Fatal(err)
			}
			trainFamily[m.Family] = true
		}
	}
	heldWhole := map[string]bool{"vit": true}
	for _, p := range heldOutSet {
		if q, ok := zoo.SeenVariant(trainSet, p); ok {
			t.Errorf("held-out %s is the model variant %s of training program %s", p, zoo.Variant(p), q)
		}
		if strings.HasPrefix(p, BenchPrefix) {
			continue
		}
		m, err := zoo.Lookup(p)
		if err != nil {
			t.Fatal(err)
		}
		if trainFamily[m.Family] == heldWhole[m.Family] {
			t.Errorf("held-out %s: family %s trains %v, held out whole %v", p, m.Family, trainFamily[m.Family], heldWhole[m.Family])
		}
	}
	for _, p := range []string{"bench:graphsage_tf", "bench:resnet50_keras_jax_f32", "bench:bench_scan_N2000_M3"} {
		if !slices.Contains(all, p) {
			t.Errorf("real dump %s is in no benchmark set", p)
		}
	}
	// The split is by variant even where names differ only in suffixes.
	for _, c := range [][2]string{{"mlp_96x2_b1_train", "mlp_96x2"}, {"mlp_96x2_b1", "mlp_96x2"}, {"resnet18_b32", "resnet18"},
		{"bench:graphsage_tf", "bench:graphsage_tf"}, {"bench:bench_scan_N2000_M3", "bench:bench_scan_N2000_M3"}, {"x_b", "x_b"}, {"_b1", "_b1"}} {
		if v := zoo.Variant(c[0]); v != c[1] {
			t.Errorf("zoo.Variant(%q) = %q, want %q", c[0], v, c[1])
		}
	}
	if testing.Short() {
		return
	}
	for _, p := range all {
		m, err := Load(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := hlo.Verify(m); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	if _, err := Programs("nope"); err == nil {
		t.Fatal("set nope accepted")
	}
}

// TestTimeReward: under RewardTime a step's reward is its simulated-time reduction over
// the initial simulated time (SimNs), so the rewards sum to the episode's; an unknown
// reward is refused.
func TestTimeReward(t *testing.T) {
	p := "mlp_96x2_b1_train"
	e := newEnv(t, Options{Reward: RewardTime, MaxSteps: 4})
	acts := []int{}
	for _, n := range []string{"logistic-expander", "cse", "algsimp", "dce"} {
		acts = append(acts, slices.Index(Actions(), n))
	}
	obs, rs := episode(t, e, p, acts)
	sum := 0.0
	for i, r := range rs {
		if want := (obs[i].SimNs - obs[i+1].SimNs) / obs[0].InitialSimNs; math.Abs(r-want) > rewardTol {
			t.Fatalf("step %d: reward %g, want %g", i+1, r, want)
		}
		sum += r
	}
	last := obs[len(obs)-1]
	m, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	chip, err := tpusim.Preset(tpusim.DefaultChip)
	if err != nil {
		t.Fatal(err)
	}
	init, err := SimNs(m, chip)
	if err != nil {
		t.Fatal(err)
	}
	if obs[0].InitialSimNs != init || init <= 0 {
		t.Fatalf("initial sim %g ns, SimNs gives %g", obs[0].InitialSimNs, init)
	}
	if want := (init - last.SimNs) / init; math.Abs(sum-want) > rewardTol {
		t.Fatalf("rewards sum to %g, the time saved is %g", sum, want)
	}
	if _, err := New(Options{Reward: "flops"}); err == nil || !strings.Contains(err.Error(), "want ops or time") {
		t.Errorf("an unknown reward: %v", err)
	}
}
