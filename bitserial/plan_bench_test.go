package bitserial_test

import (
	"context"
	"testing"

	"github.com/tpucost/tpucost/bitserial"
	"github.com/tpucost/tpucost/bitserial/lutcpu"
)

// BenchmarkPlannedPredict times one image through the whole network per kernel (int8,
// pool8, lut/b=1..8), each layer in its fastest variant on this CPU: first the same
// Planner as tpucost bitserial --kernels fastest (lutcpu.Planner, lutcpu.DefaultMethod:
// every int8, pool8 and LUT variant measured per layer and b; a few seconds, outside
// the timings), then the planned network, so that go test -bench answers the question
// the report does. The picks are logged (go test -v).
func BenchmarkPlannedPredict(b *testing.B) {
	n := bitserial.BenchNet(1)
	plan, err := lutcpu.Planner{Method: lutcpu.DefaultMethod(), Seed: 1}.Plan(context.Background(), n, []int{1, 2, 3, 4, 5, 6, 7, 8})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range plan.Choices {
		b.Logf("%s layer %d b=%d: %s (%.0f ns, plain %.0f ns)", c.Kernel, c.Layer, c.B, c.Variant, c.MedianNs, c.PlainNs)
	}
	bitserial.BenchPredict(b, n, plan)
}
