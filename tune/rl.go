package tune

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/tpucost/tpucost/compiler"
)

// ErrNoPolicy is wrapped by the error of the rl strategy run without a policy.
var ErrNoPolicy = errors.New("strategy rl needs a trained policy (--policy DIR; train one with `tpucost tune train-policy`)")

// rlFineTuneLR is the learning rate of on-the-fly fine-tuning during a search: a tenth of
// the training default, since a search has a few dozen samples of a single program.
const rlFineTuneLR = 0.001

// rl searches fusion with the policy (Options.Policy): it measures the start, then the
// policy's most likely config, then batches of configs sampled from the policy, every
// decision at once, each probability kept at least (1 + stall) / E from 0 and 1 (E
// decisions, stall the batches in a row without a new program) so that a converged
// policy still explores. After each batch it fine-tunes a copy of the policy by REINFORCE
// on the batch's rewards log(start_ns / ns) with a moving-average baseline (ignoring the
// exploration floor in the gradient: a small off-policy bias), so later samples
// concentrate where this program's measurements were good. Measurements count against the
// budget like every strategy's; the search ends when the budget is spent or stallBatches
// batches in a row sample only programs measured before.
func (s *search) rl(ctx context.Context) error {
	if s.r.opts.Policy == nil {
		return ErrNoPolicy
	}
	for k := range s.kinds {
		if k != compiler.KindFusion && s.kinds[k] {
			return fmt.Errorf("strategy rl decides fusion only; its kinds must be [fusion], got %v", s.r.opts.Kinds)
		}
	}
	if !s.kinds[compiler.KindFusion] {
		return fmt.Errorf("strategy rl decides fusion only; its kinds must be [fusion], got %v", s.r.opts.Kinds)
	}
	got, err := s.begin(ctx)
	if err != nil {
		return err
	}
	base := s.start[0]
	e, err := fusionGraph(s.r.cc, base.cfg)
	if err != nil {
		return err
	}
	d, err := newDecisions(e, base.space)
	if err != nil {
		return err
	}
	if d.n() == 0 {
		return nil // nothing to decide: the start is the result
	}
	pol := s.r.opts.Policy.clone()
	startNs := got[0].value
	baseline, haveBase := 0.0, false
	first := true
	for !s.done() {
		probs, err := pol.probs(d)
		if err != nil {
			return err
		}
		// Exploration: every probability is kept at least (1 + stall) / E away from 0
		// and 1, so a sample flips about 1 + stall decisions the policy is sure of
		// (like the neighbours of sa), more when batches stop finding new programs.
		floor := math.Min(0.5, float64(1+s.stall)/float64(d.n()))
		for i, q := range probs {
			probs[i] = math.Min(math.Max(q, floor), 1-floor)
		}
		n := s.next()
		acts := make([][]bool, n)
		greedy := first
		cands, err := s.propose(ctx, n, func(i int, rng *rand.Rand) (*candidate, error) {
			var cfg *compiler.Config
			if greedy && i == 0 {
				cfg, acts[i] = greedyFusion(base.cfg, d, probs)
			} else {
				cfg, acts[i] = sampleFusion(rng, base.cfg, d, probs)
			}
			return s.r.cc.compile(cfg)
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
		var sa [][]bool
		var rs []float64
		for i, c := range cands {
			if c.evaluated && c.value > 0 {
				sa = append(sa, acts[i])
				rs = append(rs, math.Log(startNs/c.value))
			}
		}
		if len(rs) < 2 {
			continue
		}
		mean := 0.0
		for _, r := range rs {
			mean += r / float64(len(rs))
		}
		if !haveBase {
			baseline, haveBase = mean, true
		}
		adv := make([]float64, len(rs))
		for k, r := range rs {
			adv[k] = r - baseline
		}
		baseline = 0.8*baseline + 0.2*mean
		coef, scale := reinforceCoef(sa, adv)
		_, gs, err := pol.grads(d, coef, scale)
		if err != nil {
			return err
		}
		pol.step(gs, rlFineTuneLR)
	}
	return nil
}
