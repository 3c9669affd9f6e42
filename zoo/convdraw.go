package zoo

import "github.com/tpucost/tpucost/compiler/hlo"

// convdrawConfig is ConvDRAW: a recurrent variational auto-encoder whose encoder and
// decoder are convolutional LSTMs at half the image resolution, unrolled over steps. At
// each step the encoder reads the image and the reconstruction error (a stride-2
// convolution), a convolution gives the latent mean and log-variance, z is sampled with
// the reparameterization trick from noise inputs, the decoder updates its state from z,
// and a transposed convolution (lhs dilation 2) adds its write to the canvas. The loss is
// the squared reconstruction error plus the KL divergence of every step.
type convdrawConfig struct {
	batch, res, steps int
	ch, latent        int
	channels          int
}

func (c convdrawConfig) graph(n *net) []*hlo.Instruction {
	b := n.b
	B, R, C := c.batch, c.res, c.channels
	r := R / 2
	x := b.Convert(n.input(hlo.F32, B, R, R, C), n.act)
	zeros := func(ch int) *hlo.Instruction { return b.Full(n.act, 0, B, r, r, ch) }
	hEnc, cEnc, hDec, cDec := zeros(c.ch), zeros(c.ch), zeros(c.ch), zeros(c.ch)
	canvas := b.Full(n.act, 0, B, R, R, C)
	// Shared weights across steps.
	readK := n.weight(3, 3, 2*C, c.ch)
	encK := n.weight(3, 3, 2*c.ch+c.ch, 4*c.ch)
	encB := n.weight(4 * c.ch)
	zK := n.weight(3, 3, c.ch, 2*c.latent)
	decK := n.weight(3, 3, c.latent+c.ch, 4*c.ch)
	decB := n.weight(4 * c.ch)
	writeK := n.weight(2, 2, c.ch, C)
	up := hlo.WindowDim{Size: 2, Stride: 1, PadLo: 1, PadHi: 1, LhsDilate: 2, RhsDilate: 1}
	// lstm is a convolutional LSTM step: gates = conv3×3(concat(in, h)) + bias.
	lstm := func(in, h, cc, k, bias *hlo.Instruction) (*hlo.Instruction, *hlo.Instruction) {
		g := b.Conv2D(b.Concat(3, in, h), k, 1, 1)
		g = b.AddOp(g, b.BroadcastTrailing(bias, g.Shape.Dims...))
		d := g.Shape.Dims
		H := c.ch
		part := func(i int) *hlo.Instruction {
			return b.Slice(g, []int{0, 0, 0, i * H}, []int{d[0], d[1], d[2], (i + 1) * H})
		}
		i, f, gg, o := b.Sigmoid(part(0)), b.Sigmoid(part(1)), b.Tanh(part(2)), b.Sigmoid(part(3))
		cc = b.AddOp(b.Mul(f, cc), b.Mul(i, gg))
		return b.Mul(o, b.Tanh(cc)), cc
	}
	var kl *hlo.Instruction
	for t := 0; t < c.steps; t++ {
		errImg := b.Sub(x, b.Sigmoid(canvas))
		read := b.Conv2D(b.Concat(3, x, errImg), readK, 2, 1)
		hEnc, cEnc = lstm(b.Concat(3, read, hDec), hEnc, cEnc, encK, encB)
		zp := b.Convert(b.Conv2D(hEnc, zK, 1, 1), hlo.F32)
		mean := b.Slice(zp, []int{0, 0, 0, 0}, []int{B, r, r, c.latent})
		logvar := b.Slice(zp, []int{0, 0, 0, c.latent}, []int{B, r, r, 2 * c.latent})
		eps := n.input(hlo.F32, B, r, r, c.latent)
		z := b.AddOp(mean, b.Mul(b.Exp(n.scale(logvar, 0.5)), eps))
		// KL(N(mean, exp(logvar)) ‖ N(0, 1)) = ½ Σ (mean² + exp(logvar) − logvar − 1)
		k := b.Sub(b.AddOp(b.Mul(mean, mean), b.Exp(logvar)), b.AddOp(logvar, n.full(logvar, 1)))
		ks := n.scale(b.ReduceSum(k, 0, 1, 2, 3), 0.5/float64(B))
		if kl == nil {
			kl = ks
		} else {
			kl = b.AddOp(kl, ks)
		}
		hDec, cDec = lstm(b.Convert(z, n.act), hDec, cDec, decK, decB)
		write := b.Conv(hDec, writeK, hlo.NHWC(), hlo.Window{Dims: []hlo.WindowDim{up, up}}, 1)
		canvas = b.AddOp(canvas, write)
	}
	recon := b.Sigmoid(canvas)
	if !n.train {
		return []*hlo.Instruction{recon}
	}
	d := b.Convert(b.Sub(recon, x), hlo.F32)
	rec := n.scale(b.ReduceSum(b.Mul(d, d), 0, 1, 2, 3), 1/float64(B))
	return []*hlo.Instruction{b.AddOp(rec, kl)}
}

func convdrawVariants() []variant {
	v := func(name string, act hlo.ElemType, train bool, c convdrawConfig) variant {
		return variant{name: name, family: "convdraw", act: act, train: train, opt: adam, graph: c.graph}.withSeq(c.steps, maxUnrolled,
			func(seq int) graphFn { c := c; c.steps = seq; return c.graph })
	}
	return []variant{
		v("convdraw_s8_c32_r32_b16", hlo.F32, true, convdrawConfig{batch: 16, res: 32, steps: 8, ch: 32, latent: 8, channels: 1}),
		v("convdraw_s12_c64_r32_b8", hlo.BF16, false, convdrawConfig{batch: 8, res: 32, steps: 12, ch: 64, latent: 16, channels: 3}),
		v("convdraw_s16_c48_r64_b4", hlo.F32, true, convdrawConfig{batch: 4, res: 64, steps: 16, ch: 48, latent: 12, channels: 3}),
		v("convdraw_s8_c128_r64_b1", hlo.BF16, false, convdrawConfig{batch: 1, res: 64, steps: 8, ch: 128, latent: 32, channels: 3}),
	}
}
