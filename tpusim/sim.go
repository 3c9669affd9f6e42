package tpusim

import (
	"fmt"
	"math"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/compiler/hlo"
)

// Bound names the resource that limits a kernel.
type Bound string

// The bounds a kernel can have.
const (
	BoundMXU      Bound = "mxu"      // matrix unit
	BoundVPU      Bound = "vpu"      // vector unit
	BoundEUP      Bound = "eup"      // transcendental unit
	BoundXLU      Bound = "xlu"      // transpose / cross-lane reduce unit
	BoundHBM      Bound = "hbm"      // DMA bandwidth
	BoundLatency  Bound = "latency"  // DMA latency, fill and drain, step overhead
	BoundOverhead Bound = "overhead" // kernel launch
)

// KernelTime is the simulated time of one kernel with its breakdown.
type KernelTime struct {
	Ns        float64 `json:"ns"`
	Bound     Bound   `json:"bound"`
	Steps     int64   `json:"steps"`
	ComputeNs float64 `json:"compute_ns"` // sum of per-step compute (all units overlapped per step)
	DMANs     float64 `json:"dma_ns"`     // sum of DMA transfer time
	VMEMBytes float64 `json:"vmem_bytes"` // footprint
	HBMBytes  float64 `json:"hbm_bytes"`  // padded bytes moved
}

// unitTimes are per-step or per-block times in ns for each unit.
type unitTimes struct{ mxu, vpu, eup, xlu, overhead float64 }

func (u unitTimes) max() float64 {
	return math.Max(math.Max(u.mxu, u.vpu), math.Max(math.Max(u.eup, u.xlu), 0)) + u.overhead
}

func (u unitTimes) bound() Bound {
	b, v := BoundMXU, u.mxu
	for _, c := range []struct {
		b Bound
		v float64
	}{{BoundVPU, u.vpu}, {BoundEUP, u.eup}, {BoundXLU, u.xlu}} {
		if c.v > v {
			b, v = c.b, c.v
		}
	}
	return b
}

// SimulateChoice times a planned kernel choice on chip c. It is the ground truth of tpucost. The
// choice's plan is used as it is when it was planned for c's target; a choice planned for
// another target is planned again for c's (failing, wrapping cost.ErrTileInvalid, when it
// does not fit there).
//
// Model, per grid step: the MXU does ceil(tm/8) passes of [8,128]x[128,128] per weight
// block, at least WeightLoadCycles per block, plus a fill/drain; the vector unit does
// the fused elementwise work on full (padded) tiles; the transcendental and transpose
// units do theirs; units overlap (VLIW) and the step costs the slowest plus the loop
// overhead (divided by the unroll factor, plus instruction-fetch stalls when the unrolled
// kernel exceeds instruction memory, plus a hand-off when double buffering). A step's
// DMA moves its padded windows at HBM bandwidth plus a cost per separate burst. Without
// double buffering, DMA latency, transfer and compute serialize; with D buffers the
// steady state per step is max(compute, transfer, (compute + latency + transfer) / D),
// after an exposed first fetch and before an exposed last write-back. Unrolled code takes
// longer to load at launch. Groups of a grouped
// (depthwise) convolution, and the products of a batched matmul, too thin for the MXU
// run on the vector unit when that is faster. A batched matmul whose tile covers whole
// products packs several per step (cost.BatchStepBytes). Program time is the sum of kernel times, each with a launch overhead.
func SimulateChoice(p cost.Planned, c Chip) (KernelTime, error) {
	p, err := p.For(c.Target)
	if err != nil {
		return KernelTime{}, err
	}
	return simulatePlan(p.Info, p.Config.Tile, p.Plan, p.Config.Flags, c), nil
}

