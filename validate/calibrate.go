package validate

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"gonum.org/v1/gonum/optimize"

	"github.com/tpucost/tpucost/tpusim"
)

// CalibrateOptions configure Calibrate.
type CalibrateOptions struct {
	Base tpusim.Chip // the preset whose constants are fitted
	Name string      // the fitted preset's name (default: Base's name + "-calibrated")
	// Seed splits the scored kernels into a fit half and a held-out half.
	Seed int64
	// MinConfigs: only kernels with this many replayed runs take part (0:
	// DefaultMinConfigs).
	MinConfigs int
	// MaxEvals bounds the optimizer's loss evaluations (0: DefaultMaxEvals).
	MaxEvals int
	// Prior weighs the pull of each constant toward the preset's value (0: none; the
	// command line's default is PriorWeight).
	Prior float64
}

// PriorWeight weighs the calibration's pull of each constant toward the preset's value
// (the squared log ratio): a constant doubled costs about 0.001, a few percent of the
// loss on the real files (0.03 to 0.05), so only a clear gain on the fit kernels moves a
// constant far, and the constants the data does not identify stay where they were.
const PriorWeight = 0.002

// DefaultMaxEvals bounds a calibration's loss evaluations: Nelder–Mead over the 11
// constants settles within about a thousand on the real files (a few seconds).
const DefaultMaxEvals = 3000

// Split is a set of kernels and the predictors' scores on it before and after the fit.
type Split struct {
	Kernels []string `json:"kernels"`
	Before  Scores   `json:"before"`
	After   Scores   `json:"after"`
}

// Sensitivity tells whether the data identifies a constant: how much the loss on the fit
// kernels grows when the fitted constant alone is halved or doubled (within its bound),
// as a fraction of the loss before the fit.
type Sensitivity struct {
	Name         string  `json:"name"`
	Before       float64 `json:"before"`
	After        float64 `json:"after"`
	LossIncrease float64 `json:"loss_increase"` // max over the two probes of (loss − fitted loss) / loss before
	Identified   bool    `json:"identified"`    // LossIncrease ≥ IdentifiedIncrease
}

// IdentifiedIncrease is the loss increase from halving or doubling a constant, as a
// fraction of the loss before the fit, above which the data is said to identify it: 1%
// is well above the optimizer's tolerance and well below what the identified constants
// show on the real files.
const IdentifiedIncrease = 0.01

// CalibrateReport is what Calibrate did.
type CalibrateReport struct {
	Base        string        `json:"base"`
	Name        string        `json:"name"`
	Seed        int64         `json:"seed"`
	Evaluations int           `json:"evaluations"`
	LossBefore  float64       `json:"loss_before"`
	LossAfter   float64       `json:"loss_after"`
	Fit         Split         `json:"fit"`
	Heldout     Split         `json:"heldout"`
	Constants   []Sensitivity `json:"constants"`
	// File is the chip file of the fitted preset (tpusim.WriteChipFile writes it).
	File tpusim.ChipFile `json:"-"`
}

// Calibrate fits the base preset's non-public constants (tpusim.Constants, within
// tpusim.ConstantBounds) to the tile runs of the tuning files, on a seeded half of the
// scored kernels, and reports the fidelity on both halves before and after.
func Calibrate(files []string, o CalibrateOptions) (*CalibrateReport, error) {
	r, err := Validate(files, Options{Chip: o.Base, MinConfigs: o.MinConfigs})
	if err != nil {
		return nil, err
	}
	if r.Tile == nil {
		return nil, errors.New("no tile runs to calibrate on")
	}
	rep, err := CalibrateKernels(r.Tile.Replayed, o)
	if err != nil {
		return nil, err
	}
	if rep.File.Calibration != nil {
		rep.File.Calibration.Files = files
	}
	return rep, nil
}

