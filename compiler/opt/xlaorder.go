package opt

import (
	"fmt"
	"slices"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// XLACommit is the openxla/xla commit whose CPU pipeline XLAPipeline follows
// (xla/service/cpu/cpu_compiler.cc, CpuCompiler::RunHloPassesThroughLayoutAssn and
// CreateSimplificationPipeline).
const XLACommit = "353a6d6c92ef866744f0b8c855c1117a27957630"

// Stage is one step of a pipeline: its passes run once each in order, or, with Fix,
// repeatedly until an iteration changes nothing (XLA's HloPassFix), at most
// DefaultMaxIterations times.
type Stage struct {
	Name   string
	Passes []Pass
	Fix    bool
}

// XLAPipeline is the target-independent part of XLA's CPU pipeline up to layout
// assignment, in XLA's order, with XLA's defaults at XLACommit (fusion emitters on:
// xla_cpu_use_fusion_emitters defaults to true, xla/debug_options_flags.cc, and
// kFusionEmitterScatterEnabled is true), restricted to the passes this package has (the
// ones it lacks are listed below and in docs/gym.md):
//
//	expand:          result-caster, dot-decomposer, operand-upcaster,
//	                 zero-sized-hlo-elimination, map-inliner, comparison-expander,
//	                 call-inliner, batch-dot-simplification, dot-decomposer,
//	                 batchnorm-expander, logistic-expander
//	simplification:  (fixed point) algsimp, sort-simplifier, dce, gather-expander,
//	                 zero-sized-hlo-elimination, while-loop-invariant-code-motion,
//	                 tuple-simplifier, while-loop-constant-sinking,
//	                 while-loop-simplifier, dce, reshape-mover, constant-folding,
//	                 conditional-simplifier
//	scatter:         scatter-expander-simple (kEliminateSimpleScatters: only scatters
//	                 of one index vector become a loop), scatter-simplifier
//	post_scatter_expansion_simplification: the same group again (fixed point)
//	finish:          transpose-folding, cse, optimization-barrier-expander,
//	                 tuple-simplifier
//
// The scatter stage is cpu_compiler.cc's with is_fusion_emitters true: multi-index
// scatters (a training step's embedding gradients) stay scatters, in XLA's simplified
// form. With fusion emitters off XLA runs scatter-expander (kEliminateAllScatters,
// every scatter a loop) there instead; that pass stays a gym action.
//
// XLA's passes not here: before the group, batched-gather-scatter-normalizer,
// rng-expander, dynamic-index-splitter, conditional-to-select, topk-decomposer, the
// linear-algebra expanders, all-to-all and stochastic-convert decomposers,
// float-normalization, convolution-group-converter, conditional-canonicalizer,
// dynamic-padder, conv-canonicalization and change-op-data-type; in the group,
// gather-simplifier (run with fusion emitters on) and tree-reduction-rewriter (CPU
// specific); before scatter-expander-simple, select-and-scatter-expander; after the
// groups, bitcast-dtypes-expander and topk-rewriter. XLA's CSE runs once, after
// transpose-folding, not in the fixed-point group. (The group's order is
// cpu_compiler.cc's CreateSimplificationPipeline; comparison-expander follows
// map-inliner and precedes call-inliner in RunHloPassesThroughLayoutAssn.)
func XLAPipeline() []Stage {
	group := xlaSimplificationGroup
	return []Stage{
		{Name: "expand", Passes: []Pass{resultCaster(), dotDecomposer(), operandUpcaster(), zeroSizedElimination(),
			mapInliner(), comparisonExpander(), callInliner(), batchDotSimplification(), dotDecomposer(), batchNormExpander(), logisticExpander()}},
		{Name: "simplification", Passes: group(), Fix: true},
		{Name: "scatter", Passes: []Pass{scatterExpanderSimple(), scatterSimplifier()}},
		{Name: "post_scatter_expansion_simplification", Passes: group(), Fix: true},
		{Name: "finish", Passes: []Pass{transposeFolding(), cse(), optimizationBarrierExpander(), tupleSimplifier()}},
	}
}

// Canonicalizers are the passes of XLAPipeline that bring dots and scatters into the
// canonical forms XLA's CPU and GPU emitters require, not into fewer or cheaper ops:
// dot-decomposer (dots as [batch, M, K]·[batch, K, N]: cpu_compiler.cc runs it because
// its dot implementation strategy "relies on the canonical form of dots", and
// gpu_compiler.cc runs it too) and scatter-simplifier (scatters in XLA's simplified
// form). A TPU compiler emits dot_general and scatter in their general forms.
var canonicalizers = []string{"dot-decomposer", "scatter-simplifier"}

// Canonicalizers returns the names of the passes XLAPipelineWithoutCanonicalization
// leaves out (a copy).
func Canonicalizers() []string { return slices.Clone(canonicalizers) }

// XLAPipelineWithoutCanonicalization is XLAPipeline without its Canonicalizers, every
// other pass in place: the yardstick that separates what an order gains by simplifying
// from what it gains by leaving dots and scatters in their general forms.
func XLAPipelineWithoutCanonicalization() []Stage {
	return WithoutPasses(XLAPipeline(), canonicalizers...)
}

// WithoutPasses returns a copy of stages with every run of the passes named removed,
// the other passes in their places.
func WithoutPasses(stages []Stage, names ...string) []Stage {
	out := make([]Stage, len(stages))
	for i, s := range stages {
		s.Passes = slices.DeleteFunc(slices.Clone(s.Passes), func(p Pass) bool { return slices.Contains(names, p.Name) })
		out[i] = s
	}
	return out
}

// xlaSimplificationGroup is one iteration of XLA's CPU simplification group
// (cpu_compiler.cc's CreateSimplificationPipeline at XLACommit), restricted to the passes
// this package has, in XLA's order: XLAPipeline runs it twice to a fixed point, and the
// compile pipeline's default group (XLAOrderPasses) is built from it.
func xlaSimplificationGroup() []Pass {
	return []Pass{algsimp(), sortSimplifier(), dce(), gatherExpander(), zeroSizedElimination(),
		whileLoopInvariantCodeMotion(), tupleSimplifier(), whileLoopConstantSinking(),
		whileLoopSimplifier(), dce(), reshapeMover(), constantFolding(), conditionalSimplifier()}
}

// RunStages runs a pipeline on m and returns the number of pass runs it took (a
// fixed-point stage counts every pass of every iteration, the last one changing
// nothing). after, when not nil, is called after every pass run (the verifier in
// tests, a recorder in the gym).
func RunStages(m *hlo.Module, stages []Stage, after func(p Pass) error) (runs int, err error) {
	runOnce := func(ps []Pass) (bool, error) {
		changed := false
		for _, p := range ps {
			c, err := p.Run(m)
			runs++
			changed = changed || c
			if err != nil {
				return changed, err
			}
			if after != nil {
				if err := after(p); err != nil {
					return changed, fmt.Errorf("after %s: %w", p.Name, err)
				}
			}
		}
		return changed, nil
	}
	for _, s := range stages {
		if !s.Fix {
			if _, err := runOnce(s.Passes); err != nil {
				return runs, fmt.Errorf("opt: stage %s: %w", s.Name, err)
			}
			continue
		}
		if _, err := FixedPoint(DefaultMaxIterations, func(int) (bool, error) { return runOnce(s.Passes) }); err != nil {
			return runs, fmt.Errorf("opt: stage %s on %s: %w", s.Name, m.Name, err)
		}
	}
	return runs, nil
}

// XLADefault is XLAPipeline as one pass, "xla-default".
func XLADefault() Pass {
	return Pass{Name: "xla-default", Doc: "XLA's CPU pipeline order (expanders, two fixed-point simplification groups, transpose-folding, cse)",
		Expands: true,
		Run: func(m *hlo.Module) (bool, error) {
			before := m.String()
			_, err := RunStages(m, XLAPipeline(), nil)
			return err != nil || m.String() != before, err
		}}
}