// SimulateKernel times the kernel analyzed as info with a tile and flags on chip c:
// SimulateChoice of the config planned with cost.PlanConfig. It fails with an error wrapping
// cost.ErrTileInvalid when the flags are invalid or the tile does not fit the kernel or
// VMEM with these flags.
func SimulateKernel(info *cost.KernelInfo, tile cost.Tile, flags cost.Flags, c Chip) (KernelTime, error) {
	p, err := cost.PlanConfig(info, "", cost.KernelConfig{Tile: tile, Flags: flags}, c.Target)
	if err != nil {
		return KernelTime{}, err
	}
	return simulatePlan(info, tile, p.Plan, flags, c), nil
}

func simulatePlan(info *cost.KernelInfo, tile cost.Tile, p cost.Plan, flags cost.Flags, c Chip) KernelTime {
	cyc := 1e9 / c.ClockHz     // ns per cycle
	bw := c.HBMBandwidth / 1e9 // bytes per ns

	// Compute per step.
	var step unitTimes
	// A chunked plan (cost.Plan.Chunks) runs each tile's step as Chunks pieces: the
	// per-step work below, from the tile, is a piece's share.
	pieces := float64(max(p.Chunks, 1))
	if p.WeightBlocks > 0 {
		perBlock := p.MXUPasses / p.WeightBlocks * 8
		mxu := (p.WeightBlocks*math.Max(perBlock, c.WeightLoadCycles)/float64(c.MXUs) + c.MXUFillCycles) * cyc
		if info.Kind == cost.KindGEMM && info.Groups > 1 {
			// Thin groups on the vector unit: one multiply-add per lane per slot per cycle.
			macs := float64(tile[0]) * float64(min(tile[1], info.N)) * float64(min(tile[2], info.K))
			vpuConv := macs / (float64(c.Lanes*c.Sublanes) * c.VALUSlots) * cyc / pieces
			mxu = math.Min(mxu, vpuConv)
		}
		if info.Kind == cost.KindGEMM && !info.IsConv && info.Batch > 1 {
			// Thin batched products on the vector unit: per product, each output vreg
			// takes K multiply-adds, each with a broadcast of the LHS element.
			outVregs := math.Ceil(float64(min(tile[0], info.M))/float64(c.Sublanes)) * math.Ceil(float64(min(tile[1], info.N))/float64(c.Lanes))
			vpuBatch := math.Max(p.BatchPerStep, 1) * outVregs * float64(min(tile[2], info.K)) * 2 / c.VALUSlots * cyc / pieces
			mxu = math.Min(mxu, vpuBatch)
		}
		step.mxu = mxu
	}
	step.vpu = p.VectorOps / c.VALUSlots * cyc
	step.eup = p.Transcendental * c.EUPCyclesPerVreg * cyc
	step.xlu = p.XLUOps * c.XLUCyclesPerVreg * cyc
	u := float64(max(flags.Unroll, 1))
	// Unrolling removes the loop's share of the step overhead (a quarter of it); DMA
	// descriptors and semaphores remain.
	overhead := c.StepOverheadCycles * (0.75 + 0.25/u)
	if extra := float64(info.NumOps)*u - float64(c.IMemOps); extra > 0 {
		overhead += extra * c.IFetchCycles
	}
	if flags.DoubleBuffer {
		overhead += c.SyncCycles
	}
	step.overhead = overhead * cyc

	epi := unitTimes{
		vpu: p.EpiVectorOps / c.VALUSlots * cyc,
		eup: p.EpiTranscendental * c.EUPCyclesPerVreg * cyc,
		xlu: p.EpiXLUOps * c.XLUCyclesPerVreg * cyc,
	}
	cStep := step.max()
	cEpi := epi.max()

	// DMA per step and per block.
	dIn := p.InBytesPerStep/bw + p.InBurstsPerStep*c.BurstNs
	dEpiIn := p.EpiBytesPerBlock / bw
	dOut := p.OutBytesPerBlock/bw + p.OutBurstsPerBlock*c.BurstNs
	inner := float64(max(p.InnerSteps, 1))
	S := float64(p.Steps)
	B := float64(p.Blocks)
	L := c.DMALatencyNs
	resident := 0.0
	if p.ResidentBytes > 0 {
		resident = L + p.ResidentBytes/bw
	}

	if n := int64(c.DeviceCores()); n > 1 && info.ParallelUnits(p) >= 2 {
		// Megacore: the output blocks (a full reduction's steps) are split between the
		// cores, which run at once, each with its own bandwidth share: the busiest does
		// ceil(units / cores).
		if info.FullReduce {
			S = float64((p.Steps + n - 1) / n)
		} else {
			per := float64((p.Blocks + n - 1) / n)
			S, B = S*per/B, per
		}
	}
	var body float64
	if !flags.DoubleBuffer {
		body = S*(L+dIn+cStep) + B*(cEpi+L+dEpiIn+dOut)
	} else {
		// With D buffers, the fetch for step j+D is issued when step j's compute frees its
		// buffer and must land by the time step j+D starts: D periods must cover compute,
		// latency and transfer. The DMA engine and the units bound the period too.
		d := float64(max(flags.PipelineDepth, 2))
		cAvg := cStep + cEpi/inner
		dAvg := dIn + (dEpiIn+dOut)/inner
		steady := math.Max(math.Max(cAvg, dAvg), (cAvg+L+dAvg)/d)
		body = (L + dIn) + (S-1)*steady + cAvg + L + dOut
		if S == 1 {
			body = L + dIn + dEpiIn + cStep + cEpi + L + dOut
		}
	}
	// Loading the kernel's (unrolled) code is part of its launch.
	total := resident + body + c.LaunchNs + float64(info.NumOps)*u*c.CodeLoadNsPerOp

	kt := KernelTime{
		Ns: total, Steps: p.Steps,
		ComputeNs: S*cStep + B*cEpi,
		DMANs:     S*dIn + B*(dEpiIn+dOut) + resident,
		VMEMBytes: p.Footprint(flags),
		HBMBytes:  p.PaddedBytes,
	}
	// The bound: the largest of launch, exposed latency, DMA and the busiest unit.
	units := unitTimes{
		mxu: S * step.mxu, vpu: S*step.vpu + B*epi.vpu, eup: S*step.eup + B*epi.eup, xlu: S*step.xlu + B*epi.xlu,
	}
	busiest := math.Max(math.Max(units.mxu, units.vpu), math.Max(units.eup, units.xlu))
	latency := total - c.LaunchNs - math.Max(busiest, kt.DMANs)
	switch {
	case c.LaunchNs >= math.Max(busiest, math.Max(kt.DMANs, latency)):
		kt.Bound = BoundOverhead
	case latency > math.Max(busiest, kt.DMANs):
		kt.Bound = BoundLatency
	case kt.DMANs >= busiest:
		kt.Bound = BoundHBM
	default:
		kt.Bound = units.bound()
	}
	return kt
}

