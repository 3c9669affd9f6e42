package gnn

import (
	"fmt"
	"math"
	"slices"

	"github.com/tpucost/tpucost/features"
	"github.com/tpucost/tpucost/nn"
)

// kernel is one kernel prepared for the model: normalized features, neighbour lists
// capped at Config.MaxDegree (CSR), and its configurations with their runtimes.
type kernel struct {
	key, program string
	opcodes      []int32
	x            []float32 // normalized node features, nodes × NodeWidth
	inPtr, inIdx []int32   // operands of node v: inIdx[inPtr[v]:inPtr[v+1]]
	outPtr       []int32   // users of node v: outIdx[outPtr[v]:outPtr[v+1]]
	outIdx       []int32
	kf           []float32   // normalized kernel features
	cf           [][]float32 // normalized config features
	head         string      // the task whose head scores it (multi-task models)
	runtimes     []float64   // ns, one per config (nil when unknown, e.g. when scoring)
	analytical   []float64   // ns, one per config (may be nil)

	// Per-node configurations (PerNode models): config c sets ncf[c][i·W:(i+1)·W] on
	// node cfgNodes[i], W = Config.NodeConfigWidth.
	cfgNodes []int32
	ncf      [][]float32
}

// nodeConfigs are a kernel's per-node configurations, the form of the TpuGraphs layout
// collection (node_config_ids, node_config_feat): configuration c gives node Nodes[i]
// the features Feats[c][i·Width:(i+1)·Width]; nodes not listed get zeros.
type nodeConfigs struct {
	Nodes []int32     // configurable node indices of the kernel graph, distinct
	Width int         // features per configurable node
	Feats [][]float32 // one per configuration, len(Nodes)·Width each
}

// Validate checks nc against a graph of the given number of nodes and a model reading
// width features per node.
func (nc *nodeConfigs) Validate(nodes, width int) error {
	if nc.Width != width {
		return fmt.Errorf("per-node configurations have %d features per node, the model reads %d", nc.Width, width)
	}
	if len(nc.Nodes) == 0 {
		return fmt.Errorf("no configurable nodes")
	}
	seen := make(map[int32]bool, len(nc.Nodes))
	for _, v := range nc.Nodes {
		if v < 0 || int(v) >= nodes {
			return fmt.Errorf("configurable node %d is outside the graph's %d nodes", v, nodes)
		}
		if seen[v] {
			return fmt.Errorf("configurable node %d listed twice", v)
		}
		seen[v] = true
	}
	for c, f := range nc.Feats {
		if len(f) != len(nc.Nodes)*nc.Width {
			return fmt.Errorf("configuration %d has %d per-node features, want %d nodes × %d", c, len(f), len(nc.Nodes), nc.Width)
		}
		for _, x := range f {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return fmt.Errorf("configuration %d has a non-finite per-node feature", c)
			}
		}
	}
	return nil
}

// attachNodeConfigs sets k's per-node configurations (one per configuration of k),
// copied.
func (k *kernel) attachNodeConfigs(nc *nodeConfigs, width int) error {
	if err := nc.Validate(k.nodes(), width); err != nil {
		return err
	}
	if len(nc.Feats) != k.configs() {
		return fmt.Errorf("%d per-node configurations for %d configurations", len(nc.Feats), k.configs())
	}
	k.cfgNodes = slices.Clone(nc.Nodes)
	k.ncf = make([][]float32, len(nc.Feats))
	for c, f := range nc.Feats {
		k.ncf[c] = slices.Clone(f)
	}
	return nil
}

func (k *kernel) nodes() int   { return len(k.opcodes) }
func (k *kernel) configs() int { return len(k.cf) }

func (k *kernel) maxDegrees() (in, out int) {
	for v := 0; v < k.nodes(); v++ {
		in = max(in, int(k.inPtr[v+1]-k.inPtr[v]))
		out = max(out, int(k.outPtr[v+1]-k.outPtr[v]))
	}
	return in, out
}

