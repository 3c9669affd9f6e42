package compiler

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/compiler/hlo"
)

// Options control a compilation.
type Options struct {
	Target cost.Target // required
	Store  Store       // the global config store; nil for none
	// Strict rejects config entries naming nodes or kernels that the program does not
	// have. Without it they are ignored (candidate repair).
	Strict bool
	// Check verifies the module after every pass.
	Check bool
	// DumpAfter selects passes (MatchPasses: a name of PassNames, a group's members
	// included; "all"; or a regular expression matched in full) after which the module's
	// HLO text is written to Dump (DumpHook: after its first run for a pass that a group
	// iterates; each module after a "// after pass NAME" line when more than one pass is
	// selected). It is a PassHook run after those of AfterPass.
	DumpAfter string
	Dump      io.Writer
	// AfterPass are hooks called after the passes they select, with the module and the
	// run's statistics (see PassHook).
	AfterPass []PassHook
	// Kernels, when set, shares kernel analyses and the simplified module across
	// compiles (see KernelCache).
	Kernels *KernelCache
	// Simplify selects the passes of the simplification group (zero value: opt's default
	// pipeline to a fixed point).
	Simplify Simplify
	// Fusion is the rule that forms the fusion decisions the config leaves open:
	// FusionXLA (or "") the fusion pass's XLA-like defaults, FusionPartition
	// partition-based fusion (PartitionConfig, run before the passes; the program's
	// effective config then holds its decisions as ordinary fusion entries).
	Fusion FusionRule
	// Staging selects the staging pass's default (zero value: StagingOff, which stages
	// nothing and lists no staging edges).
	Staging StagingMode
	// Partitions is the number of devices a module with sharding annotations (a GSPMD
	// dump) is partitioned over before the passes (spmd.Partition): 0 for its header's
	// num_partitions; it must divide that. A module without annotations is compiled as
	// it is.
	Partitions int
}

// Kernel is one launched kernel of a compiled program.
type Kernel struct {
	Name string           // the fusion instruction's name in the entry computation
	Key  string           // structural hash of the fused computation (KernelKey)
	Kind string           // fusion kind: kLoop, kInput (reduce), kOutput (dot/conv)
	Root string           // the name of the original instruction the kernel computes
	Comp *hlo.Computation // the fused computation
	Info *cost.KernelInfo // shared by kernels with the same key; read-only
	// Choice is the kernel's tile and flags, planned once by the compiler (the plan of
	// the tile option it was chosen from): what the simulator times, the analytical model
	// estimates, the features describe and the tuner's caches key (Choice.ID()).
	Choice cost.Planned
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
	// Partitions is the number of devices the program was partitioned over from its
	// sharding annotations (Options.Partitions); 0 when it was compiled as written.
	Partitions int
	// Passes logs every pass run, in order: the preparation passes, the simplification
	// passes (each run of each fixed-point iteration), then the configurable passes.
	Passes []PassRun
	// OpCountBefore and OpCountAfter are opt.OpCount of the module before and after the
	// simplification group (before: after call inlining, unfusing the input's fusions
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

	planned []cost.Planned // Options, planned (by the compiler's kernel analysis); read-only
}

// Planned returns the options, planned once when the kernel was analyzed (cost.Planned
// values with the flags the options were listed with: the default flags, or single
// buffers when no tile fits with them); WithFlags gives an option with other flags from
// the same plan. The slice is shared: do not modify it.
func (c *TileChoice) Planned() []cost.Planned { return c.planned }

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
	// Staging lists the candidate staging edges, in program order (Options.Staging on
	// or auto, or a config with staging entries; none otherwise).
	Staging []StagingChoice
}

// nilStore makes a nil Store usable.
type nilStore struct{}

func (nilStore) Lookup(Kind, string) (Entry, bool) { return Entry{}, false }

// Compile runs the pass list, Passes, on a copy of m with cfg (nil: all defaults) and
// returns the program. The simplification group runs the passes opts.Simplify selects;
// the config-independent prefix (preparation and simplification) is memoized in
// opts.Kernels (see KernelCache). The input module is not modified.
func Compile(m *hlo.Module, cfg *Config, opts Options) (*Program, error) {
	return compile(m, cfg, opts, nil)
}

