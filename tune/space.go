package tune

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/internal/stablehash"
)

// candidate is one point of a program-level search: a well-formed config (the effective
// config of its compiled program), the space of choices around it, and its value once
// measured or scored.
type candidate struct {
	cfg   *compiler.Config  // effective, complete config
	space *compiler.Space   // the configurable nodes of its program and their options
	prog  *compiler.Program // the compiled program (kept for measurement and features)
	fp    string            // fingerprint of the program: kernels' keys, tiles and flags

	value     float64 // measured (or model-predicted) ns; valid when evaluated
	evaluated bool
	fresh     bool // evaluated by a new measurement (not from the cache)
	feats     []float64
}

// kindSet selects the config kinds a search varies.
type kindSet map[compiler.Kind]bool

func newKindSet(kinds []compiler.Kind) kindSet {
	s := kindSet{}
	for _, k := range kinds {
		s[k] = true
	}
	return s
}

// compilerCtx compiles candidates of one module for one target with candidate repair
// from a fixed (snapshot) store. It is safe for concurrent use: the module is only read.
type compilerCtx struct {
	mod  *hlo.Module
	opts compiler.Options
	sim  string // simulator version, part of fingerprints
	chip string
}

// compile compiles cfg without Strict: entries naming nodes the program lacks are
// ignored and missing ones come from the store, else the defaults. The candidate's config
// is the program's effective config.
func (cc *compilerCtx) compile(cfg *compiler.Config) (*candidate, error) {
	return cc.compileWith(cfg, cc.opts)
}

func (cc *compilerCtx) compileWith(cfg *compiler.Config, o compiler.Options) (*candidate, error) {
	p, err := compiler.Compile(cc.mod, cfg, o)
	if err != nil {
		return nil, fmt.Errorf("compiling candidate: %w", err)
	}
	return &candidate{cfg: p.Config, space: p.Space, prog: p, fp: cc.fingerprint(p), value: math.NaN()}, nil
}

// fingerprint hashes what a measurement of p depends on: the simulator version, the chip
// and every kernel's choice (cost.Planned.Hash: key, tile and flags) in program order.
// Two configs with the same fingerprint compile to programs that time identically.
func (cc *compilerCtx) fingerprint(p *compiler.Program) string {
	h := stablehash.New().Strs(cc.sim, cc.chip)
	for _, k := range p.Kernels {
		k.Choice.Hash(h)
	}
	return h.Hex()
}

// dim is one configurable choice of a candidate's space (a compiler.Node).
type dim = compiler.Node

// dimsOf lists the choices of space with more than one option, for the given kinds, in
// pipeline order.
func dimsOf(space *compiler.Space, kinds kindSet) []dim {
	var out []dim
	for _, k := range compiler.Kinds() {
		if !kinds[k] {
			continue
		}
		for _, n := range space.Nodes(k) {
			if n.Options > 1 {
				out = append(out, n)
			}
		}
	}
	return out
}

// set writes option i of d into cfg.
func set(cfg *compiler.Config, space *compiler.Space, d dim, i int) {
	cfg.Set(d.Kind, d.Name, space.Option(d, i))
}

// mutate returns a copy of c's config with n choices (distinct where possible) changed to
// another option: each picks a kind uniformly among the kinds that have choices, then a
// choice of that kind uniformly, then a different option uniformly. The result may name
// stale nodes; compiling repairs it.
func mutate(rng *rand.Rand, c *candidate, kinds kindSet, n int) *compiler.Config {
	cfg := c.cfg.Clone()
	dims := dimsOf(c.space, kinds)
	if len(dims) == 0 {
		return cfg
	}
	byKind := map[compiler.Kind][]dim{}
	var ks []compiler.Kind
	for _, d := range dims {
		if len(byKind[d.Kind]) == 0 {
			ks = append(ks, d.Kind)
		}
		byKind[d.Kind] = append(byKind[d.Kind], d)
	}
	touched := map[[2]int]bool{}
	for j := 0; j < n; j++ {
		k := ks[rng.IntN(len(ks))]
		d := byKind[k][rng.IntN(len(byKind[k]))]
		id := [2]int{kindIndex(d.Kind), d.Index}
		if touched[id] && len(touched) < len(dims) {
			j--
			continue
		}
		touched[id] = true
		o := rng.IntN(d.Options - 1)
		if o >= d.Chosen {
			o++
		}
		set(cfg, c.space, d, o)
	}
	return cfg
}