// prepareKernel normalizes a kernel's graph and config features with st for a model of
// architecture c, keeps the first c.ConfigWidth config features (the model's feature
// set; sets are prefixes of the stored vectors, each stored wide) and builds its capped
// neighbour lists. A per-node model passes one empty vector per configuration (stored 0):
// its configurations are attached by attachNodeConfigs. Opcode ids must be inside the
// model's vocabulary. The result shares nothing with the inputs.
func prepareKernel(g *features.Graph, configs [][]float32, st *features.Stats, c Config, stored int) (*kernel, error) {
	w := c.dataWidths()
	if err := g.ValidateWidths(w.Node, w.Kernel); err != nil {
		return nil, err
	}
	n := g.Nodes()
	if n == 0 {
		return nil, fmt.Errorf("kernel graph has no nodes")
	}
	for v, op := range g.Opcodes {
		if op < 0 || int(op) >= c.Vocab {
			return nil, fmt.Errorf("node %d has opcode id %d, outside the model's vocabulary of %d", v, op, c.Vocab)
		}
	}
	k := &kernel{opcodes: append([]int32(nil), g.Opcodes...), x: make([]float32, len(g.NodeFeats)), kf: make([]float32, len(g.KernelFeats))}
	st.Node.Apply(k.x, g.NodeFeats)
	st.Kernel.Apply(k.kf, g.KernelFeats)
	for _, i := range c.ignoredKernel() {
		k.kf[i] = 0
	}
	for i, cf := range configs {
		if len(cf) != stored {
			return nil, fmt.Errorf("config %d has %d features, want %d", i, len(cf), stored)
		}
		nc := make([]float32, max(len(cf), c.ConfigWidth))
		st.Config.Apply(nc[:len(cf)], cf)
		if set := c.ConfigSet(); set.Derived() {
			// The stored prefix, normalized, then the derived features (of order 1,
			// not normalized) of the raw vector.
			features.TilingFeatures(nc[set.Stored():c.ConfigWidth], cf, g.KernelFeats)
		}
		k.cf = append(k.cf, nc[:c.ConfigWidth:c.ConfigWidth])
	}
	ins := make([][]int32, n)
	outs := make([][]int32, n)
	for j := range g.EdgeSrc {
		s, d := g.EdgeSrc[j], g.EdgeDst[j]
		ins[d] = append(ins[d], s)
		outs[s] = append(outs[s], d)
	}
	k.inPtr, k.inIdx = csr(ins, c.MaxDegree)
	k.outPtr, k.outIdx = csr(outs, c.MaxDegree)
	return k, nil
}

// csr packs neighbour lists, keeping at most cap evenly spaced neighbours of each node.
func csr(lists [][]int32, cap int) (ptr, idx []int32) {
	ptr = make([]int32, len(lists)+1)
	for v, l := range lists {
		idx = append(idx, nn.CapDegree(l, cap)...)
		ptr[v+1] = int32(len(idx))
	}
	return ptr, idx
}

// item is one kernel of a batch with the configurations it contributes.
type item struct {
	k    *kernel
	cfgs []int // indices into k.cf

	// A segmented model (Config.MaxSegmentNodes) may put only the kernel's nodes lo..hi−1
	// (one segment) in the batch (hi = 0: all of them); other holds the pooled
	// statistics of its other segments, one per pool group the item fills (one, or one
	// per configuration for a per-node model), or nil when there are none.
	lo, hi int
	other  []segStats
}

// nodeRange is the item's node range in its kernel.
func (it item) nodeRange() (lo, hi int) {
	if it.hi == 0 {
		return 0, it.k.nodes()
	}
	return it.lo, it.hi
}

// shape is the tensor shape of a batch: N nodes, B kernels, S samples (kernel,
// configuration pairs, packed kernel by kernel), Din and Dout neighbour slots per node, M
// node slots per kernel (reductions). A batch's real sizes may be smaller (padding).
type shape struct {
	N, B, S, Din, Dout, M int
	Head                  string // the task whose head scores the batch (multi-task models; "" otherwise)
}

