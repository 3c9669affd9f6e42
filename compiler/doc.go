// Package compiler is tpucost's multi-pass XLA-like compiler: the target-independent
// simplification passes of package opt, then layout assignment, fusion, tiling and
// code-generation flags, each a pass with a per-node configuration, an enumerable space
// of valid options and an XLA-like default. Compiling a module with a config gives a
// Program: kernels (fused computations with a tile and flags) that the simulator times.
// Candidate repair fills the choices a config lacks from the global config store, else
// the defaults, so that any partial config compiles to a well-formed program.
//
// # Compile
//
// Compile clones the module, inlines calls, unfuses the input's own fusions, rewrites
// library custom-calls and runs the simplification passes Options.Simplify selects (all
// config-independent, memoized per module in a KernelCache), then runs the pass list,
// Passes, and builds the Program from what the passes left.
//
// # The pass list
//
// A Pass is data: {Name, Kind, Requires, Provides, Invalidates, Run}. Kind is the config
// kind the pass reads ("" for none). Run(m, s) rewrites the module m in place and returns
// (changed, err); no pass replaces the module. Compile records each run's changed result
// in Program.Passes (with the op count after it), runs hlo.Verify after every pass under
// Options.Check (the error names the pass) and prints the module after the pass named by
// Options.DumpAfter.
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
// The default list is layout-assignment (requires flow, provides layouts) → fusion
// (flow, layouts → kernels) → tiling (kernels → tiles) → flags (kernels, tiles → flags);
// a Program needs flow, kernels, tiles and flags. CheckPasses checks a list against these
// declarations — a pass that requires a product no earlier pass provides, or one an
// earlier pass invalidated, is an error naming both — and the default list is checked
// when the package is initialized. OptPass adapts an opt pass to the contract: it reads
// no config, keeps ProductFlow up to date and invalidates everything after it, so a list
// may run it only ahead of layout assignment.
//
// The only table keyed by instruction pointer that outlives a pass is State.Trips, keyed
// by while instruction: the count must be derived before fusion rewrites the loop body,
// and no configurable pass replaces a while instruction.
package compiler
