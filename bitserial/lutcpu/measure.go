package lutcpu

import (
	"fmt"
	"math"
	"time"

	"github.com/tpucost/tpucost/bitserial"
	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/internal/measure"
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

// Sample is one measured configuration: the sample every measurement backend returns
// (measure.Sample; MedianNs is the median of the kept repeats, Kept the repeats kept).
type Sample = measure.Sample

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
// floor·median) from the median rejected, then the median, spread and noise of the rest
// (measure.Stats).
func summarize(ns []float64, k, floor float64) Sample {
	med := measure.Median(ns)
	dev := make([]float64, len(ns))
	for i, v := range ns {
		dev[i] = math.Abs(v - med)
	}
	sd := max(measure.Median(dev)*measure.MADScale, floor*med)
	var kept []float64
	for _, v := range ns {
		// A deviation of 0 (over half the repeats equal, no floor) keeps only the
		// repeats at the median.
		if math.Abs(v-med) <= k*sd {
			kept = append(kept, v)
		}
	}
	s := Sample{Kept: len(kept), Rejected: len(ns) - len(kept)}
	s.MedianNs, s.SpreadPct, s.Noise = measure.Stats(kept)
	return s
}

// median of xs (not modified); 0 for none.

// Backend measures configurations of the LUT kernel: the interface every measurement
// backend implements (measure.Backend), on lutcpu's configurations. CPU is the real one;
// Measure returns a config's Check error for an invalid one.
type Backend = measure.Backend[Config]

// CPU measures configs on this machine, single-threaded: each config's kernel
// (NewKernel with Seed) is run by Method with Timer (WallTimer when nil). It is the
// processor as a measure.Backend[Config], the simulator's counterpart
// (tpusim.ChoiceBackend): gen measures through measure.Run over it, tune counts through
// measure.Counted. It is not safe for concurrent use (its timings would disturb each
// other): measure.Run with one worker.
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
