package bitserial

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"

	"gonum.org/v1/gonum/floats"

	"github.com/tpucost/tpucost/bitserial/mnist"
)

// PoolConfig sets the weight pool: P vectors (a power of two, 16–256) of Z weights (1–8,
// dividing the input channels of every pooled layer), k-means for at most KMeansIters
// Lloyd iterations, then TuneSteps Adam steps (learning rate TuneLR, batches of Batch
// training images) on the cross-entropy through the pooled weights, with the assignments
// fixed. Seed fixes both.
type PoolConfig struct {
	P, Z        int
	KMeansIters int
	TuneSteps   int
	TuneLR      float64
	Batch       int
	Seed        uint64
}

// CheckPool refuses a pool that cannot compress a: P not a power of two in 16..256, Z
// outside 1..8 (the table has 2^Z patterns per vector) or not dividing the input channels
// of layers 2–4.
func CheckPool(a Arch, p, z int) error {
	if p < 16 || p > 256 || bits.OnesCount(uint(p)) != 1 {
		return fmt.Errorf("bitserial: pool size %d: want a power of two from 16 to 256", p)
	}
	if z < 1 || z > 8 {
		return fmt.Errorf("bitserial: vector length z=%d: want 1 to 8 (the table holds 2^z patterns per pool vector)", z)
	}
	for i, l := range a.Layers()[1:] {
		if l.Cin%z != 0 {
			return fmt.Errorf("bitserial: vector length z=%d does not divide layer %d's %d input channels", z, i+2, l.Cin)
		}
	}
	return nil
}

// KMeans clusters the n = len(x)/dim points of x (row-major) into k centroids by
// k-means++ seeding then Lloyd's iterations (at most iters, stopping when no point moves).
// It is deterministic for a seed: ties go to the lower centroid, an emptied cluster takes
// the point farthest from its centroid.
func KMeans(x []float64, dim, k, iters int, seed uint64) (centroids []float64, assign []int) {
	n := len(x) / dim
	pt := func(i int) []float64 { return x[i*dim : (i+1)*dim] }
	r := rand.New(rand.NewPCG(seed, 0x6b6d65616e73))
	centroids = make([]float64, 0, k*dim)
	centroids = append(centroids, pt(r.IntN(n))...)
	d2 := make([]float64, n)
	for i := range d2 {
		d2[i] = math.Inf(1)
	}
	for c := 1; c < k; c++ {
		last := centroids[(c-1)*dim : c*dim]
		for i := range d2 {
			d := floats.Distance(pt(i), last, 2)
			d2[i] = min(d2[i], d*d)
		}
		total := floats.Sum(d2)
		pick := n - 1
		if total > 0 {
			u := r.Float64() * total
			for i, d := range d2 {
				if u -= d; u < 0 {
					pick = i
					break
				}
			}
		} else {
			pick = r.IntN(n)
		}
		centroids = append(centroids, pt(pick)...)
	}
	assign = make([]int, n)
	for i := range assign {
		assign[i] = -1
	}
	dist := make([]float64, n)
	counts := make([]float64, k)
	for it := 0; it < iters; it++ {
		moved := 0
		for i := 0; i < n; i++ {
			best, bd := 0, math.Inf(1)
			for c := 0; c < k; c++ {
				if d := floats.Distance(pt(i), centroids[c*dim:(c+1)*dim], 2); d < bd {
					best, bd = c, d
				}
			}
			if assign[i] != best {
				assign[i] = best
				moved++
			}
			dist[i] = bd
		}
		if moved == 0 && it > 0 {
			break
		}
		clear(centroids)
		clear(counts)
		for i, c := range assign {
			floats.Add(centroids[c*dim:(c+1)*dim], pt(i))
			counts[c]++
		}
		for c := 0; c < k; c++ {
			if counts[c] == 0 {
				far := floats.MaxIdx(dist)
				copy(centroids[c*dim:(c+1)*dim], pt(far))
				dist[far] = 0
				continue
			}
			floats.Scale(1/counts[c], centroids[c*dim:(c+1)*dim])
		}
	}
	return centroids, assign
}

// PoolResult is a compressed network and how it was made.
type PoolResult struct {
	Net *Net
	// Model is the float32 network with its layers 2–4 replaced by pooled weights, after
	// fine-tuning.
	Model *Model
	// KMeansMSE and TunedMSE are the mean squared error of the pooled weights against the
	// original ones (in the normalised units the pool lives in) after k-means and after
	// fine-tuning; LossBefore and LossAfter the mean training loss over the first and the
	// last tenth of the fine-tuning steps.
	KMeansMSE, TunedMSE   float64
	LossBefore, LossAfter float64
}

