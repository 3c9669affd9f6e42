package cost

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
)

// Tile is a tile shape: one size per IterDim of a kernel (empty for untiled kernels).
type Tile []int

// String renders a tile as "8x128x512" ("-" for the empty tile).
func (t Tile) String() string {
	if len(t) == 0 {
		return "-"
	}
	return string(t.appendTo(make([]byte, 0, 6*len(t))))
}

func (t Tile) appendTo(b []byte) []byte {
	if len(t) == 0 {
		return append(b, '-')
	}
	for i, x := range t {
		if i > 0 {
			b = append(b, 'x')
		}
		b = strconv.AppendInt(b, int64(x), 10)
	}
	return b
}

// Equal reports whether two tiles are the same.
func (t Tile) Equal(o Tile) bool { return slices.Equal(t, o) }

// Flags are a kernel's code-generation flags.
type Flags struct {
	// DoubleBuffer overlaps the DMA of the next tile with compute on the current one, at
	// the price of a second buffer for every streamed window.
	DoubleBuffer bool `json:"double_buffer"`
	// Unroll unrolls the tile loop: less loop and DMA-issue overhead per step, more
	// instruction memory and vector registers.
	Unroll int `json:"unroll"`
	// PipelineDepth is the number of buffers per streamed window when double buffering
	// (2 or 3): a third buffer hides DMA latency that one step of compute cannot.
	PipelineDepth int `json:"pipeline_depth"`
}

// KernelConfig is one configuration of a kernel: its tile and its flags. It is what the
// tuner searches per kernel, what a dataset row lists per sample and what the simulator
// times (with the kernel's analysis).
type KernelConfig struct {
	Tile  Tile
	Flags Flags
	// Staging is what the compiler's staging pass keeps resident in VMEM (empty unless
	// it stages one of the kernel's arrays).
	Staging Staging
}

// String is the config's canonical name, as datasets store it: "tile=8x128x512;flags=db2/u1",
// followed by ";staged=in0+out" when the kernel has staged arrays.
func (c KernelConfig) String() string { return string(c.appendTo(make([]byte, 0, 48))) }

func (c KernelConfig) appendTo(b []byte) []byte {
	b = c.Tile.appendTo(append(b, "tile="...))
	b = c.Flags.appendTo(append(b, ";flags="...))
	if !c.Staging.Empty() {
		b = c.Staging.appendTo(append(b, ";staged="...))
	}
	return b
}

// ID is the one identity of (kernel, config): the kernel's structural key and the
// config's canonical name, "<key>|tile=...;flags=...". Caches of kernel measurements and
// predictions key on it.
func (c KernelConfig) ID(kernelKey string) string {
	b := append(make([]byte, 0, len(kernelKey)+49), kernelKey...)
	return string(c.appendTo(append(b, '|')))
}

// DefaultFlags are the flags an XLA-like compiler uses: double buffering with two
// buffers, no unrolling.
func DefaultFlags() Flags { return Flags{DoubleBuffer: true, Unroll: 1, PipelineDepth: 2} }

// Buffers is the number of VMEM buffers per streamed window.
func (f Flags) Buffers() int {
	if !f.DoubleBuffer {
		return 1
	}
	return max(f.PipelineDepth, 2)
}

// String renders flags compactly, e.g. "db2/u1" or "nodb/u4".
func (f Flags) String() string { return string(f.appendTo(make([]byte, 0, 8))) }

func (f Flags) appendTo(b []byte) []byte {
	if !f.DoubleBuffer {
		b = append(b, "nodb"...)
	} else {
		b = strconv.AppendInt(append(b, "db"...), int64(f.PipelineDepth), 10)
	}
	return strconv.AppendInt(append(b, "/u"...), int64(f.Unroll), 10)
}

// Validate rejects flag values outside the supported set.
func (f Flags) Validate() error {
	if f.Unroll != 1 && f.Unroll != 2 && f.Unroll != 4 {
		return fmt.Errorf("unroll must be 1, 2 or 4, got %d", f.Unroll)
	}
	if f.DoubleBuffer && f.PipelineDepth != 2 && f.PipelineDepth != 3 {
		return fmt.Errorf("pipeline_depth must be 2 or 3 with double buffering, got %d", f.PipelineDepth)
	}
	if !f.DoubleBuffer && f.PipelineDepth != 1 {
		return fmt.Errorf("pipeline_depth must be 1 without double buffering, got %d", f.PipelineDepth)
	}
	return nil
}

// AllFlags lists every flag combination in a fixed order, the default first.
func AllFlags() []Flags { return slices.Clone(allFlags[:]) }

// allFlags is AllFlags' list.
var allFlags = func() (out [9]Flags) {
	out[0] = DefaultFlags()
	n := 1
	for _, db := range []bool{true, false} {
		depths := []int{2, 3}
		if !db {
			depths = []int{1}
		}
		for _, d := range depths {
			for _, u := range []int{1, 2, 4} {
				f := Flags{DoubleBuffer: db, Unroll: u, PipelineDepth: d}
				if f != out[0] {
					out[n] = f
					n++
				}
			}
		}
	}
	if n != len(out) {
		panic("cost: allFlags has the wrong length")
	}
	return out
}()

// ErrTileInvalid is wrapped by errors about tiles that do not fit the kernel or VMEM.
var ErrTileInvalid = errors.New("invalid tile")

