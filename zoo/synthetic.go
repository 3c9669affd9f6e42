package zoo

import (
	"fmt"
	"math/rand/v2"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// maxSyntheticBlock bounds the instructions one synthetic block adds (the largest, an
// attention block with its layer norm, adds about 70).
const maxSyntheticBlock = 200

// Synthetic builds a module named "synthetic_<nodes>_<seed>" of exactly nodes
// instructions (counting the shared reducer computations) for scale tests, made of
// repeating transformer-like blocks over a [rows, width] activation: residual MLP blocks
// (dot, bias broadcast, GELU or ReLU, dot, residual add), attention blocks (projections,
// reshapes, transposes, batched dots, a softmax by reduce-max/exp/reduce-sum/divide),
// layer norms (reductions and broadcasts), width-changing projections and sequence-mixing
// blocks (transpose, reduce, broadcast back). The seed picks the element type, batch and
// sequence sizes, the widths (multiples of 128 and not) and the order of blocks; the same
// arguments always give the same module. nodes must be at least 2. The module passes
// hlo.Verify; building takes time and memory linear in nodes.
func Synthetic(nodes int, seed int64) (*hlo.Module, error) {
	if nodes < 2 {
		return nil, fmt.Errorf("zoo: Synthetic needs at least 2 nodes, got %d", nodes)
	}
	name := fmt.Sprintf("synthetic_%d_%d", nodes, seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5f1e1d))
	pick := func(xs ...int) int { return xs[rng.IntN(len(xs))] }
	act := hlo.F32
	if rng.IntN(2) == 0 {
		act = hlo.BF16
	}
	b := hlo.NewBuilder(name)
	n := newNet(b, false, act)
	batch := pick(1, 2, 4, 8, 16)
	seq := pick(64, 128, 197, 256, 384)
	rows := batch * seq
	x := n.input(act, rows, pick(128, 256, 300, 384, 512, 768, 1000, 1024))

	// count tracks instructions, including 3 per reducer computation the builder shares.
	reducers := map[*hlo.Computation]bool{}
	scanned := 0
	count := func() int {
		ins := b.Instructions()
		for _, in := range ins[scanned:] {
			if in.ToApply != nil {
				reducers[in.ToApply] = true
			}
		}
		scanned = len(ins)
		return len(ins) + 3*len(reducers)
	}
	for count()+maxSyntheticBlock <= nodes {
		if err := b.Err(); err != nil {
			return nil, fmt.Errorf("zoo: building %s: %w", name, err)
		}
		d := x.Shape.Dims[1]
		switch k := rng.IntN(10); {
		case k < 4: // residual MLP block
			h := n.dense(n.layerNorm(x), d*pick(2, 3, 4), true)
			h = n.activation(h, []string{"gelu", "relu", "tanh"}[rng.IntN(3)])
			x = b.AddOp(x, n.dense(h, d, true))
		case k < 7: // attention block
			heads := 1
			for _, h := range []int{16, 12, 8, 6, 4, 3, 2} {
				if d%h == 0 && d/h >= 32 && rng.IntN(2) == 0 {
					heads = h
					break
				}
			}
			o := attnOpts{heads: heads, general: rng.IntN(2) == 0, fused: rng.IntN(2) == 0, causal: rng.IntN(3) == 0}
			x = b.AddOp(x, n.attention(n.layerNorm(x), x, batch, seq, seq, o))
		case k < 8: // width change
			x = n.dense(x, pick(96, 128, 256, 300, 384, 512, 768, 1000, 1024), rng.IntN(2) == 0)
		default: // sequence mixing: mean over the sequence, broadcast back, gated
			x3 := b.Reshape(x, batch, seq, d)
			t := b.Transpose(x3, 0, 2, 1) // [B, D, S]
			m := n.scale(b.ReduceSum(t, 2), 1/float64(seq))
			g := b.Sigmoid(n.dense(m, d, true)) // [B, D]
			x3 = b.Mul(x3, b.Broadcast(g, []int{0, 2}, batch, seq, d))
			x = b.Reshape(x3, rows, d)
		}
	}
	// Fill the rest exactly with elementwise ops.
	prev := x
	for i := 0; count() < nodes; i++ {
		var y *hlo.Instruction
		switch i % 4 {
		case 0:
			y = b.Tanh(x)
		case 1:
			y = b.Mul(x, prev)
		case 2:
			y = b.AddOp(x, prev)
		default:
			y = b.Neg(x)
		}
		prev, x = x, y
	}
	m, err := b.Build(x)
	if err != nil {
		return nil, fmt.Errorf("zoo: building %s: %w", name, err)
	}
	return m, nil
}
