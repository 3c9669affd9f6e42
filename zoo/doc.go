// Package zoo builds the model graphs that tpucost compiles, simulates and learns from:
// families of real model architectures in several sizes, each as an inference graph and
// many also as a training step, plus a synthetic generator of large graphs for scale
// tests. It only builds hlo modules; it simulates nothing.
//
// # Families
//
//   - mlp: multi-layer perceptrons (ReLU, tanh or GELU).
//   - resnet_v1: ResNet-18/34/50/101 (v1.5, stride on the 3×3 convolution) and a CIFAR
//     ResNet-20.
//   - resnet_v2: pre-activation ResNets (18, 50, 101, 152, CIFAR-56).
//   - mobilenet: MobileNet v1 and v2 with width multipliers; depthwise convolutions have
//     feature_group_count equal to their channels.
//   - ssd: SSD300/SSD512 and SSDLite detectors: a convolutional backbone and extra layers,
//     box and class heads at every scale, reshaped and concatenated.
//   - unet: UNets of depth 3–5, up-sampling by transposed convolution (lhs dilation) or by
//     nearest-neighbour broadcast + reshape, skip connections by concatenation.
//   - bert: BERT encoders from tiny to large (softmax by reduce-max/exp/reduce-sum/divide,
//     layer norm, GELU by tanh); training is masked-LM plus next-sentence pre-training.
//   - gpt2: GPT-2 decoders (causal mask by iota/compare/select, tied output embedding).
//   - translation: encoder-decoder Transformers and LSTM sequence-to-sequence models with
//     attention (NMT).
//   - lstm: LSTM language models and classifiers and a vanilla RNN, unrolled 8–32 steps.
//   - wavernn: WaveRNN (GRU-like cell, coarse/fine dual softmax).
//   - convdraw: ConvDRAW (convolutional LSTM encoder and decoder, a latent per step,
//     canvas writes by transposed convolution).
//   - dlrm: DLRM recommenders (embedding gathers, bottom and top MLPs, pairwise dot
//     interaction).
//   - vit: Vision Transformers (patchify by strided convolution or reshape/transpose).
//   - flax_gpt2, flax_bert: GPT-2 and BERT as HuggingFace's Flax implementations
//     (FlaxGPT2LMHeadModel, FlaxBertForPreTraining) lower under
//     jax.jit(jax.value_and_grad(loss)) with optax's Adam (flax.go): activations stay
//     [B, S, D], a dense layer is a dot_general contracting the last dimension with a
//     [D, O] kernel, attention is two einsums (dot batch dimensions at (0, 2)), the
//     weight gradients contract {0, 1} (GradJAX, JAX's transpose rules). These are the
//     dot forms of real JAX training steps, which XLA's DotDecomposer rewrites; the
//     Keras-style bert and gpt2 above are built of 2-D dots. Same sizes and activation
//     types as the gpt2 and bert variants of the same names; dropout is off.
//
// Models mix f32 and bf16 (bf16 activations and weights, f32 normalization and softmax
// statistics, converts between them), batch sizes from 1 to 64, and dimensions both
// aligned to 128 and not, so that TPU padding matters.
//
// # Names
//
// A model name is the architecture and its size tags followed by the batch size, e.g.
// "resnet50_b32", "bert_base_s128_b8", "mobilenet_v2_140_224_b1" (width ×100, input
// resolution) or "lstm2_lm_h650_t20_b32". The JAX/Flax-style models carry the family
// name of the model they mirror prefixed "flax_" ("flax_gpt2_small_s128_b8" is
// gpt2_small_s128_b8's sizes built as Flax does). Tags: s = sequence length, h = hidden size,
// t = unrolled time steps, r = input resolution, c = channels, d = depth, b = batch size.
// The training step of a model has the same name followed by "_train"
// ("resnet50_b32_train"), and a transformer annotated for 8-way Megatron-style tensor
// parallelism (a GSPMD module with num_partitions=8; tp.go) the name followed by "_tp8"
// ("gpt2_medium_s256_b2_tp8"). Every module is named after its model.
//
// # Training steps
//
// A training step is the forward graph, a loss, the gradient of the loss with respect to
// every trainable parameter obtained by reverse-mode differentiation of the forward
// instructions (Grad), and an optimizer update, elementwise for every parameter: SGD with
// momentum for mlp, resnet, mobilenet, ssd, lstm and dlrm; Adam (with bias correction
// from a step-count input) for unet, bert, gpt2, translation, vit, wavernn and convdraw;
// optax.adam (moments, an s32 count, bias-corrected moments, p + update) for flax_gpt2
// and flax_bert, whose gradient is GradJAX's. Parameters are stored in f32 (master weights)
// and converted to the activation type where used; normalization layers use batch
// statistics. The ROOT is a tuple of the loss, the updated parameters (each with its
// parameter's shape) and the updated optimizer state.
package zoo
