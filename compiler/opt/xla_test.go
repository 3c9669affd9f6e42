package opt

import (
	"strconv"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/zoo"
)

// xlaCase is a case taken from XLA's own test of the pass (the file and test named in
// from), with XLA's shapes scaled down where the reference evaluator would take long
// (the structure and dimension numbers are XLA's). eval=false for ops the reference
// evaluator lacks (map, batch-norm, collectives): those are checked structurally.
type xlaCase struct {
	pass, from string
	src        string
	want       string // expr of the entry root afterwards ("" = unchanged)
	ops        int
	eval       bool
}

var xlaCases = []xlaCase{
	{"logistic-expander", "logistic_expander_test.cc ExpandWith", `
  %p = f32[2,3] parameter(0)
  ROOT %r = f32[2,3] logistic(%p)`,
		"divide(broadcast[](1), add(broadcast[](1), exponential(negate(p))))", 6, true},
	// dot_decomposer_test.cc (dimensions scaled down: 64,63,512 → 4,3,5 etc.)
	{"dot-decomposer", "dot_decomposer_test.cc CanonicalizeMultipleNonContractingDims", `
  %p0 = f32[4,3,5] parameter(0)
  %p1 = f32[5,5] parameter(1)
  ROOT %dot = f32[4,3,5] dot(%p0, %p1), lhs_contracting_dims={2}, rhs_contracting_dims={0}`,
		"reshape[4 3 5](dot[][1][][0](reshape[12 5](p0), reshape[5 5](p1)))", 4, true},
	{"dot-decomposer", "dot_decomposer_test.cc DontCanonicalizeLhsContractingDim0AndRhsContractingDim1", `
  %p0 = f32[5,4] parameter(0)
  %p1 = f32[6,5] parameter(1)
  ROOT %dot = f32[4,6] dot(%p0, %p1), lhs_contracting_dims={0}, rhs_contracting_dims={1}`,
		"", 1, true},
	{"dot-decomposer", "dot_decomposer_test.cc TransposeContractingDimsUponCanonicalization", `
  %p0 = f32[5,3,2] parameter(0)
  %p1 = f32[4,5] parameter(1)
  ROOT %dot = f32[3,2,4] dot(%p0, %p1), lhs_contracting_dims={0}, rhs_contracting_dims={1}`,
		"reshape[3 2 4](dot[][1][][0](reshape[6 5](transpose[1 2 0](p0)), reshape[5 4](transpose[1 0](p1))))", 6, true},
	{"dot-decomposer", "dot_decomposer_test.cc DontCanonicalizeIfNoNoncontractingDims", `
  %p0 = f32[6,4] parameter(0)
  %p1 = f32[6,4] parameter(1)
  ROOT %dot = f32[6] dot(%p0, %p1), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={1}`,
		"", 1, true},
	{"dot-decomposer", "dot_decomposer_test.cc DontAddLhsNonContractingDimIfOne", `
  %p0 = f32[3,4] parameter(0)
  %p1 = f32[3,4,2,1] parameter(1)
  ROOT %dot = f32[3,2,1] dot(%p0, %p1), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={1}`,
		"reshape[3 2 1](dot[0][1][0][1](reshape[3 4](p0), reshape[3 4 2](p1)))", 4, true},
	{"dot-decomposer", "dot_decomposer_test.cc CanonicalizeBatchDims", `
  %p0 = f32[3,2,4,5] parameter(0)
  %p1 = f32[6,2,5,4] parameter(1)
  ROOT %dot = f32[4,5,3,6] dot(%p0, %p1), lhs_batch_dims={2,3}, lhs_contracting_dims={1}, rhs_batch_dims={3,2}, rhs_contracting_dims={1}`,
		"reshape[4 5 3 6](dot[0 1][3][0 1][2](reshape[4 5 3 2](transpose[2 3 0 1](p0)), reshape[4 5 2 6](transpose[3 2 1 0](p1))))", 6, true},
	// dot_merger_test.cc (200/300/100/50 → 2/3/4/5)
	{"dot-merger", "dot_merger_test.cc MergeLHS (the rhs is shared)", `
  %lhs0 = f32[2,4] parameter(0)
  %lhs1 = f32[3,4] parameter(1)
  %rhs = f32[4,5] parameter(2)
  %dot0 = f32[2,5] dot(%lhs0, %rhs), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %dot1 = f32[3,5] dot(%lhs1, %rhs), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %tuple = (f32[2,5], f32[3,5]) tuple(%dot0, %dot1)`,
		"tuple(slice[0:2:1][0:5:1](dot[][1][][0](concatenate[0](lhs0, lhs1), rhs)), slice[2:5:1][0:5:1](dot[][1][][0](concatenate[0](lhs0, lhs1), rhs)))", 5, true},
	{"dot-merger", "dot_merger_test.cc MergeRHS (the lhs is shared)", `
  %lhs = f32[2,4] parameter(0)
  %rhs0 = f32[4,5] parameter(1)
  %rhs1 = f32[4,3] parameter(2)
  %dot0 = f32[2,5] dot(%lhs, %rhs0), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %dot1 = f32[2,3] dot(%lhs, %rhs1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %tuple = (f32[2,5], f32[2,3]) tuple(%dot0, %dot1)`,
		"tuple(slice[0:2:1][0:5:1](dot[][1][][0](lhs, concatenate[1](rhs0, rhs1))), slice[0:2:1][5:8:1](dot[][1][][0](lhs, concatenate[1](rhs0, rhs1))))", 5, true},
	{"dot-merger", "dot_merger_test.cc NoMergeDataDependency", `
  %lhs = f32[4,4] parameter(0)
  %dot0 = f32[4,4] dot(%lhs, %lhs), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %dot1 = f32[4,4] dot(%lhs, %dot0), lhs_contracting_dims={1}, rhs_contracting_dims={0}`,
		"", 2, true},
	{"dot-merger", "dot_merger_test.cc (dots with different dimension numbers stay apart)", `
  %lhs = f32[4,4] parameter(0)
  %rhs0 = f32[4,5] parameter(1)
  %rhs1 = f32[4,5] parameter(2)
  %dot0 = f32[4,5] dot(%lhs, %rhs0), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %dot1 = f32[4,5] dot(%lhs, %rhs1), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ROOT %tuple = (f32[4,5], f32[4,5]) tuple(%dot0, %dot1)`,
		"", 3, true},
	{"dot-merger", "dot_merger_test.cc MergeWithUnsortedBatchDims (not merged)", `
  %lhs0 = f32[2,3,4,5] parameter(0)
  %lhs1 = f32[2,3,6,5] parameter(1)
  %rhs = f32[2,3,5,2] parameter(2)
  %dot0 = f32[3,2,4,2] dot(%lhs0, %rhs), lhs_batch_dims={1,0}, rhs_batch_dims={1,0}, lhs_contracting_dims={3}, rhs_contracting_dims={2}
  %dot1 = f32[3,2,6,2] dot(%lhs1, %rhs), lhs_batch_dims={1,0}, rhs_batch_dims={1,0}, lhs_contracting_dims={3}, rhs_contracting_dims={2}
  ROOT %tuple = (f32[3,2,4,2], f32[3,2,6,2]) tuple(%dot0, %dot1)`,
		"", 3, true},
	{"dot-merger", "dot_merger_test.cc NoMergeMultipleContractingDims", `
  %lhs0 = f32[3,3,3] parameter(0)
  %lhs1 = f32[3,3,3] parameter(1)
  %rhs = f32[3,3,3] parameter(2)
  %dot0 = f32[3,3] dot(%lhs0, %rhs), lhs_contracting_dims={0,1}, rhs_contracting_dims={0,1}
  %dot1 = f32[3,3] dot(%lhs1, %rhs), lhs_contracting_dims={0,1}, rhs_contracting_dims={0,1}
  ROOT %tuple = (f32[3,3], f32[3,3]) tuple(%dot0, %dot1)`,
		"", 3, true},
	// operand_upcaster_test.cc: a wider result type converts the operands; equal types stay
	{"operand-upcaster", "operand_upcaster.cc (s8 x s8 → s32: converts)", `
  %p0 = s8[2,3] parameter(0)
  %p1 = s8[3,4] parameter(1)
  ROOT %dot = s32[2,4] dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}`,
		"dot[][1][][0](converts32(p0), converts32(p1))", 3, true},
	{"operand-upcaster", "operand_upcaster.cc (bf16 x bf16 → f32: converts)", `
  %p0 = bf16[2,3] parameter(0)
  %p1 = bf16[3,4] parameter(1)
  ROOT %dot = f32[2,4] dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}`,
		"dot[][1][][0](convertf32(p0), convertf32(p1))", 3, true},
	{"operand-upcaster", "operand_upcaster.cc (equal types: none)", `
  %p0 = f32[2,3] parameter(0)
  %p1 = f32[3,4] parameter(1)
  ROOT %dot = f32[2,4] dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}`,
		"", 1, true},
	// result_caster_test.cc: a narrower result type is computed wide and converted
	{"result-caster", "result_caster.cc (f32 x f32 → bf16: dot in f32, convert)", `
  %p0 = f32[2,3] parameter(0)
  %p1 = f32[3,4] parameter(1)
  ROOT %dot = bf16[2,4] dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}`,
		"convertbf16(dot[][1][][0](p0, p1))", 2, true},
	{"result-caster", "result_caster.cc (s8 x s8 → s32: left alone)", `
  %p0 = s8[2,3] parameter(0)
  %p1 = s8[3,4] parameter(1)
  ROOT %dot = s32[2,4] dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}`,
		"", 1, true},
	// map_inliner_test.cc
	{"map-inliner", "map_inliner_test.cc MapMax", `HloModule m

%max_f32 {
  %lhs = f32[] parameter(0)
  %rhs = f32[] parameter(1)
  ROOT %m = f32[] maximum(%lhs, %rhs)
}

ENTRY %main {
  %a = f32[4] parameter(0)
  %b = f32[4] parameter(1)
  ROOT %map = f32[4] map(%a, %b), dimensions={0}, to_apply=%max_f32
}
`, "maximum(a, b)", 1, false},
	{"map-inliner", "map_inliner.cc (computations returning a parameter)", `HloModule m

%second {
  %lhs = f32[] parameter(0)
  %rhs = f32[] parameter(1)
  ROOT %r = f32[] negate(%rhs)
}

%param1 {
  %lhs = f32[] parameter(0)
  ROOT %rhs = f32[] parameter(1)
}

ENTRY %main {
  %a = f32[4] parameter(0)
  %b = f32[4] parameter(1)
  %m1 = f32[4] map(%a, %b), dimensions={0}, to_apply=%param1
  ROOT %m2 = f32[4] map(%m1, %a), dimensions={0}, to_apply=%second
}
`, "negate(a)", 1, false},
	{"map-inliner", "map_inliner.cc (computation returning a constant)", `HloModule m

%two {
  %lhs = f32[] parameter(0)
  ROOT %c = f32[] constant(2)
}

ENTRY %main {
  %a = f32[4] parameter(0)
  ROOT %map = f32[4] map(%a), dimensions={0}, to_apply=%two
}
`, "broadcast[](2)", 2, false},
	{"optimization-barrier-expander", "optimization_barrier_expander.cc (every barrier goes)", `
  %p = f32[4] parameter(0)
  %b = f32[4] opt-barrier(%p)
  ROOT %n = f32[4] negate(%b)`,
		"negate(p)", 1, true},
	{"real-imag-expander", "real_imag_expander_test.cc RealWithNonComplexInput and the imag counterpart", `
  %p = f32[4] parameter(0)
  %r = f32[4] real(%p)
  %i = f32[4] imag(%p)
  ROOT %a = f32[4] add(%r, %i)`,
		"add(p, broadcast[](0))", 3, false},
	// batchnorm_expander_test.cc BatchNormInference: the shape of the expansion
	{"batchnorm-expander", "batchnorm_expander.cc HandleBatchNormInference", `
  %x = f32[2,2,2,2] parameter(0)
  %scale = f32[2] parameter(1)
  %offset = f32[2] parameter(2)
  %mean = f32[2] parameter(3)
  %var = f32[2] parameter(4)
  ROOT %bn = f32[2,2,2,2] batch-norm-inference(%x, %scale, %offset, %mean, %var), epsilon=0.001, feature_index=3`,
		"add(multiply(x, broadcast[3](multiply(scale, rsqrt(add(var, broadcast[](0.001)))))), broadcast[3](subtract(offset, multiply(mean, multiply(scale, rsqrt(add(var, broadcast[](0.001))))))))", 12, false},
	// batch_dot_simplification_test.cc ElideSingleDegenerateBatchDotDim_VectorVector
	{"batch-dot-simplification", "batch_dot_simplification.cc (a degenerate batch dimension)", `
  %a = f32[1,3,5] parameter(0)
  %b = f32[1,5,4] parameter(1)
  ROOT %dot = f32[1,3,4] dot(%a, %b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}`,
		"reshape[1 3 4](dot[][1][][0](reshape[3 5](a), reshape[5 4](b)))", 4, true},
	{"broadcast-canonicalizer", "broadcast_canonicalizer.cc (unsorted dimensions)", `
  %p = f32[3,2] parameter(0)
  ROOT %b = f32[2,4,3] broadcast(%p), dimensions={2,0}`,
		"broadcast[0 2](transpose[1 0](p))", 2, true},
	{"convert-mover", "convert_mover_test.cc MoveDownThroughConcat", `
  %a = bf16[2] parameter(0)
  %b = bf16[3] parameter(1)
  %ca = f32[2] convert(%a)
  %cb = f32[3] convert(%b)
  ROOT %cat = f32[5] concatenate(%ca, %cb), dimensions={0}`,
		"convertf32(concatenate[0](a, b))", 2, true},
	{"convert-mover", "convert_mover.cc (a narrowing convert rises above a reshape)", `
  %a = f32[2,3] parameter(0)
  %r = f32[6] reshape(%a)
  ROOT %c = bf16[6] convert(%r)`,
		"reshape[6](convertbf16(a))", 2, true},
	{"convert-mover", "convert_mover.cc (converts from different types stay)", `
  %a = bf16[2] parameter(0)
  %b = f16[3] parameter(1)
  %ca = f32[2] convert(%a)
  %cb = f32[3] convert(%b)
  ROOT %cat = f32[5] concatenate(%ca, %cb), dimensions={0}`,
		"", 3, true},
	// all_reduce_combiner_test.cc CombineAllReduces: independent all-reduces with the
	// same reduction become one tuple all-reduce
	{"all-reduce-combiner", "all_reduce_combiner.cc (independent all-reduces combine)", `HloModule m

%add {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

ENTRY %main {
  %p0 = f32[4] parameter(0)
  %p1 = f32[8] parameter(1)
  %ar0 = f32[4] all-reduce(%p0), replica_groups={}, to_apply=%add
  %ar1 = f32[8] all-reduce(%p1), replica_groups={}, to_apply=%add
  ROOT %t = (f32[4], f32[8]) tuple(%ar0, %ar1)
}
`, "tuple(get-tuple-element0(all-reduce(p0, p1)), get-tuple-element1(all-reduce(p0, p1)))", 4, false},
	{"all-reduce-combiner", "all_reduce_combiner.cc (dependent all-reduces do not)", `HloModule m

%add {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

ENTRY %main {
  %p0 = f32[4] parameter(0)
  %ar0 = f32[4] all-reduce(%p0), replica_groups={}, to_apply=%add
  %n = f32[4] negate(%ar0)
  ROOT %ar1 = f32[4] all-reduce(%n), replica_groups={}, to_apply=%add
}
`, "", 3, false},
	{"all-gather-combiner", "all_gather_combiner.cc (independent all-gathers combine)", `
  %p0 = f32[2] parameter(0)
  %p1 = f32[3] parameter(1)
  %ag0 = f32[4] all-gather(%p0), replica_groups={}, dimensions={0}
  %ag1 = f32[6] all-gather(%p1), replica_groups={}, dimensions={0}
  ROOT %t = (f32[4], f32[6]) tuple(%ag0, %ag1)`,
		"tuple(get-tuple-element0(all-gather(p0, p1)), get-tuple-element1(all-gather(p0, p1)))", 4, false},
}

