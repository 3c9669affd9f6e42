package gym

import (
	"fmt"
	"math/rand/v2"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/compiler/opt"
)

// SearchResult is the best pass sequence a search found (indices into the pass list),
// its op count and the compiler calls (pass runs) it spent.
type SearchResult struct {
	Sequence []int
	OpCount  int
	Calls    int
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
	best := SearchResult{OpCount: opt.OpCount(base)}
	calls := 0
	for calls < budget {
		m := base.Clone()
		var seq []int
		for s := 0; s < maxSteps && calls < budget; s++ {
			a := rng.IntN(len(passes))
			if _, err := passes[a].Run(m); err != nil {
				return best, fmt.Errorf("pass %s: %w", passes[a].Name, err)
			}
			calls++
			seq = append(seq, a)
			if n := opt.OpCount(m); n < best.OpCount {
				best.OpCount, best.Sequence = n, append([]int(nil), seq...)
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
	cur := base.Clone()
	res := SearchResult{OpCount: opt.OpCount(cur)}
	for step := 0; step < maxSteps && res.Calls+len(passes) <= budget; step++ {
		bestA, bestN := -1, res.OpCount
		var bestM *hlo.Module
		for a, p := range passes {
			m := cur.Clone()
			if _, err := p.Run(m); err != nil {
				return res, fmt.Errorf("pass %s: %w", p.Name, err)
			}
			res.Calls++
			if n := opt.OpCount(m); n < bestN {
				bestA, bestN, bestM = a, n, m
			}
		}
		if bestA < 0 {
			break
		}
		cur, res.OpCount = bestM, bestN
		res.Sequence = append(res.Sequence, bestA)
	}
	return res, nil
}

// maxEmptyEpisodes ends agentSearch after this many episodes in a row that stopped
// before running a pass.
const maxEmptyEpisodes = 100

// agentSearch spends budget pass runs on a's episodes on prog: first its most likely
// sequence, then sequences sampled from its policy (seeded by rng), and returns the best
// prefix found (fewest ops, then shortest).
func agentSearch(env *Env, a *Agent, prog string, budget int, rng *rand.Rand) (SearchResult, error) {
	best := SearchResult{OpCount: -1}
	calls, empty := 0, 0
	for episode := 0; calls < budget; episode++ {
		obs, err := env.Reset(prog)
		if err != nil {
			return best, err
		}
		if best.OpCount < 0 {
			best.OpCount = obs.OpCount
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
			if obs.OpCount < best.OpCount {
				best.OpCount, best.Sequence = obs.OpCount, append([]int(nil), seq...)
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
