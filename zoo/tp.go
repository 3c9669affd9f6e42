package zoo

import (
	"strconv"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// Tensor parallelism (Megatron-LM, Shoeybi et al. 2019, §3): a transformer layer's two
// blocks each split one matmul pair over the devices. The first matmul of a block (the
// attention's Q, K and V projections; the MLP's first layer) is column-parallel: its
// weight is sharded along its output dimension, so every device computes its own heads
// or its own slice of the hidden features and needs no communication. The second (the
// attention's output projection; the MLP's second layer) is row-parallel: its weight is
// sharded along its input dimension, every device computes a partial sum, and one
// all-reduce makes the block's output whole. Activations are replicated between blocks:
// two all-reduces per layer in the forward pass. The embedding table is split along the
// vocabulary, as the paper splits it (vocabParallel).
//
// A tensor-parallel zoo model is the same graph with GSPMD annotations (sharding= on
// the entry parameters, Sharding custom-calls as constraints, num_partitions in the
// header), as JAX dumps it before XLA's SPMD partitioner runs; compiler/spmd partitions
// it. The fused QKV projection is the one difference in the graph: its columns are
// ordered head by head (headMajorQKV). The names of such models end in
// TensorParallelSuffix.

// tensorParallelWays is the device count of the zoo's tensor-parallel variants.
const tensorParallelWays = 8

// TensorParallelSuffix is the name suffix of the zoo's tensor-parallel variants
// ("gpt2_medium_s256_b2_tp8"): an inference graph annotated for 8-way tensor
// parallelism with num_partitions=8 in its module header.
const TensorParallelSuffix = "_tp8"

// tpSplit says how a dense layer's weight is split over the devices.
type tpSplit int

const (
	tpColumn tpSplit = iota // sharded along the output dimension (no collective)
	tpRow                   // sharded along the input dimension (an all-reduce after)
)

// denseSplit is dense(x, out, bias) with, in a tensor-parallel net (n.tp > 1), its
// weight annotated as split says: column-parallel weights (and their bias) are tiled
// n.tp ways along the output features; row-parallel weights along the input features,
// their bias replicated, and the result is constrained to be replicated (the block's
// output, after its all-reduce). In any other net it is dense.
func (n *net) denseSplit(x *hlo.Instruction, out int, bias bool, split tpSplit) *hlo.Instruction {
	if n.tp <= 1 {
		return n.dense(x, out, bias)
	}
	in := x.Shape.Dims[x.Shape.Rank()-1]
	w := n.weight(in, out)
	switch split {
	case tpColumn:
		n.shardLast(hlo.Tiled(1, n.tp))
	case tpRow:
		n.shardLast(hlo.Tiled(n.tp, 1))
	}
	y := n.b.MatMul(x, w)
	if bias {
		y = n.addBias(y)
		if split == tpColumn {
			n.shardLast(hlo.Tiled(n.tp))
		} else {
			n.shardLast(hlo.Replicated())
		}
	}
	if split == tpRow {
		y = n.constrain(y, hlo.Replicated())
	}
	return y
}

// shardLast annotates the trainable parameter added last with s.
func (n *net) shardLast(s *hlo.Sharding) {
	n.params[len(n.params)-1].Sharding = s
}

// constrain adds a Sharding custom-call: x, wanted with sharding s (as JAX's
// with_sharding_constraint writes it).
func (n *net) constrain(x *hlo.Instruction, s *hlo.Sharding) *hlo.Instruction {
	return n.b.Add(&hlo.Instruction{Opcode: hlo.OpCustomCall, Operands: []*hlo.Instruction{x}, Shape: x.Shape.Clone(),
		Extra: []hlo.Attr{{Key: "custom_call_target", Value: `"Sharding"`}}, Sharding: s})
}

// headMajorQKV is the fused Q, K and V projection of x [N, D] for h heads in a
// tensor-parallel net, as Megatron-LM lays it out: one column-parallel [D, 3D] weight
// whose columns are ordered (head, q|k|v, head dim), so that each device's columns are
// the q, k and v of its own heads. It returns q, k and v, each [N, h, 1, D/h].
func (n *net) headMajorQKV(x *hlo.Instruction, h int) (q, k, v *hlo.Instruction) {
	b := n.b
	rows, D := x.Shape.Dims[0], x.Shape.Dims[1]
	if h%n.tp != 0 {
		b.Failf("tensor parallelism: %d heads do not split over %d devices", h, n.tp)
	}
	qkv := b.Reshape(n.denseSplit(x, 3*D, true, tpColumn), rows, h, 3, D/h)
	part := func(i int) *hlo.Instruction {
		return b.Slice(qkv, []int{0, 0, i, 0}, []int{rows, h, i + 1, D / h})
	}
	return part(0), part(1), part(2)
}

// annotateTensorParallel finishes a tensor-parallel module (n.tp > 1): every entry
// parameter without a sharding (the inputs, the replicated weights) is replicated, and
// the header says num_partitions=n.tp.
func annotateTensorParallel(m *hlo.Module, tp int) {
	for _, in := range m.Entry.Instructions {
		if in.Opcode == hlo.OpParameter && in.Sharding == nil {
			in.Sharding = hlo.Replicated()
		}
	}
	m.Attrs = append(m.Attrs, hlo.Attr{Key: "num_partitions", Value: strconv.Itoa(tp)})
}

// tensorParallel returns v's inference graph annotated for tensorParallelWays-way tensor
// parallelism (at every sequence length v takes), named v.name + TensorParallelSuffix.
func (v variant) tensorParallel() Model {
	with := func(g graphFn) graphFn {
		return func(n *net) []*hlo.Instruction { n.tp = tensorParallelWays; return g(n) }
	}
	v.graph = with(v.graph)
	if seq := v.seq; seq != nil {
		v.seq = func(s int) graphFn { return with(seq(s)) }
	}
	return v.model(v.name+TensorParallelSuffix, Inference)
}

// withTensorParallel marks v as having a tensor-parallel variant (its heads, model and
// feed-forward widths must split tensorParallelWays ways).
func withTensorParallel(v variant) variant {
	v.tp = true
	return v
}

// vocabParallel annotates the embedding table added last ([vocab, D]) in a
// tensor-parallel net as Megatron-LM splits it (§3): along the vocabulary, so that each
// device gathers the rows it holds (an all-reduce makes the embeddings whole) and
// computes the logits of its own tokens of the vocabulary (the output stays split).
func (n *net) vocabParallel() {
	if n.tp > 1 {
		n.shardLast(hlo.Tiled(n.tp, 1))
	}
}
