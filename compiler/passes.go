package compiler

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

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
//
// A pass without Run is a group (after XLA's HloPassFix): its Group passes run in order,
// once when MaxIterations is 0, else repeatedly until an iteration changes nothing (a
// fixed point, opt.FixedPoint: the group fails with an error wrapping
// opt.ErrNoFixedPoint when iteration MaxIterations still changed the module). Its
// members are passes with a Run that read no config; their products are the group's.
// A group may list a member more than once per iteration only where Repeats names it
// (XLA's simplification group runs dce twice, opt.SimplifyPipeline.Repeats):
// CheckPasses refuses every other repeated name.
//
// The leading passes of a list that read no config and provide nothing but ProductFlow
// are its config-independent prefix: Compile runs them once per module (memoized in
// Options.Kernels, keyed by their names), on a State whose Options carry only Check.
type Pass struct {
	Name string
	// Kind is the kind of config the pass reads; "" for a pass that reads none (a
	// target-independent rewrite such as an opt pass, see OptPass).
	Kind        Kind
	Requires    []Product
	Provides    []Product
	Invalidates []Product
	Run         func(m *hlo.Module, s *State) (changed bool, err error)

	Group         []Pass
	MaxIterations int
	// Repeats names the members a group lists more than once on purpose; each must be
	// listed at least twice in Group (a stale declaration is an error too).
	Repeats []string
}

// SimplifyGroup names the group of simplification passes in Passes, the one
// Options.Simplify selects the members of.
const SimplifyGroup = "simplify"