// CalibrateKernels is Calibrate on replayed kernels (their measured times are the
// targets).
//
// The loss, per kernel, is the variance of log(sim) − log(measured) over its runs (a
// scale-free error: zero when the simulator is off by one factor) plus a pairwise rank
// loss (kernelLoss); kernels weigh equally; a weak prior (o.Prior) holds each constant
// near the preset's. Nelder–Mead (gonum/optimize) minimizes it over each constant mapped
// into its bound through a logistic, starting from the base preset.
func CalibrateKernels(ks []TileKernel, o CalibrateOptions) (*CalibrateReport, error) {
	if o.MinConfigs == 0 {
		o.MinConfigs = DefaultMinConfigs
	}
	if o.MaxEvals == 0 {
		o.MaxEvals = DefaultMaxEvals
	}
	if o.Name == "" {
		o.Name = o.Base.Name + "-calibrated"
	}
	var scored []TileKernel
	for _, k := range ks {
		if len(k.Runs) >= o.MinConfigs {
			scored = append(scored, k)
		}
	}
	if o.Prior < 0 || math.IsNaN(o.Prior) {
		return nil, fmt.Errorf("prior weight must be >= 0, got %g", o.Prior)
	}
	if len(scored) < 2 {
		return nil, fmt.Errorf("calibration needs at least 2 kernels with >= %d runs, got %d", o.MinConfigs, len(scored))
	}
	sort.Slice(scored, func(i, j int) bool { return scored[i].Name < scored[j].Name })
	rng := rand.New(rand.NewPCG(uint64(o.Seed), 0x63616c6962726174))
	rng.Shuffle(len(scored), func(i, j int) { scored[i], scored[j] = scored[j], scored[i] })
	nfit := (len(scored) + 1) / 2
	fit, held := scored[:nfit], scored[nfit:]

	bounds := tpusim.ConstantBounds()
	x0 := o.Base.Constants().Vector()
	toU := func(x []float64) []float64 {
		u := make([]float64, len(x))
		for i, v := range x {
			b := bounds[i]
			p := math.Min(math.Max((v-b.Lo)/(b.Hi-b.Lo), 1e-6), 1-1e-6)
			u[i] = math.Log(p / (1 - p))
		}
		return u
	}
	toX := func(u []float64) []float64 {
		x := make([]float64, len(u))
		for i, v := range u {
			b := bounds[i]
			x[i] = b.Lo + (b.Hi-b.Lo)/(1+math.Exp(-v))
		}
		return x
	}
	chipOf := func(x []float64) tpusim.Chip { return o.Base.WithConstants(tpusim.ConstantsFromVector(x)) }
	data := map[string]lossData{}
	for _, k := range scored {
		data[k.Name] = newLossData(k.Runs)
	}
	loss := func(x []float64, set []TileKernel) float64 {
		c := chipOf(x)
		l := 0.0
		for _, k := range set {
			sim, err := k.Resimulate(c)
			if err != nil {
				return math.Inf(1)
			}
			l += kernelLoss(sim, data[k.Name])
		}
		return l / float64(len(set))
	}
	// The prior keeps each constant near the preset's unless the data moves it: a
	// constant doubled adds Prior·ln(2)².
	prior := func(x []float64) float64 {
		r := 0.0
		for i, v := range x {
			if x0[i] > 0 && v > 0 {
				d := math.Log(v / x0[i])
				r += d * d
			}
		}
		return o.Prior * r
	}
	evals := 0
	p := optimize.Problem{Func: func(u []float64) float64 { evals++; x := toX(u); return loss(x, fit) + prior(x) }}
	u0 := toU(x0)
	res, err := optimize.Minimize(p, u0, &optimize.Settings{
		FuncEvaluations: o.MaxEvals,
		Converger:       &optimize.FunctionConverge{Absolute: 1e-7, Relative: 1e-6, Iterations: 200},
	}, &optimize.NelderMead{})
	if err != nil && res == nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	xb := toX(res.X)
	// Keep the start where the fit did not improve.
	if loss(xb, fit)+prior(xb) >= loss(x0, fit) {
		xb = slices.Clone(x0)
	}
	rep := &CalibrateReport{Base: o.Base.Name, Name: o.Name, Seed: o.Seed, Evaluations: evals,
		LossBefore: loss(x0, fit), LossAfter: loss(xb, fit)}
	after := chipOf(xb)
	for _, sp := range []struct {
		dst *Split
		set []TileKernel
	}{{&rep.Fit, fit}, {&rep.Heldout, held}} {
		for _, k := range sp.set {
			sp.dst.Kernels = append(sp.dst.Kernels, k.Name)
		}
		if sp.dst.Before, err = scoreOn(sp.set, o.Base); err != nil {
			return nil, err
		}
		if sp.dst.After, err = scoreOn(sp.set, after); err != nil {
			return nil, err
		}
	}
	for i, b := range bounds {
		s := Sensitivity{Name: b.Name, Before: x0[i], After: xb[i]}
		for _, f := range []float64{0.5, 2} {
			x := slices.Clone(xb)
			x[i] = math.Min(math.Max(xb[i]*f, b.Lo), b.Hi)
			if rep.LossBefore > 0 {
				s.LossIncrease = math.Max(s.LossIncrease, (loss(x, fit)-rep.LossAfter)/rep.LossBefore)
			}
		}
		s.Identified = s.LossIncrease >= IdentifiedIncrease
		rep.Constants = append(rep.Constants, s)
	}
	rep.File = tpusim.ChipFile{Name: o.Name, Base: o.Base.Base, Constants: tpusim.ConstantsFromVector(xb),
		Calibration: &tpusim.CalibrationInfo{Seed: o.Seed, FitKernels: rep.Fit.Kernels, HeldoutKernels: rep.Heldout.Kernels, Simulator: tpusim.Version}}
	return rep, nil
}

