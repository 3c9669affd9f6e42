package tune

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/internal/stablehash"
)

// Strategy names a search strategy: the name of one of the registered Methods.
type Strategy string

// The strategies' names. XTAT is the default schedule; the others search the joint space
// of the configured kinds (Options.Kinds, default all) at program level.
const (
	XTAT       Strategy = "xtat"
	Exhaustive Strategy = "exhaustive"
	Random     Strategy = "random"
	Annealing  Strategy = "sa"
	Evolution  Strategy = "evo"
	MBO        Strategy = "mbo"
	RL         Strategy = "rl" // a trained fusion policy (Options.Policy); see rl.go
	// Partition is the XTAT schedule started from the partition-fusion program
	// (compiler.PartitionConfig): the same as XTAT with Options.Fusion =
	// compiler.FusionPartition, named so that partition fusion is a strategy to compare.
	Partition Strategy = "partition"
)

// A Method is one registered search strategy, a value as gonum's optimize.Method is:
// its name, and the program-level search it runs over the joint space of the configured
// kinds, or none for the XTAT schedule (xtat, partition), which Run drives itself.
// Methods is the registry; the strategy list of help texts and errors derives from it.
type Method interface {
	// Name is the strategy's name on the command line and in reports.
	Name() Strategy
	// Schedule reports whether the strategy is the XTAT schedule (no program-level search).
	Schedule() bool
	// StartFusion is the fusion rule of the program the strategy starts from, or "" for
	// Options.Fusion's (partition: compiler.FusionPartition).
	StartFusion() compiler.FusionRule
	// PerProgram reports whether the strategy follows a policy trained per program
	// (Options.Policy; rl): it is not shape-generic.
	PerProgram() bool
	// search runs the strategy's program-level search (not called when Schedule).
	search(ctx context.Context, s *search) error
}

// method is a Method from a name and a search (nil: the XTAT schedule), the fusion rule
// it starts from ("": Options.Fusion's) and whether it follows a per-program policy.
type method struct {
	name       Strategy
	run        func(s *search, ctx context.Context) error
	fusion     compiler.FusionRule
	perProgram bool
}

func (m method) Name() Strategy                   { return m.name }
func (m method) Schedule() bool                   { return m.run == nil }
func (m method) StartFusion() compiler.FusionRule { return m.fusion }
func (m method) PerProgram() bool                 { return m.perProgram }
func (m method) search(ctx context.Context, s *search) error {
	if m.run == nil {
		return fmt.Errorf("strategy %q has no program-level search", m.name)
	}
	return m.run(s, ctx)
}

// Methods is the registry of strategies, the default (XTAT) first: adding a strategy is
// adding it here.
func Methods() []Method {
	return []Method{
		method{name: XTAT},
		method{name: Exhaustive, run: (*search).exhaustive},
		method{name: Random, run: (*search).random},
		method{name: Annealing, run: (*search).anneal},
		method{name: Evolution, run: (*search).evolve},
		method{name: MBO, run: (*search).mbo},
		method{name: RL, run: (*search).rl, perProgram: true},
		method{name: Partition, fusion: compiler.FusionPartition},
	}
}

// Lookup returns the registered Method named st, and whether there is one.
func Lookup(st Strategy) (Method, bool) {
	for _, m := range Methods() {
		if m.Name() == st {
			return m, true
		}
	}
	return nil, false
}

// Strategies lists every registered strategy's name, the default first.
func Strategies() []Strategy {
	var out []Strategy
	for _, m := range Methods() {
		out = append(out, m.Name())
	}
	return out
}

// SearchStrategies lists the strategies that run a program-level search over the
// configured kinds without a per-program policy (Methods that are neither the XTAT
// schedule nor PerProgram): exhaustive, random, sa, evo, mbo.
func SearchStrategies() []Strategy {
	var out []Strategy
	for _, m := range Methods() {
		if !m.Schedule() && !m.PerProgram() {
			out = append(out, m.Name())
		}
	}
	return out
}

// methodOf returns the registered Method named st, the default (Methods()[0], XTAT)
// for "", and whether there is one.
func methodOf(st Strategy) (Method, bool) {
	if st == "" {
		return Methods()[0], true
	}
	return Lookup(st)
}

// startsFrom returns the name of the strategy that starts from fusion rule f
// (Method.StartFusion; partition for compiler.FusionPartition), or "" if none does.
func startsFrom(f compiler.FusionRule) Strategy {
	for _, m := range Methods() {
		if m.StartFusion() == f {
			return m.Name()
		}
	}
	return ""
}

