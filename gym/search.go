package gym

import (
	"fmt"
	"math/rand/v2"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/compiler/opt"
	"github.com/tpucost/tpucost/tpusim"
)

// SearchResult is the best pass sequence a search found (indices into the pass list),
// its op count, its score under the search's Measure (the op count again under
// OpsMeasure) and the compiler calls (pass runs) it spent.
type SearchResult struct {
	Sequence []int
	OpCount  int
	Score    float64
	Calls    int
}

// A Measure scores a module for a search; lower is better. Searches call it only on
// modules a pass changed (an unchanged module keeps its score).
type Measure func(m *hlo.Module) (float64, error)

// OpsMeasure scores a module by its op count (opt.OpCount), XLA Gym's measure.
func OpsMeasure() Measure {
	return func(m *hlo.Module) (float64, error) { return float64(opt.OpCount(m)), nil }
}

// TimeMeasure scores a module by its simulated time on chip (SimNs).
func TimeMeasure(chip tpusim.Chip) Measure {
	return func(m *hlo.Module) (float64, error) { return SimNs(m, chip) }
}

// replay runs seq on a clone of base.
func replay(base *hlo.Module, passes []opt.Pass, seq []int) (*hlo.Module, error) {
	m := base.Clone()
	for _, a := range seq {
		if _, err := passes[a].Run(m); err != nil {
			return nil, fmt.Errorf("pass %s: %w", passes[a].Name, err)
		}
	}
	return m, nil
}

// RandomSearch runs random sequences of maxSteps passes (uniform, seeded by rng) on
// clones of base until budget pass runs are spent, and returns the best prefix found:
// the fewest ops, then the shortest. The empty sequence (base itself) is the start.
func RandomSearch(base *hlo.Module, passes []opt.Pass, budget, maxSteps int, rng *rand.Rand) (SearchResult, error) {
	return RandomSearchBy(base, passes, budget, maxSteps, rng, OpsMeasure())
}

// RandomSearchBy is RandomSearch keeping the prefix of the lowest score under measure
// (then the shortest).
func RandomSearchBy(base *hlo.Module, passes []opt.Pass, budget, maxSteps int, rng *rand.Rand, measure Measure) (SearchResult, error) {
	start, err := measure(base)
	if err != nil {
		return SearchResult{}, err
	}
	best := SearchResult{OpCount: opt.OpCount(base), Score: start}
	calls := 0
	for calls < budget {
		m := base.Clone()
		score := start
		var seq []int
		for s := 0; s < maxSteps && calls < budget; s++ {
			a := rng.IntN(len(passes))
			changed, err := passes[a].Run(m)
			if err != nil {
				return best, fmt.Errorf("pass %s: %w", passes[a].Name, err)
			}
			calls++
			seq = append(seq, a)
			if changed {
				if score, err = measure(m); err != nil {
					return best, fmt.Errorf("after pass %s: %w", passes[a].Name, err)
				}
			}
			if score < best.Score {
				best.Score, best.OpCount, best.Sequence = score, opt.OpCount(m), append([]int(nil), seq...)
			}
		}
	}
	best.Calls = calls
	return best, nil
}

// GreedySearch is one-step lookahead: from base, every pass is run on a clone of the
// current module (a compiler call each) and the one leaving the fewest ops is kept (the
// first in pass order on a tie), as long as it removes at least one op, for at most
// maxSteps steps and within budget calls.
func GreedySearch(base *hlo.Module, passes []opt.Pass, budget, maxSteps int) (SearchResult, error) {
	return GreedySearchBy(base, passes, budget, maxSteps, OpsMeasure())
}

// GreedySearchBy is GreedySearch keeping, at each step, the pass of the lowest score
// under measure, as long as it lowers the score.
func GreedySearchBy(base *hlo.Module, passes []opt.Pass, budget, maxSteps int, measure Measure) (SearchResult, error) {
	cur := base.Clone()
	score, err := measure(cur)
	if err != nil {
		return SearchResult{}, err
	}
	res := SearchResult{OpCount: opt.OpCount(cur), Score: score}
	for step := 0; step < maxSteps && res.Calls+len(passes) <= budget; step++ {
		bestA, bestS := -1, res.Score
		var bestM *hlo.Module
		for a, p := range passes {
			m := cur.Clone()
			changed, err := p.Run(m)
			if err != nil {
				return res, fmt.Errorf("pass %s: %w", p.Name, err)
			}
			res.Calls++
			if !changed {
				continue
			}
			s, err := measure(m)
			if err != nil {
				return res, fmt.Errorf("after pass %s: %w", p.Name, err)
			}
			if s < bestS {
				bestA, bestS, bestM = a, s, m
			}
		}
		if bestA < 0 {
			break
		}
		cur, res.Score, res.OpCount = bestM, bestS, opt.OpCount(bestM)
		res.Sequence = append(res.Sequence, bestA)
	}
	return res, nil
}

// maxEmptyEpisodes ends agentSearch after this many episodes in a row that stopped
// before running a pass.
const maxEmptyEpisodes = 100

// agentSearch spends budget pass runs on a's episodes on prog: first its most likely
// sequence, then sequences sampled from its policy (seeded by rng), and returns the best
// prefix found (the lowest score, then the shortest). The score is the op count, or,
// when byTime, the simulated time the environment observes (env must then reward
// RewardTime, which simulates every changed module).
func agentSearch(env *Env, a *Agent, prog string, budget int, rng *rand.Rand, byTime bool) (SearchResult, error) {
	score := func(o Observation) float64 {
		if byTime {
			return o.SimNs
		}
		return float64(o.OpCount)
	}
	best := SearchResult{OpCount: -1}
	calls, empty := 0, 0
	for episode := 0; calls < budget; episode++ {
		obs, err := env.Reset(prog)
		if err != nil {
			return best, err
		}
		if best.OpCount < 0 {
			best.OpCount, best.Score = obs.OpCount, score(obs)
		}
		var seq []int
		for calls < budget {
			p, err := a.Probs(obs)
			if err != nil {
				return best, err
			}
			act := argmax(p)
			if episode > 0 {
				act = sample(rng, p)
			}
			next, _, done, err := env.Step(act)
			if err != nil {
				return best, err
			}
			obs = next
			if act == Stop() {
				break
			}
			calls++
			seq = append(seq, act)
			if s := score(obs); s < best.Score {
				best.Score, best.OpCount, best.Sequence = s, obs.OpCount, append([]int(nil), seq...)
			}
			if done {
				break
			}
		}
		if len(seq) > 0 {
			empty = 0
		} else if empty++; empty >= maxEmptyEpisodes {
			break // the policy keeps stopping at once: it spends nothing and finds nothing
		}
	}
	best.Calls = calls
	return best, nil
}
