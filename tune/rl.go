package tune

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/nn/reinforce"
)

// ErrNoPolicy is wrapped by the error of the rl strategy run without a policy.
var ErrNoPolicy = errors.New("strategy rl needs a trained policy (--policy DIR; train one with `tpucost tune train-policy`)")

// rlFineTuneLR is the learning rate of on-the-fly fine-tuning during a search: a tenth of
// the training default, since a search has a few dozen samples of a single program.
const rlFineTuneLR = 0.001

// rlFineTuneBaseline is the decay of fine-tuning's moving-average reward baseline.
const rlFineTuneBaseline = 0.8

// rl searches layout and fusion (the kinds of Options.Kinds, one or both) with the
// policy (Options.Policy): it measures the start, then the policy's most likely config,
// then batches of configs sampled from the policy, every decision at once. Each decision
// is kept at least (1 + stall) / D from certainty (D decisions, stall the batches in a
// row without a new program; see decisions.explore) so that a converged policy still
// explores. After each batch it fine-tunes a copy of the policy by REINFORCE on the
// batch's rewards log(start_ns / ns) with a moving-average baseline (ignoring the
// exploration in the gradient: a small off-policy bias), so later samples concentrate
// where this program's measurements were good. Measurements count against the budget
// like every strategy's; the search ends when the budget is spent or stallBatches
// batches in a row sample only programs measured before.
func (s *search) rl(ctx context.Context) error {
	if s.r.opts.Policy == nil {
		return ErrNoPolicy
	}
	if err := checkRLKinds(s.r.opts.Kinds); err != nil {
		return err
	}
	got, err := s.begin(ctx)
	if err != nil {
		return err
	}
	base := s.start[0]
	g, err := programGraph(s.r.cc, base.cfg)
	if err != nil {
		return err
	}
	d, err := newDecisions(g, base.space, s.kinds, s.r.cc.opts.Target)
	if err != nil {
		return err
	}
	if d.n() == 0 {
		return nil // nothing to decide: the start is the result
	}
	pol := s.r.opts.Policy.clone()
	startNs := got[0].value
	baselines, err := reinforce.NewBaselines(1, rlFineTuneBaseline)
	if err != nil {
		return err
	}
	first := true
	for !s.done() {
		pr, err := pol.probs(d)
		if err != nil {
			return err
		}
		// Exploration: a sample leaves about 1 + stall of the options the policy is
		// sure of (like the neighbours of sa), more when batches stop finding new
		// programs.
		pr = d.explore(pr, math.Min(0.5, float64(1+s.stall)/float64(d.n())))
		n := s.next()
		acts := make([]action, n)
		greedy := first
		drawn := make([]*candidate, n) // by proposal, nil where infeasible (acts stays aligned)
		cands, err := s.propose(ctx, n, func(i int, rng *rand.Rand) (*candidate, error) {
			if greedy && i == 0 {
				acts[i] = greedyAction(d, pr)
			} else {
				acts[i] = sampleAction(rng, d, pr)
			}
			c, err := s.r.cc.compile(d.apply(base.cfg, acts[i]))
			drawn[i] = c
			return c, err
		})
		if err != nil {
			return err
		}
		first = false
		if _, err := s.evaluate(ctx, cands); err != nil {
			return err
		}
		// Fine-tune on this batch's evaluated samples (cached ones included: they are
		// valid rewards of the actions just drawn).
		var sa []action
		var rs []float64
		for i, c := range drawn {
			if c != nil && c.evaluated && c.value > 0 {
				sa = append(sa, acts[i])
				rs = append(rs, math.Log(startNs/c.value))
			}
		}
		if len(rs) < 2 {
			continue
		}
		returns := make([][]float64, len(rs)) // one step each
		for k, r := range rs {
			returns[k] = []float64{r}
		}
		adv := make([]float64, len(rs))
		for k, a := range baselines.Advantages(0, returns) {
			adv[k] = a[0]
		}
		_, gs, err := pol.grads(d, reinforceCoef(d, sa, adv))
		if err != nil {
			return err
		}
		pol.step(gs, rlFineTuneLR)
	}
	return nil
}

// RLKinds are the config kinds the rl strategy's policy decides, its default --kinds:
// layout and fusion, jointly.
func RLKinds() []compiler.Kind { return []compiler.Kind{compiler.KindLayout, compiler.KindFusion} }

// checkRLKinds accepts a non-empty subset of RLKinds.
func checkRLKinds(kinds []compiler.Kind) error {
	if len(kinds) == 0 {
		return fmt.Errorf("strategy %s decides %s; its kinds must be %s, got none", RL, joinAnd(RLKinds()), RLKindChoices())
	}
	for _, k := range kinds {
		if !slices.Contains(RLKinds(), k) {
			return fmt.Errorf("strategy %s decides %s; its kinds must be %s, got %s", RL, joinAnd(RLKinds()), RLKindChoices(), KindList(kinds))
		}
	}
	return nil
}
