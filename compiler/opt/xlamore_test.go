package opt

import (
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// Cases for the passes of xlamore.go, from XLA's tests of them (appended to xlaCases so
// that TestXLAPassCases runs them and TestXLAPassesCovered counts them).
func init() {
	xlaCases = append(xlaCases,
		// while_loop_invariant_code_motion_test.cc (the init made a tuple instruction,
		// which this build's pass needs; the always-true condition as in XLA's test)
		xlaCase{"while-loop-invariant-code-motion", "while_loop_invariant_code_motion_test.cc HoistOneInvariantOperation", `HloModule HoistOneInvariantOperation

%body {
  %param = (s32[], s32[], s32[]) parameter(0)
  %gte_0 = s32[] get-tuple-element(%param), index=0
  %gte_1 = s32[] get-tuple-element(%param), index=1
  %add_result = s32[] add(%gte_0, %gte_1)
  ROOT %t = (s32[], s32[], s32[]) tuple(%gte_0, %gte_1, %add_result)
}

%always_true {
  %param.c = (s32[], s32[], s32[]) parameter(0)
  ROOT %true = pred[] constant(true)
}

ENTRY %main {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  %c = s32[] parameter(2)
  %init_value = (s32[], s32[], s32[]) tuple(%a, %b, %c)
  ROOT %while = (s32[], s32[], s32[]) while(%init_value), condition=%always_true, body=%body
}
`, "tuple(get-tuple-element0(while(tuple(a, b, c, add(a, b)))), get-tuple-element1(while(tuple(a, b, c, add(a, b)))), get-tuple-element2(while(tuple(a, b, c, add(a, b)))))", 12, false},
		xlaCase{"while-loop-invariant-code-motion", "while_loop_invariant_code_motion_test.cc DontHoistTriviallyLoopVaryingComputation", `HloModule DontHoistTriviallyLoopVaryingComputation

%body {
  %param = (s32[], s32[]) parameter(0)
  %gte_0 = s32[] get-tuple-element(%param), index=0
  %gte_1 = s32[] get-tuple-element(%param), index=1
  %add_result = s32[] add(%gte_0, %gte_1)
  ROOT %t = (s32[], s32[]) tuple(%add_result, %gte_1)
}

%always_true {
  %param.c = (s32[], s32[]) parameter(0)
  ROOT %true = pred[] constant(true)
}

ENTRY %main {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  %init_value = (s32[], s32[]) tuple(%a, %b)
  %while = (s32[], s32[]) while(%init_value), condition=%always_true, body=%body
  ROOT %r = s32[] get-tuple-element(%while), index=0
}
`, "", 8, false},
		// sort_simplifier_test.cc (64,8732 → 4,6; 64,87 → 4,5), with the value checked
		// (refSort)
		xlaCase{"sort-simplifier", "sort_simplifier_test.cc RemoveUnusedSortOperandArrayResult", `HloModule permutation_sort

%compare {
  %p.0.lhs = f32[] parameter(0)
  %p.0.rhs = f32[] parameter(1)
  %p.1.lhs = s32[] parameter(2)
  %p.1.rhs = s32[] parameter(3)
  ROOT %lt = pred[] compare(%p.0.lhs, %p.0.rhs), direction=LT
}

ENTRY %sort_computation {
  %keys = f32[4,6] parameter(0)
  %values = s32[4,6] parameter(1)
  %sort = (f32[4,6], s32[4,6]) sort(%keys, %values), dimensions={1}, to_apply=%compare
  ROOT %gte = f32[4,6] get-tuple-element(%sort), index=0
}
`, "sort(keys)", 1, true},
		xlaCase{"sort-simplifier", "sort_simplifier_test.cc RemoveUnusedSortOperandTuple", `HloModule permutation_sort

%compare {
  %p.0.lhs = f32[] parameter(0)
  %p.0.rhs = f32[] parameter(1)
  %p.1.lhs = s32[] parameter(2)
  %p.1.rhs = s32[] parameter(3)
  %p.2.lhs = u32[] parameter(4)
  %p.2.rhs = u32[] parameter(5)
  ROOT %lt = pred[] compare(%p.0.lhs, %p.0.rhs), direction=LT
}

ENTRY %sort_computation {
  %keys = f32[4,5] parameter(0)
  %values.0 = s32[4,5] parameter(1)
  %values.1 = u32[4,5] parameter(2)
  %sort = (f32[4,5], s32[4,5], u32[4,5]) sort(%keys, %values.0, %values.1), dimensions={1}, to_apply=%compare
  %gte.0 = f32[4,5] get-tuple-element(%sort), index=0
  %gte.1 = u32[4,5] get-tuple-element(%sort), index=2
  ROOT %tuple = (f32[4,5], u32[4,5]) tuple(%gte.0, %gte.1)
}
`, "tuple(get-tuple-element0(sort(keys, values.1)), get-tuple-element1(sort(keys, values.1)))", 4, true},
		xlaCase{"sort-simplifier", "sort_simplifier_test.cc DontRemoveUnusedSortKey", `HloModule permutation_sort

%compare {
  %p.0.lhs = f32[] parameter(0)
  %p.0.rhs = f32[] parameter(1)
  %p.1.lhs = s32[] parameter(2)
  %p.1.rhs = s32[] parameter(3)
  ROOT %lt = pred[] compare(%p.0.lhs, %p.0.rhs), direction=LT
}

ENTRY %sort_computation {
  %keys = f32[4,6] parameter(0)
  %values = s32[4,6] parameter(1)
  %sort = (f32[4,6], s32[4,6]) sort(%keys, %values), dimensions={1}, to_apply=%compare
  ROOT %gte = s32[4,6] get-tuple-element(%sort), index=1
}
`, "", 2, true},
		// gather_expander_test.cc (xla/service), with the value checked (the reference
		// evaluator's general gather, refGather). GatherIsBroadcast is also XLA's
		// tools/hlo_opt/tests/run_pass_with_input.hlo: batch dimensions on both sides of
		// the offset dimension, index_vector_dim equal to the indices' rank.
		xlaCase{"gather-expander", "gather_expander_test.cc EliminateSimpleGathersSkipsNontrivialGather", `
  %operand = s32[3,3] parameter(0)
  %indices = s32[2] parameter(1)
  ROOT %gather = s32[2,3] gather(%operand, %indices), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}`,
			"", 1, true},
		xlaCase{"gather-expander", "gather_expander_test.cc EliminateSimpleGathersRewritesTrivialGather", `
  %operand = s32[100] parameter(0)
  %indices = s32[1] parameter(1)
  ROOT %gather = s32[10] gather(%operand, %indices), offset_dims={0}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=0, slice_sizes={10}`,
			"dynamic-slice(operand, reshape[](indices))", 2, true},
		xlaCase{"gather-expander", "gather_expander_test.cc GatherIsBroadcast", `
  %operand = s32[1,3] parameter(0)
  %indices = s32[7,5] parameter(1)
  ROOT %gather = s32[7,3,5] gather(%operand, %indices), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,3}`,
			"broadcast[1](reshape[3](operand))", 2, true},
		// comparison_expander.cc ExpandInstruction (f32: the xor path), with the value
		// checked (refBitcastConvert) on random inputs of both signs.
		xlaCase{"comparison-expander", "comparison_expander.cc ExpandInstruction", `
  %a = f32[4] parameter(0)
  %b = f32[4] parameter(1)
  ROOT %lt = pred[4] compare(%a, %b), direction=LT, type=TOTALORDER`,
			"compareLT(select(compareLT(bitcast-convert(a), broadcast[](0)), xor(broadcast[](2147483647), bitcast-convert(a)), bitcast-convert(a)), select(compareLT(bitcast-convert(b), broadcast[](0)), xor(broadcast[](2147483647), bitcast-convert(b)), bitcast-convert(b)))", 13, true},
		xlaCase{"comparison-expander", "comparison_expander.cc InstructionMatchesPattern (partial order left)", `
  %a = f32[4] parameter(0)
  %b = f32[4] parameter(1)
  ROOT %lt = pred[4] compare(%a, %b), direction=LT`,
			"", 1, true},
		// conditional_simplifier_test.cc
		xlaCase{"conditional-simplifier", "conditional_simplifier_test.cc ConditionalGetsInlined", `HloModule ConditionalGetsInlined

%true_computation {
  %param = s32[] parameter(0)
  %one = s32[] constant(1)
  ROOT %add = s32[] add(%param, %one)
}

%false_computation {
  %param.1 = s32[] parameter(0)
  %forty_two = s32[] constant(42)
  ROOT %add.1 = s32[] add(%param.1, %forty_two)
}

ENTRY %main {
  %false_param = s32[] parameter(0)
  %c = pred[] constant(false)
  %one = s32[] constant(1)
  ROOT %cond = s32[] conditional(%c, %one, %false_param), true_computation=%true_computation, false_computation=%false_computation
}
`, "add(false_param, 42)", 2, false},
		xlaCase{"conditional-simplifier", "conditional_simplifier_test.cc TwoConditionalsCreatedInReversedLexicalOrder", `HloModule DeadConditional

%computation.1 {
  %param.1 = s64[] parameter(0)
  %constant.1 = s64[] constant(1)
  ROOT %add.1 = s64[] add(%param.1, %constant.1)
}

%computation.2 {
  %param.2 = s64[] parameter(0)
  %constant.2 = s64[] constant(2)
  ROOT %add.2 = s64[] add(%param.2, %constant.2)
}

%computation.3 {
  %param.3 = s64[] parameter(0)
  %constant.3 = s64[] constant(3)
  ROOT %add.3 = s64[] add(%param.3, %constant.3)
}

%computation.4 {
  %param.4 = s64[] parameter(0)
  %constant.4 = s64[] constant(4)
  ROOT %add.4 = s64[] add(%param.4, %constant.4)
}

ENTRY %KernelEntry {
  %p1 = s64[] parameter(0)
  %p2 = s64[] parameter(1)
  %p3 = s64[] parameter(2)
  %p4 = pred[] parameter(3)
  %conditional_1 = s64[] conditional(%p4, %p3, %p2), true_computation=%computation.3, false_computation=%computation.4
  %constant.1 = pred[] constant(false)
  ROOT %conditional_2 = s64[] conditional(%constant.1, %conditional_1, %p1), true_computation=%computation.1, false_computation=%computation.2
}
`, "add(p1, 2)", 3, false}, // conditional_1 is left dead, for DCE
	)
}

// scatterCase is a scatter in the embedding-gradient form the reference evaluator runs
// (Builder.ScatterAdd: rows of updates added into operand rows), with a duplicate index
// and one out of bounds to exercise CheckIndexValidity (scatter_expander.cc).
const scatterCase = `HloModule scatter

%add_f32 {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %r = f32[] add(%x, %y)
}

ENTRY %main {
  %operand = f32[5,3] parameter(0)
  %updates = f32[4,3] parameter(1)
  %indices = s32[4] constant({0, 2, 2, 7})
  ROOT %scatter = f32[5,3] scatter(%operand, %indices, %updates), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add_f32
}
`

// TestScatterExpander: the scatter becomes a counted loop (no scatter left, a while of
// the index count) whose value is the scatter's on random inputs, duplicate and
// out-of-bounds indices included. (TestZooEquivalence checks it on the DLRM training
// steps' embedding-gradient scatters too.)
func TestScatterExpander(t *testing.T) {
	m := parseHLO(t, scatterCase)
	out, changed := runStructural(t, mustLookup(t, "scatter-expander"), m)
	if !changed {
		t.Fatal("scatter-expander reported no change")
	}
	var w *hlo.Instruction
	for _, in := range out.Entry.Instructions {
		if in.Opcode == hlo.OpScatter {
			t.Fatalf("a scatter is left:\n%s", out)
		}
		if in.Opcode == hlo.OpWhile {
			w = in
		}
	}
	if w == nil {
		t.Fatalf("no while loop:\n%s", out)
	}
	if n, ok := tripCountUpTo(newModCtx(out), w, 100); !ok || n != 4 {
		t.Errorf("trip count %d (known %v), want 4", n, ok)
	}
	if err := checkEquivalent(m, out, seedOf("scatter")); err != nil {
		t.Fatalf("the expanded loop computes another value: %v\n%s", err, out)
	}
}

// licmCase is a counted loop (3 trips) whose body multiplies two invariant elements
// (worth hoisting) through a broadcast of one of them (moved along) and accumulates;
// the constant bound stays.
const licmCase = `HloModule licm

%body {
  %p = (s32[], f32[4], f32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %x = f32[4] get-tuple-element(%p), index=1
  %s = f32[] get-tuple-element(%p), index=2
  %acc = f32[4] get-tuple-element(%p), index=3
  %bs = f32[4] broadcast(%s), dimensions={}
  %m = f32[4] multiply(%x, %bs)
  %e = f32[4] exponential(%m)
  %acc2 = f32[4] add(%acc, %e)
  %one = s32[] constant(1)
  %i2 = s32[] add(%i, %one)
  ROOT %t = (s32[], f32[4], f32[], f32[4]) tuple(%i2, %x, %s, %acc2)
}

%cond {
  %p = (s32[], f32[4], f32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

ENTRY %main {
  %x = f32[4] parameter(0)
  %s = f32[] parameter(1)
  %acc = f32[4] parameter(2)
  %zero = s32[] constant(0)
  %init = (s32[], f32[4], f32[], f32[4]) tuple(%zero, %x, %s, %acc)
  %w = (s32[], f32[4], f32[], f32[4]) while(%init), condition=%cond, body=%body
  ROOT %r = f32[4] get-tuple-element(%w), index=3
}
`

// TestWhileLoopInvariantCodeMotion: on licmCase the multiply and the exponential move
// before the loop (with the broadcast they read), the exponential's value becomes a
// fifth loop element, the body keeps only the accumulation and the counter, the value
// is unchanged, and a second run changes nothing.
func TestWhileLoopInvariantCodeMotion(t *testing.T) {
	m := parseHLO(t, licmCase)
	p := mustLookup(t, "while-loop-invariant-code-motion")
	out, changed := runChecked(t, p, m)
	if !changed {
		t.Fatal("no change")
	}
	w := out.Entry.Lookup("w")
	if got := len(w.Shape.Tuple); got != 5 {
		t.Errorf("loop state has %d elements, want 5:\n%s", got, out)
	}
	for _, in := range w.Body.Instructions {
		switch in.Opcode {
		case hlo.OpMultiply, hlo.OpExp, hlo.OpBroadcast:
			t.Errorf("%%%s (%s) is still in the body:\n%s", in.Name, in.Opcode, out)
		}
	}
	if got := expr(w.Operands[0]); got != "tuple(0, x, s, acc, exponential(multiply(x, broadcast[](s))))" {
		t.Errorf("init = %s", got)
	}
	if _, again := runStructural(t, p, out); again {
		t.Error("a second run changed the module")
	}
}
