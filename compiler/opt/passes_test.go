package opt

import (
	"strconv"
	"strings"
	"testing"
)

// passCase is one hand-written module for one pass: the expected expression of the
// entry root afterwards and the expected OpCount.
type passCase struct {
	pass, name string
	src        string // entry computation body (or a whole module when it starts with "HloModule")
	want       string // expr of the entry root after the pass
	ops        int    // OpCount after the pass
}

func (c passCase) module(t testing.TB) string {
	if strings.HasPrefix(c.src, "HloModule") {
		return c.src
	}
	return "HloModule " + moduleName(c.name) + "\n\nENTRY %main {\n" + c.src + "\n}\n"
}

var passCases = []passCase{
	// algsimp: arithmetic identities
	{"algsimp", "x+0 x*1 x-0 x/1", `
  %x = f32[2,3] parameter(0)
  %zero = f32[] constant(0)
  %one = f32[] constant(1)
  %z = f32[2,3] broadcast(%zero), dimensions={}
  %o = f32[2,3] broadcast(%one), dimensions={}
  %a = f32[2,3] add(%x, %z)
  %b = f32[2,3] multiply(%o, %a)
  %c = f32[2,3] subtract(%b, %z)
  ROOT %d = f32[2,3] divide(%c, %o)`, "x", 0},
	{"algsimp", "0+x and x^1", `
  %x = f32[4] parameter(0)
  %zero = f32[4] constant({0, 0, -0, 0})
  %one = f32[] constant(1)
  %a = f32[4] add(%zero, %x)
  %o = f32[4] broadcast(%one), dimensions={}
  ROOT %p = f32[4] power(%a, %o)`, "x", 0},
	{"algsimp", "x*0 float stays", `
  %x = f32[4] parameter(0)
  %zero = f32[] constant(0)
  %z = f32[4] broadcast(%zero), dimensions={}
  ROOT %m = f32[4] multiply(%x, %z)`, "multiply(x, broadcast[](0))", 3},
	{"algsimp", "x*0 integer", `
  %x = s32[4] parameter(0)
  %zero = s32[] constant(0)
  %z = s32[4] broadcast(%zero), dimensions={}
  ROOT %m = s32[4] multiply(%x, %z)`, "broadcast[](0)", 2},
	{"algsimp", "double negation and not", `
  %x = f32[3] parameter(0)
  %p = pred[3] parameter(1)
  %n1 = f32[3] negate(%x)
  %n2 = f32[3] negate(%n1)
  %q1 = pred[3] not(%p)
  %q2 = pred[3] not(%q1)
  ROOT %s = f32[3] select(%q2, %n2, %x)`, "x", 0},
	{"algsimp", "add of negate", `
  %x = f32[3] parameter(0)
  %y = f32[3] parameter(1)
  %n = f32[3] negate(%y)
  %a = f32[3] add(%x, %n)
  %m = f32[3] negate(%x)
  %b = f32[3] add(%m, %y)
  %w = f32[3] negate(%a)
  %c = f32[3] subtract(%b, %w)
  ROOT %t = (f32[3], f32[3], f32[3]) tuple(%a, %b, %c)`, "tuple(subtract(x, y), subtract(y, x), add(subtract(y, x), subtract(x, y)))", 4},
	{"algsimp", "abs of abs and negate", `
  %x = f32[3] parameter(0)
  %n = f32[3] negate(%x)
  %a = f32[3] abs(%n)
  ROOT %b = f32[3] abs(%a)`, "abs(x)", 1},
	{"algsimp", "max min and or identities", `
  %x = f32[3] parameter(0)
  %p = pred[3] parameter(1)
  %ninf = f32[] constant(-inf)
  %b = f32[3] broadcast(%ninf), dimensions={}
  %m = f32[3] maximum(%b, %x)
  %inf = f32[3] constant({inf, inf, inf})
  %n = f32[3] minimum(%m, %inf)
  %mm = f32[3] maximum(%n, %n)
  %t = pred[] constant(true)
  %tb = pred[3] broadcast(%t), dimensions={}
  %a = pred[3] and(%p, %tb)
  %f = pred[3] constant({0, 0, 0})
  %o = pred[3] or(%f, %a)
  ROOT %s = f32[3] select(%o, %mm, %x)`, "x", 0},
	{"algsimp", "and with false absorbs", `
  %p = pred[3] parameter(0)
  %f = pred[] constant(false)
  %fb = pred[3] broadcast(%f), dimensions={}
  ROOT %a = pred[3] and(%p, %fb)`, "broadcast[](false)", 2},
	{"algsimp", "select on constant predicate", `
  %x = f32[3] parameter(0)
  %y = f32[3] parameter(1)
  %t = pred[] constant(true)
  %s = f32[3] select(%t, %x, %y)
  %f = pred[] constant(false)
  %fb = pred[3] broadcast(%f), dimensions={}
  %u = f32[3] select(%fb, %x, %s)
  ROOT %v = f32[3] add(%u, %y)`, "add(x, y)", 1},
	{"algsimp", "select of not swaps", `
  %x = f32[3] parameter(0)
  %y = f32[3] parameter(1)
  %p = pred[3] parameter(2)
  %n = pred[3] not(%p)
  ROOT %s = f32[3] select(%n, %x, %y)`, "select(p, y, x)", 1},
	// converts and copies
	{"algsimp", "convert to the same type and exact chain", `
  %x = f32[3] parameter(0)
  %a = f32[3] convert(%x)
  %b = f64[3] convert(%a)
  ROOT %c = f32[3] convert(%b)`, "x", 0},
	{"algsimp", "exact chain to a third type", `
  %x = bf16[3] parameter(0)
  %a = f32[3] convert(%x)
  ROOT %b = f16[3] convert(%a)`, "convertf16(x)", 1},
	{"algsimp", "inexact chain stays", `
  %x = f32[3] parameter(0)
  %a = bf16[3] convert(%x)
  ROOT %b = f32[3] convert(%a)`, "convertf32(convertbf16(x))", 2},
	{"algsimp", "integer widening chain", `
  %x = s8[3] parameter(0)
  %a = s32[3] convert(%x)
  %b = f64[3] convert(%a)
  ROOT %c = s8[3] convert(%b)`, "x", 0},
	{"algsimp", "copy", `
  %x = f32[2,3] parameter(0)
  ROOT %c = f32[2,3] copy(%x)`, "x", 0},
	{"algsimp", "copy that changes the layout stays", `
  %x = f32[2,3]{1,0} parameter(0)
  ROOT %c = f32[2,3]{0,1} copy(%x)`, "copy(x)", 1},
	// data movement
	{"algsimp", "broadcast of broadcast", `
  %x = f32[3] parameter(0)
  %a = f32[3,4] broadcast(%x), dimensions={0}
  ROOT %b = f32[2,3,4] broadcast(%a), dimensions={1,2}`, "broadcast[1](x)", 1},
	{"algsimp", "identity broadcast reshape transpose", `
  %x = f32[2,3] parameter(0)
  %a = f32[2,3] broadcast(%x), dimensions={0,1}
  %b = f32[2,3] reshape(%a)
  ROOT %c = f32[2,3] transpose(%b), dimensions={0,1}`, "x", 0},
	{"algsimp", "reshape of reshape", `
  %x = f32[2,3,4] parameter(0)
  %a = f32[6,4] reshape(%x)
  ROOT %b = f32[24] reshape(%a)`, "reshape[24](x)", 1},
	{"algsimp", "reshape there and back", `
  %x = f32[2,3,4] parameter(0)
  %a = f32[6,4] reshape(%x)
  ROOT %b = f32[2,3,4] reshape(%a)`, "x", 0},
	{"algsimp", "transpose of transpose", `
  %x = f32[2,3,4] parameter(0)
  %a = f32[3,4,2] transpose(%x), dimensions={1,2,0}
  %b = f32[4,3,2] transpose(%a), dimensions={1,0,2}
  %c = f32[2,4,3] transpose(%x), dimensions={0,2,1}
  %d = f32[2,3,4] transpose(%c), dimensions={0,2,1}
  ROOT %t = (f32[4,3,2], f32[2,3,4]) tuple(%b, %d)`, "tuple(transpose[2 1 0](x), x)", 2},
	{"algsimp", "transpose moving unit dims is a reshape", `
  %x = f32[1,3,1,4] parameter(0)
  ROOT %a = f32[3,1,4,1] transpose(%x), dimensions={1,0,3,2}`, "reshape[3 1 4 1](x)", 1},
	{"algsimp", "data movement of a broadcast scalar", `
  %c = f32[] parameter(0)
  %b = f32[4,6] broadcast(%c), dimensions={}
  %r = f32[24] reshape(%b)
  %t = f32[6,4] transpose(%b), dimensions={1,0}
  %s = f32[2,6] slice(%b), slice={[1:3], [0:6]}
  %v = f32[4,6] reverse(%b), dimensions={0}
  ROOT %u = (f32[24], f32[6,4], f32[2,6], f32[4,6]) tuple(%r, %t, %s, %v)`,
		"tuple(broadcast[](c), broadcast[](c), broadcast[](c), broadcast[](c))", 5},
	{"algsimp", "slice of slice and full slice", `
  %x = f32[20,5] parameter(0)
  %a = f32[8,5] slice(%x), slice={[2:18:2], [0:5]}
  %b = f32[3,5] slice(%a), slice={[1:7:2], [0:5]}
  ROOT %c = f32[3,5] slice(%b), slice={[0:3], [0:5]}`, "slice[4:13:4][0:5:1](x)", 1},
	{"algsimp", "concatenate of one, pad of nothing, unit reverse", `
  %x = f32[1,3] parameter(0)
  %z = f32[] constant(0)
  %a = f32[1,3] concatenate(%x), dimensions={0}
  %b = f32[1,3] pad(%a, %z), padding=0_0x0_0
  ROOT %c = f32[1,3] reverse(%b), dimensions={0}`, "x", 0},
	{"algsimp", "reverse of reverse", `
  %x = f32[2,3] parameter(0)
  %a = f32[2,3] reverse(%x), dimensions={0,1}
  ROOT %b = f32[2,3] reverse(%a), dimensions={1,0}`, "x", 0},
	{"algsimp", "concatenate of adjacent slices", `
  %x = f32[6,4] parameter(0)
  %a = f32[2,4] slice(%x), slice={[0:2], [0:4]}
  %b = f32[3,4] slice(%x), slice={[2:5], [0:4]}
  %c = f32[1,4] slice(%x), slice={[5:6], [0:4]}
  ROOT %d = f32[6,4] concatenate(%a, %b, %c), dimensions={0}`, "x", 0},
	{"algsimp", "concatenate of partial adjacent slices and a nested concatenate", `
  %x = f32[6,4] parameter(0)
  %y = f32[2,4] parameter(1)
  %a = f32[2,4] slice(%x), slice={[1:3], [0:4]}
  %b = f32[2,4] slice(%x), slice={[3:5], [0:4]}
  %n = f32[4,4] concatenate(%y, %a), dimensions={0}
  ROOT %d = f32[6,4] concatenate(%n, %b), dimensions={0}`, "concatenate[0](y, slice[1:5:1][0:4:1](x))", 2},
	{"algsimp", "slice of concatenate", `
  %x = f32[2,4] parameter(0)
  %y = f32[3,4] parameter(1)
  %c = f32[5,4] concatenate(%x, %y), dimensions={0}
  %a = f32[2,4] slice(%c), slice={[3:5], [0:4]}
  %b = f32[2,4] slice(%c), slice={[0:2], [0:4]}
  ROOT %t = (f32[2,4], f32[2,4], f32[5,4]) tuple(%a, %b, %c)`, "tuple(slice[1:3:1][0:4:1](y), x, concatenate[0](x, y))", 3},
	{"algsimp", "slice of pad", `
  %x = f32[3,4] parameter(0)
  %v = f32[] parameter(1)
  %p = f32[7,4] pad(%x, %v), padding=2_2x0_0
  %a = f32[3,4] slice(%p), slice={[2:5], [0:4]}
  %b = f32[2,2] slice(%p), slice={[5:7], [1:3]}
  %c = f32[2,4] slice(%p), slice={[1:3], [0:4]}
  ROOT %t = (f32[3,4], f32[2,2], f32[2,4]) tuple(%a, %b, %c)`, "tuple(x, broadcast[](v), slice[1:3:1][0:4:1](pad(x, v)))", 4},
	{"algsimp", "strided slice inside a pad", `
  %x = f32[5,4] parameter(0)
  %v = f32[] parameter(1)
  %p = f32[8,4] pad(%x, %v), padding=2_1x0_0
  ROOT %a = f32[3,2] slice(%p), slice={[2:7:2], [1:4:2]}`, "slice[0:5:2][1:4:2](x)", 1},
	{"algsimp", "dynamic-slice at constant indices", `
  %x = f32[5,4] parameter(0)
  %i = s32[] constant(4)
  %j = s32[] constant(-1)
  ROOT %d = f32[2,3] dynamic-slice(%x, %i, %j), dynamic_slice_sizes={2,3}`, "slice[3:5:1][0:3:1](x)", 1},
	// reductions
	{"algsimp", "reduce over unit dimensions", `HloModule reduce_unit

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

ENTRY %main {
  %x = f32[3,1,4] parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[3,4] reduce(%x, %z), dimensions={1}, to_apply=%add
}
`, "reshape[3 4](x)", 1},
	{"algsimp", "reduce-max of a broadcast", `HloModule reduce_bcast

%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] maximum(%b, %a)
}

ENTRY %main {
  %x = f32[3] parameter(0)
  %bx = f32[4,3,5] broadcast(%x), dimensions={1}
  %z = f32[] constant(-inf)
  ROOT %r = f32[3] reduce(%bx, %z), dimensions={0,2}, to_apply=%max
}
`, "x", 0},
	{"algsimp", "reduce of reduce", `HloModule reduce_reduce

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

ENTRY %main {
  %x = f32[2,3,4] parameter(0)
  %z = f32[] constant(0)
  %r = f32[2,4] reduce(%x, %z), dimensions={1}, to_apply=%add
  ROOT %q = f32[4] reduce(%r, %z), dimensions={0}, to_apply=%add
}
`, "reduce[0 1](x, 0)", 2},
	{"algsimp", "reduce with a non-identity init stays", `HloModule reduce_init

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

ENTRY %main {
  %x = f32[3,1] parameter(0)
  %z = f32[] constant(1)
  ROOT %r = f32[3] reduce(%x, %z), dimensions={1}, to_apply=%add
}
`, "reduce[1](x, 1)", 2},

	// constant folding
	{"constant-folding", "scalar arithmetic and convert", `
  %x = f32[] parameter(0)
  %a = f32[] constant(2)
  %b = f32[] constant(3.5)
  %c = f32[] multiply(%a, %b)
  %i = s32[] constant(7)
  %d = f32[] convert(%i)
  %e = f32[] subtract(%c, %d)
  %f = f32[] exponential(%e)
  ROOT %g = f32[] add(%x, %f)`, "add(x, 1)", 2},
	{"constant-folding", "small arrays", `HloModule fold_arrays

%add (a: s32[], b: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %s = s32[] add(%a, %b)
}

ENTRY %main {
  %x = s32[3] parameter(0)
  %k = s32[2,3] constant({ {1, 2, 3}, {4, 5, 6} })
  %t = s32[3,2] transpose(%k), dimensions={1,0}
  %z = s32[] constant(0)
  %r = s32[3] reduce(%t, %z), dimensions={1}, to_apply=%add
  %sl = s32[2] slice(%r), slice={[1:3]}
  %p = s32[3] pad(%sl, %z), padding=1_0
  %v = s32[3] reverse(%p), dimensions={0}
  ROOT %o = s32[3] add(%x, %v)
}
`, "add(x, {9, 7, 0})", 2},
	{"constant-folding", "dot and concatenate", `
  %a = f32[2,2] constant({ {1, 2}, {3, 4} })
  %b = f32[2,1] constant({ {1}, {-1} })
  %d = f32[2,1] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %c = f32[2,2] concatenate(%d, %b), dimensions={1}
  ROOT %n = f32[2,2] negate(%c)`, "{ {1, -1}, {1, 1} }", 1},
	{"constant-folding", "bf16 rounding", `
  %a = bf16[] constant(1)
  %b = bf16[] constant(0.00390625)
  %c = bf16[] add(%a, %b)
  %d = bf16[] constant(0.01171875)
  %e = bf16[] add(%a, %d)
  ROOT %t = (bf16[], bf16[]) tuple(%c, %e)`, "tuple(1, 1.015625)", 3},
	{"constant-folding", "broadcast, iota and unknown payloads stay", `
  %a = f32[] constant(2)
  %b = f32[4] broadcast(%a), dimensions={}
  %i = f32[4] iota(), iota_dimension=0
  %k = f32[4] constant({...})
  %s = f32[4] add(%b, %i)
  ROOT %t = f32[4] add(%s, %k)`, "add(add(broadcast[](2), iota()), {...})", 6},
	{"constant-folding", "integer division by zero stays", `
  %a = s32[] constant(1)
  %b = s32[] constant(0)
  ROOT %c = s32[] divide(%a, %b)`, "divide(1, 0)", 3},
	{"constant-folding", "out-of-range conversion stays", `
  %a = f32[] constant(3e10)
  ROOT %c = s32[] convert(%a)`, "converts32(3e10)", 2},

	// cse
	{"cse", "commutative duplicates", `
  %x = f32[3] parameter(0)
  %y = f32[3] parameter(1)
  %a = f32[3] add(%x, %y)
  %b = f32[3] add(%y, %x)
  %c = f32[3] subtract(%x, %y)
  %d = f32[3] subtract(%y, %x)
  %e = f32[3] multiply(%a, %c)
  %f = f32[3] multiply(%b, %c)
  ROOT %t = (f32[3], f32[3], f32[3]) tuple(%e, %f, %d)`,
		"tuple(multiply(add(x, y), subtract(x, y)), multiply(add(x, y), subtract(x, y)), subtract(y, x))", 5},
	{"cse", "constants by value, not by payload text", `
  %a = f32[] constant(1)
  %b = f32[] constant(1.0)
  %c = f32[] constant(-0)
  %u = f32[2] constant({...})
  %v = f32[2] constant({...})
  %ba = f32[2] broadcast(%a), dimensions={}
  %bb = f32[2] broadcast(%b), dimensions={}
  %bc = f32[2] broadcast(%c), dimensions={}
  %s = f32[2] add(%ba, %bb)
  %t = f32[2] add(%u, %v)
  ROOT %r = (f32[2], f32[2], f32[2]) tuple(%s, %t, %bc)`,
		"tuple(add(broadcast[](1), broadcast[](1)), add({...}, {...}), broadcast[](-0))", 9},
	{"cse", "side effects are never merged", `
  %x = f32[3] parameter(0)
  %a = f32[3] custom-call(%x), custom_call_target="f"
  %b = f32[3] custom-call(%x), custom_call_target="f"
  %lo = f32[] constant(0)
  %hi = f32[] constant(1)
  %r1 = f32[3] rng(%lo, %hi), distribution=rng_uniform
  %r2 = f32[3] rng(%lo, %hi), distribution=rng_uniform
  ROOT %t = (f32[3], f32[3], f32[3], f32[3]) tuple(%a, %b, %r1, %r2)`,
		"tuple(custom-call(x), custom-call(x), rng(0, 1), rng(0, 1))", 7},
	{"cse", "identical reducers", `HloModule cse_reducers

%add1 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%add2 (c: f32[], d: f32[]) -> f32[] {
  %c = f32[] parameter(0)
  %d = f32[] parameter(1)
  ROOT %t = f32[] add(%c, %d)
}

ENTRY %main {
  %x = f32[3,4] parameter(0)
  %z = f32[] constant(0)
  %r1 = f32[3] reduce(%x, %z), dimensions={1}, to_apply=%add1
  %r2 = f32[3] reduce(%x, %z), dimensions={1}, to_apply=%add2
  ROOT %m = f32[3] multiply(%r1, %r2)
}
`, "multiply(reduce[1](x, 0), reduce[1](x, 0))", 3},

	// dce
	{"dce", "dead code, kept side effects", `HloModule dce_test

%unused (a: f32[]) -> f32[] {
  ROOT %a = f32[] parameter(0)
}

ENTRY %main {
  %x = f32[3] parameter(0)
  %dead1 = f32[3] exponential(%x)
  %dead2 = f32[3] negate(%dead1)
  %effect = f32[3] custom-call(%x), custom_call_target="log"
  ROOT %r = f32[3] abs(%x)
}
`, "abs(x)", 2},

	// tuple-simplifier
	{"tuple-simplifier", "get-tuple-element of tuple and reassembled tuple", `
  %x = f32[3] parameter(0)
  %y = s32[] parameter(1)
  %t = (f32[3], s32[]) tuple(%x, %y)
  %a = f32[3] get-tuple-element(%t), index=0
  %p = (f32[3], s32[]) parameter(2)
  %g0 = f32[3] get-tuple-element(%p), index=0
  %g1 = s32[] get-tuple-element(%p), index=1
  %q = (f32[3], s32[]) tuple(%g0, %g1)
  %n = f32[3] negate(%a)
  ROOT %r = ((f32[3], s32[]), f32[3]) tuple(%q, %n)`, "tuple(p, negate(x))", 2},

	// call-inliner
	{"call-inliner", "nested calls", `HloModule calls

%inner (a: f32[3]) -> f32[3] {
  %a = f32[3] parameter(0)
  ROOT %n = f32[3] negate(%a)
}

%outer (b: f32[3], c: f32[3]) -> f32[3] {
  %b = f32[3] parameter(0)
  %c = f32[3] parameter(1)
  %s = f32[3] add(%b, %c)
  ROOT %i = f32[3] call(%s), to_apply=%inner
}

ENTRY %main {
  %x = f32[3] parameter(0)
  %y = f32[3] parameter(1)
  %o = f32[3] call(%x, %y), to_apply=%outer
  ROOT %p = f32[3] call(%o, %x), to_apply=%outer
}
`, "negate(add(negate(add(x, y)), x))", 4},

	// while loops
	{"while-loop-simplifier", "trip count 0", whileModule(5, 5, "LT", true), "add(get-tuple-element1(tuple(5, x, x, 5)), x)", 5},
	{"while-loop-simplifier", "trip count 1", whileModule(4, 5, "LT", true),
		"add(get-tuple-element1(tuple(add(get-tuple-element0(tuple(4, x, x, 5)), 1), multiply(get-tuple-element1(tuple(4, x, x, 5)), {2, 2, 2}), " +
			"add(get-tuple-element2(tuple(4, x, x, 5)), get-tuple-element1(tuple(4, x, x, 5))), get-tuple-element3(tuple(4, x, x, 5)))), x)", 15},
	{"while-loop-simplifier", "trip count 1 counting down", whileModule(5, 4, "GT", true),
		"add(get-tuple-element1(tuple(subtract(get-tuple-element0(tuple(5, x, x, 4)), 1), multiply(get-tuple-element1(tuple(5, x, x, 4)), {2, 2, 2}), " +
			"add(get-tuple-element2(tuple(5, x, x, 4)), get-tuple-element1(tuple(5, x, x, 4))), get-tuple-element3(tuple(5, x, x, 4)))), x)", 15},
	{"while-loop-simplifier", "trip count 3: dead loop-carried values go", whileModule(0, 3, "LT", true),
		"add(get-tuple-element1(while(tuple(0, x))), x)", 15},
	{"while-loop-simplifier", "bound in the loop state: no trip count", whileModule(4, 5, "LT", false),
		"add(get-tuple-element1(while(tuple(4, x, 5))), x)", 17},
	{"while-loop-constant-sinking", "invariant constant bound", whileModule(4, 5, "LT", false),
		"add(get-tuple-element1(while(tuple(4, x, x, 5))), x)", 20},
	{"simplify", "constant sinking gives the trip count", whileModule(4, 5, "LT", false), "add(multiply(x, {2, 2, 2}), x)", 3},

	// movers
	{"reshape-mover", "transposes sink and cancel", `
  %x = f32[2,3] parameter(0)
  %y = f32[2,3] parameter(1)
  %tx = f32[3,2] transpose(%x), dimensions={1,0}
  %ty = f32[3,2] transpose(%y), dimensions={1,0}
  %two = f32[] constant(2)
  %b = f32[3,2] broadcast(%two), dimensions={}
  %m = f32[3,2] multiply(%tx, %b)
  %a = f32[3,2] add(%m, %ty)
  ROOT %r = f32[2,3] transpose(%a), dimensions={1,0}`,
		"transpose[1 0](transpose[1 0](add(multiply(x, broadcast[](2)), y)))", 6},
	{"reshape-mover", "reshapes of one shape", `
  %x = f32[2,3] parameter(0)
  %y = f32[2,3] parameter(1)
  %rx = f32[6] reshape(%x)
  %ry = f32[6] reshape(%y)
  ROOT %a = f32[6] maximum(%rx, %ry)`, "reshape[6](maximum(x, y))", 2},
	{"reshape-mover", "shared transpose stays", `
  %x = f32[2,3] parameter(0)
  %tx = f32[3,2] transpose(%x), dimensions={1,0}
  %n = f32[3,2] negate(%tx)
  ROOT %t = (f32[3,2], f32[3,2]) tuple(%n, %tx)`, "tuple(negate(transpose[1 0](x)), transpose[1 0](x))", 3},
	{"broadcast-sinking", "broadcasts of one shape and scalars", `
  %x = f32[3] parameter(0)
  %y = f32[3] parameter(1)
  %bx = f32[2,3] broadcast(%x), dimensions={1}
  %by = f32[2,3] broadcast(%y), dimensions={1}
  %a = f32[2,3] add(%bx, %by)
  %c = f32[] constant(3)
  %bc = f32[2,3] broadcast(%c), dimensions={}
  %n = f32[2,3] negate(%bc)
  ROOT %m = f32[2,3] multiply(%a, %n)`, "broadcast[1](multiply(add(x, y), broadcast[](negate(3))))", 6},
	{"transpose-folding", "dot operands", `
  %a = f32[4,3] parameter(0)
  %b = f32[5,4] parameter(1)
  %ta = f32[3,4] transpose(%a), dimensions={1,0}
  %tb = f32[4,5] transpose(%b), dimensions={1,0}
  ROOT %d = f32[3,5] dot(%ta, %tb), lhs_contracting_dims={1}, rhs_contracting_dims={0}`,
		"dot[][0][][1](a, b)", 1},
	{"transpose-folding", "batch dot operand and result", `
  %a = f32[2,4,3] parameter(0)
  %b = f32[2,4,5] parameter(1)
  %ta = f32[2,3,4] transpose(%a), dimensions={0,2,1}
  %d = f32[2,3,5] dot(%ta, %b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  ROOT %t = f32[2,5,3] transpose(%d), dimensions={0,2,1}`,
		"dot[0][1][0][1](b, a)", 1},
	{"transpose-folding", "transpose reordering free dims stays", `
  %a = f32[3,4,5] parameter(0)
  %b = f32[5,2] parameter(1)
  %ta = f32[4,3,5] transpose(%a), dimensions={1,0,2}
  ROOT %d = f32[4,3,2] dot(%ta, %b), lhs_contracting_dims={2}, rhs_contracting_dims={0}`,
		"dot[][2][][0](transpose[1 0 2](a), b)", 2},
	{"transpose-folding", "convolution operands and result", `
  %x = f32[1,3,5,5] parameter(0)
  %k = f32[2,3,3,3] parameter(1)
  %tx = f32[1,5,5,3] transpose(%x), dimensions={0,2,3,1}
  %tk = f32[3,3,3,2] transpose(%k), dimensions={2,3,1,0}
  %c = f32[1,3,3,2] convolution(%tx, %tk), window={size=3x3}, dim_labels=b01f_01io->b01f
  ROOT %t = f32[1,2,3,3] transpose(%c), dimensions={0,3,1,2}`, "convolution(x, k)", 1},
	{"slice-sinker", "slices tiling two arrays", `
  %x = f32[4,3] parameter(0)
  %y = f32[4,3] parameter(1)
  %x1 = f32[1,3] slice(%x), slice={[0:1], [0:3]}
  %y1 = f32[1,3] slice(%y), slice={[0:1], [0:3]}
  %x2 = f32[3,3] slice(%x), slice={[1:4], [0:3]}
  %y2 = f32[3,3] slice(%y), slice={[1:4], [0:3]}
  %a1 = f32[1,3] add(%x1, %y1)
  %a2 = f32[3,3] add(%x2, %y2)
  %e = f32[1,3] exponential(%a1)
  ROOT %t = (f32[1,3], f32[3,3]) tuple(%e, %a2)`,
		"tuple(exponential(slice[0:1:1][0:3:1](add(x, y))), slice[1:4:1][0:3:1](add(x, y)))", 5},
	{"slice-sinker", "slices not covering the array stay", `
  %x = f32[4,3] parameter(0)
  %y = f32[4,3] parameter(1)
  %x1 = f32[1,3] slice(%x), slice={[0:1], [0:3]}
  %y1 = f32[1,3] slice(%y), slice={[0:1], [0:3]}
  %x2 = f32[2,3] slice(%x), slice={[1:3], [0:3]}
  %y2 = f32[2,3] slice(%y), slice={[1:3], [0:3]}
  %a1 = f32[1,3] add(%x1, %y1)
  %a2 = f32[2,3] add(%x2, %y2)
  ROOT %t = (f32[1,3], f32[2,3]) tuple(%a1, %a2)`,
		"tuple(add(slice[0:1:1][0:3:1](x), slice[0:1:1][0:3:1](y)), add(slice[1:3:1][0:3:1](x), slice[1:3:1][0:3:1](y)))", 7},
	{"pad-add-to-concat", "gradient of a four-way split", `
  %a = f32[2,3] parameter(0)
  %b = f32[2,3] parameter(1)
  %c = f32[2,3] parameter(2)
  %d = f32[2,3] parameter(3)
  %z = f32[] constant(0)
  %pd = f32[2,12] pad(%d, %z), padding=0_0x9_0
  %pc = f32[2,12] pad(%c, %z), padding=0_0x6_3
  %s1 = f32[2,12] add(%pd, %pc)
  %pb = f32[2,12] pad(%b, %z), padding=0_0x3_6
  %s2 = f32[2,12] add(%s1, %pb)
  %pa = f32[2,12] pad(%a, %z), padding=0_0x0_9
  ROOT %s3 = f32[2,12] add(%pa, %s2)`, "concatenate[1](a, b, c, d)", 1},
	{"pad-add-to-concat", "reassociated past another term", `
  %a = f32[2,3] parameter(0)
  %b = f32[2,3] parameter(1)
  %u = f32[2,8] parameter(2)
  %z = f32[] constant(-0)
  %pa = f32[2,8] pad(%a, %z), padding=0_0x1_4
  %s1 = f32[2,8] add(%u, %pa)
  %pb = f32[2,8] pad(%b, %z), padding=0_0x4_1
  ROOT %s2 = f32[2,8] add(%pb, %s1)`, "add(u, pad(concatenate[1](a, b), -0))", 4},
	{"pad-add-to-concat", "overlapping or gapped windows stay", `
  %a = f32[2,3] parameter(0)
  %b = f32[2,3] parameter(1)
  %z = f32[] constant(0)
  %pa = f32[2,8] pad(%a, %z), padding=0_0x0_5
  %pb = f32[2,8] pad(%b, %z), padding=0_0x4_1
  %pc = f32[2,8] pad(%b, %z), padding=0_0x2_3
  %s1 = f32[2,8] add(%pa, %pb)
  %s2 = f32[2,8] add(%pa, %pc)
  ROOT %t = (f32[2,8], f32[2,8]) tuple(%s1, %s2)`, "tuple(add(pad(a, 0), pad(b, 0)), add(pad(a, 0), pad(b, 0)))", 7},
	{"zero-sized-hlo-elimination", "zero-element arrays", `HloModule zeros

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

ENTRY %main {
  %x = f32[2,0] parameter(0)
  %y = f32[2,3] parameter(1)
  %v = f32[] parameter(2)
  %e = f32[2,0] exponential(%x)
  %c = f32[2,3] concatenate(%e, %y), dimensions={1}
  %p = f32[2,2] pad(%x, %v), padding=0_0x1_1
  %r = f32[2] reduce(%x, %v), dimensions={1}, to_apply=%add
  ROOT %t = (f32[2,3], f32[2,2], f32[2]) tuple(%c, %p, %r)
}
`, "tuple(y, broadcast[](v), broadcast[](v))", 3},
}

