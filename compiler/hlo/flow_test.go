package hlo

import (
	"slices"
	"strings"
	"testing"
)

// flowModule: the entry runs loop A (condition ca, body ba) and then calls f and branches
// on a conditional (b0, b1); ba runs loop B (cb, bb) and calls f too, so f is reached both
// outside and inside a loop; f calls g.
const flowModule = `HloModule flow

g {
  gp = f32[4] parameter(0)
  ROOT gn = f32[4] negate(gp)
}

f {
  fp = f32[4] parameter(0)
  ROOT fc = f32[4] call(fp), to_apply=g
}

cb {
  cbp = (s32[], f32[4]) parameter(0)
  ROOT cbc = pred[] constant(false)
}

bb {
  ROOT bbp = (s32[], f32[4]) parameter(0)
}

ca {
  cap = (s32[], f32[4]) parameter(0)
  ROOT cac = pred[] constant(false)
}

ba {
  bap = (s32[], f32[4]) parameter(0)
  w = (s32[], f32[4]) while(bap), condition=cb, body=bb
  x = f32[4] get-tuple-element(w), index=1
  y = f32[4] call(x), to_apply=f
  i = s32[] get-tuple-element(w), index=0
  ROOT t = (s32[], f32[4]) tuple(i, y)
}

b0 {
  ROOT b0p = f32[4] parameter(0)
}

b1 {
  b1p = f32[4] parameter(0)
  ROOT b1n = f32[4] negate(b1p)
}

ENTRY main {
  p = f32[4] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[4]) tuple(z, p)
  w = (s32[], f32[4]) while(init), condition=ca, body=ba
  c = f32[4] call(p), to_apply=f
  k = pred[] constant(true)
  ROOT r = f32[4] conditional(k, c, c), true_computation=b0, false_computation=b1
}
`

func names(cs []*Computation) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

// TestFlowComputations: each option set lists what it follows, in its order, and InLoop
// marks what a loop reaches at any depth (g, called by f, which a loop body calls).
func TestFlowComputations(t *testing.T) {
	m, err := Parse("flow.hlo", []byte(flowModule))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		o    FlowOptions
		want []string
	}{
		{FlowOptions{Branches: true}, []string{"main", "ca", "ba", "b0", "b1", "cb", "bb"}},
		{FlowOptions{Calls: true, Order: DepthFirst}, []string{"main", "ca", "ba", "cb", "bb", "f", "g"}},
		{FlowOptions{Calls: true, Order: ModuleOrder}, []string{"g", "f", "cb", "bb", "ca", "ba", "main"}},
		{FlowOptions{Calls: true, Branches: true}, []string{"main", "ca", "ba", "f", "b0", "b1", "cb", "bb", "g"}},
	} {
		f, err := FlowComputations(m, c.o)
		if err != nil {
			t.Fatal(err)
		}
		if got := names(f.Computations); !slices.Equal(got, c.want) {
			t.Errorf("%+v: %v, want %v", c.o, got, c.want)
		}
	}
	f, err := FlowComputations(m, FlowOptions{Calls: true, Branches: true})
	if err != nil {
		t.Fatal(err)
	}
	var loop []string
	for _, c := range f.Computations {
		if f.InLoop[c] {
			loop = append(loop, c.Name)
		}
	}
	if want := []string{"ca", "ba", "f", "cb", "bb", "g"}; !slices.Equal(loop, want) {
		t.Errorf("in a loop: %v, want %v", loop, want)
	}
}

// TestFlowComputationsErrors: a module without an entry, a while without a body and (with
// Branches) an unresolvable conditional are errors naming what is wrong.
func TestFlowComputationsErrors(t *testing.T) {
	if _, err := FlowComputations(&Module{Name: "empty"}, FlowOptions{}); err == nil || !strings.Contains(err.Error(), "no entry") {
		t.Errorf("no entry: err = %v", err)
	}
	m, err := Parse("flow.hlo", []byte(flowModule))
	if err != nil {
		t.Fatal(err)
	}
	m.Entry.Lookup("r").Extra = nil
	if _, err := FlowComputations(m, FlowOptions{}); err != nil {
		t.Errorf("without Branches a conditional is not followed, yet: %v", err)
	}
	if _, err := FlowComputations(m, FlowOptions{Branches: true}); err == nil || !strings.Contains(err.Error(), "conditional r") {
		t.Errorf("unresolvable branches: err = %v", err)
	}
	m.Entry.Lookup("w").Body = nil
	if _, err := FlowComputations(m, FlowOptions{}); err == nil || !strings.Contains(err.Error(), "while w has no condition or body") {
		t.Errorf("while without a body: err = %v", err)
	}
}
