package tune

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	G "gorgonia.org/gorgonia"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/features"
	"github.com/tpucost/tpucost/nn"
	"github.com/tpucost/tpucost/nn/reinforce"
	"github.com/tpucost/tpucost/nn/rl"
)

// The policy of the rl strategy (after Zhou et al., "Transferable graph optimizers for
// ML compilers", NeurIPS 2020): a graph-neural network reads the program graph as the
// fusion pass sees it (after layout assignment of the base config) and outputs, for
// every decision at once (non-autoregressively), a distribution over its options: for
// every layout-configurable node (the layout pass's choices with more than one
// minor-to-major order) a categorical over its orders, and for every configurable
// producer -> consumer edge the probability of fusing it.
//
// Architecture (float32):
//
//	x_v      node features (rlNodeFeatures; features.ModuleNodeFeatures with the mover
//	         block): opcode category and a few opcodes one-hot, log element count, log
//	         bytes, rank, log fan-in, log fan-out
//	h_v      relu(x_v W_self + mean_{u->v} x_u W_in + mean_{v->w} x_w W_out + b)
//	         (one layer of the shared GraphSAGE encoder nn.SAGE over every node of the
//	         module, operands and users in the node's computation, at most rlMaxDegree of
//	         each, evenly spaced when a node has more; both heads read it)
//	fusion edge p->x:
//	g_e      relu([h_p, h_x, f_e] W2 + b2)               (message passing along the edge)
//	logit_e  g_e w3 + b3 + prior * (2 default_e - 1)
//	layout node v, option o:
//	g_vo     relu([h_v, f_vo] W4 + b4)
//	logit_vo g_vo w5 + [o is v's default] (lprior + log(K_v - 1))   (softmax over v's K_v options)
//
// f_e are edge features (rlEdgeFeatures): the compiler's default decision, whether fusing
// duplicates the producer, the operand index and the log size ratio. f_vo are option
// features (rlOptionFeatures): whether o is the default or row-major, its padded size
// against row-major's and the default's on the target, and its two minor dimensions. The
// learned priors start the policy near XLA's default decisions, which it learns to revise;
// the layout prior's log(K_v - 1) offset makes it the log-odds of the default against the
// other options together, whatever their number (p(default) = sigmoid(lprior) when the
// other logits are equal), so that nodes of 24 orders stay as close to the default as
// nodes of 2.
//
// Layout and fusion are decided together from the base program's graph: a sampled layout
// that inserts or removes copies creates or removes fusion edges, which then take their
// default (or store) decision through candidate repair, like every strategy's
// candidates.

// Policy dimensions: part of the checkpoint format (a checkpoint with others is refused).
const (
	rlNodeFeatures    = features.ModuleCategoryWidth + features.ModuleMoverWidth + features.ModuleScalarWidth // features.ModuleNodeWidth(rlNodeBlocks())
	rlEdgeFeatures    = 5
	rlOptionFeatures  = 8
	rlHidden          = 32
	rlMaxDegree       = 16  // operands and users the encoder averages per node
	rlPriorInit       = 3.0 // initial fusion prior: p(default) = sigmoid(3) ≈ 0.95
	rlLayoutPriorInit = 3.0 // initial layout prior: p(default) ≈ sigmoid(3) ≈ 0.95 (see build)
)

// rlNodeBlocks are the module-graph feature blocks the policy reads
// (features.ModuleNodeNames): categories, the data-movement opcodes and the size scalars.
func rlNodeBlocks() features.ModuleBlocks { return features.ModuleBlocks{Movers: true} }

// rlFeatureSchema names the node, edge and option feature columns: a checkpoint made
// with other columns (categories or opcodes renamed, added or reordered) is refused. The
// node columns are features.ModuleNodeNames(rlNodeBlocks()), spelled as policy format 3
// first wrote them (so that saved policies stay readable).
func rlFeatureSchema() string {
	var b strings.Builder
	fmt.Fprintf(&b, "v3;max_degree:%d;categories:", rlMaxDegree)
	for c := range features.ModuleCategoryWidth {
		b.WriteString(hlo.Category(c).String() + ",")
	}
	b.WriteString(";opcodes:")
	for _, op := range features.ModuleMovers() {
		b.WriteString(op.String() + ",")
	}
	b.WriteString(";log_elements,log_bytes,rank,log_fan_in,log_fan_out;edge:default,dup,operand,log_size_ratio,log_producer_bytes")
	b.WriteString(";option:default,row_major,log_padded_vs_row_major,log_padded_vs_default,log_minor,log_second_minor,minor_is_row_major_minor,minor_is_default_minor")
	return b.String()
}