func kindIndex(k compiler.Kind) int { return slices.Index(compiler.Kinds(), k) }

// randomize returns a copy of c's config with every choice of the given kinds drawn
// uniformly.
func randomize(rng *rand.Rand, c *candidate, kinds kindSet) *compiler.Config {
	cfg := c.cfg.Clone()
	for _, d := range dimsOf(c.space, kinds) {
		set(cfg, c.space, d, rng.IntN(d.Options))
	}
	return cfg
}

// sample draws a uniformly random program around base: the layout and fusion choices
// first and, when tiles or flags are searched too, those of the program that results
// (their options depend on the kernels the earlier passes make).
func sample(rng *rand.Rand, cc *compilerCtx, base *candidate, kinds kindSet) (*candidate, error) {
	graph := kindSet{compiler.KindLayout: kinds[compiler.KindLayout], compiler.KindFusion: kinds[compiler.KindFusion]}
	kern := kindSet{compiler.KindTile: kinds[compiler.KindTile], compiler.KindFlags: kinds[compiler.KindFlags]}
	c := base
	if graph[compiler.KindLayout] || graph[compiler.KindFusion] {
		var err error
		if c, err = cc.compile(randomize(rng, base, graph)); err != nil {
			return nil, err
		}
	}
	if kern[compiler.KindTile] || kern[compiler.KindFlags] {
		if kern[compiler.KindTile] {
			var err error
			if c, err = cc.compile(randomize(rng, c, kindSet{compiler.KindTile: true})); err != nil {
				return nil, err
			}
		}
		if kern[compiler.KindFlags] {
			// Flag options depend on the tile: draw them for the tiles just chosen.
			return cc.compile(randomize(rng, c, kindSet{compiler.KindFlags: true}))
		}
	}
	if c == base {
		return cc.compile(base.cfg)
	}
	return c, nil
}

// crossover returns a's config with each choice of the given kinds that b also has taken
// from b with probability 1/2 (uniform crossover over config entries, visited in pipeline
// order and sorted by name for determinism). A tile taken from b brings b's flags for the
// kernel when flags are not searched, so that they stay valid with the tile.
func crossover(rng *rand.Rand, a, b *candidate, kinds kindSet) *compiler.Config {
	cfg := a.cfg.Clone()
	for _, k := range compiler.Kinds() {
		if !kinds[k] {
			continue
		}
		for _, name := range b.cfg.Names(k) {
			if rng.IntN(2) != 1 {
				continue
			}
			e, _ := b.cfg.Get(k, name)
			cfg.Set(k, name, e)
			if k == compiler.KindTile && !kinds[compiler.KindFlags] {
				if f, ok := b.cfg.Get(compiler.KindFlags, name); ok {
					cfg.Set(compiler.KindFlags, name, f)
				}
			}
		}
	}
	return cfg
}

// enumerator walks the choices of a base candidate's space in mixed radix, each choice's
// options rotated so that index 0 is the base's own choice: point 0 is the base, and the
// last choice varies fastest. It enumerates the space as seen from the base (choices
// that other choices create, such as the fusion of a copy a layout inserts, keep the
// store's or the default's value through candidate repair).
type enumerator struct {
	base *candidate
	dims []dim
	size float64 // number of points (may exceed the int range)
}

func newEnumerator(base *candidate, kinds kindSet) *enumerator {
	e := &enumerator{base: base, dims: dimsOf(base.space, kinds), size: 1}
	for _, d := range e.dims {
		e.size *= float64(d.Options)
	}
	return e
}

// point returns the config of point i (0 <= i < size).
func (e *enumerator) point(i int) *compiler.Config {
	cfg := e.base.cfg.Clone()
	for j := len(e.dims) - 1; j >= 0 && i > 0; j-- {
		d := e.dims[j]
		digit := i % d.Options
		i /= d.Options
		if digit != 0 {
			set(cfg, e.base.space, d, (d.Chosen+digit)%d.Options)
		}
	}
	return cfg
}
