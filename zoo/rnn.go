package zoo

import "github.com/tpucost/tpucost/compiler/hlo"

// stepRows returns rows [t·B, (t+1)·B) of a time-major [T·B, F] array.
func (n *net) stepRows(x *hlo.Instruction, t, batch int) *hlo.Instruction {
	f := x.Shape.Dims[1]
	return n.b.Slice(x, []int{t * batch, 0}, []int{(t + 1) * batch, f})
}

// cols returns columns [lo, hi) of a [N, F] array.
func (n *net) cols(x *hlo.Instruction, lo, hi int) *hlo.Instruction {
	return n.b.Slice(x, []int{0, lo}, []int{x.Shape.Dims[0], hi})
}

// lstmLayer runs an LSTM over the time-major inputs xs [T·B, F] from state (h, c)
// [B, H] and returns the outputs [T·B, H]. The input projection of all steps is one
// matrix multiply; each unrolled step adds h·Wh and splits the four gates (i, f, g, o) by
// slicing.
func (n *net) lstmLayer(xs, h, c *hlo.Instruction, steps, batch int) (out, hT, cT *hlo.Instruction) {
	b := n.b
	H := h.Shape.Dims[1]
	xw := n.dense(xs, 4*H, true)
	wh := n.weight(H, 4*H)
	hs := make([]*hlo.Instruction, steps)
	for t := 0; t < steps; t++ {
		h, c = n.lstmStep(b.AddOp(n.stepRows(xw, t, batch), b.MatMul(h, wh)), c)
		hs[t] = h
	}
	return b.Concat(0, hs...), h, c
}

// lstmStep applies the LSTM gate equations to the pre-activations g [B, 4H] and the cell
// state c [B, H], returning the new (h, c).
func (n *net) lstmStep(g, c *hlo.Instruction) (*hlo.Instruction, *hlo.Instruction) {
	b := n.b
	H := c.Shape.Dims[1]
	i := b.Sigmoid(n.cols(g, 0, H))
	f := b.Sigmoid(n.cols(g, H, 2*H))
	gg := b.Tanh(n.cols(g, 2*H, 3*H))
	o := b.Sigmoid(n.cols(g, 3*H, 4*H))
	c = b.AddOp(b.Mul(f, c), b.Mul(i, gg))
	return b.Mul(o, b.Tanh(c)), c
}

// lstmConfig is a recurrent model unrolled over steps: an LSTM language model (layers
// stacked, initial state as inputs for truncated back-propagation through time, logits at
// every step), an LSTM sequence classifier (logits from the last state), or a vanilla tanh
// RNN character model.
type lstmConfig struct {
	batch, steps int
	vocab, embed int
	hidden       int
	layers       int
	classes      int // > 0: sequence classifier with this many classes
	vanilla      bool
}

func (c lstmConfig) graph(n *net) []*hlo.Instruction {
	b := n.b
	B, T, H := c.batch, c.steps, c.hidden
	ids := n.input(hlo.S32, T*B)
	x := b.Gather(n.weight(c.vocab, c.embed), ids)
	var last *hlo.Instruction
	if c.vanilla {
		xw := n.dense(x, H, true)
		wh := n.weight(H, H)
		h := b.Convert(n.input(hlo.F32, B, H), n.act)
		hs := make([]*hlo.Instruction, T)
		for t := 0; t < T; t++ {
			h = b.Tanh(b.AddOp(n.stepRows(xw, t, B), b.MatMul(h, wh)))
			hs[t] = h
		}
		x, last = b.Concat(0, hs...), h
	} else {
		for l := 0; l < c.layers; l++ {
			var h, cc *hlo.Instruction
			if c.classes > 0 {
				h, cc = b.Full(n.act, 0, B, H), b.Full(n.act, 0, B, H)
			} else {
				h = b.Convert(n.input(hlo.F32, B, H), n.act)
				cc = b.Convert(n.input(hlo.F32, B, H), n.act)
			}
			x, last, _ = n.lstmLayer(x, h, cc, T, B)
		}
	}
	var logits *hlo.Instruction
	if c.classes > 0 {
		logits = n.dense(last, c.classes, true)
	} else {
		logits = n.dense(x, c.vocab, true)
	}
	if n.train {
		return []*hlo.Instruction{n.classify(logits)}
	}
	return []*hlo.Instruction{n.softmax(logits, 1)}
}

