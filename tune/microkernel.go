package tune

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/tpucost/tpucost/compiler/cost"
)

// # Micro-kernels and the micro-kernel cost model (after DietCode, Zheng et al., MLSys 2022)
//
// A kernel with a dynamic dimension runs, at a shape S, as invocations (grid steps) of
// one micro-kernel: a tile box with fixed extents along every dimension, the dynamic one
// included (aligned as the layout requires: multiples of 8 sublanes or 128 lanes), and its
// code-generation flags. The kernel at S is ⌈extent/tile⌉ invocations per dimension, the
// last one padded: each invocation does a whole tile's work whatever S is, so the padding
// of the last one is charged. The same micro-kernel is valid at every shape whose
// extents reach its tile, which makes it the unit shared by all shapes of a range.
//
// The micro-kernel cost model (MicroCostModel) predicts
//
//	time(S, mk) = fixed(family) + perInvocation(mk) × invocations(S, mk)
//
// where invocations(S, mk) = ⌈Steps(S, mk) / cores⌉ (the grid steps of the tile at S,
// spread over the cores of a megacore device, as the analytical model spreads them),
// perInvocation(mk) does not depend on S, and fixed(family) is the kernel's cost paid once
// per call (launch, pipeline fill and drain). The fixed cost of a family is the mean
// intercept of its micro-kernels observed at two or more invocation counts (least
// squares), else the mean over the families that have one, else the target's launch
// overhead. The prior of perInvocation(mk) is the analytical roofline of the tile at the
// largest shape it was seen at (its least-padded use) over its invocations there, scaled by
// the family's correction: the geometric mean ratio of observed to prior per-invocation
// cost over the family's observations (shrunk toward 1 by one pseudo-observation). A
// measurement at any shape S is an observation of perInvocation(mk)
// ((measured − fixed) / work(S, mk)), so it moves the prediction at every shape: a
// measured micro-kernel's estimate is the geometric mean of its observations, each
// weighted by the share of its time the work explains (a measurement that is nearly all
// fixed cost says little of the per-invocation cost); the prior serves until then.

// MicroKernel is one micro-kernel of a kernel family: the family (the kernel's name, the
// same at every shape), the tile option it comes from (what a config sets), its flags and
// its box: the tile clamped to each dimension's aligned extent at the shape (a tile
// larger than a small shape's extent runs the smaller box), with Whole marking the
// dimensions the box spans entirely (its windows are then contiguous rows, a different
// DMA pattern from strided windows of a longer dimension). Box, Whole and Flags are its
// identity: one micro-kernel is one box of work.
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

// ID is the micro-kernel's identity: family, box, whole dimensions and flags.
func (m MicroKernel) ID() string {
	w := make([]byte, len(m.Whole))
	for i, x := range m.Whole {
		w[i] = '0'
		if x {
			w[i] = '1'
		}
	}
	return fmt.Sprintf("%s|%s|%s|%t,%d,%d", m.Family, m.Box, w, m.Flags.DoubleBuffer, m.Flags.Unroll, m.Flags.PipelineDepth)
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

// Work is p's invocations charged as the simulator charges them: Invocations × Fill (the
// last tile along a dimension costs its aligned share; see the section above).
func Work(p cost.Planned) float64 { return float64(Invocations(p)) * Fill(p) }

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
	perInv float64
	work   float64 // Work at the shape the prior was taken at
}

type microObs struct {
	work float64 // Work of the measured choice
	ns   float64
}

// NewMicroCostModel returns an empty model for a target whose kernels pay launchNs each (the
// fixed cost until observations give one).
func NewMicroCostModel(launchNs float64) *MicroCostModel {
	return &MicroCostModel{launchNs: launchNs, prior: map[string]microPrior{},
		obs: map[string][]microObs{}, family: map[string][]string{}}
}

// AddPrior records the analytical estimate of mk's choice p (its planned tile at one
// shape) as a prior for mk; of several, the one with the most work (the least padded
// use of the tile) is kept.
func (m *MicroCostModel) AddPrior(mk MicroKernel, p cost.Planned) {
	w := Work(p)
	id := mk.ID()
	if old, ok := m.prior[id]; ok && old.work >= w {
		return
	}
	m.prior[id] = microPrior{perInv: max(p.Analytical()-m.launchNs, 1) / w, work: w}
}

