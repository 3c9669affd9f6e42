package gnn

import (
	"fmt"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"

	"github.com/tpucost/tpucost/nn"
)

// Segment training (after the TpuGraphs baseline's graph segment training, Cao et al.
// 2023): with Config.MaxSegmentNodes = S > 0, a kernel of n > S nodes is split into
// q = ⌈n/S⌉ segments of consecutive node indices (sizes ⌊n/q⌋ or ⌈n/q⌉); edges between
// segments are cut, the GraphSAGE layers run on each segment alone, and the per-kernel
// reductions combine the segments exactly: sum = Σ_j sum_j, mean = Σ_j sum_j / n,
// max = max_j max_j. This is the model (prediction computes it segment by segment).
// A training step backpropagates through one segment per kernel, drawn from the epoch's
// generator; the other segments' pooled statistics are computed with the current
// parameters without gradients (detached) and enter the batch as constants. A batch then
// holds at most S nodes per kernel (per configuration for a per-node model), whatever the
// kernel's size. Kernels of at most S nodes are one segment: nothing changes for them.

// segStats are the pooled final node embeddings of some segments of a kernel (for one
// configuration of a per-node model): their sum and elementwise max (−Inf when empty).
type segStats struct {
	sum, max []float32 // [Hidden]
}

func emptyStats(h int) segStats {
	s := segStats{sum: make([]float32, h), max: make([]float32, h)}
	for i := range s.max {
		s.max[i] = float32(math.Inf(-1))
	}
	return s
}

// add merges o into s.
func (s segStats) add(o segStats) {
	for i := range s.sum {
		s.sum[i] += o.sum[i]
		s.max[i] = max(s.max[i], o.max[i])
	}
}

// segments returns the segment bounds of a kernel of n nodes: segment j is nodes
// b[j]..b[j+1]−1. A single segment when maxNodes is 0 or n ≤ maxNodes.
func segments(n, maxNodes int) []int {
	if maxNodes <= 0 || n <= maxNodes {
		return []int{0, n}
	}
	q := (n + maxNodes - 1) / maxNodes
	b := make([]int, q+1)
	for j := range b {
		b[j] = j * n / q
	}
	return b
}

// segmentInputs allocates the segment inputs of a segmented model's batch: no other
// segments (sum 0, max −Inf) and zero node counts until poolGroup fills a group.
func (b *batch) segmentInputs(c Config) {
	if c.MaxSegmentNodes == 0 {
		return
	}
	H, B := c.Hidden, b.shape.B
	b.otherSum = make([]float32, B*H)
	b.otherMax = make([]float32, B*H)
	for i := range b.otherMax {
		b.otherMax[i] = float32(math.Inf(-1))
	}
	b.invNodes = make([]float32, B)
}

// poolGroup fills pool group g's segment inputs from item it (its i-th statistics).
func (b *batch) poolGroup(c Config, g int, it item, i int) {
	if c.MaxSegmentNodes == 0 {
		return
	}
	H := c.Hidden
	b.invNodes[g] = 1 / float32(it.k.nodes())
	if it.other != nil {
		copy(b.otherSum[g*H:(g+1)*H], it.other[i].sum)
		copy(b.otherMax[g*H:(g+1)*H], it.other[i].max)
	}
}

// ---- combining a segment's pooled embeddings with the other segments' ----

// combineOp is, for reduction red, per row b of a pooled segment p [B, H] (a sum for sum
// and mean, a max for max) with the other segments' o [B, H] (their sum, or max) and
// inv [B] (1/node count): sum: p + o; mean: (p + o)·inv; max: max(p, o). The gradient
// with respect to p is g, g·inv, or g·[p ≥ o] (the other segments are constants).
type combineOp struct {
	nn.OpBase
	red nn.Reduction
}

func newCombineOp(red nn.Reduction) combineOp {
	return combineOp{nn.OpBase{ID: "gnn.combine{" + string(red) + "}"}, red}
}

func (op combineOp) Arity() int { return 3 }
func (op combineOp) Type() hm.Type {
	return hm.NewFnType(nn.TensorType(2), nn.TensorType(2), nn.TensorType(1), nn.TensorType(2))
}
func (op combineOp) Do(vals ...G.Value) (G.Value, error) {
	return combineVals(op.red, vals, nil)
}

