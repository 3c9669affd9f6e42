// Package replay holds tpucost's simulator up against the hardware: it rebuilds, in
// tpucost's own terms, every configuration of TpuGraphs' raw tuning files (real TPU v3
// measurements of real XLA programs), times each with the simulator and the analytical
// model, and scores their rankings against what the TPU measured (Score). `tpucost
// validate` and `tpucost calibrate` are its front ends.
//
// The metrics come from gnn/metric, a leaf package of pure functions (it imports nothing
// of tpucost), so that a simulator, a model and the TpuGraphs baselines are scored by one
// definition.
package replay

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/dataset/tpugraphs"
	"github.com/tpucost/tpucost/tpusim"
)

// Unmapped is a configuration, or a whole kernel, that could not be replayed, and why.
type Unmapped struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// TileRun is one measured tile configuration of a kernel, mapped to a tpucost tile and
// timed.
type TileRun struct {
	Index  int       `json:"index"`  // the run's position in the file's module
	Config string    `json:"config"` // the TPU's bounds, as dataset/tpugraphs writes them
	Tile   cost.Tile `json:"tile"`   // tpucost's tile for it
	// Approx names how the mapping is approximate ("" when exact): "strided" when the
	// TPU tile is a strided box that tpucost's tile covers contiguously, "rounded" when
	// an extent was rounded up to tpucost's alignment.
	Approx       string  `json:"approx,omitempty"`
	MeasuredNs   float64 `json:"measured_ns"`
	SimNs        float64 `json:"sim_ns"`
	AnalyticalNs float64 `json:"analytical_ns"`
	Default      bool    `json:"default,omitempty"`
}

// TileKernel is one op-tuning module replayed: its kernel's runs.
type TileKernel struct {
	Name     string     `json:"name"`
	Kind     string     `json:"kind"`
	Runs     []TileRun  `json:"runs"`
	Unmapped []Unmapped `json:"unmapped,omitempty"`
	// Info is the kernel's analysis (not serialized); Predict scores runs with it.
	Info *cost.KernelInfo `json:"-"`
	// Comp is the kernel's fused computation (not serialized).
	Comp *hlo.Computation `json:"-"`
}

// Skipped counts runs that carry no measurement to replay (as dataset/tpugraphs skips
// them): failed runs and runs without a positive compute time.
type Skipped struct {
	Error   int `json:"error"`
	Untimed int `json:"untimed"`
}

// timed reports whether run r carries a measurement (tpu_graphs' own loader skips runs
// with error set or with compute_time_ns ≤ 1).
func timed(r tpugraphs.Run, sk *Skipped) bool {
	switch {
	case r.Error:
		sk.Error++
		return false
	case !r.HasProfile || r.Profile.ComputeTimeNs <= 1:
		sk.Untimed++
		return false
	}
	return true
}

// ReplayTile replays the tile runs of one op-tuning module on chip c: each timed run's
// TileSizeConfig becomes a tpucost tile of the module's kernel (MapTile), timed by the
// simulator (tpusim.TimeChoice, default flags: XLA's TPU backend double-buffers every
// kernel) and the analytical model. Nested fusions inside the kernel's fused computation
// are inlined first (compiler.InlineFusions), as XLA's emitter sees one fused body. A run whose config cannot be expressed, or whose tile
// does not fit VMEM in tpucost's plan, is listed in Unmapped with the reason; a module
// whose kernel cannot be analyzed is an error wrapping ErrUnmapped.
func ReplayTile(mt tpugraphs.ModuleTuning, c tpusim.Chip, sk *Skipped) (TileKernel, error) {
	m := mt.Module.Clone()
	fc := tpugraphs.KernelComputation(m)
	compiler.InlineFusions(m, fc)
	k := TileKernel{Name: mt.Module.Name, Comp: fc}
	info, err := cost.Analyze(fc, c.Target)
	if err != nil {
		return k, fmt.Errorf("%w: %s: %v", ErrUnmapped, k.Name, err)
	}
	k.Info, k.Kind = info, info.Kind.String()
	for i, r := range mt.Runs {
		if r.Tile == nil || !timed(r, sk) {
			continue
		}
		cfg := tpugraphs.RawTileString(r.Tile)
		name := fmt.Sprintf("%s run %d (%s)", k.Name, i, cfg)
		tile, approx, err := MapTile(fc, info, r.Tile)
		if err != nil {
			k.Unmapped = append(k.Unmapped, Unmapped{Name: name, Reason: err.Error()})
			continue
		}
		p, err := cost.PlanConfig(info, "", cost.KernelConfig{Tile: tile, Flags: cost.DefaultFlags()}, c.Target)
		if err != nil {
			k.Unmapped = append(k.Unmapped, Unmapped{Name: name, Reason: err.Error()})
			continue
		}
		sim, an, err := tpusim.TimeChoice(p, c)
		if err != nil {
			k.Unmapped = append(k.Unmapped, Unmapped{Name: name, Reason: err.Error()})
			continue
		}
		k.Runs = append(k.Runs, TileRun{Index: i, Config: cfg, Tile: tile, Approx: approx,
			MeasuredNs: float64(r.Profile.ComputeTimeNs), SimNs: sim, AnalyticalNs: an, Default: r.IsDefault})
	}
	return k, nil
}