// Observe records a measurement of mk taken at a shape where its Work is work:
// measuredNs is its time there. It updates the estimate of mk's per-invocation cost (and
// so its prediction at every shape), and its family's fixed cost and correction.
func (m *MicroCostModel) Observe(mk MicroKernel, work float64, measuredNs float64) {
	id := mk.ID()
	if len(m.obs[id]) == 0 {
		m.family[mk.Family] = append(m.family[mk.Family], id)
	}
	m.obs[id] = append(m.obs[id], microObs{work: max(work, 1e-9), ns: measuredNs})
	m.meanFixedOK = false
}

// Measured is how many observations of mk the model holds.
func (m *MicroCostModel) Measured(mk MicroKernel) int { return len(m.obs[mk.ID()]) }

// intercept is the least-squares intercept of ns over work of obs, and whether obs holds
// two distinct amounts of work.
func intercept(obs []microObs) (float64, bool) {
	n := float64(len(obs))
	sx, sy, sxx, sxy := 0.0, 0.0, 0.0, 0.0
	for _, o := range obs {
		x := o.work
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

// minObsShare bounds below the share of an observation's time its invocations are taken
// to explain: a measurement (nearly) all fixed cost says little of the per-invocation cost.
const minObsShare = 0.05

// fixedOf is mk's fixed cost: its own intercept when it was observed at two amounts of
// work, else its family's (Fixed).
func (m *MicroCostModel) fixedOf(mk MicroKernel) float64 {
	if b, ok := intercept(m.obs[mk.ID()]); ok {
		return max(b, 0)
	}
	return m.Fixed(mk.Family)
}

// perInvObs is the per-invocation cost an observation gives with fixed cost fixed.
func perInvObs(o microObs, fixed float64) float64 {
	return max(o.ns-fixed, minObsShare*o.ns) / o.work
}

// obsWeight is the weight of an observation in the per-invocation estimate: the share of
// its time its invocations explain (at least minObsShare).
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
			s += w * math.Log(perInvObs(o, fixed)/p.perInv)
			n += w
		}
	}
	return math.Exp(s / (n + 1))
}

// nearWork is the bandwidth, in log work, of the kernel regression over a micro-kernel's
// observations: an observation at 4× (or a quarter of) the work weighs e^(−1/2) of one at
// the same work. The simulator's per-invocation cost drifts with the number of
// invocations (pipelining amortizes differently), so nearer observations say more.
var nearWork = math.Log(4)

// PerInvocation is the model's estimate of mk's per-invocation cost in ns where its Work is
// work (see the section above). NaN when mk has neither a prior nor an observation.
func (m *MicroCostModel) PerInvocation(mk MicroKernel, work float64) float64 {
	return m.perInvocation(mk, m.Fixed(mk.Family), work)
}

func (m *MicroCostModel) perInvocation(mk MicroKernel, fixed, work float64) float64 {
	id := mk.ID()
	obs := m.obs[id]
	if b, ok := intercept(obs); ok {
		fixed = max(b, 0)
	}
	if len(obs) == 0 {
		if p, ok := m.prior[id]; ok {
			return p.perInv * m.familyScale(mk.Family, fixed)
		}
		return math.NaN()
	}
	num, den := 0.0, 0.0
	for _, o := range obs {
		d := math.Log(o.work/work) / nearWork
		w := obsWeight(o, fixed) * math.Exp(-d*d/2)
		num += w * math.Log(perInvObs(o, fixed))
		den += w
	}
	if !(den > 0) { // every observation too far to weigh: their plain weighted mean
		for _, o := range obs {
			w := obsWeight(o, fixed)
			num += w * math.Log(perInvObs(o, fixed))
			den += w
		}
	}
	return math.Exp(num / den)
}

// MeasuredNear reports whether mk has an observation within a factor ratio of work.
func (m *MicroCostModel) MeasuredNear(mk MicroKernel, work, ratio float64) bool {
	for _, o := range m.obs[mk.ID()] {
		if o.work <= work*ratio && o.work*ratio >= work {
			return true
		}
	}
	return false
}

// Predict is the predicted time in ns of mk at a shape where its Work is work.
func (m *MicroCostModel) Predict(mk MicroKernel, work float64) float64 {
	f := m.fixedOf(mk)
	return f + m.perInvocation(mk, f, work)*work
}

// predictPlanned is the prediction for mk planned as p at some shape: Predict when the model
// knows mk, else from p's own analytical prior scaled by the family's correction.
func (m *MicroCostModel) predictPlanned(mk MicroKernel, p cost.Planned, work float64) float64 {
	f := m.fixedOf(mk)
	u := m.perInvocation(mk, f, work)
	if math.IsNaN(u) {
		u = max(p.Analytical()-m.launchNs, 1) / work * m.familyScale(mk.Family, f)
	}
	return f + u*work
}