// combineVals computes the op (g nil) or its gradient with respect to p (g the output's
// gradient), in the inputs' precision.
func combineVals(red nn.Reduction, vals []G.Value, g G.Value) (G.Value, error) {
	p32, p64, err := nn.Floats(vals[0])
	if err != nil {
		return nil, err
	}
	o32, o64, err := nn.Floats(vals[1])
	if err != nil {
		return nil, err
	}
	i32, i64, err := nn.Floats(vals[2])
	if err != nil {
		return nil, err
	}
	shp := vals[0].Shape()
	if p32 != nil {
		var g32 []float32
		if g != nil {
			if g32, _, err = nn.Floats(g); err != nil {
				return nil, err
			}
		}
		return nn.Dense(combine(red, p32, o32, i32, g32, shp[1]), shp...), nil
	}
	var g64 []float64
	if g != nil {
		if _, g64, err = nn.Floats(g); err != nil {
			return nil, err
		}
	}
	return nn.Dense(combine(red, p64, o64, i64, g64, shp[1]), shp...), nil
}

func combine[T float32 | float64](red nn.Reduction, p, o, inv, g []T, width int) []T {
	out := make([]T, len(p))
	for i := range p {
		r := i / width
		switch red {
		case nn.ReduceSum:
			if g == nil {
				out[i] = p[i] + o[i]
			} else {
				out[i] = g[i]
			}
		case nn.ReduceMean:
			if g == nil {
				out[i] = (p[i] + o[i]) * inv[r]
			} else {
				out[i] = g[i] * inv[r]
			}
		case nn.ReduceMax:
			if g == nil {
				out[i] = max(p[i], o[i])
			} else if p[i] >= o[i] {
				out[i] = g[i]
			}
		}
	}
	return out
}

