package tpusim

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/hlo"
)

// relTol is the relative tolerance of comparisons between sums of the same float64
// kernel times added in different orders (rounding only).
const relTol = 1e-9

func parseHLO(t *testing.T, src string) *hlo.Module {
	t.Helper()
	m, err := hlo.Parse("test.hlo", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// loopSrc is a loop running a [256,512] exp-add step n times.
func loopSrc(n int) string {
	return strings.ReplaceAll(`HloModule loop
cond {
  cp = (s32[], f32[256,512]) parameter(0)
  ci = s32[] get-tuple-element(cp), index=0
  n = s32[] constant(TRIPS)
  ROOT lt = pred[] compare(ci, n), direction=LT
}
body {
  bp = (s32[], f32[256,512]) parameter(0)
  bi = s32[] get-tuple-element(bp), index=0
  one = s32[] constant(1)
  next = s32[] add(bi, one)
  x = f32[256,512] get-tuple-element(bp), index=1
  e = f32[256,512] exponential(x)
  y = f32[256,512] add(e, x)
  ROOT t = (s32[], f32[256,512]) tuple(next, y)
}
ENTRY main {
  p = f32[256,512] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[256,512]) tuple(z, p)
  w = (s32[], f32[256,512]) while(init), condition=cond, body=body
  ROOT r = f32[256,512] get-tuple-element(w), index=1
}
`, "TRIPS", strconv.Itoa(n))
}

const stepSrc = `HloModule step
ENTRY main {
  x = f32[256,512] parameter(0)
  e = f32[256,512] exponential(x)
  ROOT y = f32[256,512] add(e, x)
}
`

// TestLoopCostsNTimesBody: a loop of N identical steps costs N × (condition + body) plus
// the loop's overhead, and its body's main kernel costs what the same step costs alone.
func TestLoopCostsNTimesBody(t *testing.T) {
	c := preset(t, "v5e")
	step, err := Simulate(compileDefault(t, parseHLO(t, stepSrc), c, nil), c)
	if err != nil {
		t.Fatal(err)
	}
	stepNs := step.TotalNs
	for _, n := range []int{1, 8, 100} {
		// Without simplification: it would inline the one-trip loop (n = 1), and this
		// test is about the simulator's loop model, not the while-loop simplifier.
		p, err := compiler.Compile(parseHLO(t, loopSrc(n)), nil, compiler.Options{Target: c.Target, Check: true, Simplify: compiler.Simplify{None: true}})
		if err != nil {
			t.Fatal(err)
		}
		r, err := Simulate(p, c)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := New(c, Options{})
		var condNs, incNs, bodyNs float64
		for _, k := range p.Kernels {
			kt, err := s.Kernel(k)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case k.Computation == "cond":
				condNs += kt.Ns
			case k.Info.Transcendentals > 0:
				bodyNs += kt.Ns
			default:
				incNs += kt.Ns
			}
		}
		if math.Abs(bodyNs-stepNs) > relTol*stepNs {
			t.Errorf("n=%d: body kernel %.1f ns, the same step alone %.1f ns", n, bodyNs, stepNs)
		}
		want := float64(n)*(condNs+incNs+stepNs) + WhileSetupNs + float64(n)*WhileIterNs
		if math.Abs(r.TotalNs-want) > relTol*want {
			t.Errorf("n=%d: loop %.1f ns, want n × (cond %.1f + body %.1f + %.1f) + overhead = %.1f", n, r.TotalNs, condNs, incNs, stepNs, want)
		}
		loop := r.Kernels[0].ControlReport
		if loop == nil || loop.Control != "while" || *loop.TripCount != int64(n) || len(loop.Body) != 2 || len(loop.Condition) != 1 {
			t.Fatalf("n=%d: report entry %+v, want the while with its trip count and kernels", n, loop)
		}
	}
}

func TestUnknownTripCountIsReported(t *testing.T) {
	c := preset(t, "v5e")
	src := strings.Replace(loopSrc(8), "n = s32[] constant(8)", "n = s32[] get-tuple-element(cp), index=0", 1)
	r, err := Simulate(compileDefault(t, parseHLO(t, src), c, nil), c)
	if err != nil {
		t.Fatal(err)
	}
	if r.UnknownTripCounts != 1 {
		t.Errorf("unknown trip counts = %d, want 1", r.UnknownTripCounts)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"control":"while"`) || !strings.Contains(string(b), `"trip_count":-1`) {
		t.Errorf("json %s: want the while with trip_count -1", b)
	}
}

func TestConditionalExpectedCost(t *testing.T) {
	c := preset(t, "v5e")
	src := func(index string) string {
		return `HloModule cond
b0 {
  a0 = f32[512,512] parameter(0)
  e0 = f32[512,512] exponential(a0)
  ROOT s0 = f32[64,128] slice(e0), slice={[0:64], [0:128]}
}
b1 {
  a1 = f32[64,128] parameter(0)
  ROOT e1 = f32[64,128] negate(a1)
}
ENTRY main {
  x = f32[512,512] parameter(0)
  y = f32[64,128] parameter(1)
  i = s32[] ` + index + `
  ROOT c = f32[64,128] conditional(i, x, y), branch_computations={b0, b1}
}
`
	}
	times := map[string]float64{}
	for _, idx := range []string{"constant(0)", "constant(1)", "parameter(2)"} {
		r, err := Simulate(compileDefault(t, parseHLO(t, src(idx)), c, nil), c)
		if err != nil {
			t.Fatal(err)
		}
		times[idx] = r.TotalNs
	}
	if times["constant(0)"] == times["constant(1)"] {
		t.Fatalf("the branches must differ in cost: %v", times)
	}
	want := (times["constant(0)"] + times["constant(1)"]) / 2
	if got := times["parameter(2)"]; math.Abs(got-want) > relTol*want {
		t.Errorf("unknown index: %.1f ns, want the mean of the branches %.1f", got, want)
	}
}

// TestAllGatherRing: over a ring of k chips an all-gather moves (k-1)/k of the gathered
// data across every link, in k-1 hops; an all-reduce twice that in 2(k-1) hops.
func TestAllGatherRing(t *testing.T) {
	c := preset(t, "v4")
	const bytes = 64 << 20
	for _, k := range []int{2, 4, 8} {
		g, err := CollectiveTime(compiler.CollAllGather, bytes, k, c)
		if err != nil {
			t.Fatal(err)
		}
		perLink := float64(k-1) / float64(k) * bytes
		if g.BytesPerLink != perLink {
			t.Errorf("k=%d: all-gather moves %g bytes per link, want (k-1)/k × %d = %g", k, g.BytesPerLink, bytes, perLink)
		}
		// v4: 50 GB/s per link, 1 us per hop, 1 us launch.
		want := perLink/50e9*1e9 + float64(k-1)*1000 + 1000
		if math.Abs(g.Ns-want) > relTol*want {
			t.Errorf("k=%d: all-gather %.0f ns, want %.0f", k, g.Ns, want)
		}
		ar, err := CollectiveTime(compiler.CollAllReduce, bytes, k, c)
		if err != nil {
			t.Fatal(err)
		}
		if ar.BytesPerLink != 2*perLink || ar.Hops != 2*(k-1) {
			t.Errorf("k=%d: all-reduce %g bytes per link in %d hops, want %g in %d", k, ar.BytesPerLink, ar.Hops, 2*perLink, 2*(k-1))
		}
	}
	if one, err := CollectiveTime(compiler.CollAllReduce, bytes, 1, c); err != nil || one.Ns != 0 {
		t.Errorf("a group of one chip: %+v, %v; want free", one, err)
	}
	if _, err := CollectiveTime("all-sum", bytes, 4, c); err == nil {
		t.Error("an unknown collective kind must be an error")
	}
}

func TestAllReduceInProgram(t *testing.T) {
	c := preset(t, "v4")
	src := func(groups string) string {
		return `HloModule ar, replica_count=8
sum {
  sa = f32[] parameter(0)
  sb = f32[] parameter(1)
  ROOT sc = f32[] add(sa, sb)
}
ENTRY main {
  x = f32[1024,256] parameter(0)
  ROOT r = f32[1024,256] all-reduce(x), replica_groups=` + groups + `, to_apply=sum
}
`
	}
	ns := func(groups string, chips int) float64 {
		p := compileDefault(t, parseHLO(t, src(groups)), c, nil)
		r, err := SimulateWith(p, c, Options{Chips: chips})
		if err != nil {
			t.Fatal(err)
		}
		return r.TotalNs
	}
	want := func(k int) float64 {
		cc, err := CollectiveTime(compiler.CollAllReduce, 1024*256*4, k, c)
		if err != nil {
			t.Fatal(err)
		}
		return cc.Ns
	}
	if got, w := ns("{{0,1},{2,3},{4,5},{6,7}}", 0), want(2); got != w {
		t.Errorf("groups of 2: %.0f ns, want %.0f", got, w)
	}
	if got, w := ns("{}", 0), want(8); got != w {
		t.Errorf("all chips from replica_count: %.0f ns, want %.0f", got, w)
	}
	if got, w := ns("{}", 4), want(4); got != w {
		t.Errorf("--chips 4: %.0f ns, want %.0f", got, w)
	}
}

// TestMegacoreMemoryBound: v4 runs its two TensorCores as one device, so a memory-bound
// program moves its bytes at the chip's 1,200 GB/s, not one core's 600: it must take at
// most 819/1200 of its v5e time (v5e: 819 GB/s, one core), within bwTol.
func TestMegacoreMemoryBound(t *testing.T) {
	// bwTol covers the pipeline's exposed first fetch and last write-back, which do not
	// scale with bandwidth.
	const bwTol = 0.05
	v4, v5e := preset(t, "v4"), preset(t, "v5e")
	ns := func(c Chip) float64 {
		b := hlo.NewBuilder("add")
		x, y := b.Param(hlo.F32, 16384, 1024), b.Param(hlo.F32, 16384, 1024)
		return programNs(t, compileDefault(t, build(t, b, b.AddOp(x, y)), c, nil), c)
	}
	t4, t5 := ns(v4), ns(v5e)
	ratio := (819.0 / 1200.0)
	if t4 > t5*ratio*(1+bwTol) {
		t.Errorf("memory-bound add: v4 %.0f ns, v5e %.0f ns: v4/v5e = %.3f, want <= %.3f (HBM 819/1200)", t4, t5, t4/t5, ratio)
	}
	// A full reduction (one output block) splits its steps between the cores (128 MiB:
	// enough steps per core to pipeline, whole rows per window).
	red := func(c Chip) float64 {
		b := hlo.NewBuilder("sum")
		x := b.Param(hlo.F32, 65536, 512)
		return programNs(t, compileDefault(t, build(t, b, b.ReduceSum(x, 0, 1)), c, nil), c)
	}
	if r4, r5 := red(v4), red(v5e); r4 > r5*ratio*(1+bwTol) {
		t.Errorf("full reduction: v4 %.0f ns, v5e %.0f ns: v4/v5e = %.3f, want <= %.3f", r4, r5, r4/r5, ratio)
	}
	if v4.DeviceCores() != 2 || v5e.DeviceCores() != 1 {
		t.Errorf("device cores: v4 %d, v5e %d; want 2 and 1", v4.DeviceCores(), v5e.DeviceCores())
	}
}

// TestBatchedSmallMatmulTime: the f32[6272,6,6] x [6272,6,8] dot (once timed at 335× its
// analytical time) streams its padded arrays once, packed many products per step, so
// it runs at HBM bandwidth: within hbmTol of padded bytes / bandwidth plus the launch.
func TestBatchedSmallMatmulTime(t *testing.T) {
	// hbmTol covers the exposed first fetch and last write-back of the pipeline and
	// the per-step overhead (74 steps).
	const hbmTol = 0.15
	const padded = 3 * 6272 * 8 * 128 * 4
	c := preset(t, "v5e")
	b := hlo.NewBuilder("bdot")
	x, y := b.Param(hlo.F32, 6272, 6, 6), b.Param(hlo.F32, 6272, 6, 8)
	p := compileDefault(t, build(t, b, b.BatchMatMul(x, y)), c, nil)
	r, err := Simulate(p, c)
	if err != nil {
		t.Fatal(err)
	}
	k := r.Kernels[0].KernelReport
	floor := padded/c.HBMBandwidth*1e9 + c.LaunchNs
	if k.Bytes != padded || k.SimNs < floor || k.SimNs > floor*(1+hbmTol) || k.Bound != BoundHBM {
		t.Errorf("batched small dot: %.0f bytes in %.0f ns (%s), want %d bytes in [%.0f, %.0f] ns, hbm-bound",
			k.Bytes, k.SimNs, k.Bound, padded, floor, floor*(1+hbmTol))
	}
}

// TestApproximateOpsCounted: an unknown custom-call streams its operands and is counted
// as approximate, with its share of the time; known targets are not.
func TestApproximateOpsCounted(t *testing.T) {
	c := preset(t, "v5e")
	src := `HloModule cc
ENTRY main {
  a = f32[512,512] parameter(0)
  s = f32[512,512] custom-call(a), custom_call_target="Sharding"
  u = f32[512,512] custom-call(s), custom_call_target="MyFancyKernel"
  ROOT e = f32[512,512] exponential(u)
}
`
	r, err := Simulate(compileDefault(t, parseHLO(t, src), c, nil), c)
	if err != nil {
		t.Fatal(err)
	}
	var approx *KernelReport
	for _, e := range r.Kernels {
		if e.KernelReport != nil && e.Approximate {
			approx = e.KernelReport
		}
	}
	if r.ApproximateOps != 1 || approx == nil || r.ApproximateNs != approx.SimNs || r.ApproximateNs <= 0 {
		t.Errorf("approx ops %d, %.0f ns (kernel %+v), want the unknown custom-call alone", r.ApproximateOps, r.ApproximateNs, approx)
	}
	if len(r.Kernels) != 2 {
		t.Errorf("%d kernels, want 2 (Sharding is free)", len(r.Kernels))
	}
}

// TestAsyncCollectiveOverlaps: an asynchronous collective (a -start/-done pair) overlaps
// the kernels between its start and done: the block takes the kernel time plus only
// what is left of the transfer; a synchronous one adds its whole time.
func TestAsyncCollectiveOverlaps(t *testing.T) {
	c := preset(t, "v4")
	p := compileDefault(t, parseHLO(t, stepSrc), c, nil)
	k := p.Kernels[0]
	s, _ := New(c, Options{})
	kt, err := s.Kernel(k)
	if err != nil {
		t.Fatal(err)
	}
	for _, bytes := range []float64{1 << 10, 64 << 20} { // hidden; longer than the kernel
		col := &compiler.Collective{Name: "ag", Kind: compiler.CollAllGather, Bytes: bytes, GroupSize: 4, Async: true}
		cc, err := CollectiveTime(col.Kind, bytes, 4, c)
		if err != nil {
			t.Fatal(err)
		}
		p.Schedule = &compiler.Block{Name: "main", Steps: []compiler.Step{{Collective: col}, {Kernel: k}, {Done: col}}}
		pt, err := s.Program(p)
		if err != nil {
			t.Fatal(err)
		}
		want := kt.Ns + math.Max(cc.Ns-kt.Ns, 0)
		if math.Abs(pt.TotalNs-want) > relTol*want {
			t.Errorf("%g bytes async: %.0f ns, want kernel %.0f + exposed max(%.0f - kernel, 0) = %.0f", bytes, pt.TotalNs, kt.Ns, cc.Ns, want)
		}
		sync := *col
		sync.Async = false
		p.Schedule = &compiler.Block{Name: "main", Steps: []compiler.Step{{Collective: &sync}, {Kernel: k}}}
		if pt, err = s.Program(p); err != nil {
			t.Fatal(err)
		}
		if want := kt.Ns + cc.Ns; math.Abs(pt.TotalNs-want) > relTol*want {
			t.Errorf("%g bytes sync: %.0f ns, want %.0f", bytes, pt.TotalNs, want)
		}
	}
}
