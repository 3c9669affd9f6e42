package lutcpu

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/bitserial"
	"github.com/tpucost/tpucost/dataset"
)

// synthetic is a fake Backend whose times follow the analytical model scaled by what it
// does not see (the loop order, blocking and unrolling): the learned model can learn
// those factors, the analytical one cannot. It counts its measurements.
type synthetic struct {
	space Space
	calls int
}

func (s *synthetic) Name() string { return "synthetic" }

func (s *synthetic) Measure(c Config) (Sample, error) {
	if err := c.Check(s.space.Layer); err != nil {
		return Sample{}, err
	}
	s.calls++
	f := map[Order]float64{OrderBitGroup: 1, OrderGroupBit: 1.6, OrderChannel: 0.7, OrderPoolTable: 0.8}[c.Order]
	f *= 1 + 0.15*math.Log2(float64(c.Unroll)) - 0.1*math.Log2(float64(c.Block))
	return Sample{MedianNs: Analytical(s.space.Layer, c) * f, Kept: 1, Calls: 1}, nil
}

// TestLearnedBeatsAnalyticalOnWhatItCannotSee: on times that depend on the loop order,
// blocking and unrolling, the learned model ranks held-out configs better than the
// analytical one (which ties every variant of the same P, z, b and order).
func TestLearnedBeatsAnalyticalOnWhatItCannotSee(t *testing.T) {
	sp := DefaultSpace()
	be := &synthetic{space: sp}
	recs := measureAll(t, sp, be)
	train, test, err := Split(recs, 0.2, 1)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Train(sp.Layer, train, DefaultLambda)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := Score(m, test)
	if err != nil {
		t.Fatal(err)
	}
	// minLearnedTau: the synthetic times are a product of factors the features express
	// exactly in log space, so the fit should be near perfect; 0.95 leaves room for the
	// ridge penalty.
	const minLearnedTau = 0.95
	if sc.Learned < minLearnedTau || sc.Learned <= sc.Analytical {
		t.Errorf("held-out tau learned %.3f, analytical %.3f; want learned >= %v and above analytical", sc.Learned, sc.Analytical, minLearnedTau)
	}
}

func measureAll(t *testing.T, sp Space, be Backend) []Record {
	t.Helper()
	cs, err := sp.Configs()
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]Record, len(cs))
	for i, c := range cs {
		s, err := be.Measure(c)
		if err != nil {
			t.Fatal(err)
		}
		recs[i] = Record{Seq: i, Config: c, Sample: s, AnalyticalNs: Analytical(sp.Layer, c)}
	}
	return recs
}

