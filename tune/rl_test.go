package tune

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/features"
	"github.com/tpucost/tpucost/internal/sealed"
	"github.com/tpucost/tpucost/nn"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/zoo"
)

var fusionOnly = []compiler.Kind{compiler.KindFusion}

// toyEnv is a synthetic decision space: E fusion decisions (a producer -> consumer edge
// each) with random node features and random defaults, and L layout nodes of 2–6 options with random features and a random
// default. The best config fuses exactly the decisions whose producer has feature 0 set
// (a known subset, unrelated to the defaults) and picks, per layout node, the one option
// with option feature 4 set (unrelated to the default). Reward: the fraction of decisions
// that agree with it.
type toyEnv struct {
	d       *decisions
	target  []bool
	ltarget []int
}

func newToyEnv(seed uint64, e, l int) *toyEnv {
	rng := rand.New(rand.NewPCG(seed, 7))
	const F = rlNodeFeatures
	t := &toyEnv{d: &decisions{}}
	node := func() int { // a new node with random binary features
		for range F {
			t.d.x = append(t.d.x, float32(rng.IntN(2)))
		}
		return len(t.d.x)/F - 1
	}
	var src, dst []int32
	for i := range e {
		t.d.names = append(t.d.names, "e"+string(rune('a'+i%26))+string(rune('a'+i/26)))
		p, x := node(), node()
		t.d.prod, t.d.cons = append(t.d.prod, p), append(t.d.cons, x)
		src, dst = append(src, int32(p)), append(dst, int32(x))
		def := rng.IntN(2) == 1
		t.d.defaults = append(t.d.defaults, def)
		sign, db := float32(-1), float32(0)
		if def {
			sign, db = 1, 1
		}
		t.d.prior = append(t.d.prior, sign)
		t.d.ef = append(t.d.ef, db, 0, 0, 0, 0)
		t.target = append(t.target, t.d.x[p*F] == 1)
	}
	t.d.lstart = []int{0}
	for v := range l {
		k := 2 + rng.IntN(5)
		def, best := rng.IntN(k), rng.IntN(k)
		t.d.lnames = append(t.d.lnames, "n"+string(rune('a'+v%26))+string(rune('a'+v/26)))
		t.d.ldef = append(t.d.ldef, def)
		var opts [][]int
		n := node()
		for o := range k {
			opts = append(opts, []int{o, k})
			t.d.onode = append(t.d.onode, n)
			f := make([]float32, rlOptionFeatures)
			for j := range f {
				f[j] = float32(rng.IntN(2))
			}
			f[0], f[4] = 0, 0
			if o == def {
				f[0] = 1
			}
			if o == best {
				f[4] = 1
			}
			t.d.of = append(t.d.of, f...)
			t.d.lprior = append(t.d.lprior, f[0])
			t.d.loff = append(t.d.loff, f[0]*float32(math.Log(float64(k-1))))
		}
		t.d.lopts = append(t.d.lopts, opts)
		t.d.lstart = append(t.d.lstart, t.d.lstart[v]+k)
		t.ltarget = append(t.ltarget, best)
	}
	t.d.nb = nn.NeighboursOf(len(t.d.x)/F, src, dst, rlMaxDegree)
	return t
}

func (t *toyEnv) decisions() *decisions { return t.d }

func (t *toyEnv) rewards(_ context.Context, acts []action) ([]float64, error) {
	out := make([]float64, len(acts))
	for k, a := range acts {
		n := float64(len(a.fuse) + len(a.layout))
		for e := range a.fuse {
			if a.fuse[e] == t.target[e] {
				out[k] += 1 / n
			}
		}
		for v := range a.layout {
			if a.layout[v] == t.ltarget[v] {
				out[k] += 1 / n
			}
		}
	}
	return out, nil
}