// flattenCase is flatten_call_graph_test.cc's shape of case: one body computation run
// by two while loops; after the pass each loop has its own.
const flattenCase = `HloModule m

%body {
  %p = (s32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %one = s32[] constant(1)
  %i1 = s32[] add(%i, %one)
  %x = f32[4] get-tuple-element(%p), index=1
  %y = f32[4] exponential(%x)
  ROOT %t = (s32[], f32[4]) tuple(%i1, %y)
}

%cond {
  %p = (s32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %n = s32[] constant(2)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

ENTRY %main {
  %x = f32[4] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[4]) tuple(%zero, %x)
  %w1 = (s32[], f32[4]) while(%init), condition=%cond, body=%body
  %r1 = f32[4] get-tuple-element(%w1), index=1
  %init2 = (s32[], f32[4]) tuple(%zero, %r1)
  %w2 = (s32[], f32[4]) while(%init2), condition=%cond, body=%body
  ROOT %r = f32[4] get-tuple-element(%w2), index=1
}
`

// TestFlattenCallGraph: the shared body and condition are cloned (flatten_call_graph.cc:
// one computation per sequential call site), the op count is unchanged, and a second
// run changes nothing.
func TestFlattenCallGraph(t *testing.T) {
	m := parseHLO(t, flattenCase)
	out, changed := runChecked(t, mustLookup(t, "flatten-call-graph"), m)
	if !changed || len(out.Computations) != len(m.Computations)+2 {
		t.Fatalf("changed=%v, %d computations (was %d), want two clones:\n%s", changed, len(out.Computations), len(m.Computations), out)
	}
	if OpCount(out) != OpCount(m) {
		t.Errorf("OpCount %d → %d, want unchanged", OpCount(m), OpCount(out))
	}
	w1, w2 := out.Entry.Lookup("w1"), out.Entry.Lookup("w2")
	if w1.Body == w2.Body || w1.Condition == w2.Condition {
		t.Error("the loops still share a computation")
	}
	if _, again := runStructural(t, mustLookup(t, "flatten-call-graph"), out); again {
		t.Error("a second run changed the module")
	}
}

