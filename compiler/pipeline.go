// Package compiler is tpucost's multi-pass XLA-like compiler: the target-independent
// simplification passes of package opt, then layout assignment, fusion, tiling and
// code-generation flags, each a pass with a per-node configuration, an
// enumerable space of valid options and an XLA-like default. Compiling a module with a
// config gives a Program: kernels (fused computations with a tile and flags) that the
// simulator times. Candidate repair fills the choices a config lacks from the global
// config store, else the defaults, so that any partial config compiles to a well-formed
// program.
package compiler

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/compiler/opt"
)

// Pass is one step of the pipeline: it rewrites the module under the config, reporting
// whether it changed anything.
type Pass struct {
	Name string
	Kind Kind // the kind of config the pass reads
	Run  func(m *hlo.Module, pc *passContext) (*hlo.Module, bool, error)
}

// Passes returns the pipeline, in order. The list is data: names are unique and each
// config kind has exactly one pass (checked by TestPassList).
func Passes() []Pass {
	return []Pass{
		{Name: "layout-assignment", Kind: KindLayout, Run: runLayout},
		{Name: "fusion", Kind: KindFusion, Run: runFusion},
		{Name: "tiling", Kind: KindTile, Run: runTiling},
		{Name: "flags", Kind: KindFlags, Run: runFlags},
	}
}

// PassNames lists the pass names in order.
func PassNames() []string {
	var n []string
	for _, p := range Passes() {
		n = append(n, p.Name)
	}
	return n
}

// Options control a compilation.
type Options struct {
	Target cost.Target // required
	Store  Store       // the global config store; nil for none
	// Strict rejects config entries naming nodes or kernels that the program does not
	// have. Without it they are ignored (candidate repair).
	Strict bool
	// Check verifies the module after every pass.
	Check bool
	// DumpAfter names a pass after which the module's HLO text is written to Dump.
	DumpAfter string
	Dump      io.Writer
	// Kernels, when set, shares kernel analyses and the simplified module across
	// compiles (see KernelCache).
	Kernels *KernelCache
	// Simplify selects the target-independent passes run before layout assignment (zero
	// value: opt's default pipeline to a fixed point).
	Simplify Simplify
}

// Kernel is one launched kernel of a compiled program.
type Kernel struct {
	Name   string           // the fusion instruction's name in the entry computation
	Key    string           // structural hash of the fused computation (KernelKey)
	Kind   string           // fusion kind: kLoop, kInput (reduce), kOutput (dot/conv)
	Root   string           // the name of the original instruction the kernel computes
	Comp   *hlo.Computation // the fused computation
	Info   *cost.KernelInfo // shared by kernels with the same key; read-only
	Tile   cost.Tile
	Flags  cost.Flags
	Plan   cost.Plan
	Inputs []string // names of the instructions of its computation it reads

	// Computation is the flow computation the kernel runs in (the entry, a loop body or
	// condition, a conditional branch).
	Computation string
	// Weight is how many times the kernel runs per run of the program: the product of
	// the trip counts of the loops around it and the weights of the branches it is in
	// (1 in the entry).
	Weight float64
	// Approximate marks a kernel the simulator cannot time precisely (an unknown
	// custom-call, an op without a model): it streams its operands and result once.
	Approximate bool
}

// Program is a compiled module.
type Program struct {
	Name    string
	Module  *hlo.Module // after all passes
	Kernels []*Kernel
	Config  *Config // the effective, complete config: compiling with it reproduces the program
	Space   *Space  // the configurable nodes and their options
	Target  cost.Target
	// Schedule is what the entry does in order: kernels, loops, conditionals and
	// collectives. Kernels lists every kernel of the schedule once, the entry's first.
	Schedule *Block
	// Chips is the number of chips the module runs on, from its header (replica_count ×
	// num_partitions; 1 when absent).
	Chips int
	// Passes logs every pass run, in order: the simplification passes (each run of each
	// fixed-point iteration), then the compiler passes.
	Passes []PassRun
	// OpCountBefore and OpCountAfter are opt.OpCount of the module before and after the
	// simplification passes (before: after call inlining, unfusing the input's fusions
	// and rewriting library custom-calls).
	OpCountBefore, OpCountAfter int
}

// LayoutChoice is one configurable node of the layout pass.
type LayoutChoice struct {
	Name, Key string
	Options   [][]int // minor-to-major orders
	Default   int
	Chosen    int
}