// whileModule is a counting loop: i from init while compare(i, limit, dir) holds, i+1
// (or i-1 for GT), doubling x, carrying a dead accumulator and a loop-invariant element
// holding the bound. With boundInCond the condition compares against a constant of its
// own; without, against the loop-invariant element.
func whileModule(init, limit int, dir string, boundInCond bool) string {
	step := "add"
	if dir == "GT" {
		step = "subtract"
	}
	bound := "%cn"
	if boundInCond {
		bound = "%ck"
	}
	return strings.NewReplacer("INIT", strconv.Itoa(init), "LIMIT", strconv.Itoa(limit), "DIR", dir, "STEP", step,
		"BOUND", bound).Replace(`HloModule loop

%cond (s: (s32[], f32[3], f32[3], s32[])) -> pred[] {
  %s = (s32[], f32[3], f32[3], s32[]) parameter(0)
  %ci = s32[] get-tuple-element(%s), index=0
  %cn = s32[] get-tuple-element(%s), index=3
  %ck = s32[] constant(LIMIT)
  ROOT %lt = pred[] compare(%ci, BOUND), direction=DIR
}

%body (t: (s32[], f32[3], f32[3], s32[])) -> (s32[], f32[3], f32[3], s32[]) {
  %t = (s32[], f32[3], f32[3], s32[]) parameter(0)
  %i = s32[] get-tuple-element(%t), index=0
  %one = s32[] constant(1)
  %next = s32[] STEP(%i, %one)
  %bx = f32[3] get-tuple-element(%t), index=1
  %two = f32[3] constant({2, 2, 2})
  %y = f32[3] multiply(%bx, %two)
  %acc = f32[3] get-tuple-element(%t), index=2
  %acc2 = f32[3] add(%acc, %bx)
  %n = s32[] get-tuple-element(%t), index=3
  ROOT %r = (s32[], f32[3], f32[3], s32[]) tuple(%next, %y, %acc2, %n)
}

ENTRY %main {
  %x = f32[3] parameter(0)
  %zero = s32[] constant(INIT)
  %limit = s32[] constant(LIMIT)
  %init = (s32[], f32[3], f32[3], s32[]) tuple(%zero, %x, %x, %limit)
  %w = (s32[], f32[3], f32[3], s32[]) while(%init), condition=%cond, body=%body
  %res = f32[3] get-tuple-element(%w), index=1
  ROOT %out = f32[3] add(%res, %x)
}
`)
}

// moduleName turns a case name into an HLO module name.
func moduleName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, s)
}

func TestPassCases(t *testing.T) {
	for _, c := range passCases {
		t.Run(c.pass+"/"+c.name, func(t *testing.T) {
			m := parseHLO(t, c.module(t))
			m.Name = moduleName(c.name)
			p := Default()
			if c.pass != p.Name {
				p = mustLookup(t, c.pass)
			}
			out, changed := runChecked(t, p, m)
			if got := expr(out.Entry.Root); got != c.want {
				t.Errorf("root = %s\nwant   %s\nmodule:\n%s", got, c.want, out)
			}
			if got := OpCount(out); got != c.ops {
				t.Errorf("OpCount = %d, want %d\nmodule:\n%s", got, c.ops, out)
			}
			if textChanged := out.String() != m.Clone().String(); changed != textChanged {
				t.Errorf("changed = %v, but the text changed = %v", changed, textChanged)
			}
		})
	}
}