// Policy is the rl strategy's layout and fusion policy: its parameters and its training
// record. It is not safe for concurrent use.
type Policy struct {
	params nn.Params // as policyParams lists them
	// Meta describes how the policy was trained (saved with it).
	Meta PolicyMeta
	opt  reinforce.Optimizer
}

// PolicyMeta is the training record a policy checkpoint carries.
type PolicyMeta struct {
	Programs []string        `json:"programs"`
	Kinds    []compiler.Kind `json:"kinds"` // the decisions it trained on (layout, fusion)
	Seed     int64           `json:"seed"`
	Episodes int             `json:"episodes"`
	Samples  int             `json:"samples_per_episode"`
	Chip     string          `json:"chip"`
	History  []EpisodeReport `json:"history,omitempty"`
}

// policyParams lists the policy's parameters, zero: the GraphSAGE layer (sage1.*, the
// layout nn.SAGE reads), the fusion head (w2, b2, w3, b3, prior) and the layout head (w4,
// b4, w5, lprior).
func policyParams() nn.Params {
	F, H := rlNodeFeatures, rlHidden
	return nn.Params{
		nn.NewParam("sage1.w_self", F, H), nn.NewParam("sage1.w_in", F, H), nn.NewParam("sage1.w_out", F, H), nn.NewParam("sage1.b", H),
		nn.NewParam("w2", 2*H+rlEdgeFeatures, H), nn.NewParam("b2", H),
		nn.NewParam("w3", H, 1), nn.NewParam("b3", 1),
		nn.NewParam("prior", 1, 1),
		nn.NewParam("w4", H+rlOptionFeatures, H), nn.NewParam("b4", H),
		nn.NewParam("w5", H, 1),
		nn.NewParam("lprior", 1, 1),
	}
}

// layoutParams are the parameters only the layout head uses.
var layoutParams = map[string]bool{"w4": true, "b4": true, "w5": true, "lprior": true}

// fusionParams are the parameters only the fusion head uses.
var fusionParams = map[string]bool{"w2": true, "b2": true, "w3": true, "b3": true, "prior": true}

// NewPolicy returns a policy with Glorot-uniform weights drawn from seed, zero biases and
// the priors at their initial values. The GraphSAGE layer's three blocks are drawn as one
// [3·rlNodeFeatures, hidden] matrix (the product of [x, mean_in, mean_out] they compute).
func NewPolicy(seed int64) *Policy {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x706f6c696379)) // "policy"
	p := &Policy{params: policyParams()}
	for _, pp := range p.params {
		switch {
		case pp.Name[0] == 'w' || strings.HasPrefix(pp.Name, "sage1.w"):
			fanIn := pp.Shape[0]
			if strings.HasPrefix(pp.Name, "sage") {
				fanIn *= 3
			}
			nn.Uniform(pp.Data, nn.GlorotLimit(fanIn, pp.Shape[1]), rng)
		case pp.Name == "prior":
			pp.Data[0] = rlPriorInit
		case pp.Name == "lprior":
			pp.Data[0] = rlLayoutPriorInit
		}
	}
	return p
}

// param returns the parameter called name.
func (p *Policy) param(name string) *nn.Param {
	for _, pp := range p.params {
		if pp.Name == name {
			return pp
		}
	}
	panic("tune: no policy parameter " + name)
}

