package compiler

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/compiler/opt"
)

// Product is something a pass leaves in the State for the passes after it (or for
// building the Program). Products are how the pass list states its ordering: a pass
// Requires the products it reads, Provides those it fills, and Invalidates those its
// rewrite does not preserve; CheckPasses checks a list against them.
type Product string

// The products of the pipeline, in the order the default list makes them.
const (
	// ProductFlow is State.Flow and State.Trips. It is available from the start: the
	// State is created from the module as it enters the list.
	ProductFlow Product = "flow"
	// ProductLayouts is a layout on every array shape of the flow computations, final
	// for kernel keys (KernelKey and EdgeKey hash layouts).
	ProductLayouts Product = "layouts"
	// ProductKernels is State.Kernels with Fusion, Computation and Root set: every
	// fusion instruction of the flow computations, in order.
	ProductKernels Product = "kernels"
	// ProductTiles is every KernelSite's Key, Info and Choice (its chosen tile, planned;
	// its flags provisional), and the chosen tile of every key (State.Effective.Tile,
	// State.Space.Tile).
	ProductTiles Product = "tiles"
	// ProductFlags is every KernelSite's complete Choice (tile and flags, planned) and the
	// chosen flags of every kernel key (State.Effective.Flags, State.Space.Flags).
	ProductFlags Product = "flags"
	// ProductStaging is the staging decisions: every KernelSite's Choice with its staged
	// arrays (cost.Staging), State.Space.Staging and State.Effective.Staging.
	ProductStaging Product = "staging"
)

// programRequires is what Compile builds a Program from after the last pass.
var programRequires = []Product{ProductFlow, ProductKernels, ProductTiles, ProductFlags}

// Pass is one step of the pipeline, as data (after Go's SSA pass list and XLA's
// HloPassPipeline). Run rewrites m in place under the State's config and reports whether
// it changed the module; no pass replaces the module, since the State's products point
// into it. Compile records every run's changed result in Program.Passes and, under
// Options.Check, verifies the module after it. A pass reads only the products it
// Requires and fills those it Provides; Invalidates names the products its rewrite does
// not preserve (they must be provided again before anything requires them).
type Pass struct {
	Name string
	// Kind is the kind of config the pass reads; "" for a pass that reads none (a
	// target-independent rewrite such as an opt pass, see OptPass).
	Kind        Kind
	Requires    []Product
	Provides    []Product
	Invalidates []Product
	Run         func(m *hlo.Module, s *State) (changed bool, err error)
}

// Passes returns the configurable pipeline, in order: layout assignment, fusion, tiling,
// flags and staging, one pass per config kind. The list is data; it is checked by CheckPasses
// when the package is initialized.
func Passes() []Pass {
	return []Pass{
		{Name: "layout-assignment", Kind: KindLayout, Run: runLayout,
			Requires: []Product{ProductFlow}, Provides: []Product{ProductLayouts}},
		{Name: "fusion", Kind: KindFusion, Run: runFusion,
			Requires: []Product{ProductFlow, ProductLayouts}, Provides: []Product{ProductKernels}},
		{Name: "tiling", Kind: KindTile, Run: runTiling,
			Requires: []Product{ProductKernels}, Provides: []Product{ProductTiles}},
		{Name: "flags", Kind: KindFlags, Run: runFlags,
			Requires: []Product{ProductKernels, ProductTiles}, Provides: []Product{ProductFlags}},
		{Name: "staging", Kind: KindStaging, Run: runStaging,
			Requires: []Product{ProductFlow, ProductKernels, ProductTiles, ProductFlags}, Provides: []Product{ProductStaging}},
	}
}

func init() {
	if err := CheckPasses(Passes()); err != nil {
		panic(err)
	}
}

// PassNames lists the names of Passes in order.
func PassNames() []string { return passNames(Passes()) }

func passNames(ps []Pass) []string {
	n := make([]string, 0, len(ps))
	for _, p := range ps {
		n = append(n, p.Name)
	}
	return n
}

