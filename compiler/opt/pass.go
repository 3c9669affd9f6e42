package opt

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// Pass is one target-independent HLO rewrite. Run mutates m in place and reports whether
// it changed anything. Given a module that passes hlo.Verify, it leaves one that passes
// hlo.Verify and computes the same entry result for every input (up to floating-point
// reassociation where a pass's doc says so). A pass never removes, merges, duplicates or
// reorders instructions that are not on the pure list (see the package doc) except
// where its doc says so (the collective combiners merge collectives, the barrier
// expander removes barriers), and never increases OpCount unless Expands is set (XLA's
// expanders, decomposers and mergers trade ops for a canonical form). Runs are deterministic: the same module gives the same printed
// result. On error the module may be partly rewritten and should be discarded.
type Pass struct {
	Name string // XLA's name for the pass where one exists
	Doc  string // one line: what it rewrites
	Run  func(m *hlo.Module) (changed bool, err error)
	// Expands is set for a pass that may increase OpCount.
	Expands bool
}

// newPass wraps a pass body: it checks that the module's flow computations resolve (an
// entry, a condition and a body for every while) and turns a panic inside the pass into
// an error naming it.
func newPass(name, doc string, body func(m *hlo.Module) (bool, error)) Pass {
	return Pass{Name: name, Doc: doc, Run: func(m *hlo.Module) (bool, error) {
		if _, err := hlo.FlowComputations(m, passFlow()); err != nil {
			return false, fmt.Errorf("opt: pass %s: %w", name, err)
		}
		return guard(name, func() (bool, error) { return body(m) })
	}}
}

// All returns every pass, in a fixed order: the 14 passes of LegacyPasses, then the
// passes after XLA's expanders, decomposers, mergers and cleanups (xla.go). New passes
// are appended, so that an action index keeps its meaning.
func All() []Pass {
	return append(LegacyPasses(),
		logisticExpander(),
		batchNormExpander(),
		dotDecomposer(),
		dotMerger(),
		batchDotSimplification(),
		operandUpcaster(),
		resultCaster(),
		mapInliner(),
		realImagExpander(),
		optimizationBarrierExpander(),
		allReduceCombiner(),
		allGatherCombiner(),
		whileLoopUnroller(),
		broadcastCanonicalizer(),
		convertMover(),
		flattenCallGraph(),
		comparisonExpander(),
		gatherExpander(),
		conditionalSimplifier(),
		scatterExpander(),
		sortSimplifier(),
		whileLoopInvariantCodeMotion(),
		reduceDecomposer(),
		scatterExpanderSimple(),
		scatterSimplifier(),
	)
}

// Names lists the names of All() in order.
func Names() []string {
	var ns []string
	for _, p := range All() {
		ns = append(ns, p.Name)
	}
	return ns
}

// DefaultNames lists the names of one iteration of the compile pipeline's default
// simplification group (DefaultSimplifyPipeline's passes, XLAOrderPasses) in order, a
// pass the group runs twice listed twice.
func DefaultNames() []string { return passNamesList(XLAOrderPasses()) }

func passNamesList(ps []Pass) []string {
	var ns []string
	for _, p := range ps {
		ns = append(ns, p.Name)
	}
	return ns
}

// Lookup returns the pass called name.
func Lookup(name string) (Pass, error) {
	for _, p := range All() {
		if p.Name == name {
			return p, nil
		}
	}
	return Pass{}, fmt.Errorf("opt: no pass named %q (passes: %s)", name, strings.Join(Names(), ", "))
}

