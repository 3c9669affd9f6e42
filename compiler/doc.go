// Package compiler is tpucost's multi-pass XLA-like compiler: one pass list, Passes,
// that prepares the module (inline calls, unfuse the input's fusions, rewrite library
// custom-calls), runs the target-independent simplification passes of package opt as one
// fixed-point group, then layout assignment, fusion, tiling and code-generation flags,
// each of these a pass with a per-node configuration, an enumerable space of valid
// options and an XLA-like default. Compiling a module with a config gives a Program:
// kernels (fused computations with a tile and flags) that the simulator times.
// Candidate repair fills the choices a config lacks from the global config store, else
// the defaults, so that any partial config compiles to a well-formed program.
//
// # Compile
//
// Compile clones the module and runs the pass list on it, then builds the Program from
// what the passes left. The leading passes that read no config — preparation and
// simplification — are the config-independent prefix: they run once per module
// (memoized in a KernelCache; gen and tune compile one module under many configs).
// Options.Simplify selects the members of the simplification group.
//
// # The pass list
//
// A Pass is data: {Name, Kind, Requires, Provides, Invalidates, Run}, or a group
// {Name, Group, MaxIterations} whose passes run in order, once or to a fixed point
// (opt.FixedPoint, the one fixed-point loop). Kind is the config kind the pass reads (""
// for none). Run(m, s) rewrites the module m in place and returns (changed, err); no
// pass replaces the module. Compile records each run's changed result in Program.Passes
// (with the op count after it, and the iteration of a pass a group iterates), runs
// hlo.Verify after every pass under Options.Check (the error names the pass) and calls
// the after-pass hooks of Options.AfterPass (PassHook: the module and the run's time and
// op counts, in memory). Through a hook (DumpHook) it prints the module after the passes
// Options.DumpAfter selects (MatchPasses: any name of PassNames, a group's members
// included, "all" or a regular expression; a pass a group iterates is printed after its
// first run).
//
// The default list (PassNames):
//
//	inline-calls            call instructions inlined (opt's call-inliner)
//	unfuse                  the input's fusions inlined, so the fusion pass decides the kernels
//	rewrite-custom-calls    library GEMM, convolution and copy custom-calls → dot, convolution, copy
//	simplify                group: opt.XLAOrderPasses (call-inliner, algsimp ... cse) to a fixed point
//	layout-assignment       layout configs
//	fusion                  fusion configs
//	tiling                  tile configs
//	flags                   flags configs
//
// # The state and its products
//
// Passes talk only through a State: the inputs (Options, Config), the choices made so
// far (Effective, the complete effective config; Space, the configurable nodes) and the
// products a pass leaves for later ones, each a typed field named by a Product:
//
//	ProductFlow     State.Flow, State.Trips   flow computations, loop trip counts (from the start)
//	ProductLayouts  (the module's shapes)     a final layout on every array of the flow computations
//	ProductKernels  State.Kernels             the kernel table: every fusion instruction, its computation and root
//	ProductTiles    KernelSite.Key, .Info,    each kernel's key, analysis and planned tile (cost.Planned);
//	                .Choice                   its tile in Effective/Space
//	ProductFlags    KernelSite.Choice,        each kernel's planned choice completed with its flags;
//	                Effective/Space .Flags    each kernel key's flags
//
// A compiled Kernel carries its choice as Kernel.Choice, a cost.Planned: the tile option
// planned once by the kernel's analysis (KernelCache), with the chosen flags. The
// simulator, the analytical model, the features, the predictor, the tuner and the dataset
// generator read that value; none plans again.
//
// # Configs, spaces and stores, one kind at a time
//
// Config, Space and Store handle the four kinds (layout, fusion, tile, flags) through one
// table of kind operations: an entry of any kind is an Entry, a configurable node of any
// kind a Node (Space.Nodes, Space.Option), and the store answers Lookup(kind, key).
// Candidate repair looks an entry up in the config, else the store (State.want), for
// every kind the same way; Perturb and the tuner's search space walk Nodes.
//
// The configurable passes are layout-assignment (requires flow, provides layouts) →
// fusion (flow, layouts → kernels) → tiling (kernels → tiles) → flags (kernels, tiles →
// flags); a Program needs flow, kernels, tiles and flags. The preparation passes and
// the opt passes (wrapped by OptPass) read no config, keep ProductFlow up to date and
// invalidate everything after it, so a list may run them only ahead of layout
// assignment. CheckPasses checks a list against these declarations — a pass that
// requires a product no earlier pass provides, or one an earlier pass invalidated, is an
// error naming both; names are unique, group members included — and the default list is
// checked when the package is initialized.
//
// The flow computations are hlo.FlowComputations with branches, breadth first; the
// schedule (schedule.go: steps, loops, trip counts) and collectives (collective.go) are
// built from them after the last pass.
//
// The only table keyed by instruction pointer that outlives a pass is State.Trips, keyed
// by while instruction: the count must be derived before fusion rewrites the loop body,
// and no configurable pass replaces a while instruction.
package compiler
