package features

import (
	"math"
	"testing"
)

// tilingTol is the tolerance of derived features recomputed from float32 stored ones.
const tilingTol = 1e-6

// TestTilingFeatures: a reduce over a dimension of 1000 lanes (aligned to 128) and 16
// rows (aligned to 8). A tile of 1024 lanes covers the dimension the (8,128) tiling pads
// to 1024 in one block: no waste, a single block; 512 lanes take two blocks, no waste
// either; 384 take three, 1152 lanes of 1024.
func TestTilingFeatures(t *testing.T) {
	kernel := make([]float32, KernelWidth)
	const iter = KernelWidth - 6
	kernel[iter], kernel[iter+1] = lg(16), lg(8)
	kernel[iter+2], kernel[iter+3] = lg(1000), lg(128)
	for _, tc := range []struct {
		lanes, blocks    int
		total, single    float64
		fraction, wasteL float64
	}{
		{1024, 1, 0, 1, 1, 0},
		{512, 2, 1, 0, 0.5, 0},
		{384, 3, math.Log2(3), 0, 0.375, math.Log2(1152.0 / 1024)},
	} {
		config := make([]float32, ConfigWidth)
		config[0], config[1], config[2] = lg(16), 1, lg(1)
		config[3], config[4], config[5] = lg(float64(tc.lanes)), float32(tc.lanes)/1000, lg(float64(tc.blocks))
		got := make([]float32, TilingWidth)
		TilingFeatures(got, config, kernel)
		want := []float64{tc.total, tc.single, 1, 0, tc.fraction, tc.wasteL, 0, 0}
		for i := range want {
			if math.Abs(float64(got[i])-want[i]) > tilingTol {
				t.Errorf("tile 16x%d: %s = %g, want %g", tc.lanes, tilingNames()[i], got[i], want[i])
			}
		}
	}
	if n := ConfigTiling.Names(); len(n) != ConfigTiling.Width() || n[PaperConfigWidth] != "blocks_total_log" {
		t.Errorf("tiling set names %v for width %d", n, ConfigTiling.Width())
	}
}
