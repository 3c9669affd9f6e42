// Package bitserial compresses a small MNIST convolutional network with one shared pool
// of weight vectors and runs it with bit-serial lookup-table kernels at any activation
// precision b in 1..8, after "Bit-serial Weight Pools" (Li and Gupta, MLSys 2022).
//
// The network is trained in Gorgonia on float32 (net.go), quantized to 8 bits (int8
// weights, unsigned 8-bit activations after ReLU, per-layer scales, int32 accumulators;
// quant.go), and compressed to a weight pool (pool.go). Three single-threaded integer
// kernels run it (kernel.go): the 8-bit baseline, an 8-bit weight-pool kernel that gathers
// pool vectors and multiplies, and the bit-serial LUT kernel, whose accumulators equal the
// pool kernel's bit for bit. Run (run.go) trains, compresses, evaluates and times them.
package bitserial

import (
	"fmt"
	"math"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/tpucost/tpucost/bitserial/mnist"
)

// Side is the side of an MNIST image in pixels.
const Side = 28

// Classes is the number of digits.
const Classes = 10

// Arch is the network: three 3×3 convolutions with ReLU (the first two stride 2, all
// padded by 1: 28×28×1 → 14×14×C1 → 7×7×C2 → 7×7×C3) and a dense layer from the
// 7×7×C3 map to the 10 digits. There are no convolution biases; the dense layer has one.
type Arch struct {
	C1, C2, C3 int
}

// DefaultArch is a microcontroller-scale network: 29,648 weights, 0.72 M multiply-adds
// per image.
var DefaultArch = Arch{C1: 16, C2: 32, C3: 32}

// Layer describes one layer as the integer kernels see it: a convolution over an H×W×Cin
// map (channels innermost), K×K kernels, Stride, Pad, giving OH×OW×Cout. The dense layer
// is a convolution whose kernel covers its whole 7×7 input.
type Layer struct {
	H, W, Cin, Cout, K, Stride, Pad int
}

// OH is the output height.
func (l Layer) OH() int { return (l.H+2*l.Pad-l.K)/l.Stride + 1 }

// OW is the output width.
func (l Layer) OW() int { return (l.W+2*l.Pad-l.K)/l.Stride + 1 }

// Weights is the layer's weight count: Cout·K·K·Cin.
func (l Layer) Weights() int { return l.Cout * l.K * l.K * l.Cin }

// MACs is the layer's multiply-adds per image.
func (l Layer) MACs() int { return l.OH() * l.OW() * l.Weights() }

// Layers returns the four layers of a.
func (a Arch) Layers() []Layer {
	return []Layer{
		{H: Side, W: Side, Cin: 1, Cout: a.C1, K: 3, Stride: 2, Pad: 1},
		{H: 14, W: 14, Cin: a.C1, Cout: a.C2, K: 3, Stride: 2, Pad: 1},
		{H: 7, W: 7, Cin: a.C2, Cout: a.C3, K: 3, Stride: 1, Pad: 1},
		{H: 7, W: 7, Cin: a.C3, Cout: Classes, K: 7, Stride: 1, Pad: 0},
	}
}

// Check refuses an architecture without positive channel counts.
func (a Arch) Check() error {
	if a.C1 < 1 || a.C2 < 1 || a.C3 < 1 {
		return fmt.Errorf("bitserial: channels %d, %d, %d: want positive counts", a.C1, a.C2, a.C3)
	}
	return nil
}

// Model is a float32 network of Arch. Weights[i] is layer i's kernel in the integer
// kernels' layout, [Cout][K][K][Cin] row-major (so a run of Cin along the input channels
// is contiguous: the vectors the pool is made of); Bias is the dense layer's.
type Model struct {
	Arch    Arch
	Weights [][]float32
	Bias    []float32
}

// newModel initialises a Model with He-normal weights from seed.
func newModel(a Arch, seed uint64) *Model {
	r := rand.New(rand.NewPCG(seed, 0x6269747365726961))
	m := &Model{Arch: a, Bias: make([]float32, Classes)}
	for _, l := range a.Layers() {
		w := make([]float32, l.Weights())
		std := math.Sqrt(2 / float64(l.K*l.K*l.Cin))
		for i := range w {
			w[i] = float32(r.NormFloat64() * std)
		}
		m.Weights = append(m.Weights, w)
	}
	return m
}

