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
	"github.com/tpucost/tpucost/nn"
	"github.com/tpucost/tpucost/nn/rl"
)

// The pass-ordering agent: a policy over the gym's actions that reads the module through
// the shared GraphSAGE encoder (nn.SAGE, the cost model's layer stack; one layer, like
// tune's policy) and the op-count histogram. Architecture (float32):
//
//	x_v     node features (Graph.NodeFeats, NodeWidth)
//	h_v     relu(x_v W_self + mean_{u->v} x_u W_in + mean_{v->w} x_w W_out + b)
//	        (a GraphSAGE-mean layer over operands and users, at most agentMaxDegree of
//	        each, evenly spaced when a node has more)
//	g       mean_v h_v                                    (graph embedding)
//	s       global features (globalFeatureNames): log histogram, op counts, step, idle
//	        passes, last action
//	u       relu([g, s] W2 + b2)
//	logits  u W3 + b3                                     (one per action; softmax policy)
//
// Acting and training run the same Gorgonia graph (graphLogits). Idle passes
// (Observation.Idle: they ran on this exact module and changed nothing) are masked out:
// the policy never wastes a step rerunning one, and once every pass is idle (a fixed
// point) only stop is left.
//
// Trained by REINFORCE or PPO with a per-(program, step) moving-average baseline of the
// return to go and an entropy bonus (Train), through the shared loop of nn/rl (Adam, the
// gradient norm clipped at reinforce.GradClip): Agent is an rl.Policy and, for PPO, an
// rl.LogProber.

// Agent dimensions: part of the checkpoint format (a checkpoint with others is refused).
const (
	agentHidden = 32
	// agentMaxDegree caps the operands and users the encoder averages per node.
	agentMaxDegree = 16
)

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

// agentSchema identifies the agent's inputs and outputs: the encoder's degree cap, node
// features, global features and actions.
func agentSchema() string {
	return fmt.Sprintf("v2;max_degree:%d;node:", agentMaxDegree) + strings.Join(NodeFeatureNames(), ",") +
		";global:" + strings.Join(globalFeatureNames(), ",") + ";actions:" + strings.Join(Actions(), ",")
}

// agentParams lists the agent's parameters, zero: the GraphSAGE layer (sage1.*, the
// layout nn.SAGE reads), the hidden layer (w2, b2) and the output layer (w3, b3).
func agentParams() nn.Params {
	F, H, A := NodeWidth, agentHidden, NumActions()
	return nn.Params{
		nn.NewParam("sage1.w_self", F, H), nn.NewParam("sage1.w_in", F, H), nn.NewParam("sage1.w_out", F, H), nn.NewParam("sage1.b", H),
		nn.NewParam("w2", H+globalWidth(), H), nn.NewParam("b2", H),
		nn.NewParam("w3", H, A), nn.NewParam("b3", A),
	}
}

// Agent is a pass-ordering policy and its training record. It is not safe for
// concurrent use.
type Agent struct {
	params nn.Params // as agentParams lists them
	// Meta describes how the agent was trained (saved with it).
	Meta AgentMeta
}

// AgentMeta is the training record an agent checkpoint carries.
type AgentMeta struct {
	Programs   []string     `json:"programs"` // trained on: eval refuses them
	Seed       int64        `json:"seed"`
	Iterations int          `json:"iterations"`
	Samples    int          `json:"samples_per_program"`
	MaxSteps   int          `json:"max_steps"`
	Reward     string       `json:"reward_measure"` // RewardOps or RewardTime ("" in agents of earlier builds: ops)
	History    []IterReport `json:"history,omitempty"`

	// Algorithm is AlgoREINFORCE, AlgoPPO or AlgoEffect (a pass-effect model, TrainEffect:
	// its History records each epoch's mean squared error as Loss) ("" in agents of
	// earlier builds: REINFORCE);
	// Epochs and Clip are PPO's (absent under REINFORCE); NormalizedAdvantages whether
	// the advantages were divided by their standard deviation per iteration.
	Algorithm            string  `json:"algorithm,omitempty"`
	Epochs               int     `json:"ppo_epochs,omitempty"`
	Clip                 float64 `json:"ppo_clip,omitempty"`
	NormalizedAdvantages bool    `json:"normalized_advantages,omitempty"`
}

