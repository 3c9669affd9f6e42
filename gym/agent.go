package gym

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/tpucost/tpucost/compiler/opt"
	"github.com/tpucost/tpucost/features"
)

// The pass-ordering agent: a policy over the gym's actions that reads the module through
// a GraphSAGE encoder (one mean-aggregation layer, as tune's fusion policy) and the
// op-count histogram. Architecture (float32):
//
//	x_v     node features (Graph.NodeFeats, NodeWidth)
//	a_v     [x_v, mean_{u->v} x_u, mean_{v->w} x_w]      (mean over operands and users)
//	h_v     relu(a_v W1 + b1)                             (a GraphSAGE-mean layer)
//	g       mean_v h_v                                    (graph embedding)
//	s       global features (globalFeatureNames): log histogram, op counts, step, idle
//	        passes, last action
//	u       relu([g, s] W2 + b2)
//	logits  u W3 + b3                                     (one per action; softmax policy)
//
// Idle passes (Observation.Idle: they ran on this exact module and changed nothing) are
// masked out: the policy never wastes a step rerunning one, and once every pass is idle
// (a fixed point) only stop is left.
//
// Trained by REINFORCE with a per-(program, step) moving-average baseline of the return
// to go and an entropy bonus (Train).

// Agent dimensions: part of the checkpoint format (a checkpoint with others is refused).
const agentHidden = 32

// aggWidth is the width of a node's aggregated features a_v.
const aggWidth = 3 * NodeWidth

// globalWidth is the number of global features.
func globalWidth() int { return len(features.Vocabulary()) + 3 + 2*NumActions() }

// globalFeatureNames names the global features (checked by checkpoints, with the node
// features, so a policy is never read with other columns).
func globalFeatureNames() []string {
	var ns []string
	for _, v := range features.Vocabulary() {
		ns = append(ns, "hist_"+v)
	}
	ns = append(ns, "ops_fraction", "ops_log", "step_fraction")
	for _, a := range Actions() {
		ns = append(ns, "idle_"+a)
	}
	for _, a := range Actions() {
		ns = append(ns, "last_"+a)
	}
	return ns
}

// agentSchema identifies the agent's inputs and outputs: node features, global features
// and actions.
func agentSchema() string {
	return "v1;node:" + strings.Join(NodeFeatureNames(), ",") + ";global:" + strings.Join(globalFeatureNames(), ",") +
		";actions:" + strings.Join(Actions(), ",")
}

// param is one named parameter matrix.
type param struct {
	name  string
	shape [2]int
	data  []float32
}

func agentShapes() []param {
	g := globalWidth()
	a := NumActions()
	return []param{
		{name: "w1", shape: [2]int{aggWidth, agentHidden}},
		{name: "b1", shape: [2]int{1, agentHidden}},
		{name: "w2", shape: [2]int{agentHidden + g, agentHidden}},
		{name: "b2", shape: [2]int{1, agentHidden}},
		{name: "w3", shape: [2]int{agentHidden, a}},
		{name: "b3", shape: [2]int{1, a}},
	}
}

// Agent is a pass-ordering policy and its training record. It is not safe for
// concurrent use.
type Agent struct {
	params []*param // w1 b1 w2 b2 w3 b3
	// Meta describes how the agent was trained (saved with it).
	Meta AgentMeta
	adam *adamState
}

// AgentMeta is the training record an agent checkpoint carries.
type AgentMeta struct {
	Programs   []string     `json:"programs"` // trained on: eval refuses them
	Seed       int64        `json:"seed"`
	Iterations int          `json:"iterations"`
	Samples    int          `json:"samples_per_program"`
	MaxSteps   int          `json:"max_steps"`
	History    []IterReport `json:"history,omitempty"`
}

// NewAgent returns an agent with Glorot-uniform weights drawn from seed and zero biases.
func NewAgent(seed int64) *Agent {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x67796d6167656e74)) // "gymagent"
	a := &Agent{}
	for _, s := range agentShapes() {
		p := &param{name: s.name, shape: s.shape, data: make([]float32, s.shape[0]*s.shape[1])}
		if s.name[0] == 'w' {
			lim := math.Sqrt(6 / float64(s.shape[0]+s.shape[1]))
			for i := range p.data {
				p.data[i] = float32((2*rng.Float64() - 1) * lim)
			}
		}
		a.params = append(a.params, p)
	}
	return a
}

// input is one observation as the policy reads it.
type input struct {
	agg  []float32 // N x aggWidth
	n    int
	glob []float32 // globalWidth
	mask []bool    // per action: masked out (an idle pass)
}

