package tune

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/hlo"
)

// The fusion policy of the rl strategy (after Zhou et al., "Transferable graph optimizers
// for ML compilers", NeurIPS 2020): a graph-neural network reads the program graph as the
// fusion pass sees it (after layout assignment) and outputs, for every configurable
// producer -> consumer edge at once (non-autoregressively), the probability of fusing it.
//
// Architecture (float32):
//
//	x_v      node features (rlNodeFeatures): opcode category and a few opcodes one-hot,
//	         log element count, log bytes, rank, log fan-in, log fan-out
//	a_v      [x_v, mean_{u->v} x_u, mean_{v->w} x_w]   (mean aggregation over operands, users)
//	h_v      relu(a_v W1 + b1)                           (a GraphSAGE-mean layer)
//	g_e      relu([h_p, h_x, f_e] W2 + b2)               (message passing along the edge p->x)
//	logit_e  g_e w3 + b3 + prior * (2 default_e - 1)
//
// f_e are edge features (rlEdgeFeatures): the compiler's default decision, whether fusing
// duplicates the producer, the operand index and the log size ratio. The learned prior
// scalar starts the policy near XLA's default fusion decisions, which it learns to revise.

// Policy dimensions: part of the checkpoint format (a checkpoint with others is refused).
const (
	rlNodeFeatures = rlNumCategories + len(rlMovers) + 5
	rlEdgeFeatures = 5
	rlHidden       = 32
	rlPriorInit    = 3.0 // initial prior: p(default) = sigmoid(3) ≈ 0.95
)

// rlMovers are the data-movement opcodes with their own feature column (fusing them is
// what most fusion decisions are about).
var rlMovers = [...]hlo.Opcode{hlo.OpBroadcast, hlo.OpReshape, hlo.OpTranspose, hlo.OpCopy, hlo.OpSlice, hlo.OpConcatenate}

// rlNumCategories is the number of opcode categories (hlo.CatSource..hlo.CatOther).
const rlNumCategories = int(hlo.CatOther) + 1

// rlFeatureSchema names the node feature columns: a checkpoint made with other columns
// (categories or opcodes renamed, added or reordered) is refused.
func rlFeatureSchema() string {
	var b strings.Builder
	b.WriteString("v1;categories:")
	for c := range rlNumCategories {
		b.WriteString(hlo.Category(c).String() + ",")
	}
	b.WriteString(";opcodes:")
	for _, op := range rlMovers {
		b.WriteString(op.String() + ",")
	}
	b.WriteString(";log_elements,log_bytes,rank,log_fan_in,log_fan_out;edge:default,dup,operand,log_size_ratio,log_producer_bytes")
	return b.String()
}

// policyParam is one named parameter tensor.
type policyParam struct {
	name  string
	shape []int
	data  []float32
}

// Policy is the rl strategy's fusion policy: its parameters and its training record.
// It is not safe for concurrent use.
type Policy struct {
	params []*policyParam // W1 b1 W2 b2 w3 b3 prior, in this order
	// Meta describes how the policy was trained (saved with it).
	Meta PolicyMeta
	adam *adamState
}

// PolicyMeta is the training record a policy checkpoint carries.
type PolicyMeta struct {
	Programs []string        `json:"programs"`
	Seed     int64           `json:"seed"`
	Episodes int             `json:"episodes"`
	Samples  int             `json:"samples_per_episode"`
	Chip     string          `json:"chip"`
	History  []EpisodeReport `json:"history,omitempty"`
}

func paramShapes() []policyParam {
	in1 := 3 * rlNodeFeatures
	in2 := 2*rlHidden + rlEdgeFeatures
	return []policyParam{
		{name: "w1", shape: []int{in1, rlHidden}},
		{name: "b1", shape: []int{1, rlHidden}},
		{name: "w2", shape: []int{in2, rlHidden}},
		{name: "b2", shape: []int{1, rlHidden}},
		{name: "w3", shape: []int{rlHidden, 1}},
		{name: "b3", shape: []int{1, 1}},
		{name: "prior", shape: []int{1, 1}},
	}
}