// dimCandidates are the tile sizes of one dimension: powers of two times the alignment
// (d.Min where it is coarser) below the padded size, and the padded size itself, capped
// at d.Max.
func dimCandidates(d IterDim) []int {
	a := max(d.Align, d.Min)
	full := roundUp(max(d.Size, 1), a)
	var c []int
	for s := a; s < full && s <= d.Max; s *= 2 {
		c = append(c, s)
	}
	if full <= d.Max || len(c) == 0 {
		c = append(c, min(full, max(d.Max, a)))
	}
	return slices.Compact(c)
}

// Plan is what a tile implies for a kernel: how many grid steps, what moves per step,
// how much VMEM it needs and how much work each step does. Computing it is shared by the
// footprint check, the analytical model and the simulator.
type Plan struct {
	Blocks     int64 // output blocks
	InnerSteps int64 // steps per output block (the K loop of a GEMM, the reduce loop)
	Steps      int64 // Blocks * InnerSteps

	// DMA, average per step, padded bytes and separate bursts.
	InBytesPerStep  float64
	InBurstsPerStep float64
	// Per output block: the epilogue inputs read and the output written.
	EpiBytesPerBlock  float64
	OutBytesPerBlock  float64
	OutBurstsPerBlock float64
	ResidentBytes     float64 // loaded once before the first step
	StreamBufferBytes float64 // one buffer of every streamed window (in and out)
	AccumulatorBytes  float64 // f32 accumulator kept across inner steps

	// Compute per step, on full (padded) tiles.
	MXUPasses      float64 // [8,128]x[128,128] passes
	WeightBlocks   float64 // [128,128] weight blocks loaded into the MXU
	VectorOps      float64 // vector-register operations (8x128 elements each)
	Transcendental float64 // vector-register transcendental evaluations
	XLUOps         float64 // vector registers through the transpose/reduce unit
	// Per output block (epilogue), on full tiles.
	EpiVectorOps, EpiTranscendental, EpiXLUOps float64

	LogicalBytes float64 // total HBM traffic, unpadded, with operand re-fetch
	PaddedBytes  float64 // total HBM traffic as moved, padded

	// StagedBytes is the VMEM held by the kernel's staged arrays (see Staging): their
	// padded sizes. AvoidedBytes is the padded HBM traffic staging removed (set by
	// Planned.Staged).
	StagedBytes  float64
	AvoidedBytes float64

	// BatchPerStep is the average number of a batched GEMM's independent products one
	// grid step computes (1 unless the tile covers whole products: see planGEMM).
	BatchPerStep float64

	// Chunks is the number of pieces each step's input windows are streamed through
	// VMEM in when the kernel's smallest tile does not fit with one buffer per window
	// (see chunk); 0 or 1: whole windows. Steps and InnerSteps count the pieces.
	Chunks int64

	// blockBuf is the part of StreamBufferBytes held per output block (the output
	// window and a GEMM's epilogue windows): chunk never splits it.
	blockBuf float64
}

// Footprint is the VMEM the plan needs with the given flags.
func (p Plan) Footprint(f Flags) float64 {
	return p.StreamBufferBytes*float64(f.Buffers()) + p.AccumulatorBytes + p.ResidentBytes + p.StagedBytes
}

// windowBytes is the padded size of a rows x lanes window of an operand.
func windowBytes(rows, lanes float64, eb int, t Target) float64 {
	r := math.Ceil(rows/float64(t.SublaneTile(eb))) * float64(t.SublaneTile(eb))
	l := math.Ceil(lanes/float64(t.Lanes)) * float64(t.Lanes)
	return r * l * float64(eb)
}

// bursts is the number of separate DMA bursts for a rows x lanes window of an operand
// whose physical minor dimension has minor elements: whole rows merge into one burst;
// partial rows are one burst per sublane group.
func bursts(rows, lanes float64, minor int, eb int, t Target) float64 {
	if lanes >= float64(minor) {
		return 1
	}
	return math.Ceil(rows / float64(t.SublaneTile(eb)))
}

func vregs(rows, lanes float64, t Target) float64 {
	return math.Ceil(rows/float64(t.Sublanes)) * math.Ceil(lanes/float64(t.Lanes))
}

// PlanTile computes the plan of tile for kernel k on target t: a pure function of
// (kernel, tile, target). Code that makes a kernel choice plans it once, as a Planned
// (PlanConfig, Options), and passes that value on; PlanTile is the bare computation.
func (k *KernelInfo) PlanTile(tile Tile, t Target) (Plan, error) {
	if err := k.validTile(tile); err != nil {
		return Plan{}, err
	}
	return k.plan(tile, t), nil
}

// validTile checks a tile's arity and alignment against k.
func (k *KernelInfo) validTile(tile Tile) error {
	if len(tile) != len(k.Dims) {
		return fmt.Errorf("%w: tile %s has %d dims, kernel has %d", ErrTileInvalid, tile, len(tile), len(k.Dims))
	}
	for i, d := range k.Dims {
		if tile[i] <= 0 || tile[i]%d.Align != 0 {
			return fmt.Errorf("%w: tile %s: %s size %d is not a positive multiple of %d", ErrTileInvalid, tile, d.Name, tile[i], d.Align)
		}
	}
	return nil
}

// plan computes the plan of a valid tile: its windows whole (planWhole), or streamed in
// pieces when the tile is the kernel's smallest and its windows do not fit VMEM even with
// one buffer each (chunk).
func (k *KernelInfo) plan(tile Tile, t Target) Plan {
	p := k.planWhole(tile, t)
	if len(tile) > 0 && p.Footprint(singleBuffer) > float64(t.VMEMBytes) && k.smallest(tile) {
		acc := 0.0
		if k.Kind == KindGEMM && p.AccumulatorBytes == 0 {
			// The pieces of a step may split K: their partial products accumulate.
			acc = float64(tile[0]) * float64(tile[1]) * 4
		}
		p.chunk(k.streamedWindows(), acc, t)
	}
	return p
}