// clone is a deep copy of m.
func (m *Model) clone() *Model {
	c := &Model{Arch: m.Arch, Bias: append([]float32(nil), m.Bias...)}
	for _, w := range m.Weights {
		c.Weights = append(c.Weights, append([]float32(nil), w...))
	}
	return c
}

// toGorgonia writes layer i's weights (ours: [Cout][K][K][Cin]) in Gorgonia's layout:
// a convolution filter (Cout, Cin, K, K); the dense layer a (C3·7·7, 10) matrix whose rows
// follow Gorgonia's (C, H, W) flattening.
func toGorgonia(l Layer, dense bool, ours, dst []float32) {
	for o := 0; o < l.Cout; o++ {
		for y := 0; y < l.K; y++ {
			for x := 0; x < l.K; x++ {
				for c := 0; c < l.Cin; c++ {
					v := ours[((o*l.K+y)*l.K+x)*l.Cin+c]
					if dense {
						dst[((c*l.K+y)*l.K+x)*l.Cout+o] = v
					} else {
						dst[((o*l.Cin+c)*l.K+y)*l.K+x] = v
					}
				}
			}
		}
	}
}

// fromGorgonia is toGorgonia's inverse.
func fromGorgonia(l Layer, dense bool, g, dst []float32) {
	for o := 0; o < l.Cout; o++ {
		for y := 0; y < l.K; y++ {
			for x := 0; x < l.K; x++ {
				for c := 0; c < l.Cin; c++ {
					i := ((o*l.K+y)*l.K+x)*l.Cin + c
					if dense {
						dst[i] = g[((c*l.K+y)*l.K+x)*l.Cout+o]
					} else {
						dst[i] = g[((o*l.Cin+c)*l.K+y)*l.K+x]
					}
				}
			}
		}
	}
}

// graph is the network as a Gorgonia expression graph of a fixed batch size: with
// gradients of the mean cross-entropy for training, or logits only for evaluation.
type graph struct {
	arch   Arch
	layers []Layer
	batch  int
	g      *G.ExprGraph
	x, y   *G.Node
	params []*G.Node // the four kernels, then the dense bias
	logits *G.Node
	loss   *G.Node
	vm     G.VM
}