// Simulator times compiled programs on one chip, optionally with measurement noise.
type Simulator struct {
	chip Chip
	opts Options
}

// Options configure measurements.
type Options struct {
	// NoiseSigma is the standard deviation of the multiplicative measurement noise: a run
	// takes true * (1 + |N(0, sigma)|). 0 (the default) turns noise off.
	NoiseSigma float64
	// Runs is how many runs a measurement takes; it reports the minimum. Default 3.
	Runs int
	// Seed seeds the noise.
	Seed int64
	// Chips is the number of chips collectives without explicit replica groups span;
	// 0 takes the program's (its module's replica_count × num_partitions).
	Chips int
}

// New returns a simulator for chip c.
func New(c Chip, opts Options) (*Simulator, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if opts.NoiseSigma < 0 {
		return nil, fmt.Errorf("noise sigma must be >= 0, got %g", opts.NoiseSigma)
	}
	if opts.Runs <= 0 {
		opts.Runs = 3
	}
	if opts.Chips < 0 {
		return nil, fmt.Errorf("chips must be >= 0, got %d", opts.Chips)
	}
	return &Simulator{chip: c, opts: opts}, nil
}

// Chip returns the simulated chip.
func (s *Simulator) Chip() Chip { return s.chip }

// Options returns the measurement options.
func (s *Simulator) Options() Options { return s.opts }