// planWhole computes the plan of a valid tile with every window whole.
func (k *KernelInfo) planWhole(tile Tile, t Target) Plan {
	var p Plan
	switch k.Kind {
	case KindGEMM:
		p = k.planGEMM(tile, t)
	case KindReduce:
		p = k.planReduce(tile, t)
	case KindLoop:
		p = k.planLoop(tile, t)
	default:
		p = k.planOpaque(t)
	}
	k.unstageOutput(&p)
	return p
}

// singleBuffer is the flags with one buffer per streamed window: the smallest footprint
// of a plan.
var singleBuffer = Flags{Unroll: 1, PipelineDepth: 1}

// MaxChunks bounds the pieces a step's windows are streamed in (chunk): far above what
// any window of a real program needs (a piece of a 16 MiB VMEM's worth of windows is then
// a few bytes).
const MaxChunks = 1 << 20

// smallestTile is the kernel's smallest searched tile: every dimension at its smallest
// candidate size (dimCandidates).
func (k *KernelInfo) smallestTile() Tile {
	tile := make(Tile, len(k.Dims))
	for i, d := range k.Dims {
		tile[i] = dimCandidates(d)[0]
	}
	return tile
}

// smallest reports whether no dimension of tile can be made smaller among the searched
// sizes: the tile is the smallest tile, or finer than it along some dimension.
func (k *KernelInfo) smallest(tile Tile) bool {
	for i, d := range k.Dims {
		if tile[i] > dimCandidates(d)[0] {
			return false
		}
	}
	return true
}

// streamedWindows counts the inputs the kernel streams a window of per step (the DMA
// bursts a piece of a chunked step issues at least).
func (k *KernelInfo) streamedWindows() int {
	n := 0
	for _, in := range k.Inputs {
		if in.Staged {
			continue
		}
		switch in.Role {
		case RoleStream, RoleLHS, RoleRHS, RoleGather:
			n++
		}
	}
	return n
}

// chunk makes a plan whose windows do not fit VMEM fit, as a TPU kernel streams a window
// larger than its VMEM: each grid step's input windows are split into C pieces along
// their memory tiles, and every piece is DMA'd into its own (smaller) buffer and consumed
// before the next, as a step of its own. That is C times the steps, each with a C-th of
// the step's input traffic and work but at least one DMA burst per streamed window
// (windows), so the per-step overhead, DMA issue and (single-buffered) latency are paid
// C times. The output block (and a GEMM's epilogue windows) stay whole; acc is the
// accumulator the pieces need when the plan has none (a GEMM's output block in f32). C is
// the smallest power of two with which the windows fit double-buffered beside the
// resident, staged and accumulator bytes (the compiler's default flags), at most
// MaxChunks. A plan whose fixed part alone exceeds VMEM is left whole (it stays invalid).
func (p *Plan) chunk(windows int, acc float64, t Target) {
	vmem := float64(t.VMEMBytes)
	fixed := p.ResidentBytes + p.AccumulatorBytes + acc + p.StagedBytes + p.blockBuf*2
	in := p.StreamBufferBytes - p.blockBuf
	if fixed >= vmem || in <= 0 {
		return
	}
	c := int64(1)
	for c < MaxChunks && fixed+2*in/float64(c) > vmem {
		c *= 2
	}
	if c == 1 {
		return
	}
	fc := float64(c)
	p.Chunks = c
	p.AccumulatorBytes += acc
	p.InnerSteps *= c
	p.Steps *= c
	p.StreamBufferBytes = p.blockBuf + in/fc
	p.InBytesPerStep /= fc
	p.InBurstsPerStep = math.Max(p.InBurstsPerStep/fc, float64(windows))
	p.MXUPasses /= fc
	p.WeightBlocks /= fc
	p.VectorOps /= fc
	p.Transcendental /= fc
	p.XLUOps /= fc
}

// eff returns the number of blocks along a dimension and the average covered extent of a
// block (the padded size spread over the blocks).
func eff(d IterDim, t int) (blocks int, avg float64) {
	blocks = ceilDiv(max(d.Size, 1), t)
	return blocks, float64(roundUp(max(d.Size, 1), d.Align)) / float64(blocks)
}

// realAvg is the average real (unpadded) extent of a block along d split into blocks.
func realAvg(d IterDim, blocks int) float64 {
	return float64(max(d.Size, 1)) / float64(blocks)
}

// BatchStepBytes is the HBM traffic per grid step up to which a batched GEMM whose tile
// covers whole products packs several products into one step, as a TPU kernel blocks
// its batch dimension: a step then moves enough to amortize the DMA latency and the step
// overhead (1 MiB takes about 1 us at HBM bandwidth, twice the DMA latency).
const BatchStepBytes = 1 << 20