func lstmVariants() []variant {
	v := func(name string, act hlo.ElemType, c lstmConfig) variant {
		return variant{name: name, family: "lstm", act: act, train: true, opt: sgdMomentum, graph: c.graph}.withSeq(c.steps, maxUnrolled,
			func(seq int) graphFn { c := c; c.steps = seq; return c.graph })
	}
	return []variant{
		v("rnn_char_h96_t24_b1", hlo.F32, lstmConfig{batch: 1, steps: 24, vocab: 256, embed: 32, hidden: 96, vanilla: true}),
		v("lstm_lm_h256_t16_b32", hlo.F32, lstmConfig{batch: 32, steps: 16, vocab: 10000, embed: 256, hidden: 256, layers: 1}),
		v("lstm_cls_h300_t32_b8", hlo.F32, lstmConfig{batch: 8, steps: 32, vocab: 20000, embed: 300, hidden: 300, layers: 1, classes: 2}),
		v("lstm2_lm_h650_t20_b32", hlo.F32, lstmConfig{batch: 32, steps: 20, vocab: 10000, embed: 650, hidden: 650, layers: 2}),
		v("lstm2_lm_h1024_t8_b64", hlo.BF16, lstmConfig{batch: 64, steps: 8, vocab: 32000, embed: 1024, hidden: 1024, layers: 2}),
	}
}

// nmtConfig is an LSTM encoder-decoder for translation (two layers each) with Luong dot
// attention over the encoder outputs at every teacher-forced decoder step.
type nmtConfig struct {
	batch, srcLen, tgtLen int
	hidden, vocab         int
}

func nmtVariant(name string, act hlo.ElemType, train bool, c nmtConfig) variant {
	return variant{name: name, family: "translation", act: act, train: train, opt: adam, graph: c.graph}.withSeq(c.srcLen, maxUnrolled,
		func(seq int) graphFn { c := c; c.srcLen, c.tgtLen = seq, seq; return c.graph })
}

func (c nmtConfig) graph(n *net) []*hlo.Instruction {
	b := n.b
	B, H := c.batch, c.hidden
	src := n.input(hlo.S32, c.srcLen*B)
	tgt := n.input(hlo.S32, c.tgtLen*B)
	zero := func() *hlo.Instruction { return b.Full(n.act, 0, B, H) }
	x := b.Gather(n.weight(c.vocab, H), src)
	var states [2][2]*hlo.Instruction
	for l := 0; l < 2; l++ {
		x, states[l][0], states[l][1] = n.lstmLayer(x, zero(), zero(), c.srcLen, B)
	}
	// Encoder outputs as [B, S, H].
	enc := b.Transpose(b.Reshape(x, c.srcLen, B, H), 1, 0, 2)
	y := b.Gather(n.weight(c.vocab, H), tgt)
	// Decoder layer 0 projects all target embeddings at once; layer 1 takes layer 0's
	// output of the same step.
	yw := n.dense(y, 4*H, true)
	wh := [2]*hlo.Instruction{n.weight(H, 4*H), n.weight(H, 4*H)}
	w1 := n.weight(H, 4*H)
	b1 := n.weight(4 * H)
	wc := n.weight(2*H, H)
	outs := make([]*hlo.Instruction, c.tgtLen)
	for t := 0; t < c.tgtLen; t++ {
		h, cc := states[0][0], states[0][1]
		h, cc = n.lstmStep(b.AddOp(n.stepRows(yw, t, B), b.MatMul(h, wh[0])), cc)
		states[0] = [2]*hlo.Instruction{h, cc}
		g1 := b.AddOp(b.AddOp(b.MatMul(h, w1), b.MatMul(states[1][0], wh[1])), b.BroadcastTrailing(b1, B, 4*H))
		h, cc = n.lstmStep(g1, states[1][1])
		states[1] = [2]*hlo.Instruction{h, cc}
		scores := b.Dot(enc, h, hlo.DotDims{LhsBatch: []int{0}, RhsBatch: []int{0}, LhsContracting: []int{2}, RhsContracting: []int{1}})
		a := b.Convert(n.softmax(b.Convert(scores, hlo.F32), 1), n.act)
		ctx := b.Dot(a, enc, hlo.DotDims{LhsBatch: []int{0}, RhsBatch: []int{0}, LhsContracting: []int{1}, RhsContracting: []int{1}})
		outs[t] = b.Tanh(b.MatMul(b.Concat(1, ctx, h), wc))
	}
	logits := n.dense(b.Concat(0, outs...), c.vocab, true)
	if n.train {
		return []*hlo.Instruction{n.classify(logits)}
	}
	return []*hlo.Instruction{n.logSoftmax(logits)}
}

