package gnn

import (
	"math"
	"testing"
)

// scheduleTol is the tolerance of the schedule's closed-form values (float64 arithmetic
// on a handful of operations).
const scheduleTol = 1e-12

func TestLRSchedule(t *testing.T) {
	const lr, total = 1e-3, 1000
	w := int64(math.Ceil(warmupFraction * total))
	for _, tc := range []struct {
		s    int64
		want float64
	}{
		{0, lr / float64(w)},          // the first warm-up step
		{w - 1, lr},                   // the end of the warm-up: the peak
		{w, lr},                       // the cosine starts at the peak
		{total, finalLRFraction * lr}, // and ends at the final fraction
		{total + 50, finalLRFraction * lr},
		{w + (total-w)/2, lr * (finalLRFraction + (1-finalLRFraction)/2)}, // half way: the mean
	} {
		if got := lrAt(ScheduleCosine, lr, tc.s, total); math.Abs(got-tc.want) > scheduleTol {
			t.Errorf("lr at step %d: %g, want %g", tc.s, got, tc.want)
		}
	}
	prev := math.Inf(1)
	for s := w; s <= total; s++ {
		got := lrAt(ScheduleCosine, lr, s, total)
		if got > prev {
			t.Fatalf("the cosine rises at step %d", s)
		}
		prev = got
	}
	if got := lrAt(ScheduleConstant, lr, 17, total); got != lr {
		t.Errorf("constant schedule: %g", got)
	}
}

func TestAutoBudget(t *testing.T) {
	for _, tc := range []struct{ steps, kernels, batch, epochs, patience int }{
		{4000, 200, 32, 572, 58},             // 7 batches an epoch: many passes over a small split
		{4000, 300000, 32, minAutoEpochs, 5}, // 9375 batches: the minimum of passes
		{4000, 10, 32, 1000, 100},            // one batch an epoch: capped
		{4000, 32 * 400, 32, 10, 5},
	} {
		e := autoEpochs(tc.steps, tc.kernels, tc.batch)
		if e != tc.epochs || autoPatience(e) != tc.patience {
			t.Errorf("%d steps, %d kernels in batches of %d: %d epochs, patience %d; want %d, %d",
				tc.steps, tc.kernels, tc.batch, e, autoPatience(e), tc.epochs, tc.patience)
		}
	}
}
