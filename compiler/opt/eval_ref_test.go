package opt

import (
	"slices"
	"testing"
)

// TestReferenceEvaluatorKnownValues pins the reference evaluator's gather, bitcast-convert,
// shifts and sort to values worked out by hand from XLA's operation semantics, so that
// the value checks of the passes that create or remove them (gather-expander,
// comparison-expander, sort-simplifier) compare against the right answer. The sweep of
// every pass over XLA's real modules (docs/gym.md) found the evaluator's gather was only
// the embedding-lookup form and silently wrong on the rest.
func TestReferenceEvaluatorKnownValues(t *testing.T) {
	cases := []struct {
		name, body string
		want       []float64 // the root's elements, row-major (a tuple's elements concatenated)
	}{
		{"gather row lookup, clamped", `
  %o = s32[3,3] constant({{1,2,3},{4,5,6},{7,8,9}})
  %i = s32[2] constant({2,-5})
  ROOT %g = s32[2,3] gather(%o, %i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}`,
			[]float64{7, 8, 9, 1, 2, 3}},
		{"gather batch dims around the offset dim (XLA's GatherIsBroadcast)", `
  %o = s32[1,3] constant({{1,2,3}})
  %i = s32[2,2] constant({{0,4},{-1,9}})
  ROOT %g = s32[2,3,2] gather(%o, %i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,3}`,
			[]float64{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}},
		{"gather window start clamped to fit", `
  %o = s32[4] constant({10,20,30,40})
  %i = s32[1] constant({3})
  ROOT %g = s32[2] gather(%o, %i), offset_dims={0}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=0, slice_sizes={2}`,
			[]float64{30, 40}},
		{"gather of a 2-D index vector", `
  %o = s32[3,4] constant({{0,1,2,3},{10,11,12,13},{20,21,22,23}})
  %i = s32[2,2] constant({{1,2},{2,0}})
  ROOT %g = s32[2,2] gather(%o, %i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={1,2}`,
			[]float64{12, 13, 20, 21}},
		{"bitcast-convert f32 to s32", `
  %x = f32[3] constant({1, -1, 0})
  ROOT %b = s32[3] bitcast-convert(%x)`,
			[]float64{0x3f800000, -0x40800000, 0}},
		{"bitcast-convert s32 to f32", `
  %x = s32[2] constant({1065353216, -1073741824})
  ROOT %b = f32[2] bitcast-convert(%x)`,
			[]float64{1, -2}},
		{"shifts, amounts past the width", `
  %x = s32[4] constant({1, 1, -8, -8})
  %n = s32[4] constant({31, 32, 1, 40})
  %l = s32[4] shift-left(%x, %n)
  %a = s32[4] shift-right-arithmetic(%x, %n)
  %r = s32[4] shift-right-logical(%x, %n)
  ROOT %t = (s32[4], s32[4], s32[4]) tuple(%l, %a, %r)`,
			[]float64{-2147483648, 0, -16, 0, 0, 0, -4, -1, 0, 0, 0x7ffffffc, 0}},
		{"stable sort of keys and values", `
  %k = f32[1,4] constant({{3,1,2,1}})
  %v = s32[1,4] constant({{0,1,2,3}})
  ROOT %s = (f32[1,4], s32[1,4]) sort(%k, %v), dimensions={1}, to_apply=%lt`,
			[]float64{1, 1, 2, 3, 1, 3, 2, 0}},
	}
	const lt = `%lt {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %c = s32[] parameter(2)
  %d = s32[] parameter(3)
  ROOT %r = pred[] compare(%a, %b), direction=LT
}

`
	for _, c := range cases {
		m := parseHLO(t, "HloModule known\n\n"+lt+"ENTRY %main {\n"+c.body+"\n}\n")
		v, err := evalModule(m, nil)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		var got []float64
		if v.elems != nil {
			for _, e := range v.elems {
				got = append(got, e.data...)
			}
		} else {
			got = v.data
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}