// encode turns an observation into the policy's input.
func encode(o Observation) input {
	g := o.Graph
	n := g.Nodes()
	const F = NodeWidth
	agg := make([]float32, n*aggWidth)
	in, out := make([]int, n), make([]int, n)
	for i := range n {
		copy(agg[i*aggWidth:i*aggWidth+F], g.NodeFeats[i*F:(i+1)*F])
	}
	for j := range g.EdgeSrc {
		s, d := int(g.EdgeSrc[j]), int(g.EdgeDst[j])
		in[d]++
		out[s]++
		for k := range F {
			agg[d*aggWidth+F+k] += g.NodeFeats[s*F+k]   // operand of d
			agg[s*aggWidth+2*F+k] += g.NodeFeats[d*F+k] // user of s
		}
	}
	for i := range n {
		for k := range F {
			if in[i] > 1 {
				agg[i*aggWidth+F+k] /= float32(in[i])
			}
			if out[i] > 1 {
				agg[i*aggWidth+2*F+k] /= float32(out[i])
			}
		}
	}
	glob := make([]float32, globalWidth())
	for i, c := range o.Histogram {
		glob[i] = float32(math.Log1p(float64(c)) / 8)
	}
	k := len(o.Histogram)
	if o.InitialOpCount > 0 {
		glob[k] = float32(o.OpCount) / float32(o.InitialOpCount)
	}
	glob[k+1] = float32(math.Log1p(float64(o.OpCount)) / 16)
	if o.MaxSteps > 0 {
		glob[k+2] = float32(o.Step) / float32(o.MaxSteps)
	}
	k += 3
	for i, idle := range o.Idle {
		glob[k+i] = b2f(idle)
	}
	k += NumActions()
	if len(o.History) > 0 {
		glob[k+o.History[len(o.History)-1]] = 1
	}
	mask := make([]bool, NumActions())
	copy(mask, o.Idle)
	return input{agg: agg, n: n, glob: glob, mask: mask}
}

func (a *Agent) p(name string) *param {
	for _, p := range a.params {
		if p.name == name {
			return p
		}
	}
	panic("gym: no agent parameter " + name)
}

// logits computes the policy's logits for x in plain Go (acting needs no gradients).
// Train's Gorgonia graph computes the same function (TestLogitsMatchGraph).
func (a *Agent) logits(x input) []float64 {
	H := agentHidden
	w1, b1 := a.p("w1").data, a.p("b1").data
	pool := make([]float64, H)
	h := make([]float64, H)
	for i := range x.n {
		row := x.agg[i*aggWidth : (i+1)*aggWidth]
		for j := range H {
			h[j] = float64(b1[j])
		}
		for k, v := range row {
			if v == 0 {
				continue
			}
			wr := w1[k*H : (k+1)*H]
			for j := range H {
				h[j] += float64(v) * float64(wr[j])
			}
		}
		for j := range H {
			if h[j] > 0 {
				pool[j] += h[j]
			}
		}
	}
	if x.n > 0 {
		for j := range pool {
			pool[j] /= float64(x.n)
		}
	}
	w2, b2 := a.p("w2").data, a.p("b2").data
	in2 := append(pool, make([]float64, len(x.glob))...)
	for i, v := range x.glob {
		in2[H+i] = float64(v)
	}
	u := make([]float64, H)
	for j := range H {
		u[j] = float64(b2[j])
	}
	for k, v := range in2 {
		if v == 0 {
			continue
		}
		for j := range H {
			u[j] += v * float64(w2[k*H+j])
		}
	}
	w3, b3 := a.p("w3").data, a.p("b3").data
	A := NumActions()
	z := make([]float64, A)
	for j := range A {
		z[j] = float64(b3[j])
	}
	for k, v := range u {
		if v <= 0 {
			continue
		}
		for j := range A {
			z[j] += v * float64(w3[k*A+j])
		}
	}
	return z
}

// maxLogit is the largest logit of an action mask leaves in (stop is never masked).
func maxLogit(z []float64, mask []bool) float64 {
	m := math.Inf(-1)
	for i, v := range z {
		if !mask[i] {
			m = math.Max(m, v)
		}
	}
	return m
}

// softmax returns the probabilities of logits z with the actions of mask left out
// (probability 0).
func softmax(z []float64, mask []bool) []float64 {
	m := maxLogit(z, mask)
	p := make([]float64, len(z))
	s := 0.0
	for i, v := range z {
		if !mask[i] {
			p[i] = math.Exp(v - m)
			s += p[i]
		}
	}
	for i := range p {
		p[i] /= s
	}
	return p
}