func (s shape) String() string {
	h := ""
	if s.Head != "" {
		h = " head " + s.Head
	}
	return fmt.Sprintf("N%d B%d S%d Din%d Dout%d M%d%s", s.N, s.B, s.S, s.Din, s.Dout, s.M, h)
}

// batchHead is the head of items, which must all have the same.
func batchHead(items []item) (string, error) {
	if len(items) == 0 {
		return "", nil
	}
	h := items[0].k.head
	for _, it := range items {
		if it.k.head != h {
			return "", fmt.Errorf("a batch mixes kernels of heads %q and %q", h, it.k.head)
		}
	}
	return h, nil
}

// ladder rounds x up to the next size of the bucket ladder 1, 2, 3, 4, 6, 8, 12, 16, …
// (powers of two and 1.5 times them): at most 50% padding, few distinct shapes.
func ladder(x int) int {
	if x <= 1 {
		return 1
	}
	p := 1
	for p < x {
		if p >= 2 && p+p/2 >= x {
			return p + p/2
		}
		p *= 2
	}
	return p
}

// batch is the host-side input of one forward pass. Index arrays are Go ints (Gorgonia's
// tensor.Int). Samples are packed: item i's configurations are samples
// starts[i]..starts[i+1]-1, in the order of its cfgs.
type batch struct {
	shape  shape
	items  []item
	real   shape // unpadded sizes
	starts []int // [len(items)+1] sample offsets
	loss   Loss
	target TargetStats

	opcodes []int     // [N]
	x       []float32 // [N, NodeWidth]
	inIdx   []int     // [N·Din] operand slots, −1 for padding
	outIdx  []int     // [N·Dout] user slots, −1 for padding
	poolIdx []int     // [B·M] node slots of each kernel, −1 for padding
	kf      []float32 // [B, KernelWidth]
	cf      []float32 // [S, ConfigWidth]
	ncf     []float32 // [N, NodeConfigWidth] (PerNode models)

	// Segmented models (Config.MaxSegmentNodes > 0): the pooled statistics of each pool
	// group's other segments and the group's kernel size.
	otherSum []float32 // [B, Hidden] Σ of the other segments' final node embeddings
	otherMax []float32 // [B, Hidden] their max, −Inf where there are none
	invNodes []float32 // [B] 1 / the kernel's node count (0 for padding groups)
	sk       []int     // [S] the kernel of each sample, −1 for padding
	prior    []float32 // [S] Config.Prior · ln(analytical ns) of each sample (models with a prior), 0 for padding

	// Targets (training only).
	y     []float32 // [S] standardized log runtime (mse)
	w     []float32 // [S] sample weight (mse): 1/S_real for real samples, 0 for padding
	rank  []float32 // [S] rank loss: the number of the kernel's sampled configs faster than this one (gap-weighted: its log runtime)
	kw    []float32 // [B] rank loss: 1 / (n(n−1)/2) / K₂ (pairwise) or 1 / K₂ (ListMLE) per kernel with n ≥ 2 samples, else 0
	kspan []int     // [B+1] rank loss: sample offsets per kernel slot (padding slots are empty)
}

