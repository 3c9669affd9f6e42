package lutcpu

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/tpucost/tpucost/bitserial"
	"github.com/tpucost/tpucost/dataset"
)

// Timer times one call of run. WallTimer is the real one; tests inject scripted ones.
type Timer interface {
	Time(run func()) time.Duration
}

// WallTimer times a call by the monotonic clock (time.Now, time.Since).
type WallTimer struct{}

// Time runs run once and returns its wall time.
func (WallTimer) Time(run func()) time.Duration {
	t0 := time.Now()
	run()
	return time.Since(t0)
}

// Method is how one sample is measured: Warmup untimed calls, then Repeats timed calls;
// repeats farther than OutlierK robust standard deviations (1.4826·MAD, at least
// OutlierFloor of the median: repeats within timer and clock jitter of each other are
// never outliers) from their median are rejected (and counted); the sample is the median of the rest, its spread (max −
// min)/median of the rest, its noise the robust relative deviation 1.4826·MAD/median of
// the rest. A sample noisier than MaxNoise is measured again (warm-up included), up to
// Retries times, and the least noisy attempt kept. Its fields are those a measured table
// records (dataset.MeasureMethod), declared once there.
type Method dataset.MeasureMethod

// DefaultMethod: 2 warm-up calls, 9 repeats, outliers beyond 3 robust deviations (at
// least 1% of the median each), a sample noisier than 5% re-measured up to 2 times.
func DefaultMethod() Method {
	return Method{Warmup: 2, Repeats: 9, OutlierK: 3, OutlierFloor: 0.01, MaxNoise: 0.05, Retries: 2}
}

// Check reports what is wrong with m in one line.
func (m Method) Check() error {
	switch {
	case m.Warmup < 0 || m.Warmup > 1000:
		return fmt.Errorf("warm-up %d: want 0..1000 calls", m.Warmup)
	case m.Repeats < 3 || m.Repeats > 1000:
		return fmt.Errorf("repeats %d: want 3..1000 (a median and a spread need 3)", m.Repeats)
	case !(m.OutlierK > 0) || math.IsInf(m.OutlierK, 0):
		return fmt.Errorf("outlier threshold %v: want a positive number of robust deviations", m.OutlierK)
	case !(m.OutlierFloor >= 0) || m.OutlierFloor >= 1:
		return fmt.Errorf("outlier floor %v: want a fraction in [0, 1)", m.OutlierFloor)
	case !(m.MaxNoise > 0) || math.IsInf(m.MaxNoise, 0):
		return fmt.Errorf("noise threshold %v: want a positive fraction", m.MaxNoise)
	case m.Retries < 0 || m.Retries > 100:
		return fmt.Errorf("retries %d: want 0..100", m.Retries)
	}
	return nil
}

// Sample is one measured configuration.
type Sample struct {
	MedianNs   float64 `json:"median_ns"`  // median of the kept repeats
	SpreadPct  float64 `json:"spread_pct"` // 100·(max − min)/median of the kept repeats
	Noise      float64 `json:"noise"`      // 1.4826·MAD/median of the kept repeats
	Kept       int     `json:"kept"`       // repeats kept
	Rejected   int     `json:"rejected"`   // repeats rejected as outliers (kept attempt)
	Remeasured int     `json:"remeasured"` // re-measurements because an attempt was noisier than MaxNoise
	Calls      int     `json:"calls"`      // every call made, warm-ups and all attempts
}

// madScale turns a median absolute deviation into a standard deviation of normal data.
const madScale = 1.4826

// Measure measures run by m with timer t.
func (m Method) Measure(t Timer, run func()) Sample {
	var best Sample
	calls, a := 0, 0
	for ; a <= m.Retries; a++ {
		for i := 0; i < m.Warmup; i++ {
			run()
			calls++
		}
		ns := make([]float64, m.Repeats)
		for i := range ns {
			ns[i] = float64(t.Time(run).Nanoseconds())
			calls++
		}
		s := summarize(ns, m.OutlierK, m.OutlierFloor)
		if a == 0 || s.Noise < best.Noise {
			best = s
		}
		if s.Noise <= m.MaxNoise {
			break
		}
	}
	best.Calls, best.Remeasured = calls, min(a, m.Retries)
	return best
}

// summarize is one attempt's statistics: outliers beyond k robust deviations (at least
// floor·median) from the median rejected, then the median, spread and noise of the rest.
func summarize(ns []float64, k, floor float64) Sample {
	med := median(ns)
	dev := make([]float64, len(ns))
	for i, v := range ns {
		dev[i] = math.Abs(v - med)
	}
	sd := max(median(dev)*madScale, floor*med)
	var kept []float64
	for _, v := range ns {
		// A deviation of 0 (over half the repeats equal, no floor) keeps only the
		// repeats at the median.
		if math.Abs(v-med) <= k*sd {
			kept = append(kept, v)
		}
	}
	s := Sample{Kept: len(kept), Rejected: len(ns) - len(kept)}
	s.MedianNs = median(kept)
	lo, hi := slices.Min(kept), slices.Max(kept)
	if s.MedianNs > 0 {
		s.SpreadPct = 100 * (hi - lo) / s.MedianNs
		for i, v := range kept {
			dev[i] = math.Abs(v - s.MedianNs)
		}
		s.Noise = median(dev[:len(kept)]) * madScale / s.MedianNs
	}
	return s
}

// median of xs (not modified); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Backend measures configurations of the LUT kernel. CPU is the real one.
type Backend interface {
	// Name is the backend as --backend names it.
	Name() string
	// Measure measures config c, or returns c's Check error.
	Measure(c Config) (Sample, error)
}

// CPU measures configs on this machine, single-threaded: each config's kernel
// (NewKernel with Seed) is run by Method with Timer (WallTimer when nil).
type CPU struct {
	Layer  bitserial.Layer
	Seed   uint64
	Method Method
	Timer  Timer
}

// Name is "cpu".
func (*CPU) Name() string { return "cpu" }

// Measure builds c's kernel and measures its Run.
func (b *CPU) Measure(c Config) (Sample, error) {
	k, err := NewKernel(b.Layer, c, b.Seed)
	if err != nil {
		return Sample{}, err
	}
	t := b.Timer
	if t == nil {
		t = WallTimer{}
	}
	return b.Method.Measure(t, func() { k.Run() }), nil
}

// Backends lists the --backend values of the bitserial task.
func Backends() []string { return []string{"cpu"} }
