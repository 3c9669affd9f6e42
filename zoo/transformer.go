package zoo

import (
	"math"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// attnOpts configures multi-head attention.
type attnOpts struct {
	heads int
	// general contracts [B,S,H,d] operands with dot batch dimensions {0,2} directly
	// (as JAX emits); otherwise they are transposed to [B,H,S,d] first (as TF emits).
	general bool
	// fused projects q, k and v with one [D,3D] matrix split by slices (self-attention).
	fused bool
	// maskBias is an additive f32 [B, Sk] bias (0 for tokens, -10000 for padding).
	maskBias *hlo.Instruction
	causal   bool
}

// attention is multi-head scaled dot-product attention of queries xq [B·Sq, D] over
// xkv [B·Sk, D], with the output projection; the result is [B·Sq, D]. The softmax runs in
// f32. In a tensor-parallel net (n.tp > 1) the projections of q, k and v are
// column-parallel (fused: head-major, headMajorQKV) and the output projection
// row-parallel (denseSplit).
func (n *net) attention(xq, xkv *hlo.Instruction, batch, sq, sk int, o attnOpts) *hlo.Instruction {
	b := n.b
	D := xq.Shape.Dims[1]
	H := o.heads
	dh := D / H
	var q, k, v *hlo.Instruction
	if o.fused && n.tp > 1 {
		q, k, v = n.headMajorQKV(xq, H)
	} else if o.fused {
		qkv := n.dense(xq, 3*D, true)
		rows := qkv.Shape.Dims[0]
		part := func(i int) *hlo.Instruction { return b.Slice(qkv, []int{0, i * D}, []int{rows, (i + 1) * D}) }
		q, k, v = part(0), part(1), part(2)
	} else {
		q, k, v = n.denseSplit(xq, D, true, tpColumn), n.denseSplit(xkv, D, true, tpColumn), n.denseSplit(xkv, D, true, tpColumn)
	}
	q = b.Reshape(q, batch, sq, H, dh)
	k = b.Reshape(k, batch, sk, H, dh)
	v = b.Reshape(v, batch, sk, H, dh)
	var scores *hlo.Instruction
	if o.general {
		scores = b.Dot(q, k, hlo.DotDims{LhsBatch: []int{0, 2}, RhsBatch: []int{0, 2}, LhsContracting: []int{3}, RhsContracting: []int{3}})
	} else {
		q = b.Transpose(q, 0, 2, 1, 3)
		k = b.Transpose(k, 0, 2, 1, 3)
		v = b.Transpose(v, 0, 2, 1, 3)
		scores = b.Dot(q, k, hlo.DotDims{LhsBatch: []int{0, 1}, RhsBatch: []int{0, 1}, LhsContracting: []int{3}, RhsContracting: []int{3}})
	}
	// scores: [B, H, Sq, Sk]
	sdims := scores.Shape.Dims
	s := b.Convert(n.scale(scores, 1/math.Sqrt(float64(dh))), hlo.F32)
	if o.maskBias != nil {
		s = b.AddOp(s, b.Broadcast(o.maskBias, []int{0, 3}, sdims...))
	}
	if o.causal {
		row := b.Iota(hlo.S32, 0, sq, sk)
		col := b.Iota(hlo.S32, 1, sq, sk)
		keep := b.Broadcast(b.Compare("GE", row, col), []int{2, 3}, sdims...)
		s = b.Select(keep, s, b.Full(hlo.F32, -1e9, sdims...))
	}
	p := b.Convert(n.softmax(s, 3), n.act)
	var ctx *hlo.Instruction
	if o.general {
		ctx = b.Dot(p, v, hlo.DotDims{LhsBatch: []int{0, 1}, RhsBatch: []int{0, 2}, LhsContracting: []int{3}, RhsContracting: []int{1}})
	} else {
		ctx = b.Dot(p, v, hlo.DotDims{LhsBatch: []int{0, 1}, RhsBatch: []int{0, 1}, LhsContracting: []int{3}, RhsContracting: []int{2}})
	}
	// ctx: [B, H, Sq, dh] → [B·Sq, D]
	ctx = b.Reshape(b.Transpose(ctx, 0, 2, 1, 3), batch*sq, D)
	return n.denseSplit(ctx, D, true, tpRow)
}

// ffn is dense(D→F) → activation → dense(F→D); in a tensor-parallel net the first is
// column-parallel and the second row-parallel (denseSplit).
func (n *net) ffn(x *hlo.Instruction, f int, act string) *hlo.Instruction {
	return n.denseSplit(n.activation(n.denseSplit(x, f, true, tpColumn), act), x.Shape.Dims[1], true, tpRow)
}

// postLNLayer is an encoder layer of BERT and the original Transformer:
// x = LN(x + attn(x)); x = LN(x + ffn(x)).
func (n *net) postLNLayer(x *hlo.Instruction, batch, seq, ffnDim int, act string, o attnOpts) *hlo.Instruction {
	b := n.b
	x = n.layerNorm(b.AddOp(x, n.attention(x, x, batch, seq, seq, o)))
	return n.layerNorm(b.AddOp(x, n.ffn(x, ffnDim, act)))
}

// preLNLayer is a GPT-2/ViT layer: x = x + attn(LN(x)); x = x + ffn(LN(x)).
func (n *net) preLNLayer(x *hlo.Instruction, batch, seq, ffnDim int, act string, o attnOpts) *hlo.Instruction {
	b := n.b
	h := n.layerNorm(x)
	x = b.AddOp(x, n.attention(h, h, batch, seq, seq, o))
	return b.AddOp(x, n.ffn(n.layerNorm(x), ffnDim, act))
}

// addPositions adds a [S, D] position table to x [B·S, D].
func (n *net) addPositions(x, pos *hlo.Instruction, batch, seq int) *hlo.Instruction {
	b := n.b
	D := x.Shape.Dims[1]
	x3 := b.Reshape(x, batch, seq, D)
	return b.Reshape(b.AddOp(x3, b.Broadcast(pos, []int{1, 2}, batch, seq, D)), batch*seq, D)
}

// learnedPositions returns the first seq rows of a trainable [maxPos, D] table.
func (n *net) learnedPositions(maxPos, seq, d int) *hlo.Instruction {
	return n.b.Slice(n.weight(maxPos, d), []int{0, 0}, []int{seq, d})
}

// tiedLogits is x [N, D] times the transposed embedding table [V, D].
func (n *net) tiedLogits(x, table *hlo.Instruction) *hlo.Instruction {
	return n.b.Dot(x, table, hlo.DotDims{LhsContracting: []int{1}, RhsContracting: []int{1}})
}

// bertConfig is a BERT encoder (post-LN, GELU, learned positions, token types). The
// inference graph is a sequence classifier, or SQuAD span logits when squad is set; the
// training step is pre-training: masked-LM over 20 gathered positions per sequence with
// the tied word embedding, plus next-sentence prediction.
type bertConfig struct {
	batch, seq, layers, hidden, heads int
	squad                             bool
	// layerOnly builds one encoder layer (Model.Layer): hidden states [B·S, D] and the
	// mask in, the layer's hidden states out.
	layerOnly bool
}

func (c bertConfig) graph(n *net) []*hlo.Instruction {
	const vocab, maxPos, preds = 30522, bertMaxPos, 20
	b := n.b
	B, S, D := c.batch, c.seq, c.hidden
	if c.layerOnly {
		x := n.input(n.act, B*S, D)
		mask := n.input(hlo.F32, B, S)
		bias := n.scale(b.Sub(mask, b.Full(hlo.F32, 1, B, S)), 10000)
		return []*hlo.Instruction{n.postLNLayer(x, B, S, 4*D, "gelu", attnOpts{heads: c.heads, maskBias: bias})}
	}
	ids := n.input(hlo.S32, B*S)
	types := n.input(hlo.S32, B*S)
	mask := n.input(hlo.F32, B, S)
	words := n.weight(vocab, D)
	x := b.AddOp(b.Gather(words, ids), b.Gather(n.weight(2, D), types))
	x = n.layerNorm(n.addPositions(x, n.learnedPositions(maxPos, S, D), B, S))
	bias := n.scale(b.Sub(mask, b.Full(hlo.F32, 1, B, S)), 10000)
	o := attnOpts{heads: c.heads, maskBias: bias}
	for l := 0; l < c.layers; l++ {
		x = n.postLNLayer(x, B, S, 4*D, "gelu", o)
	}
	first := b.Reshape(b.Slice(b.Reshape(x, B, S, D), []int{0, 0, 0}, []int{B, 1, D}), B, D)
	pooled := b.Tanh(n.dense(first, D, true))
	if n.train {
		pos := n.input(hlo.S32, B*preds)
		h := n.layerNorm(n.gelu(n.dense(b.Gather(x, pos), D, true)))
		logits := n.addBias(n.tiedLogits(h, words))
		mlm := n.classify(logits)
		nsp := n.classify(n.dense(pooled, 2, true))
		return []*hlo.Instruction{b.AddOp(mlm, nsp)}
	}
	if c.squad {
		return []*hlo.Instruction{n.dense(x, 2, true)}
	}
	return []*hlo.Instruction{n.softmax(n.dense(pooled, 2, true), 1)}
}

// bertMaxPos and gpt2MaxPos are the learned position tables' lengths: the longest
// sequences the models take.
const bertMaxPos, gpt2MaxPos = 512, 1024

// maxUnrolled bounds the sequence length of models unrolled over it (LSTMs, NMT,
// ConvDRAW steps): their graphs grow with it. maxSeq bounds the other sequence models.
const maxUnrolled, maxSeq = 256, 8192

func bertVariants() []variant {
	v := func(name string, act hlo.ElemType, train bool, c bertConfig) variant {
		return variant{name: name, family: "bert", act: act, train: train, opt: adam, graph: c.graph}.withLayerSeq(c.batch, c.seq, bertMaxPos,
			func(batch, seq int, layerOnly bool) graphFn {
				c := c
				c.batch, c.seq, c.layerOnly = batch, seq, layerOnly
				return c.graph
			})
	}
	return []variant{
		v("bert_tiny_s128_b32", hlo.F32, true, bertConfig{batch: 32, seq: 128, layers: 2, hidden: 128, heads: 2}),
		v("bert_mini_s128_b16", hlo.F32, true, bertConfig{batch: 16, seq: 128, layers: 4, hidden: 256, heads: 4}),
		v("bert_small_s128_b8", hlo.BF16, false, bertConfig{batch: 8, seq: 128, layers: 4, hidden: 512, heads: 8}),
		v("bert_medium_s256_b8", hlo.BF16, false, bertConfig{batch: 8, seq: 256, layers: 8, hidden: 512, heads: 8}),
		v("bert_base_s128_b8", hlo.BF16, true, bertConfig{batch: 8, seq: 128, layers: 12, hidden: 768, heads: 12}),
		v("bert_base_s384_b1", hlo.F32, false, bertConfig{batch: 1, seq: 384, layers: 12, hidden: 768, heads: 12, squad: true}),
		v("bert_large_s128_b1", hlo.BF16, false, bertConfig{batch: 1, seq: 128, layers: 24, hidden: 1024, heads: 16}),
	}
}

// gpt2Config is a GPT-2 decoder: pre-LN layers with causal self-attention (iota/compare/
// select mask, fused QKV projection), GELU, learned positions, a final LN and logits over
// the 50257-token vocabulary through the tied embedding. Training is next-token
// cross-entropy at every position.
type gpt2Config struct {
	batch, seq, layers, hidden, heads int
	// layerOnly builds one decoder layer (Model.Layer): hidden states [B·S, D] in, the
	// layer's out.
	layerOnly bool
}

func (c gpt2Config) graph(n *net) []*hlo.Instruction {
	const vocab, maxPos = 50257, gpt2MaxPos
	B, S, D := c.batch, c.seq, c.hidden
	if c.layerOnly {
		x := n.input(n.act, B*S, D)
		return []*hlo.Instruction{n.preLNLayer(x, B, S, 4*D, "gelu", attnOpts{heads: c.heads, general: true, fused: true, causal: true})}
	}
	ids := n.input(hlo.S32, B*S)
	wte := n.weight(vocab, D)
	n.vocabParallel()
	x := n.addPositions(n.b.Gather(wte, ids), n.learnedPositions(maxPos, S, D), B, S)
	o := attnOpts{heads: c.heads, general: true, fused: true, causal: true}
	for l := 0; l < c.layers; l++ {
		x = n.preLNLayer(x, B, S, 4*D, "gelu", o)
	}
	logits := n.tiedLogits(n.layerNorm(x), wte)
	if n.train {
		return []*hlo.Instruction{n.classify(logits)}
	}
	return []*hlo.Instruction{logits}
}

func gpt2Variants() []variant {
	v := func(name string, act hlo.ElemType, train bool, c gpt2Config) variant {
		return variant{name: name, family: "gpt2", act: act, train: train, opt: adam, graph: c.graph}.withLayerSeq(c.batch, c.seq, gpt2MaxPos,
			func(batch, seq int, layerOnly bool) graphFn {
				c := c
				c.batch, c.seq, c.layerOnly = batch, seq, layerOnly
				return c.graph
			})
	}
	return []variant{
		v("gpt2_tiny_s128_b8", hlo.F32, true, gpt2Config{batch: 8, seq: 128, layers: 4, hidden: 384, heads: 6}),
		v("distilgpt2_s256_b4", hlo.BF16, true, gpt2Config{batch: 4, seq: 256, layers: 6, hidden: 768, heads: 12}),
		v("gpt2_small_s128_b8", hlo.BF16, true, gpt2Config{batch: 8, seq: 128, layers: 12, hidden: 768, heads: 12}),
		v("gpt2_small_s1024_b1", hlo.F32, false, gpt2Config{batch: 1, seq: 1024, layers: 12, hidden: 768, heads: 12}),
		withTensorParallel(v("gpt2_medium_s256_b2", hlo.BF16, false, gpt2Config{batch: 2, seq: 256, layers: 24, hidden: 1024, heads: 16})),
		// Megatron-LM's 8.3B GPT-2 (Shoeybi et al. 2019, Table 1), the model the paper
		// splits 8 ways.
		withTensorParallel(v("gpt2_megatron8b_s1024_b1", hlo.BF16, false, gpt2Config{batch: 1, seq: 1024, layers: 72, hidden: 3072, heads: 32})),
	}
}

// transformerConfig is an encoder-decoder Transformer for translation (post-LN, ReLU
// feed-forward, sinusoidal positions as constants, shared source/target embedding tied
// to the output projection). The decoder runs teacher-forced over the target: causal
// self-attention, then cross-attention over the encoder output.
type transformerConfig struct {
	batch, srcLen, tgtLen int
	layers, hidden, heads int
	ffn, vocab            int
}

func (c transformerConfig) graph(n *net) []*hlo.Instruction {
	b := n.b
	B, D := c.batch, c.hidden
	src := n.input(hlo.S32, B*c.srcLen)
	tgt := n.input(hlo.S32, B*c.tgtLen)
	srcMask := n.input(hlo.F32, B, c.srcLen)
	emb := n.weight(c.vocab, D)
	n.vocabParallel()
	embed := func(ids *hlo.Instruction, seq int) *hlo.Instruction {
		x := n.scale(b.Gather(emb, ids), math.Sqrt(float64(D)))
		return n.addPositions(x, b.Constant(n.act, seq, D), B, seq)
	}
	bias := n.scale(b.Sub(srcMask, b.Full(hlo.F32, 1, B, c.srcLen)), 10000)
	enc := embed(src, c.srcLen)
	for l := 0; l < c.layers; l++ {
		enc = n.postLNLayer(enc, B, c.srcLen, c.ffn, "relu", attnOpts{heads: c.heads, maskBias: bias})
	}
	dec := embed(tgt, c.tgtLen)
	for l := 0; l < c.layers; l++ {
		self := n.attention(dec, dec, B, c.tgtLen, c.tgtLen, attnOpts{heads: c.heads, causal: true})
		dec = n.layerNorm(b.AddOp(dec, self))
		cross := n.attention(dec, enc, B, c.tgtLen, c.srcLen, attnOpts{heads: c.heads, maskBias: bias})
		dec = n.layerNorm(b.AddOp(dec, cross))
		dec = n.layerNorm(b.AddOp(dec, n.ffn(dec, c.ffn, "relu")))
	}
	logits := n.tiedLogits(dec, emb)
	if n.train {
		return []*hlo.Instruction{n.classify(logits)}
	}
	return []*hlo.Instruction{n.logSoftmax(logits)}
}

func translationVariants() []variant {
	v := func(name string, act hlo.ElemType, train bool, c transformerConfig) variant {
		return variant{name: name, family: "translation", act: act, train: train, opt: adam, graph: c.graph}.withSeq(c.srcLen, maxSeq,
			func(seq int) graphFn { c := c; c.srcLen, c.tgtLen = seq, seq; return c.graph })
	}
	return []variant{
		v("transformer_tiny_s32_b64", hlo.F32, true, transformerConfig{batch: 64, srcLen: 32, tgtLen: 32, layers: 2, hidden: 256, heads: 4, ffn: 1024, vocab: 8000}),
		v("transformer_small_s64_b32", hlo.BF16, true, transformerConfig{batch: 32, srcLen: 64, tgtLen: 64, layers: 3, hidden: 512, heads: 8, ffn: 2048, vocab: 32000}),
		v("transformer_base_s128_b16", hlo.BF16, true, transformerConfig{batch: 16, srcLen: 128, tgtLen: 128, layers: 6, hidden: 512, heads: 8, ffn: 2048, vocab: 37000}),
		v("transformer_base_s256_b8", hlo.BF16, false, transformerConfig{batch: 8, srcLen: 256, tgtLen: 256, layers: 6, hidden: 512, heads: 8, ffn: 2048, vocab: 37000}),
		withTensorParallel(v("transformer_big_s128_b4", hlo.BF16, false, transformerConfig{batch: 4, srcLen: 128, tgtLen: 128, layers: 6, hidden: 1024, heads: 16, ffn: 4096, vocab: 32000})),
		nmtVariant("nmt_lstm_h512_s24_b32", hlo.F32, true, nmtConfig{batch: 32, srcLen: 24, tgtLen: 24, hidden: 512, vocab: 16000}),
		nmtVariant("nmt_lstm_h1024_s16_b16", hlo.BF16, false, nmtConfig{batch: 16, srcLen: 16, tgtLen: 16, hidden: 1024, vocab: 32000}),
	}
}

// vitConfig is a Vision Transformer: patchify (a stride-patch convolution, or
// reshape/transpose + dense), a class token, learned positions, pre-LN layers with GELU
// and a classifier on the class token.
type vitConfig struct {
	batch, res, patch          int
	layers, hidden, heads, mlp int
	classes                    int
	convPatch                  bool
}

func (c vitConfig) graph(n *net) []*hlo.Instruction {
	b := n.b
	B, D, p := c.batch, c.hidden, c.patch
	g := c.res / p
	img := b.Convert(n.input(hlo.F32, B, c.res, c.res, 3), n.act)
	var tok *hlo.Instruction
	if c.convPatch {
		wd := hlo.WindowDim{Size: p, Stride: p, LhsDilate: 1, RhsDilate: 1}
		conv := b.Conv(img, n.weight(p, p, 3, D), hlo.NHWC(), hlo.Window{Dims: []hlo.WindowDim{wd, wd}}, 1)
		tok = b.Reshape(n.addBias(conv), B, g*g, D)
	} else {
		x := b.Reshape(img, B, g, p, g, p, 3)
		x = b.Reshape(b.Transpose(x, 0, 1, 3, 2, 4, 5), B*g*g, p*p*3)
		tok = b.Reshape(n.dense(x, D, true), B, g*g, D)
	}
	T := g*g + 1
	cls := b.Broadcast(n.weight(D), []int{2}, B, 1, D)
	x := b.Reshape(b.Concat(1, cls, tok), B*T, D)
	x = n.addPositions(x, n.weight(T, D), B, T)
	o := attnOpts{heads: c.heads, general: true}
	for l := 0; l < c.layers; l++ {
		x = n.preLNLayer(x, B, T, c.mlp, "gelu", o)
	}
	x = n.layerNorm(x)
	first := b.Reshape(b.Slice(b.Reshape(x, B, T, D), []int{0, 0, 0}, []int{B, 1, D}), B, D)
	logits := n.dense(first, c.classes, true)
	if n.train {
		return []*hlo.Instruction{n.classify(logits)}
	}
	return []*hlo.Instruction{n.softmax(logits, 1)}
}

func vitVariants() []variant {
	v := func(name string, act hlo.ElemType, train bool, c vitConfig) variant {
		return variant{name: name, family: "vit", act: act, train: train, opt: adam, graph: c.graph}
	}
	return []variant{
		v("vit_ti16_224_b32", hlo.F32, true, vitConfig{batch: 32, res: 224, patch: 16, layers: 12, hidden: 192, heads: 3, mlp: 768, classes: 1000, convPatch: true}),
		v("vit_s16_224_b16", hlo.BF16, true, vitConfig{batch: 16, res: 224, patch: 16, layers: 12, hidden: 384, heads: 6, mlp: 1536, classes: 1000}),
		v("vit_b16_224_b8", hlo.BF16, false, vitConfig{batch: 8, res: 224, patch: 16, layers: 12, hidden: 768, heads: 12, mlp: 3072, classes: 1000, convPatch: true}),
		v("vit_b32_224_b32", hlo.BF16, true, vitConfig{batch: 32, res: 224, patch: 32, layers: 12, hidden: 768, heads: 12, mlp: 3072, classes: 1000}),
		v("vit_l16_224_b1", hlo.F32, false, vitConfig{batch: 1, res: 224, patch: 16, layers: 24, hidden: 1024, heads: 16, mlp: 4096, classes: 1000, convPatch: true}),
		v("vit_b16_384_b1", hlo.BF16, false, vitConfig{batch: 1, res: 384, patch: 16, layers: 12, hidden: 768, heads: 12, mlp: 3072, classes: 1000}),
	}
}
