package tpusim

import (
	"fmt"
	"math"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
)

// weightGradSrc is a 2x2x2 convolution's weight gradient (as XLA writes it for a 3D
// convolution's backward pass): activations x [b,16,16,16,cin] and output gradients dy
// [b,15,15,15,cout] contract over batch and space into a [2,2,2,cin,cout] kernel
// gradient. Its 8 taps keep the GEMM's rows (8 × cin or 8 × cout) within one tile, so
// that the layouts compare MXU passes, not ragged tiles.
func weightGradSrc(b, cin, cout int) string {
	return fmt.Sprintf(`HloModule wgrad
ENTRY e {
  x = bf16[%[1]d,16,16,16,%[2]d] parameter(0)
  dy = bf16[%[1]d,15,15,15,%[3]d] parameter(1)
  ROOT c = bf16[2,2,2,%[2]d,%[3]d] convolution(x, dy), window={size=15x15x15}, dim_labels=f012b_i012o->012bf
}
`, b, cin, cout)
}

// wgradNs is the simulated time of the weight gradient's kernel with its output laid
// out with minor (a prefix of its minor-to-major order), and the kernel's analysis (the
// copy of a non-row-major result to the row-major program result is another kernel, not
// counted).
func wgradNs(t *testing.T, c Chip, b, cin, cout int, minor []int) (float64, *cost.KernelInfo) {
	t.Helper()
	cfg := compiler.NewConfig()
	cfg.Layout["c"] = minor
	p := compileDefault(t, parseHLO(t, weightGradSrc(b, cin, cout)), c, cfg)
	s, err := New(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range p.Kernels {
		if k.Info.Kind == cost.KindGEMM {
			kt, err := s.Kernel(k)
			if err != nil {
				t.Fatal(err)
			}
			return kt.Ns, k.Info
		}
	}
	t.Fatal("no GEMM kernel")
	return 0, nil
}

// The MXU's columns run along the output's minor dimension: a compute-bound weight
// gradient [2,2,2,192,64] laid out with the 64 output features minor fills half of the
// 128 columns, with the 192 input features minor three quarters of two column blocks:
// passes per weight row block 8·192/8 = 192 against 8·64/8 × 2 = 128, a ratio of
// 0.75 / 0.5 = 1.5. (On a TPU v3, TpuGraphs' 3D U-Net's [3,3,3,192,64] weight gradient
// made the same switch cost 14.7 ms, where 1.5× its ~25.5 ms at peak predicts 12.7 ms.)
func TestMinorExtentSetsMXUColumnOccupancy(t *testing.T) {
	// ratioTolerance covers what is not MXU passes: fill and drain, the weight loads of
	// short blocks, DMA and the epilogue (a few percent of a compute-bound kernel).
	const ratioTolerance = 0.05
	c := preset(t, "v3")
	featMinor, fi := wgradNs(t, c, 64, 192, 64, []int{4, 3})
	cinMinor, ci := wgradNs(t, c, 64, 192, 64, []int{3, 4})
	if fi.N != 64 || ci.N != 192 || fi.OutTransposed || ci.OutTransposed {
		t.Errorf("MXU columns: feature-minor N=%d (transposed %v), input-feature-minor N=%d (transposed %v); want 64 and 192, direct", fi.N, fi.OutTransposed, ci.N, ci.OutTransposed)
	}
	t.Logf("64-minor / 192-minor = %.3f; 64-minor / 128-minor below", featMinor/cinMinor)
	if got, want := featMinor/cinMinor, 1.5; math.Abs(got/want-1) > ratioTolerance {
		t.Errorf("64-minor / 192-minor = %.3f, want %.2f ± %.0f%% (column occupancy 0.5 vs 0.75)", got, want, 100*ratioTolerance)
	}
	// 128 and 64 minor: full columns against half of them, twice the passes.
	full, _ := wgradNs(t, c, 64, 64, 128, []int{4, 3})
	half, _ := wgradNs(t, c, 64, 64, 128, []int{3, 4})
	t.Logf("64-minor / 128-minor = %.3f", half/full)
	if got, want := half/full, 2.0; math.Abs(got/want-1) > ratioTolerance {
		t.Errorf("64-minor / 128-minor = %.3f, want %.1f ± %.0f%%", got, want, 100*ratioTolerance)
	}
}

// A minor extent below one sublane group (8) is not put on the MXU's columns: the other
// free side is, and the result is transposed into place through the XLU. A [3,3,3,4,32]
// weight gradient costs the same with its 4 input features or its 32 output features
// minor (as the TPU v3 measured for that pair in TpuGraphs' 3D U-Net: 0.8 µs apart over
// 910 ms), where putting 4 on the columns would take 8x the passes of 32.
func TestTinyMinorExtentIsTransposedNotOnColumns(t *testing.T) {
	// sameTolerance is the XLU transpose of the small result and the copy to the
	// row-major program result: well under 1% of the kernel.
	const sameTolerance = 0.01
	c := preset(t, "v3")
	feat, fi := wgradNs(t, c, 64, 4, 32, []int{4, 3})
	tiny, ti := wgradNs(t, c, 64, 4, 32, []int{3, 4})
	if fi.N != 32 || ti.N != 32 || fi.OutTransposed || !ti.OutTransposed {
		t.Errorf("N: feature-minor %d (transposed %v), 4-minor %d (transposed %v); want 32 direct and 32 transposed", fi.N, fi.OutTransposed, ti.N, ti.OutTransposed)
	}
	t.Logf("4-minor / 32-minor = %.4f", tiny/feat)
	if got := tiny / feat; math.Abs(got-1) > sameTolerance {
		t.Errorf("4-minor / 32-minor = %.4f, want 1 ± %.0f%%", got, 100*sameTolerance)
	}
}

// An operand layout constraint's copy is absorbed by the convolution's kernel (its
// operand is read in the producer's layout and relaid out in VMEM): a compute-bound
// convolution whose config asks for a batch-minor input costs what it costs without the
// constraint, within the XLU's share of a step hidden under the MXU (the TPU v3 measured
// no difference between [4 0] and [0 4] input layouts of TpuGraphs' 3D U-Net convolutions,
// 67 against 39 runs).
func TestOperandLayoutCopyIsAbsorbed(t *testing.T) {
	const sameTolerance = 0.01 // the copy's code and a hidden XLU pass; see above
	c := preset(t, "v3")
	m := parseHLO(t, `HloModule fwd
ENTRY e {
  x = bf16[8,16,16,16,128] parameter(0)
  w = bf16[3,3,3,128,128] parameter(1)
  ROOT c = bf16[8,16,16,16,128] convolution(x, w), window={size=3x3x3 pad=1_1x1_1x1_1}, dim_labels=b012f_012io->b012f
}
`)
	plain := programNs(t, compileDefault(t, m, c, nil), c)
	cfg := compiler.NewConfig()
	cfg.OperandLayout["c"] = [][]int{{0, 4}, nil}
	p := compileDefault(t, m, c, cfg)
	if len(p.Kernels) != 1 {
		t.Fatalf("%d kernels, want the copy fused into the convolution's", len(p.Kernels))
	}
	t.Logf("batch-minor input constraint / none = %.4f", programNs(t, p, c)/plain)
	if got := programNs(t, p, c) / plain; math.Abs(got-1) > sameTolerance {
		t.Errorf("batch-minor input constraint / none = %.4f, want 1 ± %.0f%%", got, 100*sameTolerance)
	}
}

// dotKernel analyzes the dot of a module's entry (its only computation).
func dotKernel(t *testing.T, c Chip, src string) *cost.KernelInfo {
	t.Helper()
	m := parseHLO(t, src)
	info, err := cost.Analyze(m.Entry, c.Target)
	if err != nil {
		t.Fatal(err)
	}
	if info.Kind != cost.KindGEMM {
		t.Fatalf("kind %s", info.Kind)
	}
	return info
}

// A K-minor weight (a [4096,1000] weight stored {0,1}, TpuGraphs' fusion.205) is read as
// N rows of K lanes: a window of 128 of its N and all 4096 of its K is 128 whole rows of
// memory, one DMA burst, as the N-minor weight's window of whole rows is. It used to be
// timed as 512 separate partial rows (one burst per sublane group), the kernel's slowest
// tile on the simulator where the TPU measured it fastest (45 µs).
func TestKMinorWeightReadsWholeRows(t *testing.T) {
	c, _ := Preset("v3")
	const src = `HloModule d
ENTRY e {
  x = f32[32,4096]{1,0} parameter(0)
  w = f32[4096,1000]{%s} parameter(1)
  ROOT d = f32[32,1000]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
`
	kMinor := dotKernel(t, c, fmt.Sprintf(src, "0,1"))
	nMinor := dotKernel(t, c, fmt.Sprintf(src, "1,0"))
	if !kMinor.RHSTransposed || nMinor.RHSTransposed {
		t.Fatalf("RHSTransposed: K-minor %v, N-minor %v", kMinor.RHSTransposed, nMinor.RHSTransposed)
	}
	tile := cost.Tile{32, 128, 4096}
	pk, err := kMinor.PlanTile(tile, c.Target)
	if err != nil {
		t.Fatal(err)
	}
	pn, err := nMinor.PlanTile(tile, c.Target)
	if err != nil {
		t.Fatal(err)
	}
	// The N-minor weight's window (4096 rows of 128 of its 1000 lanes) is partial rows:
	// a burst per sublane group; the K-minor one's is whole rows.
	if pk.InBurstsPerStep >= pn.InBurstsPerStep || pk.InBurstsPerStep > 2 {
		t.Errorf("bursts per step: K-minor %g, N-minor %g", pk.InBurstsPerStep, pn.InBurstsPerStep)
	}
}

// A weight gradient's batch contraction (X^T·dY: K is the second-minor of both operands
// in HBM) is stored in sublane groups: a step may take 8 rows of K (TpuGraphs'
// fusion.261 tiles K = 32 by 8, 16 and 32; the TPU measured 347, 201 and 94 µs). Such
// tiles are valid; the compiler still searches 128-multiples.
func TestBatchContractionTilesKBySublanes(t *testing.T) {
	c, _ := Preset("v3")
	info := dotKernel(t, c, `HloModule d
ENTRY e {
  x = f32[32,4096]{1,0} parameter(0)
  dy = f32[32,1000]{1,0} parameter(1)
  ROOT g = f32[4096,1000]{1,0} dot(x, dy), lhs_contracting_dims={0}, rhs_contracting_dims={0}
}
`)
	k := info.Dims[2]
	if k.Align != 8 || k.Min != 128 {
		t.Fatalf("K dim %+v: want alignment 8 (f32 sublanes), options from 128", k)
	}
	var times []float64
	for _, tk := range []int{8, 16, 32} {
		kt, err := SimulateKernel(info, cost.Tile{512, 512, tk}, cost.DefaultFlags(), c)
		if err != nil {
			t.Fatal(err)
		}
		times = append(times, kt.Ns)
	}
	if !(times[0] > times[1] && times[1] > times[2]) {
		t.Errorf("K tiles 8, 16, 32: %v ns; fewer K steps should be faster", times)
	}
	for _, tile := range info.TileOptions(c.Target, cost.DefaultFlags()) {
		if tile[2]%128 != 0 {
			t.Errorf("option %v: K not searched in 128-multiples", tile)
		}
	}
}
