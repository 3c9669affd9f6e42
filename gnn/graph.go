package gnn

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/nn"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// net is one Gorgonia expression graph of the model for one batch shape, with its tape
// machine. Gorgonia fixes shapes when a graph is built, so a net serves every batch of
// its shape; an engine caches nets by shape. A train net also computes the loss and
// its gradients with respect to every parameter.
//
// In float32 mode (the default) the parameter nodes are bound to tensors backed by the
// model's Params slices, so optimizer updates are seen by every net without copying. The
// float64 mode exists for the finite-difference gradient check: parameters are copied.
type net struct {
	cfg   Config
	loss  Loss
	shape shape
	train bool
	dt    tensor.Dtype

	g        *G.ExprGraph
	vm       G.VM
	params   []*G.Node // the parameters the net reads, in Params order
	paramIdx []int     // their indices in Params (a multi-task net reads one head)

	opcodes, x, inIdx, outIdx, poolIdx, kf, cf *G.Node
	ncf                                        *G.Node // per-node configuration features (PerNode models)

	// Segmented models (segment.go): the other segments' statistics, this segment's
	// pooled sum and max, and their values after the last inference run.
	otherSum, otherMax, invNodes, segSum, segMax *G.Node
	lastSum, lastMax                             []float64
	in                                           map[*G.Node]tensor.Tensor // the inputs' values (floatTensor)
	sk, y, w, rank, kw, kspan, out, cost         *G.Node
	prior                                        *G.Node // Config.Prior · ln(analytical ns) per sample (models with a prior)
}

// l2Eps is added to the squared norm before the L2 normalization's square root: it
// bounds the normalization's gain at 1/√l2Eps = 1000 for near-zero embeddings.
const l2Eps = 1e-6