// TestXLAPassCases runs each case's pass with the hlo verifier after it and checks the
// root XLA's test expects (or no change), the op count and, where the reference
// evaluator covers the ops, that the value is unchanged on random inputs.
func TestXLAPassCases(t *testing.T) {
	for _, c := range xlaCases {
		t.Run(c.pass+"/"+c.from, func(t *testing.T) {
			src := c.src
			if !strings.HasPrefix(src, "HloModule") {
				src = "HloModule " + moduleName(c.from) + "\n\nENTRY %main {\n" + src + "\n}\n"
			}
			m := parseHLO(t, src)
			p := mustLookup(t, c.pass)
			var out *hlo.Module
			var changed bool
			if c.eval {
				out, changed = runChecked(t, p, m)
			} else {
				out, changed = runStructural(t, p, m)
			}
			want := c.want
			if want == "" {
				want = expr(m.Entry.Root)
				if changed {
					t.Errorf("%s changed a module XLA's test leaves alone:\n%s", c.pass, out)
				}
			} else if !changed {
				t.Errorf("%s reported no change", c.pass)
			}
			if got := expr(out.Entry.Root); got != want {
				t.Errorf("root = %s\nwant   %s\nmodule:\n%s", got, want, out)
			}
			if got := OpCount(out); got != c.ops {
				t.Errorf("OpCount = %d, want %d\nmodule:\n%s", got, c.ops, out)
			}
		})
	}
}