// Passes returns the pipeline, in order: the preparation passes (inline-calls, unfuse,
// rewrite-custom-calls), the simplification group (the default of
// opt.SimplifyPipelines, opt.XLAOrderPasses in XLA's order, iterated to a fixed point),
// then the configurable passes, one per config kind: layout assignment, fusion, tiling,
// flags and staging. The list is data; it is checked by CheckPasses when the package is
// initialized.
func Passes() []Pass {
	return []Pass{
		rewrite("inline-calls", nil, runInlineCalls),
		rewrite("unfuse", []Product{ProductFlow}, runUnfuse),
		rewrite("rewrite-custom-calls", []Product{ProductFlow}, runRewriteCustomCalls),
		simplifyGroup(opt.SimplifyPipelines()[0]),
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

// PassNames lists the names of Passes in order, a group's members after the group, each
// name once (a member a group repeats, at its first place). Options.DumpAfter takes any
// of them.
func PassNames() []string { return uniquePassNames(Passes()) }

// uniquePassNames is passNames with each name once, at its first place.
func uniquePassNames(ps []Pass) []string {
	var n []string
	for _, name := range passNames(ps) {
		if !slices.Contains(n, name) {
			n = append(n, name)
		}
	}
	return n
}

// simplifyGroup is the simplification group that runs sp to a fixed point, with the
// repeats sp declares.
func simplifyGroup(sp opt.SimplifyPipeline) Pass {
	g := Pass{Name: SimplifyGroup, Group: []Pass{}, MaxIterations: opt.DefaultMaxIterations, Repeats: slices.Clone(sp.Repeats)}
	for _, p := range sp.Passes() {
		g.Group = append(g.Group, OptPass(p))
	}
	return g
}

func passNames(ps []Pass) []string {
	n := make([]string, 0, len(ps))
	for _, p := range ps {
		n = append(n, p.Name)
		n = append(n, passNames(p.Group)...)
	}
	return n
}

// CheckPasses reports whether passes can run in this order on a fresh State and leave
// what a Program is built from (ProductFlow, ProductKernels, ProductTiles, ProductFlags):
// every name is set and unique (group members included; a group may list a member again
// only if its Repeats names it, and every name in Repeats must be listed more than once
// in that group), every pass has a Run or is a
// group of passes with a Run that read no config, each config kind is read by at most
// one pass, and every product a pass requires is available when it runs — provided at
// the start (ProductFlow) or by an earlier pass, and not invalidated since (a group that
// iterates is checked over two iterations). An error names the pass and the missing
// product.
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
	// products checks and applies p's products.
	products := func(p Pass) error {
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
		return nil
	}
	// declared checks p's declaration; in is the group p belongs to (nil at the top).
	var declared func(i int, p Pass, in *Pass) error
	declared = func(i int, p Pass, in *Pass) error {
		repeat := in != nil && slices.Contains(in.Repeats, p.Name) && slices.ContainsFunc(in.Group[:i], func(q Pass) bool { return q.Name == p.Name })
		switch {
		case p.Name == "":
			return fmt.Errorf("pass list: pass %d has no name", i)
		case names[p.Name] && !repeat:
			return fmt.Errorf("pass list: pass %s is listed twice", p.Name)
		case len(p.Repeats) > 0 && len(p.Group) == 0:
			return fmt.Errorf("pass list: pass %s declares repeated members but is not a group", p.Name)
		case p.Run == nil && (len(p.Group) == 0 || in != nil):
			return fmt.Errorf("pass list: pass %s has no Run", p.Name)
		case p.Run != nil && len(p.Group) > 0:
			return fmt.Errorf("pass list: pass %s has both a Run and a group", p.Name)
		case p.Kind != "" && (in != nil || p.Run == nil):
			return fmt.Errorf("pass list: pass %s reads %s configs in a group; a group's passes read none", p.Name, p.Kind)
		case p.Kind != "" && !slices.Contains(Kinds(), p.Kind):
			return fmt.Errorf("pass list: pass %s reads config kind %q, which is not one of %v", p.Name, p.Kind, Kinds())
		case p.Kind != "" && kinds[p.Kind] != "":
			return fmt.Errorf("pass list: passes %s and %s both read %s configs", kinds[p.Kind], p.Name, p.Kind)
		}
		names[p.Name] = true
		if p.Kind != "" {
			kinds[p.Kind] = p.Name
		}
		for j, q := range p.Group {
			if err := declared(j, q, &p); err != nil {
				return err
			}
		}
		for _, r := range p.Repeats {
			if n := len(slices.DeleteFunc(slices.Clone(p.Group), func(q Pass) bool { return q.Name != r })); n < 2 {
				return fmt.Errorf("pass list: group %s declares %s repeated, but lists it %d time(s)", p.Name, r, n)
			}
		}
		return nil
	}
	for i, p := range passes {
		if err := declared(i, p, nil); err != nil {
			return err
		}
		members := []Pass{p}
		if p.Run == nil {
			members = p.Group
			if p.MaxIterations > 1 {
				members = append(slices.Clone(p.Group), p.Group...)
			}
		}
		for _, q := range members {
			if err := products(q); err != nil {
				return err
			}
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
// contract; Passes builds its simplification group from them. The pass reads no config,
// requires nothing, keeps ProductFlow up to date (after a change the State re-derives
// the flow computations and trip counts before a pass reads them, since opt passes
// inline calls and simplify loops) and invalidates every later product (an opt pass
// neither keeps layouts nor knows kernels), so CheckPasses rejects it anywhere after
// layout assignment.
func OptPass(p opt.Pass) Pass {
	return rewrite(p.Name, nil, func(m *hlo.Module, _ *State) (bool, error) { return p.Run(m) })
}

// rewrite makes a target-independent pass (an opt pass, a preparation pass) that reads no
// config and requires the given products: it keeps ProductFlow up to date (the State
// re-derives it after a change, before a pass requires it) and invalidates every later
// product.
func rewrite(name string, requires []Product, run func(m *hlo.Module, s *State) (bool, error)) Pass {
	return Pass{Name: name, Requires: requires, Provides: []Product{ProductFlow},
		Invalidates: []Product{ProductLayouts, ProductKernels, ProductTiles, ProductFlags},
		Run: func(m *hlo.Module, s *State) (bool, error) {
			changed, err := run(m, s)
			s.stale = s.stale || changed
			return changed, err
		}}
}

// prefixLen is the length of the config-independent prefix of passes (see Pass): the
// leading passes that read no config and provide nothing but ProductFlow, which a new
// State derives again from the module.
func prefixLen(passes []Pass) int {
	for i, p := range passes {
		members := []Pass{p}
		if p.Run == nil {
			members = p.Group
		}
		for _, q := range members {
			if q.Kind != "" || slices.ContainsFunc(q.Provides, func(x Product) bool { return x != ProductFlow }) {
				return i
			}
		}
	}
	return len(passes)
}

// State is what the passes of one compile share: its inputs, the choices made so far and
// the products passes leave for later passes (see Product): what one pass hands to
// another is a field here, documented with the product that fills it, rather than a side
// table. Compile creates one State for the config-independent prefix (when it is not
// memoized) and one for the rest of the list, each from the module as it enters them.
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

	// stale is set when a pass changed the module's control flow or names (a rewrite):
	// ProductFlow is derived again before the next pass that requires it.
	stale bool
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

// newState returns the State for running passes on m with cfg.
func newState(m *hlo.Module, cfg *Config, opts Options) (*State, error) {
	s := &State{Options: opts, Config: cfg, Effective: NewConfig(), Space: &Space{},
		names: map[string]bool{}, used: map[Kind]map[string]bool{}, usedOperand: map[string]bool{}}
	for _, k := range Kinds() {
		s.used[k] = map[string]bool{}
	}
	return s, s.sync(m)
}

// flowOptions selects the flow computations of ProductFlow: the entry, then, in the order
// met, the conditions and bodies of while loops and the branches of conditionals,
// recursively (calls are inlined by then).
func flowOptions() hlo.FlowOptions { return hlo.FlowOptions{Branches: true, Order: hlo.BreadthFirst} }

// sync re-derives ProductFlow from m and records its names as taken: at the start and
// before a pass that requires ProductFlow after a rewrite changed the module.
func (s *State) sync(m *hlo.Module) error {
	f, err := hlo.FlowComputations(m, flowOptions())
	if err != nil {
		return err
	}
	s.Flow, s.Trips, s.stale = f.Computations, map[*hlo.Instruction]Trip{}, false
	for _, c := range s.Flow {
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

// PassRun is one entry of a program's pass log: a pass that ran, whether it changed the
// module, and opt.OpCount of the module after it. Iteration is the fixed-point iteration
// (from 1) of a pass of a group that iterates (the simplification group), 0 otherwise.
type PassRun struct {
	Name      string
	Changed   bool
	OpCount   int
	Iteration int
}

// PassStat is what the compiler reports to a PassHook after a pass run: the run (its
// name, iteration and changed result, as Program.Passes logs it), its wall time, and
// opt.OpCount of the module before and after it. A group's run is reported after its
// members', with the time and op counts of the whole group.
type PassStat struct {
	PassRun
	Wall      time.Duration
	OpsBefore int
}

// A PassHook observes the pipeline (after XLA's pass-dump hooks): After is called after
// every run of each pass Select accepts (nil Select: every pass), with the module as the
// pass left it. The module is the compile's own and later passes rewrite it in place:
// After must not modify it, and must clone what it keeps (hlo.Module.Clone). An error
// from After ends the compile with it. Hooks are called in the order Options.AfterPass
// lists them, from the goroutine that called Compile.
//
// The config-independent prefix (preparation and simplification) is memoized in
// Options.Kernels; when a hook selects one of its passes, the prefix runs afresh for
// that compile so that the hook sees it (a hook that selects only later passes keeps
// the memo).
type PassHook struct {
	Select func(pass string) bool
	After  func(m *hlo.Module, run PassStat) error
}

// selects reports whether h is called after pass name.
func (h PassHook) selects(name string) bool { return h.Select == nil || h.Select(name) }

// MatchPasses returns the names of names (PassNames, in order) that pattern selects: the
// pass it names, "all" for every one, else the names a regular expression matches in
// full (as XLA's --xla_dump_hlo_pass_re, anchored: "alg.*" selects algsimp, "fusion"
// only the fusion pass). It is an error when pattern is not a valid expression or
// selects no pass; errors name the flag --dump-after.
func MatchPasses(pattern string, names []string) ([]string, error) {
	if pattern == "all" {
		return slices.Clone(names), nil
	}
	if _, err := regexp.Compile(pattern); err != nil {
		return nil, fmt.Errorf("--dump-after %q: want a pass name, all or a regular expression: %w", pattern, err)
	}
	re := regexp.MustCompile(`^(?:` + pattern + `)$`)
	var out []string
	for _, n := range names {
		if re.MatchString(n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--dump-after %q: no such pass, want one of %s (or all, or a regular expression)", pattern, strings.Join(names, ", "))
	}
	return out, nil
}

// DumpHook returns the hook that writes the module's HLO text to w after the first run
// of each pass of selected (a pass a group iterates: after its first iteration, the
// module as it found it, rewritten by it once; a pass a group lists twice, as XLA's
// order does dce: after its first place in the first iteration). With more than one
// pass selected, each module is preceded by a line "// after pass NAME", an HLO
// comment, so that the whole output still parses module by module. The hook is for one
// compile: it remembers the passes it has dumped.
func DumpHook(selected []string, w io.Writer) PassHook {
	header := len(selected) > 1
	dumped := map[string]bool{}
	return PassHook{
		Select: func(name string) bool { return slices.Contains(selected, name) },
		After: func(m *hlo.Module, run PassStat) error {
			if run.Iteration > 1 || dumped[run.Name] {
				return nil
			}
			dumped[run.Name] = true
			var err error
			if header {
				_, err = fmt.Fprintf(w, "// after pass %s\n", run.Name)
			}
			if err == nil {
				_, err = io.WriteString(w, m.String())
			}
			if err != nil {
				return fmt.Errorf("dumping after %s: %w", run.Name, err)
			}
			return nil
		},
	}
}

// hooksSelect reports whether any hook selects a pass of names.
func hooksSelect(hooks []PassHook, names []string) bool {
	for _, h := range hooks {
		for _, n := range names {
			if h.selects(n) {
				return true
			}
		}
	}
	return false
}

// runner runs passes on one module and State: it logs every run, verifies the module
// after it under Options.Check, calls the hooks of Options.AfterPass and measures the op
// count around the simplification group.
type runner struct {
	mod   *hlo.Module
	s     *State
	opts  Options
	hooks []PassHook
	log   []PassRun
	// before and after are opt.OpCount entering and leaving the group SimplifyGroup,
	// once simplified is set.
	before, after int
	simplified    bool
	// ops is opt.OpCount of the module as it stands (after the last pass logged), kept
	// for the hooks' OpsBefore.
	ops int
}

// newRunner returns a runner for mod whose hooks are hooks (nil: none).
func newRunner(mod *hlo.Module, s *State, opts Options, hooks []PassHook) *runner {
	r := &runner{mod: mod, s: s, opts: opts, hooks: hooks}
	if len(hooks) > 0 {
		r.ops = opt.OpCount(mod)
	}
	return r
}

// run runs passes in order (iter is the iteration of the group they belong to, 0 at the
// top) and reports whether any changed the module.
func (r *runner) run(passes []Pass, iter int) (changed bool, err error) {
	for _, p := range passes {
		c, err := r.pass(p, iter)
		if err != nil {
			return changed, err
		}
		changed = changed || c
	}
	return changed, nil
}

// pass runs one pass or group. The errors name the pass: "pass NAME: ..." for the pass's
// own error, "after pass NAME: ..." for the verifier's.
func (r *runner) pass(p Pass, iter int) (changed bool, err error) {
	if p.Run == nil {
		return r.group(p)
	}
	if r.s.stale && slices.Contains(p.Requires, ProductFlow) {
		if err := r.s.sync(r.mod); err != nil {
			return false, fmt.Errorf("before pass %s: %w", p.Name, err)
		}
	}
	start, before := time.Now(), r.ops
	if changed, err = p.Run(r.mod, r.s); err != nil {
		return changed, fmt.Errorf("pass %s: %w", p.Name, err)
	}
	wall := time.Since(start)
	if r.opts.Check {
		if err := hlo.Verify(r.mod); err != nil {
			return changed, fmt.Errorf("after pass %s: %w", p.Name, err)
		}
	}
	run := PassRun{Name: p.Name, Changed: changed, OpCount: opt.OpCount(r.mod), Iteration: iter}
	r.log = append(r.log, run)
	r.ops = run.OpCount
	return changed, r.notify(PassStat{PassRun: run, Wall: wall, OpsBefore: before})
}

// group runs a group's passes, once or to a fixed point (see Pass).
func (r *runner) group(p Pass) (changed bool, err error) {
	start, before := time.Now(), r.ops
	if p.Name == SimplifyGroup {
		r.before = opt.OpCount(r.mod)
	}
	if p.MaxIterations == 0 {
		changed, err = r.run(p.Group, 0)
	} else {
		var n int
		n, err = opt.FixedPoint(p.MaxIterations, func(it int) (bool, error) { return r.run(p.Group, it) })
		changed = n > 1
	}
	if err != nil {
		return changed, fmt.Errorf("group %s: %w", p.Name, err)
	}
	if p.Name == SimplifyGroup {
		r.after, r.simplified = opt.OpCount(r.mod), true
	}
	if len(r.hooks) == 0 {
		return changed, nil
	}
	ops := opt.OpCount(r.mod)
	return changed, r.notify(PassStat{PassRun: PassRun{Name: p.Name, Changed: changed, OpCount: ops}, Wall: time.Since(start), OpsBefore: before})
}

// notify calls the hooks that select the run's pass.
func (r *runner) notify(run PassStat) error {
	for _, h := range r.hooks {
		if h.selects(run.Name) {
			if err := h.After(r.mod, run); err != nil {
				return err
			}
		}
	}
	return nil
}