// newNet builds the graph of cfg for batches of shape s. train adds the loss (which
// needs the targets) and the gradients.
func newNet(cfg Config, loss Loss, ps nn.Params, s shape, train bool, dt tensor.Dtype) (n *net, err error) {
	defer func() {
		// Gorgonia's builders panic through Must on shape errors; report them as errors.
		if r := recover(); r != nil {
			n, err = nil, fmt.Errorf("building the model graph for %v: %v", s, r)
		}
	}()
	n = &net{cfg: cfg, loss: loss, shape: s, train: train, dt: dt, g: G.NewGraph()}
	g := n.g
	specs := cfg.paramSpecs()
	if len(specs) != len(ps) {
		return nil, fmt.Errorf("model has %d parameters, architecture needs %d", len(ps), len(specs))
	}
	// A multi-task model's net reads the shared parameters and the head of its shape's
	// task (the model's first task for kernels without one).
	head := s.Head
	if cfg.MultiTask() && head == "" {
		head = string(cfg.Tasks[0])
	}
	if cfg.MultiTask() && !slices.Contains(cfg.Tasks, dataset.Task(head)) {
		return nil, fmt.Errorf("the model has no head for task %q (heads %v)", head, cfg.Tasks)
	}
	prefix := cfg.headPrefix(head)
	byName := map[string]*G.Node{}
	for i, p := range ps {
		if cfg.MultiTask() && strings.Contains(p.Name, "/") && !strings.HasPrefix(p.Name, prefix) {
			continue
		}
		node := nn.ParamNode(g, p, dt)
		n.params = append(n.params, node)
		n.paramIdx = append(n.paramIdx, i)
		byName[p.Name] = node
	}
	P := func(name string) *G.Node {
		if nd, ok := byName[name]; ok {
			return nd
		}
		panic(fmt.Sprintf("no parameter %s", name))
	}
	ints := func(name string, size int) *G.Node {
		return G.NewVector(g, tensor.Int, G.WithShape(size), G.WithName(name))
	}
	floats := func(name string, shp ...int) *G.Node {
		return G.NewTensor(g, dt, len(shp), G.WithShape(shp...), G.WithName(name))
	}
	n.opcodes = ints("opcodes", s.N)
	n.x = floats("x", s.N, cfg.NodeWidth)
	n.inIdx = ints("in_idx", s.N*s.Din)
	n.outIdx = ints("out_idx", s.N*s.Dout)
	n.poolIdx = ints("pool_idx", s.B*s.M)
	if cfg.KernelWidth > 0 {
		n.kf = floats("kf", s.B, cfg.KernelWidth)
	}
	if cfg.ConfigWidth > 0 {
		n.cf = floats("cf", s.S, cfg.ConfigWidth)
	}
	n.sk = ints("sample_kernel", s.S)

	hbias := func(x *G.Node, b string) *G.Node { return nn.Bias(x, P(prefix+b)) }

	// Input layer: ReLU([emb(opcode), x] W₀ + b₀), one fused op (nn.Linear) over the
	// blocks emb·W_op + x·W_x (+ ncf·W_nc).
	emb := nn.Gather(P("embed"), n.opcodes, nn.ReduceSum, 1)
	// The node features (and per-node configurations) are data: no gradient.
	xs, ws, data := []*G.Node{emb, n.x}, []*G.Node{P("input.w_op"), P("input.w_x")}, []bool{false, true}
	if cfg.PerNode() {
		n.ncf = floats("ncf", s.N, cfg.NodeConfigWidth)
		xs, ws, data = append(xs, n.ncf), append(ws, P("input.w_nc")), append(data, true)
	}
	h := nn.LinearData(xs, ws, P("input.b"), nil, true, data)

	// GraphSAGE layers: [h, mean_in(h), mean_out(h)] W + b as three products.
	layers := make([]nn.SAGELayer, cfg.Layers)
	for l := range layers {
		w := fmt.Sprintf("sage%d.", l+1)
		layers[l] = nn.SAGELayer{WSelf: P(w + "w_self"), WIn: P(w + "w_in"), WOut: P(w + "w_out"), B: P(w + "b")}
	}
	eps := 0.0
	if cfg.L2Norm {
		eps = l2Eps
	}
	h = nn.SAGE(h, nn.Adjacency{In: n.inIdx, Out: n.outIdx, DIn: s.Din, DOut: s.Dout}, layers, eps)

	// Head: the first layer's per-kernel part (reductions and kernel features, [B, h0])
	// is gathered to each of the kernel's samples and added to the per-config part.
	// Each layer is one fused op (nn.Linear).
	// The kernel and configuration features are data: no gradient.
	var kx, kw []*G.Node
	var kdata []bool
	if cfg.KernelWidth > 0 {
		kx, kw, kdata = append(kx, n.kf), append(kw, P(prefix+"head0.w_kernel")), append(kdata, true)
	}
	for _, r := range cfg.Reduce {
		pooled := func() *G.Node { return nn.Gather(h, n.poolIdx, r, s.M) }
		if cfg.MaxSegmentNodes > 0 {
			pooled = func() *G.Node { return n.segmentPool(h, r) }
		}
		kx, kw, kdata = append(kx, pooled()), append(kw, P(prefix+"head0.w_"+string(r))), append(kdata, false)
	}
	zk := nn.LinearData(kx, kw, nil, nil, false, kdata)
	z0 := nn.Gather(zk, n.sk, nn.ReduceSum, 1) // [S, h0]
	var z *G.Node
	if cfg.ConfigWidth > 0 {
		z = nn.LinearData([]*G.Node{n.cf}, []*G.Node{P(prefix + "head0.w_config")}, P(prefix+"head0.b"), z0, true, []bool{true})
	} else {
		z = nn.ReLU(hbias(z0, "head0.b"))
	}
	for i := 1; i < len(cfg.Head); i++ {
		z = nn.Linear([]*G.Node{z}, []*G.Node{P(prefix + fmt.Sprintf("head%d.w", i))}, P(prefix+fmt.Sprintf("head%d.b", i)), nil, true)
	}
	out := nn.Linear([]*G.Node{z}, []*G.Node{P(prefix + "out.w")}, P(prefix+"out.b"), nil, false)
	n.out = G.Must(G.Reshape(out, tensor.Shape{s.S}))
	if cfg.Prior > 0 {
		// A residual on the analytical model: the score is the network's output plus the
		// batch's Prior · ln(analytical ns) per sample (Config.Prior).
		n.prior = G.NewVector(g, dt, G.WithShape(s.S), G.WithName("prior"))
		n.out = G.Must(G.Add(n.out, n.prior))
	}

	if train {
		if err := n.buildLoss(); err != nil {
			return nil, err
		}
		if _, err := G.Grad(n.cost, n.params...); err != nil {
			return nil, fmt.Errorf("differentiating the model graph: %w", err)
		}
		n.vm = G.NewTapeMachine(g, G.BindDualValues(n.params...))
	} else {
		n.vm = G.NewTapeMachine(g)
	}
	return n, nil
}