// packBatch groups the batch's products g to a step: as many as BatchStepBytes of
// traffic allows, with the stream buffers of a step within a quarter of VMEM (room for
// three buffers), at most the batch. Per-step work and traffic scale by the average
// products per step, the buffers by g.
func (p *Plan) packBatch(batch int, t Target) {
	traffic := math.Max(p.InBytesPerStep+p.EpiBytesPerBlock+p.OutBytesPerBlock, 1)
	g := min(int64(batch), int64(BatchStepBytes/traffic), int64(float64(t.VMEMBytes)/4/math.Max(p.StreamBufferBytes, 1)))
	g = max(g, 1)
	if g == 1 {
		return
	}
	p.Blocks = (int64(batch) + g - 1) / g
	p.Steps = p.Blocks * p.InnerSteps
	avg := float64(batch) / float64(p.Blocks)
	p.BatchPerStep = avg
	// Whole products are contiguous in a batch-major array: a step's products of one
	// operand are one burst as a single product's window is.
	p.InBytesPerStep *= avg
	p.EpiBytesPerBlock *= avg
	p.OutBytesPerBlock *= avg
	p.StreamBufferBytes *= float64(g)
	p.blockBuf *= float64(g)
	p.AccumulatorBytes *= float64(g)
	p.MXUPasses *= avg
	p.WeightBlocks *= avg
	p.VectorOps *= avg
	p.Transcendental *= avg
	p.XLUOps *= avg
	p.EpiVectorOps *= avg
	p.EpiTranscendental *= avg
	p.EpiXLUOps *= avg
}

func (k *KernelInfo) planGEMM(tile Tile, t Target) Plan {
	tm, tn, tk := tile[0], tile[1], tile[2]
	mb, _ := eff(k.Dims[0], tm)
	nb, _ := eff(k.Dims[1], tn)
	kb, _ := eff(k.Dims[2], tk)
	// The operand windows cover the real extent of each block; windowBytes pads it to
	// each operand's own (8,128) tiling (K is the lane side of the LHS but the sublane
	// side of the RHS: a K of 6 pads to 128 lanes in one and 8 rows in the other).
	mAvg := realAvg(k.Dims[0], mb)
	nAvg := realAvg(k.Dims[1], nb)
	kAvg := realAvg(k.Dims[2], kb)
	if k.IsConv {
		// The implicit GEMM's input share is counted against the aligned extents.
		_, mAvg = eff(k.Dims[0], tm)
		_, nAvg = eff(k.Dims[1], tn)
		_, kAvg = eff(k.Dims[2], tk)
	}
	var p Plan
	p.BatchPerStep = 1
	p.Blocks = int64(k.Batch) * int64(mb) * int64(nb)
	p.InnerSteps = int64(kb)
	p.Steps = p.Blocks * p.InnerSteps
	outEB := k.Output.ElemBytes
	for _, in := range k.Inputs {
		if in.Staged {
			p.StagedBytes += in.Padded
			continue
		}
		switch in.Role {
		case RoleLHS:
			if k.IsConv {
				// The input tensor's share under this (m, k) block (and n block when
				// grouped: each group reads its own features); every block reads its
				// share once, so the input is re-read once per n block unless grouped.
				// A block never covers more than the whole (aligned) extent: a tile
				// above it (K's searched sizes are multiples of 128 even for a K of 16)
				// still holds the input once.
				share := func(m, n, kk float64) float64 {
					frac := func(x float64, d IterDim) float64 {
						full := float64(roundUp(max(d.Size, 1), d.Align))
						return math.Min(x, full) / full
					}
					s := frac(m, k.Dims[0]) * frac(kk, k.Dims[2])
					if k.Groups > 1 {
						s *= frac(n, k.Dims[1])
					}
					return s
				}
				p.InBytesPerStep += in.Padded * share(mAvg, nAvg, kAvg)
				p.InBurstsPerStep += math.Ceil(mAvg / float64(t.SublaneTile(in.ElemBytes)))
				p.StreamBufferBytes += in.Padded * share(float64(tm), float64(tn), float64(tk))
				if k.Groups > 1 {
					p.LogicalBytes += in.Bytes
				} else {
					p.LogicalBytes += in.Bytes * float64(nb)
				}
				break
			}
			rows, lanes := mAvg, kAvg
			if k.LHSTransposed {
				rows, lanes = lanes, rows
			}
			p.InBytesPerStep += windowBytes(rows, lanes, in.ElemBytes, t) * in.Ratio
			p.InBurstsPerStep += runs(in, bursts(rows, lanes, in.Minor, in.ElemBytes, t))
			p.StreamBufferBytes += windowBytes(float64(tm), float64(tk), in.ElemBytes, t) * in.Ratio
			p.LogicalBytes += in.Bytes * float64(nb)
		case RoleRHS:
			// A K-minor weight (RHSTransposed) is read as N rows of K lanes.
			rows, lanes, brows, blanes := kAvg, nAvg, float64(tk), float64(tn)
			if k.RHSTransposed {
				rows, lanes, brows, blanes = lanes, rows, blanes, brows
			}
			w := windowBytes(rows, lanes, in.ElemBytes, t) * in.Ratio
			p.InBytesPerStep += w
			p.InBurstsPerStep += runs(in, bursts(rows, lanes, in.Minor, in.ElemBytes, t))
			p.StreamBufferBytes += windowBytes(brows, blanes, in.ElemBytes, t) * in.Ratio
			p.LogicalBytes += in.Bytes * float64(mb)
		case RoleEpilogue, RoleStream:
			rows, lanes := mAvg*in.Ratio, nAvg
			if in.Transposed {
				rows, lanes = lanes, rows
			}
			p.EpiBytesPerBlock += windowBytes(rows, lanes, in.ElemBytes, t)
			w := windowBytes(float64(tm)*in.Ratio, float64(tn), in.ElemBytes, t)
			p.StreamBufferBytes += w
			p.blockBuf += w
			p.LogicalBytes += in.Bytes
		case RoleResident:
			p.ResidentBytes += in.Padded
			p.LogicalBytes += in.Bytes
		}
	}
	orows, olanes := mAvg, nAvg
	if k.OutTransposed {
		orows, olanes = olanes, orows
	}
	p.OutBytesPerBlock = windowBytes(orows, olanes, outEB, t)
	p.OutBurstsPerBlock = runs(k.Output, bursts(orows, olanes, k.Output.Minor, outEB, t))
	ow := windowBytes(float64(tm), float64(tn), outEB, t)
	p.StreamBufferBytes += ow
	p.blockBuf += ow
	p.LogicalBytes += k.Output.Bytes
	if kb > 1 {
		p.AccumulatorBytes = float64(tm) * float64(tn) * 4
	}
	// Never more than the padded operands once per needed re-read: the LHS once per n
	// block, the RHS once per m block, the epilogue inputs and the output once.
	if !k.IsConv {
		capStep := func(perStep *float64, padded, rereads float64, steps int64) {
			if c := padded * rereads / float64(steps); *perStep > c {
				*perStep = c
			}
		}
		var lhsStep, rhsStep, lhsPad, rhsPad float64
		for _, in := range k.Inputs {
			rows, lanes := mAvg, kAvg
			if in.Staged {
				continue
			}
			switch in.Role {
			case RoleLHS:
				if k.LHSTransposed {
					rows, lanes = lanes, rows
				}
				lhsStep += windowBytes(rows, lanes, in.ElemBytes, t) * in.Ratio
				lhsPad += in.Padded * in.Ratio
			case RoleRHS:
				if k.RHSTransposed {
					rhsStep += windowBytes(nAvg, kAvg, in.ElemBytes, t) * in.Ratio
				} else {
					rhsStep += windowBytes(kAvg, nAvg, in.ElemBytes, t) * in.Ratio
				}
				rhsPad += in.Padded * in.Ratio
			}
		}
		other := p.InBytesPerStep - lhsStep - rhsStep
		capStep(&lhsStep, lhsPad, float64(nb), p.Steps)
		capStep(&rhsStep, rhsPad, float64(mb), p.Steps)
		p.InBytesPerStep = other + lhsStep + rhsStep
	}
	p.OutBytesPerBlock = math.Min(p.OutBytesPerBlock, k.Output.Padded/float64(p.Blocks))

	mx := float64(t.MXUDim)
	// A grouped convolution multiplies each group separately: a tile of tn outputs holds
	// tn / (N/Groups) groups, each padded to the MXU on its own.
	nPer, groupsInTile := float64(tn), 1.0
	if k.Groups > 1 {
		ng := float64(max(k.N/k.Groups, 1))
		nPer, groupsInTile = math.Min(float64(tn), ng), math.Max(float64(tn)/ng, 1)
	}
	p.WeightBlocks = math.Ceil(float64(tk)/mx) * math.Ceil(nPer/mx) * groupsInTile
	p.MXUPasses = math.Ceil(float64(tm)/float64(t.Sublanes)) * p.WeightBlocks
	opVregs := vregs(float64(tm), float64(tk), t) + vregs(float64(tk), float64(tn), t)
	p.VectorOps = k.ProVecPerElem * opVregs * float64(t.Sublanes*t.Lanes) / float64(t.Sublanes*t.Lanes)
	p.Transcendental = k.ProTransPerElem * opVregs
	if k.LHSTransposed {
		p.XLUOps += vregs(float64(tm), float64(tk), t)
	}
	outVregs := vregs(float64(tm), float64(tn), t)
	p.EpiVectorOps = k.EpiVecPerElem*outVregs + outVregs // + accumulator read-out
	p.EpiTranscendental = k.EpiTransPerElem * outVregs
	if k.OutTransposed {
		p.EpiXLUOps = outVregs
	}
	if k.Batch > 1 && mb == 1 && nb == 1 && kb == 1 {
		p.packBatch(k.Batch, t)
	}
	p.PaddedBytes = float64(p.Steps)*p.InBytesPerStep + float64(p.Blocks)*(p.EpiBytesPerBlock+p.OutBytesPerBlock) + p.ResidentBytes
	return p
}