// Probs returns the policy's probability of every action (indexed like Actions) in
// observation o.
func (a *Agent) Probs(o Observation) []float64 {
	x := encode(o)
	return softmax(a.logits(x), x.mask)
}

// Act returns the policy's most likely action in o (the lowest index among ties).
func (a *Agent) Act(o Observation) int {
	x := encode(o)
	return argmax(softmax(a.logits(x), x.mask))
}

// argmax is the index of the largest of p (the lowest among ties).
func argmax(p []float64) int {
	best := 0
	for i, v := range p {
		if v > p[best] {
			best = i
		}
	}
	return best
}

// sample draws an action from probabilities p.
func sample(rng *rand.Rand, p []float64) int {
	r := rng.Float64()
	for i, q := range p {
		if r < q {
			return i
		}
		r -= q
	}
	return len(p) - 1
}

// episodeBatch is one episode's inputs and REINFORCE weights for the gradient graph.
type episodeBatch struct {
	xs      []input
	actions []int
	weights []float32 // per step: advantage / number of episodes in the update
	shift   []float32 // per step: the max unmasked logit (a constant that keeps exp in range)
}

func pmat(g *G.ExprGraph, name string, data []float32, r, c int) *G.Node {
	v := tensor.New(tensor.WithShape(r, c), tensor.WithBacking(data))
	return G.NewMatrix(g, G.Float32, G.WithShape(r, c), G.WithName(name), G.WithValue(v))
}

// graphLogits builds the policy over the T steps of b in graph g and returns the T x A
// logits and the parameter nodes.
func (a *Agent) graphLogits(g *G.ExprGraph, xs []input) (*G.Node, G.Nodes, error) {
	T := len(xs)
	total := 0
	for _, x := range xs {
		total += x.n
	}
	agg := make([]float32, 0, total*aggWidth)
	pool := make([]float32, T*total)
	glob := make([]float32, 0, T*globalWidth())
	off := 0
	for t, x := range xs {
		agg = append(agg, x.agg...)
		for i := range x.n {
			pool[t*total+off+i] = 1 / float32(x.n)
		}
		off += x.n
		glob = append(glob, x.glob...)
	}
	ps := map[string]*G.Node{}
	var nodes G.Nodes
	for _, p := range a.params {
		n := pmat(g, p.name, append([]float32(nil), p.data...), p.shape[0], p.shape[1])
		ps[p.name] = n
		nodes = append(nodes, n)
	}
	var err error
	do := func(f func() (*G.Node, error)) *G.Node {
		if err != nil {
			return nil
		}
		var n *G.Node
		n, err = f()
		return n
	}
	X := pmat(g, "agg", agg, max(total, 1), aggWidth)
	P := pmat(g, "pool", pool, T, max(total, 1))
	S := pmat(g, "global", glob, T, globalWidth())
	h := do(func() (*G.Node, error) { return G.Mul(X, ps["w1"]) })
	h = do(func() (*G.Node, error) { return G.BroadcastAdd(h, ps["b1"], nil, []byte{0}) })
	h = do(func() (*G.Node, error) { return G.Rectify(h) })
	pooled := do(func() (*G.Node, error) { return G.Mul(P, h) })
	cat := do(func() (*G.Node, error) { return G.Concat(1, pooled, S) })
	u := do(func() (*G.Node, error) { return G.Mul(cat, ps["w2"]) })
	u = do(func() (*G.Node, error) { return G.BroadcastAdd(u, ps["b2"], nil, []byte{0}) })
	u = do(func() (*G.Node, error) { return G.Rectify(u) })
	z := do(func() (*G.Node, error) { return G.Mul(u, ps["w3"]) })
	z = do(func() (*G.Node, error) { return G.BroadcastAdd(z, ps["b3"], nil, []byte{0}) })
	if err != nil {
		return nil, nil, fmt.Errorf("agent graph: %w", err)
	}
	return z, nodes, nil
}

