// Package measure is what every measurement backend of tpucost shares: the Backend
// interface (a named thing that measures one configuration of type C and returns a
// Sample), the loop that measures a list of configurations in a seeded order with
// progress and cancellation (Run), and the counting wrapper that enforces and reports a
// measurement budget (Budget, Counted: what tune counts as measurements).
//
// Two backends implement it: the simulator (tpusim.ChoiceBackend, a
// Backend[cost.Planned]: a TPU kernel's planned tile and flags, timed deterministically
// with seeded noise) and this machine's processor (lutcpu.CPU, a Backend[lutcpu.Config]:
// the bit-serial LUT kernel, timed by the wall clock with warm-up, repeats and outlier
// rejection). `gen` measures through Run on both; tune counts through Counted on both.
//
// The package sits on the ground floor (internal/layers): it imports nothing of the
// project, so the simulator below the datasets can implement it.
package measure

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
)

// Sample is one measured configuration. Its JSON keys are those of a measured table's
// row (dataset.MeasuredRow: median_ns, spread_pct, noise, repeats as kept, rejected,
// remeasured, calls).
type Sample struct {
	// MedianNs is the sample's time in ns: on a processor (lutcpu.CPU) the median of the
	// repeats kept after outlier rejection; the simulator (tpusim.ChoiceBackend) reports
	// the minimum of its runs, as its MeasureChoice always has (the autotuner's
	// convention), so that its time is unchanged behind the interface.
	MedianNs float64 `json:"median_ns"`
	// SpreadPct is 100·(max − min)/median of the repeats kept (the simulator: of its
	// runs' noisy copies).
	SpreadPct float64 `json:"spread_pct"`
	// Noise is the robust relative deviation 1.4826·MAD/median of the repeats kept (the
	// simulator: of its runs' copies; 0 without noise).
	Noise float64 `json:"noise"`
	// Kept is the repeats the time is computed from (the simulator: its runs).
	Kept int `json:"kept"`
	// Rejected is the repeats rejected as outliers (the simulator rejects none).
	Rejected int `json:"rejected"`
	// Remeasured is the re-measurements taken because an attempt was too noisy (the
	// simulator: 0).
	Remeasured int `json:"remeasured"`
	// Calls is every run of the configuration made for the sample: warm-ups, timed
	// repeats and all attempts (the simulator: its runs).
	Calls int `json:"calls"`
}

// Check reports what is wrong with s in one line: a time that is not positive and
// finite, a negative or non-finite spread or noise, or counts that do not add up
// (Kept at least 1, Rejected and Remeasured not negative, Calls at least Kept+Rejected).
func (s Sample) Check() error {
	switch {
	case !(s.MedianNs > 0) || math.IsInf(s.MedianNs, 0):
		return fmt.Errorf("time %v ns: want a positive, finite time", s.MedianNs)
	case !(s.SpreadPct >= 0) || math.IsInf(s.SpreadPct, 0) || !(s.Noise >= 0) || math.IsInf(s.Noise, 0):
		return fmt.Errorf("spread %v%%, noise %v: want finite and not negative", s.SpreadPct, s.Noise)
	case s.Kept < 1 || s.Rejected < 0 || s.Remeasured < 0 || s.Calls < s.Kept+s.Rejected:
		return fmt.Errorf("kept %d, rejected %d, remeasured %d, calls %d: want kept ≥ 1, calls ≥ kept + rejected", s.Kept, s.Rejected, s.Remeasured, s.Calls)
	}
	return nil
}

// Backend measures configurations of type C.
type Backend[C any] interface {
	// Name is the backend as --backend names it ("sim", "cpu").
	Name() string
	// Measure measures configuration c once (one Sample, whatever repeats it takes), or
	// says in one line why it cannot.
	Measure(c C) (Sample, error)
}

// MADScale turns a median absolute deviation into a standard deviation of normal data.
const MADScale = 1.4826

