package compiler

import (
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// TestTripCountDataDependentBound: a generate loop whose condition is `and(i < N, not
// done)` (Gemma's dumps; 7 of 30 held-out loop programs once reported an unknown trip
// count) runs at most N times: the static bound, with trip_source "bound", as XLA's loop
// analysis derives it from the compare against a constant.
func TestTripCountDataDependentBound(t *testing.T) {
	const loop = `HloModule gen
cond {
  cp = (s32[], pred[], f32[64,128]) parameter(0)
  ci = s32[] get-tuple-element(cp), index=0
  n = s32[] constant(64)
  lt = pred[] compare(ci, n), direction=LT
  done = pred[] get-tuple-element(cp), index=1
  nd = pred[] not(done)
  m = s32[] constant(100)
  lt2 = pred[] compare(ci, m), direction=LT
  ROOT c = pred[] and(ROOT_OPS)
}
body {
  bp = (s32[], pred[], f32[64,128]) parameter(0)
  bi = s32[] get-tuple-element(bp), index=0
  st = s32[] constant(1)
  nx = s32[] add(bi, st)
  x = f32[64,128] get-tuple-element(bp), index=2
  y = f32[64,128] exponential(x)
  r = f32[] constant(0)
  s = f32[] reduce(y, r), dimensions={0,1}, to_apply=sum
  h = f32[] constant(1000)
  d = pred[] compare(s, h), direction=GT
  ROOT t = (s32[], pred[], f32[64,128]) tuple(nx, d, y)
}
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  p = f32[64,128] parameter(0)
  z = s32[] constant(0)
  f = pred[] constant(false)
  init = (s32[], pred[], f32[64,128]) tuple(z, f, p)
  w = (s32[], pred[], f32[64,128]) while(init), condition=cond, body=body
  ROOT r = f32[64,128] get-tuple-element(w), index=2
}
`
	for _, c := range []struct {
		ops   string
		want  int64
		known bool
	}{
		{"lt, nd", 64, true},
		{"nd, lt", 64, true},
		{"lt2, lt", 64, true}, // the least bound
		{"nd, nd", 0, false},  // nothing bounds it
	} {
		t.Run(c.ops, func(t *testing.T) {
			checkBoundTrips(t, parseText(t, strings.Replace(loop, "ROOT_OPS", c.ops, 1)), c.want, c.known)
		})
	}
}

// TestTripCountOverflowIsUnknown: bound - start beyond int64 is no trip count, never a
// wrapped one.
func TestTripCountOverflowIsUnknown(t *testing.T) {
	src := strings.NewReplacer("s32[]", "s64[]", "constant(-5)", "constant(-9223372036854775807)", "constant(5)", "constant(9223372036854775807)").
		Replace(loopModule(-5, 5, 1, "LT", ""))
	m := parseText(t, src)
	if n, src, ok := TripCount(m.Entry.Lookup("w")); ok {
		t.Errorf("TripCount = %d, %q, true; want unknown (the difference overflows)", n, src)
	}
}

// checkBoundTrips checks that the while loop w of m has want trips from its bound (or,
// unless known, no trip count), and that the compiled schedule's loop says the same.
func checkBoundTrips(t *testing.T, m *hlo.Module, want int64, known bool) {
	t.Helper()
	n, src, ok := TripCount(m.Entry.Lookup("w"))
	if ok != known || (ok && (n != want || src != "bound")) {
		t.Fatalf("TripCount = %d, %q, %v; want %d, \"bound\", %v", n, src, ok, want, known)
	}
	if !known {
		return
	}
	p, err := Compile(m, nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	var l *Loop
	for _, s := range p.Schedule.Steps {
		if s.Loop != nil {
			l = s.Loop
		}
	}
	if l == nil || l.TripCount != want || !l.TripKnown || l.TripSource != "bound" {
		t.Errorf("schedule loop %+v, want %d trips from the bound", l, want)
	}
}