func (k *KernelInfo) planLoop(tile Tile, t Target) Plan {
	tr, tl := tile[0], tile[1]
	rb, rAvg := eff(k.Dims[0], tr)
	lb, lAvg := eff(k.Dims[1], tl)
	var p Plan
	p.Blocks = int64(rb) * int64(lb)
	p.InnerSteps = 1
	p.Steps = p.Blocks
	for _, in := range k.Inputs {
		p.addStreamed(in, rAvg, lAvg, realAvg(k.Dims[1], lb), float64(tr), float64(tl), k.OutElems, t)
	}
	eb := k.Output.ElemBytes
	p.OutBytesPerBlock = windowBytes(rAvg, lAvg, eb, t)
	p.OutBurstsPerBlock = runs(k.Output, bursts(rAvg, lAvg, k.Output.Minor, eb, t))
	p.blockBuf = windowBytes(float64(tr), float64(tl), eb, t)
	p.StreamBufferBytes += p.blockBuf
	p.LogicalBytes += k.Output.Bytes
	v := vregs(float64(tr), float64(tl), t)
	p.VectorOps = k.VecPerElem * v
	p.Transcendental = k.TransPerElem * v
	p.PaddedBytes = float64(p.Steps)*(p.InBytesPerStep+p.OutBytesPerBlock) + p.ResidentBytes
	return p
}

