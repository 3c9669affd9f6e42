package tune

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"gonum.org/v1/gonum/mat"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/features"
)

// Model-based optimization parameters.
const (
	mboMembers     = 5   // ridge models in the ensemble
	mboKappa       = 1.0 // acquisition = mean - kappa * std (in log ns)
	mboGenerations = 4   // evolutionary generations on the acquisition per step
	mboOffspring   = 24  // children per generation
)

// featurizer computes candidate features with package features and caches the per-kernel
// parts by kernel key (and tile and flags). Safe for concurrent use.
type featurizer struct {
	cc     *compilerCtx
	mu     sync.Mutex
	kernel map[string][]float32
	config map[string][]float32
}

func newFeaturizer(cc *compilerCtx) *featurizer {
	return &featurizer{cc: cc, kernel: map[string][]float32{}, config: map[string][]float32{}}
}

// program returns the program-level features of p: the sums over its kernels of the
// kernel features and of the config features (features.Config of each kernel's planned
// choice), and log2(1 + number of kernels).
func (f *featurizer) program(p *compiler.Program) ([]float64, error) {
	out := make([]float64, features.KernelWidth+features.ConfigWidth+1)
	t := f.cc.opts.Target
	for _, k := range p.Kernels {
		f.mu.Lock()
		kf, ok := f.kernel[k.Key]
		f.mu.Unlock()
		if !ok {
			kf = features.OfKernel(k, t).KernelFeats
			f.mu.Lock()
			f.kernel[k.Key] = kf
			f.mu.Unlock()
		}
		id := k.Choice.ID()
		f.mu.Lock()
		cf, ok := f.config[id]
		f.mu.Unlock()
		if !ok {
			cf = features.Config(k.Choice)
			f.mu.Lock()
			f.config[id] = cf
			f.mu.Unlock()
		}
		for i, v := range kf {
			out[i] += float64(v)
		}
		for i, v := range cf {
			out[features.KernelWidth+i] += float64(v)
		}
	}
	out[len(out)-1] = math.Log2(1 + float64(len(p.Kernels)))
	return out, nil
}

// ridge is a ridge regression on standardized features.
type ridge struct {
	mean, scale []float64
	beta        []float64
	y0          float64
}

// fitRidge fits y ~ X with L2 penalty lambda on the standardized columns (constant
// columns are dropped by a zero scale).
func fitRidge(X [][]float64, y []float64, lambda float64) (*ridge, error) {
	n, d := len(X), len(X[0])
	r := &ridge{mean: make([]float64, d), scale: make([]float64, d)}
	for _, row := range X {
		for j, v := range row {
			r.mean[j] += v / float64(n)
		}
	}
	for _, row := range X {
		for j, v := range row {
			r.scale[j] += (v - r.mean[j]) * (v - r.mean[j]) / float64(n)
		}
	}
	for j := range r.scale {
		if s := math.Sqrt(r.scale[j]); s > 1e-9 {
			r.scale[j] = 1 / s
		} else {
			r.scale[j] = 0
		}
	}
	for _, v := range y {
		r.y0 += v / float64(n)
	}
	A := mat.NewDense(n, d, nil)
	b := mat.NewVecDense(n, nil)
	for i, row := range X {
		for j, v := range row {
			A.Set(i, j, (v-r.mean[j])*r.scale[j])
		}
		b.SetVec(i, y[i]-r.y0)
	}
	var ata mat.SymDense
	ata.SymOuterK(1, A.T())
	for j := 0; j < d; j++ {
		ata.SetSym(j, j, ata.At(j, j)+lambda)
	}
	var atb mat.VecDense
	atb.MulVec(A.T(), b)
	var chol mat.Cholesky
	if ok := chol.Factorize(&ata); !ok {
		return nil, fmt.Errorf("ridge regression: normal equations are not positive definite")
	}
	var beta mat.VecDense
	if err := chol.SolveVecTo(&beta, &atb); err != nil {
		return nil, fmt.Errorf("ridge regression: %w", err)
	}
	r.beta = beta.RawVector().Data
	return r, nil
}

func (r *ridge) predict(x []float64) float64 {
	v := r.y0
	for j, xv := range x {
		v += (xv - r.mean[j]) * r.scale[j] * r.beta[j]
	}
	return v
}

// ensemble is the surrogate of model-based optimization: ridge models on bootstrap
// resamples with penalties spread over four decades, plus, when a learned model is
// given, that model calibrated to the measurements (a 1-D ridge of log measured on log
// predicted). It predicts log ns.
type ensemble struct {
	members []*ridge
	model   *ridge // on [log model prediction]; nil without a model
}