// decisions is a program's layout and fusion decisions as the policy sees them. Built
// once per program; read-only afterwards.
type decisions struct {
	// The graph the encoder reads: every instruction of every computation of the module.
	x  []float32     // N x rlNodeFeatures
	nb nn.Neighbours // operands and users within each computation (rlMaxDegree)

	// Fusion: one Bernoulli per configurable edge of the base space.
	names      []string  // compiler.FusionChoice.Name per decision
	defaults   []bool    // the compiler's default per decision
	prod, cons []int     // E: the producer's and the consumer's node
	ef         []float32 // E x rlEdgeFeatures
	prior      []float32 // E: +1 where the default fuses, -1 elsewhere

	// Layout: one categorical per layout choice of the base space with more than one
	// option; its options are rows lstart[v] .. lstart[v+1]-1.
	lnames []string  // compiler.LayoutChoice.Name per node
	lopts  [][][]int // the options (minor-to-major orders) per node
	ldef   []int     // the default option per node
	lstart []int     // N+1 row offsets
	onode  []int     // R: the row's node
	of     []float32 // R x rlOptionFeatures
	lprior []float32 // R: 1 for the node's default option, 0 elsewhere
	loff   []float32 // R: log(K_v - 1) for the node's default option, 0 elsewhere
}

// nFusion is the number of fusion decisions.
func (d *decisions) nFusion() int { return len(d.names) }

// nLayout is the number of layout decisions.
func (d *decisions) nLayout() int { return len(d.lnames) }

// rows is the number of layout options of all layout decisions.
func (d *decisions) rows() int {
	if len(d.lstart) == 0 {
		return 0
	}
	return d.lstart[len(d.lstart)-1]
}

// n is the number of decisions.
func (d *decisions) n() int { return d.nFusion() + d.nLayout() }

// action is one sampled config of a program's decisions: whether to fuse each edge, and
// each layout node's option.
type action struct {
	fuse   []bool
	layout []int
}

// dist is the policy's distribution over a program's decisions: the probability of
// fusing each edge, and of each layout option row.
type dist struct {
	fuse   []float64
	layout []float64
}

// programGraph compiles cfg and returns the module the fusion pass reads: a copy of the
// module as layout assignment left it, taken in memory by a compiler.PassHook.
func programGraph(cc *compilerCtx, cfg *compiler.Config) (*hlo.Module, error) {
	var m *hlo.Module
	o := cc.opts
	o.AfterPass = append(slices.Clip(o.AfterPass), compiler.PassHook{
		Select: func(pass string) bool { return pass == "layout-assignment" },
		After: func(mod *hlo.Module, _ compiler.PassStat) error {
			m = mod.Clone()
			return nil
		},
	})
	if _, err := compiler.Compile(cc.mod, cfg, o); err != nil {
		return nil, fmt.Errorf("compiling for the policy graph: %w", err)
	}
	if m == nil {
		return nil, fmt.Errorf("compiling for the policy graph: no layout-assignment pass ran")
	}
	return m, nil
}

// graphIndex is the graph of a module as the encoder reads it (the module graph of
// features.OperandEdges: every instruction of every computation a node, with its
// features; an edge from each operand to its user within a computation) and resolves
// the config names of its instructions: "name" in the entry, "computation/name"
// elsewhere.
type graphIndex struct {
	m        *hlo.Module
	comps    map[string]*hlo.Computation // by name
	node     map[*hlo.Instruction]int32
	users    map[*hlo.Instruction]int // number of users
	x        []float32                // N x rlNodeFeatures
	src, dst []int32                  // edges operand -> user
}

func newGraphIndex(m *hlo.Module) (*graphIndex, error) {
	mg, err := features.BuildModuleGraph(m, features.OperandEdges())
	if err != nil {
		return nil, err
	}
	gi := &graphIndex{m: m, comps: map[string]*hlo.Computation{}, node: mg.Index, users: map[*hlo.Instruction]int{},
		x: make([]float32, len(mg.Nodes)*rlNodeFeatures), src: mg.Src, dst: mg.Dst}
	const F = rlNodeFeatures
	for ci, c := range mg.Computations {
		gi.comps[c.Name] = c
		// Users counts distinct users (hlo.Computation.Users), not operand positions.
		users := c.Users()
		off := int(mg.Start[ci])
		for i, in := range c.Instructions {
			// A tuple is itself here: 0 elements, the bytes of all its elements, rank 0.
			features.ModuleNodeFeatures(gi.x[(off+i)*F:(off+i+1)*F], features.ModuleNode{In: in, Shape: in.Shape, Users: len(users[i])}, rlNodeBlocks())
			gi.users[in] = len(users[i])
		}
	}
	return gi, nil
}