// addStreamed accounts one input of a loop or reduce kernel whose stream window is
// rAvg x lAvg on average (tr x tl at most), over an iteration space of streamElems
// elements. A streamed input moves at most its padded size once (times the share of it
// the kernel needs), unless it is broadcast along rows: a window narrower than its tiles
// does not re-read them.
//
// lReal is the real (unpadded) lane extent of a window: an input whose minor dimension
// is narrower than that is broadcast along rows and streams lane-width windows.
func (p *Plan) addStreamed(in Operand, rAvg, lAvg, lReal, tr, tl float64, streamElems int64, t Target) {
	if in.Staged {
		p.StagedBytes += in.Padded
		return
	}
	switch in.Role {
	case RoleResident:
		p.ResidentBytes += in.Padded
		p.LogicalBytes += in.Bytes
	case RoleAliased:
	case RoleGather:
		// Rows of the table, one burst each: Ratio times the stream window's elements.
		rows := math.Max(rAvg*in.Ratio, 1)
		p.InBytesPerStep += windowBytes(rows, lAvg, in.ElemBytes, t)
		p.InBurstsPerStep += rows
		p.StreamBufferBytes += windowBytes(math.Max(tr*in.Ratio, 1), tl, in.ElemBytes, t)
		p.LogicalBytes += rows * lAvg * float64(in.ElemBytes) * float64(p.Steps)
	default:
		rows, lanes := rAvg*in.Ratio, lAvg
		brows, blanes := tr*in.Ratio, tl
		rebroadcast := in.Ratio < 1 && lReal > float64(in.Minor)
		if rebroadcast {
			// A smaller input (broadcast along rows) streams a lane-width window.
			rows, lanes = math.Max(rAvg*lAvg*in.Ratio/float64(in.Minor), 1), float64(in.Minor)
			brows, blanes = math.Max(tr*tl*in.Ratio/float64(in.Minor), 1), float64(in.Minor)
		}
		if in.Transposed {
			rows, lanes = lanes, rows
			brows, blanes = blanes, brows
			p.XLUOps += vregs(brows, blanes, t)
		}
		// A step never moves more than the whole input.
		w := math.Min(windowBytes(rows, lanes, in.ElemBytes, t), in.Padded)
		switch {
		case in.Reads > 0 && p.Steps > 0:
			// Re-fetched as its window changes on the grid (Operand.Reads): Reads times
			// its padded bytes, spread over the steps.
			w = in.Padded * in.Reads / float64(p.Steps)
		case !rebroadcast && p.Steps > 0:
			// Streamed in proportion to the iteration: each needed element once.
			need := math.Min(in.Ratio*float64(streamElems)/float64(max(arrayShape(in.Shape).Elements(), 1)), 1)
			w = math.Min(w, in.Padded*need/float64(p.Steps))
		}
		p.InBytesPerStep += w
		p.InBurstsPerStep += runs(in, bursts(rows, lanes, in.Minor, in.ElemBytes, t))
		p.StreamBufferBytes += windowBytes(brows, blanes, in.ElemBytes, t)
		p.LogicalBytes += in.Bytes
	}
}

func (k *KernelInfo) planReduce(tile Tile, t Target) Plan {
	if k.FullReduce {
		return k.planFullReduce(tile, t)
	}
	var p Plan
	d0, d1 := k.Dims[0], k.Dims[1]
	b0, a0 := eff(d0, tile[0])
	b1, a1 := eff(d1, tile[1])
	var outTile int
	if k.RowReduce { // dims: out (rows), reduce (lanes)
		p.Blocks, p.InnerSteps = int64(b0), int64(b1)
		outTile = tile[0]
	} else { // dims: reduce (rows), out (lanes)
		p.Blocks, p.InnerSteps = int64(b1), int64(b0)
		outTile = tile[1]
	}
	p.Steps = p.Blocks * p.InnerSteps
	for _, in := range k.Inputs {
		p.addStreamed(in, a0, a1, realAvg(k.Dims[1], b1), float64(tile[0]), float64(tile[1]), k.InElems, t)
	}
	eb := k.Output.ElemBytes
	outAvg := float64(k.OutElems) / float64(p.Blocks)
	p.OutBytesPerBlock = windowBytes(1, outAvg, eb, t)
	if k.RowReduce {
		p.OutBytesPerBlock = windowBytes(outAvg, 1, 4, t) / 4 * float64(eb) / float64(t.Lanes) * float64(t.Lanes)
	}
	// Never more than the padded output once.
	p.OutBytesPerBlock = math.Min(p.OutBytesPerBlock, k.Output.Padded/float64(p.Blocks))
	p.OutBurstsPerBlock = 1
	p.blockBuf = windowBytes(1, float64(outTile), eb, t)
	p.StreamBufferBytes += p.blockBuf
	p.AccumulatorBytes = float64(roundUp(outTile, t.Lanes)) * 4 * float64(t.Sublanes)
	p.LogicalBytes += k.Output.Bytes
	v := vregs(float64(tile[0]), float64(tile[1]), t)
	p.VectorOps = k.VecPerElem * v
	p.Transcendental = k.TransPerElem * v
	outV := math.Ceil(float64(outTile) / float64(t.Sublanes*t.Lanes))
	if k.RowReduce {
		// Partial sums per step, then a cross-lane tree (log2 128 = 7 rotations) per block.
		p.XLUOps += math.Ceil(float64(tile[0]) / float64(t.Sublanes))
		p.EpiXLUOps = 7 * math.Ceil(float64(tile[0])/float64(t.Sublanes))
		outV = math.Ceil(float64(tile[0]) / float64(t.Sublanes))
	}
	p.EpiVectorOps = k.EpiVecPerElem*outV*float64(t.Sublanes*t.Lanes)/float64(t.Sublanes*t.Lanes) + outV
	p.EpiTranscendental = k.EpiTransPerElem * outV
	p.PaddedBytes = float64(p.Steps)*p.InBytesPerStep + float64(p.Blocks)*p.OutBytesPerBlock + p.ResidentBytes
	return p
}