// NewPolicy returns a policy with Glorot-uniform weights drawn from seed, zero biases and
// the prior at its initial value.
func NewPolicy(seed int64) *Policy {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x706f6c696379)) // "policy"
	p := &Policy{}
	for _, s := range paramShapes() {
		pp := &policyParam{name: s.name, shape: s.shape, data: make([]float32, s.shape[0]*s.shape[1])}
		switch s.name[0] {
		case 'w':
			lim := math.Sqrt(6 / float64(s.shape[0]+s.shape[1]))
			for i := range pp.data {
				pp.data[i] = float32((2*rng.Float64() - 1) * lim)
			}
		case 'p':
			pp.data[0] = rlPriorInit
		}
		p.params = append(p.params, pp)
	}
	return p
}

// decisions is a program's fusion decisions as the policy sees them: for each
// configurable edge of the base space, the aggregated features of its two nodes and its
// own features. Built once per program; read-only afterwards.
type decisions struct {
	names    []string  // compiler.FusionChoice.Name per decision
	defaults []bool    // the compiler's default per decision
	xp, xx   []float32 // E x 3F aggregated features of producer and consumer
	ef       []float32 // E x rlEdgeFeatures
	prior    []float32 // E: +1 where the default fuses, -1 elsewhere
}

func (d *decisions) n() int { return len(d.names) }

// fusionGraph compiles cfg up to the fusion pass and returns the entry computation the
// fusion pass reads (after layout assignment), parsed back from the pass dump.
func fusionGraph(cc *compilerCtx, cfg *compiler.Config) (*hlo.Computation, error) {
	var buf bytes.Buffer
	o := cc.opts
	o.DumpAfter, o.Dump = "layout-assignment", &buf
	if _, err := compiler.Compile(cc.mod, cfg, o); err != nil {
		return nil, fmt.Errorf("compiling for the policy graph: %w", err)
	}
	m, err := hlo.Parse(cc.mod.Name+" (after layout-assignment)", buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("reading the module after layout assignment: %w", err)
	}
	return m.Entry, nil
}

// newDecisions derives the policy inputs of space's fusion choices on graph e (the entry
// computation the fusion pass read). An edge naming an instruction e lacks is an error:
// the space and the graph must come from the same compile.
func newDecisions(e *hlo.Computation, space *compiler.Space) (*decisions, error) {
	users := e.Users()
	n := len(e.Instructions)
	byName := make(map[string]*hlo.Instruction, n)
	x := make([]float32, n*rlNodeFeatures)
	for i, in := range e.Instructions {
		byName[in.Name] = in
		nodeFeatures(in, len(users[i]), x[i*rlNodeFeatures:(i+1)*rlNodeFeatures])
	}
	pos := make(map[*hlo.Instruction]int, n)
	for i, in := range e.Instructions {
		pos[in] = i
	}
	agg := make([]float32, n*3*rlNodeFeatures) // [x, mean over operands, mean over users]
	const F = rlNodeFeatures
	for i, in := range e.Instructions {
		row := agg[i*3*F : (i+1)*3*F]
		copy(row[:F], x[i*F:(i+1)*F])
		meanInto(row[F:2*F], x, in.Operands, pos)
		meanInto(row[2*F:], x, users[i], pos)
	}
	d := &decisions{}
	for _, c := range space.Fusion {
		pn, xn, ok := splitEdge(c.Name, byName)
		if !ok {
			return nil, fmt.Errorf("fusion edge %q: no such producer and consumer in %s", c.Name, e.Name)
		}
		p, xi := byName[pn], byName[xn]
		pi, xii := pos[p], pos[xi]
		d.names = append(d.names, c.Name)
		d.defaults = append(d.defaults, c.Default)
		d.xp = append(d.xp, agg[pi*3*F:(pi+1)*3*F]...)
		d.xx = append(d.xx, agg[xii*3*F:(xii+1)*3*F]...)
		opIdx := 0
		for j, op := range xi.Operands {
			if op == p {
				opIdx = j
				break
			}
		}
		def, sign := float32(0), float32(-1)
		if c.Default {
			def, sign = 1, 1
		}
		dup := float32(0)
		if len(users[pi]) > 1 {
			dup = 1
		}
		ratio := float32(math.Log2(float64(max(1, xi.Shape.Elements()))/float64(max(1, p.Shape.Elements()))) / 16)
		d.ef = append(d.ef, def, dup, float32(min(opIdx, 4))/4, ratio, float32(math.Log2(float64(p.Shape.Bytes())+1)/40))
		d.prior = append(d.prior, sign)
	}
	return d, nil
}