// Kernel times a compiled kernel (noiseless ground truth).
func (s *Simulator) Kernel(k *compiler.Kernel) (KernelTime, error) {
	kt, err := SimulateChoice(k.Choice, s.chip)
	if err != nil {
		return kt, fmt.Errorf("kernel %s: %w", k.Name, err)
	}
	return kt, nil
}

// The control-flow overheads of a while loop: WhileSetupNs once per loop (starting it
// like a kernel launch) and WhileIterNs per iteration (the scalar core reads the
// condition's result and branches; the body's kernels are launched as usual).
const (
	WhileSetupNs = 1000
	WhileIterNs  = 200
)

// ProgramTime is the simulated time of a program.
type ProgramTime struct {
	TotalNs float64 `json:"total_ns"`
	// Kernels is one execution of each kernel of the program, in p.Kernels order; a
	// kernel in a loop body runs Kernel.Weight times per program run.
	Kernels []KernelTime `json:"-"`
	// ApproxNs is the time spent in approximately timed kernels; ApproxOps counts them
	// (each kernel once); UnknownTrips counts loops run DefaultTripCount times because
	// their trip count is unknown.
	ApproxNs     float64 `json:"approx_ns"`
	ApproxOps    int     `json:"approx_ops"`
	UnknownTrips int     `json:"unknown_trip_counts"`
	CollectiveNs float64 `json:"collective_ns"`
}

// Program times every kernel of p and walks its schedule: kernels in order; a while loop
// costs trip count × (condition + body) + WhileSetupNs + trip count × WhileIterNs
// (nested loops multiply); a conditional the weighted mean of its branches (equal
// weights unless the branch index is a constant); a collective its interconnect time
// (CollectiveTime) over its replica group, or over all the program's chips.
func (s *Simulator) Program(p *compiler.Program) (ProgramTime, error) {
	pt := ProgramTime{Kernels: make([]KernelTime, len(p.Kernels))}
	idx := make(map[*compiler.Kernel]int, len(p.Kernels))
	for i, k := range p.Kernels {
		kt, err := s.Kernel(k)
		if err != nil {
			return ProgramTime{}, fmt.Errorf("%s: %w", p.Name, err)
		}
		pt.Kernels[i] = kt
		idx[k] = i
		if k.Approximate || k.Info.ApproxOps > 0 {
			pt.ApproxOps += max(k.Info.ApproxOps, 1)
			pt.ApproxNs += kt.Ns * k.Weight
		}
	}
	if p.Schedule == nil { // a program built by hand: its kernels in order
		for _, kt := range pt.Kernels {
			pt.TotalNs += kt.Ns
		}
		return pt, nil
	}
	w := &walker{s: s, p: p, pt: &pt, idx: idx, mult: 1}
	total, err := w.block(p.Schedule)
	if err != nil {
		if p.Module != nil { // file:line:col of the step's instruction, else the header
			return ProgramTime{}, p.Module.Wrap(err)
		}
		return ProgramTime{}, fmt.Errorf("%s: %w", p.Name, err)
	}
	pt.TotalNs = total
	return pt, nil
}

// walker times a program's schedule.
type walker struct {
	s   *Simulator
	p   *compiler.Program
	pt  *ProgramTime
	idx map[*compiler.Kernel]int
	// mult is how many times the block being walked runs per program run.
	mult float64
}

// chips is the number of chips a collective over all chips spans.
func (w *walker) chips() int {
	if w.s.opts.Chips > 0 {
		return w.s.opts.Chips
	}
	return max(w.p.Chips, 1)
}

func (w *walker) collective(c *compiler.Collective) (CollectiveCost, error) {
	k, _, err := CollectiveGroup(c, w.s.opts.Chips, w.p.Chips)
	if err != nil {
		return CollectiveCost{}, err
	}
	return CollectiveTime(c.Kind, c.Bytes, k, w.s.chip)
}

