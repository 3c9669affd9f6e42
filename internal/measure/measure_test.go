package measure_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"testing"

	"github.com/tpucost/tpucost/internal/measure"
	"github.com/tpucost/tpucost/internal/measure/measuretest"
)

// square is a fake backend: config c takes c² ns over 3 equal runs; a negative config
// fails. It counts its calls (safe for concurrent use).
type square struct{ calls atomic.Int64 }

func (*square) Name() string { return "square" }

func (s *square) Measure(c int) (measure.Sample, error) {
	if c < 0 {
		return measure.Sample{}, fmt.Errorf("config %d: want 0 or more", c)
	}
	s.calls.Add(1)
	return measure.Sample{MedianNs: float64(c*c + 1), Kept: 3, Calls: 3}, nil
}

// tol: the statistics below are ratios of small integers in float64 (error ~1e-16).
const tol = 1e-12

func TestConformanceOfAFake(t *testing.T) {
	measuretest.Conformance[int](t, &square{}, "square", []int{3, 1, 4, 1, 5, 9, 2, 6}, 1)
}

// TestRunWorkersSameResults: several workers give the results of one, in input order.
func TestRunWorkersSameResults(t *testing.T) {
	cs := make([]int, 100)
	for i := range cs {
		cs[i] = 100 - i
	}
	one, err := measure.Run(context.Background(), measure.Backend[int](&square{}), cs, measure.Options{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	four, err := measure.Run(context.Background(), measure.Backend[int](&square{}), cs, measure.Options{Seed: 7, Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	for i := range cs {
		if one[i] != four[i] || one[i].MedianNs != float64(cs[i]*cs[i]+1) {
			t.Fatalf("config %d: one worker %+v, four %+v", i, one[i], four[i])
		}
	}
}

// TestRunStopsAtFailure: the first failing config in the order stops the run with an
// error naming it; nothing is returned.
func TestRunStopsAtFailure(t *testing.T) {
	for _, workers := range []int{1, 3} {
		b := &square{}
		res, err := measure.Run(context.Background(), measure.Backend[int](b), []int{1, 2, -3, 4}, measure.Options{Seed: 1, Workers: workers})
		var ce *measure.ConfigError
		if !errors.As(err, &ce) || ce.Index != 2 || res != nil || err.Error() != "config -3: want 0 or more" {
			t.Errorf("workers %d: results %v, error %v; want none and the backend's error at index 2", workers, res, err)
		}
	}
	if _, err := measure.Run(context.Background(), measure.Backend[int](&square{}), []int{1}, measure.Options{Workers: -1}); err == nil {
		t.Error("workers -1 accepted")
	}
}

func TestStats(t *testing.T) {
	med, spread, noise := measure.Stats([]float64{98, 100, 102, 100, 101, 99})
	// Median 100; spread (102 − 98)/100; |dev| 2,0,2,0,1,1: MAD 1.
	if math.Abs(med-100) > tol || math.Abs(spread-4) > tol || math.Abs(noise-0.014826) > tol {
		t.Errorf("stats %v %v %v, want 100, 4, 0.014826", med, spread, noise)
	}
	if m, s, n := measure.Stats([]float64{5, 5, 5}); m != 5 || s != 0 || n != 0 {
		t.Errorf("equal repeats: %v %v %v", m, s, n)
	}
}

// TestBudget: an unlimited budget only counts; a failed measurement is not counted.
func TestBudget(t *testing.T) {
	b := measure.NewBudget(-1)
	c := measure.Count(measure.Backend[int](&square{}), b)
	for i := 0; i < 5; i++ {
		if _, err := c.Measure(i); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Measure(-1); err == nil || errors.Is(err, measure.ErrBudgetSpent) {
		t.Errorf("failing config: %v", err)
	}
	if b.Used() != 5 || b.Left() != -1 {
		t.Errorf("used %d left %d, want 5 and -1 (unlimited)", b.Used(), b.Left())
	}
	b = measure.NewBudget(0)
	if _, err := measure.Count(measure.Backend[int](&square{}), b).Measure(1); !errors.Is(err, measure.ErrBudgetSpent) {
		t.Errorf("zero budget: %v", err)
	}
}

func TestSampleCheck(t *testing.T) {
	good := measure.Sample{MedianNs: 10, Kept: 3, Calls: 5, Rejected: 2}
	if err := good.Check(); err != nil {
		t.Error(err)
	}
	for _, bad := range []measure.Sample{
		{MedianNs: 0, Kept: 1, Calls: 1},
		{MedianNs: math.Inf(1), Kept: 1, Calls: 1},
		{MedianNs: 1, Kept: 0, Calls: 1},
		{MedianNs: 1, Kept: 3, Rejected: 1, Calls: 3},
		{MedianNs: 1, Kept: 1, Calls: 1, Noise: math.NaN()},
	} {
		if bad.Check() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
