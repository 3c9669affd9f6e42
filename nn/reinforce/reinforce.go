// Package reinforce holds what REINFORCE training shares between tune's rl policy (one
// step per sample: a whole layout and fusion config, rewarded once) and the gym's
// pass-ordering agent (episodes of many steps, rewarded per step): the moving-average
// baselines the advantages are taken against, the summing of per-sample gradients and
// the clipped Adam step. The training loop on top of them is nn/rl's (Train); each owner
// keeps its own sampling, rewards and surrogate loss.
package reinforce

import (
	"fmt"

	"github.com/tpucost/tpucost/nn"
)

// GradClip is the global gradient-norm clip of every REINFORCE update here: the
// gradients are heavy-tailed.
const GradClip = 5.0

// Baselines are moving-average baselines of the returns, one per (program, step), each
// decayed by Decay in [0, 1). A program's first batch sets every step it reaches to that
// batch's mean return at the step; a step first reached later starts at 0. After a
// batch's advantages are taken, each step the batch reached moves to
// Decay·b + (1−Decay)·mean.
type Baselines struct {
	decay float64
	b     [][]float64 // per program, per step; nil until the program's first batch
}

// NewBaselines returns the baselines of programs programs with decay decay, which must be
// in [0, 1).
func NewBaselines(programs int, decay float64) (*Baselines, error) {
	if !(decay >= 0 && decay < 1) {
		return nil, fmt.Errorf("baseline decay must be in [0, 1), got %g", decay)
	}
	return &Baselines{decay: decay, b: make([][]float64, programs)}, nil
}

// Advantages returns returns[k][t] − b_t for every sample k of one batch of program's
// samples (a sample's returns: one per step it took, the return to go from that step; a
// one-step sample for a bandit), against the program's baselines before the batch, then
// updates them with the batch's mean return at each step (see Baselines).
func (bs *Baselines) Advantages(program int, returns [][]float64) [][]float64 {
	steps := 0
	for _, r := range returns {
		steps = max(steps, len(r))
	}
	sum, cnt := make([]float64, steps), make([]float64, steps)
	for _, r := range returns {
		for t, v := range r {
			sum[t] += v
			cnt[t]++
		}
	}
	b := bs.b[program]
	first := b == nil
	if len(b) < steps {
		b = append(b, make([]float64, steps-len(b))...)
	}
	if first {
		for t := range sum { // the longest sample reaches every step: cnt[t] >= 1
			b[t] = sum[t] / cnt[t]
		}
	}
	adv := make([][]float64, len(returns))
	for k, r := range returns {
		adv[k] = make([]float64, len(r))
		for t, v := range r {
			adv[k][t] = v - b[t]
		}
	}
	for t := range sum {
		b[t] = bs.decay*b[t] + (1-bs.decay)*sum[t]/cnt[t]
	}
	bs.b[program] = b
	return adv
}

// AddGrads adds gs into sum elementwise (same shapes) and returns sum; a nil sum takes gs
// itself.
func AddGrads(sum, gs [][]float32) [][]float32 {
	if sum == nil {
		return gs
	}
	for j := range gs {
		for k := range gs[j] {
			sum[j][k] += gs[j][k]
		}
	}
	return sum
}

// Optimizer is the update of REINFORCE training: nn.Adam with the gradients' global norm
// clipped at GradClip, its state created on the first Step. The zero value is ready.
type Optimizer struct {
	adam *nn.Adam
}

// Step applies one update with learning rate lr to params from gradients gs (summed over
// the batch by the caller, one slice per parameter; zero for a parameter no sample used,
// which still follows its momentum).
func (o *Optimizer) Step(params nn.Params, gs [][]float32, lr float64) {
	if o.adam == nil {
		o.adam = nn.NewAdam(params, lr)
		o.adam.ClipNorm = GradClip
	}
	o.adam.LR = lr
	o.adam.Update(params, gs)
}
