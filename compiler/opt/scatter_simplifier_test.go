package opt

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/zoo"
)

// scatterSimplifierModule wraps an entry of xla/service/scatter_simplifier_test.cc in a
// module with its combiner: the last operand's value (XLA's "ROOT result =
// parameter(1)") unless combiner is given.
func scatterSimplifierModule(combiner, entry string) string {
	if combiner == "" {
		combiner = `%scatter_computation {
  %p0 = f32[] parameter(0)
  ROOT %result = f32[] parameter(1)
}`
	}
	return "HloModule scatter_simplifier\n\n" + combiner + "\n\nENTRY %kernel_entry {\n" + entry + "\n}\n"
}

const (
	addS32Combiner = `%scatter_computation {
  %lhs = s32[] parameter(0)
  %rhs = s32[] parameter(1)
  ROOT %add = s32[] add(%lhs, %rhs)
}`
	variadicCombiner = `%scatter_computation {
  %p0 = f32[] parameter(0)
  %p1 = f32[] parameter(1)
  %p2 = f32[] parameter(2)
  %p3 = f32[] parameter(3)
  ROOT %tuple = (f32[], f32[]) tuple(%p2, %p3)
}`
	variadicScalarCombiner = `%scatter_computation {
  %p0 = f32[] parameter(0)
  %p1 = bf16[] parameter(1)
  %p2 = f32[] parameter(2)
  %p3 = bf16[] parameter(3)
  ROOT %tuple = (f32[], bf16[]) tuple(%p2, %p3)
}`
)