// grads returns the loss of episode batch b and its gradient per parameter:
//
//	L = −Σ_t w_t log π(a_t | s_t) − β Σ_t H(π(· | s_t)) / E
//
// (w_t the advantage of step t divided by the number of episodes E in the update, β the
// entropy weight), whose gradient is REINFORCE's with an entropy bonus.
func (a *Agent) grads(b *episodeBatch, beta float32, episodes int) (float64, [][]float32, error) {
	T, A := len(b.xs), NumActions()
	g := G.NewGraph()
	z, params, err := a.graphLogits(g, b.xs)
	if err != nil {
		return 0, nil, err
	}
	do := func(f func() (*G.Node, error)) *G.Node {
		if err != nil {
			return nil
		}
		var n *G.Node
		n, err = f()
		return n
	}
	shift := pmat(g, "shift", b.shift, T, 1)
	// Masked actions get a logit maskLogit below the rest: exp underflows to exactly 0,
	// so they carry no probability, no gradient and no entropy.
	madd := make([]float32, T*A)
	for t, x := range b.xs {
		for j, m := range x.mask {
			if m {
				madd[t*A+j] = maskLogit
			}
		}
	}
	M := pmat(g, "mask", madd, T, A)
	wsel := make([]float32, T*A)
	for t, act := range b.actions {
		wsel[t*A+act] = b.weights[t]
	}
	W := pmat(g, "wsel", wsel, T, A)
	zs := do(func() (*G.Node, error) { return G.BroadcastSub(z, shift, nil, []byte{1}) })
	zs = do(func() (*G.Node, error) { return G.Add(zs, M) })
	e := do(func() (*G.Node, error) { return G.Exp(zs) })
	lse := do(func() (*G.Node, error) { return G.Sum(e, 1) })
	lse = do(func() (*G.Node, error) { return G.Log(lse) })
	lse = do(func() (*G.Node, error) { return G.Reshape(lse, tensor.Shape{T, 1}) })
	logp := do(func() (*G.Node, error) { return G.BroadcastSub(zs, lse, nil, []byte{1}) })
	pg := do(func() (*G.Node, error) { return G.HadamardProd(W, logp) })
	pg = do(func() (*G.Node, error) { return G.Sum(pg) })
	p := do(func() (*G.Node, error) { return G.Exp(logp) })
	ent := do(func() (*G.Node, error) { return G.HadamardProd(p, logp) }) // −entropy per entry
	ent = do(func() (*G.Node, error) { return G.Sum(ent) })
	sc := G.NewScalar(g, G.Float32, G.WithName("beta"), G.WithValue(beta/float32(episodes)))
	ent = do(func() (*G.Node, error) { return G.HadamardProd(ent, sc) })
	cost := do(func() (*G.Node, error) { return G.Sub(ent, pg) })
	if err != nil {
		return 0, nil, fmt.Errorf("agent loss: %w", err)
	}
	if _, err := G.Grad(cost, params...); err != nil {
		return 0, nil, fmt.Errorf("agent gradient: %w", err)
	}
	vm := G.NewTapeMachine(g, G.BindDualValues(params...))
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return 0, nil, fmt.Errorf("agent gradient: %w", err)
	}
	loss := float64(cost.Value().Data().(float32))
	out := make([][]float32, len(params))
	for i, n := range params {
		gv, err := n.Grad()
		if err != nil {
			return 0, nil, fmt.Errorf("agent gradient of %s: %w", n.Name(), err)
		}
		out[i] = append([]float32(nil), gv.Data().([]float32)...)
	}
	return loss, out, nil
}

// maskLogit is added to a masked action's logit in the training graph (exp of it is 0
// in float32).
const maskLogit = -1e4

// adamState holds Adam's moments.
type adamState struct {
	m, v [][]float32
	t    int
}

// Adam hyperparameters of agent training (as tune's policy training).
const (
	adamB1  = 0.9
	adamB2  = 0.999
	adamEps = 1e-8
	gradClp = 5.0 // global gradient-norm clip: REINFORCE gradients are heavy-tailed
)

// step applies one Adam update with learning rate lr to gradients gs.
func (a *Agent) step(gs [][]float32, lr float64) {
	if a.adam == nil {
		a.adam = &adamState{}
		for _, p := range a.params {
			a.adam.m = append(a.adam.m, make([]float32, len(p.data)))
			a.adam.v = append(a.adam.v, make([]float32, len(p.data)))
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
	s := a.adam
	s.t++
	c1 := 1 - math.Pow(adamB1, float64(s.t))
	c2 := 1 - math.Pow(adamB2, float64(s.t))
	for i, p := range a.params {
		for j := range p.data {
			g := float64(gs[i][j]) * clip
			m := adamB1*float64(s.m[i][j]) + (1-adamB1)*g
			v := adamB2*float64(s.v[i][j]) + (1-adamB2)*g*g
			s.m[i][j], s.v[i][j] = float32(m), float32(v)
			p.data[j] -= float32(lr * (m / c1) / (math.Sqrt(v/c2) + adamEps))
		}
	}
}

// passCount is the number of pass actions (the stop action excluded).
func passCount() int { return len(opt.All()) }
