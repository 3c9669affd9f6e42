package cost

import (
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// paddedTol covers a tile plan's rounding against the padded arrays: averages of block
// extents over uneven splits (a share of a tile per block).
const paddedTol = 0.01

// maxBytes checks that no tile option of k moves more than the padded inputs and output
// once each (times rereads for inputs a tile makes it fetch again).
func checkMovesPaddedOnce(t *testing.T, k *KernelInfo, want float64) {
	t.Helper()
	tiles := k.TileOptions(v4, DefaultFlags())
	if len(tiles) == 0 {
		t.Fatal("no tile options")
	}
	for _, tile := range tiles {
		p, err := k.PlanTile(tile, v4)
		if err != nil {
			t.Fatal(err)
		}
		if p.PaddedBytes > want*(1+paddedTol) {
			t.Errorf("tile %s moves %.4g bytes, more than the padded arrays once (%.4g)", tile, p.PaddedBytes, want)
		}
	}
}

// TestBatchedSmallMatmul: f32[6272,6,6] x f32[6272,6,8] (seen on a real dump, once
// counted as 848 MB for a 3.6 MFLOP dot). Each [6,6] or [6,8] f32 slice pads to one
// (8,128) tile of 4 KiB: the kernel moves 3 × 6272 tiles, 77,070,336 bytes, whatever the
// tile, and packs many products per grid step.
func TestBatchedSmallMatmul(t *testing.T) {
	b := hlo.NewBuilder("bdot")
	x, y := b.Param(hlo.F32, 6272, 6, 6), b.Param(hlo.F32, 6272, 6, 8)
	k := kernel(t, b, b.BatchMatMul(x, y))
	if k.Kind != KindGEMM || k.Batch != 6272 || k.M != 6 || k.K != 6 || k.N != 8 {
		t.Fatalf("kernel %v batch %d m %d k %d n %d", k.Kind, k.Batch, k.M, k.K, k.N)
	}
	const padded = 3 * 6272 * 8 * 128 * 4
	checkMovesPaddedOnce(t, k, padded)
	best, err := k.BestAnalyticalTile(v4, DefaultFlags())
	if err != nil {
		t.Fatal(err)
	}
	p, _ := k.PlanTile(best, v4)
	if p.PaddedBytes != padded {
		t.Errorf("default tile %s moves %.0f bytes, want %d", best, p.PaddedBytes, padded)
	}
	// 12 KiB per product, up to BatchStepBytes a step: 85 products per step.
	if p.BatchPerStep < 80 || p.Steps > 80 {
		t.Errorf("%.1f products per step in %d steps, want about 85 in 74", p.BatchPerStep, p.Steps)
	}
	if fp := p.Footprint(DefaultFlags()); fp > float64(v4.VMEMBytes) {
		t.Errorf("packed footprint %.0f exceeds VMEM", fp)
	}
}

// TestUnalignedRHSWindow: the RHS of a matmul with K = 64 holds 64 rows, not 128: its
// window pads K to the sublane tile, the LHS's to 128 lanes.
func TestUnalignedRHSWindow(t *testing.T) {
	b := hlo.NewBuilder("mm")
	x, y := b.Param(hlo.F32, 512, 64), b.Param(hlo.F32, 64, 512)
	k := kernel(t, b, b.MatMul(x, y))
	p, err := k.PlanTile(Tile{512, 512, 128}, v4)
	if err != nil {
		t.Fatal(err)
	}
	lhs := 512.0 * 128 * 4 // 64 lanes pad to 128
	rhs := 64.0 * 512 * 4  // 64 rows are 8 sublane tiles
	out := 512.0 * 512 * 4
	if p.PaddedBytes != lhs+rhs+out {
		t.Errorf("moves %.0f bytes, want lhs %.0f + rhs %.0f + out %.0f", p.PaddedBytes, lhs, rhs, out)
	}
}

// TestReductionOverTransposedLayout: a full reduction of a transposed 51 MB array (once
// counted as 6.4 GB) reads the array once in its own layout; a partial reduction over
// the transposed layout never moves more than the padded input once either.
func TestReductionOverTransposedLayout(t *testing.T) {
	const padded = 3200 * 4096 * 4 // [3200, 4000] f32, lanes padded to 4096
	t.Run("full", func(t *testing.T) {
		b := hlo.NewBuilder("tred")
		x := b.Param(hlo.F32, 3200, 4000)
		k := kernel(t, b, b.ReduceSum(b.Transpose(x, 1, 0), 0, 1))
		if !k.FullReduce {
			t.Fatal("not analyzed as a full reduction")
		}
		checkMovesPaddedOnce(t, k, padded+4)
		best, err := k.BestAnalyticalTile(v4, DefaultFlags())
		if err != nil {
			t.Fatal(err)
		}
		p, _ := k.PlanTile(best, v4)
		if p.PaddedBytes < padded {
			t.Errorf("default tile %s moves %.0f bytes, less than the array", best, p.PaddedBytes)
		}
		if p.XLUOps != 0 {
			t.Errorf("a full reduction transposes nothing: %g XLU ops per step", p.XLUOps)
		}
	})
	t.Run("partial", func(t *testing.T) {
		b := hlo.NewBuilder("tred2")
		x := b.Param(hlo.F32, 3200, 4000)
		k := kernel(t, b, b.ReduceSum(b.Transpose(x, 1, 0), 1))
		checkMovesPaddedOnce(t, k, padded+PaddedBytes(hlo.Array(hlo.F32, 4000).WithLayout(hlo.RowMajor(1)), v4))
	})
}

// TestPadOfNarrowMinor: padding f32[1,224,224,3] (an image, 3 channels minor: ResNet-50's
// first pad, once counted as 1.1 GB) reads the input once: it is no row-broadcast input
// although its ratio to the output is below 1.
func TestPadOfNarrowMinor(t *testing.T) {
	b := hlo.NewBuilder("pad")
	x := b.Param(hlo.F32, 1, 224, 224, 3)
	z := b.ScalarConst(hlo.F32, 0)
	k := kernel(t, b, b.Pad(x, z, []hlo.PadDim{{}, {Lo: 3, Hi: 3}, {Lo: 3, Hi: 3}, {}}))
	in := 224.0 * 224 * 128 * 4
	out := 230.0 * 230 * 128 * 4
	checkMovesPaddedOnce(t, k, in+out+4)
}