// planFullReduce plans a reduction of everything to one element over the input's
// physical (rows, lanes) view: one output block whose inner steps stream tiles, adding
// them into a tile of vector accumulators, then one reduction of the accumulators across
// sublanes and lanes (log2 8 + log2 128 = 10 rotations per accumulator row).
func (k *KernelInfo) planFullReduce(tile Tile, t Target) Plan {
	var p Plan
	b0, a0 := eff(k.Dims[0], tile[0])
	b1, a1 := eff(k.Dims[1], tile[1])
	p.Blocks, p.InnerSteps = 1, int64(b0)*int64(b1)
	p.Steps = p.InnerSteps
	for _, in := range k.Inputs {
		p.addStreamed(in, a0, a1, realAvg(k.Dims[1], b1), float64(tile[0]), float64(tile[1]), k.InElems, t)
	}
	eb := k.Output.ElemBytes
	p.OutBytesPerBlock = math.Min(windowBytes(1, 1, eb, t), k.Output.Padded)
	p.OutBurstsPerBlock = 1
	p.blockBuf = windowBytes(1, 1, eb, t)
	p.StreamBufferBytes += p.blockBuf
	accV := math.Ceil(float64(tile[1]) / float64(t.Lanes))
	p.AccumulatorBytes = accV * float64(t.Sublanes*t.Lanes) * 4
	p.LogicalBytes += k.Output.Bytes
	v := vregs(float64(tile[0]), float64(tile[1]), t)
	p.VectorOps = k.VecPerElem * v
	p.Transcendental = k.TransPerElem * v
	p.EpiVectorOps = accV + k.EpiVecPerElem
	p.EpiTranscendental = k.EpiTransPerElem
	p.EpiXLUOps = 10
	p.PaddedBytes = float64(p.Steps)*p.InBytesPerStep + p.OutBytesPerBlock + p.ResidentBytes
	return p
}

func (k *KernelInfo) planOpaque(t Target) Plan {
	var p Plan
	p.Blocks, p.InnerSteps, p.Steps = 1, 1, 1
	for _, in := range k.Inputs {
		if in.Staged {
			p.StagedBytes += in.Padded
			continue
		}
		p.InBytesPerStep += in.Padded
		p.InBurstsPerStep++
		p.LogicalBytes += in.Bytes
	}
	p.OutBytesPerBlock = k.Output.Padded
	p.OutBurstsPerBlock = 1
	p.LogicalBytes += k.Output.Bytes
	n := float64(max(k.OutElems, 1))
	lanes := float64(t.Sublanes * t.Lanes)
	p.VectorOps = k.VectorOps / lanes
	if sortLike(k.Hero) {
		// Sorting networks and generic loops: n log n vector work.
		p.VectorOps = math.Max(k.VectorOps, n*math.Max(math.Log2(n), 1)) / lanes
	}
	p.Transcendental = k.Transcendentals / lanes
	p.PaddedBytes = p.InBytesPerStep + p.OutBytesPerBlock
	// Opaque kernels stream through VMEM in the hardware's own chunks.
	p.StreamBufferBytes = 0
	return p
}

// TileOptions lists the valid tiles of k, in a fixed order: the Cartesian product of each
// dimension's candidate sizes (multiples of its alignment, powers of two up to the padded
// size) whose plan fits in VMEM with the given flags.
func (k *KernelInfo) TileOptions(t Target, f Flags) []Tile {
	opts := k.Options("", t, f)
	tiles := make([]Tile, len(opts))
	for i, o := range opts {
		tiles[i] = o.Config.Tile
	}
	return tiles
}

// Options lists the valid tiles of k (the kernel keyed key) with flags f, as TileOptions
// orders them, each planned: every option's Planned has Config{tile, f}. Listing the
// options is where a tile is planned; the compiler keeps the list (compiler.KernelCache)
// and every later use of an option reads its plan from there. f must be valid.
func (k *KernelInfo) Options(key string, t Target, f Flags) []Planned {
	if len(k.Dims) == 0 {
		return []Planned{{Info: k, Key: key, Config: KernelConfig{Tile: Tile{}, Flags: f}, Target: t, Plan: k.plan(Tile{}, t)}}
	}
	cands := make([][]int, len(k.Dims))
	for i, d := range k.Dims {
		cands[i] = dimCandidates(d)
	}
	// The tiles that fit and their plans go to scratch buffers first (pointer-free), then
	// into one exactly sized slice of options whose tiles share one backing array.
	sc := optionScratch.Get().(*optionBufs)
	defer optionScratch.Put(sc)
	sc.plans, sc.dims = sc.plans[:0], sc.dims[:0]
	n := len(cands)
	idx := make([]int, n)
	tile := make(Tile, n)
	vmem := float64(t.VMEMBytes)
	for {
		for i, c := range cands {
			tile[i] = c[idx[i]]
		}
		if k.validTile(tile) == nil {
			if p := k.plan(tile, t); p.Footprint(f) <= vmem {
				sc.plans = append(sc.plans, p)
				sc.dims = append(sc.dims, tile...)
			}
		}
		i := n - 1
		for i >= 0 {
			idx[i]++
			if idx[i] < len(cands[i]) {
				break
			}
			idx[i] = 0
			i--
		}
		if i < 0 {
			break
		}
	}
	out := make([]Planned, len(sc.plans))
	dims := slices.Clone(sc.dims)
	for j := range out {
		out[j] = Planned{Info: k, Key: key, Config: KernelConfig{Tile: dims[j*n : (j+1)*n : (j+1)*n], Flags: f}, Target: t, Plan: sc.plans[j]}
	}
	return out
}

