package gym

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/compiler/opt"
)

// Beam search over pass sequences: the search that keeps going through moves that remove
// nothing themselves (convert-mover, reshape-mover, while-loop-invariant-code-motion), which
// greedy search stops at and which open the passes after them.
//
// At each depth every module of the beam is expanded: passes are tried in the order a
// PassOrder gives (a seeded random order for the `beam` baseline, the agent's policy for the
// agent's search), each on a clone of the module (one compiler call), until Children
// modules no earlier expansion reached (told apart by their printed text) are found or
// the passes run out. A pass that changes nothing is known idle on that module and not
// tried again. Of all the new modules the Width best (lowest score, first found on a tie)
// form the next beam, whether or not they improve on their parents; the search keeps the
// best prefix seen (lowest score, then the shortest) and stops at MaxSteps depths, at a
// depth that finds no new module, or when Budget calls are spent.
//
// With Lookahead k > 0, a new module that removes no op from its parent (a move that may
// only open the next passes: while-loop-invariant-code-motion adds ops and opens cse and
// while-loop-simplifier) is judged by the best of itself and the first k passes of the
// order run on it (each a compiler call, counted against the budget): so the beam keeps
// it over modules that only moved ops around, when the order knows what follows it. In
// a random order the k passes are seldom the ones it opens, and the calls are lost.

// Beam search defaults (gym eval's --beam-width and --beam-children): the first setting
// tried, on one held-out program set, not tuned on it (docs/gym.md has the sensitivity).
const (
	DefaultBeamWidth    = 3
	DefaultBeamChildren = 4
	// DefaultBeamLookahead is gym eval's --beam-lookahead (BeamOptions.Lookahead).
	DefaultBeamLookahead = 2
)

// BeamState is one module of a beam: the module, the passes that reached it from the
// program and which passes are known to change nothing on it. The search never mutates
// Module or Seq once the state is made (passes run on clones), so an order may keep them.
type BeamState struct {
	Module *hlo.Module
	Seq    []int  // pass indices from the program to Module
	Idle   []bool // per pass: it ran on Module and changed nothing
	Ops    int    // opt.OpCount(Module)
	Score  float64

	parentOps int // the op count of the module it was made from
}

// A PassOrder ranks the passes to try on a beam state, best first: a permutation of
// 0..len(passes)-1 (idle passes may be anywhere; the search skips them).
type PassOrder func(s *BeamState) ([]int, error)

// RandomOrder ranks the passes in a fresh random order for every state, drawn from rng:
// the `beam` baseline's order, which knows nothing of the program.
func RandomOrder(n int, rng *rand.Rand) PassOrder {
	return func(*BeamState) ([]int, error) { return rng.Perm(n), nil }
}

// BeamOptions configure BeamSearch.
type BeamOptions struct {
	Width    int // modules kept per depth, >= 1
	Children int // new modules sought per expanded module, >= 1
	Budget   int // compiler calls (pass runs), >= 1
	MaxSteps int // depth limit (sequence length), >= 1
	// Lookahead is the passes of the order tried on each new module that removes no op
	// from its parent, to judge it (0: none; see the top of this file).
	Lookahead int
	Order     PassOrder
	Measure   Measure // nil: OpsMeasure
}

