package tune

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tpucost/tpucost/compiler/cost"
)

// # Micro-kernels and the micro-kernel cost model (after DietCode, Zheng et al., MLSys 2022)
//
// A kernel with a dynamic dimension runs, at a shape S, as invocations (grid steps) of
// one micro-kernel: a tile box with fixed extents along every dimension, the dynamic one
// included (aligned as the layout requires: multiples of 8 sublanes or 128 lanes), and its
// code-generation flags. The kernel at S is ⌈extent/tile⌉ invocations per dimension, the
// last one padded. A box that spans a whole dimension is a micro-kernel of its own kind
// (its windows are contiguous rows, which the simulator moves differently from strided
// windows), whatever that dimension's extent: it is "whole along d", the extent a
// property of the shape. The same micro-kernel is valid at every shape where the compiler
// offers its tile, which makes it the unit shared by all shapes of a range.
//
// The micro-kernel cost model (MicroCostModel) predicts
//
//	time(S, mk) = fixed(mk) + scale(mk) × charge(S, mk)
//
// where charge(S, mk) (Charge) is the time the simulator's structure charges the
// micro-kernel's invocations at S beyond a call's fixed cost, estimated from the
// compiler's plan and the target: per grid step the compute of the full (padded) tile
// and the DMA of its aligned windows (the last invocation's padding: its compute runs the
// whole tile, its DMA moves only the aligned extent), per output block the write-back,
// pipelined or not as the flags say. charge carries everything that depends on S; the
// micro-kernel's two parameters do not. fixed(mk) (launch, code load, the exposed first
// fetch and last write-back) is the least-squares intercept of mk's own observations at
// two amounts of charge, else its family's (the mean of its micro-kernels' intercepts),
// else the mean over families, else the target's launch overhead. scale(mk) corrects what
// the charge's nominal unit costs miss: its prior is 1 times the family's correction (the
// weighted geometric mean ratio of observed to charged time over the family's
// observations, shrunk toward 1 by one pseudo-observation); once mk is measured it is the
// weighted geometric mean of its observations' (measured − fixed) / charge, each weighted
// by the share of its time the charge explains and by a Gaussian in log charge (nearer
// shapes more). A measurement at any shape S therefore moves the prediction at every
// shape where mk runs (TestMicroSharing).

// MicroKernel is one micro-kernel of a kernel family: the family (the kernel's name, the
// same at every shape), the tile option it comes from (what a config sets), its flags and
// its box: the tile clamped to each dimension's aligned extent at the shape (a tile
// larger than a small shape's extent runs the smaller box), with Whole marking the
// dimensions the box spans entirely (its windows are then contiguous rows, a different
// DMA pattern from strided windows of a longer dimension). Its identity (ID) is the box
// along the dimensions it tiles, the whole dimensions (not their extents: that is the
// shape's, and Charge carries it) and the flags.
type MicroKernel struct {
	Family string     `json:"family"`
	Tile   cost.Tile  `json:"tile"`
	Flags  cost.Flags `json:"tile_flags"`
	Box    cost.Tile  `json:"box"`
	Whole  []bool     `json:"whole"`
}

// NewMicroKernel is the micro-kernel of family that planned choice p (a tile option at one
// shape, with its flags) runs.
func NewMicroKernel(family string, p cost.Planned) MicroKernel {
	mk := MicroKernel{Family: family, Tile: p.Config.Tile, Flags: p.Config.Flags, Box: p.Config.Tile}
	if p.Info != nil && len(p.Info.Dims) == len(p.Config.Tile) {
		mk.Box, mk.Whole = make(cost.Tile, len(p.Config.Tile)), make([]bool, len(p.Config.Tile))
		for i, d := range p.Info.Dims {
			ext := paddedExtent(d)
			mk.Box[i] = min(p.Config.Tile[i], ext)
			mk.Whole[i] = p.Config.Tile[i] >= ext
		}
	}
	return mk
}

// ID is the micro-kernel's identity: family, box (a dimension the box spans whole as W,
// whatever its extent) and flags.
func (m MicroKernel) ID() string {
	var b strings.Builder
	for i, x := range m.Box {
		if i > 0 {
			b.WriteByte('x')
		}
		if i < len(m.Whole) && m.Whole[i] {
			b.WriteByte('W')
		} else {
			b.WriteString(strconv.Itoa(x))
		}
	}
	return fmt.Sprintf("%s|%s|%t,%d,%d", m.Family, b.String(), m.Flags.DoubleBuffer, m.Flags.Unroll, m.Flags.PipelineDepth)
}

