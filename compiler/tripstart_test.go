package compiler

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// gemmaLoop is a generate loop written like Gemma's: the position i starts at the prompt
// length, a reduce (sum) over the prompt mask, and runs while i CMP N, advancing by STEP.
// START, MASK, CMP, N, STEP and INIT are replaced per case; INIT builds the while's
// operand `init` from the start `len` and the carried array p.
const gemmaLoop = `HloModule gemma_generate
sum {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}
cond {
  cp = (s32[], f32[8,128]) parameter(0)
  ci = s32[] get-tuple-element(cp), index=0
  n = s32[] constant(N)
  ROOT c = pred[] compare(ci, n), direction=CMP
}
body {
  bp = (s32[], f32[8,128]) parameter(0)
  bi = s32[] get-tuple-element(bp), index=0
  st = s32[] constant(STEP)
  nx = s32[] add(bi, st)
  x = f32[8,128] get-tuple-element(bp), index=1
  y = f32[8,128] exponential(x)
  ROOT t = (s32[], f32[8,128]) tuple(nx, y)
}
ENTRY main {
  p = f32[8,128] parameter(0)
  MASK
  z = s32[] constant(0)
  START
  INIT
  w = (s32[], f32[8,128]) while(init), condition=cond, body=body
  ROOT r = f32[8,128] get-tuple-element(w), index=1
}
`

const (
	predMask   = "mask = pred[2,16] parameter(1)\n  mi = s32[2,16] convert(mask)"
	signedMask = "mi = s32[2,16] parameter(1)"
	sumStart   = "len = s32[] reduce(mi, z), dimensions={0,1}, to_apply=sum"
	plainInit  = "init = (s32[], f32[8,128]) tuple(len, p)"
)

func gemmaModule(mask, start, init, cmp string, n, step int) string {
	return strings.NewReplacer("MASK", mask, "START", start, "INIT", init, "CMP", cmp,
		"constant(N)", "constant("+strconv.Itoa(n)+")", "constant(STEP)", "constant("+strconv.Itoa(step)+")").Replace(gemmaLoop)
}

// TestTripCountComputedStart: a loop whose induction variable starts at a computed value
// and is bounded by a constant (Gemma's generate loop: 6 of 31 held-out loops were
// reported unknown) runs at most bound − (the least start) times, trip_source "bound".
func TestTripCountComputedStart(t *testing.T) {
	for _, c := range []struct {
		name, mask, start, init, cmp string
		n, step                      int
		want                         int64
		known                        bool
	}{
		// The sum of a 0/1 mask is ≥ 0: the bound itself.
		{"mask-sum", predMask, sumStart, plainInit, "LT", 64, 1, 64, true},
		{"mask-sum-le-step2", predMask, sumStart, plainInit, "LE", 64, 2, 33, true}, // 0, 2, …, 64
		// A lower limit above 0 is used: the prompt length plus 10.
		{"mask-sum-plus", predMask, sumStart + "\n  ten = s32[] constant(10)\n  len2 = s32[] add(len, ten)",
			"init = (s32[], f32[8,128]) tuple(len2, p)", "LT", 64, 1, 54, true},
		// No derivable lower limit (a signed mask): assumed non-negative, the bound.
		{"signed-mask", signedMask, sumStart, plainInit, "LT", 64, 1, 64, true},
		// … but never when that assumption is all that says the loop does not run.
		{"signed-mask-nonpositive-bound", signedMask, sumStart, plainInit, "LT", 0, 1, 0, false},
		// The start through a tuple and get-tuple-element of the init.
		{"through-gte", predMask, sumStart + "\n  t0 = (s32[], f32[8,128]) tuple(len, p)\n  s = s32[] get-tuple-element(t0), index=0",
			"init = (s32[], f32[8,128]) tuple(s, p)", "LT", 64, 1, 64, true},
		{"init-is-gte", predMask, sumStart + "\n  t0 = (s32[], f32[8,128]) tuple(len, p)\n  outer = ((s32[], f32[8,128]), f32[8,128]) tuple(t0, p)",
			"init = (s32[], f32[8,128]) get-tuple-element(outer), index=0", "LT", 64, 1, 64, true},
		// Counting down from the mask sum (at most 32) to 0: the upper limit of the start.
		{"count-down", predMask, sumStart, plainInit, "GT", 0, -1, 32, true},
		{"count-down-unbounded", signedMask, sumStart, plainInit, "GT", 0, -1, 0, false},
		// ne from a computed start may never meet the bound.
		{"ne", predMask, sumStart, plainInit, "NE", 64, 1, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkBoundTrips(t, parseText(t, gemmaModule(c.mask, c.start, c.init, c.cmp, c.n, c.step)), c.want, c.known)
		})
	}
}

// TestTripCountComputedConstantStart: a start computed from constants only is exact, an
// induction count, not a bound.
func TestTripCountComputedConstantStart(t *testing.T) {
	src := gemmaModule("", "a3 = s32[] constant(3)\n  a4 = s32[] constant(4)\n  len = s32[] add(a3, a4)", plainInit, "LT", 10, 1)
	m := parseText(t, src)
	if n, src, ok := TripCount(m.Entry.Lookup("w")); !ok || n != 3 || src != "induction" {
		t.Errorf("TripCount = %d, %q, %v; want 3, \"induction\", true", n, src, ok)
	}
}

// TestTripCountComputedStartConjunction: the generate loop's full condition, and(i < N,
// not done), with i starting at the prompt length.
func TestTripCountComputedStartConjunction(t *testing.T) {
	src := strings.Replace(gemmaModule(predMask, sumStart, plainInit, "LT", 64, 1),
		"  ROOT c = pred[] compare(ci, n), direction=LT\n",
		"  lt = pred[] compare(ci, n), direction=LT\n  x = f32[8,128] get-tuple-element(cp), index=1\n  r0 = f32[] constant(0)\n"+
			"  e = f32[] reduce(x, r0), dimensions={0,1}, to_apply=fsum\n  h = f32[] constant(1000)\n  done = pred[] compare(e, h), direction=GT\n"+
			"  nd = pred[] not(done)\n  ROOT c = pred[] and(lt, nd)\n", 1)
	src = strings.Replace(src, "cond {", "fsum {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\ncond {", 1)
	m := parseText(t, src)
	if n, src, ok := TripCount(m.Entry.Lookup("w")); !ok || n != 64 || src != "bound" {
		t.Errorf("TripCount = %d, %q, %v; want 64, \"bound\", true", n, src, ok)
	}
}

func TestMulChecked(t *testing.T) {
	for _, c := range []struct {
		a, b, want int64
		ok         bool
	}{
		{3, 4, 12, true},
		{-3, 4, -12, true},
		{math.MinInt64, 1, math.MinInt64, true},
		{math.MinInt64, -1, 0, false},
		{math.MaxInt64, 2, 0, false},
		{1 << 62, -2, math.MinInt64, true},
		{1 << 62, 2, 0, false},
	} {
		if got, ok := mulChecked(c.a, c.b); ok != c.ok || (ok && got != c.want) {
			t.Errorf("mulChecked(%d, %d) = %d, %v; want %d, %v", c.a, c.b, got, ok, c.want, c.ok)
		}
	}
}