// newBatch lays out items as tensors. With bucket set, the dimensions are rounded up the
// ladder (B to at least minB; neighbour slots to Config.MaxDegree) so that batches share
// a few graph shapes; otherwise the shape is exact. With targets set, the loss's target
// tensors are filled from the items' runtimes (which must be known).
//
// A per-node configuration model (Config.PerNode) gives every sample its own copy of its
// kernel's nodes, with the configuration's per-node features, and its own pooling slot:
// B counts samples there (B ≥ S, sample s pools into slot s), and the loss's kernel
// spans use the first len(items) slots.
func newBatch(c Config, items []item, bucket bool, minB int, loss Loss, ts TargetStats, targets bool) (*batch, error) {
	if c.PerNode() {
		return newPerNodeBatch(c, items, bucket, minB, loss, ts, targets)
	}
	head, err := batchHead(items)
	if err != nil {
		return nil, err
	}
	r := shape{Head: head}
	r.B = len(items)
	for _, it := range items {
		if len(it.cfgs) == 0 {
			return nil, fmt.Errorf("kernel %s has no configurations in the batch", it.k.key)
		}
		lo, hi := it.nodeRange()
		r.N += hi - lo
		r.S += len(it.cfgs)
		r.M = max(r.M, hi-lo)
		din, dout := it.k.maxDegrees()
		r.Din, r.Dout = max(r.Din, din), max(r.Dout, dout)
	}
	r.Din, r.Dout = max(r.Din, 1), max(r.Dout, 1)
	s := r
	if bucket {
		// Neighbour slots are fixed at the degree cap: gathering a few padded slots costs
		// little next to the layers' matrix products, and it halves the distinct shapes.
		s = shape{N: ladder(r.N), B: ladder(max(r.B, minB)), S: ladder(r.S), Din: c.MaxDegree, Dout: c.MaxDegree, M: ladder(r.M), Head: head}
	}
	b := &batch{shape: s, items: items, real: r, loss: loss, target: ts, starts: make([]int, len(items)+1)}
	NW, KW, CW := c.NodeWidth, c.KernelWidth, c.ConfigWidth
	b.opcodes = make([]int, s.N)
	b.x = make([]float32, s.N*NW)
	b.inIdx = fill(make([]int, s.N*s.Din), -1)
	b.outIdx = fill(make([]int, s.N*s.Dout), -1)
	b.poolIdx = fill(make([]int, s.B*s.M), -1)
	b.kf = make([]float32, s.B*KW)
	b.cf = make([]float32, s.S*CW)
	b.sk = fill(make([]int, s.S), -1)
	if c.Prior > 0 {
		b.prior = make([]float32, s.S)
	}
	off, so := 0, 0
	b.segmentInputs(c)
	for bi, it := range items {
		k := it.k
		n := b.place(k, off, it)
		for v := range n {
			b.poolIdx[bi*s.M+v] = off + v
		}
		b.poolGroup(c, bi, it, 0)
		copy(b.kf[bi*KW:], k.kf)
		for _, cfg := range it.cfgs {
			copy(b.cf[so*CW:], k.cf[cfg])
			b.sk[so] = bi
			if b.prior != nil {
				p, err := priorOf(c, loss, ts, k, cfg)
				if err != nil {
					return nil, err
				}
				b.prior[so] = p
			}
			so++
		}
		b.starts[bi+1] = so
		off += n
	}
	if targets {
		if err := b.fillTargets(); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// newPerNodeBatch is newBatch for a per-node configuration model.
func newPerNodeBatch(c Config, items []item, bucket bool, minB int, loss Loss, ts TargetStats, targets bool) (*batch, error) {
	head, err := batchHead(items)
	if err != nil {
		return nil, err
	}
	r := shape{Head: head}
	for _, it := range items {
		if len(it.cfgs) == 0 {
			return nil, fmt.Errorf("kernel %s has no configurations in the batch", it.k.key)
		}
		if it.k.ncf == nil {
			return nil, fmt.Errorf("kernel %s has no per-node configurations", it.k.key)
		}
		lo, hi := it.nodeRange()
		r.N += (hi - lo) * len(it.cfgs)
		r.S += len(it.cfgs)
		r.M = max(r.M, hi-lo)
		din, dout := it.k.maxDegrees()
		r.Din, r.Dout = max(r.Din, din), max(r.Dout, dout)
	}
	r.B = max(r.S, len(items))
	r.Din, r.Dout = max(r.Din, 1), max(r.Dout, 1)
	s := r
	if bucket {
		s = shape{N: ladder(r.N), S: ladder(r.S), Din: c.MaxDegree, Dout: c.MaxDegree, M: ladder(r.M), Head: head}
		s.B = ladder(max(r.B, minB, s.S))
	}
	b := &batch{shape: s, items: items, real: r, loss: loss, target: ts, starts: make([]int, len(items)+1)}
	NW, KW, CW, NCW := c.NodeWidth, c.KernelWidth, c.ConfigWidth, c.NodeConfigWidth
	b.opcodes = make([]int, s.N)
	b.x = make([]float32, s.N*NW)
	b.ncf = make([]float32, s.N*NCW)
	b.inIdx = fill(make([]int, s.N*s.Din), -1)
	b.outIdx = fill(make([]int, s.N*s.Dout), -1)
	b.poolIdx = fill(make([]int, s.B*s.M), -1)
	b.kf = make([]float32, s.B*KW)
	b.cf = make([]float32, s.S*CW)
	b.sk = fill(make([]int, s.S), -1)
	if c.Prior > 0 {
		b.prior = make([]float32, s.S)
	}
	off, so := 0, 0
	b.segmentInputs(c)
	for bi, it := range items {
		k := it.k
		lo, hi := it.nodeRange()
		for ci, cfg := range it.cfgs {
			n := b.place(k, off, it)
			for v := range n {
				b.poolIdx[so*s.M+v] = off + v
			}
			b.poolGroup(c, so, it, ci)
			for i, v := range k.cfgNodes {
				if u := int(v); u >= lo && u < hi {
					copy(b.ncf[(off+u-lo)*NCW:(off+u-lo+1)*NCW], k.ncf[cfg][i*NCW:(i+1)*NCW])
				}
			}
			copy(b.kf[so*KW:], k.kf)
			copy(b.cf[so*CW:], k.cf[cfg])
			b.sk[so] = so
			so++
			off += n
		}
		b.starts[bi+1] = so
	}
	if targets {
		if err := b.fillTargets(); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// priorOf is the part of a model with a prior's output that the analytical model gives,
// for configuration cfg of k with analytical estimate a ns: Config.Prior · ln a for a
// relative model (a score), Config.Prior · (ln a − μ)/σ for an absolute one (its output
// is the standardized log runtime, TargetStats ts), so that its prediction is
// ln t̂ = σ·net + Prior·ln a + (1 − Prior)·μ: at Prior 1, the analytical estimate times
// e^(σ·net). Beyond the range of ln a the absolute model was trained on
// (TargetStats.Analytical), where the network reads features clamped to their training
// range (features.ColumnStats) and cannot say how much slower a bigger kernel is, the
// estimate carries the rest in full: (1 − Prior)·(ln a − the nearer end)/σ is added, so
// ln t̂ grows one for one with ln a there. Inside the range (every training sample) it
// adds nothing. The estimate must be known and positive.
func priorOf(c Config, loss Loss, ts TargetStats, k *kernel, cfg int) (float32, error) {
	if cfg >= len(k.analytical) {
		return 0, fmt.Errorf("kernel %s has no analytical estimate of configuration %d, which the model's prior needs", k.key, cfg)
	}
	a := k.analytical[cfg]
	if !(a > 0) || math.IsInf(a, 1) {
		return 0, fmt.Errorf("kernel %s: configuration %d has analytical estimate %g ns, the model's prior needs a positive finite one", k.key, cfg, a)
	}
	if !loss.Rank() {
		la := math.Log(a)
		return float32((c.Prior*(la-ts.LogMean) + (1-c.Prior)*ts.Analytical.beyond(la)) / ts.scale()), nil
	}
	return float32(c.Prior * math.Log(a)), nil
}

// place writes the nodes of item it's range of kernel k at batch node offset off
// (opcodes, features, neighbours within the range) and returns their number.
func (b *batch) place(k *kernel, off int, it item) int {
	lo, hi := it.nodeRange()
	NW := len(b.x) / b.shape.N
	for v := lo; v < hi; v++ {
		o := off + v - lo
		b.opcodes[o] = int(k.opcodes[v])
		adj(b.inIdx[o*b.shape.Din:], off, k.inIdx[k.inPtr[v]:k.inPtr[v+1]], lo, hi)
		adj(b.outIdx[o*b.shape.Dout:], off, k.outIdx[k.outPtr[v]:k.outPtr[v+1]], lo, hi)
	}
	copy(b.x[off*NW:], k.x[lo*NW:hi*NW])
	return hi - lo
}

// adj writes a node's neighbours (kernel-local indices) in lo..hi−1 as global node
// indices (edges leaving a segment are cut).
func adj(slots []int, off int, nb []int32, lo, hi int) {
	j := 0
	for _, u := range nb {
		if int(u) >= lo && int(u) < hi {
			slots[j] = off + int(u) - lo
			j++
		}
	}
}

func (b *batch) fillTargets() error {
	s := b.shape
	for _, it := range b.items {
		if it.k.runtimes == nil {
			return fmt.Errorf("kernel %s has no runtimes to train on", it.k.key)
		}
	}
	if !b.loss.Rank() {
		b.y = make([]float32, s.S)
		b.w = make([]float32, s.S)
		for bi, it := range b.items {
			for ci, cfg := range it.cfgs {
				b.y[b.starts[bi]+ci] = float32(b.target.standardize(it.k.runtimes[cfg]))
				b.w[b.starts[bi]+ci] = 1 / float32(b.real.S)
			}
		}
		return nil
	}
	b.rank = make([]float32, s.S)
	b.kw = make([]float32, s.B)
	b.kspan = make([]int, s.B+1)
	k2 := 0
	for _, it := range b.items {
		if len(it.cfgs) >= 2 {
			k2++
		}
	}
	for bi := range s.B {
		b.kspan[bi+1] = b.starts[min(bi+1, len(b.items))]
	}
	for bi, it := range b.items {
		n := len(it.cfgs)
		if n >= 2 {
			if b.loss.def().form == listwise {
				b.kw[bi] = float32(1 / float64(k2))
			} else {
				b.kw[bi] = float32(1 / (float64(n) * float64(n-1) / 2) / float64(k2))
			}
		}
		for i, ci := range it.cfgs {
			if b.loss.gapWeighted() {
				// The log runtime orders the samples as the rank does and gives each
				// pair its gap (pairWeight).
				b.rank[b.starts[bi]+i] = float32(math.Log(it.k.runtimes[ci]))
				continue
			}
			faster := 0
			for _, cj := range it.cfgs {
				if it.k.runtimes[cj] < it.k.runtimes[ci] {
					faster++
				}
			}
			b.rank[b.starts[bi]+i] = float32(faster)
		}
	}
	return nil
}

// lossOf is the host-side loss of predictions out (one per sample of a forward pass) for
// the batch's items, in float64: the value the training graph computes.
func (b *batch) lossOf(out []float64) float64 {
	if !b.loss.Rank() {
		var pred, tgt []float64
		for bi, it := range b.items {
			for ci, cfg := range it.cfgs {
				pred = append(pred, out[b.starts[bi]+ci])
				tgt = append(tgt, b.target.standardize(it.k.runtimes[cfg]))
			}
		}
		return mseLoss(pred, tgt)
	}
	var sum float64
	k2 := 0
	for bi, it := range b.items {
		if len(it.cfgs) < 2 {
			continue
		}
		k2++
		rt := make([]float64, len(it.cfgs))
		for i, cfg := range it.cfgs {
			rt[i] = it.k.runtimes[cfg]
		}
		sum += kernelRankLoss(b.loss, out[b.starts[bi]:b.starts[bi+1]], rt)
	}
	if k2 == 0 {
		return 0
	}
	return sum / float64(k2)
}

func fill(s []int, v int) []int {
	for i := range s {
		s[i] = v
	}
	return s
}

// isFinite reports whether every value is finite.
func isFinite(xs []float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