// Invocations is how many times a core runs the micro-kernel of planned choice p (its
// tile at p's shape): ⌈grid steps / cores sharing them⌉; the last step along a dimension
// the tile does not divide is padded, and counted whole.
func Invocations(p cost.Planned) int64 {
	cores := p.Target.ParallelCores(p.Info.ParallelUnits(p.Plan))
	return int64(math.Ceil(float64(max(p.Plan.Steps, 1)) / cores))
}

// Fill is the share of the tile volume of p's invocations that holds data padded to the
// layout's alignment: per dimension, the aligned extent over ⌈aligned extent / tile⌉ whole
// tiles. 1 when the tile divides every aligned extent.
func Fill(p cost.Planned) float64 {
	if p.Info == nil || len(p.Info.Dims) != len(p.Config.Tile) {
		return 1
	}
	f := 1.0
	for i, d := range p.Info.Dims {
		t := max(p.Config.Tile[i], 1)
		ext := paddedExtent(d)
		f *= float64(ext) / float64((ext+t-1)/t*t)
	}
	return f
}

// PaddingWaste is the share of p's invocations' tile volume that is padding beyond the
// layout's alignment (1 − Fill): what running whole tiles at this shape wastes.
func PaddingWaste(p cost.Planned) float64 { return 1 - Fill(p) }

// Nominal per-unit costs of the charge (Charge) that the target does not state: a
// [128,128] weight block takes MXUDim cycles to load and the systolic array MXUDim cycles
// to fill and drain; the vector unit issues two vector-register ops a cycle, the
// transcendental unit takes four cycles a register and the transpose unit two; a DMA
// burst (one contiguous run of HBM) costs 8 ns on top of its bytes. They shape the
// charge's prior; the model's per-micro-kernel scale and fixed cost absorb what they miss.
const (
	chargeVALUSlots     = 2
	chargeEUPCycles     = 4
	chargeXLUCycles     = 2
	chargeBurstNs       = 8
	chargePassRowCycles = 8 // an [8,128]x[128,128] MXU pass streams 8 rows
)

// Charge is the time in ns the micro-kernel of planned choice p is charged at p's shape
// beyond its fixed cost per call, estimated from the compiler's plan (cost.Plan) and the
// target with the structure the simulator charges (see tpusim.SimulateChoice): per grid
// step the slowest unit's compute on the full (padded) tile plus the step overhead, and
// the step's DMA of its average padded windows at the target's bandwidth plus a cost per
// burst; per output block the epilogue and the write-back; a megacore splits the blocks
// between its cores; without double buffering DMA and compute serialize, with it the
// steady state per step is the larger of the two, after an exposed first fetch and before
// an exposed last write-back. It is what makes one micro-kernel's measurement carry to
// every shape: the micro-kernel's box fixes the compute per step, the shape fixes the
// steps (invocations), the padded share of the last one (its DMA moves only the aligned
// extent; its compute runs the whole tile) and the whole-or-strided windows (bursts).
func Charge(p cost.Planned) float64 {
	t, pl := p.Target, p.Plan
	cyc := 1e9 / t.ClockHz
	bw := t.HBMBandwidth / 1e9
	md := float64(t.MXUDim)
	mxu := 0.0
	if pl.WeightBlocks > 0 {
		mxu = (pl.WeightBlocks*math.Max(pl.MXUPasses/pl.WeightBlocks*chargePassRowCycles, md)/float64(max(t.MXUs, 1)) + md) * cyc
	}
	units := func(vec, tr, xlu float64) float64 {
		return math.Max(vec/chargeVALUSlots, math.Max(tr*chargeEUPCycles, xlu*chargeXLUCycles)) * cyc
	}
	c := math.Max(mxu, units(pl.VectorOps, pl.Transcendental, pl.XLUOps)) + t.StepOverheadCycles*cyc
	cEpi := units(pl.EpiVectorOps, pl.EpiTranscendental, pl.EpiXLUOps)
	dIn := pl.InBytesPerStep/bw + pl.InBurstsPerStep*chargeBurstNs
	dOut := (pl.EpiBytesPerBlock+pl.OutBytesPerBlock)/bw + pl.OutBurstsPerBlock*chargeBurstNs
	S, B := float64(max(pl.Steps, 1)), float64(max(pl.Blocks, 1))
	inner := float64(max(pl.InnerSteps, 1))
	if n := int64(t.DeviceCores()); n > 1 && p.Info != nil && p.Info.ParallelUnits(pl) >= 2 {
		if p.Info.FullReduce {
			S = float64((pl.Steps + n - 1) / n)
		} else {
			per := float64((pl.Blocks + n - 1) / n)
			S, B = S*per/B, per
		}
	}
	res := pl.ResidentBytes / bw
	if !p.Config.Flags.DoubleBuffer {
		return res + S*(dIn+c) + B*(cEpi+dOut)
	}
	cAvg, dAvg := c+cEpi/inner, dIn+dOut/inner
	return res + dIn + (S-1)*math.Max(cAvg, dAvg) + cAvg + dOut
}