// searchChoices writes SearchStrategies for messages: "exhaustive, random, sa, evo or mbo".
func searchChoices() string {
	ss := SearchStrategies()
	if len(ss) < 2 {
		return strategyList(ss)
	}
	return strategyList(ss[:len(ss)-1]) + " or " + string(ss[len(ss)-1])
}

func strategyList(ss []Strategy) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return strings.Join(out, ", ")
}

// genericRefusal checks opts.Strategy and opts.Fusion for the shape-generic searches
// (RunShapes, RunRagged), which start from each size's default compile and run one
// search for every size: what names the search ("ragged tuning"), start the compile it
// starts from ("the default compile"). It refuses a fusion rule other than the default
// (Options.Fusion, or a strategy's Method.StartFusion: partition) as partition fusion
// first, then a strategy that follows a per-program policy (Method.PerProgram: rl); the
// two errors are returned apart so that each caller keeps its order of checks.
func genericRefusal(what, start string, opts Options) (fusion, perProgram error) {
	m, ok := methodOf(opts.Strategy)
	if opts.Fusion != "" && opts.Fusion != compiler.FusionXLA || ok && m.StartFusion() != "" && m.StartFusion() != compiler.FusionXLA {
		f := compiler.FusionPartition
		fusion = fmt.Errorf("%s starts from %s: %s fusion is not supported here (drop --fusion %s or --strategy %s)", what, start, f, f, startsFrom(f))
	}
	if ok && m.PerProgram() {
		perProgram = fmt.Errorf("%s: the %s strategy's policy is trained per program; use %s", what, m.Name(), searchChoices())
	}
	return fusion, perProgram
}

// genericStrategy is the strategy a shape-generic search runs for st: simulated
// annealing for the XTAT schedule (the default; its kernel phases time single kernels of
// one shape), st itself otherwise (an unknown one for Options.resolve to refuse).
func genericStrategy(st Strategy) Strategy {
	if m, ok := methodOf(st); ok && m.Schedule() {
		return Annealing
	}
	return st
}

// ParseStrategy returns the strategy named s (any case).
func ParseStrategy(s string) (Strategy, error) {
	for _, st := range Strategies() {
		if strings.EqualFold(s, string(st)) {
			return st, nil
		}
	}
	return "", fmt.Errorf("unknown strategy %q (strategies: %s)", s, StrategyNames())
}

// Search parameters. They are constants of the algorithms, not of the machine: results
// do not depend on the number of workers.
const (
	saT0          = 0.05  // initial temperature: a 5% worse program is accepted with p = 1/e
	saT1          = 0.002 // final temperature
	evoPopulation = 16
	evoCrossover  = 0.7
	tournament    = 3
	stallBatches  = 25 // batches in a row without a new evaluation end a search
	// exhaustiveStall bounds the batches in a row of already-known programs exhaustive
	// search walks through (many configs compile to one program).
	exhaustiveStall = 1000
)

// search is one program-level search: a strategy drives it, the evaluator gives values.
type search struct {
	r      *run
	ev     evaluator
	kinds  kindSet
	batch  int
	seed   uint64
	stream uint64
	rng    *rand.Rand // for sequential decisions (acceptance); proposals get their own
	start  []*candidate
	best   *candidate
	stall  int
}

func newSearch(r *run, ev evaluator, kinds kindSet, name string, start []*candidate) *search {
	seed := stablehash.Seeded(r.opts.Seed).Strs("search", name).Sum64()
	return &search{r: r, ev: ev, kinds: kinds, batch: r.opts.Batch, seed: seed, start: start,
		rng: rand.New(rand.NewPCG(seed, 1))}
}