// wavernnConfig is WaveRNN: a GRU-like cell over teacher-forced 16-bit audio samples
// split into coarse and fine 8-bit parts, with conditioning features; the hidden state is
// split into a coarse and a fine half, each feeding a ReLU layer and a 256-way softmax (the
// dual softmax). Inference evaluates the heads at every step as sample-by-sample
// generation does; training evaluates them over all steps at once.
type wavernnConfig struct {
	batch, steps, hidden, cond int
}

func (c wavernnConfig) graph(n *net) []*hlo.Instruction {
	b := n.b
	B, T, H := c.batch, c.steps, c.hidden
	half := H / 2
	samples := n.input(hlo.F32, T*B, 3) // previous coarse, previous fine, current coarse
	cond := n.input(hlo.F32, T*B, c.cond)
	xin := b.Convert(b.Concat(1, samples, cond), n.act)
	xw := n.dense(xin, 3*H, true)
	r := n.weight(H, 3*H)
	h := b.Convert(n.input(hlo.F32, B, H), n.act)
	heads := func(hc, hf *hlo.Instruction) (*hlo.Instruction, *hlo.Instruction) {
		co := n.dense(n.relu(n.dense(hc, half, true)), 256, true)
		fi := n.dense(n.relu(n.dense(hf, half, true)), 256, true)
		return co, fi
	}
	var hs []*hlo.Instruction
	var outs []*hlo.Instruction
	var headW []*hlo.Instruction
	if !n.train {
		// Shared head weights, applied per step.
		headW = []*hlo.Instruction{n.weight(half, half), n.weight(half, 256), n.weight(half, half), n.weight(half, 256)}
	}
	for t := 0; t < T; t++ {
		x := n.stepRows(xw, t, B)
		hr := b.MatMul(h, r)
		u := b.Sigmoid(b.AddOp(n.cols(x, 0, H), n.cols(hr, 0, H)))
		rr := b.Sigmoid(b.AddOp(n.cols(x, H, 2*H), n.cols(hr, H, 2*H)))
		e := b.Tanh(b.AddOp(n.cols(x, 2*H, 3*H), b.Mul(rr, n.cols(hr, 2*H, 3*H))))
		one := n.full(u, 1)
		h = b.AddOp(b.Mul(u, h), b.Mul(b.Sub(one, u), e))
		if n.train {
			hs = append(hs, h)
			continue
		}
		hc, hf := n.cols(h, 0, half), n.cols(h, half, H)
		co := b.MatMul(n.relu(b.MatMul(hc, headW[0])), headW[1])
		fi := b.MatMul(n.relu(b.MatMul(hf, headW[2])), headW[3])
		outs = append(outs, n.softmax(co, 1), n.softmax(fi, 1))
	}
	if !n.train {
		return []*hlo.Instruction{b.Concat(0, outs...)}
	}
	all := b.Concat(0, hs...)
	co, fi := heads(n.cols(all, 0, half), n.cols(all, half, H))
	return []*hlo.Instruction{b.AddOp(n.classify(co), n.classify(fi))}
}

func wavernnVariants() []variant {
	v := func(name string, act hlo.ElemType, train bool, c wavernnConfig) variant {
		return variant{name: name, family: "wavernn", act: act, train: train, opt: adam, graph: c.graph}.withSeq(c.steps, maxUnrolled,
			func(seq int) graphFn { c := c; c.steps = seq; return c.graph })
	}
	return []variant{
		v("wavernn_h384_t16_b1", hlo.F32, false, wavernnConfig{batch: 1, steps: 16, hidden: 384, cond: 80}),
		v("wavernn_h896_t16_b1", hlo.BF16, false, wavernnConfig{batch: 1, steps: 16, hidden: 896, cond: 80}),
		v("wavernn_h896_t32_b8", hlo.F32, true, wavernnConfig{batch: 8, steps: 32, hidden: 896, cond: 80}),
		v("wavernn_h512_t24_b16", hlo.F32, true, wavernnConfig{batch: 16, steps: 24, hidden: 512, cond: 128}),
	}
}
