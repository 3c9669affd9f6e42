// Package replay holds tpucost's simulator up against the hardware: it rebuilds, in
// tpucost's own terms, every configuration of TpuGraphs' raw tuning files (real TPU v3
// measurements of real XLA programs), times each with the simulator and the analytical
// model, and scores their rankings against what the TPU measured (Score). `tpucost
// validate` and `tpucost calibrate` are its front ends.
//
// The metrics come from metric, a leaf package of pure functions (it imports nothing
// of tpucost), so that a simulator, a model and the TpuGraphs baselines are scored by one
// definition.
package validate

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/dataset/tpugraphs"
	"github.com/tpucost/tpucost/tpusim"
)

// Unmapped names something of the tuning data that the replay could not express in
// tpucost's terms (a run, a configured node, a whole kernel) and why.
type Unmapped struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// TileRun is one measured tile configuration of a kernel, mapped to a tpucost tile and
// timed.
type TileRun struct {
	Index        int       `json:"index"`  // the run's position in the file's module
	Config       string    `json:"config"` // the TPU's bounds, as dataset/tpugraphs writes them
	Tile         cost.Tile `json:"tile"`   // tpucost's tile for it (Mapped.Tile)
	Grid         []int     `json:"grid"`   // the sizes its grid covers (Mapped.Grid)
	Approx       string    `json:"approx,omitempty"`
	MeasuredNs   float64   `json:"measured_ns"`
	SimNs        float64   `json:"sim_ns"`
	AnalyticalNs float64   `json:"analytical_ns"`
	Default      bool      `json:"default,omitempty"`
	// planned is the run's plan on the replay's chip (Resimulate reuses it).
	planned cost.Planned
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
		mp, err := MapTile(fc, info, r.Tile, c.Target)
		if err != nil {
			k.Unmapped = append(k.Unmapped, Unmapped{Name: name, Reason: err.Error()})
			continue
		}
		p, err := mp.Plan(info, c.Target)
		if err != nil {
			k.Unmapped = append(k.Unmapped, Unmapped{Name: name, Reason: err.Error()})
			continue
		}
		sim, an, err := tpusim.TimeChoice(p, c)
		if err != nil {
			k.Unmapped = append(k.Unmapped, Unmapped{Name: name, Reason: err.Error()})
			continue
		}
		k.Runs = append(k.Runs, TileRun{Index: i, Config: cfg, Tile: mp.Tile, Grid: mp.Grid, Approx: mp.Approx,
			MeasuredNs: float64(r.Profile.ComputeTimeNs), SimNs: sim, AnalyticalNs: an, Default: r.IsDefault, planned: p})
	}
	return k, nil
}

// ErrUnmapped marks a kernel or module tpucost cannot represent.
var ErrUnmapped = errors.New("not mapped")

