package tune

import (
	"fmt"
	"math"
	"sync"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
)

// Model is a learned cost model as the tuner sees it. The GraphSAGE predictor of package
// gnn implements it; tune never imports gnn.
type Model interface {
	// ScoreKernel returns, for each planned choice of kernel k, the predicted runtime in
	// ns (absolute models) or a score where lower is better (relative models).
	ScoreKernel(k *compiler.Kernel, choices []cost.Planned) ([]float64, error)
	// Relative reports whether scores only rank the options of one kernel (true) or are
	// runtimes in ns comparable across kernels (false).
	Relative() bool
}

// SpreadModel is a Model that also reports how unsure it is: an ensemble's spread of each
// score (gnn.Predictor with train --ensemble; nil spreads for a single model). For a
// relative model the spread is in units of the spread of the kernel's scores.
type SpreadModel interface {
	Model
	ScoreKernelSpread(k *compiler.Kernel, choices []cost.Planned) (scores, spread []float64, err error)
}

// modelScorer calls a Model from one goroutine at a time (Model implementations need not
// be safe for concurrent use) and caches kernel scores by the choice's ID.
type modelScorer struct {
	m     Model
	mu    sync.Mutex
	cache map[string]float64
	// spread caches the spreads of a SpreadModel's scores (absent: none reported).
	spread map[string]float64
	calls  int // ScoreKernel calls made
}

func newModelScorer(m Model) *modelScorer {
	if m == nil {
		return nil
	}
	return &modelScorer{m: m, cache: map[string]float64{}, spread: map[string]float64{}}
}

// score returns the model's scores of kernel k with each choice, in order.
func (s *modelScorer) score(k *compiler.Kernel, choices []cost.Planned) ([]float64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]float64, len(choices))
	ids := make([]string, len(choices))
	var miss []cost.Planned
	var missI []int
	for i, c := range choices {
		ids[i] = c.ID()
		if v, ok := s.cache[ids[i]]; ok {
			out[i] = v
			continue
		}
		miss, missI = append(miss, c), append(missI, i)
	}
	if len(missI) == 0 {
		return out, nil
	}
	kc := *k
	s.calls++
	var got, spread []float64
	var err error
	if sm, ok := s.m.(SpreadModel); ok {
		got, spread, err = sm.ScoreKernelSpread(&kc, miss)
	} else {
		got, err = s.m.ScoreKernel(&kc, miss)
	}
	if err != nil {
		return nil, fmt.Errorf("model scoring kernel %s: %w", k.Name, err)
	}
	if len(got) != len(missI) {
		return nil, fmt.Errorf("model scoring kernel %s: %d scores for %d options", k.Name, len(got), len(missI))
	}
	for j, i := range missI {
		v := got[j]
		if math.IsNaN(v) {
			v = math.Inf(1)
		}
		out[i] = v
		s.cache[ids[i]] = v
		if spread != nil {
			s.spread[ids[i]] = spread[j]
		}
	}
	return out, nil
}

// spreadOf returns the cached spread of choice c's score, and whether the model reported
// one.
func (s *modelScorer) spreadOf(c cost.Planned) (float64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.spread[c.ID()]
	return v, ok
}

// program sums an absolute model's predictions over the kernels of p, each with its
// compiled choice, times the runs of the kernel per program run (a loop body's kernels
// run trip-count times).
func (s *modelScorer) program(p *compiler.Program) (float64, error) {
	total := 0.0
	for _, k := range p.Kernels {
		v, err := s.score(k, []cost.Planned{k.Choice})
		if err != nil {
			return 0, err
		}
		w := k.Weight
		if p.Schedule == nil { // a program built by hand
			w = 1
		}
		total += v[0] * w
	}
	return total, nil
}

// AssignRoles gives each learned model its role: at most one absolute (program-level,
// fusion/layout) model guides the program search and at most one relative (tile/flags)
// model the kernel search. names[i] names models[i] in errors.
func AssignRoles(models []Model, names []string) (graph, kernel Model, err error) {
	for i, m := range models {
		switch {
		case m.Relative() && kernel == nil:
			kernel = m
		case !m.Relative() && graph == nil:
			graph = m
		default:
			kind := map[bool]string{true: "relative (tile/flags)", false: "absolute (fusion/layout)"}[m.Relative()]
			return nil, nil, fmt.Errorf("give at most one absolute (fusion/layout) and one relative (tile/flags) model; %s is a second %s model", names[i], kind)
		}
	}
	return graph, kernel, nil
}