// MicroCostModel is the micro-kernel cost model (see the section above). The zero value is
// not usable: NewMicroCostModel. Not safe for concurrent use.
type MicroCostModel struct {
	launchNs float64
	prior    map[string]microPrior
	obs      map[string][]microObs // mk id -> observations
	family   map[string][]string   // family -> ids of its observed micro-kernels, in order
	// meanFixed caches the mean fixed cost over families (valid while meanFixedOK; an
	// observation clears it).
	meanFixed   float64
	meanFixedOK bool
}

type microPrior struct {
	scale  float64
	charge float64 // Charge at the shape the prior was taken at
}

type microObs struct {
	charge float64 // Charge of the measured choice
	ns     float64
}

// NewMicroCostModel returns an empty model for a target whose kernels pay launchNs each (the
// fixed cost until observations give one).
func NewMicroCostModel(launchNs float64) *MicroCostModel {
	return &MicroCostModel{launchNs: launchNs, prior: map[string]microPrior{},
		obs: map[string][]microObs{}, family: map[string][]string{}}
}

// AddPrior records mk's choice p (its planned tile at one shape) as a prior for mk: scale
// 1 (the charge as it is); of several, the one with the most charge (the least padded use
// of the tile) is kept.
func (m *MicroCostModel) AddPrior(mk MicroKernel, p cost.Planned) {
	c := Charge(p)
	id := mk.ID()
	if old, ok := m.prior[id]; ok && old.charge >= c {
		return
	}
	m.prior[id] = microPrior{scale: 1, charge: c}
}

// Observe records a measurement of mk taken at a shape where its Charge is charge:
// measuredNs is its time there. It updates the estimate of mk's scale (and so its
// prediction at every shape), and its family's fixed cost and correction.
func (m *MicroCostModel) Observe(mk MicroKernel, charge float64, measuredNs float64) {
	id := mk.ID()
	if len(m.obs[id]) == 0 {
		m.family[mk.Family] = append(m.family[mk.Family], id)
	}
	m.obs[id] = append(m.obs[id], microObs{charge: max(charge, 1e-9), ns: measuredNs})
	m.meanFixedOK = false
}

// Measured is how many observations of mk the model holds.
func (m *MicroCostModel) Measured(mk MicroKernel) int { return len(m.obs[mk.ID()]) }

// intercept is the least-squares intercept of ns over charge of obs, and whether obs holds
// two distinct amounts of charge.
func intercept(obs []microObs) (float64, bool) {
	n := float64(len(obs))
	sx, sy, sxx, sxy := 0.0, 0.0, 0.0, 0.0
	for _, o := range obs {
		x := o.charge
		sx, sy, sxx, sxy = sx+x, sy+o.ns, sxx+x*x, sxy+x*o.ns
	}
	d := n*sxx - sx*sx
	if len(obs) < 2 || d <= 1e-9*n*sxx {
		return 0, false
	}
	slope := (n*sxy - sx*sy) / d
	return (sy - slope*sx) / n, true
}

