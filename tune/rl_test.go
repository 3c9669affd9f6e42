package tune

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/compiler/zoo"
)

var fusionOnly = []compiler.Kind{compiler.KindFusion}

// toyEnv is a synthetic fusion space: E decisions with random node features and random
// defaults; the best config fuses exactly the decisions whose producer has feature 0 set
// (a known subset, unrelated to the defaults). Reward: the fraction of decisions that
// agree with it.
type toyEnv struct {
	d      *decisions
	target []bool
}

func newToyEnv(seed uint64, e int) *toyEnv {
	rng := rand.New(rand.NewPCG(seed, 7))
	const F3 = 3 * rlNodeFeatures
	t := &toyEnv{d: &decisions{}}
	for i := range e {
		t.d.names = append(t.d.names, "e"+string(rune('a'+i%26))+string(rune('a'+i/26)))
		for _, dst := range []*[]float32{&t.d.xp, &t.d.xx} {
			for range F3 {
				*dst = append(*dst, float32(rng.IntN(2)))
			}
		}
		def := rng.IntN(2) == 1
		t.d.defaults = append(t.d.defaults, def)
		sign, db := float32(-1), float32(0)
		if def {
			sign, db = 1, 1
		}
		t.d.prior = append(t.d.prior, sign)
		t.d.ef = append(t.d.ef, db, 0, 0, 0, 0)
		t.target = append(t.target, t.d.xp[i*F3] == 1)
	}
	return t
}

func (t *toyEnv) decisions() *decisions { return t.d }

func (t *toyEnv) rewards(_ context.Context, acts [][]bool) ([]float64, error) {
	out := make([]float64, len(acts))
	for k, a := range acts {
		for e := range a {
			if a[e] == t.target[e] {
				out[k] += 1 / float64(len(a))
			}
		}
	}
	return out, nil
}