// BuildPool compresses m: every kernel of layers 2–4, divided by its layer's RMS weight
// (stored as the layer's scale, so one pool serves layers of different magnitudes), is
// cut into z-weight vectors along the input channels; k-means gives the pool and each
// vector's index; then the pool vectors (and the unpooled first layer and dense bias) are
// fine-tuned by gradient descent on the cross-entropy through the pooled weights, the
// assignments fixed: a pool vector's gradient is the sum of the gradients of the weights
// that use it, times their layer's scale. Finally the pool is quantized to int8 (one
// scale) and activation clips are calibrated on calib.
func BuildPool(m *Model, cfg PoolConfig, train, calib *mnist.Set, progress func(string)) (*PoolResult, error) {
	if err := CheckPool(m.Arch, cfg.P, cfg.Z); err != nil {
		return nil, err
	}
	z := cfg.Z
	ls := m.Arch.Layers()
	scale := make([]float64, len(ls))
	var x []float64
	for i := 1; i < len(ls); i++ {
		var ss float64
		for _, v := range m.Weights[i] {
			ss += float64(v) * float64(v)
		}
		scale[i] = math.Sqrt(ss / float64(len(m.Weights[i])))
		if scale[i] == 0 {
			scale[i] = 1
		}
		for _, v := range m.Weights[i] {
			x = append(x, float64(v)/scale[i])
		}
	}
	if len(x)/z < cfg.P {
		return nil, fmt.Errorf("bitserial: %d weight vectors, fewer than the pool's %d", len(x)/z, cfg.P)
	}
	cent, assign := KMeans(x, z, cfg.P, cfg.KMeansIters, cfg.Seed)
	pool := make([]float32, len(cent))
	for i, v := range cent {
		pool[i] = float32(v)
	}
	mse := func() float64 {
		var s float64
		for i, c := range assign {
			for j := 0; j < z; j++ {
				d := x[i*z+j] - float64(pool[c*z+j])
				s += d * d
			}
		}
		return s / float64(len(x))
	}
	res := &PoolResult{KMeansMSE: mse()}
	if progress != nil {
		progress(fmt.Sprintf("k-means: %d vectors of %d into a pool of %d, MSE %.4f", len(assign), z, cfg.P, res.KMeansMSE))
	}
	pm := m.clone()
	expand := func() {
		v := 0
		for i := 1; i < len(ls); i++ {
			w := pm.Weights[i]
			for j := 0; j < len(w); j += z {
				c := assign[v]
				for t := 0; t < z; t++ {
					w[j+t] = float32(scale[i]) * pool[c*z+t]
				}
				v++
			}
		}
	}
	expand()
	if cfg.TuneSteps > 0 {
		if err := tunePool(pm, pool, assign, scale, expand, cfg, train, res); err != nil {
			return nil, err
		}
		if progress != nil {
			progress(fmt.Sprintf("pool fine-tuning: %d steps, loss %.4f → %.4f", cfg.TuneSteps, res.LossBefore, res.LossAfter))
		}
	}
	res.TunedMSE = mse()
	res.Model = pm

	qpool, pscale := quantizeWeights(pool)
	n := &Net{Arch: m.Arch, Layers: ls, ActMax: calibrate(pm, calib), Bias: append([]float32(nil), pm.Bias...), Z: z, P: cfg.P, Pool: qpool}
	w0, s0 := quantizeWeights(pm.Weights[0])
	n.W, n.WScale = [][]int8{w0}, []float32{s0}
	n.Idx, n.Packed = [][]uint8{nil}, [][]byte{nil}
	bitsPer := bits.Len(uint(cfg.P)) - 1
	v := 0
	for i := 1; i < len(ls); i++ {
		cnt := ls[i].Weights() / z
		idx := make([]uint8, cnt)
		w := make([]int8, 0, ls[i].Weights())
		for j := range idx {
			idx[j] = uint8(assign[v])
			w = append(w, qpool[assign[v]*z:(assign[v]+1)*z]...)
			v++
		}
		n.Idx = append(n.Idx, idx)
		n.Packed = append(n.Packed, PackIndices(idx, bitsPer))
		n.W = append(n.W, w)
		n.WScale = append(n.WScale, float32(scale[i])*pscale)
	}
	res.Net = n
	return res, nil
}