// RankMargin is the measured difference (in log units, about 2%) below which a pair of
// runs does not count in the calibration's rank loss: run-to-run noise on these files is
// about 1% (identical configurations of fusion.232 measured 57,188 and 57,204 ns, of
// copy.25 7,310 and 7,591).
const RankMargin = 0.02

// lossData is what kernelLoss needs of a kernel, computed once: the log measurements
// and the pairs measured more than RankMargin apart, faster run first.
type lossData struct {
	logM  []float64
	pairs [][2]int32
}

func newLossData(runs []TileRun) lossData {
	d := lossData{logM: make([]float64, len(runs))}
	for i, r := range runs {
		d.logM[i] = math.Log(r.MeasuredNs)
	}
	for i := range runs {
		for j := i + 1; j < len(runs); j++ {
			switch dm := d.logM[i] - d.logM[j]; {
			case dm <= -RankMargin:
				d.pairs = append(d.pairs, [2]int32{int32(i), int32(j)})
			case dm >= RankMargin:
				d.pairs = append(d.pairs, [2]int32{int32(j), int32(i)})
			}
		}
	}
	return d
}

// kernelLoss is one kernel's calibration loss (see CalibrateKernels): the variance of
// the log residuals plus the mean over the pairs measured more than RankMargin apart of
// the squared misordering in log units (zero for a pair the simulator orders right). A
// simulator that is off by one factor per kernel has loss 0.
func kernelLoss(sim []float64, d lossData) float64 {
	n := len(sim)
	logS := make([]float64, n)
	mean := 0.0
	for i, s := range sim {
		logS[i] = math.Log(s)
		mean += logS[i] - d.logM[i]
	}
	mean /= float64(n)
	v := 0.0
	for i := range sim {
		x := logS[i] - d.logM[i] - mean
		v += x * x
	}
	v /= float64(n)
	rank := 0.0
	for _, p := range d.pairs {
		// p[0] was measured faster: the simulator should say so.
		if ds := logS[p[1]] - logS[p[0]]; ds < 0 {
			rank += ds * ds
		}
	}
	if len(d.pairs) > 0 {
		rank /= float64(len(d.pairs))
	}
	return v + rank
}

// scoreOn scores the simulator on chip c over kernels ks.
func scoreOn(ks []TileKernel, c tpusim.Chip) (Scores, error) {
	var gs []Group
	var pred [][]float64
	for _, k := range ks {
		sim, err := k.Resimulate(c)
		if err != nil {
			return Scores{}, err
		}
		g, _, _ := columns(k.Name, k.Runs)
		gs = append(gs, g)
		pred = append(pred, sim)
	}
	return Score(gs, pred)
}

// Resimulate times k's replayed runs on chip c (the mapping is c-independent: only the
// timing changes). Runs keep their plans (TileRun.planned); a plan is redone only when c's
// target differs from the replay's in more than timing constants.
func (k TileKernel) Resimulate(c tpusim.Chip) ([]float64, error) {
	out := make([]float64, len(k.Runs))
	for i, r := range k.Runs {
		p := r.planned
		if p.Info == nil {
			return nil, fmt.Errorf("%s run %d: not replayed", k.Name, r.Index)
		}
		kt, err := tpusim.SimulateChoice(p, c)
		if err != nil {
			return nil, fmt.Errorf("%s run %d: %w", k.Name, r.Index, err)
		}
		out[i] = kt.Ns
	}
	return out, nil
}