// buildLoss adds the loss of the configured kind (see loss.go for the formulas).
func (n *net) buildLoss() error {
	s := n.shape
	g := n.g
	if !n.loss.Rank() {
		n.y = G.NewVector(g, n.dt, G.WithShape(s.S), G.WithName("y"))
		n.w = G.NewVector(g, n.dt, G.WithShape(s.S), G.WithName("w"))
		n.cost = G.Must(G.ApplyOp(newMSEOp(), n.out, n.y, n.w))
		return nil
	}
	if !n.loss.Rank() {
		return fmt.Errorf("unknown loss %q", n.loss)
	}
	n.rank = G.NewVector(g, n.dt, G.WithShape(s.S), G.WithName("rank"))
	n.kw = G.NewVector(g, n.dt, G.WithShape(s.B), G.WithName("kernel_weight"))
	n.kspan = G.NewVector(g, tensor.Int, G.WithShape(s.B+1), G.WithName("kernel_span"))
	n.cost = G.Must(G.ApplyOp(newRankLossOp(n.loss), n.out, n.rank, n.kw, n.kspan))
	return nil
}

// floatTensor is the value of input node nd for one run: a tensor of shape shp holding a
// copy of data (a copy: Gorgonia may compute in place in an input's register), in the
// net's precision. The tensor is the node's own, kept from one run to the next (the
// net's shape fixes its size), so that binding a batch allocates nothing.
func (n *net) floatTensor(nd *G.Node, data []float32, shp ...int) tensor.Tensor {
	if t, ok := n.in[nd]; ok && t.Shape().TotalSize() == len(data) {
		switch d := t.Data().(type) {
		case []float32:
			copy(d, data)
		case []float64:
			for i, x := range data {
				d[i] = float64(x)
			}
		}
		return t
	}
	var t tensor.Tensor
	if n.dt == tensor.Float32 {
		t = tensor.New(tensor.WithShape(shp...), tensor.WithBacking(append([]float32(nil), data...)))
	} else {
		t = tensor.New(tensor.WithShape(shp...), tensor.WithBacking(nn.To64(data)))
	}
	n.keep(nd, t)
	return t
}

// intTensor is floatTensor for an index input.
func (n *net) intTensor(nd *G.Node, data []int) tensor.Tensor {
	if t, ok := n.in[nd]; ok && t.Shape().TotalSize() == len(data) {
		copy(t.Data().([]int), data)
		return t
	}
	t := tensor.New(tensor.WithShape(len(data)), tensor.WithBacking(append([]int(nil), data...)))
	n.keep(nd, t)
	return t
}

func (n *net) keep(nd *G.Node, t tensor.Tensor) {
	if n.in == nil {
		n.in = map[*G.Node]tensor.Tensor{}
	}
	n.in[nd] = t
}

// let is an input node and its value for one run.
type let struct {
	node *G.Node
	v    tensor.Tensor
}

