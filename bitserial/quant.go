package bitserial

import (
	"fmt"
	"math"
	"slices"

	"github.com/tpucost/tpucost/bitserial/mnist"
)

// actClipQuantile is the quantile of a layer's positive float activations (over the
// calibration images) that its quantized activations clip at: the top 0.1% saturate, so
// that a few outliers do not waste the levels of a 1–4-bit activation.
const actClipQuantile = 0.999

// Kernel selects the integer kernel a Net runs its layers 2–4 with (the first layer
// always runs the 8-bit integer kernel on 8-bit pixels). A Runner's Plan picks each
// kernel's variant per layer.
type Kernel int

// The kernels.
const (
	KernelInt8  Kernel = iota // ConvInt8Variant on the (expanded) 8-bit weights
	KernelPool8               // ConvPool8Variant: gather pool vectors and multiply
	KernelLUT                 // ConvLUTVariant: bit-serial lookups, table built per image
)

// String is the kernel's name in reports.
func (k Kernel) String() string {
	return [...]string{"int8", "pool8", "lut"}[k]
}

// Net is a quantized network. Every layer has 8-bit weights W[i] ([Cout][K][K][Cin],
// real weight = WScale[i]·W[i]); a pool network (Pool != nil) also has, for layers 2–4,
// pool indices Idx[i] into Pool (P vectors of Z int8), of which W[i] is the expansion, and
// the log2(P)-bit packed form Packed[i] that storage counts. The first layer is never
// pooled: it stays 8-bit, as the paper's does (its input has one channel). Activations
// are unsigned after ReLU: layer i's input is quantized to b bits with scale
// ActMax[i]/(2^b−1) (layer 1's input, the pixels, is always 8-bit, scale 1/255).
type Net struct {
	Arch   Arch
	Layers []Layer
	W      [][]int8
	WScale []float32
	ActMax []float32
	Bias   []float32

	Z, P   int
	Pool   []int8
	Idx    [][]uint8
	Packed [][]byte
}

// convFloat is the float32 reference convolution in the integer kernels' layout.
func convFloat(l Layer, in, w, out []float32) {
	oh, ow := l.OH(), l.OW()
	for oy := 0; oy < oh; oy++ {
		for ox := 0; ox < ow; ox++ {
			for oc := 0; oc < l.Cout; oc++ {
				var s float32
				for ky := 0; ky < l.K; ky++ {
					iy := oy*l.Stride - l.Pad + ky
					if iy < 0 || iy >= l.H {
						continue
					}
					for kx := 0; kx < l.K; kx++ {
						ix := ox*l.Stride - l.Pad + kx
						if ix < 0 || ix >= l.W {
							continue
						}
						a := in[(iy*l.W+ix)*l.Cin : (iy*l.W+ix+1)*l.Cin]
						wr := w[((oc*l.K+ky)*l.K+kx)*l.Cin:]
						for c, v := range a {
							s += wr[c] * v
						}
					}
				}
				out[(oy*ow+ox)*l.Cout+oc] = s
			}
		}
	}
}

// calibrate returns each layer's activation clip: 1 for the pixels, then the
// actClipQuantile of the positive inputs of layers 2–4 of m over images of s.
func calibrate(m *Model, s *mnist.Set) []float32 {
	ls := m.Arch.Layers()
	pos := make([][]float32, len(ls))
	for i := 0; i < s.N; i++ {
		in := make([]float32, Side*Side)
		for p, v := range s.Image(i) {
			in[p] = float32(v) / 255
		}
		for li, l := range ls[:len(ls)-1] {
			out := make([]float32, l.OH()*l.OW()*l.Cout)
			convFloat(l, in, m.Weights[li], out)
			for j, v := range out {
				if v > 0 {
					pos[li+1] = append(pos[li+1], v)
				} else {
					out[j] = 0
				}
			}
			in = out
		}
	}
	clip := []float32{1}
	for _, p := range pos[1:] {
		c := float32(1)
		if len(p) > 0 {
			slices.Sort(p)
			c = p[min(len(p)-1, int(actClipQuantile*float64(len(p))))]
		}
		clip = append(clip, c)
	}
	return clip
}

// quantizeWeights is w as int8 with one scale, max|w|/127.
func quantizeWeights(w []float32) ([]int8, float32) {
	var mx float32
	for _, v := range w {
		mx = max(mx, float32(math.Abs(float64(v))))
	}
	if mx == 0 {
		mx = 1
	}
	scale := mx / 127
	q := make([]int8, len(w))
	for i, v := range w {
		q[i] = int8(max(-127, min(127, math.Round(float64(v/scale)))))
	}
	return q, scale
}

// QuantizeInt8 is m as an 8-bit network: int8 weights with per-layer scales, activations
// clipped at clips calibrated on calib.
func QuantizeInt8(m *Model, calib *mnist.Set) *Net {
	n := &Net{Arch: m.Arch, Layers: m.Arch.Layers(), ActMax: calibrate(m, calib), Bias: append([]float32(nil), m.Bias...)}
	for _, w := range m.Weights {
		q, s := quantizeWeights(w)
		n.W = append(n.W, q)
		n.WScale = append(n.WScale, s)
	}
	return n
}