// TestXLAPassesCovered: every pass of All() beyond the 14 of LegacyPasses has a case
// above, and All() has at least 30 passes.
func TestXLAPassesCovered(t *testing.T) {
	if n := len(All()); n < 30 {
		t.Errorf("%d passes, want at least 30", n)
	}
	has := map[string]bool{}
	for _, c := range xlaCases {
		has[c.pass] = true
	}
	has["while-loop-unroller"] = true // TestWhileLoopUnroller
	has["flatten-call-graph"] = true  // TestFlattenCallGraph
	has["scatter-expander"] = true    // TestScatterExpander
	for _, p := range All()[len(LegacyPasses()):] {
		if !has[p.Name] {
			t.Errorf("pass %s has no case from XLA's tests", p.Name)
		}
	}
}

// unrollLoop is the module of while_loop_unroller_test.cc's MakeModuleWithSimpleLoop,
// with the trip count as a parameter: the counter runs from 0 while below n.
func unrollLoop(n int) string {
	return strings.Replace(`HloModule m

%body {
  %p = (s32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %one = s32[] constant(1)
  %i1 = s32[] add(%i, %one)
  %x = f32[4] get-tuple-element(%p), index=1
  %y = f32[4] exponential(%x)
  ROOT %t = (s32[], f32[4]) tuple(%i1, %y)
}

%cond {
  %p = (s32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

ENTRY %main {
  %x = f32[4] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[4]) tuple(%zero, %x)
  %w = (s32[], f32[4]) while(%init), condition=%cond, body=%body
  ROOT %r = f32[4] get-tuple-element(%w), index=1
}
`, "constant(3)", "constant("+strconv.Itoa(n)+")", 1)
}