func fitEnsemble(rng *rand.Rand, X [][]float64, y []float64, modelX []float64) (*ensemble, error) {
	e := &ensemble{}
	n := len(X)
	for m := 0; m < mboMembers; m++ {
		lambda := math.Pow(10, float64(m)-2) * float64(n)
		bx, by := X, y
		if m > 0 { // member 0 sees all the data; the others a bootstrap resample
			bx, by = make([][]float64, n), make([]float64, n)
			for i := range bx {
				j := rng.IntN(n)
				bx[i], by[i] = X[j], y[j]
			}
		}
		r, err := fitRidge(bx, by, lambda)
		if err != nil {
			return nil, err
		}
		e.members = append(e.members, r)
	}
	if modelX != nil {
		mx := make([][]float64, n)
		for i, v := range modelX {
			mx[i] = []float64{v}
		}
		r, err := fitRidge(mx, y, 1e-3*float64(n))
		if err != nil {
			return nil, err
		}
		e.model = r
	}
	return e, nil
}

// predict returns the ensemble's mean and standard deviation of log ns.
func (e *ensemble) predict(x []float64, modelX float64) (mean, std float64) {
	var ps []float64
	for _, m := range e.members {
		ps = append(ps, m.predict(x))
	}
	if e.model != nil {
		ps = append(ps, e.model.predict([]float64{modelX}))
	}
	for _, p := range ps {
		mean += p / float64(len(ps))
	}
	for _, p := range ps {
		std += (p - mean) * (p - mean) / float64(len(ps))
	}
	return mean, math.Sqrt(std)
}

// mbo is model-based optimization: an initial design (the incumbent and mutants), then
// steps that fit the surrogate ensemble to every measurement so far, run a short
// evolutionary search on the acquisition (ensemble mean - kappa * std of log time,
// lower is better) from the best measured programs, and measure the batch of unmeasured
// programs with the best acquisition.
func (s *search) mbo(ctx context.Context) error {
	feat := newFeaturizer(s.r.cc)
	_, useModel := s.ev.(*simEval)
	useModel = useModel && s.r.graphModel != nil
	init := max(s.batch, min(evoPopulation, s.ev.limit()/4))
	pop, err := s.initialPopulation(ctx, init)
	if err != nil {
		return err
	}
	measured := slices.Clone(pop)
	seen := map[string]bool{}
	for _, c := range measured {
		seen[c.fp] = true
	}
	type scored struct {
		c   *candidate
		x   []float64
		mx  float64
		acq float64
	}
	describe := func(cands []*candidate) ([]scored, error) {
		out := make([]scored, len(cands))
		err := parallel(ctx, s.r.workers, len(cands), func(i int) error {
			c := cands[i]
			if c.feats == nil {
				x, err := feat.program(c.prog)
				if err != nil {
					return err
				}
				c.feats = x
			}
			out[i] = scored{c: c, x: c.feats}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if useModel {
			for i := range out {
				v, err := s.r.graphModel.program(out[i].c.prog)
				if err != nil {
					return nil, err
				}
				out[i].mx = math.Log(math.Max(v, 1e-9))
			}
		}
		return out, nil
	}
	for !s.done() {
		ms, err := describe(measured)
		if err != nil {
			return err
		}
		X := make([][]float64, len(ms))
		y := make([]float64, len(ms))
		var mxs []float64
		for i, m := range ms {
			X[i], y[i] = m.x, math.Log(m.c.value)
			if useModel {
				mxs = append(mxs, m.mx)
			}
		}
		ens, err := fitEnsemble(s.rng, X, y, mxs)
		if err != nil {
			return err
		}
		acquire := func(ss []scored) {
			for i := range ss {
				mean, std := ens.predict(ss[i].x, ss[i].mx)
				ss[i].acq = mean - mboKappa*std
			}
		}
		byAcq := func(ss []scored) {
			slices.SortStableFunc(ss, func(a, b scored) int { return cmpFloat(a.acq, b.acq) })
		}
		apop, err := describe(survivors(measured, evoPopulation))
		if err != nil {
			return err
		}
		acquire(apop)
		byAcq(apop)
		var pool []scored
		inPool := map[string]bool{}
		for g := 0; g < mboGenerations; g++ {
			parents := make([]*candidate, len(apop))
			for i := range apop {
				parents[i] = apop[i].c
			}
			kids, err := s.offspring(ctx, mboOffspring, parents)
			if err != nil {
				return err
			}
			ks, err := describe(kids)
			if err != nil {
				return err
			}
			acquire(ks)
			for _, k := range ks {
				if !seen[k.c.fp] && !inPool[k.c.fp] {
					inPool[k.c.fp] = true
					pool = append(pool, k)
				}
			}
			all := append(slices.Clone(apop), ks...)
			byAcq(all)
			apop = apop[:0]
			dup := map[string]bool{}
			for _, a := range all {
				if !dup[a.c.fp] && len(apop) < evoPopulation {
					dup[a.c.fp] = true
					apop = append(apop, a)
				}
			}
		}
		byAcq(pool)
		var pick []*candidate
		for _, p := range pool {
			if len(pick) == s.next() {
				break
			}
			pick = append(pick, p.c)
		}
		if len(pick) == 0 {
			s.stall++
			continue
		}
		got, err := s.evaluate(ctx, pick)
		if err != nil {
			return err
		}
		for _, c := range got {
			if !seen[c.fp] {
				seen[c.fp] = true
				measured = append(measured, c)
			}
		}
	}
	return nil
}