// optionBufs are Options' scratch buffers, reused across calls.
type optionBufs struct {
	plans []Plan
	dims  []int
}

var optionScratch = sync.Pool{New: func() any { return new(optionBufs) }}

// CheckTile reports whether tile is valid for k with flags f: right arity, aligned, and
// fitting in VMEM. Errors wrap ErrTileInvalid.
func (k *KernelInfo) CheckTile(tile Tile, f Flags, t Target) (Plan, error) {
	p, err := k.PlanTile(tile, t)
	if err != nil {
		return p, err
	}
	if err := fits(tile, p, f, t); err != nil {
		return p, err
	}
	return p, nil
}

// fits reports whether a tile whose plan is p fits the target's VMEM with flags f.
func fits(tile Tile, p Plan, f Flags, t Target) error {
	if fp := p.Footprint(f); fp > float64(t.VMEMBytes) {
		return fmt.Errorf("%w: tile %s with %s needs %.1f MiB of VMEM, %s has %.1f MiB",
			ErrTileInvalid, tile, f, fp/(1<<20), t.Name, float64(t.VMEMBytes)/(1<<20))
	}
	return nil
}

// Analytical is the XLA-style analytical estimate of a kernel with a tile, in ns: a
// roofline, max(flops / peak, bytes / HBM bandwidth), plus the launch overhead; on a
// megacore device the peak and bandwidth of the cores the tile's blocks can occupy. It counts
// logical (unpadded) bytes including the operand re-fetch the tile implies, and is blind
// to padding, pipelining, DMA latency and vector-unit work by design.
func (k *KernelInfo) Analytical(tile Tile, t Target) (float64, error) {
	p, err := k.PlanTile(tile, t)
	if err != nil {
		return 0, err
	}
	return k.analyticalPlan(p, t), nil
}

// Analytical is the analytical estimate of the planned choice, in ns (see
// KernelInfo.Analytical); flags do not enter it.
func (p Planned) Analytical() float64 { return p.Info.analyticalPlan(p.Plan, p.Target) }

// ParallelUnits is how many independent pieces of work a plan splits into across the
// cores of a megacore device: its output blocks, or the steps of a full reduction (each
// core reduces its share; combining two partial sums is negligible).
func (k *KernelInfo) ParallelUnits(p Plan) int64 {
	if k.FullReduce {
		return p.Steps
	}
	return p.Blocks
}

func (k *KernelInfo) analyticalPlan(p Plan, t Target) float64 {
	cores := t.ParallelCores(k.ParallelUnits(p))
	compute := k.Flops / (t.PeakFlops() * cores)
	memory := p.LogicalBytes / (t.HBMBandwidth * cores)
	// A core runs n steps, pipelined: the steady state is bound by the larger of compute
	// and memory, but the first step's loads and the last step's compute and store are
	// not overlapped (one step's worth of both), and every step pays a fixed overhead.
	n := math.Ceil(float64(p.Steps) / cores)
	body := math.Max(compute, memory)*(1-1/n) + (compute+memory)/n
	return body*1e9 + n*t.StepOverheadCycles/t.ClockHz*1e9 + t.LaunchNs
}

// BestAnalyticalTile returns the valid tile (with flags f) that minimizes the analytical
// model: what an XLA-like compiler picks by default (see BestAnalytical).
func (k *KernelInfo) BestAnalyticalTile(t Target, f Flags) (Tile, error) {
	opts := k.Options("", t, f)
	if len(opts) == 0 {
		return nil, fmt.Errorf("%w: no tile of this %s kernel fits in %s's VMEM", ErrTileInvalid, k.Kind, t.Name)
	}
	best, err := BestAnalytical(opts)
	if err != nil {
		return nil, err
	}
	return opts[best].Config.Tile, nil
}

// BestAnalytical returns the index of the option (of one kernel, as Options lists them)
// that minimizes the analytical model: what an XLA-like compiler picks by default. The
// roofline often ties (every tile of an elementwise kernel moves the same bytes; a
// compute-bound matmul is compute-bound for many tiles); ties go to the fewest grid steps
// among tiles whose VMEM footprint stays within VMEM/2 (room for the compiler's other
// buffers), then to the smaller footprint, then to option order. It fails (wrapping
// ErrTileInvalid) when there is no option.
func BestAnalytical(opts []Planned) (int, error) {
	if len(opts) == 0 {
		return 0, fmt.Errorf("%w: no tile of this kernel fits in VMEM", ErrTileInvalid)
	}
	const tieTolerance = 1e-3 // relative; analytical estimates closer than this are ties
	type cand struct {
		ns    float64
		over  bool
		steps int64
		fp    float64
	}
	better := func(a, b cand) bool { // is a preferred to b among ties?
		if a.over != b.over {
			return !a.over
		}
		if a.over {
			return a.fp < b.fp
		}
		if a.steps != b.steps {
			return a.steps < b.steps
		}
		return a.fp < b.fp
	}
	var best cand
	bestIdx := 0
	for i, o := range opts {
		c := cand{ns: o.Analytical(), steps: o.Plan.Steps, fp: o.Footprint()}
		c.over = c.fp > float64(o.Target.VMEMBytes)/2
		switch {
		case i == 0, c.ns < best.ns*(1-tieTolerance):
			best, bestIdx = c, i
		case c.ns <= best.ns*(1+tieTolerance) && better(c, best):
			c.ns = math.Min(c.ns, best.ns)
			best, bestIdx = c, i
		}
	}
	return bestIdx, nil
}