// FusionChoice is one configurable producer -> consumer edge of the fusion pass.
type FusionChoice struct {
	Name, Key string
	Default   bool
	Chosen    bool
}

// TileChoice is the tile decision shared by all kernels with one key.
type TileChoice struct {
	Key     string
	Kernels []string
	Options []cost.Tile
	Default int
	Chosen  int
}

// FlagsChoice is the flags decision shared by all kernels with one key.
type FlagsChoice struct {
	Key     string
	Kernels []string
	Options []cost.Flags
	Default int
	Chosen  int
}

// Space lists every configurable node of a program with its valid options, in pipeline
// order. Tile and flag options depend on the layout and fusion choices that produced the
// kernels.
type Space struct {
	Layout []LayoutChoice
	Fusion []FusionChoice
	Tile   []TileChoice
	Flags  []FlagsChoice
}

// passContext carries the config, the store and the choices made so far through the
// passes.
type passContext struct {
	opts  Options
	cfg   *Config
	eff   *Config
	space *Space
	names map[string]bool
	// used config entries, for strict checking
	usedLayout, usedFusion, usedTile, usedFlags map[string]bool
	// kernel analysis cache by key
	kernels   map[string]*kernelCache
	fusionKey map[*hlo.Instruction]string
	tileIdx   map[string]int
	flagsIdx  map[string]int
	rootOf    map[*hlo.Instruction]string
	// flow lists the computations run as control flow, the entry first (flowComputations).
	flow  []*hlo.Computation
	trips map[*hlo.Instruction]tripInfo
}

// tripInfo is a while loop's trip count as derived before the passes rewrote its body.
type tripInfo struct {
	n     int64
	src   string
	known bool
}

// qualName is the config name of instruction name in flow computation c: the name itself
// in the entry, "computation/name" elsewhere (names are scoped per computation).
func (pc *passContext) qualName(c *hlo.Computation, name string) string {
	if len(pc.flow) == 0 || c == pc.flow[0] {
		return name
	}
	return c.Name + "/" + name
}

type kernelCache struct {
	info    *cost.KernelInfo
	tiles   []cost.Tile
	defTile int
	err     error
}

func (pc *passContext) uniqueName(base string) string {
	name := base
	for i := 1; pc.names[name]; i++ {
		name = fmt.Sprintf("%s.%d", base, i)
	}
	pc.names[name] = true
	return name
}

// chooseLayout picks a layout option index for node name: config, else store, else default.
func (pc *passContext) chooseLayout(name, key string, opts [][]int, def int) (int, error) {
	choice := def
	if want, ok := pc.cfg.Layout[name]; ok {
		pc.usedLayout[name] = true
		idx := -1
		for i, o := range opts {
			if slices.Equal(o, want) {
				idx = i
			}
		}
		if idx < 0 {
			return 0, fmt.Errorf("layout of %s: %v is not a valid option (valid: %v)", name, want, opts)
		}
		choice = idx
	} else if want, ok := pc.opts.Store.Layout(key); ok {
		for i, o := range opts {
			if slices.Equal(o, want) {
				choice = i
			}
		}
	}
	pc.eff.Layout[name] = slices.Clone(opts[choice])
	pc.space.Layout = append(pc.space.Layout, LayoutChoice{Name: name, Key: key, Options: opts, Default: def, Chosen: choice})
	return choice, nil
}

// nilStore makes a nil Store usable.
type nilStore struct{}

func (nilStore) Layout(string) ([]int, bool)     { return nil, false }
func (nilStore) Fusion(string) (bool, bool)      { return false, false }
func (nilStore) Tile(string) (cost.Tile, bool)   { return nil, false }
func (nilStore) Flags(string) (cost.Flags, bool) { return cost.Flags{}, false }