// TestTuneCountsMeasurementsAndFindsBest: model-guided tuning measures the sampled
// configs and Top variants per problem, and counts them as the backend does; on the
// synthetic times it finds, for every problem, a variant within 5% of the exhaustive
// best with under 20% of the exhaustive search's measurements.
func TestTuneCountsMeasurementsAndFindsBest(t *testing.T) {
	sp := DefaultSpace()
	truth := map[Config]float64{}
	for _, r := range measureAll(t, sp, &synthetic{space: sp}) {
		truth[r.Config] = r.MedianNs
	}
	be := &synthetic{space: sp}
	res, err := Tune(TuneOptions{Space: sp, Backend: be, Sample: 200, Top: 4, Rounds: 2, Lambda: DefaultLambda, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Measurements != be.calls || res.Measurements != res.Sampled+res.Predicted || res.Sampled != 200 || res.Predicted > 4*120 || res.FitRounds != 2 {
		t.Fatalf("measurements %d (backend saw %d): %d sampled + %d predicted", res.Measurements, be.calls, res.Sampled, res.Predicted)
	}
	// maxShare, minRatio: the targets, 20% of the exhaustive measurements and 95%
	// of its best.
	const maxShare, minRatio = 0.20, 0.95
	if share := float64(res.Measurements) / float64(res.ExhaustiveConfigs); share > maxShare {
		t.Errorf("measured %.1f%% of the exhaustive search's configs", 100*share)
	}
	for _, tp := range res.Problems {
		p, err := ParseProblem(tp.Problem)
		if err != nil {
			t.Fatal(err)
		}
		best := math.Inf(1)
		for _, c := range p.Variants() {
			best = math.Min(best, truth[c])
		}
		if best/tp.BestNs < minRatio {
			t.Errorf("%s: tuned %s at %.0f ns, exhaustive best %.0f", tp.Problem, tp.BestConfig, tp.BestNs, best)
		}
	}
	if _, err := Tune(TuneOptions{Space: sp, Backend: be, Sample: 1, Top: 5}); err == nil {
		t.Error("tuning without a model fitted from one sample accepted")
	}
}

// TestProblemSplitHoldsOutWholeProblems: a problem split holds out every variant of the
// held-out problems and none of the others.
func TestProblemSplitHoldsOutWholeProblems(t *testing.T) {
	sp := DefaultSpace()
	recs := measureAll(t, sp, &synthetic{space: sp})
	train, test, held, err := SplitBy(recs, SplitProblem, 0.2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if nv := len(Problem{}.Variants()); len(held) != 24 || len(test) != 24*nv || len(train)+len(test) != len(recs) {
		t.Fatalf("held %d problems, %d test and %d train configs", len(held), len(test), len(train))
	}
	in := map[Problem]bool{}
	for _, p := range held {
		in[p] = true
	}
	for _, r := range train {
		if in[r.Config.Problem()] {
			t.Fatalf("%s is in training but its problem is held out", r.Config)
		}
	}
	if _, _, _, err := SplitBy(recs, "kernel", 0.2, 1); err == nil {
		t.Error("split kernel accepted")
	}
}

// TestDatasetRoundTripAndRefusals: a generated dataset is a measured-config table
// (package dataset) that reads back as measured, with its provenance naming the backend
// and machine; a directory already holding it is refused before anything is measured;
// a truncated or altered table file is refused in one line naming it.
func TestDatasetRoundTripAndRefusals(t *testing.T) {
	sp := Space{Layer: DefaultLayer(), Ps: []int{16, 64}, Zs: []int{8}, Bs: []int{1, 3}}
	for _, format := range []dataset.Format{dataset.FormatArrow, dataset.FormatParquet} {
		dir := t.TempDir()
		be := &synthetic{space: sp}
		o := GenOptions{Space: sp, Backend: be, Method: DefaultMethod(), Out: dir, Format: format, Seed: 5}
		meta, recs, err := Generate(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if nv := len(Problem{}.Variants()); meta.Configs != 4*nv || len(recs) != meta.Configs || be.calls != meta.Configs {
			t.Fatalf("measured %d configs (%d records, %d calls), want %d", meta.Configs, len(recs), be.calls, 4*nv)
		}
		m2, back, err := Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		if *m2 != *meta || len(back) != len(recs) {
			t.Fatalf("read %+v with %d configs, wrote %+v", m2, len(back), meta)
		}
		for i := range recs {
			if back[i] != recs[i] {
				t.Fatalf("record %d: read %+v, wrote %+v", i, back[i], recs[i])
			}
		}
		d, err := dataset.OpenMeasured(dir)
		if err != nil {
			t.Fatal(err)
		}
		if d.Provenance.Backend != "synthetic" || d.Provenance.Machine.GOARCH != runtime.GOARCH || d.Format != format {
			t.Errorf("provenance %+v, format %s", d.Provenance, d.Format)
		}
		be.calls = 0
		if _, _, err := Generate(context.Background(), o); err == nil || !strings.Contains(err.Error(), "already holds a dataset") || be.calls != 0 {
			t.Errorf("a second generation into %s: %v after %d measurements; want a refusal before any", dir, err, be.calls)
		}
		path := filepath.Join(dir, dataset.MeasuredFileName(TaskName, format))
		good, _ := os.ReadFile(path)
		for name, bad := range map[string][]byte{
			"truncated": good[:len(good)-40],
			"flipped":   append(append(slices.Clone(good[:len(good)/2]), good[len(good)/2]^0xff), good[len(good)/2+1:]...),
			"empty":     {},
		} {
			if err := os.WriteFile(path, bad, 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, err := Read(dir)
			if err == nil || strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), path+": ") {
				t.Errorf("%s %s file: err = %v, want one line naming the file", name, format, err)
			}
		}
	}
}

// TestAnalyticalSeesThePoolTableReuse: the analytical model counts the pool-table order's
// reuse of the shared pool: its convolution's table reads per output are K·K·Cin/z at
// every b (the other orders' are b times that), its vector-table build P·b reads per
// input vector, so it predicts pool-table faster than bit-group where a vector's uses
// (Cout·K·K = 288 on the third convolution) exceed P = 64, at every b ≥ 2, and slower on
// the dense layer (10 outputs, one tap per vector: 10 uses).
func TestAnalyticalSeesThePoolTableReuse(t *testing.T) {
	conv, dense := DefaultLayer(), bitserial.DefaultArch.Layers()[3]
	perOutput := func(l bitserial.Layer, c Config) float64 {
		return WorkOf(l, c).Lookups / float64(l.OH()*l.OW()*l.Cout)
	}
	for b := 1; b <= 8; b++ {
		pt := Config{P: 64, Z: 8, B: b, Order: OrderPoolTable, Block: 4, Unroll: 2}
		bg := pt
		bg.Order = OrderBitGroup
		if got, want := perOutput(conv, pt), float64(conv.K*conv.K*conv.Cin/8); got != want {
			t.Errorf("b=%d: pool-table reads %.0f table entries per output, want %.0f whatever b", b, got, want)
		}
		if got, want := perOutput(conv, bg), float64(b*conv.K*conv.K*conv.Cin/8); got != want {
			t.Errorf("b=%d: bit-group reads %.0f per output, want %.0f", b, got, want)
		}
		if got, want := WorkOf(conv, pt).VectorLookups, float64(conv.H*conv.W*conv.Cin/8*64*b); got != want {
			t.Errorf("b=%d: vector-table build %.0f reads, want %.0f (P·b per vector)", b, got, want)
		}
		if b >= 2 && Analytical(conv, pt) >= Analytical(conv, bg) {
			t.Errorf("b=%d third conv: pool-table %.0f ns, bit-group %.0f ns: want pool-table faster", b, Analytical(conv, pt), Analytical(conv, bg))
		}
		pt.Block, bg.Block = 2, 2
		if Analytical(dense, pt) <= Analytical(dense, bg) {
			t.Errorf("b=%d dense: pool-table %.0f ns, bit-group %.0f ns: want pool-table slower", b, Analytical(dense, pt), Analytical(dense, bg))
		}
	}
}