// ErrUnmapped marks a kernel or module tpucost cannot represent.
var ErrUnmapped = errors.New("not mapped")

// physical returns the dims of s in its physical order, major to minor, with the logical
// dimension number of each.
func physical(s hlo.Shape) (dims, logical []int) {
	l := s.LayoutOrDefault()
	n := len(s.Dims)
	dims, logical = make([]int, n), make([]int, n)
	for i, d := range l.MinorToMajor {
		dims[n-1-i], logical[n-1-i] = s.Dims[d], d
	}
	return dims, logical
}

// boundExtents converts one bound list of a TPU tile config into element extents per
// logical dimension of s. A bound is a tile extent per physical dimension of the tensor,
// major to minor in its layout: major dimensions count elements, the second-minor counts
// tiles of the layout's first tile dimension (the sublane tile, 8 in T(8,128)) and the
// minor counts tiles of its last (128 lanes); a rank-1 tensor counts tiles of its tile
// (T(1024): units of 1024). Extents are capped at the dimension's size. An empty list
// covers the whole tensor. strided reports that the box is not contiguous in memory: a
// dimension is cut while a dimension inside it (more minor, major side) is also cut.
func boundExtents(s hlo.Shape, bounds []int64) (ext []int, strided bool, err error) {
	dims, logical := physical(s)
	n := len(dims)
	ext = make([]int, n)
	if len(bounds) == 0 {
		copy(ext, s.Dims)
		return ext, false, nil
	}
	if len(bounds) != n {
		return nil, false, fmt.Errorf("%d bounds for a rank-%d tensor %s", len(bounds), n, s)
	}
	tile := []int{8, 128}
	if l := s.Layout; l != nil && len(l.Tiles) > 0 && len(l.Tiles[0]) > 0 {
		tile = l.Tiles[0]
	}
	unit := make([]int, n)
	for i := range unit {
		unit[i] = 1
	}
	switch {
	case n == 1:
		unit[0] = tile[len(tile)-1]
	case n >= 2:
		unit[n-1] = tile[len(tile)-1]
		if len(tile) >= 2 {
			unit[n-2] = tile[len(tile)-2]
		}
	}
	cut := false
	for i := n - 1; i >= 0; i-- {
		b := bounds[i]
		if b <= 0 || b > int64(dims[i]) && unit[i] == 1 {
			return nil, false, fmt.Errorf("bound %d of physical dimension %d (size %d) is out of range", b, i, dims[i])
		}
		e := min(int(b)*unit[i], dims[i])
		ext[logical[i]] = e
		// Majors are cut as whole rows of what lies inside them; the two minor
		// (tiled) dimensions are one contiguous tile row each.
		if e < dims[i] {
			if cut && i < n-2 {
				strided = true
			}
			cut = true
		}
	}
	return ext, strided, nil
}