// loopNs is the time of a loop given one iteration's condition and body times.
func loopNs(trips int64, cond, body float64) float64 {
	n := float64(trips)
	return n*(cond+body) + WhileSetupNs + n*WhileIterNs
}

func (w *walker) block(b *compiler.Block) (float64, error) {
	total := 0.0
	fl := inflight{}
	for _, st := range b.Steps {
		ns, _, err := w.timed(st, fl)
		if err != nil {
			return 0, err
		}
		total += ns
	}
	return total + fl.rest(), nil
}

// inflight holds the remaining transfer time of the asynchronous collectives started
// and not yet done in a block.
type inflight map[*compiler.Collective]float64

// rest is what the transfers still in flight at the end of a block add to it.
func (fl inflight) rest() float64 {
	m := 0.0
	for _, r := range fl {
		m = math.Max(m, r)
	}
	return m
}

// timed returns the time step st adds to its block and its own time. An asynchronous
// collective's start adds nothing: its transfer runs while the following steps do (every
// step's time drains the transfers in flight); its done adds what is left of the
// transfer (the exposed part).
func (w *walker) timed(st compiler.Step, fl inflight) (add, own float64, err error) {
	if st.Done != nil {
		r := fl[st.Done]
		delete(fl, st.Done)
		return r, r, nil
	}
	own, err = w.step(st)
	if err != nil {
		return 0, 0, err
	}
	if st.Collective != nil && st.Collective.Async {
		fl[st.Collective] = own
		return 0, own, nil
	}
	for c, r := range fl {
		fl[c] = math.Max(r-own, 0)
	}
	return own, own, nil
}

func (w *walker) step(st compiler.Step) (float64, error) {
	switch {
	case st.Kernel != nil:
		return w.pt.Kernels[w.idx[st.Kernel]].Ns, nil
	case st.Loop != nil:
		l := st.Loop
		if !l.TripKnown {
			w.pt.UnknownTrips++
		}
		outer := w.mult
		w.mult *= float64(l.TripCount)
		defer func() { w.mult = outer }()
		cond, err := w.block(l.Cond)
		if err != nil {
			return 0, err
		}
		body, err := w.block(l.Body)
		if err != nil {
			return 0, err
		}
		return loopNs(l.TripCount, cond, body), nil
	case st.Cond != nil:
		ns := 0.0
		outer := w.mult
		defer func() { w.mult = outer }()
		for i, b := range st.Cond.Branches {
			w.mult = outer * st.Cond.Weights[i]
			t, err := w.block(b)
			if err != nil {
				return 0, err
			}
			ns += st.Cond.Weights[i] * t
		}
		return ns, nil
	case st.Collective != nil:
		cc, err := w.collective(st.Collective)
		if err != nil {
			return 0, hlo.AtPos(st.Collective.Line, st.Collective.Col, fmt.Errorf("%s: %w", st.Collective.Name, err))
		}
		w.pt.CollectiveNs += cc.Ns * w.mult
		return cc.Ns, nil
	}
	return 0, nil
}

// TimeChoice times a planned kernel choice on c: the simulated time and the analytical
// model's estimate, the pair every comparison of a learned model reports.
func TimeChoice(p cost.Planned, c Chip) (simNs, analyticalNs float64, err error) {
	if p, err = p.For(c.Target); err != nil {
		return 0, 0, err
	}
	kt, err := SimulateChoice(p, c)
	if err != nil {
		return 0, 0, err
	}
	return kt.Ns, p.Analytical(), nil
}

// Analytical is the XLA-style analytical estimate of a compiled kernel's choice on c (the
// baseline model).
func Analytical(k *compiler.Kernel, c Chip) float64 {
	p, err := k.Choice.For(c.Target)
	if err != nil {
		return math.NaN()
	}
	return p.Analytical()
}
