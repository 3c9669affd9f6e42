package tune

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/tpusim/ragged"
	"github.com/tpucost/tpucost/zoo"
)

// raggedTol bounds float round-off between two sums of the same kernel times in
// different orders.
const raggedTol = 1e-9

// raggedLengths is a small ragged batch on shapesModel (bert_tiny): lengths far enough
// apart that the padded, ideal and ragged times differ by more than a few percent.
var raggedLengths = []int{24, 128, 40, 96}

// TestRaggedEvalIsCompiledRagged: the tuner's value of a candidate is the compiled ragged
// program's time (ragged.Parts.Time over the candidate applied to every part, plus the
// packing gather), not the padded program's or the ideal bound: the default candidate's
// value is sim --lengths' ragged_ns, and over candidates of the search the values follow
// the ragged times, which rank them differently from the padded times.
func TestRaggedEvalIsCompiledRagged(t *testing.T) {
	c := testChip(t)
	m, err := zoo.Lookup(shapesModel)
	if err != nil {
		t.Fatal(err)
	}
	def, err := ragged.TimeZoo(shapesModel, raggedLengths, c)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := ragged.NewParts(m, raggedLengths, c)
	if err != nil {
		t.Fatal(err)
	}
	rp := newRaggedParts(parts, def.PackNs)
	start, err := rp.ref.compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	rp.start = start
	o, err := Options{Chip: c, Budget: 12, Seed: 3, Strategy: Random}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	r := &run{opts: o, cc: rp.ref, workers: 2, budget: o.Budget, bestNs: math.Inf(1)}
	if r.sim, err = tpusim.New(o.Chip, tpusim.Options{Runs: 1}); err != nil { // noiseless: a measurement is the true time
		t.Fatal(err)
	}
	ev := &raggedEval{r: r, rp: rp, cache: map[string]float64{}, bestNs: math.Inf(1)}
	var cands []*candidate
	s := newSearch(r, ev, newKindSet(o.Kinds), "ragged", []*candidate{start})
	cands = append(cands, start)
	more, err := s.propose(context.Background(), 16, func(_ int, rng *rand.Rand) (*candidate, error) {
		return sample(rng, rp.ref, start, newKindSet(o.Kinds))
	})
	if err != nil {
		t.Fatal(err)
	}
	cands = append(cands, more...)
	if err := ev.eval(context.Background(), cands); err != nil {
		t.Fatal(err)
	}
	if math.Abs(start.value-def.RaggedNs) > raggedTol*def.RaggedNs {
		t.Fatalf("the default candidate: %.1f ns, sim --lengths ragged_ns %.1f", start.value, def.RaggedNs)
	}
	if math.Abs(start.value-def.PaddedNs) < 0.02*def.PaddedNs || math.Abs(start.value-def.IdealNs) < 0.02*def.IdealNs {
		t.Fatalf("the test needs ragged, padded and ideal apart: %.0f, %.0f, %.0f", start.value, def.PaddedNs, def.IdealNs)
	}
	var ragged, padded []float64
	for _, cd := range cands {
		if !cd.evaluated || math.IsInf(cd.value, 1) {
			continue
		}
		_, want, err := rp.time(cd)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(cd.value-want) > raggedTol*want {
			t.Errorf("candidate %s: value %.1f ns, its compiled ragged time %.1f", cd.fp[:8], cd.value, want)
		}
		p, err := truthNs(cd.prog, c)
		if err != nil {
			t.Fatal(err)
		}
		ragged, padded = append(ragged, cd.value), append(padded, p)
	}
	if len(ragged) < 6 {
		t.Fatalf("only %d feasible candidates", len(ragged))
	}
	// The ragged and padded times rank the candidates differently: a search on the
	// padded time would optimize another objective.
	if slices.Equal(order(ragged), order(padded)) {
		t.Errorf("ragged and padded times rank %d candidates alike", len(ragged))
	}
}

// order is the permutation sorting xs ascending.
func order(xs []float64) []int {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		switch {
		case xs[a] < xs[b]:
			return -1
		case xs[a] > xs[b]:
			return 1
		}
		return 0
	})
	return idx
}

// TestRunRagged: tuning the compiled ragged form spends at most its budget, reports the
// default's three times as sim --lengths does, never makes the ragged time worse than the
// default's, and its tuned ragged time is the compiled ragged timing of the kept config.
func TestRunRagged(t *testing.T) {
	c := testChip(t)
	opts := Options{Chip: c, Budget: 24, Seed: 2, Noise: 0.02, Strategy: Evolution}
	r, err := RunRagged(context.Background(), shapesModel, raggedLengths, opts)
	if err != nil {
		t.Fatal(err)
	}
	def, err := ragged.TimeZoo(shapesModel, raggedLengths, c)
	if err != nil {
		t.Fatal(err)
	}
	if r.Measurements > opts.Budget || r.Batch != len(raggedLengths) || r.PaddedNs != def.PaddedNs || r.IdealNs != def.IdealNs || r.DefaultRaggedNs != def.RaggedNs {
		t.Fatalf("%d measurements, batch %d; padded %.0f ideal %.0f ragged %.0f, sim --lengths %.0f %.0f %.0f",
			r.Measurements, r.Batch, r.PaddedNs, r.IdealNs, r.DefaultRaggedNs, def.PaddedNs, def.IdealNs, def.RaggedNs)
	}
	if r.TunedRaggedNs > r.DefaultRaggedNs || !(r.TunedIdealNs <= r.TunedRaggedNs) {
		t.Errorf("ragged default %.0f, tuned %.0f; tuned ideal %.0f", r.DefaultRaggedNs, r.TunedRaggedNs, r.TunedIdealNs)
	}
	t.Logf("padded %.0f -> %.0f, ideal %.0f -> %.0f, ragged %.0f -> %.0f (kept default %v, %d candidates, %d infeasible)",
		r.PaddedNs, r.TunedPaddedNs, r.IdealNs, r.TunedIdealNs, r.DefaultRaggedNs, r.TunedRaggedNs, r.KeptDefault, r.Candidates, r.Infeasible)
	var sum float64
	for _, k := range r.Kernels {
		sum += k.Ns
	}
	if len(r.Kernels) == 0 || !(sum > 0) || r.Config == nil {
		t.Errorf("tuned program: %d kernels, %g ns, config %v", len(r.Kernels), sum, r.Config)
	}
	if _, err := RunRagged(context.Background(), "lstm2_lm_h650_t20_b32", []int{16, 32}, opts); err == nil {
		t.Error("a model without a ragged form was tuned")
	}
}