// Median is the median of xs (not modified); 0 for none.
func Median(xs []float64) float64 {
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

// Stats are the statistics of repeated times xs (at least one): their median, spread
// 100·(max − min)/median and noise MADScale·MAD/median (spread and noise 0 when the
// median is not positive).
func Stats(xs []float64) (median, spreadPct, noise float64) {
	median = Median(xs)
	if !(median > 0) {
		return median, 0, 0
	}
	spreadPct = 100 * (slices.Max(xs) - slices.Min(xs)) / median
	dev := make([]float64, len(xs))
	for i, v := range xs {
		dev[i] = math.Abs(v - median)
	}
	return median, spreadPct, Median(dev) * MADScale / median
}

// orderStream is the PCG stream of Order (the one lutcpu's measured datasets used before
// the order moved here, so their order for a seed is unchanged).
const orderStream = 37

// Order is the order Run measures n configurations in for seed: a permutation of 0..n-1
// (Order(seed, n)[k] is the k-th configuration measured).
func Order(seed uint64, n int) []int {
	return rand.New(rand.NewPCG(seed, orderStream)).Perm(n)
}

// Options configure Run.
type Options struct {
	// Seed seeds the measurement order (Order): a burst of other load on the machine
	// falls on all parts of the list alike, not on one end of it.
	Seed uint64
	// Workers is how many configurations are measured at once, taken in the seeded
	// order: 0 or 1 one at a time (a processor's timings, which other measurements would
	// disturb); more only for a backend safe for concurrent use whose samples do not
	// depend on timing (the simulator).
	Workers int
	// Progress, if set, is called after every measured configuration with the count done
	// and the total, from one goroutine at a time.
	Progress func(done, total int)
}

// Result is one configuration's measurement by Run.
type Result struct {
	Sample
	// Seq is the configuration's position in the measurement order (0 first).
	Seq int
}

// ConfigError is Run's error for a configuration the backend failed to measure: the
// backend's error, its text unchanged (a loop moved onto Run reports as before), with
// the configuration's position in the input list, so that the caller can name it.
type ConfigError struct {
	Index int // position in the list given to Run
	Err   error
}

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Run measures every configuration of cs with b, in the order Order(o.Seed, len(cs)),
// and returns the results in the order of cs. It stops at the first configuration that
// fails (a *ConfigError; with several workers the one earliest in the order) or when ctx
// is cancelled (checked before each measurement; the error wraps ctx's), returning no
// results.
func Run[C any](ctx context.Context, b Backend[C], cs []C, o Options) ([]Result, error) {
	if o.Workers < 0 {
		return nil, fmt.Errorf("workers %d: want 0 or more", o.Workers)
	}
	n := len(cs)
	order := Order(o.Seed, n)
	out := make([]Result, n)
	errs := make([]error, n) // by position in the order
	var mu sync.Mutex        // guards done and the Progress calls
	done := 0
	measure := func(seq int) {
		i := order[seq]
		if err := ctx.Err(); err != nil {
			errs[seq] = err
			return
		}
		s, err := b.Measure(cs[i])
		if err != nil {
			errs[seq] = &ConfigError{Index: i, Err: err}
			return
		}
		out[i] = Result{Sample: s, Seq: seq}
		mu.Lock()
		done++
		if o.Progress != nil {
			o.Progress(done, n)
		}
		mu.Unlock()
	}
	if o.Workers <= 1 {
		for seq := range order {
			if measure(seq); errs[seq] != nil {
				break
			}
		}
	} else {
		next := make(chan int)
		var wg sync.WaitGroup
		for w := 0; w < min(o.Workers, n); w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for seq := range next {
					measure(seq)
				}
			}()
		}
		for seq := range order {
			if ctx.Err() != nil {
				break
			}
			next <- seq
		}
		close(next)
		wg.Wait()
	}
	for _, err := range errs {
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return nil, fmt.Errorf("measurement interrupted after %d of %d configs: %w", done, n, err)
			}
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("measurement interrupted after %d of %d configs: %w", done, n, err)
	}
	return out, nil
}

// ErrBudgetSpent is the error of a measurement past its budget (wrapped by Counted).
var ErrBudgetSpent = errors.New("measurement budget spent")

// Budget counts measurements against a limit; safe for concurrent use.
type Budget struct {
	mu    sync.Mutex
	limit int
	used  int
}

// NewBudget returns a budget of limit measurements (a negative limit: unlimited, only
// counted).
func NewBudget(limit int) *Budget { return &Budget{limit: limit} }

// take spends one measurement, or returns ErrBudgetSpent.
func (b *Budget) take() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.limit >= 0 && b.used >= b.limit {
		return ErrBudgetSpent
	}
	b.used++
	return nil
}

// refund gives back a measurement taken for one that failed.
func (b *Budget) refund() {
	b.mu.Lock()
	b.used--
	b.mu.Unlock()
}

// Used is the measurements taken.
func (b *Budget) Used() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Left is the measurements that remain (-1: unlimited).
func (b *Budget) Left() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.limit < 0 {
		return -1
	}
	return b.limit - b.used
}

// Limit is the budget's limit (negative: unlimited).
func (b *Budget) Limit() int { return b.limit }

// Counted is a backend whose measurements are counted against a budget: Measure past the
// budget measures nothing and returns an error wrapping ErrBudgetSpent; a measurement
// that fails is not counted. It is safe for concurrent use when its backend is.
type Counted[C any] struct {
	Backend Backend[C]
	Budget  *Budget
}

// Count wraps b with budget.
func Count[C any](b Backend[C], budget *Budget) Counted[C] {
	return Counted[C]{Backend: b, Budget: budget}
}

// Name is the wrapped backend's.
func (c Counted[C]) Name() string { return c.Backend.Name() }

// Measure measures x with the wrapped backend if the budget has room, counting it.
func (c Counted[C]) Measure(x C) (Sample, error) {
	if err := c.Budget.take(); err != nil {
		return Sample{}, fmt.Errorf("%d of %d measurements taken: %w", c.Budget.Used(), c.Budget.Limit(), err)
	}
	s, err := c.Backend.Measure(x)
	if err != nil {
		c.Budget.refund()
		return Sample{}, err
	}
	return s, nil
}