// splitEdge splits an edge name "p->x" at the arrow whose two sides both name
// instructions (names may contain "->" in principle).
func splitEdge(name string, byName map[string]*hlo.Instruction) (string, string, bool) {
	for i := 0; i+2 <= len(name); i++ {
		if name[i:i+2] == "->" {
			p, x := name[:i], name[i+2:]
			if byName[p] != nil && byName[x] != nil {
				return p, x, true
			}
		}
	}
	return "", "", false
}

// meanInto writes the mean of the feature rows of the instructions of ns that belong to
// the computation (those in pos) into dst (zero when none does).
func meanInto(dst, x []float32, ns []*hlo.Instruction, pos map[*hlo.Instruction]int) {
	const F = rlNodeFeatures
	k := 0
	for _, u := range ns {
		i, ok := pos[u]
		if !ok {
			continue
		}
		for j := range F {
			dst[j] += x[i*F+j]
		}
		k++
	}
	if k > 1 {
		for j := range F {
			dst[j] /= float32(k)
		}
	}
}

// nodeFeatures writes in's features into dst (rlNodeFeatures long).
func nodeFeatures(in *hlo.Instruction, fanOut int, dst []float32) {
	dst[int(in.Opcode.Category())] = 1
	for j, op := range rlMovers {
		if in.Opcode == op {
			dst[rlNumCategories+j] = 1
		}
	}
	o := rlNumCategories + len(rlMovers)
	dst[o] = float32(math.Log2(float64(in.Shape.Elements())+1) / 32)
	dst[o+1] = float32(math.Log2(float64(in.Shape.Bytes())+1) / 40)
	dst[o+2] = float32(in.Shape.Rank()) / 6
	dst[o+3] = float32(math.Log2(float64(len(in.Operands))+1) / 4)
	dst[o+4] = float32(math.Log2(float64(fanOut)+1) / 4)
}

// policyGraph is one Gorgonia graph of the policy over one program's decisions.
type policyGraph struct {
	g      *G.ExprGraph
	params G.Nodes
	logits *G.Node
	cost   *G.Node
	vm     G.VM
}

func pmat(g *G.ExprGraph, name string, data []float32, r, c int) *G.Node {
	v := tensor.New(tensor.WithShape(r, c), tensor.WithBacking(data))
	return G.NewMatrix(g, G.Float32, G.WithShape(r, c), G.WithName(name), G.WithValue(v))
}