// Cases from xla/service/scatter_simplifier_test.cc and scatter_expander_test.cc (the
// kEliminateSimpleScatters ones), appended to xlaCases so that TestXLAPassCases runs
// them (verifier, expected root, op count, value on random inputs: random s32 indices
// are in [-3, 3], so duplicates and out-of-bounds windows occur) and
// TestXLAPassesCovered counts them.
func init() {
	xlaCases = append(xlaCases,
		xlaCase{"scatter-simplifier", "scatter_simplifier_test.cc InsertsIndexVectorAndWindowDims", scatterSimplifierModule(variadicCombiner, `
  %operand0 = f32[3,3] parameter(0)
  %operand1 = f32[3,3] parameter(1)
  %indices = s32[2] parameter(2)
  %update0 = f32[2,3] parameter(3)
  %update1 = f32[2,3] parameter(4)
  ROOT %scatter = (f32[3,3], f32[3,3]) scatter(%operand0, %operand1, %indices, %update0, %update1), to_apply=%scatter_computation, update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1`),
			"scatter(operand0, operand1, reshape[2 1](indices), reshape[2 1 3](update0), reshape[2 1 3](update1))", 4, true},
		xlaCase{"scatter-simplifier", "scatter_simplifier_test.cc CollapsesScatterDims", scatterSimplifierModule("", `
  %operand = f32[3,3] parameter(0)
  %indices = s32[2,1,2] parameter(1)
  %update = f32[2,1,1,3] parameter(2)
  ROOT %scatter = f32[3,3] scatter(%operand, %indices, %update), to_apply=%scatter_computation, update_window_dims={2,3}, inserted_window_dims={}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=2`),
			"scatter(operand, reshape[2 2](indices), reshape[2 1 3](update))", 3, true},
		xlaCase{"scatter-simplifier", "scatter_simplifier_test.cc NoOpForSimpleScatter", scatterSimplifierModule("", `
  %operand = f32[3,3] parameter(0)
  %indices = s32[2,2] parameter(1)
  %update = f32[2,1,3] parameter(2)
  ROOT %scatter = f32[3,3] scatter(%operand, %indices, %update), to_apply=%scatter_computation, update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1`),
			"", 1, false},
		xlaCase{"scatter-simplifier", "scatter_simplifier_test.cc MovesIndexVectorDim", scatterSimplifierModule("", `
  %operand = f32[3,3] parameter(0)
  %indices = s32[2,1] parameter(1)
  %update = f32[1,3,3] parameter(2)
  ROOT %scatter = f32[3,3] scatter(%operand, %indices, %update), to_apply=%scatter_computation, update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=0`),
			"scatter(operand, transpose[1 0](indices), update)", 2, true},
		xlaCase{"scatter-simplifier", "scatter_simplifier_test.cc TransformsUpdatesAndOperandUsingScatterDims", scatterSimplifierModule("", `
  %operand = f32[3,4,5] parameter(0)
  %indices = s32[2,2] parameter(1)
  %update = f32[2,1,1,3] parameter(2)
  ROOT %scatter = f32[3,4,5] scatter(%operand, %indices, %update), to_apply=%scatter_computation, update_window_dims={1,2,3}, inserted_window_dims={}, scatter_dims_to_operand_dims={2,0}, index_vector_dim=1`),
			"transpose[1 2 0](scatter(transpose[2 0 1](operand), indices, transpose[0 3 1 2](update)))", 4, true},
		xlaCase{"scatter-simplifier", "scatter_simplifier_test.cc MakesScatterDimensionsLeadingInUpdates", scatterSimplifierModule("", `
  %operand = f32[3] parameter(0)
  %indices = s32[1,1] parameter(1)
  %update = f32[2,1] parameter(2)
  ROOT %scatter = f32[3] scatter(%operand, %indices, %update), to_apply=%scatter_computation, update_window_dims={0}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1`),
			"scatter(operand, indices, transpose[1 0](update))", 2, true},
		xlaCase{"scatter-simplifier", "scatter_simplifier_test.cc ZeroDimScatterIndices", scatterSimplifierModule("", `
  %operand = f32[4,4] parameter(0)
  %indices = s32[2] parameter(1)
  %update = f32[3,3] parameter(2)
  ROOT %scatter = f32[4,4] scatter(%operand, %indices, %update), update_window_dims={0,1}, inserted_window_dims={}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=0, to_apply=%scatter_computation`),
			"scatter(operand, reshape[1 2](indices), reshape[1 3 3](update))", 3, true},
		xlaCase{"scatter-simplifier", "scatter_simplifier_test.cc IsSimplifiedScatterReturnsFalseForUnsortedWindowDims", scatterSimplifierModule("", `
  %operand = f32[3,2] parameter(0)
  %indices = s32[1,1] parameter(1)
  %update = f32[1,2,2] parameter(2)
  ROOT %scatter = f32[3,2] scatter(%operand, %indices, %update), to_apply=%scatter_computation, update_window_dims={2,1}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1`),
			"scatter(operand, indices, transpose[0 2 1](update))", 2, true},
		xlaCase{"scatter-simplifier", "scatter_simplifier_test.cc ScatterIntoScalar", scatterSimplifierModule(addS32Combiner, `
  %operand = s32[] parameter(0)
  %indices = s32[0] parameter(1)
  %updates = s32[] parameter(2)
  ROOT %scatter = s32[] scatter(%operand, %indices, %updates), update_window_dims={}, inserted_window_dims={}, scatter_dims_to_operand_dims={}, index_vector_dim=0, to_apply=%scatter_computation`),
			"add(operand, updates)", 1, true},
		xlaCase{"scatter-simplifier", "scatter_simplifier_test.cc VariadicScatterIntoScalar", scatterSimplifierModule(variadicScalarCombiner, `
  %operand0 = f32[] parameter(0)
  %operand1 = bf16[] parameter(1)
  %indices = s32[0] parameter(2)
  %updates0 = f32[] parameter(3)
  %updates1 = bf16[] parameter(4)
  ROOT %scatter = (f32[], bf16[]) scatter(%operand0, %operand1, %indices, %updates0, %updates1), update_window_dims={}, inserted_window_dims={}, scatter_dims_to_operand_dims={}, index_vector_dim=0, to_apply=%scatter_computation`),
			"tuple(updates0, updates1)", 1, true},
		xlaCase{"scatter-simplifier", "scatter_simplifier_test.cc SimpleScatterExampleTest 1x1d", scatterSimplifierModule(addS32Combiner, `
  %operand = s32[4] parameter(0)
  %indices = s32[1,1] parameter(1)
  %update = s32[1,2] parameter(2)
  ROOT %scatter = s32[4] scatter(%operand, %indices, %update), to_apply=%scatter_computation, update_window_dims={1}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1`),
			"", 1, false},
		xlaCase{"scatter-simplifier", "scatter_simplifier_test.cc SimpleScatterExampleTest 2x2d_n_less_than_N", scatterSimplifierModule(addS32Combiner, `
  %operand = s32[2,2] parameter(0)
  %indices = s32[2,1] parameter(1)
  %update = s32[2,2,2] parameter(2)
  ROOT %scatter = s32[2,2] scatter(%operand, %indices, %update), to_apply=%scatter_computation, update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1`),
			"", 1, false},
		// scatter_expander_test.cc, ScatterExpander(kEliminateSimpleScatters)
		xlaCase{"scatter-expander-simple", "scatter_expander_test.cc EliminateSimpleScattersSkipsNontrivialScatter", `HloModule scatter_expander

%scatter_computation {
  %parameter0 = s32[] parameter(0)
  ROOT %parameter1 = s32[] parameter(1)
}

ENTRY %kernel_entry {
  %operand = s32[3,3] parameter(0)
  %indices = s32[2] parameter(1)
  %updates = s32[2,3] parameter(2)
  ROOT %scatter = s32[3,3] scatter(%operand, %indices, %updates), to_apply=%scatter_computation, update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1
}
`, "", 1, false},
		xlaCase{"scatter-expander-simple", "scatter_expander_test.cc EliminateSimpleScattersRewritesTrivialScatter", trivialScatter,
			"get-tuple-element1(while(tuple(0, iota(), indices, reshape[1](0))))", 46, true},
	)
}