// propose builds n candidates in parallel, proposal i with its own random stream derived
// from the search seed and a running counter, so the proposals do not depend on the
// number of workers. A proposal the compiler cannot tile (cost.ErrTileInvalid: a layout
// or fusion choice that leaves some kernel no tile that fits VMEM) is infeasible, a point
// outside the space rather than a failure: it is dropped, counted (Report.Infeasible)
// and spends no budget, as XTAT discards invalid configurations. Any other compile error
// ends the search. The candidates come back in proposal order, infeasible ones left out.
func (s *search) propose(ctx context.Context, n int, gen func(i int, rng *rand.Rand) (*candidate, error)) ([]*candidate, error) {
	base := s.stream
	s.stream += uint64(n)
	out := make([]*candidate, n)
	err := parallel(ctx, s.r.workers, n, func(i int) error {
		rng := rand.New(rand.NewPCG(s.seed, base+uint64(i)+2))
		c, err := gen(i, rng)
		if errors.Is(err, cost.ErrTileInvalid) {
			return nil // out[i] stays nil: infeasible
		}
		out[i] = c
		return err
	})
	if err != nil {
		return nil, err
	}
	feasible := out[:0:0]
	for _, c := range out {
		if c == nil {
			s.r.infeasible++
			continue
		}
		feasible = append(feasible, c)
	}
	return feasible, nil
}

// evaluate evaluates cands, tracks the best and the stall count, and returns the
// evaluated ones in order.
func (s *search) evaluate(ctx context.Context, cands []*candidate) ([]*candidate, error) {
	if err := s.ev.eval(ctx, cands); err != nil {
		return nil, err
	}
	fresh := false
	var out []*candidate
	for _, c := range cands {
		if !c.evaluated {
			continue
		}
		out = append(out, c)
		fresh = fresh || c.fresh
		if s.best == nil || c.value < s.best.value {
			s.best = c
		}
	}
	if fresh {
		s.stall = 0
	} else {
		s.stall++
	}
	return out, nil
}

// done reports whether the search must stop: no budget left, or many batches in a row
// found nothing new (the reachable space is exhausted).
func (s *search) done() bool { return s.ev.remaining() == 0 || s.stall >= stallBatches }

// size of the next batch.
func (s *search) next() int { return max(1, min(s.batch, s.ev.remaining())) }

// begin evaluates the start candidates (the incumbent first).
func (s *search) begin(ctx context.Context) ([]*candidate, error) {
	got, err := s.evaluate(ctx, s.start)
	if err != nil {
		return nil, err
	}
	if len(got) == 0 {
		return nil, fmt.Errorf("no budget to measure the starting program")
	}
	return got, nil
}

// run runs the program-level search of the strategy named st (a registered Method).
func (s *search) run(ctx context.Context, st Strategy) error {
	m, ok := Lookup(st)
	if !ok {
		return fmt.Errorf("unknown strategy %q (strategies: %s)", st, StrategyNames())
	}
	return m.search(ctx, s)
}

// exhaustive enumerates the space around the incumbent in mixed radix (the incumbent
// first, the last choice fastest) until the budget or the space ends.
func (s *search) exhaustive(ctx context.Context) error {
	if _, err := s.begin(ctx); err != nil {
		return err
	}
	e := newEnumerator(s.start[0], s.kinds)
	for i := 1; float64(i) < e.size && s.ev.remaining() > 0 && s.stall < exhaustiveStall; {
		n := s.next()
		if float64(i+n) > e.size {
			n = int(e.size) - i
		}
		first := i
		cands, err := s.propose(ctx, n, func(j int, _ *rand.Rand) (*candidate, error) { return s.r.cc.compile(e.point(first + j)) })
		if err != nil {
			return err
		}
		// A batch may hold programs measured before (many configs compile to one
		// program); only new ones spend budget, so keep going until the budget or
		// the space ends.
		if _, err := s.evaluate(ctx, cands); err != nil {
			return err
		}
		i += n
	}
	return nil
}

// random measures the incumbent, then uniform samples of the space.
func (s *search) random(ctx context.Context) error {
	if _, err := s.begin(ctx); err != nil {
		return err
	}
	base := s.start[0]
	for !s.done() {
		cands, err := s.propose(ctx, s.next(), func(_ int, rng *rand.Rand) (*candidate, error) {
			return sample(rng, s.r.cc, base, s.kinds)
		})
		if err != nil {
			return err
		}
		if _, err := s.evaluate(ctx, cands); err != nil {
			return err
		}
	}
	return nil
}

// mutation draws the number of choices a neighbour changes: 1, sometimes 2 or 3, plus
// one per batch in a row that found nothing new (when a neighbourhood is used up, the
// search jumps further).
func (s *search) mutation(rng *rand.Rand) int {
	n := 1
	switch x := rng.Float64(); {
	case x < 0.6:
	case x < 0.9:
		n = 2
	default:
		n = 3
	}
	return n + s.stall
}

