package features

import (
	"fmt"
	"math"
)

// tilingNames are the names of TilingFeatures.
func tilingNames() []string {
	n := []string{"blocks_total_log", "single_block"}
	for i := 0; i < 3; i++ {
		n = append(n, fmt.Sprintf("tile%d_padded_fraction", i), fmt.Sprintf("tile%d_padded_waste_log", i))
	}
	return n
}

// unlg inverts lg: the integer x with lg(x) = v (lg is log2(1+x), exact for the small
// integers of tiles, blocks and alignments, and within float32 rounding of the log for
// large dimensions).
func unlg(v float32) float64 { return math.Round(math.Exp2(float64(v)) - 1) }

// TilingFeatures derives TilingWidth features of one configuration from its stored
// config vector (raw, as Config writes it) and its kernel's features (raw, as Kernel
// writes them): arithmetic on the tile, the iteration space and the (8,128) tiling,
// nothing the simulator or the cost package's plan computes.
//
//   - blocks_total_log: log2 of the number of blocks (the product over tiled
//     dimensions), the steps a kernel runs;
//   - single_block: 1 when that is one block (nothing to overlap DMA with compute);
//   - per tiled dimension i of size d with alignment a (8/16/32 sublanes or 128 lanes,
//     the tiling the hardware pads to) and tile t, with p = ⌈d/a⌉·a the padded size:
//     t / p (capped at 4), and log2(blocks·t / p), the work beyond the padding the
//     hardware does anyway (0 for a tile that splits the padded dimension evenly).
//
// The stored paper features compare the tile with the logical size instead, so a tile
// of 1024 over a dimension of 1000 looked like 2.4% waste, while the (8,128) tiling pads
// the dimension to 1024 and the tile wastes nothing.
func TilingFeatures(dst, config, kernel []float32) {
	const iterBase = KernelWidth - 6 // iter%d_log, iter%d_align_log pairs (kernelNames)
	total := 1.0
	j := 2
	for i := 0; i < 3; i++ {
		tile := unlg(config[3*i])
		blocks := unlg(config[3*i+2])
		size, align := unlg(kernel[iterBase+2*i]), unlg(kernel[iterBase+2*i+1])
		if tile <= 0 || size <= 0 {
			dst[j], dst[j+1] = 0, 0
			j += 2
			continue
		}
		total *= math.Max(blocks, 1)
		p := math.Ceil(size/math.Max(align, 1)) * math.Max(align, 1)
		dst[j] = float32(math.Min(tile/p, 4))
		dst[j+1] = float32(math.Log2(math.Max(blocks, 1) * tile / p))
		j += 2
	}
	dst[0] = float32(math.Log2(total))
	dst[1] = 0
	if total == 1 {
		dst[1] = 1
	}
}
