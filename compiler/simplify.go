package compiler

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/compiler/opt"
)

// Simplify selects the target-independent simplification passes (package opt) that
// Compile runs before layout assignment. The zero value runs opt's default pipeline
// (opt.DefaultPasses iterated to a fixed point, at most opt.DefaultMaxIterations
// times); Passes runs the given passes once each, in order; None runs none. Setting
// both is an error. Passes are identified by name (in the pass log and in the
// KernelCache's memo), so a custom pass must not reuse a name of opt.All.
type Simplify struct {
	Passes []opt.Pass
	None   bool
}

// ParseSimplify reads a comma-separated list of opt pass names (the CLI's --passes):
// "none" selects no pass, "default" (or "") the default pipeline, anything else those
// passes in that order. An unknown name is an error listing the valid ones.
func ParseSimplify(list string) (Simplify, error) {
	switch strings.TrimSpace(list) {
	case "", "default":
		return Simplify{}, nil
	case "none":
		return Simplify{None: true}, nil
	}
	var names []string
	for n := range strings.SplitSeq(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			return Simplify{}, fmt.Errorf("pass list %q has an empty name (passes: %s, or none)", list, strings.Join(opt.Names(), ", "))
		}
		names = append(names, n)
	}
	var ps []opt.Pass
	for _, n := range names {
		p, err := opt.Lookup(n)
		if err != nil {
			return Simplify{}, fmt.Errorf("no simplification pass named %q (passes: %s; or none)", n, strings.Join(opt.Names(), ", "))
		}
		ps = append(ps, p)
	}
	return Simplify{Passes: ps}, nil
}

// key names the selection in memo keys and messages.
func (s Simplify) key() string {
	switch {
	case s.None:
		return "none"
	case len(s.Passes) == 0:
		return "default"
	}
	var ns []string
	for _, p := range s.Passes {
		ns = append(ns, p.Name)
	}
	return "list:" + strings.Join(ns, ",")
}

// PassRun is one entry of a program's pass log: a pass that ran, whether it changed the
// module, and opt.OpCount of the module after it. Iteration is the fixed-point
// iteration (from 1) of a simplification pass run by the default pipeline, 0 otherwise.
type PassRun struct {
	Name      string
	Changed   bool
	OpCount   int
	Iteration int
}

// prepared is a module after the config-independent steps of Compile: calls inlined,
// fusions of the input unfused, library custom-calls rewritten, simplification passes
// run. It is read-only; Compile clones it.
type prepared struct {
	mod           *hlo.Module
	log           []PassRun
	before, after int
	err           error
}

type prepKey struct {
	m     *hlo.Module
	sel   string
	check bool
}

type prepOnce struct {
	once sync.Once
	p    *prepared
}

// prepare returns m prepared under opts, memoized in opts.Kernels by module identity and
// pass selection (the module must not be modified after it was compiled with a cache).
func prepare(m *hlo.Module, opts Options) *prepared {
	c := opts.Kernels
	if c == nil {
		return prepareModule(m, opts)
	}
	k := prepKey{m, opts.Simplify.key(), opts.Check}
	c.mu.Lock()
	if c.prep == nil {
		c.prep = map[prepKey]*prepOnce{}
	}
	e := c.prep[k]
	if e == nil {
		e = &prepOnce{}
		c.prep[k] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.p = prepareModule(m, opts) })
	return e.p
}

// Release drops what c memoized about module m (its prepared forms): a caller that is
// done compiling m frees them. Kernel analyses stay (other modules share them).
func (c *KernelCache) Release(m *hlo.Module) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.prep {
		if k.m == m {
			delete(c.prep, k)
		}
	}
}

// prepareModule clones m, inlines calls, unfuses the input's fusions, rewrites library
// custom-calls, then runs the selected simplification passes, logging each run.
func prepareModule(m *hlo.Module, opts Options) *prepared {
	s := opts.Simplify
	if s.None && len(s.Passes) > 0 {
		return &prepared{err: errors.New("simplification: both None and a pass list are set")}
	}
	mod := m.Clone()
	if err := inlineCalls(mod); err != nil {
		return &prepared{err: err}
	}
	flow, err := flowComputations(mod)
	if err != nil {
		return &prepared{err: err}
	}
	unfuse(mod, flow)
	rewriteCustomCalls(flow)
	p := &prepared{mod: mod, before: opt.OpCount(mod)}
	run := func(ps opt.Pass, iter int) (bool, error) {
		r, err := runPass(ps.Name, func() (bool, error) { return ps.Run(mod) }, mod, opts.Check, iter)
		if err != nil {
			return false, err
		}
		p.log = append(p.log, r)
		return r.Changed, nil
	}
	if opts.Check && !s.None {
		if err := hlo.Verify(mod); err != nil {
			return &prepared{err: fmt.Errorf("before simplification: %w", err)}
		}
	}
	switch {
	case s.None:
	case len(s.Passes) > 0:
		for _, ps := range s.Passes {
			if _, err := run(ps, 0); err != nil {
				return &prepared{err: err}
			}
		}
	default:
		fixed := false
		for it := 1; it <= opt.DefaultMaxIterations && !fixed; it++ {
			fixed = true
			for _, ps := range opt.DefaultPasses() {
				changed, err := run(ps, it)
				if err != nil {
					return &prepared{err: fmt.Errorf("iteration %d: %w", it, err)}
				}
				if changed {
					fixed = false
				}
			}
		}
		if !fixed {
			return &prepared{err: fmt.Errorf("the default simplification pipeline still changed the module after %d iterations: %w",
				opt.DefaultMaxIterations, opt.ErrNoFixedPoint)}
		}
	}
	p.after = opt.OpCount(mod)
	return p
}
