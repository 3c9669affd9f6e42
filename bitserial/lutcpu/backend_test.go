package lutcpu

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tpucost/tpucost/internal/measure"
	"github.com/tpucost/tpucost/internal/measure/measuretest"
)

// cycling is a fake Timer that returns 100, 101, 102 ns in turn, forever, running the
// call each time.
type cycling struct{ n int }

func (c *cycling) Time(run func()) time.Duration {
	run()
	c.n++
	return time.Duration(100 + c.n%3)
}

// TestCPUConformance: the processor behind measure.Backend passes the shared
// machinery's checks (the same generic check the simulator's backend passes), its
// timer scripted.
func TestCPUConformance(t *testing.T) {
	l := DefaultLayer()
	b := &CPU{Layer: l, Seed: 1, Method: Method{Warmup: 1, Repeats: 3, OutlierK: 3, MaxNoise: 0.05, Retries: 1}, Timer: &cycling{}}
	var cs []Config
	for _, b := range []int{1, 2, 3} {
		for _, p := range []int{16, 32} {
			cs = append(cs, Config{P: p, Z: 8, B: b, Order: OrderBitGroup, Block: 1, Unroll: 1})
		}
	}
	measuretest.Conformance[Config](t, b, "cpu", cs, 1)
}

// recorder is a fake Backend that records the configs it measures, in order; config i
// of its calls takes 1000 + i ns.
type recorder struct {
	calls []Config
}

func (*recorder) Name() string { return "cpu" }

func (r *recorder) Measure(c Config) (Sample, error) {
	if err := c.Check(DefaultLayer()); err != nil {
		return Sample{}, err
	}
	r.calls = append(r.calls, c)
	return Sample{MedianNs: float64(1000 + len(r.calls)), Kept: 3, Calls: 5}, nil
}

// TestGenMeasuresThroughTheSharedLoop: `gen --task bitserial` (GenRequest, with its
// backend injected where NewBackend's would be) measures through measure.Run: the
// chosen configs are measured once each in measure.Order of the seed, and each record
// holds its own config's sample at its position in that order. A loop that bypassed Run
// (measuring the configs in the space's order, or calling the CPU itself) fails it.
func TestGenMeasuresThroughTheSharedLoop(t *testing.T) {
	const n, seed = 40, 3
	rec := &recorder{}
	r := GenRequest{Backend: "cpu", Out: filepath.Join(t.TempDir(), "d"), Configs: n, Seed: seed, Method: DefaultMethod(), backend: rec}
	if _, err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	all, err := DefaultSpace().Configs()
	if err != nil {
		t.Fatal(err)
	}
	pick := measure.Order(seed, len(all))[:n]
	slices.Sort(pick)
	chosen := make([]Config, n)
	for k, i := range pick {
		chosen[k] = all[i]
	}
	order := measure.Order(seed, n)
	want := make([]Config, n)
	for k, i := range order {
		want[k] = chosen[i]
	}
	if !slices.Equal(rec.calls, want) {
		t.Fatalf("measured %v..., want the seeded order %v...", rec.calls[:3], want[:3])
	}
	_, recs, err := Read(r.Out)
	if err != nil {
		t.Fatal(err)
	}
	for k, x := range recs {
		if x.Seq != k || x.Config != want[k] || x.MedianNs != float64(1001+k) || x.Calls != 5 {
			t.Errorf("record %d: seq %d config %s median %v; want %s measured %d-th", k, x.Seq, x.Config, x.MedianNs, want[k], k+1)
		}
	}
}

// TestTuneCountsThroughTheWrapper: tune --task bitserial (TuneRequest, its backend
// injected) counts exactly the measurements its backend took, within the budget the
// counting wrapper enforces (Sample + Top per problem).
func TestTuneCountsThroughTheWrapper(t *testing.T) {
	rec := &recorder{}
	r := TuneRequest{Backend: "cpu", Sample: 30, Top: 2, Seed: 1, Lambda: DefaultLambda, Method: DefaultMethod(), Rounds: 1, FitRounds: 1, backend: rec}
	rep, err := r.Run()
	if err != nil {
		t.Fatal(err)
	}
	probs := len(DefaultSpace().Problems())
	if rep.Measurements != len(rec.calls) || rep.Measurements > 30+2*probs || rep.Sampled != 30 {
		t.Errorf("reported %d measurements, backend took %d, sampled %d; want equal, at most %d, 30 sampled", rep.Measurements, len(rec.calls), rep.Sampled, 30+2*probs)
	}
	// The wrapper enforces its budget: one measurement past it is refused.
	b := measure.NewBudget(1)
	c := measure.Count[Config](rec, b)
	cfg := Config{P: 16, Z: 8, B: 1, Order: OrderBitGroup, Block: 1, Unroll: 1}
	if _, err := c.Measure(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Measure(cfg); !errors.Is(err, measure.ErrBudgetSpent) {
		t.Errorf("past the budget: %v", err)
	}
}

// TestTuneStopsAtItsBudget: a budget given to Tune is enforced by the counting wrapper:
// the search stops after exactly that many measurements, with ErrBudgetSpent.
func TestTuneStopsAtItsBudget(t *testing.T) {
	const limit = 10
	rec := &recorder{}
	b := measure.NewBudget(limit)
	_, err := Tune(TuneOptions{Space: DefaultSpace(), Backend: rec, Sample: 30, Top: 2, Lambda: DefaultLambda, Seed: 1, Rounds: 1, Budget: b})
	if !errors.Is(err, measure.ErrBudgetSpent) || len(rec.calls) != limit || b.Used() != limit {
		t.Errorf("budget %d: error %v, %d measured, %d counted; want ErrBudgetSpent and %d each", limit, err, len(rec.calls), b.Used(), limit)
	}
}