// bind sets the net's inputs from b, whose shape must be the net's.
func (n *net) bind(b *batch) error {
	if b.shape != n.shape {
		return fmt.Errorf("batch of shape %v on a graph of shape %v", b.shape, n.shape)
	}
	s := n.shape
	lets := []let{
		{n.opcodes, n.intTensor(n.opcodes, b.opcodes)},
		{n.x, n.floatTensor(n.x, b.x, s.N, n.cfg.NodeWidth)},
		{n.inIdx, n.intTensor(n.inIdx, b.inIdx)},
		{n.outIdx, n.intTensor(n.outIdx, b.outIdx)},
		{n.poolIdx, n.intTensor(n.poolIdx, b.poolIdx)},
		{n.sk, n.intTensor(n.sk, b.sk)},
	}
	if n.kf != nil {
		lets = append(lets, let{n.kf, n.floatTensor(n.kf, b.kf, s.B, n.cfg.KernelWidth)})
	}
	if n.cf != nil {
		lets = append(lets, let{n.cf, n.floatTensor(n.cf, b.cf, s.S, n.cfg.ConfigWidth)})
	}
	if n.prior != nil {
		if b.prior == nil {
			return fmt.Errorf("batch has no analytical prior")
		}
		lets = append(lets, let{n.prior, n.floatTensor(n.prior, b.prior, s.S)})
	}
	if n.ncf != nil {
		if b.ncf == nil {
			return fmt.Errorf("batch has no per-node configuration features")
		}
		lets = append(lets, let{n.ncf, n.floatTensor(n.ncf, b.ncf, s.N, n.cfg.NodeConfigWidth)})
	}
	if n.train {
		if n.loss.Rank() {
			if b.rank == nil {
				return fmt.Errorf("batch has no rank targets")
			}
			lets = append(lets, let{n.rank, n.floatTensor(n.rank, b.rank, s.S)}, let{n.kw, n.floatTensor(n.kw, b.kw, s.B)}, let{n.kspan, n.intTensor(n.kspan, b.kspan)})
		} else {
			if b.y == nil {
				return fmt.Errorf("batch has no regression targets")
			}
			lets = append(lets, let{n.y, n.floatTensor(n.y, b.y, s.S)}, let{n.w, n.floatTensor(n.w, b.w, s.S)})
		}
	}
	lets, err := n.bindSegments(b, lets)
	if err != nil {
		return err
	}
	for _, l := range lets {
		if err := G.Let(l.node, l.v); err != nil {
			return fmt.Errorf("binding %s: %w", l.node.Name(), err)
		}
	}
	return nil
}

// run binds b and runs the machine. It returns the outputs (one per sample) and, for a
// train net, the loss; gradients are then in the parameter nodes (see grads).
func (n *net) run(b *batch) (out []float64, loss float64, err error) {
	if err := n.bind(b); err != nil {
		return nil, 0, err
	}
	defer n.vm.Reset()
	if err := n.vm.RunAll(); err != nil {
		return nil, 0, fmt.Errorf("running the model graph (%v): %w", n.shape, err)
	}
	if !n.train {
		out = nn.Values(n.out.Value())
		if n.segSum != nil {
			n.lastSum, n.lastMax = nn.Values(n.segSum.Value()), nn.Values(n.segMax.Value())
		}
	}
	if n.train {
		loss = nn.Values(n.cost.Value())[0]
	}
	return out, loss, nil
}

// grads returns the gradient of parameter i from the last run (float32 mode: the
// slice aliases Gorgonia's buffer; it is valid until zeroGrads or the next run).
func (n *net) grad32(i int) ([]float32, error) { return nn.Grad32(n.params[i]) }

// zeroGrads clears the accumulated gradients (Gorgonia adds each run's gradient to the
// dual values' derivatives).
func (n *net) zeroGrads() {
	for _, p := range n.params {
		if gv, err := p.Grad(); err == nil {
			if t, ok := gv.(tensor.Tensor); ok {
				t.Zero()
			}
		}
	}
}

// close releases the machine.
func (n *net) close() {
	if n.vm != nil {
		n.vm.Close()
	}
}
