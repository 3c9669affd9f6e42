package cost

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
)

var v4 = Target{Name: "v4", ClockHz: 1.049e9, MXUs: 4, MXUDim: 128, Lanes: 128, Sublanes: 8,
	HBMBandwidth: 600e9, VMEMBytes: 32 << 20, LaunchNs: 1000, StepOverheadCycles: 96}

func TestPaddedBytes(t *testing.T) {
	rm := func(t hlo.ElemType, dims ...int) hlo.Shape {
		return hlo.Array(t, dims...).WithLayout(hlo.RowMajor(len(dims)))
	}
	for _, tc := range []struct {
		s    hlo.Shape
		want float64
	}{
		{rm(hlo.F32, 1024, 128), 1024 * 128 * 4},
		{rm(hlo.F32, 1024, 129), 1024 * 256 * 4},                                            // lanes pad to 128
		{rm(hlo.F32, 3, 128), 8 * 128 * 4},                                                  // sublanes pad to 8
		{rm(hlo.BF16, 3, 128), 16 * 128 * 2},                                                // 16-bit: (8,128)(2,1) = 16 rows
		{rm(hlo.S8, 3, 128), 32 * 128},                                                      // 8-bit: 32 rows
		{rm(hlo.F32, 2, 3, 5), 2 * 8 * 128 * 4},                                             // outer dims unpadded
		{rm(hlo.F32, 1000), 1024 * 4},                                                       // rank 1: multiple of 8x128
		{hlo.Scalar(hlo.F32), 4},                                                            // one element
		{rm(hlo.F32, 5, 3).WithLayout(&hlo.Layout{MinorToMajor: []int{0, 1}}), 8 * 128 * 4}, // [3 rows][5 lanes]
	} {
		if got := PaddedBytes(tc.s, v4); got != tc.want {
			t.Errorf("PaddedBytes(%s) = %v, want %v", tc.s, got, tc.want)
		}
	}
}

func TestOpCosts(t *testing.T) {
	b := hlo.NewBuilder("c")
	x := b.Param(hlo.F32, 64, 32)
	w := b.Param(hlo.F32, 32, 16)
	dot := b.MatMul(x, w)
	e := b.Exp(dot)
	r := b.ReduceSum(e, 1)
	img := b.Param(hlo.F32, 2, 8, 8, 3)
	k := b.Param(hlo.F32, 3, 3, 3, 4)
	conv := b.Conv2D(img, k, 1, 1)
	dw := b.Conv2D(b.Param(hlo.F32, 2, 8, 8, 6), b.Param(hlo.F32, 3, 3, 1, 6), 1, 6)
	if _, err := b.Build(r, conv, dw); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name                    string
		in                      *hlo.Instruction
		flops, trans, read, wrt float64
	}{
		{"dot: 2*|out|*|contracting|", dot, 2 * 64 * 16 * 32, 0, (64*32 + 32*16) * 4, 64 * 16 * 4},
		{"exp: a transcendental per element", e, 0, 64 * 16, 64 * 16 * 4, 64 * 16 * 4},
		{"reduce: one add per input element", r, 64 * 16, 0, 64*16*4 + 4, 64 * 4},
		{"conv: 2*|out|*window*Cin", conv, 2 * (2 * 8 * 8 * 4) * 9 * 3, 0, (2*8*8*3 + 3*3*3*4) * 4, 2 * 8 * 8 * 4 * 4},
		{"depthwise conv: Cin per group is 1", dw, 2 * (2 * 8 * 8 * 6) * 9 * 1, 0, (2*8*8*6 + 54) * 4, 2 * 8 * 8 * 6 * 4},
	} {
		c := Of(tc.in)
		if c.Flops != tc.flops || c.Transcendentals != tc.trans || c.BytesRead != tc.read || c.BytesWritten != tc.wrt {
			t.Errorf("%s: got %+v, want flops %v trans %v read %v written %v", tc.name, c, tc.flops, tc.trans, tc.read, tc.wrt)
		}
	}
}

func TestDimCandidates(t *testing.T) {
	for _, tc := range []struct {
		d    IterDim
		want []int
	}{
		{IterDim{Size: 1000, Align: 128, Max: 4096}, []int{128, 256, 512, 1024}},
		{IterDim{Size: 3, Align: 8, Max: 2048}, []int{8}},
		{IterDim{Size: 100000, Align: 8, Max: 64}, []int{8, 16, 32, 64}},
		{IterDim{Size: 24, Align: 8, Max: 2048}, []int{8, 16, 24}},
	} {
		if got := dimCandidates(tc.d); !slices.Equal(got, tc.want) {
			t.Errorf("dimCandidates(%+v) = %v, want %v", tc.d, got, tc.want)
		}
	}
}