// NewAgent returns an agent with Glorot-uniform weights drawn from seed and zero biases.
// The GraphSAGE layer's three blocks are drawn as one [3·NodeWidth, hidden] matrix (the
// product of [x, mean_in, mean_out] they compute).
func NewAgent(seed int64) *Agent {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x67796d6167656e74)) // "gymagent"
	a := &Agent{params: agentParams()}
	for _, p := range a.params {
		if len(p.Shape) != 2 {
			continue // biases
		}
		fanIn := p.Shape[0]
		if strings.HasPrefix(p.Name, "sage") {
			fanIn *= 3
		}
		nn.Uniform(p.Data, nn.GlorotLimit(fanIn, p.Shape[1]), rng)
	}
	return a
}

// input is one observation as the policy reads it.
type input struct {
	x        []float32 // n x NodeWidth node features
	n        int
	src, dst []int32   // edges (operand -> user)
	glob     []float32 // globalWidth
	mask     []bool    // per action: masked out (an idle pass)
}

// encode turns an observation into the policy's input.
func encode(o Observation) input {
	g := o.Graph
	n := g.Nodes()
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
		if idle {
			glob[k+i] = 1
		}
	}
	k += NumActions()
	if len(o.History) > 0 {
		glob[k+o.History[len(o.History)-1]] = 1
	}
	mask := make([]bool, NumActions())
	copy(mask, o.Idle)
	return input{x: g.NodeFeats, n: n, src: g.EdgeSrc, dst: g.EdgeDst, glob: glob, mask: mask}
}

// logits computes the policy's logits for x (acting needs no gradients).
func (a *Agent) logits(x input) ([]float64, error) {
	g := G.NewGraph()
	z, _, err := a.graphLogits(g, []input{x})
	if err != nil {
		return nil, err
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return nil, fmt.Errorf("agent forward: %w", err)
	}
	return nn.Values(z.Value()), nil
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
func (a *Agent) Probs(o Observation) ([]float64, error) {
	x := encode(o)
	z, err := a.logits(x)
	if err != nil {
		return nil, err
	}
	return softmax(z, x.mask), nil
}

// Act returns the policy's most likely action in o (the lowest index among ties).
func (a *Agent) Act(o Observation) (int, error) {
	p, err := a.Probs(o)
	if err != nil {
		return 0, err
	}
	return argmax(p), nil
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
	// episodes is the number of episodes in the update and beta the entropy weight
	// (set by the training env, read by Grads).
	episodes int
	beta     float32
	entropy  float64 // mean entropy per step of the episode's policy, in nats (reported)
}

// graphLogits builds the policy over the observations xs in graph g and returns the
// len(xs) x A logits and the parameter nodes (bound to the agent's parameters).
func (a *Agent) graphLogits(g *G.ExprGraph, xs []input) (z *G.Node, params G.Nodes, err error) {
	defer func() {
		// Gorgonia's builders panic through Must on shape errors; report them as errors.
		if r := recover(); r != nil {
			z, params, err = nil, nil, fmt.Errorf("agent graph: %v", r)
		}
	}()
	T := len(xs)
	total, M := 0, 1
	for _, x := range xs {
		total += x.n
		M = max(M, x.n)
	}
	// The observations' graphs side by side (node ids offset), one pool group each.
	feats := make([]float32, 0, max(total, 1)*NodeWidth)
	var src, dst []int32
	pool := make([]int, T*M)
	glob := make([]float32, 0, T*globalWidth())
	off := 0
	for t, x := range xs {
		feats = append(feats, x.x...)
		for j := range x.src {
			src = append(src, x.src[j]+int32(off))
			dst = append(dst, x.dst[j]+int32(off))
		}
		for i := range M {
			pool[t*M+i] = -1
			if i < x.n {
				pool[t*M+i] = off + i
			}
		}
		off += x.n
		glob = append(glob, x.glob...)
	}
	if total == 0 {
		feats = make([]float32, NodeWidth) // one unread zero node: tensors need a row
	}
	P := map[string]*G.Node{}
	for _, p := range a.params {
		n := nn.ParamNode(g, p, G.Float32)
		P[p.Name] = n
		params = append(params, n)
	}
	X := nn.Const(g, "x", feats, max(total, 1), NodeWidth)
	adj := nn.NeighboursOf(max(total, 1), src, dst, agentMaxDegree).Const(g)
	layer := []nn.SAGELayer{{WSelf: P["sage1.w_self"], WIn: P["sage1.w_in"], WOut: P["sage1.w_out"], B: P["sage1.b"]}}
	h := nn.SAGE(X, adj, layer, 0)
	pooled := nn.Gather(h, nn.IntConst(g, "pool", pool), nn.ReduceMean, M)
	cat := G.Must(G.Concat(1, pooled, nn.Const(g, "global", glob, T, globalWidth())))
	u := nn.ReLU(nn.Bias(G.Must(G.Mul(cat, P["w2"])), P["b2"]))
	z = nn.Bias(G.Must(G.Mul(u, P["w3"])), P["b3"])
	return z, params, nil
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
	shift := nn.Const(g, "shift", b.shift, T, 1)
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
	M := nn.Const(g, "mask", madd, T, A)
	wsel := make([]float32, T*A)
	for t, act := range b.actions {
		wsel[t*A+act] = b.weights[t]
	}
	W := nn.Const(g, "wsel", wsel, T, A)
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
	return lossAndGrads(g, cost, params)
}

// lossAndGrads runs graph g and returns the value of its scalar float32 cost and the
// cost's gradient per parameter node of params (copies, in that order).
func lossAndGrads(g *G.ExprGraph, cost *G.Node, params G.Nodes) (float64, [][]float32, error) {
	if _, err := G.Grad(cost, params...); err != nil {
		return 0, nil, fmt.Errorf("agent gradient: %w", err)
	}
	vm := G.NewTapeMachine(g, G.BindDualValues(params...))
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return 0, nil, fmt.Errorf("agent gradient: %w", err)
	}
	out := make([][]float32, len(params))
	for i, n := range params {
		g, err := nn.Grad32(n)
		if err != nil {
			return 0, nil, fmt.Errorf("agent: %w", err)
		}
		out[i] = append([]float32(nil), g...)
	}
	return float64(cost.Value().Data().(float32)), out, nil
}

