package lutcpu

import (
	"math"
	"testing"
	"time"
)

// scripted is a fake Timer: it returns the scripted durations (in ns) in turn, running
// the call each time, and counts the timed calls.
type scripted struct {
	ns    []int64
	timed int
}

func (s *scripted) Time(run func()) time.Duration {
	run()
	d := time.Duration(s.ns[s.timed])
	s.timed++
	return d
}

// tol is the tolerance of the exact statistics below: they are ratios of small integers,
// computed in float64 (relative error ~1e-16).
const tol = 1e-9

// TestMeasureRejectsOutliersAndReportsSpread: one repeat far from the others is rejected
// and counted; the median and spread are those of the rest; a quiet sample is not
// re-measured; warm-up calls run untimed.
func TestMeasureRejectsOutliersAndReportsSpread(t *testing.T) {
	m := Method{Warmup: 2, Repeats: 7, OutlierK: 3, MaxNoise: 0.05, Retries: 2}
	tm := &scripted{ns: []int64{100, 102, 98, 100, 101, 99, 500}}
	calls := 0
	s := m.Measure(tm, func() { calls++ })
	if s.Rejected != 1 || s.Kept != 6 {
		t.Fatalf("kept %d, rejected %d; want 6 and 1 (the 500 ns repeat)", s.Kept, s.Rejected)
	}
	if math.Abs(s.MedianNs-100) > tol {
		t.Errorf("median %v, want 100", s.MedianNs)
	}
	// Kept 98..102: spread 4 / 100.
	if math.Abs(s.SpreadPct-4) > tol {
		t.Errorf("spread %v%%, want 4%%", s.SpreadPct)
	}
	// |dev| of the kept = 0,2,2,0,1,1: MAD 1, noise 1.4826/100.
	if math.Abs(s.Noise-0.014826) > tol {
		t.Errorf("noise %v, want 0.014826", s.Noise)
	}
	if s.Remeasured != 0 || tm.timed != 7 || calls != 9 || s.Calls != 9 {
		t.Errorf("remeasured %d, timed %d, calls %d (sample says %d); want 0, 7, 9 (2 warm-up + 7)", s.Remeasured, tm.timed, calls, s.Calls)
	}
}

// TestMeasureRemeasuresNoisySample: an attempt noisier than MaxNoise is measured again
// and the quiet attempt kept; a sample noisy in every attempt keeps its least noisy one
// after Retries re-measurements.
func TestMeasureRemeasuresNoisySample(t *testing.T) {
	m := Method{Warmup: 1, Repeats: 5, OutlierK: 3, MaxNoise: 0.05, Retries: 2}
	noisy := []int64{100, 150, 80, 200, 120} // median 120, MAD 30: noise 0.37
	quiet := []int64{90, 91, 90, 89, 90}     // median 90, MAD 0 .. noise ≤ 0.05
	tm := &scripted{ns: append(append([]int64{}, noisy...), quiet...)}
	s := m.Measure(tm, func() {})
	if s.Remeasured != 1 || tm.timed != 10 || s.Calls != 12 {
		t.Fatalf("remeasured %d, timed %d, calls %d; want 1, 10, 12", s.Remeasured, tm.timed, s.Calls)
	}
	if math.Abs(s.MedianNs-90) > tol || s.Noise > m.MaxNoise {
		t.Errorf("kept median %v noise %v; want the quiet attempt's 90", s.MedianNs, s.Noise)
	}

	worse := []int64{100, 300, 50, 400, 120} // noise 0.9
	tm = &scripted{ns: append(append(append([]int64{}, noisy...), worse...), worse...)}
	s = m.Measure(tm, func() {})
	if s.Remeasured != 2 || tm.timed != 15 {
		t.Fatalf("remeasured %d, timed %d; want 2 retries, 15 timed calls", s.Remeasured, tm.timed)
	}
	if math.Abs(s.MedianNs-120) > tol || s.Noise > 0.5 {
		t.Errorf("kept median %v noise %v; want the least noisy attempt (median 120)", s.MedianNs, s.Noise)
	}
}

// TestCPUBackend: the real backend measures a config with a positive median and counts
// its calls; a bad config is refused.
func TestCPUBackend(t *testing.T) {
	b := &CPU{Layer: DefaultLayer(), Seed: 1, Method: Method{Warmup: 1, Repeats: 3, OutlierK: 3, MaxNoise: 10, Retries: 0}}
	s, err := b.Measure(Config{P: 16, Z: 8, B: 1, Order: OrderBitGroup, Block: 1, Unroll: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !(s.MedianNs > 0) || s.Calls != 4 || s.Kept+s.Rejected != 3 {
		t.Errorf("sample %+v", s)
	}
	if _, err := b.Measure(Config{P: 16, Z: 8, B: 9, Order: OrderBitGroup, Block: 1, Unroll: 1}); err == nil {
		t.Error("b = 9 measured")
	}
	if err := (Method{Warmup: 1, Repeats: 2, OutlierK: 3, MaxNoise: 0.05}).Check(); err == nil {
		t.Error("2 repeats accepted")
	}
}