// kernel builds a one-computation module and analyzes its entry as a kernel.
func kernel(t *testing.T, b *hlo.Builder, root *hlo.Instruction) *KernelInfo {
	t.Helper()
	m, err := b.Build(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range m.Entry.Instructions {
		if in.Shape.IsArray() && in.Shape.Layout == nil {
			in.Shape.Layout = hlo.RowMajor(in.Shape.Rank())
		}
	}
	k, err := Analyze(m.Entry, v4)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestAnalyzeKinds(t *testing.T) {
	b := hlo.NewBuilder("gemm")
	x, w, bias := b.Param(hlo.BF16, 256, 512), b.Param(hlo.BF16, 512, 1000), b.Param(hlo.BF16, 1000)
	k := kernel(t, b, b.Relu(b.AddOp(b.MatMul(x, w), b.BroadcastTrailing(bias, 256, 1000))))
	if k.Kind != KindGEMM || k.M != 256 || k.N != 1000 || k.K != 512 || k.LHSTransposed || k.OutTransposed {
		t.Errorf("gemm: %v M=%d N=%d K=%d", k.Kind, k.M, k.N, k.K)
	}
	roles := []Role{k.Inputs[0].Role, k.Inputs[1].Role, k.Inputs[2].Role}
	if !slices.Equal(roles, []Role{RoleLHS, RoleRHS, RoleResident}) {
		t.Errorf("gemm roles %v", roles)
	}

	b = hlo.NewBuilder("rowreduce")
	k = kernel(t, b, b.ReduceSum(b.Exp(b.Param(hlo.F32, 4096, 1000)), 1))
	if k.Kind != KindReduce || !k.RowReduce || k.InElems != 4096*1000 || k.OutElems != 4096 || k.TransPerElem != 1 {
		t.Errorf("row reduce: %+v", k)
	}
	b = hlo.NewBuilder("colreduce")
	k = kernel(t, b, b.ReduceSum(b.Param(hlo.F32, 4096, 1000), 0))
	if k.Kind != KindReduce || k.RowReduce {
		t.Errorf("column reduce analyzed as row reduce")
	}

	b = hlo.NewBuilder("transpose")
	k = kernel(t, b, b.Transpose(b.Param(hlo.F32, 512, 256), 1, 0))
	if k.Kind != KindLoop || !k.Inputs[0].Transposed {
		t.Errorf("transpose: kind %v, input transposed %v", k.Kind, k.Inputs[0].Transposed)
	}

	b = hlo.NewBuilder("slice")
	big := b.Param(hlo.F32, 4096, 1024)
	k = kernel(t, b, b.Slice(b.Exp(big), []int{0, 0}, []int{8, 1024}))
	// A slice reads its window only: the input streams 8x1024 elements, not 4096x1024.
	if r := k.Inputs[0].Ratio; r != 1 {
		t.Errorf("slice input ratio %v, want 1", r)
	}
}

func TestPlanAndAnalytical(t *testing.T) {
	b := hlo.NewBuilder("mm")
	x, w := b.Param(hlo.BF16, 2048, 2048), b.Param(hlo.BF16, 2048, 2048)
	k := kernel(t, b, b.MatMul(x, w))
	small, err := k.PlanTile(Tile{256, 256, 512}, v4)
	if err != nil {
		t.Fatal(err)
	}
	large, _ := k.PlanTile(Tile{1024, 1024, 512}, v4)
	// Re-fetch: the lhs is read once per n block, the rhs once per m block.
	lhs := 2048.0 * 2048 * 2
	if want := lhs*8 + lhs*8 + lhs; small.LogicalBytes != want {
		t.Errorf("256x256 tiles move %v logical bytes, want %v", small.LogicalBytes, want)
	}
	if small.Steps != 8*8*4 || large.Steps != 2*2*4 {
		t.Errorf("steps %d and %d", small.Steps, large.Steps)
	}
	as, _ := k.Analytical(Tile{256, 256, 512}, v4)
	al, _ := k.Analytical(Tile{1024, 1024, 512}, v4)
	if al > as {
		t.Errorf("analytical prefers smaller tiles: %v vs %v", as, al)
	}
	compute := k.Flops / v4.PeakFlops() * 1e9
	// The analytical model is a roofline: never below compute time plus launch.
	if math.Abs(al-(compute+v4.LaunchNs)) > 1e-6*al && al < compute+v4.LaunchNs {
		t.Errorf("analytical %v below the compute roofline %v", al, compute+v4.LaunchNs)
	}
	if _, err := k.PlanTile(Tile{100, 128, 128}, v4); !errors.Is(err, ErrTileInvalid) {
		t.Errorf("misaligned tile: %v", err)
	}
	if _, err := k.CheckTile(Tile{2048, 2048, 2048}, DefaultFlags(), v4); !errors.Is(err, ErrTileInvalid) {
		t.Errorf("tile beyond VMEM: %v", err)
	}
	best, err := k.BestAnalyticalTile(v4, DefaultFlags())
	if err != nil {
		t.Fatal(err)
	}
	bp, _ := k.PlanTile(best, v4)
	if bp.Footprint(DefaultFlags()) > float64(v4.VMEMBytes) {
		t.Errorf("best tile %s does not fit", best)
	}
	for _, o := range k.TileOptions(v4, DefaultFlags()) {
		if ns, _ := k.Analytical(o, v4); ns < mustAnalytical(t, k, best)*(1-1e-3) {
			t.Errorf("option %s beats the chosen %s", o, best)
		}
	}
}

func mustAnalytical(t *testing.T, k *KernelInfo, tile Tile) float64 {
	ns, err := k.Analytical(tile, v4)
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

func TestFlags(t *testing.T) {
	all := AllFlags()
	if all[0] != DefaultFlags() || len(all) != 9 {
		t.Errorf("AllFlags: %d, first %v", len(all), all[0])
	}
	for _, f := range all {
		if err := f.Validate(); err != nil {
			t.Errorf("%v: %v", f, err)
		}
	}
	for _, f := range []Flags{{true, 3, 2}, {true, 1, 4}, {false, 1, 2}} {
		if f.Validate() == nil {
			t.Errorf("%+v accepted", f)
		}
	}
}

// TestPlanMemoIsTransparent: a memoized plan equals a fresh one, for the target the
// memo holds and for another target (which bypasses it).
func TestPlanMemoIsTransparent(t *testing.T) {
	b := hlo.NewBuilder("gemm")
	k := kernel(t, b, b.MatMul(b.Param(hlo.BF16, 256, 512), b.Param(hlo.BF16, 512, 384)))
	other := v4
	other.Name, other.HBMBandwidth = "other", v4.HBMBandwidth/2
	for _, tg := range []Target{v4, other, v4} {
		for _, tile := range k.TileOptions(tg, DefaultFlags()) {
			got, err := k.PlanTile(tile, tg)
			if err != nil {
				t.Fatal(err)
			}
			if want := k.plan(tile, tg); got != want {
				t.Fatalf("%s tile %s: memoized plan %+v, fresh %+v", tg.Name, tile, got, want)
			}
		}
	}
}

// TestAnalyticalChargesSteps: the analytical model charges a fixed overhead per grid step
// and the unoverlapped first and last step of the pipeline, so that its argmin (the
// default tile) does not split a small kernel into many steps for a roofline difference
// of a few percent. The case is dlrm_small_b32's interaction dot, f32[32,9,16] ×
// f32[32,16,9]: the pure roofline picked a 64-step tile the simulator timed 3× slower
// than a one-step tile (12.3 vs 4.0 µs).
func TestAnalyticalChargesSteps(t *testing.T) {
	b := hlo.NewBuilder("interact")
	x, y := b.Param(hlo.F32, 32, 9, 16), b.Param(hlo.F32, 32, 16, 9)
	k := kernel(t, b, b.BatchMatMul(x, y))
	best, err := k.BestAnalyticalTile(v4, DefaultFlags())
	if err != nil {
		t.Fatal(err)
	}
	bp, _ := k.PlanTile(best, v4)
	stepNs := v4.StepOverheadCycles / v4.ClockHz * 1e9
	for _, o := range k.TileOptions(v4, DefaultFlags()) {
		p, err := k.PlanTile(o, v4)
		if err != nil {
			t.Fatal(err)
		}
		a := mustAnalytical(t, k, o)
		// Every step is charged: the estimate is at least steps × overhead + launch.
		if lo := float64(p.Steps)*stepNs + v4.LaunchNs; a < lo*(1-1e-9) {
			t.Errorf("tile %s: %d steps estimated %.0f ns, below their overhead %.0f ns", o, p.Steps, a, lo)
		}
	}
	// The roofline's 64-step choice is not the default.
	if bp.Steps >= 64 {
		t.Errorf("default tile %s takes %d steps", best, bp.Steps)
	}
}

// TestKernelConfigIdentity: the canonical name datasets store, and the identity caches key
// on, for a tiled and an untiled kernel.
func TestKernelConfigIdentity(t *testing.T) {
	c := KernelConfig{Tile: Tile{8, 128, 512}, Flags: DefaultFlags()}
	if s := c.String(); s != "tile=8x128x512;flags=db2/u1" {
		t.Errorf("String() = %q", s)
	}
	if id := c.ID("abc"); id != "abc|tile=8x128x512;flags=db2/u1" {
		t.Errorf("ID() = %q", id)
	}
	u := KernelConfig{Flags: Flags{Unroll: 4}}
	if s := u.String(); s != "tile=-;flags=nodb/u4" {
		t.Errorf("untiled String() = %q", s)
	}
	if c.ID("abc") == c.ID("abd") || c.ID("k") == u.ID("k") {
		t.Error("distinct kernels or configs share an identity")
	}
}