// tunePool runs cfg.TuneSteps Adam steps on pool (and pm's first layer and bias), the
// assignments fixed; expand rewrites pm's pooled layers from pool.
func tunePool(pm *Model, pool []float32, assign []int, scale []float64, expand func(), cfg PoolConfig, train *mnist.Set, res *PoolResult) error {
	if train.N < cfg.Batch || cfg.Batch < 1 {
		return fmt.Errorf("bitserial: %d training images, fewer than a fine-tuning batch of %d", train.N, cfg.Batch)
	}
	gr, err := newGraph(pm.Arch, cfg.Batch, true)
	if err != nil {
		return err
	}
	z := cfg.Z
	gpool := make([]float32, len(pool))
	params := [][]float32{pool, pm.Weights[0], pm.Bias}
	opt := newAdam(cfg.TuneLR, params)
	r := rand.New(rand.NewPCG(cfg.Seed, 0x74756e65))
	perm := r.Perm(train.N)
	tenth := max(1, cfg.TuneSteps/10)
	pos := 0
	for st := 0; st < cfg.TuneSteps; st++ {
		if pos+cfg.Batch > len(perm) {
			perm, pos = r.Perm(train.N), 0
		}
		loss, grads, err := gr.gradients(pm, train, perm[pos:pos+cfg.Batch])
		if err != nil {
			return err
		}
		pos += cfg.Batch
		if st < tenth {
			res.LossBefore += float64(loss) / float64(tenth)
		}
		if st >= cfg.TuneSteps-tenth {
			res.LossAfter += float64(loss) / float64(tenth)
		}
		clear(gpool)
		v := 0
		for i := 1; i < len(grads)-1; i++ {
			g := grads[i]
			s := float32(scale[i])
			for j := 0; j < len(g); j += z {
				c := assign[v]
				for t := 0; t < z; t++ {
					gpool[c*z+t] += s * g[j+t]
				}
				v++
			}
		}
		opt.step(params, [][]float32{gpool, grads[0], grads[len(grads)-1]})
		expand()
	}
	return nil
}

// PackIndices packs idx, bits bits each (1..8), little-endian within and across bytes:
// index i occupies bits i·bits … i·bits+bits−1 of the stream.
func PackIndices(idx []uint8, bits int) []byte {
	out := make([]byte, (len(idx)*bits+7)/8)
	for i, v := range idx {
		for b := 0; b < bits; b++ {
			if v>>b&1 != 0 {
				p := i*bits + b
				out[p/8] |= 1 << (p % 8)
			}
		}
	}
	return out
}

// UnpackIndices is PackIndices' inverse for n indices.
func UnpackIndices(packed []byte, bits, n int) []uint8 {
	out := make([]uint8, n)
	for i := range out {
		for b := 0; b < bits; b++ {
			p := i*bits + b
			out[i] |= (packed[p/8] >> (p % 8) & 1) << b
		}
	}
	return out
}

// Storage is a network's stored bytes by kind: 8-bit weights, packed pool indices, the
// pool, scales (weight and activation scales, float32) and the dense bias (float32).
type Storage struct {
	Weights int `json:"weight_bytes"`
	Indices int `json:"index_bytes"`
	Pool    int `json:"pool_bytes"`
	Scales  int `json:"scale_bytes"`
	Bias    int `json:"bias_bytes"`
	Total   int `json:"total_bytes"`
}

// Storage counts the bytes n stores: a pool network stores its first layer's 8-bit
// weights, the packed indices, the int8 pool and its scale; an 8-bit network every layer's
// weights. Both store a weight scale per layer, an activation clip per pooled-layer input
// and the bias.
func (n *Net) Storage() Storage {
	var s Storage
	s.Scales = 4 * (len(n.WScale) + len(n.ActMax) - 1)
	s.Bias = 4 * len(n.Bias)
	for i, w := range n.W {
		if n.Pool != nil && i > 0 {
			s.Indices += len(n.Packed[i])
			continue
		}
		s.Weights += len(w)
	}
	if n.Pool != nil {
		s.Pool = len(n.Pool)
		s.Scales += 4
	}
	s.Total = s.Weights + s.Indices + s.Pool + s.Scales + s.Bias
	return s
}