// trivialScatter is scatter_expander_test.cc's EliminateSimpleScattersRewritesTrivialScatter:
// one index vector (trip count 1).
const trivialScatter = `HloModule scatter_expander

%scatter_computation {
  %parameter0 = s32[] parameter(0)
  ROOT %parameter1 = s32[] parameter(1)
}

ENTRY %kernel_entry {
  %operand = s32[5] iota(), iota_dimension=0
  %indices = s32[1] parameter(0)
  %update = s32[] constant(0)
  ROOT %scatter = s32[5] scatter(%operand, %indices, %update), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=0, to_apply=%scatter_computation
}
`

// TestScatterSimplifierForm: on every scatter-simplifier case from XLA's tests that the
// pass rewrites, every scatter left is in XLA's simplified form (IsSimplifiedScatter)
// with the canonical dimension numbers ExpandInstruction gives it, and a second run
// changes nothing.
func TestScatterSimplifierForm(t *testing.T) {
	p := mustLookup(t, "scatter-simplifier")
	n := 0
	for _, c := range xlaCases {
		if c.pass != p.Name || c.want == "" {
			continue
		}
		n++
		out, _ := runStructural(t, p, parseHLO(t, c.src))
		for _, in := range out.Entry.Instructions {
			if in.Opcode != hlo.OpScatter {
				continue
			}
			k := hlo.ScatterArity(in)
			sd, ok := scatterAttrs(in)
			if !ok || !isSimplifiedScatter(in, sd, k) {
				t.Errorf("%s: %%%s is not in the simplified form:\n%s", c.from, in.Name, out)
				continue
			}
			rank := in.Operands[0].Shape.Rank()
			if !intsEq(sd.updateWindow, seqFrom(1, rank+1)) || !isIota(sd.toOperand) || sd.indexVectorDim != 1 ||
				in.Operands[k].Shape.Rank() != 2 || in.Operands[k+1].Shape.Rank() != rank+1 {
				t.Errorf("%s: %%%s has not the canonical dimension numbers: %s", c.from, in.Name, in)
			}
		}
		if _, again := runStructural(t, p, out); again {
			t.Errorf("%s: a second run changed the module", c.from)
		}
	}
	if n < 8 {
		t.Errorf("only %d rewriting cases, want ≥ 8", n)
	}
}