// familyFixed is the family's own fixed cost estimate, and whether it has one.
func (m *MicroCostModel) familyFixed(family string) (float64, bool) {
	s, n := 0.0, 0
	for _, id := range m.family[family] {
		if b, ok := intercept(m.obs[id]); ok {
			s += b
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return max(s/float64(n), 0), true
}

// Fixed is the fixed cost in ns of a call of family's kernel (see the section above).
func (m *MicroCostModel) Fixed(family string) float64 {
	if f, ok := m.familyFixed(family); ok {
		return f
	}
	if !m.meanFixedOK {
		s, n := 0.0, 0
		for _, fam := range slices.Sorted(maps.Keys(m.family)) { // in order: the same sum every run
			if f, ok := m.familyFixed(fam); ok {
				s += f
				n++
			}
		}
		m.meanFixed, m.meanFixedOK = m.launchNs, true
		if n > 0 {
			m.meanFixed = s / float64(n)
		}
	}
	return m.meanFixed
}

// minObsShare bounds below the share of an observation's time its charge is taken to
// explain: a measurement (nearly) all fixed cost says little of the scale.
const minObsShare = 0.05

// fixedOf is mk's fixed cost: its own intercept when it was observed at two amounts of
// work, else its family's (Fixed).
func (m *MicroCostModel) fixedOf(mk MicroKernel) float64 {
	if b, ok := intercept(m.obs[mk.ID()]); ok {
		return max(b, 0)
	}
	return m.Fixed(mk.Family)
}

// scaleObs is the scale an observation gives with fixed cost fixed.
func scaleObs(o microObs, fixed float64) float64 {
	return max(o.ns-fixed, minObsShare*o.ns) / o.charge
}

// obsWeight is the weight of an observation in the scale estimate: the share of its time
// its charge explains (at least minObsShare).
func obsWeight(o microObs, fixed float64) float64 {
	return max(o.ns-fixed, minObsShare*o.ns) / o.ns
}

// familyScale is the family's correction of priors (see the section above).
func (m *MicroCostModel) familyScale(family string, fixed float64) float64 {
	s, n := 0.0, 0.0
	for _, id := range m.family[family] {
		p, ok := m.prior[id]
		if !ok {
			continue
		}
		for _, o := range m.obs[id] {
			w := obsWeight(o, fixed)
			s += w * math.Log(scaleObs(o, fixed)/p.scale)
			n += w
		}
	}
	return math.Exp(s / (n + 1))
}

// nearCharge is the bandwidth, in log charge, of the kernel regression over a
// micro-kernel's observations: an observation at 4× (or a quarter of) the charge weighs
// e^(−1/2) of one at the same charge. The charge's nominal unit costs miss some of the
// simulator's (the pipeline's latency term, a whole box's varying extent), so nearer
// observations say more.
const nearCharge = 1.3862943611198906 // ln 4

// Scale is the model's estimate of mk's scale (ns of time per ns of Charge) where its
// Charge is charge (see the section above). NaN when mk has neither a prior nor an
// observation.
func (m *MicroCostModel) Scale(mk MicroKernel, charge float64) float64 {
	return m.scale(mk, m.Fixed(mk.Family), charge)
}

func (m *MicroCostModel) scale(mk MicroKernel, fixed, charge float64) float64 {
	id := mk.ID()
	obs := m.obs[id]
	if b, ok := intercept(obs); ok {
		fixed = max(b, 0)
	}
	if len(obs) == 0 {
		if p, ok := m.prior[id]; ok {
			return p.scale * m.familyScale(mk.Family, fixed)
		}
		return math.NaN()
	}
	num, den := 0.0, 0.0
	for _, o := range obs {
		d := math.Log(o.charge/charge) / nearCharge
		w := obsWeight(o, fixed) * math.Exp(-d*d/2)
		num += w * math.Log(scaleObs(o, fixed))
		den += w
	}
	if !(den > 0) { // every observation too far to weigh: their plain weighted mean
		for _, o := range obs {
			w := obsWeight(o, fixed)
			num += w * math.Log(scaleObs(o, fixed))
			den += w
		}
	}
	return math.Exp(num / den)
}

// MeasuredNear reports whether mk has an observation within a factor ratio of charge.
func (m *MicroCostModel) MeasuredNear(mk MicroKernel, charge, ratio float64) bool {
	for _, o := range m.obs[mk.ID()] {
		if o.charge <= charge*ratio && o.charge*ratio >= charge {
			return true
		}
	}
	return false
}

// Predict is the predicted time in ns of mk at a shape where its Charge is charge.
func (m *MicroCostModel) Predict(mk MicroKernel, charge float64) float64 {
	f := m.fixedOf(mk)
	return f + m.scale(mk, f, charge)*charge
}

// predictPlanned is the prediction for mk at a shape where its Charge is charge: Predict,
// or, when the model has no prior for mk (it was never listed), the family's correction
// as its scale.
func (m *MicroCostModel) predictPlanned(mk MicroKernel, charge float64) float64 {
	f := m.fixedOf(mk)
	u := m.scale(mk, f, charge)
	if math.IsNaN(u) {
		u = m.familyScale(mk.Family, f)
	}
	return f + u*charge
}