// layoutAgreement is the fraction of layout nodes where a picks the target.
func (t *toyEnv) layoutAgreement(a action) float64 {
	n := 0
	for v, o := range a.layout {
		if o == t.ltarget[v] {
			n++
		}
	}
	return float64(n) / float64(len(a.layout))
}

// TestRLToyPolicyImproves: REINFORCE with the moving-average baseline learns the known
// best config of a synthetic space of layout and fusion decisions: the mean sampled
// reward and the greedy config's reward rise from chance (the defaults are random, so
// the initial policy agrees with the target on about half the fusion decisions and a
// quarter of the layout nodes) to near 1, on the layout decisions too.
func TestRLToyPolicyImproves(t *testing.T) {
	toys := []*toyEnv{newToyEnv(1, 40, 20), newToyEnv(2, 40, 20)}
	envs := []rlEnv{toys[0], toys[1]}
	p := NewPolicy(5)
	hist, err := trainPolicy(context.Background(), p, envs, TrainPolicyOptions{Seed: 5, Episodes: 150, Samples: 16, LR: 0.02, Baseline: 0.8})
	if err != nil {
		t.Fatal(err)
	}
	first, last := hist[0], hist[len(hist)-1]
	t.Logf("episode 1: reward %.3f greedy %.3f loss %.3f; episode %d: reward %.3f greedy %.3f loss %.3f",
		first.MeanReward, first.GreedyMean, first.Loss, last.Episode, last.MeanReward, last.GreedyMean, last.Loss)
	// chance is about 0.4 with a 60-decision spread (sd 0.07 per program); a learned
	// policy must be far above it. 0.9 leaves room for the sampling noise of a policy
	// that still explores.
	const learned = 0.9
	if first.GreedyMean > 0.7 {
		t.Fatalf("the untrained policy already agrees on %.2f of the decisions: the toy is not a test", first.GreedyMean)
	}
	if last.GreedyMean < learned || last.MeanReward < learned-0.05 {
		t.Errorf("after %d episodes: greedy reward %.3f, mean sampled %.3f; want >= %.2f", last.Episode, last.GreedyMean, last.MeanReward, learned)
	}
	for i, toy := range toys {
		pr, err := p.probs(toy.d)
		if err != nil {
			t.Fatal(err)
		}
		if got := toy.layoutAgreement(greedyAction(toy.d, pr)); got < learned {
			t.Errorf("toy %d: the greedy layout picks the best option of %.2f of the nodes, want >= %.2f", i, got, learned)
		}
	}
}

// TestRLLayoutGradient: the policy gradient of the layout head (computed through a
// constant logit gradient, see build) matches central finite differences of the
// surrogate loss grads reports, on a toy space with fusion and layout decisions.
func TestRLLayoutGradient(t *testing.T) {
	toy := newToyEnv(3, 6, 5)
	p := NewPolicy(3)
	rng := rand.New(rand.NewPCG(4, 5))
	pr, err := p.probs(toy.d)
	if err != nil {
		t.Fatal(err)
	}
	var acts []action
	var adv []float64
	for range 6 {
		acts = append(acts, sampleAction(rng, toy.d, pr))
		adv = append(adv, rng.NormFloat64())
	}
	c := reinforceCoef(toy.d, acts, adv)
	_, gs, err := p.grads(toy.d, c)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for i, pp := range p.params {
		for _, j := range []int{0, len(pp.Data) / 2, len(pp.Data) - 1} {
			const eps = 1e-2
			orig := pp.Data[j]
			pp.Data[j] = orig + eps
			lp, _, err := p.grads(toy.d, c)
			if err != nil {
				t.Fatal(err)
			}
			pp.Data[j] = orig - eps
			lm, _, err := p.grads(toy.d, c)
			if err != nil {
				t.Fatal(err)
			}
			pp.Data[j] = orig
			num, got := (lp-lm)/(2*eps), float64(gs[i][j])
			if math.Abs(num-got) > 0.02+0.05*math.Abs(num) {
				t.Errorf("%s[%d]: gradient %.5f, finite differences %.5f", pp.Name, j, got, num)
			}
			checked++
		}
	}
	if checked != 3*len(p.params) {
		t.Fatalf("checked %d", checked)
	}
}