// scope splits a config name into its computation and the name within it: the entry and
// name itself when f accepts that, else "computation/rest" for the first such split
// whose computation exists and f accepts rest in it.
func (gi *graphIndex) scope(name string, f func(c *hlo.Computation, rest string) bool) bool {
	if gi.m.Entry != nil && f(gi.m.Entry, name) {
		return true
	}
	for i := range len(name) {
		if name[i] != '/' {
			continue
		}
		if c := gi.comps[name[:i]]; c != nil && c != gi.m.Entry && f(c, name[i+1:]) {
			return true
		}
	}
	return false
}

// instruction resolves a layout choice's name.
func (gi *graphIndex) instruction(name string) *hlo.Instruction {
	var out *hlo.Instruction
	gi.scope(name, func(c *hlo.Computation, rest string) bool {
		out = c.Lookup(rest)
		return out != nil
	})
	return out
}

// edge resolves a fusion edge's name "p->x" (names may contain "->" in principle: the
// split is the one whose two sides both name instructions).
func (gi *graphIndex) edge(name string) (p, x *hlo.Instruction) {
	gi.scope(name, func(c *hlo.Computation, rest string) bool {
		for i := 0; i+2 <= len(rest); i++ {
			if rest[i:i+2] == "->" {
				if a, b := c.Lookup(rest[:i]), c.Lookup(rest[i+2:]); a != nil && b != nil {
					p, x = a, b
					return true
				}
			}
		}
		return false
	})
	return p, x
}

// newDecisions derives the policy inputs of space's choices of the given kinds (layout,
// fusion) on graph m (the module the fusion pass read, see programGraph), for target t.
// A choice naming an instruction m lacks is an error: the space and the graph must come
// from the same compile.
func newDecisions(m *hlo.Module, space *compiler.Space, kinds kindSet, t cost.Target) (*decisions, error) {
	gi, err := newGraphIndex(m)
	if err != nil {
		return nil, fmt.Errorf("the policy graph: %w", err)
	}
	d := &decisions{x: gi.x, nb: nn.NeighboursOf(len(gi.node), gi.src, gi.dst, rlMaxDegree)}
	if kinds[compiler.KindFusion] {
		for _, c := range space.Fusion {
			p, xi := gi.edge(c.Name)
			if p == nil {
				return nil, fmt.Errorf("fusion edge %q: no such producer and consumer in %s", c.Name, m.Name)
			}
			d.names = append(d.names, c.Name)
			d.defaults = append(d.defaults, c.Default)
			d.prod = append(d.prod, int(gi.node[p]))
			d.cons = append(d.cons, int(gi.node[xi]))
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
			if gi.users[p] > 1 {
				dup = 1
			}
			ratio := float32(math.Log2(float64(max(1, xi.Shape.Elements()))/float64(max(1, p.Shape.Elements()))) / 16)
			d.ef = append(d.ef, def, dup, float32(min(opIdx, 4))/4, ratio, float32(math.Log2(float64(p.Shape.Bytes())+1)/40))
			d.prior = append(d.prior, sign)
		}
	}
	if kinds[compiler.KindLayout] {
		d.lstart = []int{0}
		for _, c := range space.Layout {
			if len(c.Options) < 2 {
				continue
			}
			in := gi.instruction(c.Name)
			if in == nil {
				return nil, fmt.Errorf("layout node %q: no such instruction in %s", c.Name, m.Name)
			}
			if !in.Shape.IsArray() || in.Shape.Rank() < 2 {
				return nil, fmt.Errorf("layout node %q: shape %s has no layout choice", c.Name, in.Shape)
			}
			d.lnames = append(d.lnames, c.Name)
			d.lopts = append(d.lopts, c.Options)
			d.ldef = append(d.ldef, c.Default)
			for i := range c.Options {
				d.onode = append(d.onode, int(gi.node[in]))
				d.of = append(d.of, optionFeatures(in.Shape, c.Options, i, c.Default, t)...)
				pr, off := float32(0), float32(0)
				if i == c.Default {
					pr, off = 1, float32(math.Log(float64(len(c.Options)-1)))
				}
				d.lprior = append(d.lprior, pr)
				d.loff = append(d.loff, off)
			}
			d.lstart = append(d.lstart, d.lstart[len(d.lstart)-1]+len(c.Options))
		}
	}
	return d, nil
}

