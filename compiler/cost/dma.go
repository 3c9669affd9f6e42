package cost

import (
	"math"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// BoxRuns is the number of contiguous runs of HBM a DMA of a box of an array moves: the
// descriptors (bursts) the DMA engine issues for it. s is the array with its physical
// layout, ext the box's extent per logical dimension of s (capped at the dimension's
// size). An array is stored as a grid of memory tiles, row-major over its physical
// dimensions, major to minor, with the two minor ones counted in tiles of t's layout
// tiling (t.SublaneTile rows by t.Lanes lanes; a tile is contiguous). A run is the box's
// part that is contiguous: from the minor tile dimension outwards, the box's extents up to
// and including the first one that does not cover its whole dimension. A box that covers
// the array's rows whole is one run; a box one tile row high in a larger dimension is one
// run per tile row; a box narrower than the array's lanes is one run per tile row of its
// lane tiles. A scalar or rank-1 array is one run.
func BoxRuns(s hlo.Shape, ext []int, t Target) float64 {
	if !s.IsArray() || s.Rank() <= 1 || len(ext) != s.Rank() {
		return 1
	}
	dims := s.PhysicalDims()
	mtm := s.LayoutOrDefault().MinorToMajor
	n := len(dims)
	eb := max(s.Elem.Bytes(), 1)
	unit := make([]int, n)
	for i := range unit {
		unit[i] = 1
	}
	unit[n-1], unit[n-2] = t.Lanes, t.SublaneTile(eb)
	total, run := 1.0, 1.0
	contiguous := true
	for i := n - 1; i >= 0; i-- {
		d := dims[i]
		e := min(max(ext[mtm[n-1-i]], 1), d)
		g, b := ceilDiv(d, unit[i]), ceilDiv(e, unit[i])
		total *= float64(b)
		if contiguous {
			run *= float64(b)
			contiguous = b >= g
		}
	}
	return math.Max(total/run, 1)
}

// runs is the contiguous runs of one window of operand in: in.Runs when it is set (the
// TPU's own box, see Operand.Runs), else flat, what the flattened tile gives.
func runs(in Operand, flat float64) float64 {
	if in.Runs > 0 {
		return in.Runs
	}
	return flat
}