// TestWhileLoopUnroller: a loop of 3 trips (while_loop_unroller_test.cc
// SimpleLoopUnroll) becomes three copies of its body; tuple-simplifier and dce then
// leave exp(exp(exp(x))). A loop beyond XLA's trip-count threshold stays.
func TestWhileLoopUnroller(t *testing.T) {
	p := mustLookup(t, "while-loop-unroller")
	out, changed := runChecked(t, p, parseHLO(t, unrollLoop(3)))
	if !changed {
		t.Fatal("the loop was not unrolled")
	}
	for _, in := range out.Entry.Instructions {
		if in.Opcode == hlo.OpWhile {
			t.Fatalf("a while is left:\n%s", out)
		}
	}
	if _, err := Run(out, mustLookup(t, "tuple-simplifier"), mustLookup(t, "dce")); err != nil {
		t.Fatal(err)
	}
	if got, want := expr(out.Entry.Root), "exponential(exponential(exponential(x)))"; got != want {
		t.Errorf("after tuple-simplifier and dce: %s, want %s", got, want)
	}
	_, changed = runStructural(t, p, parseHLO(t, unrollLoop(WhileUnrollMaxTrips+1)))
	if changed {
		t.Errorf("a loop of %d trips was unrolled (threshold %d)", WhileUnrollMaxTrips+1, WhileUnrollMaxTrips)
	}
}