// maskLogit is added to a masked action's logit in the training graph (exp of it is 0
// in float32).
const maskLogit = -1e4

// Params are the agent's parameters (rl.Policy).
func (a *Agent) Params() nn.Params { return a.params }

// Actions is the agent's action list: the passes of opt.All() and stop (rl.Policy).
func (a *Agent) Actions() []string { return Actions() }

// Grads returns, per episode of eps (one program's batch), the REINFORCE loss with the
// entropy bonus (see grads) and its gradient, step t of episode k weighted by adv[k][t]
// divided by the number of episodes in the update (rl.Policy; under PPO adv holds
// rl.PPOWeights, and the gradient is the clipped surrogate's). One part per episode: the
// training loop sums them in order.
func (a *Agent) Grads(eps []*episodeBatch, adv [][]float64) ([]rl.Part, error) {
	var out []rl.Part
	for k, e := range eps {
		e.weights = make([]float32, len(adv[k]))
		for t, v := range adv[k] {
			e.weights[t] = float32(v) / float32(e.episodes)
		}
		loss, gs, err := a.grads(e, e.beta, e.episodes)
		if err != nil {
			return nil, err
		}
		out = append(out, rl.Part{Loss: loss, Grads: gs})
	}
	return out, nil
}

// LogProbs returns, per episode of eps (one program's batch), per step, the natural log
// of the probability the agent's current parameters give the action the episode took
// (rl.LogProber: PPO's ratios), computed as acting computes it (the logits of the
// training graph, a softmax over the actions the step's mask leaves in). It refreshes
// each step's shift to the current largest unmasked logit, which keeps grads' exp in
// range once the parameters have moved (the shift cancels in log π).
func (a *Agent) LogProbs(eps []*episodeBatch) ([][]float64, error) {
	out := make([][]float64, len(eps))
	A := NumActions()
	for k, e := range eps {
		if len(e.xs) == 0 {
			continue
		}
		g := G.NewGraph()
		z, _, err := a.graphLogits(g, e.xs)
		if err != nil {
			return nil, err
		}
		vm := G.NewTapeMachine(g)
		err = vm.RunAll()
		vm.Close()
		if err != nil {
			return nil, fmt.Errorf("agent forward: %w", err)
		}
		zs := nn.Values(z.Value())
		out[k] = make([]float64, len(e.xs))
		for t, x := range e.xs {
			zt := zs[t*A : (t+1)*A]
			p := softmax(zt, x.mask)
			out[k][t] = math.Log(p[e.actions[t]])
			e.shift[t] = float32(maxLogit(zt, x.mask))
		}
	}
	return out, nil
}

// passCount is the number of pass actions (the stop action excluded).
func passCount() int { return len(opt.All()) }