// build builds the policy over d. With coef (E) and scale, it also builds the
// REINFORCE surrogate loss
//
//	L = -(Σ_e coef_e z_e - scale Σ_e softplus(z_e))
//
// which, with coef_e = Σ_k A_k a_ke / K and scale = Σ_k A_k / K, is the negated mean over
// K samples of advantage A_k times the log-probability of the sampled actions a_k
// (log π(a) = a z - softplus(z) for a Bernoulli with logit z), and its gradients.
func (p *Policy) build(d *decisions, coef []float32, scale float32) (*policyGraph, error) {
	E, F3 := d.n(), 3*rlNodeFeatures
	g := G.NewGraph()
	pg := &policyGraph{g: g}
	ps := map[string]*G.Node{}
	for _, pp := range p.params {
		// The graph computes on a copy: parameters change only in step.
		n := pmat(g, pp.name, append([]float32(nil), pp.data...), pp.shape[0], pp.shape[1])
		ps[pp.name] = n
		pg.params = append(pg.params, n)
	}
	xp := pmat(g, "xp", d.xp, E, F3)
	xx := pmat(g, "xx", d.xx, E, F3)
	ef := pmat(g, "ef", d.ef, E, rlEdgeFeatures)
	prior := pmat(g, "prior_sign", d.prior, E, 1)
	var err error
	layer := func(in, w, b *G.Node) *G.Node {
		if err != nil {
			return nil
		}
		var h *G.Node
		if h, err = G.Mul(in, w); err != nil {
			return nil
		}
		if h, err = G.BroadcastAdd(h, b, nil, []byte{0}); err != nil {
			return nil
		}
		h, err = G.Rectify(h)
		return h
	}
	hp := layer(xp, ps["w1"], ps["b1"])
	hx := layer(xx, ps["w1"], ps["b1"])
	if err != nil {
		return nil, err
	}
	cat, err := G.Concat(1, hp, hx, ef)
	if err != nil {
		return nil, err
	}
	ge := layer(cat, ps["w2"], ps["b2"])
	if err != nil {
		return nil, err
	}
	z, err := G.Mul(ge, ps["w3"])
	if err != nil {
		return nil, err
	}
	if z, err = G.BroadcastAdd(z, ps["b3"], nil, []byte{0}); err != nil {
		return nil, err
	}
	pr, err := G.BroadcastHadamardProd(prior, ps["prior"], nil, []byte{0})
	if err != nil {
		return nil, err
	}
	if z, err = G.Add(z, pr); err != nil {
		return nil, err
	}
	pg.logits = z
	if coef == nil {
		pg.vm = G.NewTapeMachine(g)
		return pg, nil
	}
	c := pmat(g, "coef", coef, E, 1)
	lin, err := G.HadamardProd(z, c)
	if err != nil {
		return nil, err
	}
	if lin, err = G.Sum(lin); err != nil {
		return nil, err
	}
	sp, err := G.Softplus(z)
	if err != nil {
		return nil, err
	}
	if sp, err = G.Sum(sp); err != nil {
		return nil, err
	}
	sc := G.NewScalar(g, G.Float32, G.WithName("scale"), G.WithValue(scale))
	if sp, err = G.HadamardProd(sp, sc); err != nil {
		return nil, err
	}
	cost, err := G.Sub(sp, lin)
	if err != nil {
		return nil, err
	}
	pg.cost = cost
	if _, err := G.Grad(cost, pg.params...); err != nil {
		return nil, fmt.Errorf("policy gradient: %w", err)
	}
	pg.vm = G.NewTapeMachine(g, G.BindDualValues(pg.params...))
	return pg, nil
}

// probs returns the policy's fusion probability for every decision of d.
func (p *Policy) probs(d *decisions) ([]float64, error) {
	if d.n() == 0 {
		return nil, nil
	}
	pg, err := p.build(d, nil, 0)
	if err != nil {
		return nil, err
	}
	defer pg.vm.Close()
	if err := pg.vm.RunAll(); err != nil {
		return nil, fmt.Errorf("policy forward: %w", err)
	}
	z := pg.logits.Value().Data().([]float32)
	out := make([]float64, len(z))
	for i, v := range z {
		out[i] = 1 / (1 + math.Exp(-float64(v)))
	}
	return out, nil
}