// Compile runs the pipeline on a copy of m with cfg (nil: all defaults) and returns the
// program: call inlining, unfusing, custom-call rewriting and the simplification passes
// opts.Simplify selects (memoized in opts.Kernels, see KernelCache), then the passes of
// Passes. The input module is not modified.
func Compile(m *hlo.Module, cfg *Config, opts Options) (*Program, error) {
	if err := opts.Target.Validate(); err != nil {
		return nil, err
	}
	if opts.Store == nil {
		opts.Store = nilStore{}
	}
	if cfg == nil {
		cfg = NewConfig()
	}
	if opts.DumpAfter != "" && !slices.Contains(PassNames(), opts.DumpAfter) {
		return nil, fmt.Errorf("--dump-after %q: no such pass (passes: %v)", opts.DumpAfter, PassNames())
	}
	pc := &passContext{
		opts: opts, cfg: cfg, eff: NewConfig(), space: &Space{},
		names:      map[string]bool{},
		usedLayout: map[string]bool{}, usedFusion: map[string]bool{}, usedTile: map[string]bool{}, usedFlags: map[string]bool{},
		kernels: map[string]*kernelCache{}, fusionKey: map[*hlo.Instruction]string{},
		tileIdx: map[string]int{}, flagsIdx: map[string]int{}, rootOf: map[*hlo.Instruction]string{},
	}
	prep := prepare(m, opts)
	if prep.err != nil {
		return nil, fmt.Errorf("%s: %w", m.Name, prep.err)
	}
	mod := prep.mod.Clone()
	flow, err := flowComputations(mod)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.Name, err)
	}
	pc.flow = flow
	pc.trips = map[*hlo.Instruction]tripInfo{}
	for _, c := range flow {
		for _, in := range c.Instructions {
			if in.Opcode == hlo.OpWhile {
				n, src, ok := TripCount(in)
				if !ok {
					n, src = DefaultTripCount, "default"
				}
				pc.trips[in] = tripInfo{n: n, src: src, known: ok}
			}
		}
	}
	log := append([]PassRun(nil), prep.log...)
	for _, c := range mod.Computations {
		for _, in := range c.Instructions {
			pc.names[in.Name] = true
		}
	}
	for _, p := range Passes() {
		var err error
		var changed bool
		mod, changed, err = p.Run(mod, pc)
		if err != nil {
			return nil, fmt.Errorf("%s: pass %s: %w", m.Name, p.Name, err)
		}
		if opts.Check {
			if err := hlo.Verify(mod); err != nil {
				return nil, fmt.Errorf("%s: after pass %s: %w", m.Name, p.Name, err)
			}
		}
		if opts.DumpAfter == p.Name && opts.Dump != nil {
			if _, err := io.WriteString(opts.Dump, mod.String()); err != nil {
				return nil, fmt.Errorf("dumping after %s: %w", p.Name, err)
			}
		}
		log = append(log, PassRun{Name: p.Name, Changed: changed, OpCount: opt.OpCount(mod)})
	}
	if opts.Strict {
		if err := pc.checkUnused(); err != nil {
			return nil, fmt.Errorf("%s: %w", m.Name, err)
		}
	}
	prog, err := pc.program(m.Name, mod)
	if err != nil {
		return nil, err
	}
	prog.Passes, prog.OpCountBefore, prog.OpCountAfter = log, prep.before, prep.after
	return prog, nil
}

// checkUnused reports config entries that named no node of the program.
func (pc *passContext) checkUnused() error {
	var errs []error
	report := func(kind Kind, keys []string, used map[string]bool) {
		sort.Strings(keys)
		for _, k := range keys {
			if !used[k] {
				errs = append(errs, fmt.Errorf("config %s entry %q names no configurable node of this program", kind, k))
			}
		}
	}
	report(KindLayout, mapKeys(pc.cfg.Layout), pc.usedLayout)
	report(KindFusion, mapKeys(pc.cfg.Fusion), pc.usedFusion)
	report(KindTile, mapKeys(pc.cfg.Tile), pc.usedTile)
	report(KindFlags, mapKeys(pc.cfg.Flags), pc.usedFlags)
	if len(errs) > 5 {
		errs = append(errs[:5], fmt.Errorf("and %d more", len(errs)-5))
	}
	return errors.Join(errs...)
}

func mapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// program collects the kernels of the compiled module and its schedule.
func (pc *passContext) program(name string, mod *hlo.Module) (*Program, error) {
	p := &Program{Name: name, Module: mod, Config: pc.eff, Space: pc.space, Target: pc.opts.Target, Chips: ModuleChips(mod)}
	kernels := map[*hlo.Instruction]*Kernel{}
	for _, c := range pc.flow {
		for _, in := range c.Instructions {
			if in.Opcode != hlo.OpFusion {
				continue
			}
			key := pc.fusionKey[in]
			kc := pc.kernels[key]
			if kc == nil || kc.err != nil {
				return nil, fmt.Errorf("%s: kernel %s was not analyzed", name, in.Name)
			}
			k := &Kernel{Name: in.Name, Key: key, Kind: in.FusionKind, Root: pc.rootOf[in], Comp: in.Calls, Info: kc.info,
				Tile: pc.eff.Tile[key], Flags: pc.eff.Flags[key], Computation: c.Name, Approximate: approximate(in.Calls, kc.info)}
			plan, err := kc.info.CheckTile(k.Tile, k.Flags, pc.opts.Target)
			if err != nil {
				return nil, fmt.Errorf("%s: kernel %s: %w", name, in.Name, err)
			}
			k.Plan = plan
			for _, op := range in.Operands {
				k.Inputs = append(k.Inputs, op.Name)
			}
			p.Kernels = append(p.Kernels, k)
			kernels[in] = k
		}
	}
	var err error
	p.Schedule, err = pc.block(mod, mod.Entry, 1, kernels)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return p, nil
}

// approximate reports whether a kernel has no precise timing model: an opaque kernel
// (untiled, one step) other than a sort or a TopK.
func approximate(fc *hlo.Computation, info *cost.KernelInfo) bool {
	if info.Kind != cost.KindOpaque {
		return false
	}
	for _, in := range fc.Instructions {
		switch in.Opcode.Category() {
		case hlo.CatOther, hlo.CatControl:
			if in.Opcode == hlo.OpSort || (in.Opcode == hlo.OpCustomCall && customCallClass(in) == ccTopK) {
				continue
			}
			return true
		}
	}
	return false
}

// block builds the schedule of flow computation c, run mult times per program run,
// adding mult to the weight of each of its kernels.
func (pc *passContext) block(mod *hlo.Module, c *hlo.Computation, mult float64, kernels map[*hlo.Instruction]*Kernel) (*Block, error) {
	b := &Block{Name: c.Name}
	started := map[*hlo.Instruction]*Collective{}
	for _, in := range c.Instructions {
		switch in.Opcode {
		case hlo.OpFusion:
			k := kernels[in]
			k.Weight += mult
			b.Steps = append(b.Steps, Step{Kernel: k})
			continue
		case hlo.OpWhile:
			ti := pc.trips[in]
			l := &Loop{Name: in.Name, TripCount: ti.n, TripKnown: ti.known, TripSource: ti.src}
			var err error
			if l.Cond, err = pc.block(mod, in.Condition, mult*float64(ti.n), kernels); err != nil {
				return nil, err
			}
			if l.Body, err = pc.block(mod, in.Body, mult*float64(ti.n), kernels); err != nil {
				return nil, err
			}
			b.Steps = append(b.Steps, Step{Loop: l})
			continue
		case hlo.OpConditional:
			bs, err := branchComputations(mod, in)
			if err != nil {
				return nil, err
			}
			cd := &Conditional{Name: in.Name, Weights: make([]float64, len(bs))}
			if taken := branchIndex(in, len(bs)); taken >= 0 {
				cd.Weights[taken] = 1
			} else {
				for i := range cd.Weights {
					cd.Weights[i] = 1 / float64(len(bs))
				}
			}
			for i, bc := range bs {
				blk, err := pc.block(mod, bc, mult*cd.Weights[i], kernels)
				if err != nil {
					return nil, err
				}
				cd.Branches = append(cd.Branches, blk)
			}
			b.Steps = append(b.Steps, Step{Cond: cd})
			continue
		}
		kind, ok := collectiveKind(in)
		switch {
		case ok && kind != "":
			col, err := newCollective(in, kind)
			if err != nil {
				return nil, err
			}
			if strings.HasSuffix(in.Opcode.String(), "-start") {
				col.Async = true
				started[in] = col
			}
			b.Steps = append(b.Steps, Step{Collective: col})
		case ok && len(in.Operands) == 1 && started[in.Operands[0]] != nil:
			b.Steps = append(b.Steps, Step{Done: started[in.Operands[0]]})
		}
	}
	return b, nil
}

// KernelByName returns the kernel named name, or nil.
func (p *Program) KernelByName(name string) *Kernel {
	for _, k := range p.Kernels {
		if k.Name == name {
			return k
		}
	}
	return nil
}