// TestScatterExpanderSimple: scatter-expander-simple leaves a scatter of several index
// vectors (scatterCase, 4 of them) alone, and expands a scatter of one index vector into
// the loop scatter-expander builds, which XLA's simplification group
// (post_scatter_expansion_simplification) then removes: no loop is left, the value is
// the scatter's, and what is left is a dynamic-update-slice of the operand (the
// one-trip body inlined by while-loop-simplifier, folded by algsimp and
// constant-folding).
func TestScatterExpanderSimple(t *testing.T) {
	p := mustLookup(t, "scatter-expander-simple")
	if _, changed := runStructural(t, p, parseHLO(t, scatterCase)); changed {
		t.Error("scatter-expander-simple expanded a scatter of 4 index vectors")
	}
	m := parseHLO(t, trivialScatter)
	out, changed := runChecked(t, p, m)
	if !changed {
		t.Fatal("no change on a scatter of one index vector")
	}
	all, _ := runStructural(t, mustLookup(t, "scatter-expander"), m)
	if out.String() != all.String() {
		t.Errorf("the simple mode built another loop than scatter-expander:\n%s\nvs\n%s", out, all)
	}
	if _, err := RunStages(out, []Stage{{Name: "post_scatter_expansion_simplification", Passes: xlaSimplificationGroup(), Fix: true}},
		func(q Pass) error { return hlo.Verify(out) }); err != nil {
		t.Fatal(err)
	}
	if err := checkEquivalent(m, out, seedOf("trivial scatter")); err != nil {
		t.Fatalf("the simplified loop computes another value: %v\n%s", err, out)
	}
	for _, c := range out.Computations {
		for _, in := range c.Instructions {
			if in.Opcode == hlo.OpWhile || in.Opcode == hlo.OpScatter {
				t.Errorf("%s is left after the group:\n%s", in.Opcode, out)
			}
		}
	}
	if got := out.Entry.Root.Opcode; got != hlo.OpDynamicUpdateSlice {
		t.Errorf("root %s, want dynamic-update-slice:\n%s", got, out)
	}
	t.Logf("after the group (%d ops): %s", OpCount(out), expr(out.Entry.Root))
}

// TestXLAPipelineKeepsScatters: XLA's default CPU order at XLACommit (fusion emitters
// on) keeps a training step's multi-index scatter — GPT-2's embedding gradient, one
// scatter of 8×128 index vectors — a scatter, in XLA's simplified form, and adds no loop;
// the kEliminateAllScatters stage this order had before would turn it into a while loop.
func TestXLAPipelineKeepsScatters(t *testing.T) {
	zm, err := zoo.Lookup("gpt2_tiny_s128_b8_train")
	if err != nil {
		t.Fatal(err)
	}
	m, err := zm.Build()
	if err != nil {
		t.Fatal(err)
	}
	count := func(m *hlo.Module, op hlo.Opcode) int {
		n := 0
		for _, c := range m.Computations {
			for _, in := range c.Instructions {
				if in.Opcode == op {
					n++
				}
			}
		}
		return n
	}
	scatters, loops := count(m, hlo.OpScatter), count(m, hlo.OpWhile)
	if scatters == 0 {
		t.Fatalf("%s has no scatter", zm.Name)
	}
	if _, err := RunStages(m, XLAPipeline(), nil); err != nil {
		t.Fatal(err)
	}
	if err := hlo.Verify(m); err != nil {
		t.Fatal(err)
	}
	if got := count(m, hlo.OpScatter); got != scatters {
		t.Errorf("%d scatters left of %d", got, scatters)
	}
	if got := count(m, hlo.OpWhile); got != loops {
		t.Errorf("%d while loops after XLA's order, %d before", got, loops)
	}
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			if in.Opcode != hlo.OpScatter {
				continue
			}
			sd, ok := scatterAttrs(in)
			if !ok || !isSimplifiedScatter(in, sd, hlo.ScatterArity(in)) {
				t.Errorf("%%%s is not in XLA's simplified form: %s", in.Name, in)
			}
			if n := scatterTripCount(in.Operands[1].Shape, sd.indexVectorDim); n < 2 {
				t.Errorf("%%%s has %d index vectors, want a multi-index scatter", in.Name, n)
			}
		}
	}
}