// anneal is simulated annealing with batched proposals: each step proposes a batch of
// neighbours of the current program, measures them in parallel and moves to the best of
// them by the Metropolis rule on log time, at a temperature that falls geometrically
// from saT0 to saT1 as the budget is spent.
func (s *search) anneal(ctx context.Context) error {
	got, err := s.begin(ctx)
	if err != nil {
		return err
	}
	cur := got[0]
	for _, c := range got {
		if c.value < cur.value {
			cur = c
		}
	}
	for !s.done() {
		frac := float64(s.ev.used()) / float64(max(1, s.ev.limit()))
		temp := saT0 * math.Pow(saT1/saT0, math.Min(1, frac))
		from := cur
		cands, err := s.propose(ctx, s.next(), func(_ int, rng *rand.Rand) (*candidate, error) {
			return s.r.cc.compile(mutate(rng, from, s.kinds, s.mutation(rng)))
		})
		if err != nil {
			return err
		}
		got, err := s.evaluate(ctx, cands)
		if err != nil {
			return err
		}
		var nb *candidate
		for _, c := range got {
			if c.fp != cur.fp && (nb == nil || c.value < nb.value) {
				nb = c
			}
		}
		if nb == nil {
			continue
		}
		delta := math.Log(nb.value) - math.Log(cur.value)
		if delta <= 0 || s.rng.Float64() < math.Exp(-delta/temp) {
			cur = nb
		}
	}
	return nil
}

// pick is a tournament selection of size tournament from pop (sorted best first).
func pick(rng *rand.Rand, pop []*candidate) *candidate {
	best := rng.IntN(len(pop))
	for i := 1; i < tournament; i++ {
		best = min(best, rng.IntN(len(pop)))
	}
	return pop[best]
}

// offspring proposes n children of pop (sorted best first): tournament parents, uniform
// crossover with probability evoCrossover, then a mutation.
func (s *search) offspring(ctx context.Context, n int, pop []*candidate) ([]*candidate, error) {
	return s.propose(ctx, n, func(_ int, rng *rand.Rand) (*candidate, error) {
		a := pick(rng, pop)
		child := a
		if len(pop) > 1 && rng.Float64() < evoCrossover {
			b := pick(rng, pop)
			c, err := s.r.cc.compile(crossover(rng, a, b, s.kinds))
			if err != nil {
				return nil, err
			}
			child = c
		}
		return s.r.cc.compile(mutate(rng, child, s.kinds, s.mutation(rng)))
	})
}

// survivors returns the best n distinct programs of cands, best first (ties keep order).
func survivors(cands []*candidate, n int) []*candidate {
	seen := map[string]bool{}
	var out []*candidate
	for _, c := range cands {
		if c.evaluated && !seen[c.fp] {
			seen[c.fp] = true
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b *candidate) int { return cmpFloat(a.value, b.value) })
	if len(out) > n {
		out = out[:n]
	}
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// initialPopulation is the start candidates plus mutants of the incumbent (1-3 changes
// each), up to size programs.
func (s *search) initialPopulation(ctx context.Context, size int) ([]*candidate, error) {
	pop, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	base := s.start[0]
	for tries := 0; len(survivors(pop, size)) < size && !s.done() && tries < stallBatches; tries++ {
		n := min(size-len(survivors(pop, size)), s.ev.remaining())
		cands, err := s.propose(ctx, max(n, 1), func(_ int, rng *rand.Rand) (*candidate, error) {
			return s.r.cc.compile(mutate(rng, base, s.kinds, s.mutation(rng)))
		})
		if err != nil {
			return nil, err
		}
		got, err := s.evaluate(ctx, cands)
		if err != nil {
			return nil, err
		}
		pop = append(pop, got...)
	}
	return survivors(pop, size), nil
}

// evolve is a steady (mu + lambda) evolutionary search: a population of evoPopulation
// programs (the incumbent and its mutants); each generation proposes a batch of children
// (tournament selection, uniform crossover, mutation), measures them in parallel, and
// keeps the best evoPopulation distinct programs of parents and children.
func (s *search) evolve(ctx context.Context) error {
	pop, err := s.initialPopulation(ctx, evoPopulation)
	if err != nil {
		return err
	}
	for !s.done() {
		kids, err := s.offspring(ctx, s.next(), pop)
		if err != nil {
			return err
		}
		got, err := s.evaluate(ctx, kids)
		if err != nil {
			return err
		}
		pop = survivors(append(pop, got...), evoPopulation)
	}
	return nil
}