func rlModule(t testing.TB, name string) *hlo.Module {
	t.Helper()
	m, err := zoo.Resolve(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRLBudgetExact: the rl strategy takes exactly the budget, never measuring a program
// twice, deciding fusion, layout or both, also with a policy that is certain of every
// decision (the exploration keeps it sampling new programs), and leaves the caller's
// policy unchanged (it fine-tunes a copy).
func TestRLBudgetExact(t *testing.T) {
	chip := testChip(t)
	layoutOnly := []compiler.Kind{compiler.KindLayout}
	for _, c := range []struct {
		prog  string
		kinds []compiler.Kind
	}{
		{"mlp_768x3_b8", fusionOnly},
		{"dlrm_small_b32", layoutOnly},
		{"dlrm_small_b32", RLKinds()},
	} {
		m := rlModule(t, c.prog)
		p := NewPolicy(1)
		orig := p
		sure := NewPolicy(1)
		sure.param("prior").Data[0] = 60 // p(default) = 1 in float32
		sure.param("lprior").Data[0] = 60
		before := p.clone()
		for i, budget := range []int{1, 7, 45, 45} {
			if i == 3 {
				p = sure
			}
			var log measureLog
			r := mustRun(t, m, Options{Chip: chip, Strategy: RL, Policy: p, Kinds: c.kinds, Budget: budget, Seed: 3, Noise: 0.02, measured: log.hook})
			if r.Measurements != budget || len(log.ids) != budget || r.ProgramMeasures != budget {
				t.Errorf("%s %v budget %d (sure %v): %d measurements reported (%d program), %d taken", c.prog, c.kinds, budget, i == 3, r.Measurements, r.ProgramMeasures, len(log.ids))
			}
			seen := map[string]bool{}
			for _, id := range log.ids {
				if seen[id] {
					t.Errorf("%s %v budget %d: %s measured twice", c.prog, c.kinds, budget, id)
				}
				seen[id] = true
			}
		}
		for i := range orig.params {
			if !slices.Equal(orig.params[i].Data, before.params[i].Data) {
				t.Errorf("the search changed the caller's policy parameter %s", orig.params[i].Name)
			}
		}
	}
}

// rlProgram compiles the zoo program name with default configs for the test chip and
// returns the chip, its compile context, the compiled start and its program graph, as
// the rl search sees them.
func rlProgram(tb testing.TB, name string) (tpusim.Chip, *compilerCtx, *candidate, *hlo.Module) {
	tb.Helper()
	chip := testChip(tb)
	cc := &compilerCtx{mod: rlModule(tb, name), opts: compiler.Options{Target: chip.Target}}
	base, err := cc.compile(nil)
	if err != nil {
		tb.Fatal(err)
	}
	g, err := programGraph(cc, base.cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return chip, cc, base, g
}

// TestRLLayoutChanges: sampled layout decisions reach the compiler (the compiled
// programs' effective layouts differ from the start's), and with fusion only no layout
// changes.
func TestRLLayoutChanges(t *testing.T) {
	chip, cc, base, g := rlProgram(t, "dlrm_small_b32")
	for _, kinds := range [][]compiler.Kind{{compiler.KindLayout}, fusionOnly} {
		d, err := newDecisions(g, base.space, newKindSet(kinds), chip.Target)
		if err != nil {
			t.Fatal(err)
		}
		pr, err := NewPolicy(2).probs(d)
		if err != nil {
			t.Fatal(err)
		}
		pr = d.explore(pr, 0.3)
		rng := rand.New(rand.NewPCG(1, 1))
		changed, fps := 0, map[string]bool{}
		for range 8 {
			c, err := cc.compile(d.apply(base.cfg, sampleAction(rng, d, pr)))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.cfg.Layout, base.cfg.Layout) {
				changed++
			}
			fps[c.fp] = true
		}
		if layout := kinds[0] == compiler.KindLayout; layout && (changed == 0 || len(fps) < 2) || !layout && changed > 0 {
			t.Errorf("kinds %v: %d of 8 sampled programs change a layout, %d distinct programs", kinds, changed, len(fps))
		}
	}
}

// TestRLDeterminism: the same seed gives the same report and config with 1 and 2
// workers, deciding layout and fusion.
func TestRLDeterminism(t *testing.T) {
	m := rlModule(t, "mlp_768x3_b8")
	chip := testChip(t)
	o := Options{Chip: chip, Strategy: RL, Policy: NewPolicy(2), Kinds: RLKinds(), Budget: 40, Seed: 11, Noise: 0.03, Workers: 1}
	a := reportJSON(t, mustRun(t, m, o))
	o.Workers = 2
	b := reportJSON(t, mustRun(t, m, o))
	if a != b {
		t.Errorf("1 and 2 workers differ:\n%s\n%s", a, b)
	}
}

// TestRLNeedsPolicyAndKinds: rl without a policy, or with kinds other than layout and
// fusion, is an error, not a fallback.
func TestRLNeedsPolicyAndKinds(t *testing.T) {
	m := rlModule(t, "mlp_96x2_b1")
	chip := testChip(t)
	_, err := Run(context.Background(), m, Options{Chip: chip, Strategy: RL, Kinds: fusionOnly, Budget: 5})
	if !errors.Is(err, ErrNoPolicy) {
		t.Errorf("no policy: got %v, want ErrNoPolicy", err)
	}
	for _, kinds := range [][]compiler.Kind{nil, {compiler.KindTile}, {compiler.KindFusion, compiler.KindFlags}} {
		_, err = Run(context.Background(), m, Options{Chip: chip, Strategy: RL, Policy: NewPolicy(1), Kinds: kinds, Budget: 5})
		if err == nil {
			t.Errorf("rl with kinds %v: no error", kinds)
		}
	}
}

// TestTrainPolicyDeterminism: training on the simulator gives the same parameters for a
// seed whatever the number of workers, and another seed gives others.
func TestTrainPolicyDeterminism(t *testing.T) {
	mods := []*hlo.Module{rlModule(t, "mlp_768x3_b8")}
	chip := testChip(t)
	train := func(seed int64, workers int) *Policy {
		p, err := TrainPolicy(context.Background(), mods, TrainPolicyOptions{Chip: chip, Seed: seed, Episodes: 3, Samples: 4, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b, c := train(1, 1), train(1, 2), train(2, 1)
	same := func(x, y *Policy) bool {
		for i := range x.params {
			if !slices.Equal(x.params[i].Data, y.params[i].Data) {
				return false
			}
		}
		return true
	}
	if !same(a, b) {
		t.Error("seed 1: 1 and 2 workers train different policies")
	}
	if same(a, c) {
		t.Error("seeds 1 and 2 train the same policy")
	}
	if len(a.Meta.History) != 3 || a.Meta.Programs[0] != "mlp_768x3_b8" || !slices.Equal(a.Meta.Kinds, RLKinds()) {
		t.Errorf("training record: %+v", a.Meta)
	}
}

// TestPolicyCheckpoint: a saved policy loads back identical (same probabilities); a
// flipped byte, a truncated file, another format or other dimensions are refused.
// reseal encodes f as SavePolicy does, with a valid checksum (a consistent file, as
// another build would write it).
func reseal(t *testing.T, f *policyFile) []byte {
	t.Helper()
	c := *f
	c.Checksum = ""
	b, err := json.MarshalIndent(&c, "", "  ")
	if err == nil {
		b, err = sealed.Seal(append(b, '\n'))
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPolicyCheckpoint(t *testing.T) {
	dir := t.TempDir()
	p := NewPolicy(4)
	p.Meta = PolicyMeta{Programs: []string{"a", "b"}, Kinds: RLKinds(), Seed: 4, Episodes: 2, Samples: 8, Chip: "v4", History: []EpisodeReport{{Episode: 1, MeanReward: 0.1}}}
	if err := SavePolicy(dir, p); err != nil {
		t.Fatal(err)
	}
	q, err := LoadPolicy(dir)
	if err != nil {
		t.Fatal(err)
	}
	env := newToyEnv(3, 20, 10)
	pa, err := p.probs(env.d)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := q.probs(env.d)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(pa, pb) || len(pa.fuse) != 20 || len(pa.layout) != env.d.rows() {
		t.Error("the loaded policy's probabilities differ")
	}
	if q.Meta.Chip != "v4" || len(q.Meta.History) != 1 || !slices.Equal(q.Meta.Kinds, RLKinds()) {
		t.Errorf("meta: %+v", q.Meta)
	}

	path := filepath.Join(dir, PolicyFile)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	write := func(b []byte) {
		t.Helper()
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Flip one character of the base64 weights.
	var f policyFile
	if err := json.Unmarshal(orig, &f); err != nil {
		t.Fatal(err)
	}
	w := []byte(f.Weights)
	if w[10] == 'A' {
		w[10] = 'B'
	} else {
		w[10] = 'A'
	}
	f.Weights = string(w)
	bad, _ := json.Marshal(&f)
	write(bad)
	if _, err := LoadPolicy(dir); !errors.Is(err, ErrPolicyCorrupt) {
		t.Errorf("flipped weight: got %v, want ErrPolicyCorrupt", err)
	}
	write(orig[:len(orig)/2])
	if _, err := LoadPolicy(dir); !errors.Is(err, ErrPolicyCorrupt) {
		t.Errorf("truncated: got %v, want ErrPolicyCorrupt", err)
	}
	// Other dimensions, with a valid checksum: a mismatch.
	if err := json.Unmarshal(orig, &f); err != nil {
		t.Fatal(err)
	}
	f.Hidden = rlHidden / 2
	write(reseal(t, &f))
	if _, err := LoadPolicy(dir); !errors.Is(err, ErrPolicyMismatch) {
		t.Errorf("other hidden width: got %v, want ErrPolicyMismatch", err)
	}
	if err := json.Unmarshal(orig, &f); err != nil {
		t.Fatal(err)
	}
	f.Schema = strings.Replace(f.Schema, "broadcast", "iota", 1)
	write(reseal(t, &f))
	if _, err := LoadPolicy(dir); !errors.Is(err, ErrPolicyMismatch) {
		t.Errorf("other feature schema: got %v, want ErrPolicyMismatch", err)
	}
	if err := json.Unmarshal(orig, &f); err != nil {
		t.Fatal(err)
	}
	f.OptFeatures = rlOptionFeatures + 1
	write(reseal(t, &f))
	if _, err := LoadPolicy(dir); !errors.Is(err, ErrPolicyMismatch) {
		t.Errorf("other option features: got %v, want ErrPolicyMismatch", err)
	}
	f.Format = "tpucost-rl-policy/4"
	bad, _ = json.Marshal(&f)
	write(bad)
	if _, err := LoadPolicy(dir); !errors.Is(err, ErrPolicyMismatch) {
		t.Errorf("other format: got %v, want ErrPolicyMismatch", err)
	}
	// A format-1 checkpoint (fusion only, without option_features) is refused as an
	// older policy to retrain, not as a corrupt file.
	var old map[string]any
	if err := json.Unmarshal(orig, &old); err != nil {
		t.Fatal(err)
	}
	old["format"] = "tpucost-rl-policy/1"
	delete(old, "option_features")
	bad, _ = json.Marshal(old)
	write(bad)
	if _, err := LoadPolicy(dir); !errors.Is(err, ErrPolicyMismatch) || !strings.Contains(err.Error(), "retrain") || !strings.Contains(err.Error(), "fusion only") {
		t.Errorf("format 1: got %v, want ErrPolicyMismatch saying to retrain", err)
	}
	// So is a format-2 checkpoint (its own aggregation layer, weights w1/b1).
	old["format"] = "tpucost-rl-policy/2"
	old["params"] = []map[string]any{{"name": "w1", "shape": []int{3 * rlNodeFeatures, rlHidden}}}
	bad, _ = json.Marshal(old)
	write(bad)
	if _, err := LoadPolicy(dir); !errors.Is(err, ErrPolicyMismatch) || !strings.Contains(err.Error(), "retrain") || !strings.Contains(err.Error(), "GraphSAGE encoder") {
		t.Errorf("format 2: got %v, want ErrPolicyMismatch saying to retrain", err)
	}
	write(orig)
	if _, err := LoadPolicy(dir); err != nil {
		t.Errorf("the original file no longer loads: %v", err)
	}
	if _, err := LoadPolicy(t.TempDir()); err == nil {
		t.Error("an empty directory loads")
	}
}

// TestRLDecisionsMatchSpace: on a zoo program, the policy gets one fusion decision per
// fusion choice of the space and one layout decision per layout choice with more than
// one option, in order, with the compiler's default as its prior.
func TestRLDecisionsMatchSpace(t *testing.T) {
	chip, _, base, g := rlProgram(t, "dlrm_small_b32")
	d, err := newDecisions(g, base.space, newKindSet(RLKinds()), chip.Target)
	if err != nil {
		t.Fatal(err)
	}
	if d.nFusion() == 0 || d.nFusion() != len(base.space.Fusion) {
		t.Fatalf("%d decisions for %d fusion choices", d.nFusion(), len(base.space.Fusion))
	}
	for i, c := range base.space.Fusion {
		if d.names[i] != c.Name || (d.prior[i] > 0) != c.Default {
			t.Errorf("decision %d: %s prior %g, choice %s default %v", i, d.names[i], d.prior[i], c.Name, c.Default)
		}
	}
	if len(d.prod) != d.nFusion() || len(d.cons) != d.nFusion() || len(d.ef) != d.nFusion()*rlEdgeFeatures {
		t.Errorf("sizes %d, %d, %d for %d decisions", len(d.prod), len(d.cons), len(d.ef), d.nFusion())
	}
	// Each edge's producer is among its consumer's operands in the encoder's graph
	// (unless the consumer has more than rlMaxDegree of them).
	nodes := len(d.x) / rlNodeFeatures
	for i := range d.prod {
		p, x := d.prod[i], d.cons[i]
		if p < 0 || p >= nodes || x < 0 || x >= nodes {
			t.Fatalf("decision %d: nodes %d -> %d of %d", i, p, x, nodes)
		}
		ops := d.nb.In[x*d.nb.DIn : (x+1)*d.nb.DIn]
		if !slices.Contains(ops, p) && (slices.Contains(ops, -1) || len(ops) < rlMaxDegree) {
			t.Errorf("decision %s: producer %d not among the consumer's operands %v", d.names[i], p, ops)
		}
	}
	v := 0
	for _, c := range base.space.Layout {
		if len(c.Options) < 2 {
			continue
		}
		if v >= d.nLayout() || d.lnames[v] != c.Name || d.ldef[v] != c.Default || d.lstart[v+1]-d.lstart[v] != len(c.Options) {
			t.Fatalf("layout decision %d: %v for choice %+v", v, d.lnames, c)
		}
		for o := range c.Options {
			r := d.lstart[v] + o
			off := 0.0
			if o == c.Default {
				off = math.Log(float64(len(c.Options) - 1))
			}
			if (d.lprior[r] == 1) != (o == c.Default) || math.Abs(float64(d.loff[r])-off) > 1e-6 ||
				(d.of[r*rlOptionFeatures] == 1) != (o == c.Default) || (d.of[r*rlOptionFeatures+1] == 1) != (o == 0) {
				t.Errorf("%s option %d: prior %g, features %v", c.Name, o, d.lprior[r], d.of[r*rlOptionFeatures:(r+1)*rlOptionFeatures])
			}
		}
		v++
	}
	if v == 0 || v != d.nLayout() || len(d.onode) != d.rows() || len(d.of) != d.rows()*rlOptionFeatures {
		t.Errorf("%d layout decisions for %d choices; sizes %d, %d for %d rows", d.nLayout(), v, len(d.onode), len(d.of), d.rows())
	}
	// With one kind, only its decisions.
	df, err := newDecisions(g, base.space, newKindSet(fusionOnly), chip.Target)
	if err != nil {
		t.Fatal(err)
	}
	if df.nLayout() != 0 || df.nFusion() != d.nFusion() {
		t.Errorf("fusion only: %d layout, %d fusion decisions", df.nLayout(), df.nFusion())
	}
}

// TestRLDecisionsInLoops: a program with a while loop gets the fusion and layout
// decisions of the loop body too (their names carry the computation).
func TestRLDecisionsInLoops(t *testing.T) {
	chip, _, base, g := rlProgram(t, "lstm2_lm_h1024_t8_b64")
	d, err := newDecisions(g, base.space, newKindSet(RLKinds()), chip.Target)
	if err != nil {
		t.Fatal(err)
	}
	if d.nFusion() != len(base.space.Fusion) {
		t.Errorf("%d fusion decisions for %d choices", d.nFusion(), len(base.space.Fusion))
	}
}

// BenchmarkRLPolicyStep: one forward pass and one REINFORCE gradient of the policy on
// bert_mini_s128_b16 (417 fusion and 58 layout decisions), the per-batch work of the rl
// search.
func BenchmarkRLPolicyStep(b *testing.B) {
	chip, _, base, g := rlProgram(b, "bert_mini_s128_b16")
	d, err := newDecisions(g, base.space, newKindSet(RLKinds()), chip.Target)
	if err != nil {
		b.Fatal(err)
	}
	p := NewPolicy(1)
	rng := rand.New(rand.NewPCG(1, 2))
	acts := make([]action, 8)
	adv := make([]float64, 8)
	b.ResetTimer()
	for b.Loop() {
		pr, err := p.probs(d)
		if err != nil {
			b.Fatal(err)
		}
		for k := range acts {
			acts[k] = sampleAction(rng, d, pr)
			adv[k] = rng.NormFloat64()
		}
		if _, _, err := p.grads(d, reinforceCoef(d, acts, adv)); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRLNodeFeaturesAreShared: the policy reads the shared module-graph featurizer's
// columns (features.ModuleNodeNames with the mover block), and its checkpoint schema
// names each of them: the categories and movers by name, then the five size scalars.
func TestRLNodeFeaturesAreShared(t *testing.T) {
	names := features.ModuleNodeNames(rlNodeBlocks())
	if len(names) != rlNodeFeatures {
		t.Fatalf("policy node width %d, the featurizer's %d columns", rlNodeFeatures, len(names))
	}
	schema := rlFeatureSchema()
	for _, n := range names[:features.ModuleCategoryWidth+features.ModuleMoverWidth] {
		_, name, _ := strings.Cut(n, "_")
		if !strings.Contains(schema, name+",") {
			t.Errorf("feature schema %q does not name column %s", schema, n)
		}
	}
	if !strings.Contains(schema, ";log_elements,log_bytes,rank,log_fan_in,log_fan_out;") {
		t.Errorf("feature schema %q does not name the five size scalars", schema)
	}
}