// optionFeatures are the features of option i of a layout node of shape s (see
// rlFeatureSchema).
func optionFeatures(s hlo.Shape, opts [][]int, i, def int, t cost.Target) []float32 {
	padded := func(o []int) float64 {
		return max(1, cost.PaddedBytes(s.WithLayout(&hlo.Layout{MinorToMajor: o}), t))
	}
	// physical minor dimensions (size-1 dimensions take no room)
	minors := func(o []int) []int {
		var out []int
		for _, d := range o {
			if s.Dims[d] != 1 {
				out = append(out, d)
			}
		}
		return append(out, -1, -1)
	}
	b := func(v bool) float32 {
		if v {
			return 1
		}
		return 0
	}
	logDim := func(d int) float32 {
		if d < 0 {
			return 0
		}
		return float32(math.Log2(float64(s.Dims[d])+1) / 16)
	}
	o := opts[i]
	mo, mr, md := minors(o), minors(opts[0]), minors(opts[def])
	po := padded(o)
	return []float32{
		b(i == def), b(i == 0),
		float32(math.Log2(po/padded(opts[0])) / 4), float32(math.Log2(po/padded(opts[def])) / 4),
		logDim(mo[0]), logDim(mo[1]),
		b(mo[0] == mr[0]), b(mo[0] == md[0]),
	}
}

// policyGraph is one Gorgonia graph of the policy over one program's decisions.
type policyGraph struct {
	g      *G.ExprGraph
	params G.Nodes // every parameter, in order
	used   G.Nodes // those the graph reads (the heads of decisions the program has)
	fusion *G.Node // E x 1 fusion logits, nil without fusion decisions
	layout *G.Node // R x 1 layout option logits, nil without layout decisions
	fcost  *G.Node // the fusion part of the surrogate loss
	lcost  *G.Node // the layout part of the surrogate (not the loss: see grads)
	cost   *G.Node
	vm     G.VM
}

// coefs are the REINFORCE coefficients of K sampled actions with advantages A_k (see
// reinforceCoef): per fusion decision Σ_k A_k a_ke / K, per layout option row Σ_k A_k
// [a_kv = o] / K, and scale = Σ_k A_k / K.
type coefs struct {
	fuse   []float32
	layout []float32
	scale  float32
}

