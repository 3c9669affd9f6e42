package lutcpu

import (
	"bufio"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/metric"
)

// recorded is a scripted Backend replaying the medians of a real-CPU dataset
// (testdata/cpu-seed2-medians.txt: `gen --task bitserial --backend cpu --seed 2`, every
// config of DefaultSpace); each measurement of a config returns its recorded median.
type recorded struct {
	ns    map[Config]float64
	calls int
}

func (*recorded) Name() string { return "recorded" }

func (r *recorded) Measure(c Config) (Sample, error) {
	r.calls++
	return Sample{MedianNs: r.ns[c], Kept: 1, Calls: 1}, nil
}

func readRecorded(t *testing.T) *recorded {
	t.Helper()
	f, err := os.Open("testdata/cpu-seed2-medians.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	all, err := DefaultSpace().Configs()
	if err != nil {
		t.Fatal(err)
	}
	r := &recorded{ns: map[Config]float64{}}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(line, 64)
		if err != nil || len(r.ns) >= len(all) {
			t.Fatalf("recorded medians: line %q after %d values", line, len(r.ns))
		}
		r.ns[all[len(r.ns)]] = v
	}
	if len(r.ns) != len(all) {
		t.Fatalf("recorded medians: %d values, want %d", len(r.ns), len(all))
	}
	return r
}

// TestTuneWithoutModelMeetsTheBarOnRecordedTimes: on the recorded real-CPU times of the
// seed-2 dataset (where the earlier tuner, 200 uniformly random samples then the top 3
// per problem from one fit, missed 95% of the exhaustive best on 1-4 of the 120 problems
// for 8 of tuner seeds 1-12 on these very times, and on 9 of 120 live), the tuner that
// fits its own model (200 stratified samples, the analytical model as the prior, the top
// 4 per problem in 2 rounds with a refit between) reaches at least 95% of the exhaustive
// best on every problem for tuner seeds 1-10, with 15.7% of the exhaustive search's
// measurements. Tried: without the refit (one fit ranks both rounds) seeds 4, 8 and 9
// missed 1-2 problems; with the log time as the target instead of the log ratio to the
// analytical model, seed 8 missed one. (Uniform instead of stratified sampling made no
// difference on these times; TestStratifiedSampleSpreadsOverProblemsAndVariants checks
// the sample.)
func TestTuneWithoutModelMeetsTheBarOnRecordedTimes(t *testing.T) {
	rec := readRecorded(t)
	sp := DefaultSpace()
	// maxShare, minRatio: the targets, 20% of the exhaustive measurements and 95%
	// of its best.
	const maxShare, minRatio = 0.20, 0.95
	for _, seed := range []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10} {
		rec.calls = 0
		res, err := Tune(TuneOptions{Space: sp, Backend: rec, Sample: 200, Top: 4, Rounds: 2, Lambda: DefaultLambda, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		if share := float64(res.Measurements) / float64(res.ExhaustiveConfigs); share > maxShare || res.Measurements != rec.calls {
			t.Errorf("seed %d: %d measurements (%d taken), %.1f%% of the exhaustive search's", seed, res.Measurements, rec.calls, 100*share)
		}
		missed := 0
		for _, tp := range res.Problems {
			p, err := ParseProblem(tp.Problem)
			if err != nil {
				t.Fatal(err)
			}
			best := math.Inf(1)
			for _, c := range p.Variants() {
				best = math.Min(best, rec.ns[c])
			}
			if best/tp.BestNs < minRatio {
				missed++
				t.Logf("seed %d %s: tuned %s at %.0f ns, exhaustive best %.0f", seed, tp.Problem, tp.BestConfig, tp.BestNs, best)
			}
		}
		if missed > 0 {
			t.Errorf("seed %d: %d of %d problems below %v of the exhaustive best", seed, missed, len(res.Problems), minRatio)
		}
	}
}

// TestStratifiedSampleSpreadsOverProblemsAndVariants: the tuner's sample gives every
// problem ⌊n/120⌋ or one more configs and every variant (order, block, unroll) ⌊n/36⌋ or
// one more, without repeating a config, and is the same for a seed; a uniform draw of
// 200 configs leaves about 22 problems with none.
func TestStratifiedSampleSpreadsOverProblemsAndVariants(t *testing.T) {
	probs := DefaultSpace().Problems()
	nv := len(Problem{}.Variants())
	for _, n := range []int{200, 500, len(probs) * nv} {
		cs := StratifiedSample(probs, n, 7)
		perProb, perVariant := map[Problem]int{}, map[[3]string]int{}
		seen := map[Config]bool{}
		for _, c := range cs {
			if seen[c] {
				t.Fatalf("n=%d: %s sampled twice", n, c)
			}
			seen[c] = true
			perProb[c.Problem()]++
			perVariant[[3]string{string(c.Order), strconv.Itoa(c.Block), strconv.Itoa(c.Unroll)}]++
		}
		if len(cs) != n || len(perProb) != len(probs) {
			t.Fatalf("n=%d: %d configs over %d problems", n, len(cs), len(perProb))
		}
		for p, k := range perProb {
			if k < n/len(probs) || k > n/len(probs)+1 {
				t.Errorf("n=%d: %s sampled %d times, want %d or %d", n, p, k, n/len(probs), n/len(probs)+1)
			}
		}
		// The variant counts may be off by one more where a taken config was skipped
		// (the next variant in the seeded order was used instead): at most 1 per skip.
		for v, k := range perVariant {
			if k < n/nv-1 || k > n/nv+2 {
				t.Errorf("n=%d: variant %v sampled %d times, want about %d", n, v, k, n/nv)
			}
		}
	}
	a, b := StratifiedSample(probs, 200, 3), StratifiedSample(probs, 200, 3)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seed 3: sample %d is %s, then %s", i, a[i], b[i])
		}
	}
}