// TestRLToyPolicyImproves: REINFORCE with the moving-average baseline learns the known
// best subset of a synthetic space: the mean sampled reward and the greedy config's
// reward rise from chance (the defaults are random, so the initial policy agrees with
// the target on about half the decisions) to near 1.
func TestRLToyPolicyImproves(t *testing.T) {
	envs := []rlEnv{newToyEnv(1, 40), newToyEnv(2, 40)}
	p := NewPolicy(5)
	hist, err := trainPolicy(context.Background(), p, envs, TrainPolicyOptions{Seed: 5, Episodes: 150, Samples: 16, LR: 0.02, Baseline: 0.8})
	if err != nil {
		t.Fatal(err)
	}
	first, last := hist[0], hist[len(hist)-1]
	t.Logf("episode 1: reward %.3f greedy %.3f; episode %d: reward %.3f greedy %.3f", first.MeanReward, first.GreedyMean, last.Episode, last.MeanReward, last.GreedyMean)
	// chance is 0.5 with a 40-decision binomial spread (sd 0.08 per program); a learned
	// policy must be far above it. 0.9 leaves room for the sampling noise of a policy
	// that still explores.
	const learned = 0.9
	if first.GreedyMean > 0.75 {
		t.Fatalf("the untrained policy already agrees on %.2f of the decisions: the toy is not a test", first.GreedyMean)
	}
	if last.GreedyMean < learned || last.MeanReward < learned-0.05 {
		t.Errorf("after %d episodes: greedy reward %.3f, mean sampled %.3f; want >= %.2f", last.Episode, last.GreedyMean, last.MeanReward, learned)
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
// twice, also with a policy that is certain of every decision (the exploration floor
// keeps it sampling new programs), and leaves the caller's policy unchanged (it
// fine-tunes a copy).
func TestRLBudgetExact(t *testing.T) {
	m := rlModule(t, "mlp_768x3_b8")
	chip := testChip(t)
	p := NewPolicy(1)
	orig := p
	sure := NewPolicy(1)
	sure.params[len(sure.params)-1].data[0] = 60 // the prior: p(default) = 1 in float32
	before := p.clone()
	for i, budget := range []int{1, 7, 45, 45} {
		if i == 3 {
			p = sure
		}
		var log measureLog
		r := mustRun(t, m, Options{Chip: chip, Strategy: RL, Policy: p, Kinds: fusionOnly, Budget: budget, Seed: 3, Noise: 0.02, measured: log.hook})
		if r.Measurements != budget || len(log.ids) != budget || r.ProgramMeasures != budget {
			t.Errorf("budget %d: %d measurements reported (%d program), %d taken", budget, r.Measurements, r.ProgramMeasures, len(log.ids))
		}
		seen := map[string]bool{}
		for _, id := range log.ids {
			if seen[id] {
				t.Errorf("budget %d: %s measured twice", budget, id)
			}
			seen[id] = true
		}
	}
	for i := range orig.params {
		if !slices.Equal(orig.params[i].data, before.params[i].data) {
			t.Errorf("the search changed the caller's policy parameter %s", orig.params[i].name)
		}
	}
}

// TestRLDeterminism: the same seed gives the same report and config with 1 and 2
// workers.
func TestRLDeterminism(t *testing.T) {
	m := rlModule(t, "mlp_96x2_b1")
	chip := testChip(t)
	o := Options{Chip: chip, Strategy: RL, Policy: NewPolicy(2), Kinds: fusionOnly, Budget: 40, Seed: 11, Noise: 0.03, Workers: 1}
	a := reportJSON(t, mustRun(t, m, o))
	o.Workers = 2
	b := reportJSON(t, mustRun(t, m, o))
	if a != b {
		t.Errorf("1 and 2 workers differ:\n%s\n%s", a, b)
	}
}

// TestRLNeedsPolicyAndFusion: rl without a policy, or with kinds other than fusion, is an
// error, not a fallback.
func TestRLNeedsPolicyAndFusion(t *testing.T) {
	m := rlModule(t, "mlp_96x2_b1")
	chip := testChip(t)
	_, err := Run(context.Background(), m, Options{Chip: chip, Strategy: RL, Kinds: fusionOnly, Budget: 5})
	if !errors.Is(err, ErrNoPolicy) {
		t.Errorf("no policy: got %v, want ErrNoPolicy", err)
	}
	_, err = Run(context.Background(), m, Options{Chip: chip, Strategy: RL, Policy: NewPolicy(1), Budget: 5})
	if err == nil {
		t.Error("rl with all four kinds: no error")
	}
}

// TestTrainPolicyDeterminism: training on the simulator gives the same parameters for a
// seed whatever the number of workers, and another seed gives others.
func TestTrainPolicyDeterminism(t *testing.T) {
	mods := []*hlo.Module{rlModule(t, "mlp_96x2_b1")}
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
			if !slices.Equal(x.params[i].data, y.params[i].data) {
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
	if len(a.Meta.History) != 3 || a.Meta.Programs[0] != "mlp_96x2_b1" {
		t.Errorf("training record: %+v", a.Meta)
	}
}

// TestPolicyCheckpoint: a saved policy loads back identical (same probabilities); a
// flipped byte, a truncated file, another format or other dimensions are refused.
func TestPolicyCheckpoint(t *testing.T) {
	dir := t.TempDir()
	p := NewPolicy(4)
	p.Meta = PolicyMeta{Programs: []string{"a", "b"}, Seed: 4, Episodes: 2, Samples: 8, Chip: "v4", History: []EpisodeReport{{Episode: 1, MeanReward: 0.1}}}
	if err := SavePolicy(dir, p); err != nil {
		t.Fatal(err)
	}
	q, err := LoadPolicy(dir)
	if err != nil {
		t.Fatal(err)
	}
	env := newToyEnv(3, 20)
	pa, err := p.probs(env.d)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := q.probs(env.d)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pa, pb) {
		t.Error("the loaded policy's probabilities differ")
	}
	if q.Meta.Chip != "v4" || len(q.Meta.History) != 1 {
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
	if f.SHA256, err = f.checksum(); err != nil {
		t.Fatal(err)
	}
	bad, _ = json.Marshal(&f)
	write(bad)
	if _, err := LoadPolicy(dir); !errors.Is(err, ErrPolicyMismatch) {
		t.Errorf("other hidden width: got %v, want ErrPolicyMismatch", err)
	}
	if err := json.Unmarshal(orig, &f); err != nil {
		t.Fatal(err)
	}
	f.Schema = strings.Replace(f.Schema, "broadcast", "iota", 1)
	if f.SHA256, err = f.checksum(); err != nil {
		t.Fatal(err)
	}
	bad, _ = json.Marshal(&f)
	write(bad)
	if _, err := LoadPolicy(dir); !errors.Is(err, ErrPolicyMismatch) {
		t.Errorf("other feature schema: got %v, want ErrPolicyMismatch", err)
	}
	if err := json.Unmarshal(orig, &f); err != nil {
		t.Fatal(err)
	}
	f.Format = "tpucost-rl-policy/0"
	bad, _ = json.Marshal(&f)
	write(bad)
	if _, err := LoadPolicy(dir); !errors.Is(err, ErrPolicyMismatch) {
		t.Errorf("other format: got %v, want ErrPolicyMismatch", err)
	}
	write(orig)
	if _, err := LoadPolicy(dir); err != nil {
		t.Errorf("the original file no longer loads: %v", err)
	}
	if _, err := LoadPolicy(t.TempDir()); err == nil {
		t.Error("an empty directory loads")
	}
}

// TestRLDecisionsMatchSpace: on a zoo program, the policy gets one decision per fusion
// choice of the space, in order, with the compiler's default as its prior sign.
func TestRLDecisionsMatchSpace(t *testing.T) {
	m := rlModule(t, "dlrm_small_b32")
	chip := testChip(t)
	cc := &compilerCtx{mod: m, opts: compiler.Options{Target: chip.Target}}
	base, err := cc.compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := fusionGraph(cc, base.cfg)
	if err != nil {
		t.Fatal(err)
	}
	d, err := newDecisions(e, base.space)
	if err != nil {
		t.Fatal(err)
	}
	if d.n() == 0 || d.n() != len(base.space.Fusion) {
		t.Fatalf("%d decisions for %d fusion choices", d.n(), len(base.space.Fusion))
	}
	for i, c := range base.space.Fusion {
		if d.names[i] != c.Name || (d.prior[i] > 0) != c.Default {
			t.Errorf("decision %d: %s prior %g, choice %s default %v", i, d.names[i], d.prior[i], c.Name, c.Default)
		}
	}
	if len(d.xp) != d.n()*3*rlNodeFeatures || len(d.ef) != d.n()*rlEdgeFeatures {
		t.Errorf("feature sizes %d, %d for %d decisions", len(d.xp), len(d.ef), d.n())
	}
}

// BenchmarkRLPolicyStep: one forward pass and one REINFORCE gradient of the policy on
// bert_mini_s128_b16 (420 decisions), the per-batch work of the rl search.
func BenchmarkRLPolicyStep(b *testing.B) {
	m := rlModule(b, "bert_mini_s128_b16")
	chip := testChip(b)
	cc := &compilerCtx{mod: m, opts: compiler.Options{Target: chip.Target}}
	base, err := cc.compile(nil)
	if err != nil {
		b.Fatal(err)
	}
	e, err := fusionGraph(cc, base.cfg)
	if err != nil {
		b.Fatal(err)
	}
	d, err := newDecisions(e, base.space)
	if err != nil {
		b.Fatal(err)
	}
	p := NewPolicy(1)
	rng := rand.New(rand.NewPCG(1, 2))
	acts := make([][]bool, 8)
	adv := make([]float64, 8)
	b.ResetTimer()
	for b.Loop() {
		probs, err := p.probs(d)
		if err != nil {
			b.Fatal(err)
		}
		for k := range acts {
			_, acts[k] = sampleFusion(rng, base.cfg, d, probs)
			adv[k] = rng.NormFloat64()
		}
		coef, scale := reinforceCoef(acts, adv)
		if _, _, err := p.grads(d, coef, scale); err != nil {
			b.Fatal(err)
		}
	}
}