// Runner runs a Net one image at a time with its own buffers (not safe for concurrent
// use; one Runner per goroutine).
type Runner struct {
	net     *Net
	plan    *Plan
	idxT    [][]uint8 // GroupMajor pool indices per layer, for the channel order's variants
	acts    [][]uint8
	acc     []int32
	scratch []uint8
	lutMem  LUTScratch
	planes  []uint8
	lut     LUT
	logits  []float32
}

// NewRunner returns a Runner of n with the plain kernels.
func NewRunner(n *Net) *Runner {
	r, _ := NewPlannedRunner(n, nil)
	return r
}

// NewPlannedRunner returns a Runner of n running the kernel variants of p (nil: the plain
// kernels), or p's Check error.
func NewPlannedRunner(n *Net, p *Plan) (*Runner, error) {
	if err := p.Check(n.Layers); err != nil {
		return nil, err
	}
	r := &Runner{net: n, plan: p}
	for i, l := range n.Layers {
		var t []uint8
		if i < len(n.Idx) && n.Idx[i] != nil {
			t = GroupMajor(l, n.Idx[i], n.Z)
		}
		r.idxT = append(r.idxT, t)
	}
	maxAcc, maxScratch, maxPlanes := 0, 0, 0
	for _, l := range n.Layers {
		r.acts = append(r.acts, make([]uint8, l.H*l.W*l.Cin))
		maxAcc = max(maxAcc, l.OH()*l.OW()*l.Cout)
		maxScratch = max(maxScratch, 8*l.K*l.K*l.Cin)
		maxPlanes = max(maxPlanes, 8*l.H*l.W*l.Cin)
	}
	r.acc = make([]int32, maxAcc)
	r.scratch = make([]uint8, maxScratch)
	r.planes = make([]uint8, maxPlanes)
	r.logits = make([]float32, Classes)
	return r, nil
}

// CheckBits refuses an activation precision outside 1..8.
func CheckBits(b int) error {
	if b < 1 || b > 8 {
		return fmt.Errorf("bitserial: activation bits %d: want 1 to 8", b)
	}
	return nil
}

// Predict runs image img (Side·Side pixels) through the network with kernel k, the
// inputs of layers 2–4 quantized to b bits, and returns the predicted digit. KernelPool8
// and KernelLUT need a pool network. The LUT kernel builds its table once per image (the
// pool, and so the table, is shared by every pooled layer) and that build is part of the
// image's time.
func (r *Runner) Predict(img []uint8, k Kernel, b int) int {
	n := r.net
	copy(r.acts[0], img)
	if k == KernelLUT {
		BuildLUT(&r.lut, n.Pool, n.Z)
	}
	inScale := float32(1) / 255
	last := len(n.Layers) - 1
	for i, l := range n.Layers {
		acc := r.acc[:l.OH()*l.OW()*l.Cout]
		in := r.acts[i]
		switch {
		case i == 0 || k == KernelInt8:
			ConvInt8Variant(l, in, n.W[i], acc, r.scratch, r.plan.int8At(i))
		case k == KernelPool8:
			ConvPool8Variant(l, in, n.Idx[i], n.Pool, n.Z, acc, r.scratch, r.plan.pool8At(i))
		default:
			BitPlanes(l, in, n.Z, b, r.planes)
			ConvLUTVariant(l, r.planes, n.Idx[i], r.idxT[i], &r.lut, b, r.plan.lutAt(b, i), acc, &r.lutMem)
		}
		if i == last {
			s := n.WScale[i] * inScale
			for c, a := range acc {
				r.logits[c] = float32(a)*s + n.Bias[c]
			}
			break
		}
		levels := float32(int(1)<<b - 1)
		outScale := n.ActMax[i+1] / levels
		mult := n.WScale[i] * inScale / outScale
		out := r.acts[i+1]
		for j, a := range acc {
			v := float32(a) * mult
			switch {
			case v <= 0:
				out[j] = 0
			case v >= levels:
				out[j] = uint8(levels)
			default:
				out[j] = uint8(v + 0.5)
			}
		}
		inScale = outScale
	}
	return argmax(r.logits)
}

// Accuracy is the fraction of s that n classifies right with kernel k at b bits (plain
// kernels; every variant classifies alike, being bit-exact).
func Accuracy(n *Net, s *mnist.Set, k Kernel, b int) float64 {
	return NewRunner(n).Accuracy(s, k, b)
}

// Accuracy is the fraction of s that r's network classifies right with kernel k at b bits.
func (r *Runner) Accuracy(s *mnist.Set, k Kernel, b int) float64 {
	right := 0
	for i := 0; i < s.N; i++ {
		if r.Predict(s.Image(i), k, b) == int(s.Labels[i]) {
			right++
		}
	}
	return float64(right) / float64(s.N)
}
