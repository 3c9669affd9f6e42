package gym

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/compiler/opt"
	"github.com/tpucost/tpucost/internal/stablehash"
	"github.com/tpucost/tpucost/nn"
	"github.com/tpucost/tpucost/nn/reinforce"
)

// The pass-effect model: the agent's network trained, by regression, to predict what
// every pass does to a module — the percentage of its ops the pass removes (on a log
// scale, passEffects), or
// EffectIdle when it changes nothing (a compiler call spent for nothing) — so that a
// beam search that tries passes in the order of its outputs tries the passes that
// change the module, and remove the most, first. Its labels are the lookaheads a search
// runs anyway: on every module a random-order beam search expands on a training
// program, every pass is run once.

// EffectIdle is the label of a pass that changes nothing: below any pass that changes
// the module without removing ops (0), so the model ranks it last.
const EffectIdle = -1.0 // a pass growing the program by e^1−1 ≈ 1.7% ranks with it

// EffectOptions configure TrainEffect.
type EffectOptions struct {
	Programs []string // required: the training programs
	Seed     int64    // initial weights, the beam searches' orders and the batches
	Epochs   int      // passes over the labelled modules, > 0
	// MaxSteps is the depth of the beam searches that pick the modules (default
	// DefaultMaxSteps); StatesPerProgram caps the modules labelled per program (default 40).
	MaxSteps         int
	StatesPerProgram int
	// Batch is the number of modules per Adam step (default 8), LR Adam's rate (default 0.01).
	Batch int
	LR    float64
	// Progress, if set, is called after each epoch with its mean squared error.
	Progress func(epoch int, mse float64)
}

// effectState is one labelled module: its observation's input and, per pass, its label.
type effectState struct {
	x input
	y []float32 // per action (stop: unlabelled, masked)
}

// TrainEffect trains a pass-effect model (see the top of this file) and returns it as an
// Agent (the same network, checkpoint and pass order: its outputs rank the passes).
func TrainEffect(ctx context.Context, o EffectOptions) (*Agent, error) {
	if len(o.Programs) == 0 {
		return nil, errors.New("training a pass-effect model: no programs")
	}
	if o.Epochs <= 0 {
		return nil, fmt.Errorf("training a pass-effect model: epochs must be positive, got %d", o.Epochs)
	}
	if o.MaxSteps == 0 {
		o.MaxSteps = DefaultMaxSteps
	}
	if o.StatesPerProgram == 0 {
		o.StatesPerProgram = 40
	}
	if o.Batch == 0 {
		o.Batch = 8
	}
	if o.LR == 0 {
		o.LR = 0.01
	}
	if o.MaxSteps < 1 || o.StatesPerProgram < 1 || o.Batch < 1 || !(o.LR > 0) {
		return nil, fmt.Errorf("training a pass-effect model: max steps %d, states %d, batch %d and learning rate %g must be positive", o.MaxSteps, o.StatesPerProgram, o.Batch, o.LR)
	}
	passes := opt.All()
	var data []effectState
	for _, prog := range o.Programs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		st, err := effectStates(prog, passes, o)
		if err != nil {
			return nil, fmt.Errorf("training a pass-effect model: %s: %w", prog, err)
		}
		data = append(data, st...)
	}
	a := NewAgent(o.Seed)
	a.Meta = AgentMeta{Programs: append([]string(nil), o.Programs...), Seed: o.Seed, Iterations: o.Epochs, MaxSteps: o.MaxSteps, Reward: RewardOps, Algorithm: AlgoEffect}
	rng := rand.New(rand.NewPCG(stablehash.Seeded(o.Seed).Str("gym-effect").Sum64(), 2))
	var optz reinforce.Optimizer
	for ep := 1; ep <= o.Epochs; ep++ {
		perm := rng.Perm(len(data))
		sum, n := 0.0, 0
		for i := 0; i < len(perm); i += o.Batch {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			var batch []effectState
			for _, j := range perm[i:min(i+o.Batch, len(perm))] {
				batch = append(batch, data[j])
			}
			loss, gs, err := a.effectGrads(batch)
			if err != nil {
				return nil, fmt.Errorf("training a pass-effect model: %w", err)
			}
			optz.Step(a.params, gs, o.LR)
			sum += loss * float64(len(batch))
			n += len(batch)
		}
		a.Meta.History = append(a.Meta.History, IterReport{Iteration: ep, Loss: sum / float64(n)})
		if o.Progress != nil {
			o.Progress(ep, sum/float64(n))
		}
	}
	return a, nil
}

