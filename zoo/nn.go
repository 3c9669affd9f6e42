package zoo

import (
	"fmt"
	"math"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// net wraps a Builder with what the model builders share: the activation type, the
// trainable parameters and the stop-gradient set. In a training graph, parameters are
// stored in f32 (master weights) and converted to the activation type where used, and
// normalization layers use batch statistics.
type net struct {
	b      *hlo.Builder
	train  bool
	act    hlo.ElemType // activation and weight compute type
	store  hlo.ElemType // parameter storage type
	params []*hlo.Instruction
	stops  []*hlo.Instruction
	// tp > 1 annotates the graph for tp-way tensor parallelism (tp.go; inference only).
	tp int
}

func newNet(b *hlo.Builder, train bool, act hlo.ElemType) *net {
	store := act
	if train {
		store = hlo.F32
	}
	return &net{b: b, train: train, act: act, store: store}
}

// input adds a non-trainable input parameter (data, labels, masks).
func (n *net) input(t hlo.ElemType, dims ...int) *hlo.Instruction { return n.b.Param(t, dims...) }

// weight adds a trainable parameter and returns it in the activation type.
func (n *net) weight(dims ...int) *hlo.Instruction { return n.weightAs(n.act, dims...) }

// weightAs adds a trainable parameter and returns it converted to t.
func (n *net) weightAs(t hlo.ElemType, dims ...int) *hlo.Instruction {
	p := n.b.Param(n.store, dims...)
	n.params = append(n.params, p)
	return n.b.Convert(p, t)
}

// full broadcasts the constant v to x's shape and type.
func (n *net) full(x *hlo.Instruction, v float64) *hlo.Instruction {
	return n.b.Full(x.Shape.Elem, v, x.Shape.Dims...)
}

// scale multiplies x by the constant v.
func (n *net) scale(x *hlo.Instruction, v float64) *hlo.Instruction { return n.b.Mul(x, n.full(x, v)) }

// addBias adds a per-feature bias along x's last dimension.
func (n *net) addBias(x *hlo.Instruction) *hlo.Instruction {
	d := x.Shape.Dims[x.Shape.Rank()-1]
	return n.b.AddOp(x, n.b.BroadcastTrailing(n.weight(d), x.Shape.Dims...))
}

// dense is x·W (+ bias) over x's last dimension.
func (n *net) dense(x *hlo.Instruction, out int, bias bool) *hlo.Instruction {
	in := x.Shape.Dims[x.Shape.Rank()-1]
	y := n.b.MatMul(x, n.weight(in, out))
	if bias {
		y = n.addBias(y)
	}
	return y
}

func (n *net) relu(x *hlo.Instruction) *hlo.Instruction { return n.b.Relu(x) }

// relu6 is min(max(x, 0), 6).
func (n *net) relu6(x *hlo.Instruction) *hlo.Instruction { return n.b.Min(n.b.Relu(x), n.full(x, 6)) }

// gelu is the tanh approximation 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
func (n *net) gelu(x *hlo.Instruction) *hlo.Instruction {
	b := n.b
	x3 := b.Mul(b.Mul(x, x), x)
	inner := n.scale(b.AddOp(x, n.scale(x3, 0.044715)), math.Sqrt(2/math.Pi))
	return b.Mul(n.scale(x, 0.5), b.AddOp(n.full(x, 1), b.Tanh(inner)))
}

// activation applies a named activation.
func (n *net) activation(x *hlo.Instruction, name string) *hlo.Instruction {
	switch name {
	case "relu":
		return n.relu(x)
	case "relu6":
		return n.relu6(x)
	case "gelu":
		return n.gelu(x)
	case "tanh":
		return n.b.Tanh(x)
	case "sigmoid":
		return n.b.Sigmoid(x)
	case "", "linear":
		return x
	}
	n.b.Failf("unknown activation %q", name)
	return x
}

// normalize computes (x - mean)·rsqrt(var + eps) over the dimensions red in f32, then
// scales by gamma and shifts by beta along the last dimension (trainable, f32), and
// returns the result in x's type. It is layer norm for red = {last} and training-mode
// batch norm for red = {all but the last}.
func (n *net) normalize(x *hlo.Instruction, red ...int) *hlo.Instruction {
	b := n.b
	t := x.Shape.Elem
	xf := b.Convert(x, hlo.F32)
	dims := xf.Shape.Dims
	r := len(dims)
	count := 1
	for _, d := range red {
		count *= dims[d]
	}
	kept := hlo.KeptDims(r, red)
	mean := b.ReduceSum(xf, red...)
	mean = b.Mul(mean, b.Full(hlo.F32, 1/float64(count), mean.Shape.Dims...))
	xc := b.Sub(xf, b.Broadcast(mean, kept, dims...))
	v := b.ReduceSum(b.Mul(xc, xc), red...)
	v = b.Mul(v, b.Full(hlo.F32, 1/float64(count), v.Shape.Dims...))
	rstd := b.Rsqrt(b.AddOp(v, b.Full(hlo.F32, 1e-5, v.Shape.Dims...)))
	y := b.Mul(xc, b.Broadcast(rstd, kept, dims...))
	c := dims[r-1]
	y = b.Mul(y, b.BroadcastTrailing(n.weightAs(hlo.F32, c), dims...))
	y = b.AddOp(y, b.BroadcastTrailing(n.weightAs(hlo.F32, c), dims...))
	return b.Convert(y, t)
}

// layerNorm normalizes over the last dimension.
func (n *net) layerNorm(x *hlo.Instruction) *hlo.Instruction {
	return n.normalize(x, x.Shape.Rank()-1)
}

// batchNorm is a training-mode batch norm over all dimensions but the last (features);
// in an inference graph it is folded into a per-channel bias.
func (n *net) batchNorm(x *hlo.Instruction) *hlo.Instruction {
	if !n.train {
		return n.addBias(x)
	}
	return n.normalize(x, hlo.KeptDims(x.Shape.Rank(), []int{x.Shape.Rank() - 1})...)
}

// softmax over dimension d, with the max subtracted for stability (a stop-gradient).
func (n *net) softmax(x *hlo.Instruction, d int) *hlo.Instruction {
	b := n.b
	kept := hlo.KeptDims(x.Shape.Rank(), []int{d})
	m := b.Reduce(x, hlo.OpMaximum, lowest(x.Shape.Elem), d)
	n.stops = append(n.stops, m)
	e := b.Exp(b.Sub(x, b.Broadcast(m, kept, x.Shape.Dims...)))
	s := b.ReduceSum(e, d)
	return b.Div(e, b.Broadcast(s, kept, x.Shape.Dims...))
}

// logSoftmax of [N, C] logits over C, in f32.
func (n *net) logSoftmax(logits *hlo.Instruction) *hlo.Instruction {
	b := n.b
	x := b.Convert(logits, hlo.F32)
	dims := x.Shape.Dims
	m := b.Reduce(x, hlo.OpMaximum, lowest(hlo.F32), 1)
	n.stops = append(n.stops, m)
	xc := b.Sub(x, b.Broadcast(m, []int{0}, dims...))
	lse := b.Log(b.ReduceSum(b.Exp(xc), 1))
	return b.Sub(xc, b.Broadcast(lse, []int{0}, dims...))
}

// crossEntropy is the mean softmax cross-entropy of logits [N, C] against s32 labels [N]
// (one-hot by iota and compare), in f32.
func (n *net) crossEntropy(logits, labels *hlo.Instruction) *hlo.Instruction {
	b := n.b
	lp := n.logSoftmax(logits)
	dims := lp.Shape.Dims
	onehot := b.Compare("EQ", b.Iota(hlo.S32, 1, dims...), b.Broadcast(labels, []int{0}, dims...))
	picked := b.Select(onehot, lp, b.Full(hlo.F32, 0, dims...))
	total := b.ReduceSum(picked, 0, 1)
	return b.Mul(total, b.ScalarConst(hlo.F32, -1/float64(dims[0])))
}

// classify adds s32 labels [N] and returns the cross-entropy of logits [N, C].
func (n *net) classify(logits *hlo.Instruction) *hlo.Instruction {
	return n.crossEntropy(logits, n.input(hlo.S32, logits.Shape.Dims[0]))
}

// meanSquared is the mean over all elements of (x - target)² in f32, with target a new
// f32 input.
func (n *net) meanSquared(x *hlo.Instruction) *hlo.Instruction {
	b := n.b
	xf := b.Convert(x, hlo.F32)
	d := b.Sub(xf, n.input(hlo.F32, xf.Shape.Dims...))
	all := make([]int, xf.Shape.Rank())
	for i := range all {
		all[i] = i
	}
	s := b.ReduceSum(b.Mul(d, d), all...)
	return b.Mul(s, b.ScalarConst(hlo.F32, 1/float64(xf.Shape.Elements())))
}

// lowest is the most negative finite value of a float type (the max-reduce init).
func lowest(t hlo.ElemType) float64 {
	switch t {
	case hlo.BF16:
		return -3.3895313892515355e38
	case hlo.F16:
		return -65504
	case hlo.F64:
		return -math.MaxFloat64
	}
	return -math.MaxFloat32
}

// conv2d is an NHWC convolution with an HWIO kernel, SAME padding, the given stride and
// feature groups.
func (n *net) conv2d(x *hlo.Instruction, k, cout, stride, groups int) *hlo.Instruction {
	cin := x.Shape.Dims[3]
	return n.b.Conv2D(x, n.weight(k, k, cin/groups, cout), stride, groups)
}

// convValid is an NHWC convolution without padding.
func (n *net) convValid(x *hlo.Instruction, k, cout, stride int) *hlo.Instruction {
	cin := x.Shape.Dims[3]
	wd := hlo.WindowDim{Size: k, Stride: stride, LhsDilate: 1, RhsDilate: 1}
	return n.b.Conv(x, n.weight(k, k, cin, cout), hlo.NHWC(), hlo.Window{Dims: []hlo.WindowDim{wd, wd}}, 1)
}

// convBN is conv → batch norm (a bias at inference) → activation.
func (n *net) convBN(x *hlo.Instruction, k, cout, stride, groups int, act string) *hlo.Instruction {
	return n.activation(n.batchNorm(n.conv2d(x, k, cout, stride, groups)), act)
}

// maxPool is a k×k max pool with the given stride and SAME padding over NHWC x.
func (n *net) maxPool(x *hlo.Instruction, k, stride int) *hlo.Instruction {
	one := hlo.WindowDim{Size: 1, Stride: 1, LhsDilate: 1, RhsDilate: 1}
	h := hlo.SamePadding(x.Shape.Dims[1], k, stride)
	w := hlo.SamePadding(x.Shape.Dims[2], k, stride)
	return n.b.ReduceWindow(x, hlo.OpMaximum, lowest(x.Shape.Elem), hlo.Window{Dims: []hlo.WindowDim{one, h, w, one}})
}

// globalAvgPool averages NHWC x over H and W, giving [N, C].
func (n *net) globalAvgPool(x *hlo.Instruction) *hlo.Instruction {
	s := n.b.ReduceSum(x, 1, 2)
	return n.scale(s, 1/float64(x.Shape.Dims[1]*x.Shape.Dims[2]))
}

// optimizer is a training-step parameter update.
type optimizer int

const (
	adam optimizer = iota
	sgdMomentum
	// optaxAdam is optax.adam as a JAX training step applies it (flax.go's models); it
	// also marks the step as JAX's: buildGraph differentiates it with GradJAX.
	optaxAdam
)

// update emits the optimizer step for every parameter given its gradient and returns the
// new parameters followed by the new optimizer state, each with the shape of the
// parameter it belongs to. Optimizer state (momentum; Adam's moments and step) arrives as
// new input parameters.
func (n *net) update(opt optimizer, grads []*hlo.Instruction) []*hlo.Instruction {
	b := n.b
	var newParams, state []*hlo.Instruction
	switch opt {
	case sgdMomentum:
		lr, mu := b.ScalarConst(hlo.F32, 0.1), b.ScalarConst(hlo.F32, 0.9)
		for i, p := range n.params {
			g := b.Convert(grads[i], p.Shape.Elem)
			dims := p.Shape.Dims
			v := b.Param(p.Shape.Elem, dims...)
			v2 := b.AddOp(b.Mul(b.Broadcast(mu, nil, dims...), v), g)
			newParams = append(newParams, b.Sub(p, b.Mul(b.Broadcast(lr, nil, dims...), v2)))
			state = append(state, v2)
		}
	case adam:
		const b1, b2 = 0.9, 0.999
		// Bias-corrected step size lr·√(1-β₂ᵗ)/(1-β₁ᵗ) from the step count t.
		t := b.AddOp(b.Param(hlo.F32), b.ScalarConst(hlo.F32, 1))
		pow := func(beta float64) *hlo.Instruction {
			return b.Exp(b.Mul(t, b.ScalarConst(hlo.F32, math.Log(beta))))
		}
		one := b.ScalarConst(hlo.F32, 1)
		corr := b.Div(b.Sqrt(b.Sub(one, pow(b2))), b.Sub(one, pow(b1)))
		lr := b.Mul(b.ScalarConst(hlo.F32, 1e-4), corr)
		cb1, cb1c := b.ScalarConst(hlo.F32, b1), b.ScalarConst(hlo.F32, 1-b1)
		cb2, cb2c := b.ScalarConst(hlo.F32, b2), b.ScalarConst(hlo.F32, 1-b2)
		eps := b.ScalarConst(hlo.F32, 1e-8)
		for i, p := range n.params {
			g := b.Convert(grads[i], hlo.F32)
			dims := p.Shape.Dims
			bc := func(s *hlo.Instruction) *hlo.Instruction { return b.Broadcast(s, nil, dims...) }
			m := b.Param(hlo.F32, dims...)
			v := b.Param(hlo.F32, dims...)
			m2 := b.AddOp(b.Mul(bc(cb1), m), b.Mul(bc(cb1c), g))
			v2 := b.AddOp(b.Mul(bc(cb2), v), b.Mul(bc(cb2c), b.Mul(g, g)))
			step := b.Div(b.Mul(bc(lr), m2), b.AddOp(b.Sqrt(v2), bc(eps)))
			pf := b.Convert(p, hlo.F32)
			newParams = append(newParams, b.Convert(b.Sub(pf, step), p.Shape.Elem))
			state = append(state, m2, v2)
		}
		state = append(state, t)
	case optaxAdam:
		newParams, state = n.optaxAdam(grads)
	}
	return append(newParams, state...)
}

// graphFn builds a model's graph on n. In an inference net it returns the outputs; in a
// training net it returns exactly one f32 scalar loss.
type graphFn func(n *net) []*hlo.Instruction

// buildGraph builds the module name from f: the forward graph for inference; for
// training the forward graph and loss, the gradient of the loss with respect to every
// trainable parameter (Grad; GradJAX for optaxAdam, a JAX training step) and the
// optimizer update, with ROOT tuple(loss, updated parameters..., updated optimizer
// state...).
func buildGraph(name string, kind Kind, act hlo.ElemType, opt optimizer, f graphFn) (*hlo.Module, error) {
	b := hlo.NewBuilder(name)
	n := newNet(b, kind == Training, act)
	outs := f(n)
	if err := b.Err(); err != nil {
		return nil, err
	}
	if kind == Inference {
		m, err := b.Build(outs...)
		if err == nil && n.tp > 1 {
			annotateTensorParallel(m, n.tp)
		}
		return m, err
	}
	if len(outs) != 1 {
		return nil, fmt.Errorf("a training graph needs one loss, got %d outputs", len(outs))
	}
	loss := outs[0]
	grad := Grad
	if opt == optaxAdam {
		grad = GradJAX
	}
	grads, err := grad(b, loss, n.params, n.stops...)
	if err != nil {
		return nil, err
	}
	return b.Build(append([]*hlo.Instruction{loss}, n.update(opt, grads)...)...)
}

// optaxAdam is optax.adam(1e-4) (scale_by_adam then scale_by_learning_rate) applied by
// optax.apply_updates, for every parameter p with gradient g: mu = b1·mu + (1-b1)·g,
// nu = b2·nu + (1-b2)·g², the s32 count incremented (numerics.safe_increment: +1 below
// the int32 maximum), mu_hat = mu/(1 - b1^count), nu_hat = nu/(1 - b2^count),
// u = -lr·mu_hat/(√(nu_hat + eps_root) + eps), p + u. It returns the new parameters and
// the new state: every mu, every nu, then the count.
func (n *net) optaxAdam(grads []*hlo.Instruction) (newParams, state []*hlo.Instruction) {
	b := n.b
	const b1, b2, eps, epsRoot, lr = 0.9, 0.999, 1e-8, 0, 1e-4
	count := b.Param(hlo.S32)
	maxInt := b.ScalarConst(hlo.S32, math.MaxInt32)
	inc := b.Select(b.Compare("LT", count, maxInt), b.AddOp(count, b.ScalarConst(hlo.S32, 1)), maxInt)
	countF := b.Convert(inc, hlo.F32)
	one := b.ScalarConst(hlo.F32, 1)
	corr1 := b.Sub(one, b.Binary(hlo.OpPower, b.ScalarConst(hlo.F32, b1), countF))
	corr2 := b.Sub(one, b.Binary(hlo.OpPower, b.ScalarConst(hlo.F32, b2), countF))
	var mus, nus []*hlo.Instruction
	for i, p := range n.params {
		g := b.Convert(grads[i], hlo.F32)
		dims := p.Shape.Dims
		bc := func(v float64) *hlo.Instruction { return b.Full(hlo.F32, v, dims...) }
		mu := b.AddOp(b.Mul(bc(1-b1), g), b.Mul(bc(b1), b.Param(hlo.F32, dims...)))
		nu := b.AddOp(b.Mul(bc(1-b2), b.Mul(g, g)), b.Mul(bc(b2), b.Param(hlo.F32, dims...)))
		muHat := b.Div(mu, b.Broadcast(corr1, nil, dims...))
		nuHat := b.Div(nu, b.Broadcast(corr2, nil, dims...))
		u := b.Div(muHat, b.AddOp(b.Sqrt(b.AddOp(nuHat, bc(epsRoot))), bc(eps)))
		u = b.Mul(u, bc(-lr))
		pf := b.Convert(p, hlo.F32)
		newParams = append(newParams, b.Convert(b.AddOp(pf, u), p.Shape.Elem))
		mus, nus = append(mus, mu), append(nus, nu)
	}
	return newParams, append(append(mus, nus...), inc)
}