// build builds the policy over d. With c, it also builds the REINFORCE surrogate loss
// and its gradients. The fusion part is
//
//	L_f = -(Σ_e coef_e z_e - scale Σ_e softplus(z_e))
//
// the negated mean over K samples of advantage A_k times the log-probability of the
// sampled fusion actions (log π(a) = a z - softplus(z) for a Bernoulli with logit z).
// The layout part, L_l = -(Σ_r coef_r z_r - scale Σ_v logsumexp_{r of v} z_r), has the
// gradient -(coef_r - scale softmax_r) in each logit z_r; the graph computes it as the
// gradient of Σ_r gz_r z_r with gz_r that constant, computed outside the graph from the
// current softmax (numerically stable, unlike an exp inside float32 arithmetic).
func (p *Policy) build(d *decisions, c *coefs, gz []float32) (pg *policyGraph, err error) {
	defer func() {
		// Gorgonia's builders panic through Must on shape errors; report them as errors.
		if r := recover(); r != nil {
			pg, err = nil, fmt.Errorf("policy graph: %v", r)
		}
	}()
	E, R := d.nFusion(), d.rows()
	N := len(d.x) / rlNodeFeatures
	g := G.NewGraph()
	pg = &policyGraph{g: g}
	ps := map[string]*G.Node{}
	for _, pp := range p.params {
		// Bound to the parameters themselves: they change only in step, between graphs.
		n := nn.ParamNode(g, pp, G.Float32)
		ps[pp.Name] = n
		pg.params = append(pg.params, n)
		if (E > 0 || !fusionParams[pp.Name]) && (R > 0 || !layoutParams[pp.Name]) {
			pg.used = append(pg.used, n)
		}
	}
	layer := func(in *G.Node, w, b string) *G.Node {
		return nn.ReLU(nn.Bias(G.Must(G.Mul(in, ps[w])), ps[b]))
	}
	// scaled returns a (n x 1) column times the 1x1 parameter w.
	scaled := func(col *G.Node, w string) *G.Node {
		return G.Must(G.BroadcastHadamardProd(col, ps[w], nil, []byte{0}))
	}
	// The encoder: node embeddings h [N, H] of the whole module.
	sage := []nn.SAGELayer{{WSelf: ps["sage1.w_self"], WIn: ps["sage1.w_in"], WOut: ps["sage1.w_out"], B: ps["sage1.b"]}}
	h := nn.SAGE(nn.Const(g, "x", d.x, N, rlNodeFeatures), d.nb.Const(g), sage, 0)
	rows := func(name string, idx []int) *G.Node { return nn.Gather(h, nn.IntConst(g, name, idx), nn.ReduceSum, 1) }
	if E > 0 {
		cat := G.Must(G.Concat(1, rows("producer", d.prod), rows("consumer", d.cons), nn.Const(g, "ef", d.ef, E, rlEdgeFeatures)))
		ge := layer(cat, "w2", "b2")
		z := nn.Bias(G.Must(G.Mul(ge, ps["w3"])), ps["b3"])
		pg.fusion = G.Must(G.Add(z, scaled(nn.Const(g, "prior_sign", d.prior, E, 1), "prior")))
	}
	if R > 0 {
		cat := G.Must(G.Concat(1, rows("option_node", d.onode), nn.Const(g, "of", d.of, R, rlOptionFeatures)))
		gv := layer(cat, "w4", "b4")
		z := G.Must(G.Mul(gv, ps["w5"]))
		z = G.Must(G.Add(z, scaled(nn.Const(g, "lprior_ind", d.lprior, R, 1), "lprior")))
		pg.layout = G.Must(G.Add(z, nn.Const(g, "lprior_off", d.loff, R, 1)))
	}
	if c == nil {
		pg.vm = G.NewTapeMachine(g)
		return pg, nil
	}
	var terms []*G.Node
	if E > 0 {
		z := pg.fusion
		cf := nn.Const(g, "coef", c.fuse, E, 1)
		lin, err := G.HadamardProd(z, cf)
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
		sc := G.NewScalar(g, G.Float32, G.WithName("scale"), G.WithValue(c.scale))
		if sp, err = G.HadamardProd(sp, sc); err != nil {
			return nil, err
		}
		if pg.fcost, err = G.Sub(sp, lin); err != nil {
			return nil, err
		}
		terms = append(terms, pg.fcost)
	}
	if R > 0 {
		gzn := nn.Const(g, "gz", gz, R, 1)
		lin, err := G.HadamardProd(pg.layout, gzn)
		if err != nil {
			return nil, err
		}
		if pg.lcost, err = G.Sum(lin); err != nil {
			return nil, err
		}
		terms = append(terms, pg.lcost)
	}
	pg.cost = terms[0]
	if len(terms) == 2 {
		if pg.cost, err = G.Add(terms[0], terms[1]); err != nil {
			return nil, err
		}
	}
	if _, err := G.Grad(pg.cost, pg.used...); err != nil {
		return nil, fmt.Errorf("policy gradient: %w", err)
	}
	pg.vm = G.NewTapeMachine(g, G.BindDualValues(pg.used...))
	return pg, nil
}

// probs returns the policy's distribution over d's decisions: the fusion probability
// of every edge, and the probability of every layout option (a softmax per node).
func (p *Policy) probs(d *decisions) (*dist, error) {
	out := &dist{}
	if d.n() == 0 {
		return out, nil
	}
	pg, err := p.build(d, nil, nil)
	if err != nil {
		return nil, err
	}
	defer pg.vm.Close()
	if err := pg.vm.RunAll(); err != nil {
		return nil, fmt.Errorf("policy forward: %w", err)
	}
	if pg.fusion != nil {
		for _, v := range pg.fusion.Value().Data().([]float32) {
			out.fuse = append(out.fuse, 1/(1+math.Exp(-float64(v))))
		}
	}
	if pg.layout != nil {
		out.layout = d.softmax(pg.layout.Value().Data().([]float32))
	}
	return out, nil
}

