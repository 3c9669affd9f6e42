package zoo

import (
	"math"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// This file builds GPT-2 and BERT as HuggingFace's Flax implementations
// (transformers' modeling_flax_gpt2.py FlaxGPT2LMHeadModel and modeling_flax_bert.py
// FlaxBertForPreTraining) lower under jax.jit(jax.value_and_grad(loss)) with an optax
// Adam update: the forms of a JAX training step, where the Keras-style gpt2 and bert
// models of transformer.go have the forms of a TensorFlow one. The difference that
// matters to XLA is the dots. Here activations stay [B, S, D] and a dense layer is a
// dot_general of the 3-D activation with a [D, O] kernel contracting the last dimension;
// attention is two einsums whose dots have batch dimensions (b, h) at positions (0, 2);
// the weight gradients (GradJAX, JAX's transpose rules) contract {0, 1}. XLA's
// DotDecomposer rewrites all of these into [batch, M, K]·[batch, K, N] with transposes
// and reshapes; the Keras-style models are built of dots that are canonical already.
// Dropout is off (deterministic=True), as everywhere in the zoo.

// flaxWeight adds a trainable parameter and returns it as stored (f32 master weights in
// a training step), unconverted: Flax modules promote a parameter to the compute dtype
// where they use it (asAct), after any transpose.
func (n *net) flaxWeight(dims ...int) *hlo.Instruction {
	p := n.b.Param(n.store, dims...)
	n.params = append(n.params, p)
	return p
}

// asAct converts x to the activation type (flax's promote_dtype; nothing when it is).
func (n *net) asAct(x *hlo.Instruction) *hlo.Instruction { return n.b.Convert(x, n.act) }

// denseGeneral is lax.dot_general(x, k, (((x.ndim-1,), (0,)), ((), ()))): x [..., D]
// contracting its last dimension with kernel k [D, O], the result [..., O].
func (n *net) denseGeneral(x, k *hlo.Instruction) *hlo.Instruction {
	return n.b.Dot(x, k, hlo.DotDims{LhsContracting: []int{x.Shape.Rank() - 1}, RhsContracting: []int{0}})
}

// flaxBias adds a trainable [O] bias (promoted to the activation type) along y's last
// dimension.
func (n *net) flaxBias(y *hlo.Instruction) *hlo.Instruction {
	o := y.Shape.Dims[y.Shape.Rank()-1]
	return n.b.AddOp(y, n.b.BroadcastTrailing(n.asAct(n.flaxWeight(o)), y.Shape.Dims...))
}

// flaxDense is flax.linen.Dense(out): a [D, out] kernel, then a bias.
func (n *net) flaxDense(x *hlo.Instruction, out int, bias bool) *hlo.Instruction {
	in := x.Shape.Dims[x.Shape.Rank()-1]
	y := n.denseGeneral(x, n.asAct(n.flaxWeight(in, out)))
	if bias {
		y = n.flaxBias(y)
	}
	return y
}

// flaxConv1D is HuggingFace's FlaxConv1D(out) of GPT-2: the kernel is stored [out, D]
// (PyTorch's Conv1D layout) and used as jnp.asarray(kernel.transpose(), dtype): a
// transpose, a convert, the dot_general of flaxDense, then the bias.
func (n *net) flaxConv1D(x *hlo.Instruction, out int) *hlo.Instruction {
	in := x.Shape.Dims[x.Shape.Rank()-1]
	k := n.asAct(n.b.Transpose(n.flaxWeight(out, in), 1, 0))
	return n.flaxBias(n.denseGeneral(x, k))
}

// flaxLayerNorm is flax.linen.LayerNorm over the last dimension: statistics in f32 by
// the fast variance (mean(x²) - mean(x)², clipped at 0), then
// (x - mean)·(rsqrt(var + eps)·scale) + bias, converted back to x's type.
func (n *net) flaxLayerNorm(x *hlo.Instruction, eps float64) *hlo.Instruction {
	b := n.b
	xf := b.Convert(x, hlo.F32)
	dims := xf.Shape.Dims
	r := len(dims)
	last := r - 1
	kept := hlo.KeptDims(r, []int{last})
	inv := 1 / float64(dims[last])
	mean := b.Mul(b.ReduceSum(xf, last), b.Full(hlo.F32, inv, dims[:last]...))
	mean2 := b.Mul(b.ReduceSum(b.Mul(xf, xf), last), b.Full(hlo.F32, inv, dims[:last]...))
	v := b.Max(b.Full(hlo.F32, 0, dims[:last]...), b.Sub(mean2, b.Mul(mean, mean)))
	rstd := b.Rsqrt(b.AddOp(v, b.Full(hlo.F32, eps, dims[:last]...)))
	mul := b.Mul(b.Broadcast(rstd, kept, dims...), b.BroadcastTrailing(n.flaxWeight(dims[last]), dims...))
	y := b.Mul(b.Sub(xf, b.Broadcast(mean, kept, dims...)), mul)
	y = b.AddOp(y, b.BroadcastTrailing(n.flaxWeight(dims[last]), dims...))
	return b.Convert(y, x.Shape.Elem)
}

// flaxEmbed is flax.linen.Embed: the table [V, D] promoted to the activation type, the
// rows of the s32 [B, S] ids taken by jnp.take along axis 0, which lowers to a gather
// of the ids reshaped to [B, S, 1] giving [B, S, D] (as in XLA's MaxText dump; Grad
// differentiates it into the matching scatter-add).
func (n *net) flaxEmbed(table, ids *hlo.Instruction) *hlo.Instruction {
	dims := append(append([]int{}, ids.Shape.Dims...), 1)
	return gatherRowsND(n.b, table, n.b.Reshape(ids, dims...))
}

// geluExact is jax.nn.gelu(x, approximate=False), HuggingFace's "gelu" in Flax BERT:
// 0.5·x·(erf(x·√½) + 1).
func (n *net) geluExact(x *hlo.Instruction) *hlo.Instruction {
	b := n.b
	e := b.Unary(hlo.OpErf, b.Mul(x, n.full(x, math.Sqrt(0.5))))
	return b.Mul(b.Mul(n.full(x, 0.5), x), b.AddOp(e, n.full(x, 1)))
}

// flaxPositions is the position ids of HuggingFace's Flax models,
// jnp.broadcast_to(jnp.arange(S)[None, :], (B, S)): an iota broadcast over the batch.
func (n *net) flaxPositions(batch, seq int) *hlo.Instruction {
	return n.b.Broadcast(n.b.Iota(hlo.S32, 0, seq), []int{1}, batch, seq)
}

// flaxAttention is the attention core of FlaxGPT2Attention and FlaxBertSelfAttention
// given q, k, v as [B, S, H, dh]: flax's dot_product_attention_weights (the query divided
// by √dh, einsum '...qhd,...khd->...hqk' as a dot_general with batch dimensions {0, 2}
// on both sides giving [B, H, Sq, Sk], the additive f32 bias [B, H, Sq, Sk] or nil, the
// softmax in f32), then einsum '...hqk,...khd->...qhd' (the dot_general gives
// [B, H, Sq, dh] with batch dimensions first; jnp.einsum transposes it to [B, Sq, H, dh])
// and the heads merged by a reshape to [B, Sq, H·dh].
func (n *net) flaxAttention(q, k, v, bias *hlo.Instruction) *hlo.Instruction {
	b := n.b
	B, Sq, H, dh := q.Shape.Dims[0], q.Shape.Dims[1], q.Shape.Dims[2], q.Shape.Dims[3]
	q = b.Div(q, n.full(q, math.Sqrt(float64(dh))))
	scores := b.Dot(q, k, hlo.DotDims{LhsBatch: []int{0, 2}, RhsBatch: []int{0, 2}, LhsContracting: []int{3}, RhsContracting: []int{3}})
	s := b.Convert(scores, hlo.F32)
	if bias != nil {
		s = b.AddOp(s, bias)
	}
	p := b.Convert(n.softmax(s, 3), n.act)
	ctx := b.Dot(p, v, hlo.DotDims{LhsBatch: []int{0, 1}, RhsBatch: []int{0, 2}, LhsContracting: []int{3}, RhsContracting: []int{1}})
	return b.Reshape(b.Transpose(ctx, 0, 2, 1, 3), B, Sq, H*dh)
}

// flaxSoftmaxCE is the loss of HuggingFace's Flax training scripts (run_clm_flax.py,
// run_mlm_flax.py): optax.softmax_cross_entropy(logits, jax.nn.one_hot(labels, V)),
// -Σ one_hot·log_softmax(logits) over the last axis, in f32, and its mean over the
// tokens. logits is [..., V], labels an s32 input of logits' leading shape.
func (n *net) flaxSoftmaxCE(logits *hlo.Instruction) *hlo.Instruction {
	b := n.b
	x := b.Convert(logits, hlo.F32)
	dims := x.Shape.Dims
	r := len(dims)
	last := r - 1
	lead := dims[:last]
	labels := n.input(hlo.S32, lead...)
	kept := hlo.KeptDims(r, []int{last})
	// jax.nn.log_softmax: x - stop_gradient(max) - log(Σ exp(x - max)).
	m := b.Reduce(x, hlo.OpMaximum, lowest(hlo.F32), last)
	n.stops = append(n.stops, m)
	shifted := b.Sub(x, b.Broadcast(m, kept, dims...))
	lse := b.Log(b.ReduceSum(b.Exp(shifted), last))
	lp := b.Sub(shifted, b.Broadcast(lse, kept, dims...))
	// jax.nn.one_hot: (labels[..., None] == iota).astype(f32).
	onehot := b.Convert(b.Compare("EQ", b.Broadcast(labels, kept, dims...), b.Iota(hlo.S32, last, dims...)), hlo.F32)
	ce := b.Neg(b.ReduceSum(b.Mul(onehot, lp), last))
	all := make([]int, len(lead))
	tokens := 1
	for i, d := range lead {
		all[i] = i
		tokens *= d
	}
	return b.Div(b.ReduceSum(ce, all...), b.ScalarConst(hlo.F32, float64(tokens)))
}

// flaxGPT2Config is FlaxGPT2LMHeadModel: token and position embeddings by gather (the
// position ids an iota), pre-LN blocks (ln_1, attention, residual; ln_2, MLP, residual)
// whose attention projects q, k and v with one FlaxConv1D(3D) split by slices
// (jnp.split) and reshaped to heads [B, S, H, dh], the causal mask by iota/compare and
// the attention bias by select (0 or the f32 minimum), the MLP c_fc → gelu_new (the tanh
// approximation) → c_proj, ln_f, and the LM head tied as Flax ties it: the embedding
// table transposed and used as the kernel of a Dense without bias, [B,S,D]·[D,V].
// Training is next-token cross-entropy at every position (flaxSoftmaxCE).
type flaxGPT2Config struct {
	batch, seq, layers, hidden, heads int
	// vocab and maxPos size the token and position tables; 0 is GPT-2's (50257,
	// gpt2MaxPos). Tests use small ones.
	vocab, maxPos int
}

func (c flaxGPT2Config) graph(n *net) []*hlo.Instruction {
	const eps = 1e-5
	vocab, maxPos := c.vocab, c.maxPos
	if vocab == 0 {
		vocab, maxPos = 50257, gpt2MaxPos
	}
	b := n.b
	B, S, D, H := c.batch, c.seq, c.hidden, c.heads
	dh := D / H
	ids := n.input(hlo.S32, B, S)
	wte := n.flaxWeight(vocab, D)
	wpe := n.flaxWeight(maxPos, D)
	x := b.AddOp(n.flaxEmbed(n.asAct(wte), ids), n.flaxEmbed(n.asAct(wpe), n.flaxPositions(B, S)))
	// make_causal_mask: arange(S)[:, None] >= arange(S)[None, :]; the bias
	// lax.select(mask, 0, finfo(f32).min), broadcast over batch and heads.
	causal := b.Compare("GE", b.Iota(hlo.S32, 0, S, S), b.Iota(hlo.S32, 1, S, S))
	bias := b.Select(causal, b.Full(hlo.F32, 0, S, S), b.Full(hlo.F32, lowest(hlo.F32), S, S))
	bias = b.Broadcast(bias, []int{2, 3}, B, H, S, S)
	for l := 0; l < c.layers; l++ {
		h := n.flaxLayerNorm(x, eps)
		qkv := n.flaxConv1D(h, 3*D)
		head := func(i int) *hlo.Instruction {
			return b.Reshape(b.Slice(qkv, []int{0, 0, i * D}, []int{B, S, (i + 1) * D}), B, S, H, dh)
		}
		x = b.AddOp(n.flaxConv1D(n.flaxAttention(head(0), head(1), head(2), bias), D), x)
		h = n.flaxLayerNorm(x, eps)
		x = b.AddOp(x, n.flaxConv1D(n.gelu(n.flaxConv1D(h, 4*D)), D))
	}
	h := n.flaxLayerNorm(x, eps)
	logits := n.denseGeneral(h, n.asAct(b.Transpose(wte, 1, 0)))
	if n.train {
		return []*hlo.Instruction{n.flaxSoftmaxCE(logits)}
	}
	return []*hlo.Instruction{logits}
}

func flaxGPT2Variants() []variant {
	v := func(name string, act hlo.ElemType, c flaxGPT2Config) variant {
		return variant{name: name, family: "flax_gpt2", act: act, train: true, opt: optaxAdam, graph: c.graph}.withSeq(c.seq, gpt2MaxPos,
			func(seq int) graphFn { c := c; c.seq = seq; return c.graph })
	}
	return []variant{
		v("flax_gpt2_tiny_s128_b8", hlo.F32, flaxGPT2Config{batch: 8, seq: 128, layers: 4, hidden: 384, heads: 6}),
		// a small mixed-precision step (bf16 activations, f32 master weights), as the
		// held-out distilgpt2 and gpt2_small are: the gym trains on it
		v("flax_gpt2_mini_s128_b8", hlo.BF16, flaxGPT2Config{batch: 8, seq: 128, layers: 4, hidden: 256, heads: 4}),
		v("flax_distilgpt2_s256_b4", hlo.BF16, flaxGPT2Config{batch: 4, seq: 256, layers: 6, hidden: 768, heads: 12}),
		v("flax_gpt2_small_s128_b8", hlo.BF16, flaxGPT2Config{batch: 8, seq: 128, layers: 12, hidden: 768, heads: 12}),
	}
}

// flaxBERTConfig is FlaxBertForPreTraining: word, position (iota ids) and token-type
// embeddings by gather, summed and layer-normed; post-LN encoder layers
// (FlaxBertSelfAttention: query, key and value Dense(D) each reshaped to heads
// [B, S, H, dh], the padding mask [B, S] made the additive bias
// lax.select(mask > 0, 0, finfo(f32).min) broadcast over heads and queries; the output
// Dense and LayerNorm(attention + input); the intermediate Dense(4D) and GELU, the output
// Dense and LayerNorm(ffn + input)); the pooler (Dense and tanh on the first token).
// Training is the zoo's BERT pre-training in Flax's forms: masked-LM over 20 gathered
// positions per sequence (transform Dense, GELU, LayerNorm, then the word embedding
// transposed as the decoder kernel plus a bias) and next-sentence prediction on the
// pooled output, both by flaxSoftmaxCE. GELU is HuggingFace's "gelu", the exact erf
// form (geluExact; the zoo's Keras-style bert uses the tanh approximation).
type flaxBERTConfig struct {
	batch, seq, layers, hidden, heads int
	// vocab, maxPos and preds size the word and position tables and the masked
	// positions per sequence; 0 is BERT's (30522, bertMaxPos, 20). Tests use small ones.
	vocab, maxPos, preds int
}

func (c flaxBERTConfig) graph(n *net) []*hlo.Instruction {
	const eps = 1e-12
	vocab, maxPos, preds := c.vocab, c.maxPos, c.preds
	if vocab == 0 {
		vocab, maxPos, preds = 30522, bertMaxPos, 20
	}
	b := n.b
	B, S, D, H := c.batch, c.seq, c.hidden, c.heads
	dh := D / H
	ids := n.input(hlo.S32, B, S)
	types := n.input(hlo.S32, B, S)
	mask := n.input(hlo.S32, B, S)
	words := n.flaxWeight(vocab, D)
	x := n.flaxEmbed(n.asAct(words), ids)
	x = b.AddOp(x, n.flaxEmbed(n.asAct(n.flaxWeight(maxPos, D)), n.flaxPositions(B, S)))
	x = b.AddOp(x, n.flaxEmbed(n.asAct(n.flaxWeight(2, D)), types))
	x = n.flaxLayerNorm(x, eps)
	// attention_mask[:, None, None, :] > 0 → select(0, finfo.min), broadcast to
	// [B, H, Sq, Sk].
	keep := b.Compare("GT", mask, b.Full(hlo.S32, 0, B, S))
	bias := b.Select(keep, b.Full(hlo.F32, 0, B, S), b.Full(hlo.F32, lowest(hlo.F32), B, S))
	bias = b.Broadcast(bias, []int{0, 3}, B, H, S, S)
	heads := func(y *hlo.Instruction) *hlo.Instruction { return b.Reshape(y, B, S, H, dh) }
	for l := 0; l < c.layers; l++ {
		q, k, v := heads(n.flaxDense(x, D, true)), heads(n.flaxDense(x, D, true)), heads(n.flaxDense(x, D, true))
		attn := n.flaxDense(n.flaxAttention(q, k, v, bias), D, true)
		x = n.flaxLayerNorm(b.AddOp(attn, x), eps)
		ffn := n.flaxDense(n.geluExact(n.flaxDense(x, 4*D, true)), D, true)
		x = n.flaxLayerNorm(b.AddOp(ffn, x), eps)
	}
	first := b.Reshape(b.Slice(x, []int{0, 0, 0}, []int{B, 1, D}), B, D)
	pooled := b.Tanh(n.flaxDense(first, D, true))
	if !n.train {
		return []*hlo.Instruction{n.softmax(n.flaxDense(pooled, 2, true), 1)}
	}
	// The masked positions: rows of x [B·S, D] at flat s32 indices [B·20], as [B, 20, D].
	pos := n.input(hlo.S32, B*preds)
	picked := b.Reshape(b.Gather(b.Reshape(x, B*S, D), pos), B, preds, D)
	h := n.flaxLayerNorm(n.geluExact(n.flaxDense(picked, D, true)), eps)
	logits := n.flaxBias(n.denseGeneral(h, n.asAct(b.Transpose(words, 1, 0))))
	mlm := n.flaxSoftmaxCE(logits)
	nsp := n.flaxSoftmaxCE(n.flaxDense(pooled, 2, true))
	return []*hlo.Instruction{b.AddOp(mlm, nsp)}
}

func flaxBERTVariants() []variant {
	v := func(name string, act hlo.ElemType, c flaxBERTConfig) variant {
		return variant{name: name, family: "flax_bert", act: act, train: true, opt: optaxAdam, graph: c.graph}.withSeq(c.seq, bertMaxPos,
			func(seq int) graphFn { c := c; c.seq = seq; return c.graph })
	}
	return []variant{
		v("flax_bert_tiny_s128_b32", hlo.F32, flaxBERTConfig{batch: 32, seq: 128, layers: 2, hidden: 128, heads: 2}),
		v("flax_bert_mini_s128_b16", hlo.F32, flaxBERTConfig{batch: 16, seq: 128, layers: 4, hidden: 256, heads: 4}),
		// mixed precision, as the held-out flax_bert_base (the gym trains on it)
		v("flax_bert_small_s128_b8", hlo.BF16, flaxBERTConfig{batch: 8, seq: 128, layers: 4, hidden: 512, heads: 8}),
		v("flax_bert_base_s128_b8", hlo.BF16, flaxBERTConfig{batch: 8, seq: 128, layers: 12, hidden: 768, heads: 12}),
	}
}