// newGraph builds the graph; withGrad adds the loss and its gradients.
func newGraph(a Arch, batch int, withGrad bool) (*graph, error) {
	gr := &graph{arch: a, layers: a.Layers(), batch: batch, g: G.NewGraph()}
	g := gr.g
	gr.x = G.NewTensor(g, tensor.Float32, 4, G.WithShape(batch, 1, Side, Side), G.WithName("x"))
	var shapes []tensor.Shape
	for i, l := range gr.layers {
		if i == 3 {
			shapes = append(shapes, tensor.Shape{l.Cin * l.K * l.K, l.Cout})
		} else {
			shapes = append(shapes, tensor.Shape{l.Cout, l.Cin, l.K, l.K})
		}
	}
	for i, s := range shapes {
		gr.params = append(gr.params, G.NewTensor(g, tensor.Float32, len(s), G.WithShape(s...), G.WithName(fmt.Sprintf("w%d", i)), G.WithInit(G.Zeroes())))
	}
	bias := G.NewMatrix(g, tensor.Float32, G.WithShape(1, Classes), G.WithName("bias"), G.WithInit(G.Zeroes()))
	gr.params = append(gr.params, bias)
	h := gr.x
	var err error
	for i := 0; i < 3; i++ {
		l := gr.layers[i]
		if h, err = G.Conv2d(h, gr.params[i], tensor.Shape{l.K, l.K}, []int{l.Pad, l.Pad}, []int{l.Stride, l.Stride}, []int{1, 1}); err != nil {
			return nil, fmt.Errorf("bitserial: building conv %d: %w", i+1, err)
		}
		if h, err = G.Rectify(h); err != nil {
			return nil, fmt.Errorf("bitserial: building relu %d: %w", i+1, err)
		}
	}
	if h, err = G.Reshape(h, tensor.Shape{batch, a.C3 * 49}); err != nil {
		return nil, fmt.Errorf("bitserial: building flatten: %w", err)
	}
	if h, err = G.Mul(h, gr.params[3]); err != nil {
		return nil, fmt.Errorf("bitserial: building dense: %w", err)
	}
	if h, err = G.BroadcastAdd(h, bias, nil, []byte{0}); err != nil {
		return nil, fmt.Errorf("bitserial: building bias: %w", err)
	}
	gr.logits = h
	if !withGrad {
		gr.vm = G.NewTapeMachine(g)
		return gr, nil
	}
	gr.y = G.NewMatrix(g, tensor.Float32, G.WithShape(batch, Classes), G.WithName("y"))
	// Mean cross-entropy through a stable log-softmax: logits − max − log Σ exp.
	mx, err := G.Max(h, 1)
	if err != nil {
		return nil, fmt.Errorf("bitserial: building loss: %w", err)
	}
	sh, err := G.BroadcastSub(h, mx, nil, []byte{1})
	if err != nil {
		return nil, fmt.Errorf("bitserial: building loss: %w", err)
	}
	ex, err := G.Exp(sh)
	if err == nil {
		var s *G.Node
		if s, err = G.Sum(ex, 1); err == nil {
			var ls *G.Node
			if ls, err = G.Log(s); err == nil {
				var lsm *G.Node
				if lsm, err = G.BroadcastSub(sh, ls, nil, []byte{1}); err == nil {
					var p *G.Node
					if p, err = G.HadamardProd(lsm, gr.y); err == nil {
						var tot *G.Node
						if tot, err = G.Sum(p); err == nil {
							gr.loss, err = G.Mul(tot, G.NewConstant(float32(-1)/float32(batch)))
						}
					}
				}
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("bitserial: building loss: %w", err)
	}
	if _, err := G.Grad(gr.loss, gr.params...); err != nil {
		return nil, fmt.Errorf("bitserial: building gradients: %w", err)
	}
	gr.vm = G.NewTapeMachine(g, G.BindDualValues(gr.params...))
	return gr, nil
}

// load copies m's weights into the graph's parameters.
func (gr *graph) load(m *Model) {
	for i, l := range gr.layers {
		toGorgonia(l, i == 3, m.Weights[i], gr.params[i].Value().Data().([]float32))
	}
	copy(gr.params[4].Value().Data().([]float32), m.Bias)
}

// setBatch fills x (pixels/255) with images idx of s, and y (one-hot) when training.
func (gr *graph) setBatch(s *mnist.Set, idx []int) error {
	xs := make([]float32, gr.batch*Side*Side)
	for b, i := range idx {
		for p, v := range s.Image(i) {
			xs[b*Side*Side+p] = float32(v) / 255
		}
	}
	if err := G.Let(gr.x, tensor.New(tensor.WithShape(gr.batch, 1, Side, Side), tensor.WithBacking(xs))); err != nil {
		return fmt.Errorf("bitserial: %w", err)
	}
	if gr.y == nil {
		return nil
	}
	ys := make([]float32, gr.batch*Classes)
	for b, i := range idx {
		ys[b*Classes+int(s.Labels[i])] = 1
	}
	if err := G.Let(gr.y, tensor.New(tensor.WithShape(gr.batch, Classes), tensor.WithBacking(ys))); err != nil {
		return fmt.Errorf("bitserial: %w", err)
	}
	return nil
}

// gradients runs one forward and backward pass on images idx of s and returns the loss
// and the gradient of every weight of m in m's layout (then the bias).
func (gr *graph) gradients(m *Model, s *mnist.Set, idx []int) (float32, [][]float32, error) {
	gr.load(m)
	if err := gr.setBatch(s, idx); err != nil {
		return 0, nil, err
	}
	defer gr.vm.Reset()
	if err := gr.vm.RunAll(); err != nil {
		return 0, nil, fmt.Errorf("bitserial: training step: %w", err)
	}
	grads := make([][]float32, 0, 5)
	for i, l := range gr.layers {
		gv, err := gr.params[i].Grad()
		if err != nil {
			return 0, nil, fmt.Errorf("bitserial: gradient of layer %d: %w", i+1, err)
		}
		d := make([]float32, l.Weights())
		fromGorgonia(l, i == 3, gv.Data().([]float32), d)
		grads = append(grads, d)
		zeroGrad(gv)
	}
	gb, err := gr.params[4].Grad()
	if err != nil {
		return 0, nil, fmt.Errorf("bitserial: gradient of the bias: %w", err)
	}
	grads = append(grads, append([]float32(nil), gb.Data().([]float32)...))
	zeroGrad(gb)
	return gr.loss.Value().Data().(float32), grads, nil
}

// zeroGrad clears a gradient: Gorgonia's tape machine adds each run's gradients into
// the bound dual values rather than overwriting them.
func zeroGrad(v G.Value) {
	if t, ok := v.(tensor.Tensor); ok {
		t.Zero()
	}
}

// adam is the Adam optimiser over a list of float32 slices.
type adam struct {
	lr     float64
	t      int
	m, v   [][]float64
	b1, b2 float64
}

func newAdam(lr float64, params [][]float32) *adam {
	a := &adam{lr: lr, b1: 0.9, b2: 0.999}
	for _, p := range params {
		a.m = append(a.m, make([]float64, len(p)))
		a.v = append(a.v, make([]float64, len(p)))
	}
	return a
}

// step moves params against grads.
func (a *adam) step(params, grads [][]float32) {
	a.t++
	c1 := 1 - math.Pow(a.b1, float64(a.t))
	c2 := 1 - math.Pow(a.b2, float64(a.t))
	for i, p := range params {
		for j := range p {
			g := float64(grads[i][j])
			a.m[i][j] = a.b1*a.m[i][j] + (1-a.b1)*g
			a.v[i][j] = a.b2*a.v[i][j] + (1-a.b2)*g*g
			p[j] -= float32(a.lr * (a.m[i][j] / c1) / (math.Sqrt(a.v[i][j]/c2) + 1e-8))
		}
	}
}

// TrainConfig sets the float32 training: Images of the training set (0: all), Epochs,
// Batch size, learning rate LR, Seed (initialisation and shuffling).
type TrainConfig struct {
	Images, Epochs, Batch int
	LR                    float64
	Seed                  uint64
}

// Train trains a float32 Model of a on train with Adam, deterministically for a seed.
// progress, if not nil, gets a line per epoch.
func Train(a Arch, train *mnist.Set, cfg TrainConfig, progress func(string)) (*Model, error) {
	if err := a.Check(); err != nil {
		return nil, err
	}
	if cfg.Batch < 1 || cfg.Epochs < 1 {
		return nil, fmt.Errorf("bitserial: batch %d, epochs %d: want at least 1 each", cfg.Batch, cfg.Epochs)
	}
	s := train.Head(cfg.Images)
	if s.N < cfg.Batch {
		return nil, fmt.Errorf("bitserial: %d training images, fewer than a batch of %d", s.N, cfg.Batch)
	}
	gr, err := newGraph(a, cfg.Batch, true)
	if err != nil {
		return nil, err
	}
	m := newModel(a, cfg.Seed)
	params := append(append([][]float32(nil), m.Weights...), m.Bias)
	opt := newAdam(cfg.LR, params)
	r := rand.New(rand.NewPCG(cfg.Seed, 0x73687566666c65))
	for ep := 0; ep < cfg.Epochs; ep++ {
		perm := r.Perm(s.N)
		var sum float64
		steps := s.N / cfg.Batch
		for st := 0; st < steps; st++ {
			loss, grads, err := gr.gradients(m, s, perm[st*cfg.Batch:(st+1)*cfg.Batch])
			if err != nil {
				return nil, err
			}
			opt.step(params, grads)
			sum += float64(loss)
		}
		if progress != nil {
			progress(fmt.Sprintf("float32 epoch %d/%d: mean loss %.4f", ep+1, cfg.Epochs, sum/float64(steps)))
		}
	}
	return m, nil
}

// FloatAccuracy is m's accuracy on s (a fraction), run in Gorgonia.
func FloatAccuracy(m *Model, s *mnist.Set) (float64, error) {
	const batch = 100
	gr, err := newGraph(m.Arch, batch, false)
	if err != nil {
		return 0, err
	}
	gr.load(m)
	right := 0
	idx := make([]int, batch)
	for start := 0; start < s.N; start += batch {
		n := min(batch, s.N-start)
		for i := range idx {
			idx[i] = start + min(i, n-1)
		}
		if err := gr.setBatch(s, idx); err != nil {
			return 0, err
		}
		if err := gr.vm.RunAll(); err != nil {
			return 0, fmt.Errorf("bitserial: evaluating: %w", err)
		}
		lg := gr.logits.Value().Data().([]float32)
		for i := 0; i < n; i++ {
			if argmax(lg[i*Classes:(i+1)*Classes]) == int(s.Labels[start+i]) {
				right++
			}
		}
		gr.vm.Reset()
	}
	return float64(right) / float64(s.N), nil
}

// argmax is the index of the largest value (the first of equals).
func argmax[T int32 | float32](v []T) int {
	best := 0
	for i := range v {
		if v[i] > v[best] {
			best = i
		}
	}
	return best
}