// TestRefScatterMatchesXLA: the reference evaluator's scatter gives the results XLA's
// HloEvaluator gives in scatter_simplifier_test.cc's SimpleScatterExampleTest (a window
// partly out of bounds is skipped whole: 2x2d_nofit), so that the value checks above
// compare against XLA's semantics.
func TestRefScatterMatchesXLA(t *testing.T) {
	for _, c := range []struct {
		name, entry                     string
		operand, indices, updates, want []float64
	}{
		{"1x1d", `
  %operand = s32[4] parameter(0)
  %indices = s32[1,1] parameter(1)
  %update = s32[1,2] parameter(2)
  ROOT %scatter = s32[4] scatter(%operand, %indices, %update), to_apply=%scatter_computation, update_window_dims={1}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1`,
			[]float64{1, 2, 3, 4}, []float64{2}, []float64{2, 3}, []float64{1, 2, 5, 7}},
		{"2x2d", `
  %operand = s32[2,2] parameter(0)
  %indices = s32[2,2] parameter(1)
  %update = s32[2,2,2] parameter(2)
  ROOT %scatter = s32[2,2] scatter(%operand, %indices, %update), to_apply=%scatter_computation, update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1`,
			[]float64{1, 2, 3, 4}, []float64{0, 0, 0, 0}, []float64{10, 20, 30, 40, 50, 60, 70, 80},
			[]float64{1 + 10 + 50, 2 + 20 + 60, 3 + 30 + 70, 4 + 40 + 80}},
		{"2x2d_nofit", `
  %operand = s32[2,2] parameter(0)
  %indices = s32[2,1] parameter(1)
  %update = s32[2,2,2] parameter(2)
  ROOT %scatter = s32[2,2] scatter(%operand, %indices, %update), to_apply=%scatter_computation, update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1`,
			[]float64{1, 2, 3, 4}, []float64{0, 2}, []float64{10, 20, 30, 40, 50, 60, 70, 80},
			[]float64{1 + 10, 2 + 20, 3 + 30, 4 + 40}},
		{"3x1d", `
  %operand = s32[4] parameter(0)
  %indices = s32[3,1] parameter(1)
  %update = s32[3,2] parameter(2)
  ROOT %scatter = s32[4] scatter(%operand, %indices, %update), to_apply=%scatter_computation, update_window_dims={1}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1`,
			[]float64{1, 2, 3, 4}, []float64{0, 1, 2}, []float64{1, 2, 10, 20, 200, 300},
			[]float64{1 + 1, 2 + 2 + 10, 3 + 20 + 200, 4 + 300}},
	} {
		m := parseHLO(t, scatterSimplifierModule(addS32Combiner, c.entry))
		ps := m.Entry.Parameters()
		args := []*tensor{{shape: ps[0].Shape, data: c.operand}, {shape: ps[1].Shape, data: c.indices}, {shape: ps[2].Shape, data: c.updates}}
		got, err := evalModule(m, args)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !slices.Equal(got.data, c.want) {
			t.Errorf("%s: %v, XLA's evaluator gives %v", c.name, got.data, c.want)
		}
	}
}

