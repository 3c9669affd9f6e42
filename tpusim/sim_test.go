package tpusim

import (
	"errors"
	"math"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/compiler/hlo"
)

// compileDefault compiles m with default configs for chip c.
func compileDefault(t *testing.T, m *hlo.Module, c Chip, cfg *compiler.Config) *compiler.Program {
	t.Helper()
	p, err := compiler.Compile(m, cfg, compiler.Options{Target: c.Target, Check: true})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func build(t *testing.T, b *hlo.Builder, roots ...*hlo.Instruction) *hlo.Module {
	t.Helper()
	m, err := b.Build(roots...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func preset(t *testing.T, name string) Chip {
	t.Helper()
	c, err := Preset(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func programNs(t *testing.T, p *compiler.Program, c Chip) float64 {
	t.Helper()
	s, err := New(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	pt, err := s.Program(p)
	if err != nil {
		t.Fatal(err)
	}
	return pt.TotalNs
}

func TestPresetsFromPublicFigures(t *testing.T) {
	// Peak bf16 per chip and HBM per chip from DESIGN.md; the derived clocks must land
	// near the published ones (relTol: the table rounds clocks to ~1%).
	const relTol = 0.02
	for _, tc := range []struct {
		name          string
		peakTF, hbmGB float64
		clockMHz      float64
	}{
		{"v2", 45, 700, 687}, {"v3", 123, 900, 938}, {"v4", 275, 1200, 1049}, {"v5e", 197, 819, 1503},
	} {
		c := preset(t, tc.name)
		if got := c.PeakChipFlops() / 1e12; math.Abs(got-tc.peakTF) > relTol*tc.peakTF {
			t.Errorf("%s: chip peak %.1f TF/s, want %.0f", tc.name, got, tc.peakTF)
		}
		if got := c.HBMBandwidth * float64(c.CoresPerChip) / 1e9; math.Abs(got-tc.hbmGB) > relTol*tc.hbmGB {
			t.Errorf("%s: chip HBM %.0f GB/s, want %.0f", tc.name, got, tc.hbmGB)
		}
		if got := c.ClockHz / 1e6; math.Abs(got-tc.clockMHz) > relTol*tc.clockMHz {
			t.Errorf("%s: clock %.0f MHz, want ~%.0f", tc.name, got, tc.clockMHz)
		}
	}
	if _, err := Preset("v9"); err == nil {
		t.Error("unknown preset accepted")
	}
}

func matmulModule(t *testing.T, elem hlo.ElemType, m, k, n int) *hlo.Module {
	b := hlo.NewBuilder("matmul")
	x := b.Param(elem, m, k)
	w := b.Param(elem, k, n)
	return build(t, b, b.MatMul(x, w))
}

func TestLargeMatmulReachesPeak(t *testing.T) {
	// A large aligned bf16 matmul must reach >= 90% of peak FLOP/s with the default
	// compile: DESIGN.md's physical sanity check. The 10% covers fill/drain, the first
	// exposed DMA and the per-step overhead.
	const minFraction = 0.90
	for _, name := range PresetNames() {
		c := preset(t, name)
		m := matmulModule(t, hlo.BF16, 8192, 8192, 8192)
		p := compileDefault(t, m, c, nil)
		ns := programNs(t, p, c)
		flops := 2 * math.Pow(8192, 3)
		frac := flops / (ns * 1e-9) / (c.PeakFlops() * float64(c.DeviceCores())) // megacore: the device's cores
		if frac < minFraction || frac > 1 {
			t.Errorf("%s: 8192^3 bf16 matmul at %.1f%% of peak, want [%.0f%%, 100%%]", name, 100*frac, 100*minFraction)
		}
	}
}

func TestLargeElementwiseReachesHBMBandwidth(t *testing.T) {
	// A large f32 add must move its bytes at >= 85% of HBM bandwidth (DESIGN.md); the
	// rest is DMA latency at the pipeline's ends and burst overheads.
	const minFraction = 0.85
	for _, name := range PresetNames() {
		c := preset(t, name)
		b := hlo.NewBuilder("add")
		x, y := b.Param(hlo.F32, 16384, 1024), b.Param(hlo.F32, 16384, 1024)
		p := compileDefault(t, build(t, b, b.AddOp(x, y)), c, nil)
		ns := programNs(t, p, c)
		bytes := 3.0 * 16384 * 1024 * 4
		frac := bytes / (ns * 1e-9) / (c.HBMBandwidth * float64(c.DeviceCores()))
		if frac < minFraction || frac > 1 {
			t.Errorf("%s: elementwise add at %.1f%% of HBM bandwidth, want [%.0f%%, 100%%]", name, 100*frac, 100*minFraction)
		}
	}
}

func TestLanePaddingCosts(t *testing.T) {
	// f32[1024,129] pads its minor dimension to 256 lanes: nearly twice the bytes of
	// f32[1024,128]. "Markedly more" = at least 1.3x; the analytical model, blind to
	// padding, must see less than 1.05x (the 1/128 more logical bytes).
	const minSimRatio, maxAnalyticalRatio = 1.3, 1.05
	c := preset(t, "v4")
	times := map[int][2]float64{}
	for _, n := range []int{128, 129} {
		b := hlo.NewBuilder("add")
		x, y := b.Param(hlo.F32, 1024, n), b.Param(hlo.F32, 1024, n)
		p := compileDefault(t, build(t, b, b.Exp(b.AddOp(x, y))), c, nil)
		an := 0.0
		for _, k := range p.Kernels {
			an += Analytical(k, c)
		}
		times[n] = [2]float64{programNs(t, p, c), an}
	}
	if r := times[129][0] / times[128][0]; r < minSimRatio {
		t.Errorf("simulated [1024,129]/[1024,128] = %.2f, want >= %.2f", r, minSimRatio)
	}
	if r := times[129][1] / times[128][1]; r > maxAnalyticalRatio {
		t.Errorf("analytical [1024,129]/[1024,128] = %.2f, want <= %.2f (it is blind to padding)", r, maxAnalyticalRatio)
	}
}

func TestTileExceedingVMEMIsInvalid(t *testing.T) {
	c := preset(t, "v2") // 16 MiB VMEM
	p := compileDefault(t, matmulModule(t, hlo.F32, 4096, 4096, 4096), c, nil)
	k := p.Kernels[0]
	big := cost.Tile{2048, 2048, 4096} // lhs 32 MiB alone
	_, err := SimulateKernel(k.Info, big, cost.DefaultFlags(), c)
	if !errors.Is(err, cost.ErrTileInvalid) {
		t.Fatalf("tile %s on %s: err = %v, want ErrTileInvalid", big, c.Name, err)
	}
	// The same tile is also refused by a strict compile.
	cfg := compiler.NewConfig()
	cfg.Tile[k.Key] = big
	if _, err := compiler.Compile(matmulModule(t, hlo.F32, 4096, 4096, 4096), cfg, compiler.Options{Target: c.Target, Strict: true}); err == nil {
		t.Error("compile accepted a tile that does not fit VMEM")
	}
	// More VMEM makes it valid.
	if _, err := SimulateKernel(k.Info, big, cost.Flags{Unroll: 1, PipelineDepth: 1}, c.WithVMEM(256<<20)); err != nil {
		t.Errorf("with 256 MiB VMEM: %v", err)
	}
}

func TestDoubleBufferingHelpsDMABoundKernel(t *testing.T) {
	// A tiled elementwise kernel is DMA-bound: overlapping the next tile's DMA with
	// compute must beat serial DMA-then-compute by a clear margin (>= 1.2x; the gain is
	// the compute and latency that double buffering hides).
	const minGain = 1.2
	c := preset(t, "v4")
	b := hlo.NewBuilder("ew")
	x, y := b.Param(hlo.F32, 8192, 1024), b.Param(hlo.F32, 8192, 1024)
	p := compileDefault(t, build(t, b, b.Tanh(b.AddOp(x, y))), c, nil)
	k := p.Kernels[0]
	tile := cost.Tile{256, 1024}
	on, err := SimulateKernel(k.Info, tile, cost.DefaultFlags(), c)
	if err != nil {
		t.Fatal(err)
	}
	off, err := SimulateKernel(k.Info, tile, cost.Flags{Unroll: 1, PipelineDepth: 1}, c)
	if err != nil {
		t.Fatal(err)
	}
	if off.Ns/on.Ns < minGain {
		t.Errorf("double buffering: %.0f ns vs %.0f ns without (%.2fx), want >= %.1fx", on.Ns, off.Ns, off.Ns/on.Ns, minGain)
	}
	if an, _ := k.Info.Analytical(tile, c.Target); an > on.Ns {
		t.Errorf("analytical %.0f ns above the best simulated %.0f ns: it should be an optimistic roofline", an, on.Ns)
	}
}

func TestFusionRemovesHBMRoundTrip(t *testing.T) {
	// exp(x + y) fused moves x, y and the result; unfused it also writes and re-reads the
	// sum. The saving must be about 2x the intermediate's bytes (tolerance 10% for
	// padding granularity) and show in the time.
	const tol = 0.10
	c := preset(t, "v4")
	mk := func() *hlo.Module {
		b := hlo.NewBuilder("fuse")
		x, y := b.Param(hlo.F32, 4096, 1024), b.Param(hlo.F32, 4096, 1024)
		return build(t, b, b.Exp(b.AddOp(x, y)))
	}
	fused := compileDefault(t, mk(), c, nil)
	if len(fused.Kernels) != 1 {
		t.Fatalf("default compile has %d kernels, want 1 (add fused into exp)", len(fused.Kernels))
	}
	cfg := compiler.NewConfig()
	for _, fc := range fused.Space.Fusion {
		cfg.Fusion[fc.Name] = false
	}
	unfused := compileDefault(t, mk(), c, cfg)
	if len(unfused.Kernels) != 2 {
		t.Fatalf("unfused compile has %d kernels, want 2", len(unfused.Kernels))
	}
	bytes := func(p *compiler.Program) float64 {
		s := 0.0
		for _, k := range p.Kernels {
			s += k.Choice.Plan.LogicalBytes
		}
		return s
	}
	inter := 4096.0 * 1024 * 4
	if d := bytes(unfused) - bytes(fused); math.Abs(d-2*inter) > tol*2*inter {
		t.Errorf("fusion saved %.0f bytes, want ~%.0f", d, 2*inter)
	}
	if tf, tu := programNs(t, fused, c), programNs(t, unfused, c); tf >= tu {
		t.Errorf("fused %.0f ns not faster than unfused %.0f ns", tf, tu)
	}
}

func TestAnalyticalBlindWhereDesigned(t *testing.T) {
	// The analytical model ignores flags (pipelining) and DMA latency: changing flags
	// must change the simulated time and leave the analytical one unchanged.
	c := preset(t, "v4")
	p := compileDefault(t, matmulModule(t, hlo.BF16, 1024, 1024, 1024), c, nil)
	k := p.Kernels[0]
	tile := cost.Tile{256, 256, 256} // 64 steps: something to pipeline
	a1, _ := k.Info.Analytical(tile, c.Target)
	s1, err := SimulateKernel(k.Info, tile, cost.DefaultFlags(), c)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := SimulateKernel(k.Info, tile, cost.Flags{Unroll: 1, PipelineDepth: 1}, c)
	if err != nil {
		t.Fatal(err)
	}
	if s1.Ns == s2.Ns {
		t.Error("flags do not change the simulated time")
	}
	if a1 >= s1.Ns {
		t.Errorf("analytical %.0f >= simulated %.0f: the roofline should be optimistic here", a1, s1.Ns)
	}
}

func TestProgramIsSumOfKernels(t *testing.T) {
	c := preset(t, "v4")
	b := hlo.NewBuilder("two")
	x := b.Param(hlo.BF16, 512, 300)
	w := b.Param(hlo.BF16, 300, 1000)
	y := b.MatMul(x, w)
	s := b.ReduceSum(b.Convert(y, hlo.F32), 1)
	p := compileDefault(t, build(t, b, s), c, nil)
	sim, _ := New(c, Options{})
	pt, err := sim.Program(p)
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, k := range p.Kernels {
		kt, err := sim.Kernel(k)
		if err != nil {
			t.Fatal(err)
		}
		if kt.Ns <= c.LaunchNs {
			t.Errorf("kernel %s: %.0f ns is not above the launch overhead", k.Name, kt.Ns)
		}
		sum += kt.Ns
	}
	if pt.TotalNs != sum {
		t.Errorf("program %.1f ns != sum of kernels %.1f ns", pt.TotalNs, sum)
	}
}

func TestMeasurementNoise(t *testing.T) {
	c := preset(t, "v4")
	p := compileDefault(t, matmulModule(t, hlo.BF16, 512, 512, 512), c, nil)
	quiet, _ := New(c, Options{})
	m0, err := quiet.Measure(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	if m0.Ns != m0.TrueNs {
		t.Errorf("noise off: measured %.1f != true %.1f", m0.Ns, m0.TrueNs)
	}
	if m0.CostS <= ProgramCompileS {
		t.Errorf("measurement cost %.3f s does not include runs", m0.CostS)
	}
	noisy, _ := New(c, Options{NoiseSigma: 0.05, Runs: 5, Seed: 7})
	again, _ := New(c, Options{NoiseSigma: 0.05, Runs: 5, Seed: 7})
	seen := map[float64]bool{}
	for salt := uint64(0); salt < 20; salt++ {
		a, _ := noisy.Measure(p, salt)
		b, _ := again.Measure(p, salt)
		if a.Ns != b.Ns {
			t.Fatalf("same seed and salt gave %.3f and %.3f", a.Ns, b.Ns)
		}
		if a.Ns < a.TrueNs {
			t.Errorf("noise made a run faster than the truth: %.1f < %.1f", a.Ns, a.TrueNs)
		}
		// Min of 5 runs with sigma 5%: above 1.2x truth would be a 4-sigma event in
		// every run.
		if a.Ns > 1.2*a.TrueNs {
			t.Errorf("min of 5 runs %.1f is far above truth %.1f", a.Ns, a.TrueNs)
		}
		seen[a.Ns] = true
	}
	if len(seen) < 10 {
		t.Errorf("only %d distinct noisy values over 20 salts", len(seen))
	}
}