// BeamSearch runs a beam search from base (see the top of this file) and returns the
// best prefix found, its op count, score and the calls spent. base is not mutated.
func BeamSearch(base *hlo.Module, passes []opt.Pass, o BeamOptions) (SearchResult, error) {
	if o.Width < 1 || o.Children < 1 || o.Budget < 1 || o.MaxSteps < 1 {
		return SearchResult{}, fmt.Errorf("beam search: width %d, children %d, budget %d and max steps %d must all be positive", o.Width, o.Children, o.Budget, o.MaxSteps)
	}
	if o.Lookahead < 0 {
		return SearchResult{}, fmt.Errorf("beam search: lookahead %d must not be negative", o.Lookahead)
	}
	if o.Order == nil {
		return SearchResult{}, errors.New("beam search: no pass order")
	}
	if o.Measure == nil {
		o.Measure = OpsMeasure()
	}
	start, err := o.Measure(base)
	if err != nil {
		return SearchResult{}, err
	}
	root := BeamState{Module: base.Clone(), Idle: make([]bool, len(passes)), Ops: opt.OpCount(base), Score: start}
	best := SearchResult{OpCount: root.Ops, Score: start}
	seen := map[[sha256.Size]byte]bool{sha256.Sum256([]byte(root.Module.String())): true}
	beam := []*BeamState{&root}
	calls := 0
	// orderOf is the order's ranking of the passes on s, checked to be one.
	orderOf := func(s *BeamState) ([]int, error) {
		order, err := o.Order(s)
		if err != nil {
			return nil, err
		}
		if len(order) != len(passes) {
			return nil, fmt.Errorf("beam search: the pass order ranks %d passes, want %d", len(order), len(passes))
		}
		for _, a := range order {
			if a < 0 || a >= len(passes) {
				return nil, fmt.Errorf("beam search: the pass order ranks pass %d of %d", a, len(passes))
			}
		}
		return order, nil
	}
	// try runs pass a on a clone of s's module (one compiler call) and returns the
	// result, or nil (and marks a idle on s) if it changed nothing.
	try := func(s *BeamState, a int) (*hlo.Module, error) {
		m := s.Module.Clone()
		changed, err := passes[a].Run(m)
		calls++
		if err != nil {
			return nil, fmt.Errorf("pass %s: %w", passes[a].Name, err)
		}
		if !changed {
			s.Idle[a] = true
			return nil, nil
		}
		return m, nil
	}
	for depth := 0; depth < o.MaxSteps && calls < o.Budget; depth++ {
		var next []*BeamState
		for _, s := range beam {
			if calls >= o.Budget {
				break
			}
			order, err := orderOf(s)
			if err != nil {
				return best, err
			}
			found := 0
			for _, a := range order {
				if found >= o.Children || calls >= o.Budget {
					break
				}
				if s.Idle[a] {
					continue
				}
				m, err := try(s, a)
				if err != nil {
					return best, err
				}
				if m == nil {
					continue
				}
				h := sha256.Sum256([]byte(m.String()))
				if seen[h] {
					continue // another sequence reached this module already
				}
				seen[h] = true
				found++
				score, err := o.Measure(m)
				if err != nil {
					return best, fmt.Errorf("after pass %s: %w", passes[a].Name, err)
				}
				c := &BeamState{Module: m, Seq: append(slices.Clip(s.Seq), a), Idle: make([]bool, len(passes)), Ops: opt.OpCount(m), Score: score, parentOps: s.Ops}
				next = append(next, c)
				if score < best.Score {
					best.Score, best.OpCount, best.Sequence = score, c.Ops, append([]int(nil), c.Seq...)
				}
			}
		}
		if len(next) == 0 {
			break // every module of the beam is at a fixed point (or reaches only known modules)
		}
		for _, c := range next {
			if o.Lookahead == 0 || calls >= o.Budget {
				break
			}
			if c.Ops < c.parentOps {
				continue // it removed ops: its own count judges it
			}
			order, err := orderOf(c)
			if err != nil {
				return best, err
			}
			for _, a := range order[:min(o.Lookahead, len(order))] {
				if calls >= o.Budget {
					break
				}
				m, err := try(c, a)
				if err != nil {
					return best, err
				}
				if m == nil {
					continue
				}
				score, err := o.Measure(m)
				if err != nil {
					return best, fmt.Errorf("after pass %s: %w", passes[a].Name, err)
				}
				c.Score = min(c.Score, score)
				if score < best.Score {
					best.Score, best.OpCount, best.Sequence = score, opt.OpCount(m), append(slices.Clone(c.Seq), a)
				}
			}
		}
		sort.SliceStable(next, func(i, j int) bool { return next[i].Score < next[j].Score })
		beam = next[:min(o.Width, len(next))]
	}
	best.Calls = calls
	return best, nil
}

// observation is what an agent observes of s on program prog (initial ops initial,
// episodes of maxSteps): its module, the passes that reached it as the history, the
// passes known idle on it (stop never is).
func (s *BeamState) observation(prog string, initial, maxSteps int) (Observation, error) {
	g, err := BuildGraph(s.Module)
	if err != nil {
		return Observation{}, err
	}
	return Observation{Program: prog, Step: len(s.Seq), MaxSteps: maxSteps, OpCount: s.Ops, InitialOpCount: initial,
		Histogram: Histogram(s.Module), Graph: g, History: s.Seq, Idle: append(slices.Clone(s.Idle), false)}, nil
}

// beamOrder is the agent's pass order for a beam search on program prog (initial ops
// initial, episodes of maxSteps): the passes by the policy's probability on the state's
// observation (its module, the passes that reached it, the passes known idle on it),
// most likely first, ties in pass order; stop is not a pass and is left out.
func (a *Agent) beamOrder(prog string, initial, maxSteps int) PassOrder {
	return func(s *BeamState) ([]int, error) {
		obs, err := s.observation(prog, initial, maxSteps)
		if err != nil {
			return nil, err
		}
		p, err := a.Probs(obs)
		if err != nil {
			return nil, err
		}
		order := make([]int, len(s.Idle))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(i, j int) bool { return p[order[i]] > p[order[j]] })
		return order, nil
	}
}
