package lutcpu

import (
	"context"
	"testing"
	"time"

	"github.com/tpucost/tpucost/bitserial"
)

// ramp is a fake Timer whose every timed call takes step ns more (or less) than the one
// before: the variants measured later are slower (step > 0) or faster (step < 0).
type ramp struct {
	ns, step int64
}

func (r *ramp) Time(run func()) time.Duration {
	run()
	r.ns += r.step
	return time.Duration(r.ns)
}

// planNet is a pool network of DefaultArch's shapes (the Planner reads only the layers,
// which are pooled, P and z).
func planNet() *bitserial.Net {
	ls := bitserial.DefaultArch.Layers()
	return &bitserial.Net{Layers: ls, P: 16, Z: 8, Idx: [][]uint8{nil, {0}, {0}, {0}}}
}

// TestPlannerPicksTheFastestVariant: the Planner measures every variant that fits each
// layer and keeps the fastest median: with times falling as the variants go it picks
// each layer's last fitting variant, with times rising the plain one; the plain variant's
// time is recorded; the plan fits the network.
func TestPlannerPicksTheFastestVariant(t *testing.T) {
	m := Method{Warmup: 0, Repeats: 3, OutlierK: 3, OutlierFloor: 0.01, MaxNoise: 0.05, Retries: 0}
	n := planNet()
	for _, c := range []struct {
		step                  int64
		int8Conv, int8Dense   bitserial.Int8Variant
		pool8Conv, pool8Dense bitserial.Pool8Variant
		lutConv, lutDense     bitserial.LUTVariant
	}{
		{-1, bitserial.Int8Variant{Block: 4, Unroll: 4}, bitserial.Int8Variant{Block: 2, Unroll: 4},
			bitserial.Pool8Variant{Block: 4, Unroll: 4}, bitserial.Pool8Variant{Block: 2, Unroll: 4},
			bitserial.LUTVariant{Order: bitserial.OrderPoolTable, Block: 4, Unroll: 4}, bitserial.LUTVariant{Order: bitserial.OrderPoolTable, Block: 2, Unroll: 4}},
		{+1, bitserial.PlainInt8(), bitserial.PlainInt8(), bitserial.PlainPool8(), bitserial.PlainPool8(), bitserial.PlainLUT(), bitserial.PlainLUT()},
	} {
		p := Planner{Method: m, Seed: 1, Timer: &ramp{ns: 1_000_000, step: c.step}}
		plan, err := p.Plan(context.Background(), n, []int{3})
		if err != nil {
			t.Fatal(err)
		}
		for i := range n.Layers {
			want := c.int8Conv
			if i == 3 {
				want = c.int8Dense
			}
			if plan.Int8[i] != want {
				t.Errorf("step %d: layer %d int8 %s, want %s", c.step, i+1, plan.Int8[i], want)
			}
		}
		for i := 1; i < 4; i++ {
			want := c.pool8Conv
			if i == 3 {
				want = c.pool8Dense
			}
			if plan.Pool8[i] != want {
				t.Errorf("step %d: layer %d pool8 %s, want %s", c.step, i+1, plan.Pool8[i], want)
			}
		}
		for i := 1; i < 4; i++ {
			want := c.lutConv
			if i == 3 {
				want = c.lutDense
			}
			if plan.LUT[3][i] != want {
				t.Errorf("step %d: layer %d LUT %s, want %s", c.step, i+1, plan.LUT[3][i], want)
			}
		}
		// 4 int8 choices (9, 9, 9 and 6 variants), 3 pool8 ones (9, 9, 6), 3 LUT ones
		// (36, 36, 24).
		wantCand := []int{9, 9, 9, 6, 9, 9, 6, 36, 36, 24}
		if len(plan.Choices) != len(wantCand) {
			t.Fatalf("%d choices, want %d", len(plan.Choices), len(wantCand))
		}
		for j, ch := range plan.Choices {
			if ch.Candidates != wantCand[j] || ch.PlainNs <= 0 || (c.step < 0) != (ch.MedianNs < ch.PlainNs) {
				t.Errorf("step %d: choice %+v: want %d candidates, a plain time, and the pick faster than plain iff times fall", c.step, ch, wantCand[j])
			}
		}
		if err := plan.Check(n.Layers); err != nil {
			t.Errorf("step %d: the plan does not fit the network: %v", c.step, err)
		}
	}
	if _, err := (Planner{Method: m}).Plan(context.Background(), n, []int{9}); err == nil {
		t.Error("b=9 planned")
	}
}