func (op combineOp) DiffWRT(int) []bool { return []bool{true, false, false} }
func (op combineOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	d, err := G.ApplyOp(combineDiffOp{nn.OpBase{ID: "gnn.combineDiff{" + string(op.red) + "}"}, op.red}, inputs[0], inputs[1], inputs[2], grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{d, nil, nil}, nil
}

type combineDiffOp struct {
	nn.OpBase
	red nn.Reduction
}

func (op combineDiffOp) Arity() int { return 4 }
func (op combineDiffOp) Type() hm.Type {
	return hm.NewFnType(nn.TensorType(2), nn.TensorType(2), nn.TensorType(1), nn.TensorType(2), nn.TensorType(2))
}
func (op combineDiffOp) Do(vals ...G.Value) (G.Value, error) {
	return combineVals(op.red, vals[:3], vals[3])
}

// segmentNodes adds a segmented model's inputs to n and returns the pooled reduction
// r of the final node embeddings h combined with the other segments.
func (n *net) segmentPool(h *G.Node, r nn.Reduction) *G.Node {
	if n.otherSum == nil {
		s, H := n.shape, n.cfg.Hidden
		n.otherSum = G.NewMatrix(n.g, n.dt, G.WithShape(s.B, H), G.WithName("other_sum"))
		n.otherMax = G.NewMatrix(n.g, n.dt, G.WithShape(s.B, H), G.WithName("other_max"))
		n.invNodes = G.NewVector(n.g, n.dt, G.WithShape(s.B), G.WithName("inv_nodes"))
		n.segSum = nn.Gather(h, n.poolIdx, nn.ReduceSum, s.M)
		n.segMax = nn.Gather(h, n.poolIdx, nn.ReduceMax, s.M)
	}
	switch r {
	case nn.ReduceMax:
		return G.Must(G.ApplyOp(newCombineOp(r), n.segMax, n.otherMax, n.invNodes))
	default:
		return G.Must(G.ApplyOp(newCombineOp(r), n.segSum, n.otherSum, n.invNodes))
	}
}

// bindSegments adds the segment inputs of b to lets.
func (n *net) bindSegments(b *batch, lets []let) ([]let, error) {
	if n.otherSum == nil {
		return lets, nil
	}
	if b.invNodes == nil {
		return nil, fmt.Errorf("batch has no segment inputs")
	}
	s, H := n.shape, n.cfg.Hidden
	return append(lets, let{n.otherSum, n.floatTensor(n.otherSum, b.otherSum, s.B, H)}, let{n.otherMax, n.floatTensor(n.otherMax, b.otherMax, s.B, H)},
		let{n.invNodes, n.floatTensor(n.invNodes, b.invNodes, s.B)}), nil
}

// poolStats returns the per-group segment statistics of the last inference run.
func (n *net) poolStats(groups int) []segStats {
	H := n.cfg.Hidden
	out := make([]segStats, groups)
	for g := range out {
		out[g] = segStats{sum: make([]float32, H), max: make([]float32, H)}
		for j := range H {
			out[g].sum[j] = float32(n.lastSum[g*H+j])
			out[g].max[j] = float32(n.lastMax[g*H+j])
		}
	}
	return out
}

// groups is the number of pool groups item it fills in a batch of model c.
func (it item) groups(c Config) int {
	if c.PerNode() {
		return len(it.cfgs)
	}
	return 1
}

// segmentStats runs configurations cfgs of k on segment lo..hi−1 alone (an inference
// engine, no gradients) and returns the pooled statistics of each of the item's pool
// groups. Per-node models run the configurations in chunks of at most maxBatchNodes
// nodes.
func (e *engine) segmentStats(k *kernel, cfgs []int, lo, hi int) ([]segStats, error) {
	if e.train {
		return nil, fmt.Errorf("segment statistics need an inference engine")
	}
	per := len(cfgs)
	if e.m.Config.PerNode() {
		per = max(1, maxBatchNodes/(hi-lo))
	}
	var out []segStats
	for first := 0; first < len(cfgs); first += per {
		it := item{k: k, cfgs: cfgs[first:min(first+per, len(cfgs))], lo: lo, hi: hi}
		b, err := newBatch(e.m.Config, []item{it}, e.bucket, 0, e.m.Loss, e.m.Target, false)
		if err != nil {
			return nil, err
		}
		n, _, _, err := e.run(b)
		if err != nil {
			return nil, err
		}
		out = append(out, n.poolStats(it.groups(e.m.Config))...)
		if !e.m.Config.PerNode() {
			break // the pooled statistics do not depend on the configuration
		}
	}
	return out, nil
}

// otherStats returns the combined statistics of every segment of k but segment skip
// (bounds segs, from segments), one per pool group of an item of cfgs.
func (e *engine) otherStats(k *kernel, cfgs []int, segs []int, skip int) ([]segStats, error) {
	groups := item{k: k, cfgs: cfgs}.groups(e.m.Config)
	acc := make([]segStats, groups)
	for g := range acc {
		acc[g] = emptyStats(e.m.Config.Hidden)
	}
	for j := 0; j+1 < len(segs); j++ {
		if j == skip {
			continue
		}
		st, err := e.segmentStats(k, cfgs, segs[j], segs[j+1])
		if err != nil {
			return nil, err
		}
		for g := range acc {
			acc[g].add(st[g])
		}
	}
	return acc, nil
}

// predictSegmented scores configurations cfgs of a kernel with more than one segment:
// the other segments' statistics, then segment 0 with them (the exact model of
// segment.go).
func (e *engine) predictSegmented(k *kernel, cfgs []int, segs []int) ([]float64, error) {
	var out []float64
	per := len(cfgs)
	if e.m.Config.PerNode() {
		per = max(1, maxBatchNodes/(segs[1]-segs[0]))
	}
	per = min(per, maxBatchSamples)
	for first := 0; first < len(cfgs); first += per {
		chunk := cfgs[first:min(first+per, len(cfgs))]
		other, err := e.otherStats(k, chunk, segs, 0)
		if err != nil {
			return nil, err
		}
		it := item{k: k, cfgs: chunk, lo: segs[0], hi: segs[1], other: other}
		b, err := newBatch(e.m.Config, []item{it}, e.bucket, 0, e.m.Loss, e.m.Target, false)
		if err != nil {
			return nil, err
		}
		_, o, _, err := e.run(b)
		if err != nil {
			return nil, err
		}
		out = append(out, o[:len(chunk)]...)
	}
	return out, nil
}