// CheckPasses reports whether passes can run in this order on a fresh State and leave
// what a Program is built from (ProductFlow, ProductKernels, ProductTiles, ProductFlags):
// every name is set and unique, every pass has a Run, each config kind is read by at most
// one pass, and every product a pass requires is available when it runs — provided at
// the start (ProductFlow) or by an earlier pass, and not invalidated since. An error
// names the pass and the missing product.
func CheckPasses(passes []Pass) error {
	have := map[Product]bool{ProductFlow: true}
	lostBy := map[Product]string{} // the pass that invalidated an available product
	names := map[string]bool{}
	kinds := map[Kind]string{}
	need := func(who string, r Product) error {
		if have[r] {
			return nil
		}
		if by, ok := lostBy[r]; ok {
			return fmt.Errorf("pass list: %s requires %s, which pass %s before it does not preserve", who, r, by)
		}
		return fmt.Errorf("pass list: %s requires %s, which no pass before it provides", who, r)
	}
	for i, p := range passes {
		switch {
		case p.Name == "":
			return fmt.Errorf("pass list: pass %d has no name", i)
		case names[p.Name]:
			return fmt.Errorf("pass list: pass %s is listed twice", p.Name)
		case p.Run == nil:
			return fmt.Errorf("pass list: pass %s has no Run", p.Name)
		case p.Kind != "" && !slices.Contains(Kinds(), p.Kind):
			return fmt.Errorf("pass list: pass %s reads config kind %q, which is not one of %v", p.Name, p.Kind, Kinds())
		case p.Kind != "" && kinds[p.Kind] != "":
			return fmt.Errorf("pass list: passes %s and %s both read %s configs", kinds[p.Kind], p.Name, p.Kind)
		}
		names[p.Name] = true
		if p.Kind != "" {
			kinds[p.Kind] = p.Name
		}
		for _, r := range p.Requires {
			if err := need("pass "+p.Name, r); err != nil {
				return err
			}
		}
		for _, x := range p.Invalidates {
			if have[x] {
				delete(have, x)
				lostBy[x] = p.Name
			}
		}
		for _, x := range p.Provides {
			have[x] = true
			delete(lostBy, x)
		}
	}
	for _, r := range programRequires {
		if err := need("the program", r); err != nil {
			return err
		}
	}
	return nil
}

// OptPass adapts a target-independent simplification pass (package opt) to the pipeline's
// contract, so that a list may run it ahead of layout assignment: it reads no config,
// requires nothing, keeps ProductFlow up to date (after a change it re-derives the flow
// computations and trip counts, since opt passes inline calls and simplify loops) and
// invalidates every later product (an opt pass neither keeps layouts nor knows kernels),
// so CheckPasses rejects it anywhere after layout assignment.
//
// Compile itself runs the simplification passes before the list, in its memoized,
// config-independent preparation (Options.Simplify, KernelCache), not through OptPass:
// gen and tune compile one module under many configs and simplify it once.
func OptPass(p opt.Pass) Pass {
	return Pass{Name: p.Name, Provides: []Product{ProductFlow},
		Invalidates: []Product{ProductLayouts, ProductKernels, ProductTiles, ProductFlags},
		Run: func(m *hlo.Module, s *State) (bool, error) {
			changed, err := p.Run(m)
			if err != nil || !changed {
				return changed, err
			}
			return true, s.sync(m)
		}}
}

// State is what the passes of one compile share: its inputs, the choices made so far and
// the products passes leave for later passes (see Product): what one pass hands to
// another is a field here, documented with the product that fills it, rather than a side
// table. Compile creates one State per compile, from the module as it enters the list.
type State struct {
	// Options and Config are the compile's inputs (Options.Store and Config are never
	// nil). Passes read them.
	Options Options
	Config  *Config

	// Effective and Space record every choice the configurable passes make, in pipeline
	// order: Effective is the complete config (compiling with it reproduces the program),
	// Space the configurable nodes with their options, default and choice.
	Effective *Config
	Space     *Space

	// Flow (ProductFlow) lists the flow computations: the entry first, then the
	// conditions and bodies of loops and the branches of conditionals, recursively.
	Flow []*hlo.Computation
	// Trips (ProductFlow) is the trip count of every while instruction of Flow, derived
	// before the configurable passes rewrite loop bodies (fusion hides the induction
	// variable). It is keyed by the while instruction: the configurable passes rewrite
	// instructions in place and never replace a while, so the pointer names the loop
	// from start to schedule.
	Trips map[*hlo.Instruction]Trip
	// Kernels (ProductKernels, completed by ProductTiles) is the kernel table: every
	// fusion instruction of Flow, the entry's first, each computation's in order.
	Kernels []*KernelSite

	names map[string]bool          // every instruction and computation name in use
	used  map[Kind]map[string]bool // config entries that named a node (for Strict)
	// usedOperand holds the operand_layout entries that named a node (for Strict).
	usedOperand map[string]bool
}