// TestPassesDoNotCommute: on a real zoo program (GPT-2 tiny's training step) the order
// of two passes changes the result: dot-decomposer canonicalizes dots with transposes
// and reshapes that transpose-folding folds back into dimension numbers, and the
// reshapes it adds are what algsimp removes, so each pair leaves a different op count
// in the two orders. This is what gives a pass-ordering agent something to find.
func TestPassesDoNotCommute(t *testing.T) {
	m, err := zoo.Resolve("gpt2_tiny_s128_b8_train")
	if err != nil {
		t.Fatal(err)
	}
	for _, pair := range [][2]string{{"dot-decomposer", "transpose-folding"}, {"dot-decomposer", "algsimp"}} {
		a, b := mustLookup(t, pair[0]), mustLookup(t, pair[1])
		ab, ba := m.Clone(), m.Clone()
		for _, x := range []struct {
			m  *hlo.Module
			ps []Pass
		}{{ab, []Pass{a, b}}, {ba, []Pass{b, a}}} {
			for _, p := range x.ps {
				if _, err := p.Run(x.m); err != nil {
					t.Fatal(err)
				}
				if err := hlo.Verify(x.m); err != nil { // the verifier after every pass
					t.Fatalf("after %s: %v", p.Name, err)
				}
			}
		}
		if OpCount(ab) == OpCount(ba) {
			t.Errorf("%s then %s and the reverse both leave %d ops; the passes should not commute here", pair[0], pair[1], OpCount(ab))
		}
		t.Logf("%s, %s: %d ops; reversed: %d ops (from %d)", pair[0], pair[1], OpCount(ab), OpCount(ba), OpCount(m))
	}
}