// softmax is the per-node softmax of layout option logits z.
func (d *decisions) softmax(z []float32) []float64 {
	out, _ := d.softmaxLSE(z)
	return out
}

// softmaxLSE is softmax and, per layout node, the log-sum-exp of its logits
// (m + log Σ_r e^(z_r − m), m the node's largest logit).
func (d *decisions) softmaxLSE(z []float32) (probs, lse []float64) {
	probs, lse = make([]float64, len(z)), make([]float64, d.nLayout())
	for v := range d.nLayout() {
		lo, hi := d.lstart[v], d.lstart[v+1]
		m := math.Inf(-1)
		for r := lo; r < hi; r++ {
			m = math.Max(m, float64(z[r]))
		}
		s := 0.0
		for r := lo; r < hi; r++ {
			probs[r] = math.Exp(float64(z[r]) - m)
			s += probs[r]
		}
		for r := lo; r < hi; r++ {
			probs[r] /= s
		}
		lse[v] = m + math.Log(s)
	}
	return probs, lse
}

// grads returns the REINFORCE surrogate loss over d (see build) and its gradient per
// parameter (zero for the parameters of a head d has no decisions for).
func (p *Policy) grads(d *decisions, c *coefs) (float64, [][]float32, error) {
	var gz []float32
	layoutLoss := 0.0
	if d.rows() > 0 {
		// The layout part needs the current softmax: one forward pass first.
		pf, err := p.build(d, nil, nil)
		if err != nil {
			return 0, nil, err
		}
		err = pf.vm.RunAll()
		pf.vm.Close()
		if err != nil {
			return 0, nil, fmt.Errorf("policy forward: %w", err)
		}
		z := pf.layout.Value().Data().([]float32)
		sm, lse := d.softmaxLSE(z)
		gz = make([]float32, len(z))
		for r := range z {
			gz[r] = float32(float64(c.scale)*sm[r]) - c.layout[r]
			layoutLoss -= float64(c.layout[r]) * float64(z[r])
		}
		for _, l := range lse {
			layoutLoss += float64(c.scale) * l
		}
	}
	pg, err := p.build(d, c, gz)
	if err != nil {
		return 0, nil, err
	}
	defer pg.vm.Close()
	if err := pg.vm.RunAll(); err != nil {
		return 0, nil, fmt.Errorf("policy gradient: %w", err)
	}
	loss := layoutLoss
	if pg.fcost != nil {
		loss += float64(pg.fcost.Value().Data().(float32))
	}
	used := map[*G.Node]bool{}
	for _, n := range pg.used {
		used[n] = true
	}
	out := make([][]float32, len(pg.params))
	for i, n := range pg.params {
		if !used[n] {
			out[i] = make([]float32, len(p.params[i].Data))
			continue
		}
		g, err := nn.Grad32(n)
		if err != nil {
			return 0, nil, fmt.Errorf("policy: %w", err)
		}
		out[i] = append([]float32(nil), g...)
	}
	return loss, out, nil
}

// Params are the policy's parameters (rl.Policy).
func (p *Policy) Params() nn.Params { return p.params }

// Actions is the policy's action list: the decisions its two heads output, layout and
// fusion (rl.Policy; RLKinds). A checkpoint records it.
func (p *Policy) Actions() []string { return policyActions() }

// policyActions is the action list of this build's policy.
func policyActions() []string {
	var out []string
	for _, k := range RLKinds() {
		out = append(out, string(k))
	}
	return out
}

// Grads returns the REINFORCE surrogate loss of samples eps of one program's decisions
// (every sample one step, weighted by adv[k][0]) and its gradient, as one part
// (rl.Policy; see grads and reinforceCoef).
func (p *Policy) Grads(eps []*rlSample, adv [][]float64) ([]rl.Part, error) {
	if len(eps) == 0 {
		return nil, nil
	}
	acts := make([]action, len(eps))
	a := make([]float64, len(eps))
	for k, e := range eps {
		acts[k], a[k] = e.act, adv[k][0]
	}
	loss, gs, err := p.grads(eps[0].d, reinforceCoef(eps[0].d, acts, a))
	if err != nil {
		return nil, err
	}
	return []rl.Part{{Loss: loss, Grads: gs}}, nil
}