// compile is Compile with the pass list passes (nil: Passes), checked by CheckPasses.
func compile(m *hlo.Module, cfg *Config, opts Options, passes []Pass) (*Program, error) {
	if passes == nil {
		passes = Passes() // checked at init
	} else if err := CheckPasses(passes); err != nil {
		return nil, err
	}
	if err := opts.Target.Validate(); err != nil {
		return nil, err
	}
	passes, err := opts.Simplify.apply(passes)
	if err != nil {
		return nil, err
	}
	if opts.Store == nil {
		opts.Store = nilStore{}
	}
	if cfg == nil {
		cfg = NewConfig()
	}
	switch opts.Fusion {
	case "", FusionXLA:
	case FusionPartition:
		var err error
		if cfg, _, err = PartitionConfig(m, cfg, opts); err != nil {
			return nil, fmt.Errorf("partition fusion: %w", err)
		}
		opts.Fusion = FusionXLA
	default:
		_, err := ParseFusionRule(string(opts.Fusion))
		return nil, err
	}
	hooks := opts.AfterPass
	if opts.DumpAfter != "" {
		selected, err := MatchPasses(opts.DumpAfter, uniquePassNames(passes))
		if err != nil {
			return nil, err
		}
		if opts.Dump != nil {
			hooks = append(slices.Clip(hooks), DumpHook(selected, opts.Dump))
		}
	}
	n := prefixLen(passes)
	prep := prepare(m, opts, passes[:n], hooks)
	if prep.err != nil {
		return nil, m.Wrap(prep.err)
	}
	mod := prep.mod.Clone()
	s, err := newState(mod, cfg, opts)
	if err != nil {
		return nil, m.Wrap(err)
	}
	r := newRunner(mod, s, opts, hooks)
	r.log = append([]PassRun(nil), prep.log...)
	if _, err := r.run(passes[n:], 0); err != nil {
		return nil, m.Wrap(err)
	}
	if s.stale {
		if err := s.sync(mod); err != nil {
			return nil, m.Wrap(err)
		}
	}
	if opts.Strict {
		if err := s.checkUnused(); err != nil {
			return nil, m.Wrap(err)
		}
	}
	prog, err := s.program(m.Name, mod)
	if err != nil {
		return nil, err
	}
	prog.Passes, prog.OpCountBefore, prog.OpCountAfter = r.log, prep.before, prep.after
	prog.Partitions = prep.partitions
	return prog, nil
}

// checkUnused reports config entries that named no node of the program.
func (s *State) checkUnused() error {
	var errs []error
	for _, kind := range Kinds() {
		for _, k := range s.Config.Names(kind) {
			if !s.used[kind][k] {
				errs = append(errs, fmt.Errorf("config %s entry %q names no configurable node of this program", kind, k))
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Config.OperandLayout)) {
		if !s.usedOperand[k] {
			errs = append(errs, fmt.Errorf("config operand_layout entry %q names no layout-configurable node of this program", k))
		}
	}
	if len(errs) > 5 {
		errs = append(errs[:5], fmt.Errorf("and %d more", len(errs)-5))
	}
	return errors.Join(errs...)
}

// program builds the Program from the state the passes left (programRequires): a Kernel
// per entry of the kernel table, with its planned choice, and the schedule.
func (s *State) program(name string, mod *hlo.Module) (*Program, error) {
	p := &Program{Name: name, Module: mod, Config: s.Effective, Space: s.Space, Target: s.Options.Target, Chips: ModuleChips(mod)}
	kernels := make(map[*hlo.Instruction]*Kernel, len(s.Kernels)) // for the schedule
	for _, site := range s.Kernels {
		in := site.Fusion
		if site.Info == nil {
			return nil, mod.Wrap(hlo.At(in, fmt.Errorf("kernel %s was not analyzed", in.Name)))
		}
		k := &Kernel{Name: in.Name, Key: site.Key, Kind: in.FusionKind, Root: site.Root, Comp: in.Calls, Info: site.Info,
			Choice: site.Choice, Computation: site.Computation.Name, Approximate: approximate(in.Calls, site.Info)}
		for _, op := range in.Operands {
			k.Inputs = append(k.Inputs, op.Name)
		}
		p.Kernels = append(p.Kernels, k)
		kernels[in] = k
	}
	var err error
	p.Schedule, err = s.block(mod, mod.Entry, 1, kernels)
	if err != nil {
		return nil, mod.Wrap(err)
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

// KernelByName returns the kernel named name, or nil.
func (p *Program) KernelByName(name string) *Kernel {
	for _, k := range p.Kernels {
		if k.Name == name {
			return k
		}
	}
	return nil
}