// grads returns the REINFORCE surrogate loss over d (see build) and its gradient per
// parameter.
func (p *Policy) grads(d *decisions, coef []float32, scale float32) (float64, [][]float32, error) {
	pg, err := p.build(d, coef, scale)
	if err != nil {
		return 0, nil, err
	}
	defer pg.vm.Close()
	if err := pg.vm.RunAll(); err != nil {
		return 0, nil, fmt.Errorf("policy gradient: %w", err)
	}
	loss := float64(pg.cost.Value().Data().(float32))
	out := make([][]float32, len(pg.params))
	for i, n := range pg.params {
		gv, err := n.Grad()
		if err != nil {
			return 0, nil, fmt.Errorf("policy gradient of %s: %w", n.Name(), err)
		}
		out[i] = append([]float32(nil), gv.Data().([]float32)...)
	}
	return loss, out, nil
}

// adamState holds Adam's moments.
type adamState struct {
	m, v [][]float32
	t    int
}

// Adam hyperparameters of policy training.
const (
	adamB1  = 0.9
	adamB2  = 0.999
	adamEps = 1e-8
	gradClp = 5.0 // global gradient-norm clip: REINFORCE gradients are heavy-tailed
)

// step applies one Adam update with learning rate lr to gradients gs (summed over the
// batch by the caller).
func (p *Policy) step(gs [][]float32, lr float64) {
	if p.adam == nil {
		p.adam = &adamState{}
		for _, pp := range p.params {
			p.adam.m = append(p.adam.m, make([]float32, len(pp.data)))
			p.adam.v = append(p.adam.v, make([]float32, len(pp.data)))
		}
	}
	norm := 0.0
	for _, g := range gs {
		for _, v := range g {
			norm += float64(v) * float64(v)
		}
	}
	clip := 1.0
	if norm = math.Sqrt(norm); norm > gradClp {
		clip = gradClp / norm
	}
	a := p.adam
	a.t++
	c1 := 1 - math.Pow(adamB1, float64(a.t))
	c2 := 1 - math.Pow(adamB2, float64(a.t))
	for i, pp := range p.params {
		for j := range pp.data {
			g := float64(gs[i][j]) * clip
			m := adamB1*float64(a.m[i][j]) + (1-adamB1)*g
			v := adamB2*float64(a.v[i][j]) + (1-adamB2)*g*g
			a.m[i][j], a.v[i][j] = float32(m), float32(v)
			pp.data[j] -= float32(lr * (m / c1) / (math.Sqrt(v/c2) + adamEps))
		}
	}
}

// sampleFusion draws one config: base's config with each decision of d set by a
// Bernoulli draw from probs. It returns the config and the actions (1 = fuse).
func sampleFusion(rng *rand.Rand, base *compiler.Config, d *decisions, probs []float64) (*compiler.Config, []bool) {
	cfg := base.Clone()
	acts := make([]bool, d.n())
	for i, name := range d.names {
		acts[i] = rng.Float64() < probs[i]
		cfg.Fusion[name] = acts[i]
	}
	return cfg, acts
}

// greedyFusion is base's config with every decision set to the policy's most likely
// option.
func greedyFusion(base *compiler.Config, d *decisions, probs []float64) (*compiler.Config, []bool) {
	cfg := base.Clone()
	acts := make([]bool, d.n())
	for i, name := range d.names {
		acts[i] = probs[i] >= 0.5
		cfg.Fusion[name] = acts[i]
	}
	return cfg, acts
}

// reinforceCoef turns K samples (actions and advantages) into the coefficients of the
// surrogate loss (see build).
func reinforceCoef(acts [][]bool, adv []float64) ([]float32, float32) {
	if len(acts) == 0 {
		return nil, 0
	}
	coef := make([]float32, len(acts[0]))
	s := 0.0
	k := float64(len(acts))
	for i, a := range acts {
		s += adv[i] / k
		for e, f := range a {
			if f {
				coef[e] += float32(adv[i] / k)
			}
		}
	}
	return coef, float32(s)
}