// physical returns the dims of s in its physical order, major to minor, with the logical
// dimension number of each.
func physical(s hlo.Shape) (dims, logical []int) {
	mtm := s.LayoutOrDefault().MinorToMajor
	logical = make([]int, len(mtm))
	for i, d := range mtm {
		logical[len(mtm)-1-i] = d
	}
	return s.PhysicalDims(), logical
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

// Mapped is a TPU tile config in tpucost's terms.
type Mapped struct {
	// Tile has one extent per IterDim of the kernel: the volume of the TPU's box over
	// the dimensions that IterDim flattens, rounded up to its alignment.
	Tile cost.Tile
	// Grid has, per IterDim, the size the TPU's grid covers: its number of steps along
	// the IterDim, the product over the flattened dimensions of ⌈size / extent⌉, times
	// Tile. The TPU runs one grid step per box of an N-dimensional grid, each on a full
	// box; tpucost's planner flattens the dimensions, so a kernel timed over Grid sizes
	// runs the TPU's number of steps on boxes of the TPU's volume, strided or not.
	Grid []int
	// Approx names how the mapping is approximate ("" when exact): "strided" when the
	// box is not contiguous in memory, "rounded" when an extent was rounded up to
	// tpucost's alignment.
	Approx string
	// Boxes are the TPU's boxes over the arrays the bounds cover (the bounded tensor,
	// a GEMM's weight): a kernel operand of one of their shapes is DMA'd, each step, as
	// that box, in its own layout (cost.BoxRuns): On sets its cost.Operand.Runs.
	Boxes []Box
}

// Box is a TPU box over an array: its extent per logical dimension of Shape.
type Box struct {
	Shape hlo.Shape
	Ext   []int
	// Broadcasts are the kernel's parameters broadcast into Shape (a loop or reduce
	// kernel's iteration tensor): each step DMAs the box's projection onto them, and
	// refetches it only when it changes (BroadcastReads).
	Broadcasts []Broadcast
}

// Broadcast is a fused computation's parameter broadcast into a box's array: Dims[i] is
// the array's dimension of the parameter's dimension i (the broadcast's dimensions).
type Broadcast struct {
	Param int
	Dims  []int
}

// broadcastsInto lists the parameters of fc that a broadcast maps into an array of s's
// dimensions (directly, as XLA fuses a bias or a mask into its consumer).
func broadcastsInto(fc *hlo.Computation, s hlo.Shape) []Broadcast {
	var out []Broadcast
	seen := map[int]bool{}
	for _, in := range fc.Instructions {
		if in.Opcode != hlo.OpBroadcast || len(in.Operands) != 1 || !slices.Equal(in.Shape.Dims, s.Dims) {
			continue
		}
		p := in.Operands[0]
		if p.Opcode != hlo.OpParameter || seen[p.ParamNum] || len(in.Dimensions) != p.Shape.Rank() || p.Shape.Rank() == 0 {
			continue
		}
		seen[p.ParamNum] = true
		out = append(out, Broadcast{Param: p.ParamNum, Dims: slices.Clone(in.Dimensions)})
	}
	return out
}

// BroadcastReads is how a grid of boxes b reads a parameter broadcast into b's array
// (Broadcast bc, the parameter's shape s with its layout) on target t: reads, the times
// it moves the parameter's padded bytes in all (cost.Operand.Reads), and runs, its
// contiguous HBM runs per step on average (cost.Operand.Runs). The TPU walks the boxes
// of its grid in the array's physical order, major to minor, and a step DMAs the box's
// projection onto the parameter only when that window changes: the loops inside the
// innermost one along which the window moves (a dimension the parameter has, cut into
// more than one box) reuse it; every loop outside it along a dimension the parameter
// lacks re-reads the whole parameter. A bias or mask over the minor dimensions of a box
// cut in a major broadcast dimension above them is read once per major box.
func (b Box) BroadcastReads(bc Broadcast, s hlo.Shape, t cost.Target) (reads, runs float64) {
	dims, logical := physical(b.Shape)
	in := map[int]bool{}
	for _, d := range bc.Dims {
		in[d] = true
	}
	g := make([]float64, len(dims))
	steps := 1.0
	inner := -1 // the innermost physical dimension the window moves along
	for i, d := range dims {
		g[i] = float64(ceilDiv(d, max(b.Ext[logical[i]], 1)))
		steps *= g[i]
		if in[logical[i]] && g[i] > 1 {
			inner = i
		}
	}
	reads, fetches := 1.0, 1.0
	for i := 0; i <= inner; i++ {
		fetches *= g[i]
		if !in[logical[i]] {
			reads *= g[i]
		}
	}
	proj := make([]int, len(bc.Dims))
	for i, d := range bc.Dims {
		proj[i] = b.Ext[d]
	}
	return reads, fetches * cost.BoxRuns(s, proj, t) / steps
}

// MapTile maps a TPU tile-size config of the kernel fc (analyzed as info) to tpucost's
// terms. Per kind of kernel, the bounds cover (boundExtents) and flatten into tpucost's
// IterDims as follows:
//
//   - loop kernels: output_bounds cover the output (of a multi-output fusion, the element
//     of the bounds' rank); rows flatten every dimension but the physical minor, lanes
//     is the minor;
//   - reductions: output_bounds cover the reduction's iteration space, the reduced
//     operand; out flattens the kept dimensions, reduce the reduced ones (a full
//     reduction: rows and lanes of the operand, as a loop);
//   - convolutions: output_bounds cover the output (n: the dimension on the MXU's
//     columns, cost.KernelInfo.ColsDim, usually the features; m: the rest),
//     kernel_bounds the weight (k: its input feature and window dimensions; n: its
//     output feature dimension when that is the columns' dimension);
//   - dots: output_bounds cover the output (m: the LHS's free dimensions), kernel_bounds
//     the RHS (k: its contracting dimensions; n: its free dimensions, else the
//     output's); a dot computed transposed (DotSwapped) exchanges m and n.
//
// The weight's bounds decide n where the two disagree (fusion.205, a [32,4096]×[4096,1000]
// product: output n of 128 with a weight tile of all 1000 columns is its fastest run, and
// output n of 1000 with a weight tile of 128 columns among its slowest).
//
// input_bounds and iteration_bounds must be empty (they are in every file TpuGraphs
// released); a kernel that iterates otherwise (sort, custom-call) is unmapped. A config
// without any bounds leaves the tile to the compiler: tpucost's own choice for target tgt
// (the analytical model's best, as the tiling pass picks it), marked "compiler-tile".
func MapTile(fc *hlo.Computation, info *cost.KernelInfo, tc *tpugraphs.TileSizeConfig, tgt cost.Target) (Mapped, error) {
	var m Mapped
	if len(tc.InputBounds) > 0 || len(tc.IterationBounds) > 0 {
		return m, errors.New("input or iteration bounds are set; only output and kernel bounds are mapped")
	}
	if len(tc.OutputBounds) == 0 && len(tc.KernelBounds) == 0 {
		// No bounds: the compiler chose the tile itself (the reshapes of the released
		// files), as tpucost's tiling pass does, by the analytical model.
		t, err := info.BestAnalyticalTile(tgt, cost.DefaultFlags())
		if err != nil {
			return m, fmt.Errorf("no bounds, and no tile fits: %w", err)
		}
		m.Tile, m.Grid, m.Approx = t, make([]int, len(info.Dims)), "compiler-tile"
		for i, d := range info.Dims {
			m.Grid[i] = d.Size
		}
		return m, nil
	}
	hero := heroOf(fc, info)
	var gs []grp
	strided := false
	switch info.Kind {
	case cost.KindLoop:
		s, err := boundTensor(fc.Root.Shape, len(tc.OutputBounds))
		if err != nil {
			return m, err
		}
		if len(tc.KernelBounds) > 0 {
			return m, errors.New("kernel bounds set on a loop kernel")
		}
		ext, st, err := boundExtents(s, tc.OutputBounds)
		if err != nil {
			return m, fmt.Errorf("output bounds: %w", err)
		}
		strided = st
		gs = rowsLanes(s, ext)
		m.Boxes = []Box{{s, ext, broadcastsInto(fc, s)}}
	case cost.KindReduce:
		if hero == nil {
			return m, errors.New("reduction kernel without a reduce")
		}
		s := hero.Operands[0].Shape
		ext, st, err := boundExtents(s, tc.OutputBounds)
		if err != nil {
			return m, fmt.Errorf("output bounds over the reduced operand %s: %w", s, err)
		}
		strided = st
		m.Boxes = []Box{{s, ext, broadcastsInto(fc, s)}}
		if info.FullReduce {
			gs = rowsLanes(s, ext)
			break
		}
		reduced := map[int]bool{}
		for _, d := range hero.Dimensions {
			reduced[d] = true
		}
		out := group(s.Dims, ext, func(d int) bool { return !reduced[d] })
		red := group(s.Dims, ext, func(d int) bool { return reduced[d] })
		if info.RowReduce {
			gs = []grp{out, red}
		} else {
			gs = []grp{red, out}
		}
	case cost.KindGEMM:
		if hero == nil {
			return m, errors.New("GEMM kernel without a dot or convolution")
		}
		os, ws := hero.Shape, hero.Operands[1].Shape
		ext, st, err := boundExtents(os, tc.OutputBounds)
		if err != nil {
			return m, fmt.Errorf("output bounds over %s: %w", os, err)
		}
		kext, kst, err := boundExtents(ws, tc.KernelBounds)
		if err != nil {
			return m, fmt.Errorf("kernel bounds over %s: %w", ws, err)
		}
		strided = st || kst
		m.Boxes = []Box{{Shape: os, Ext: ext}, {Shape: ws, Ext: kext}}
		switch hero.Opcode {
		case hlo.OpConvolution:
			cd := hero.Conv
			kin := map[int]bool{cd.KernelInput: true}
			for _, d := range cd.KernelSpatial {
				kin[d] = true
			}
			cols := info.ColsDim // the output dimension on the MXU's columns: N
			gs = []grp{
				group(os.Dims, ext, func(d int) bool { return d != cols }),
				group(os.Dims, ext, func(d int) bool { return d == cols }),
				group(ws.Dims, kext, func(d int) bool { return kin[d] }),
			}
			if len(tc.KernelBounds) > 0 && cols == cd.OutputFeature {
				gs[1] = group(ws.Dims, kext, func(d int) bool { return d == cd.KernelOutput })
			}
		default:
			dd := hero.Dot
			if dd == nil {
				return m, errors.New("dot without dimension numbers")
			}
			nb := len(dd.LhsBatch)
			nlFree := hero.Operands[0].Shape.Rank() - nb - len(dd.LhsContracting)
			contract, batch := map[int]bool{}, map[int]bool{}
			for _, d := range dd.RhsContracting {
				contract[d] = true
			}
			for _, d := range dd.RhsBatch {
				batch[d] = true
			}
			gs = []grp{
				group(os.Dims, ext, func(d int) bool { return d >= nb && d < nb+nlFree }),
				group(os.Dims, ext, func(d int) bool { return d >= nb+nlFree }),
				group(ws.Dims, kext, func(d int) bool { return contract[d] }),
			}
			if len(tc.KernelBounds) > 0 {
				gs[1] = group(ws.Dims, kext, func(d int) bool { return !contract[d] && !batch[d] })
			}
			if info.DotSwapped { // computed transposed: the LHS free side is N
				gs[0], gs[1] = gs[1], gs[0]
			}
		}
	default:
		return m, fmt.Errorf("an %s kernel (hero %s) runs as one untiled step in tpucost: its bounds cannot be mapped", info.Kind, info.Hero)
	}
	if len(gs) != len(info.Dims) {
		return m, fmt.Errorf("mapped %d extents, the kernel tiles %d dimensions", len(gs), len(info.Dims))
	}
	if strided {
		m.Approx = "strided"
	}
	m.Tile = make(cost.Tile, len(gs))
	m.Grid = make([]int, len(gs))
	for i, d := range info.Dims {
		g := gs[i]
		full := roundUp(max(d.Size, 1), d.Align)
		v := roundUp(max(g.vol, 1), d.Align)
		if v != g.vol && g.vol < d.Size {
			m.Approx = join(m.Approx, "rounded")
		}
		m.Tile[i] = min(v, full)
		// The TPU runs padded/vol steps along the dimension (Π⌈d/b⌉): the grid is that
		// many tiles, so that the step count survives rounding to tpucost's alignment.
		m.Grid[i] = g.padded / g.vol * m.Tile[i]
		if g.vol >= d.Size {
			m.Grid[i] = d.Size
		}
	}
	return m, nil
}

// grp is one IterDim's share of a TPU box: its volume (the product of the box's extents
// over the dimensions the IterDim flattens) and the size its grid covers (the product of
// ⌈size / extent⌉ · extent).
type grp struct{ vol, padded int }

// group flattens the dimensions d of a tensor (sizes dims, box extents ext) for which
// pick(d) holds.
func group(dims, ext []int, pick func(d int) bool) grp {
	g := grp{1, 1}
	for d, e := range ext {
		if pick(d) {
			g.vol *= e
			g.padded *= ceilDiv(dims[d], e) * e
		}
	}
	return g
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// On returns info as the TPU's grid of m's boxes sees it on target t: each IterDim's size
// is the size m's grid covers, and each operand of the shape of one of m's Boxes is
// DMA'd as that box (cost.Operand.Runs, from cost.BoxRuns in the operand's own layout;
// the first box of its shape). The analysis is copied, never edited; info itself when
// nothing differs.
func (m Mapped) On(info *cost.KernelInfo, t cost.Target) *cost.KernelInfo {
	same := len(m.Boxes) == 0
	for i, d := range info.Dims {
		same = same && m.Grid[i] == d.Size
	}
	if same {
		return info
	}
	runs := func(o cost.Operand) float64 {
		for _, b := range m.Boxes {
			if o.Shape.IsArray() && slices.Equal(o.Shape.Dims, b.Shape.Dims) {
				return cost.BoxRuns(o.Shape, b.Ext, t)
			}
		}
		return 0
	}
	c := *info
	c.Dims = slices.Clone(info.Dims)
	for i := range c.Dims {
		c.Dims[i].Size = m.Grid[i]
	}
	c.Inputs = slices.Clone(info.Inputs)
	for i := range c.Inputs {
		in := &c.Inputs[i]
		in.Runs = runs(*in)
		if in.Runs > 0 || !in.Shape.IsArray() {
			continue
		}
		for _, b := range m.Boxes {
			for _, bc := range b.Broadcasts {
				if bc.Param == in.Param && (in.Role == cost.RoleStream || in.Role == cost.RoleResident) {
					// The TPU windows it with the box, resident or not.
					in.Role = cost.RoleStream
					in.Reads, in.Runs = b.BroadcastReads(bc, in.Shape, t)
				}
			}
		}
	}
	c.Output.Runs = runs(c.Output)
	return &c
}

// Plan plans m's tile for the kernel analyzed as info on target t, as the TPU runs it:
// over m's grid (On), with the default flags (XLA's TPU backend double-buffers every
// kernel).
func (m Mapped) Plan(info *cost.KernelInfo, t cost.Target) (cost.Planned, error) {
	return cost.PlanConfig(m.On(info, t), "", cost.KernelConfig{Tile: m.Tile, Flags: cost.DefaultFlags()}, t)
}

func join(a, b string) string {
	if a == "" || strings.Contains(a, b) {
		return a + b
	}
	return a + "," + b
}

func roundUp(x, m int) int { return (x + m - 1) / m * m }

// rowsLanes flattens a box ext of s as a loop view does: lanes the physical minor, rows
// the rest; a rank-1 array is viewed as rows of 128.
func rowsLanes(s hlo.Shape, ext []int) []grp {
	_, logical := physical(s)
	n := len(logical)
	switch n {
	case 0:
		return []grp{{1, 1}, {1, 1}}
	case 1:
		if s.Dims[0] > 128 {
			g := group(s.Dims, ext, func(int) bool { return true })
			return []grp{{ceilDiv(g.vol, 128), ceilDiv(g.padded, 128)}, {128, 128}}
		}
		return []grp{{1, 1}, {ext[0], s.Dims[0]}}
	}
	minor := logical[n-1]
	return []grp{
		group(s.Dims, ext, func(d int) bool { return d != minor }),
		group(s.Dims, ext, func(d int) bool { return d == minor }),
	}
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