// LookupAll resolves a list of pass names, in order.
func LookupAll(names []string) ([]Pass, error) {
	out := make([]Pass, 0, len(names))
	for _, n := range names {
		p, err := Lookup(n)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// DefaultMaxIterations caps the fixed-point iteration of Default (and of every
// simplification group of SimplifyPipelines). The zoo and the
// bundled real HLO reach their fixed point in at most 4 iterations (the last one
// changing nothing); the cap only stops a pass pair that undoes each other's work.
const DefaultMaxIterations = 20

// LegacyPasses is one iteration of the compile pipeline's simplification group in its
// own, pre-XLA order (the "legacy" entry of SimplifyPipelines; the default until issue
// 36 made it XLAOrderPasses): inline calls, clean up tuples and loops, simplify
// algebraically, fold constants, move data movement toward cancellation, then CSE and
// DCE. None of them grows the op count. They are the first 14 passes of All (the
// pass-ordering gym's actions 0–13), each listed once. (XLAPipeline is XLA's own CPU
// order over all the passes, expanders included.)
func LegacyPasses() []Pass {
	return []Pass{
		callInliner(),
		zeroSizedElimination(),
		tupleSimplifier(),
		whileLoopConstantSinking(),
		whileLoopSimplifier(),
		algsimp(),
		constantFolding(),
		reshapeMover(),
		broadcastSinking(),
		transposeFolding(),
		sliceSinker(),
		padAddToConcat(),
		cse(),
		dce(),
	}
}

// XLAOrderPasses is one iteration of the compile pipeline's default simplification group,
// in XLA's order (the "xla" entry of SimplifyPipelines): call-inliner, which XLA runs just before
// its group, then the passes of the group of xla/service/cpu/cpu_compiler.cc's
// CreateSimplificationPipeline (at XLACommit) that never grow a TPU program, in XLA's
// order — algsimp, sort-simplifier, dce, zero-sized-hlo-elimination, tuple-simplifier,
// while-loop-constant-sinking, while-loop-simplifier, dce, reshape-mover,
// constant-folding, conditional-simplifier — then this compiler's own passes,
// broadcast-sinking, transpose-folding, slice-sinker, pad-add-to-concat and cse, inside
// the same fixed point. Left out of XLA's group: gather-expander (a TPU emits gathers;
// it grows graphsage_tf by 2 ops) and while-loop-invariant-code-motion (Expands: it
// grows qwen3_14b_prefill by 5 ops, while it shrinks mixtral_8x7b_train_step by 49).
// XLA runs transpose-folding and cse once after its groups; run once there instead of
// inside the fixed point they leave 1 op more on four convdraw programs and 6 on
// mixtral_8x7b_train_step (docs/compiler.md, "The simplification group in XLA's order").
// None of these passes grows the op count. dce is listed twice, as in XLA's group (the
// pipeline entry declares it in Repeats).
func XLAOrderPasses() []Pass {
	ps := []Pass{callInliner()}
	for _, p := range xlaSimplificationGroup() {
		if p.Name != "gather-expander" && p.Name != "while-loop-invariant-code-motion" { // may grow a TPU program
			ps = append(ps, p)
		}
	}
	return append(ps, broadcastSinking(), transposeFolding(), sliceSinker(), padAddToConcat(), cse())
}

// SimplifyPipeline is a named simplification group of the compile pipeline: Passes
// returns one iteration of it, which the compiler runs to a fixed point. Repeats names
// the passes it lists more than once per iteration on purpose (XLA's group runs dce
// twice); the compiler's pass-list check (compiler.CheckPasses) refuses any other
// repeated name, and a name in Repeats that Passes lists once.
type SimplifyPipeline struct {
	Name    string
	Doc     string
	Passes  func() []Pass
	Repeats []string
}

// DefaultSimplifyPipeline names the compile pipeline's default simplification group,
// the first of SimplifyPipelines.
const DefaultSimplifyPipeline = "xla"

// SimplifyPipelines lists the compile pipeline's simplification groups, the default
// (DefaultSimplifyPipeline) first: "xla" (XLAOrderPasses) and "legacy" (LegacyPasses,
// the compile pipeline's own order, the default before issue 36).
func SimplifyPipelines() []SimplifyPipeline {
	return []SimplifyPipeline{
		{Name: DefaultSimplifyPipeline, Doc: "XLA's CPU simplification order, then this compiler's own passes: " + passNames(XLAOrderPasses()),
			Passes: XLAOrderPasses, Repeats: []string{"dce"}},
		{Name: "legacy", Doc: "the compile pipeline's own order, the default before XLA's: " + passNames(LegacyPasses()), Passes: LegacyPasses},
	}
}

// SimplifyPipelineNames lists the names of SimplifyPipelines in order.
func SimplifyPipelineNames() []string {
	var ns []string
	for _, p := range SimplifyPipelines() {
		ns = append(ns, p.Name)
	}
	return ns
}

// LookupSimplifyPipeline returns the simplification group called name; an unknown name
// is an error listing the valid ones.
func LookupSimplifyPipeline(name string) (SimplifyPipeline, error) {
	for _, p := range SimplifyPipelines() {
		if p.Name == name {
			return p, nil
		}
	}
	return SimplifyPipeline{}, fmt.Errorf("opt: no simplification pipeline named %q (pipelines: %s)", name, strings.Join(SimplifyPipelineNames(), ", "))
}

// Default returns the compile pipeline's default simplification group as one pass,
// "simplify": XLAOrderPasses run in order repeatedly until an iteration changes nothing
// (a fixed point). It fails, with an error wrapping ErrNoFixedPoint, if iteration
// DefaultMaxIterations still changed the module.
func Default() Pass {
	passes := XLAOrderPasses()
	return Pass{Name: "simplify", Doc: "the default pipeline (" + passNames(passes) + ") iterated to a fixed point",
		Run: func(m *hlo.Module) (bool, error) {
			n, err := RunToFixedPoint(m, passes, DefaultMaxIterations)
			return n > 1 || err != nil, err
		}}
}

func passNames(ps []Pass) string {
	var ns []string
	for _, p := range ps {
		ns = append(ns, p.Name)
	}
	return strings.Join(ns, ", ")
}

// ErrNoFixedPoint is wrapped by RunToFixedPoint's error when the iteration cap is hit
// while passes still change the module.
var ErrNoFixedPoint = errors.New("no fixed point")

// Run applies passes to m once each, in order, and reports whether any changed it.
func Run(m *hlo.Module, passes ...Pass) (bool, error) {
	changed := false
	for _, p := range passes {
		c, err := p.Run(m)
		changed = changed || c
		if err != nil {
			return changed, err
		}
	}
	return changed, nil
}

// RunToFixedPoint applies passes in order, repeatedly, until one whole iteration changes
// nothing, and returns the number of iterations run (the last one changed nothing). It
// returns an error wrapping ErrNoFixedPoint when maxIter iterations all changed m.
func RunToFixedPoint(m *hlo.Module, passes []Pass, maxIter int) (int, error) {
	n, err := FixedPoint(maxIter, func(int) (bool, error) { return Run(m, passes...) })
	if errors.Is(err, ErrNoFixedPoint) {
		err = fmt.Errorf("opt: passes %s on %s: %w", passNames(passes), m.Name, err)
	}
	return n, err
}

// FixedPoint is the fixed-point loop of every pass pipeline (RunToFixedPoint, the
// compiler's simplification group): it calls iteration(1), iteration(2), ... until one
// reports no change and returns the number of iterations run (the last one changed
// nothing). An iteration's error is returned as "iteration N: ...". When maxIter
// iterations all changed, the error wraps ErrNoFixedPoint.
func FixedPoint(maxIter int, iteration func(it int) (changed bool, err error)) (int, error) {
	for it := 1; it <= maxIter; it++ {
		changed, err := iteration(it)
		if err != nil {
			return it, fmt.Errorf("iteration %d: %w", it, err)
		}
		if !changed {
			return it, nil
		}
	}
	return maxIter, fmt.Errorf("still changing after %d iterations: %w", maxIter, ErrNoFixedPoint)
}

// OpCount is the size measure the passes reduce (and the pass-ordering gym rewards): the
// number of instructions that are not parameters in the entry computation, where each
// call and while instruction also counts the instructions of the computations it runs
// (a call's callee at every call site; a while's condition and body once per while
// instruction, not per iteration), recursively. Reducers (to_apply), fusion bodies, sort
// comparators and conditional branches are part of the instruction that uses them and
// are not counted separately; a fusion counts as one op.
func OpCount(m *hlo.Module) int {
	if m == nil || m.Entry == nil {
		return 0
	}
	memo := map[*hlo.Computation]int{}
	var count func(c *hlo.Computation) int
	count = func(c *hlo.Computation) int {
		if n, ok := memo[c]; ok {
			return n
		}
		memo[c] = 0 // guards malformed recursive call graphs
		n := 0
		for _, in := range c.Instructions {
			if in.Opcode == hlo.OpParameter {
				continue
			}
			n++
			switch in.Opcode {
			case hlo.OpCall:
				if in.Calls != nil && !in.Calls.IsFusion {
					n += count(in.Calls)
				}
			case hlo.OpWhile:
				if in.Condition != nil {
					n += count(in.Condition)
				}
				if in.Body != nil {
					n += count(in.Body)
				}
			}
		}
		memo[c] = n
		return n
	}
	return count(m.Entry)
}