// randomScatter writes a module of one scatter with random valid dimension numbers
// (XLA's scatter rules without batching dimensions: inserted_window_dims and
// update_window_dims sorted, scatter_dims_to_operand_dims distinct operand dimensions,
// windows within the operand) and a random combiner.
func randomScatter(r *rand.Rand) string {
	rank := 1 + r.IntN(3)
	od := make([]int, rank)
	for i := range od {
		od[i] = 1 + r.IntN(4)
	}
	var inserted, win []int // inserted operand dims; window sizes of the others, in order
	for d := range od {
		if r.IntN(3) == 0 {
			inserted = append(inserted, d)
		} else {
			win = append(win, 1+r.IntN(od[d]))
		}
	}
	toOperand := r.Perm(rank)[:1+r.IntN(rank)]
	k := len(toOperand)
	batch := make([]int, r.IntN(3))
	for i := range batch {
		batch[i] = 1 + r.IntN(3)
	}
	var idx []int
	ivd := len(batch) // implicit index vector dimension when k = 1 and chosen so
	if k == 1 && r.IntN(2) == 0 {
		idx = slices.Clone(batch)
	} else {
		ivd = r.IntN(len(batch) + 1)
		idx = slices.Insert(slices.Clone(batch), ivd, k)
	}
	urank := len(batch) + len(win)
	windowAt := r.Perm(urank)[:len(win)]
	slices.Sort(windowAt)
	ud := make([]int, urank)
	for i, j, w := 0, 0, 0; i < urank; i++ {
		if w < len(windowAt) && windowAt[w] == i {
			ud[i] = win[w]
			w++
		} else {
			ud[i] = batch[j]
			j++
		}
	}
	combiner := []string{"add", "multiply", "maximum"}[r.IntN(3)]
	body := fmt.Sprintf("%%y = f32[] parameter(1)\n  ROOT %%r = f32[] %s(%%x, %%y)", combiner)
	if r.IntN(4) == 0 {
		body = "ROOT %y = f32[] parameter(1)" // overwrite
	}
	shape := func(t hlo.ElemType, d []int) string { return hlo.Array(t, d...).StringNoLayout() }
	return fmt.Sprintf(`HloModule random_scatter

%%combine {
  %%x = f32[] parameter(0)
  %s
}

ENTRY %%main {
  %%operand = %s parameter(0)
  %%indices = %s parameter(1)
  %%updates = %s parameter(2)
  ROOT %%scatter = %s scatter(%%operand, %%indices, %%updates), update_window_dims=%s, inserted_window_dims=%s, scatter_dims_to_operand_dims=%s, index_vector_dim=%d, to_apply=%%combine
}
`, body, shape(hlo.F32, od), shape(hlo.S32, idx), shape(hlo.F32, ud), shape(hlo.F32, od),
		hlo.IntSet(windowAt), hlo.IntSet(inserted), hlo.IntSet(toOperand), ivd)
}

// randomScatters is the number of random scatters TestRandomScatters checks.
const randomScatters = 500

// TestRandomScatters runs the three scatter passes on random scatters of every form
// (randomScatter) with runChecked: the result verifies, is deterministic, and has the
// scatter's value on random inputs (indices in [-3, 3]: duplicates and windows out of
// bounds); scatter-simplifier leaves only simplified scatters, and each pass changes
// what its mode matches (scatter-expander: every scatter; the simple mode: one index
// vector; the simplifier: a scatter not in the simplified form).
func TestRandomScatters(t *testing.T) {
	r := newRand(seedOf("random scatters"))
	hits := map[string]int{}
	for i := 0; i < randomScatters; i++ {
		src := randomScatter(r)
		m := parseHLO(t, src)
		x := m.Entry.Root
		sd, _ := scatterAttrs(x)
		trips := scatterTripCount(x.Operands[1].Shape, sd.indexVectorDim)
		for _, c := range []struct {
			pass string
			want bool
		}{
			{"scatter-simplifier", !isSimplifiedScatter(x, sd, 1)},
			{"scatter-expander", true},
			{"scatter-expander-simple", trips == 1},
		} {
			out, changed := runChecked(t, mustLookup(t, c.pass), m)
			if changed != c.want {
				t.Errorf("%s changed=%v, want %v on\n%s", c.pass, changed, c.want, src)
			}
			if changed {
				hits[c.pass]++
			}
			if c.pass == "scatter-simplifier" {
				for _, in := range out.Entry.Instructions {
					if in.Opcode == hlo.OpScatter {
						if sd2, ok := scatterAttrs(in); !ok || !isSimplifiedScatter(in, sd2, 1) {
							t.Errorf("scatter-simplifier left %s", in)
						}
					}
				}
			}
		}
	}
	t.Logf("changed: %v of %d", hits, randomScatters)
	for _, p := range []string{"scatter-simplifier", "scatter-expander-simple"} {
		if hits[p] < randomScatters/10 {
			t.Errorf("%s changed only %d of %d random scatters", p, hits[p], randomScatters)
		}
	}
}