// MapTile maps a TPU tile-size config of the kernel fc (analyzed as info)
// to tpucost's tile: one extent per IterDim of info, rounded up to the dimension's
// alignment and capped at its padded size.
//
//   - loop kernels: output_bounds cover the output (of a multi-output fusion, the element
//     of the bounds' rank); rows is the product of the extents of every dimension but the
//     physical minor, lanes the minor's extent;
//   - reductions: output_bounds cover the reduction's iteration space, the reduced
//     operand; out is the product of the kept dimensions' extents, reduce of the reduced
//     ones (a full reduction: rows and lanes of the operand, as a loop);
//   - convolutions: output_bounds cover the output (n: its feature dimension; m: the
//     rest), kernel_bounds the weight (k: its input feature and window dimensions);
//   - dots: output_bounds cover the output (m: the LHS's free dimensions, n: the RHS's),
//     kernel_bounds the RHS (k: its contracting dimensions).
//
// input_bounds and iteration_bounds must be empty (they are in every file TpuGraphs
// released); a kernel that iterates otherwise (sort, custom-call) is unmapped.
func MapTile(fc *hlo.Computation, info *cost.KernelInfo, tc *tpugraphs.TileSizeConfig) (cost.Tile, string, error) {
	if len(tc.InputBounds) > 0 || len(tc.IterationBounds) > 0 {
		return nil, "", errors.New("input or iteration bounds are set; only output and kernel bounds are mapped")
	}
	hero := heroOf(fc, info)
	var raw []int
	strided := false
	prod := func(ext []int, pick func(d int) bool) int {
		p := 1
		for d, e := range ext {
			if pick(d) {
				p *= e
			}
		}
		return p
	}
	switch info.Kind {
	case cost.KindLoop:
		s, err := boundTensor(fc.Root.Shape, len(tc.OutputBounds))
		if err != nil {
			return nil, "", err
		}
		if len(tc.KernelBounds) > 0 {
			return nil, "", errors.New("kernel bounds set on a loop kernel")
		}
		ext, st, err := boundExtents(s, tc.OutputBounds)
		if err != nil {
			return nil, "", fmt.Errorf("output bounds: %w", err)
		}
		strided = st
		raw = rowsLanes(s, ext)
	case cost.KindReduce:
		if hero == nil {
			return nil, "", errors.New("reduction kernel without a reduce")
		}
		s := hero.Operands[0].Shape
		ext, st, err := boundExtents(s, tc.OutputBounds)
		if err != nil {
			return nil, "", fmt.Errorf("output bounds over the reduced operand %s: %w", s, err)
		}
		strided = st
		if info.FullReduce {
			raw = rowsLanes(s, ext)
			break
		}
		reduced := map[int]bool{}
		for _, d := range hero.Dimensions {
			reduced[d] = true
		}
		out := prod(ext, func(d int) bool { return !reduced[d] })
		red := prod(ext, func(d int) bool { return reduced[d] })
		if info.RowReduce {
			raw = []int{out, red}
		} else {
			raw = []int{red, out}
		}
	case cost.KindGEMM:
		if hero == nil {
			return nil, "", errors.New("GEMM kernel without a dot or convolution")
		}
		ext, st, err := boundExtents(hero.Shape, tc.OutputBounds)
		if err != nil {
			return nil, "", fmt.Errorf("output bounds over %s: %w", hero.Shape, err)
		}
		kext, kst, err := boundExtents(hero.Operands[1].Shape, tc.KernelBounds)
		if err != nil {
			return nil, "", fmt.Errorf("kernel bounds over %s: %w", hero.Operands[1].Shape, err)
		}
		strided = st || kst
		switch hero.Opcode {
		case hlo.OpConvolution:
			cd := hero.Conv
			kin := map[int]bool{cd.KernelInput: true}
			for _, d := range cd.KernelSpatial {
				kin[d] = true
			}
			m := prod(ext, func(d int) bool { return d != cd.OutputFeature })
			n := ext[cd.OutputFeature]
			raw = []int{m, n, prod(kext, func(d int) bool { return kin[d] })}
		default:
			dd := hero.Dot
			if dd == nil {
				return nil, "", errors.New("dot without dimension numbers")
			}
			ls := hero.Operands[0].Shape
			nb := len(dd.LhsBatch)
			nlFree := ls.Rank() - nb - len(dd.LhsContracting)
			m := prod(ext, func(d int) bool { return d >= nb && d < nb+nlFree })
			n := prod(ext, func(d int) bool { return d >= nb+nlFree })
			contract := map[int]bool{}
			for _, d := range dd.RhsContracting {
				contract[d] = true
			}
			raw = []int{m, n, prod(kext, func(d int) bool { return contract[d] })}
		}
	default:
		return nil, "", fmt.Errorf("a %s kernel has no tile", info.Kind)
	}
	if len(raw) != len(info.Dims) {
		return nil, "", fmt.Errorf("mapped %d extents, the kernel tiles %d dimensions", len(raw), len(info.Dims))
	}
	tile := make(cost.Tile, len(raw))
	approx := ""
	if strided {
		approx = "strided"
	}
	for i, d := range info.Dims {
		full := roundUp(max(d.Size, 1), d.Align)
		v := min(roundUp(max(raw[i], 1), d.Align), full)
		if v != min(raw[i], full) && raw[i] < d.Size {
			approx = join(approx, "rounded")
		}
		tile[i] = v
	}
	return tile, approx, nil
}

func join(a, b string) string {
	if a == "" || strings.Contains(a, b) {
		return a + b
	}
	return a + "," + b
}

func roundUp(x, m int) int { return (x + m - 1) / m * m }

// rowsLanes is a loop view's (rows, lanes) of extents ext of s: lanes the physical
// minor's extent, rows the product of the rest; a rank-1 array is viewed as rows of 128.
func rowsLanes(s hlo.Shape, ext []int) []int {
	_, logical := physical(s)
	n := len(logical)
	switch n {
	case 0:
		return []int{1, 1}
	case 1:
		if s.Dims[0] > 128 {
			return []int{int(math.Ceil(float64(ext[0]) / 128)), 128}
		}
		return []int{1, ext[0]}
	}
	rows := 1
	for _, d := range logical[:n-1] {
		rows *= ext[d]
	}
	return []int{rows, ext[logical[n-1]]}
}

// boundTensor is the array a loop kernel's output_bounds cover: the output, or of a
// multi-output fusion's tuple the largest element of the bounds' rank.
func boundTensor(s hlo.Shape, rank int) (hlo.Shape, error) {
	if !s.IsTuple() {
		return s, nil
	}
	var best hlo.Shape
	found := false
	for _, e := range s.Tuple {
		if e.IsArray() && e.Rank() == rank && (!found || e.Elements() > best.Elements()) {
			best, found = e, true
		}
	}
	if !found {
		return s, fmt.Errorf("no output of rank %d in %s", rank, s)
	}
	return best, nil
}

// heroOf finds the instruction cost.Analyze chose as info's hero: the first dot or
// convolution, else the first reduce.
func heroOf(fc *hlo.Computation, info *cost.KernelInfo) *hlo.Instruction {
	for _, in := range fc.Instructions {
		if in.Opcode == info.Hero {
			return in
		}
	}
	return nil
}