// Trip is a while loop's trip count: N runs, from Source ("backend_config",
// "induction"; "default" when unknown, with N = DefaultTripCount).
type Trip struct {
	N      int64
	Source string
	Known  bool
}

// KernelSite is one entry of the kernel table: a fusion instruction of a flow
// computation. The fusion pass fills Fusion, Computation and Root (ProductKernels); the
// tiling pass fills Key, Info and Choice with the chosen tile (ProductTiles); the flags
// pass completes Choice with the chosen flags (ProductFlags).
type KernelSite struct {
	Fusion      *hlo.Instruction
	Computation *hlo.Computation // the flow computation it runs in
	Root        string           // the name of the original instruction it computes
	Key         string           // KernelKey of Fusion.Calls
	Info        *cost.KernelInfo // shared by kernels with the same key; read-only
	Choice      cost.Planned     // the kernel's planned tile and flags
}

// newState returns the State for compiling m (already prepared and cloned) with cfg.
func newState(m *hlo.Module, cfg *Config, opts Options) (*State, error) {
	s := &State{Options: opts, Config: cfg, Effective: NewConfig(), Space: &Space{},
		names: map[string]bool{}, used: map[Kind]map[string]bool{}, usedOperand: map[string]bool{}}
	for _, k := range Kinds() {
		s.used[k] = map[string]bool{}
	}
	return s, s.sync(m)
}

// sync re-derives ProductFlow from m and records its names as taken: at the start and
// after a pass that rewrote control flow (OptPass).
func (s *State) sync(m *hlo.Module) error {
	flow, err := flowComputations(m)
	if err != nil {
		return err
	}
	s.Flow = flow
	s.Trips = map[*hlo.Instruction]Trip{}
	for _, c := range flow {
		for _, in := range c.Instructions {
			if in.Opcode == hlo.OpWhile {
				n, src, ok := TripCount(in)
				if !ok {
					n, src = DefaultTripCount, "default"
				}
				s.Trips[in] = Trip{N: n, Source: src, Known: ok}
			}
		}
	}
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			s.names[in.Name] = true
		}
	}
	return nil
}

// want returns the entry candidate repair starts from for a node of kind k whose config
// entry is named name and whose structural key is key: the config's entry (recorded as
// used, for Strict), else the store's; fromConfig says which. A pass checks it against the
// node's options and falls back to its default when it is not one of them (the store's
// entry silently; the config's entry is an error under Strict, and for layouts always).
func (s *State) want(k Kind, name, key string) (e Entry, fromConfig, ok bool) {
	if e, ok := s.Config.Get(k, name); ok {
		s.used[k][name] = true
		return e, true, true
	}
	e, ok = s.Options.Store.Lookup(k, key)
	return e, false, ok
}

// qualName is the config name of instruction name in flow computation c: the name itself
// in the entry, "computation/name" elsewhere (names are scoped per computation).
func (s *State) qualName(c *hlo.Computation, name string) string {
	if len(s.Flow) == 0 || c == s.Flow[0] {
		return name
	}
	return c.Name + "/" + name
}

// uniqueName returns base, or base.N for the first N that makes it a new name, and takes
// the name.
func (s *State) uniqueName(base string) string {
	name := base
	for i := 1; s.names[name]; i++ {
		name = base + "." + strconv.Itoa(i)
	}
	s.names[name] = true
	return name
}

// runPass runs one pass body and, under check, the verifier after it, and returns the log
// entry. The errors name the pass: "pass NAME: ..." for the pass's own error, "after
// pass NAME: ..." for the verifier's.
func runPass(name string, run func() (bool, error), m *hlo.Module, check bool, iter int) (PassRun, error) {
	changed, err := run()
	if err != nil {
		return PassRun{}, fmt.Errorf("pass %s: %w", name, err)
	}
	if check {
		if err := hlo.Verify(m); err != nil {
			return PassRun{}, fmt.Errorf("after pass %s: %w", name, err)
		}
	}
	return PassRun{Name: name, Changed: changed, OpCount: opt.OpCount(m), Iteration: iter}, nil
}