// TestFitFallsBackOnTheAnalyticalModel: fitted to a handful of recorded samples (8), the
// learned model is the analytical model corrected (its target is the log ratio to it),
// so it ranks the whole space at least about as well as the analytical model does (tau
// 0.792 against 0.711); fitted to the log time itself, 8 samples for 83 features ranked
// it far worse (0.403).
func TestFitFallsBackOnTheAnalyticalModel(t *testing.T) {
	rec := readRecorded(t)
	sp := DefaultSpace()
	all, err := sp.Configs()
	if err != nil {
		t.Fatal(err)
	}
	cs := StratifiedSample(sp.Problems(), 8, 1)
	ns := make([]float64, len(cs))
	for i, c := range cs {
		ns[i] = rec.ns[c]
	}
	m, err := Fit(sp.Layer, cs, ns, DefaultLambda)
	if err != nil {
		t.Fatal(err)
	}
	truth, learned, analytical := make([]float64, len(all)), make([]float64, len(all)), make([]float64, len(all))
	for i, c := range all {
		truth[i], learned[i], analytical[i] = rec.ns[c], m.Predict(c), Analytical(sp.Layer, c)
	}
	tl, err := metric.KendallTau(learned, truth)
	if err != nil {
		t.Fatal(err)
	}
	ta, err := metric.KendallTau(analytical, truth)
	if err != nil {
		t.Fatal(err)
	}
	// tauSlack: a few samples may move the correction a little either way; the log-time
	// target on the same samples gave tau 0.31 below the analytical model's.
	const tauSlack = 0.05
	if tl < ta-tauSlack {
		t.Errorf("fitted to 8 samples: tau %.3f on the space, analytical %.3f: want at least %.3f", tl, ta, ta-tauSlack)
	}
}

// bursty replays recorded times, slowed by a factor during calls [from, to): a burst of
// other load on the machine.
type bursty struct {
	*recorded
	from, to int
	factor   float64
}

func (b *bursty) Measure(c Config) (Sample, error) {
	s, err := b.recorded.Measure(c)
	if b.calls > b.from && b.calls <= b.to {
		s.MedianNs *= b.factor
	}
	return s, err
}

// TestTuneSpreadsABurstOverProblems: a burst of other load that slows 60 consecutive
// measurements 2× (calls 201-260, in the first round) costs the tuner 7 of the 120
// problems on the recorded times, because each round's candidates are measured in a
// seeded random order across the problems, so the burst slows one candidate of most of
// the problems it touches; measured problem by problem, it slowed both first-round
// candidates of 30 consecutive problems and cost 29 (tried). A burst also misleads the
// refit, which no order prevents: slowing the whole first round 1.3× cost 71 either way.
func TestTuneSpreadsABurstOverProblems(t *testing.T) {
	rec := readRecorded(t)
	be := &bursty{recorded: rec, from: 200, to: 260, factor: 2}
	res, err := Tune(TuneOptions{Space: DefaultSpace(), Backend: be, Sample: 200, Top: 4, Rounds: 2, Lambda: DefaultLambda, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	missed := 0
	for _, tp := range res.Problems {
		p, err := ParseProblem(tp.Problem)
		if err != nil {
			t.Fatal(err)
		}
		best := math.Inf(1)
		for _, c := range p.Variants() {
			best = math.Min(best, rec.ns[c])
		}
		if best/rec.ns[tp.best] < 0.95 {
			missed++
		}
	}
	// maxMissed: 7 measured (seed 1), with room for another seed's order; in problem
	// order 29.
	const maxMissed = 10
	if missed > maxMissed {
		t.Errorf("a burst over measurements %d-%d: %d of %d problems below 0.95 of the exhaustive best, want at most %d", be.from+1, be.to, missed, len(res.Problems), maxMissed)
	}
}