// step applies one update (reinforce.Optimizer: Adam, the gradients' norm clipped at
// reinforce.GradClip) with learning rate lr to gradients gs (summed over the batch by the
// caller; zero for a head without decisions, whose parameters still follow their
// momentum).
func (p *Policy) step(gs [][]float32, lr float64) { p.opt.Step(p.params, gs, lr) }

// sampleAction draws one action from pr: a Bernoulli per fusion edge, a categorical per
// layout node.
func sampleAction(rng *rand.Rand, d *decisions, pr *dist) action {
	a := action{fuse: make([]bool, d.nFusion()), layout: make([]int, d.nLayout())}
	for i := range a.fuse {
		a.fuse[i] = rng.Float64() < pr.fuse[i]
	}
	for v := range a.layout {
		lo, hi := d.lstart[v], d.lstart[v+1]
		u := rng.Float64()
		o := hi - lo - 1 // rounding: the last option takes what is left
		for r := lo; r < hi; r++ {
			if u -= pr.layout[r]; u < 0 {
				o = r - lo
				break
			}
		}
		a.layout[v] = o
	}
	return a
}

// greedyAction is every decision's most likely option (the first on a tie).
func greedyAction(d *decisions, pr *dist) action {
	a := action{fuse: make([]bool, d.nFusion()), layout: make([]int, d.nLayout())}
	for i := range a.fuse {
		a.fuse[i] = pr.fuse[i] >= 0.5
	}
	for v := range a.layout {
		lo, hi := d.lstart[v], d.lstart[v+1]
		best := lo
		for r := lo + 1; r < hi; r++ {
			if pr.layout[r] > pr.layout[best] {
				best = r
			}
		}
		a.layout[v] = best - lo
	}
	return a
}

// apply returns base's config with a's decisions written into it.
func (d *decisions) apply(base *compiler.Config, a action) *compiler.Config {
	cfg := base.Clone()
	for i, name := range d.names {
		cfg.Fusion[name] = a.fuse[i]
	}
	for v, name := range d.lnames {
		cfg.Layout[name] = slices.Clone(d.lopts[v][a.layout[v]])
	}
	return cfg
}

// explore returns pr with every decision kept at least floor away from certainty: a
// fusion probability is clamped to [floor, 1-floor]; a layout node's distribution is
// mixed with the uniform one so that the probability of leaving its most likely option
// is at least floor (at most 1: then the node is uniform).
func (d *decisions) explore(pr *dist, floor float64) *dist {
	out := &dist{fuse: make([]float64, len(pr.fuse)), layout: make([]float64, len(pr.layout))}
	for i, q := range pr.fuse {
		out.fuse[i] = math.Min(math.Max(q, floor), 1-floor)
	}
	for v := range d.nLayout() {
		lo, hi := d.lstart[v], d.lstart[v+1]
		k := float64(hi - lo)
		top := 0.0
		for r := lo; r < hi; r++ {
			top = math.Max(top, pr.layout[r])
		}
		// leaving the top option: (1-λ)(1-top) + λ(k-1)/k >= floor
		lam := 0.0
		if need := floor - (1 - top); need > 0 {
			lam = math.Min(1, need/((k-1)/k-(1-top)))
		}
		for r := lo; r < hi; r++ {
			out.layout[r] = (1-lam)*pr.layout[r] + lam/k
		}
	}
	return out
}

// reinforceCoef turns K samples (actions and advantages) into the coefficients of the
// surrogate loss (see build).
func reinforceCoef(d *decisions, acts []action, adv []float64) *coefs {
	c := &coefs{fuse: make([]float32, d.nFusion()), layout: make([]float32, d.rows())}
	k := float64(len(acts))
	s := 0.0
	for i, a := range acts {
		w := adv[i] / k
		s += w
		for e, f := range a.fuse {
			if f {
				c.fuse[e] += float32(w)
			}
		}
		for v, o := range a.layout {
			c.layout[d.lstart[v]+o] += float32(w)
		}
	}
	c.scale = float32(s)
	return c
}
