package opt

import (
	"strings"
	"testing"
)

// The modules of reduce_decomposer_test.cc (the argmax inputs' last dimension scaled
// down from 1024 to 8; the reference evaluator has no variadic reduce, so those cases
// are checked structurally, the others by value too).
const (
	rdAdd = `HloModule module

%add {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %out = f32[] add(%a, %b)
}
`
	rdArgmax = `HloModule ReduceWithLayoutChangeVariadicDifferent

%argmax {
  %running_max = f32[] parameter(0)
  %running_max_idx = u32[] parameter(1)
  %current_value = f32[] parameter(2)
  %current_value_idx = u32[] parameter(3)
  %cmp_code = pred[] compare(%current_value, %running_max), direction=GT
  %new_max = f32[] select(%cmp_code, %current_value, %running_max)
  %new_idx = u32[] select(%cmp_code, %current_value_idx, %running_max_idx)
  ROOT %out = (f32[], u32[]) tuple(%new_max, %new_idx)
}
`
	rdTransposition = rdAdd + `
ENTRY %c {
  %p = f32[5,3,4]{2,1,0} parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[5,4]{0,1} reduce(%p, %z), dimensions={1}, to_apply=%add
}
`
	rdAfterConvert = rdAdd + `
ENTRY %c {
  %p = f32[5,3,4]{2,1,0} parameter(0)
  %z = f32[] constant(0)
  %r = f32[5,4]{0,1} reduce(%p, %z), dimensions={1}, to_apply=%add
  ROOT %c = bf16[5,4]{0,1} convert(%r)
}
`
	rdNatural = rdAdd + `
ENTRY %c {
  %p = f32[5,3,4]{2,1,0} parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[5,4] reduce(%p, %z), dimensions={1}, to_apply=%add
}
`
	rdVariadicTranspose = rdArgmax + `
ENTRY %main {
  %arg0 = f32[2,3,4,8]{3,2,1,0} parameter(0)
  %idxs = u32[2,3,4,8]{3,2,1,0} parameter(1)
  %constant0 = f32[] constant(0)
  %constant1 = u32[] constant(0)
  ROOT %reduce0 = (f32[2,3,4]{0,1,2}, u32[2,3,4]{0,1,2}) reduce(%arg0, %idxs, %constant0, %constant1), dimensions={3}, to_apply=%argmax
}
`
	rdVariadicDescending = rdArgmax + `
ENTRY %main {
  %arg0 = f32[2,3,4,8]{3,2,1,0} parameter(0)
  %idxs = u32[2,3,4,8]{3,2,1,0} parameter(1)
  %constant0 = f32[] constant(0)
  %constant1 = u32[] constant(0)
  ROOT %reduce0 = (f32[2,3,4]{2,1,0}, u32[2,3,4]{2,1,0}) reduce(%arg0, %idxs, %constant0, %constant1), dimensions={3}, to_apply=%argmax
}
`
	rdVariadicInputs = rdArgmax + `
ENTRY %main {
  %arg0 = f32[2,3,4,8]{3,2,1,0} parameter(0)
  %idxs = u32[2,3,4,8]{2,1,3,0} parameter(1)
  %constant0 = f32[] constant(0)
  %constant1 = u32[] constant(0)
  ROOT %reduce0 = (f32[2,3,4]{2,1,0}, u32[2,3,4]{2,1,0}) reduce(%arg0, %idxs, %constant0, %constant1), dimensions={3}, to_apply=%argmax
}
`
)

func init() {
	xlaCases = append(xlaCases,
		xlaCase{"reduce-decomposer", "reduce_decomposer_test.cc ReducePerformsTransposition", rdTransposition,
			"copy(reduce[1](p, 0))", 3, true},
		xlaCase{"reduce-decomposer", "reduce_decomposer_test.cc ReducePerformsTranspositionAfterConvert", rdAfterConvert,
			"copy(convertbf16(reduce[1](p, 0)))", 4, true},
		xlaCase{"reduce-decomposer", "reduce_decomposer_test.cc ReduceNaturalLayout", rdNatural, "", 2, true},
		xlaCase{"reduce-decomposer", "reduce_decomposer_test.cc VariadicReductionWithTranspose", rdVariadicTranspose,
			"tuple(copy(get-tuple-element0(reduce[3](arg0, idxs, 0, 0))), copy(get-tuple-element1(reduce[3](arg0, idxs, 0, 0))))", 8, false},
		xlaCase{"reduce-decomposer", "reduce_decomposer_test.cc VariadicReductionDescendingLayout", rdVariadicDescending, "", 3, false},
		xlaCase{"reduce-decomposer", "reduce_decomposer_test.cc VariadicReductionInputsDifferentLayout", rdVariadicInputs,
			"reduce[3](arg0, copy(idxs), 0, 0)", 4, false},
	)
}

// TestReduceDecomposerLayouts checks the layouts XLA's CHECK lines state (TestXLAPassCases
// checks the structure): the new reduce in the layout its input gives, the copy in the
// requested one; the convert in the reduce's layout; the copied input in the first
// input's layout. With the layout comparison removed (every reduce taken as natural),
// the rewrites do not happen and this test and TestXLAPassCases fail.
func TestReduceDecomposerLayouts(t *testing.T) {
	p := mustLookup(t, "reduce-decomposer")
	for _, c := range []struct {
		name, src string
		want      []string
	}{
		{"ReducePerformsTransposition", rdTransposition, []string{
			"f32[5,4]{1,0} reduce(%p, %z), dimensions={1}", "ROOT %copy.0 = f32[5,4]{0,1} copy(%reduce.0)"}},
		{"ReducePerformsTranspositionAfterConvert", rdAfterConvert, []string{
			"f32[5,4]{1,0} reduce(%p, %z)", "bf16[5,4]{1,0} convert(%reduce.0)", "ROOT %copy.0 = bf16[5,4]{0,1} copy(%convert.0)"}},
		{"VariadicReductionWithTranspose", rdVariadicTranspose, []string{
			"(f32[2,3,4]{2,1,0}, u32[2,3,4]{2,1,0}) reduce(%arg0, %idxs, %constant0, %constant1), dimensions={3}",
			"f32[2,3,4]{2,1,0} get-tuple-element(%reduce.0), index=0", "f32[2,3,4]{0,1,2} copy(%get-tuple-element.0)",
			"u32[2,3,4]{2,1,0} get-tuple-element(%reduce.0), index=1", "u32[2,3,4]{0,1,2} copy(%get-tuple-element.1)",
			"ROOT %tuple.0 = (f32[2,3,4]{0,1,2}, u32[2,3,4]{0,1,2}) tuple(%copy.0, %copy.1)"}},
		{"VariadicReductionInputsDifferentLayout", rdVariadicInputs, []string{
			"u32[2,3,4,8]{3,2,1,0} copy(%idxs)",
			"(f32[2,3,4]{2,1,0}, u32[2,3,4]{2,1,0}) reduce(%arg0, %copy.0, %constant0, %constant1), dimensions={3}"}},
	} {
		m := parseHLO(t, c.src)
		out, _ := runStructural(t, p, m)
		text := out.String()
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: want %q in\n%s", c.name, w, text)
			}
		}
	}
}
