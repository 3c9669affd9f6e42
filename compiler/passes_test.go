package compiler

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/compiler/opt"
)

// byName returns the pass of ps named name.
func byName(ps []Pass, name string) Pass {
	return ps[slices.IndexFunc(ps, func(p Pass) bool { return p.Name == name })]
}

// without returns ps without the pass named name.
func without(ps []Pass, name string) []Pass {
	return slices.DeleteFunc(slices.Clone(ps), func(p Pass) bool { return p.Name == name })
}

// optPasses adapts the named opt passes.
func optPasses(t *testing.T, names ...string) []Pass {
	t.Helper()
	var out []Pass
	for _, p := range mustPasses(t, names...) {
		out = append(out, OptPass(p))
	}
	return out
}

// TestCheckPasses: a list in the wrong order, missing a producer, or with an opt pass
// after layout assignment is an error naming the pass and the missing product. A group
// may list a member twice only where its Repeats declares it: the default group (XLA's
// order, dce twice, declared) passes; the same group without the declaration, a member
// repeated by accident, a declaration of a pass listed once, or a declared member also
// listed outside the group is an error.
func TestCheckPasses(t *testing.T) {
	ps := Passes()
	layout, fusion, tiling, flags := byName(ps, "layout-assignment"), byName(ps, "fusion"), byName(ps, "tiling"), byName(ps, "flags")
	simplify := byName(ps, SimplifyGroup)
	dupMember, kindMember, nested := simplify, simplify, simplify
	dupMember.Group = append(slices.Clone(simplify.Group), simplify.Group[0])
	undeclared, stale, legacyStale := simplify, simplify, simplify
	undeclared.Repeats = nil
	stale.Repeats = []string{"dce", "cse"}
	legacyStale.Group = nil
	for _, p := range opt.LegacyPasses() {
		legacyStale.Group = append(legacyStale.Group, OptPass(p))
	}
	repeatsNoGroup := byName(ps, "fusion")
	repeatsNoGroup.Repeats = []string{"fusion"}
	kindMember.Group = []Pass{layout}
	nested.Group = []Pass{{Name: "inner", Group: simplify.Group}}
	algsimp := optPasses(t, "algsimp")[0]
	noRun := fusion
	noRun.Run = nil
	twoTilers := tiling
	twoTilers.Name = "tiling-again"
	badKind := layout
	badKind.Kind = "colour"
	cases := []struct {
		name string
		list []Pass
		want string // "" for a valid list
	}{
		{"default", ps, ""},
		{"opt passes first", append(optPasses(t, "algsimp", "dce"), without(ps, SimplifyGroup)...), ""},
		{"swapped", []Pass{fusion, layout, tiling, flags}, "pass fusion requires layouts, which no pass before it provides"},
		{"no tiling", without(ps, "tiling"), "pass flags requires tiles, which no pass before it provides"},
		{"no layout", without(ps, "layout-assignment"), "pass fusion requires layouts, which no pass before it provides"},
		{"no flags", without(ps, "flags"), "pass staging requires flags, which no pass before it provides"},
		{"no staging", without(ps, "staging"), ""},
		{"empty", nil, "the program requires kernels, which no pass before it provides"},
		{"opt after layout", []Pass{layout, algsimp, fusion, tiling, flags},
			"pass fusion requires layouts, which pass algsimp before it does not preserve"},
		{"opt after fusion", []Pass{layout, fusion, algsimp, tiling, flags},
			"pass tiling requires kernels, which pass algsimp before it does not preserve"},
		{"opt last", append(without(ps, SimplifyGroup), algsimp),
			"the program requires kernels, which pass algsimp before it does not preserve"},
		{"duplicate name", []Pass{layout, algsimp, layout}, "pass layout-assignment is listed twice"},
		{"duplicate kind", []Pass{layout, fusion, tiling, twoTilers, flags}, "passes tiling and tiling-again both read tile configs"},
		{"unknown kind", []Pass{badKind, fusion, tiling, flags}, `pass layout-assignment reads config kind "colour"`},
		{"no run", []Pass{layout, noRun, tiling, flags}, "pass fusion has no Run"},
		{"no name", []Pass{{Run: layout.Run}}, "pass 0 has no name"},
		{"group member listed twice", []Pass{dupMember, layout, fusion, tiling, flags}, "pass call-inliner is listed twice"},
		{"undeclared repeat", []Pass{undeclared, layout, fusion, tiling, flags}, "pass dce is listed twice"},
		{"declared repeat listed once", []Pass{stale, layout, fusion, tiling, flags}, "group simplify declares cse repeated, but lists it 1 time(s)"},
		{"declared repeat of a group without it", []Pass{legacyStale, layout, fusion, tiling, flags}, "group simplify declares dce repeated, but lists it 1 time(s)"},
		{"declared repeat also outside the group", append(optPasses(t, "dce"), ps...), "pass dce is listed twice"},
		{"repeats on a pass", []Pass{layout, repeatsNoGroup, tiling, flags}, "pass fusion declares repeated members but is not a group"},
		{"group member named like a pass", append(optPasses(t, "algsimp"), ps...), "pass algsimp is listed twice"},
		{"configurable group member", []Pass{kindMember, fusion, tiling, flags}, "pass layout-assignment reads layout configs in a group"},
		{"nested group", []Pass{nested, layout, fusion, tiling, flags}, "pass inner has no Run"},
		{"group after fusion", []Pass{layout, fusion, simplify, tiling, flags},
			"pass tiling requires kernels, which pass call-inliner before it does not preserve"},
	}
	for _, c := range cases {
		err := CheckPasses(c.list)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
	// Compiling with a bad list fails before any pass runs.
	if _, err := compile(parseSimplifiable(t), nil, opts(), without(ps, "tiling")); err == nil || !strings.Contains(err.Error(), "requires tiles") {
		t.Errorf("compile with no tiling pass: err = %v", err)
	}
}

// oneTrip is a while loop that runs once: while-loop-simplifier replaces it by its body,
// so the flow computations change under the pass.
const oneTrip = `HloModule one_trip

cond {
  cp = (s32[], f32[256,512]) parameter(0)
  ci = s32[] get-tuple-element(cp), index=0
  n = s32[] constant(1)
  ROOT lt = pred[] compare(ci, n), direction=LT
}

body {
  bp = (s32[], f32[256,512]) parameter(0)
  bi = s32[] get-tuple-element(bp), index=0
  one = s32[] constant(1)
  next = s32[] add(bi, one)
  x = f32[256,512] get-tuple-element(bp), index=1
  e = f32[256,512] exponential(x)
  y = f32[256,512] add(e, x)
  ROOT t = (s32[], f32[256,512]) tuple(next, y)
}

ENTRY main {
  p = f32[256,512] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[256,512]) tuple(z, p)
  w = (s32[], f32[256,512]) while(init), condition=cond, body=body
  ROOT r = f32[256,512] get-tuple-element(w), index=1
}
`

// TestOptPassAheadOfLayout: opt passes adapted by OptPass run in the pass list ahead of
// layout assignment (in place of the simplification group) and give the same program,
// pass log included, as the same passes selected by Options.Simplify, also when they
// rewrite control flow.
func TestOptPassAheadOfLayout(t *testing.T) {
	for _, c := range []struct {
		src    string
		passes []string
	}{
		{simplifiable, []string{"dce", "algsimp", "cse"}},
		{oneTrip, []string{"while-loop-simplifier", "tuple-simplifier", "dce"}},
	} {
		m, err := hlo.Parse("test.hlo", []byte(c.src))
		if err != nil {
			t.Fatal(err)
		}
		o := opts()
		o.Simplify = Simplify{Passes: mustPasses(t, c.passes...)}
		want, err := Compile(m, nil, o)
		if err != nil {
			t.Fatal(err)
		}
		o.Simplify = Simplify{}
		ps := without(Passes(), SimplifyGroup)
		at := slices.IndexFunc(ps, func(p Pass) bool { return p.Name == "layout-assignment" })
		got, err := compile(m, nil, o, slices.Insert(ps, at, optPasses(t, c.passes...)...))
		if err != nil {
			t.Fatal(err)
		}
		if got.Module.String() != want.Module.String() {
			t.Errorf("%s: modules differ:\n%s\nwant\n%s", m.Name, got.Module, want.Module)
		}
		if !reflect.DeepEqual(got.Passes, want.Passes) {
			t.Errorf("%s: pass log %+v, want %+v", m.Name, got.Passes, want.Passes)
		}
		if first := slices.IndexFunc(got.Passes, func(r PassRun) bool { return r.Name == c.passes[0] }); !got.Passes[first].Changed {
			t.Errorf("%s: %s recorded as not changing the module", m.Name, c.passes[0])
		}
		if !reflect.DeepEqual(got.Config, want.Config) || len(got.Kernels) != len(want.Kernels) {
			t.Errorf("%s: configs or kernels differ", m.Name)
		}
		for i, k := range got.Kernels {
			if w := want.Kernels[i]; k.Name != w.Name || k.Key != w.Key || k.Root != w.Root || k.Weight != w.Weight {
				t.Errorf("%s: kernel %d is %s %s (root %s, weight %g), want %s %s (root %s, weight %g)",
					m.Name, i, k.Name, k.Key, k.Root, k.Weight, w.Name, w.Key, w.Root, w.Weight)
			}
		}
	}
}

// TestKernelTable: the kernel table the passes leave is the program's kernels, in order,
// each with the key and analysis tiling gave it and the root fusion recorded.
func TestKernelTable(t *testing.T) {
	m, err := hlo.ParseFile("testdata/control/loop.hlo")
	if err != nil {
		t.Fatal(err)
	}
	var st *State
	spy := Pass{Name: "spy", Requires: []Product{ProductKernels, ProductTiles, ProductFlags},
		Run: func(_ *hlo.Module, s *State) (bool, error) { st = s; return false, nil }}
	p, err := compile(m, nil, opts(), append(Passes(), spy))
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Kernels) != len(p.Kernels) || len(p.Kernels) < 2 {
		t.Fatalf("%d kernel sites, %d kernels", len(st.Kernels), len(p.Kernels))
	}
	for i, site := range st.Kernels {
		k := p.Kernels[i]
		if site.Fusion.Name != k.Name || site.Key != k.Key || site.Info != k.Info || site.Root != k.Root ||
			site.Computation.Name != k.Computation || site.Key != KernelKey(site.Fusion.Calls) || k.Root == "" {
			t.Errorf("site %d (%s in %s, root %s) does not match kernel %s in %s (root %s)",
				i, site.Fusion.Name, site.Computation.Name, site.Root, k.Name, k.Computation, k.Root)
		}
	}
	if len(st.Trips) != 1 {
		t.Errorf("%d loops with trip counts, want 1", len(st.Trips))
	}
	for w, trip := range st.Trips {
		if w.Opcode != hlo.OpWhile || trip != (Trip{N: 8, Source: "induction", Known: true}) {
			t.Errorf("trip of %s: %+v, want 8 by induction", w.Name, trip)
		}
	}
	if last := p.Passes[len(p.Passes)-1]; last.Name != "spy" || last.Changed {
		t.Errorf("last pass run %+v, want spy, unchanged", last)
	}
}
