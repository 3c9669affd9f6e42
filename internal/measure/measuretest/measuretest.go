// Package measuretest checks a measure.Backend against what the shared machinery (Run,
// Counted) promises on top of it: one generic check that every backend's tests call
// (tpusim's simulator, lutcpu's processor with a scripted timer).
package measuretest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/tpucost/tpucost/internal/measure"
)

// indexed measures configuration i of cs with b and records the calls in order, with
// the sample each returned: Run over it shows which configuration was measured when.
type indexed[C any] struct {
	b       measure.Backend[C]
	cs      []C
	calls   []int
	samples map[int]measure.Sample
}

func (x *indexed[C]) Name() string { return x.b.Name() }

func (x *indexed[C]) Measure(i int) (measure.Sample, error) {
	s, err := x.b.Measure(x.cs[i])
	if err != nil {
		return s, err
	}
	x.calls = append(x.calls, i)
	x.samples[i] = s
	return s, nil
}

// Conformance checks backend b, named name, on configurations cs (at least 2, each valid)
// through the shared machinery, measuring each a few times:
//   - Run measures each configuration once, in the order measure.Order(seed, n), reports
//     progress after each, and returns each one's own sample and position in input order;
//     every sample passes Sample.Check;
//   - Run directly on b over cs returns n valid samples whose positions are that order;
//   - a cancelled context measures nothing and its error wraps context.Canceled;
//   - Counted with a budget of n−1 measures n−1 configurations, then stops with
//     ErrBudgetSpent, and reports n−1 used.
func Conformance[C any](t *testing.T, b measure.Backend[C], name string, cs []C, seed uint64) {
	t.Helper()
	n := len(cs)
	if n < 2 {
		t.Fatalf("conformance needs at least 2 configurations, got %d", n)
	}
	if b.Name() != name {
		t.Errorf("backend name %q, want %q", b.Name(), name)
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	x := &indexed[C]{b: b, cs: cs, samples: map[int]measure.Sample{}}
	var progress []int
	res, err := measure.Run(context.Background(), measure.Backend[int](x), idx, measure.Options{Seed: seed,
		Progress: func(done, total int) {
			if total != n {
				t.Errorf("progress total %d, want %d", total, n)
			}
			progress = append(progress, done)
		}})
	if err != nil {
		t.Fatal(err)
	}
	order := measure.Order(seed, n)
	if !slices.Equal(x.calls, order) {
		t.Errorf("measured in order %v, want the seeded order %v", x.calls, order)
	}
	if slices.Equal(order, idx) {
		t.Errorf("seed %d orders %d configs as given: pick a seed that shuffles them", seed, n)
	}
	if len(progress) != n || !slices.IsSorted(progress) || progress[n-1] != n {
		t.Errorf("progress %v, want 1..%d", progress, n)
	}
	if len(res) != n {
		t.Fatalf("%d results, want %d", len(res), n)
	}
	for i, r := range res {
		if r.Sample != x.samples[i] {
			t.Errorf("result %d is %+v, but config %d measured %+v", i, r.Sample, i, x.samples[i])
		}
		if order[r.Seq] != i {
			t.Errorf("result %d has position %d in the order, which measured config %d", i, r.Seq, order[r.Seq])
		}
		if err := r.Sample.Check(); err != nil {
			t.Errorf("config %d: %v", i, err)
		}
	}

	direct, err := measure.Run(context.Background(), b, cs, measure.Options{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range direct {
		if order[r.Seq] != i {
			t.Errorf("Run over the backend itself: config %d at position %d, want the seeded order", i, r.Seq)
		}
		if err := r.Sample.Check(); err != nil {
			t.Errorf("Run over the backend itself: config %d: %v", i, err)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	x = &indexed[C]{b: b, cs: cs, samples: map[int]measure.Sample{}}
	if _, err := measure.Run(ctx, measure.Backend[int](x), idx, measure.Options{Seed: seed}); !errors.Is(err, context.Canceled) || len(x.calls) != 0 {
		t.Errorf("cancelled: %d measured, error %v; want none measured and context.Canceled", len(x.calls), err)
	}

	x = &indexed[C]{b: b, cs: cs, samples: map[int]measure.Sample{}}
	budget := measure.NewBudget(n - 1)
	counted := measure.Count(measure.Backend[int](x), budget)
	if counted.Name() != name {
		t.Errorf("counted backend named %q, want %q", counted.Name(), name)
	}
	if _, err := measure.Run(context.Background(), measure.Backend[int](counted), idx, measure.Options{Seed: seed}); !errors.Is(err, measure.ErrBudgetSpent) {
		t.Errorf("a budget of %d for %d configs: error %v, want ErrBudgetSpent", n-1, n, err)
	}
	if budget.Used() != n-1 || len(x.calls) != n-1 || budget.Left() != 0 {
		t.Errorf("budget of %d: used %d, left %d, backend called %d times; want %d, 0, %d", n-1, budget.Used(), budget.Left(), len(x.calls), n-1, n-1)
	}
}