// effectStates labels the modules a random-order beam search expands on prog (at most
// o.StatesPerProgram): each pass run once on each.
func effectStates(prog string, passes []opt.Pass, o EffectOptions) ([]effectState, error) {
	base, err := Load(prog)
	if err != nil {
		return nil, err
	}
	initial := opt.OpCount(base)
	var mods []*BeamState
	rng := rand.New(rand.NewPCG(stablehash.Seeded(o.Seed).Str("gym-effect-beam").Str(prog).Sum64(), 1))
	random := RandomOrder(len(passes), rng)
	record := func(s *BeamState) ([]int, error) {
		if len(mods) < o.StatesPerProgram {
			mods = append(mods, &BeamState{Module: s.Module, Seq: s.Seq, Idle: make([]bool, len(passes)), Ops: s.Ops})
		}
		return random(s)
	}
	if _, err := BeamSearch(base, passes, BeamOptions{Width: DefaultBeamWidth, Children: DefaultBeamChildren,
		Budget: len(passes) * o.MaxSteps, MaxSteps: o.MaxSteps, Order: record}); err != nil {
		return nil, err
	}
	var out []effectState
	for _, s := range mods {
		y, err := passEffects(s.Module, passes)
		if err != nil {
			return nil, err
		}
		obs, err := s.observation(prog, initial, o.MaxSteps)
		if err != nil {
			return nil, err
		}
		out = append(out, effectState{x: encode(obs), y: y})
	}
	return out, nil
}

// passEffects runs every pass once on a clone of m and returns its label: for a pass
// that changes m, sign(p)·ln(1 + |p|) of the percentage p of m's ops it removes (the log
// keeps the expanders that multiply a program from outweighing the rest); EffectIdle if
// it changes nothing (stop: 0, unused).
func passEffects(m *hlo.Module, passes []opt.Pass) ([]float32, error) {
	ops := opt.OpCount(m)
	y := make([]float32, len(passes)+1)
	for a, p := range passes {
		c := m.Clone()
		changed, err := p.Run(c)
		if err != nil {
			return nil, fmt.Errorf("pass %s: %w", p.Name, err)
		}
		switch {
		case !changed:
			y[a] = EffectIdle
		case ops > 0:
			pct := 100 * float64(ops-opt.OpCount(c)) / float64(ops)
			y[a] = float32(math.Copysign(math.Log1p(math.Abs(pct)), pct))
		}
	}
	return y, nil
}

// effectGrads returns the mean squared error of the network's pass outputs against the
// labels of batch (stop's output unlabelled) and its gradient per parameter.
func (a *Agent) effectGrads(batch []effectState) (float64, [][]float32, error) {
	T, A := len(batch), NumActions()
	xs := make([]input, T)
	ys := make([]float32, 0, T*A)
	mask := make([]float32, 0, T*A)
	for i, s := range batch {
		xs[i] = s.x
		ys = append(ys, s.y...)
		for j := range A {
			mask = append(mask, 1)
			if j == Stop() {
				mask[len(mask)-1] = 0 // stop is unlabelled
			}
		}
	}
	g := G.NewGraph()
	z, params, err := a.graphLogits(g, xs)
	if err != nil {
		return 0, nil, err
	}
	Y := nn.Const(g, "y", ys, T, A)
	M := nn.Const(g, "m", mask, T, A)
	cost, err := func() (c *G.Node, err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("effect loss: %v", r)
			}
		}()
		d := G.Must(G.Sub(z, Y))
		d = G.Must(G.HadamardProd(d, M))
		sq := G.Must(G.Square(d))
		return G.Must(G.Div(G.Must(G.Sum(sq)), G.NewConstant(float32(T*(A-1))))), nil
	}()
	if err != nil {
		return 0, nil, err
	}
	return lossAndGrads(g, cost, params)
}
