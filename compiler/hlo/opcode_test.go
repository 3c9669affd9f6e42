package hlo

import (
	"strings"
	"testing"
)

// xlaOpcodes is XLA's HLO_OPCODE_LIST (xla/hlo/ir/hlo_opcode.h) as of 2025: every name
// must parse to an opcode that prints back the same.
var xlaOpcodes = strings.Fields(`abs acos acosh add add-dependency after-all all-gather
all-gather-done all-gather-start all-reduce all-reduce-done all-reduce-start all-to-all and
asin asinh async-done async-start async-update atan atan2 atanh batch-norm-grad
batch-norm-inference batch-norm-training bitcast bitcast-convert broadcast call cbrt ceil
cholesky clamp count-leading-zeros collective-broadcast collective-permute
collective-permute-done collective-permute-start collective-reduce compare complex
concatenate conditional constant convert convolution copy copy-done copy-start cosine cosh
custom-call divide domain dot dynamic-reshape dynamic-slice dynamic-update-slice erf
exponential exponential-minus-one fft floor fusion gather get-dimension-size
get-tuple-element imag infeed iota is-finite log log-plus-one logistic map maximum minimum
mulhi multiply negate not opt-barrier or outfeed pad parameter partition-id popcnt power
ragged-all-to-all ragged-dot real recv recv-done reduce reduce-precision reduce-scatter
reduce-window remainder replica-id reshape reverse rng rng-bit-generator
rng-get-and-update-state round-nearest-afz round-nearest-even rsqrt scaled-dot scan scatter
select select-and-scatter send send-done set-dimension-size shift-left
shift-right-arithmetic shift-right-logical shuffle sign sine sinh slice sort sqrt
stochastic-convert subtract tan tanh topk transpose triangular-solve tuple while xor`)

// Every XLA opcode parses, and this package has no other.
func TestEveryXLAOpcodeParses(t *testing.T) {
	for _, name := range xlaOpcodes {
		op, ok := ParseOpcode(name)
		if !ok || op.String() != name {
			t.Errorf("opcode %q: parsed %v %v", name, op, ok)
		}
	}
	if got := len(AllOpcodes()); got != len(xlaOpcodes) {
		t.Errorf("%d opcodes, want %d", got, len(xlaOpcodes))
	}
}

// The numeric values of the opcodes and element types existing before XLA's full list
// was added are hashed into kernel and dataset keys: they must not move.
func TestEnumValuesStable(t *testing.T) {
	for op, want := range map[Opcode]int{OpParameter: 1, OpAdd: 19, OpDot: 50, OpConvolution: 51, OpAfterAll: 78, OpAcos: 79} {
		if int(op) != want {
			t.Errorf("%s = %d, want %d", op, int(op), want)
		}
	}
	for et, want := range map[ElemType]int{PRED: 1, F32: 12, BF16: 11, C64: 14, Token: 15, TupleType: 16, F8E4M3FN: 17} {
		if int(et) != want {
			t.Errorf("%s = %d, want %d", et, int(et), want)
		}
	}
}

// Shape rules of the ops real programs use, including results left to inference.
func TestExtendedShapeRules(t *testing.T) {
	m := mustParse(t, `HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[8,4,4,16] parameter(0)
  sc = f32[16] parameter(1)
  of = f32[16] parameter(2)
  bnt = batch-norm-training(x, sc, of), epsilon=0.001, feature_index=3
  m = f32[16] parameter(3)
  v = f32[16] parameter(4)
  bni = batch-norm-inference(x, sc, of, m, v), epsilon=0.001, feature_index=3
  bng = batch-norm-grad(x, sc, m, v, bni), epsilon=0.001, feature_index=3
  sq = f64[5,3,3] parameter(5)
  ch = cholesky(sq), lower=true
  rhs = f64[5,3,7] parameter(6)
  ts = triangular-solve(sq, rhs), left_side=true, lower=true, transpose_a=NO_TRANSPOSE
  l = bf16[2,50000] parameter(7)
  tk = topk(l), k=10, largest=true
  pid = partition-id()
  rid = replica-id()
  re = f32[3] parameter(8)
  cx = complex(re, re)
  acs = acos(re)
  rp = reduce-precision(re), exponent_bits=5, mantissa_bits=10
  ob = opt-barrier(x)
  mp = map(re, re), dimensions={0}, to_apply=add
  ag = f32[8,4,4,64] all-gather(x), channel_id=1, replica_groups={{0,1,2,3}}, dimensions={3}, use_global_device_ids=true
  rs = f32[2,4,4,16] reduce-scatter(x), replica_groups={{0,1,2,3}}, dimensions={0}, to_apply=add
  f8a = f8e5m2[16,32] parameter(9)
  f8b = f8e4m3fn[32,8] parameter(10)
  ROOT d = bf16[16,8] dot(f8a, f8b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
`)
	want := map[string]string{
		"bnt": "(f32[8,4,4,16], f32[16], f32[16])", "bni": "f32[8,4,4,16]", "bng": "(f32[8,4,4,16], f32[16], f32[16])",
		"ch": "f64[5,3,3]", "ts": "f64[5,3,7]", "tk": "(bf16[2,10], s32[2,10])", "pid": "u32[]", "rid": "u32[]",
		"cx": "c64[3]", "acs": "f32[3]", "rp": "f32[3]", "ob": "f32[8,4,4,16]", "mp": "f32[3]", "ag": "f32[8,4,4,64]",
		"rs": "f32[2,4,4,16]", "d": "bf16[16,8]",
	}
	for name, s := range want {
		if got := find(t, m.Entry, name).Shape.StringNoLayout(); got != s {
			t.Errorf("%s: %s, want %s", name, got, s)
		}
	}
	roundTrip(t, m)

	bad := []struct{ src, msg string }{
		{"  ROOT c = cholesky(x)", "cholesky needs square matrices"},
		{"  ROOT t = topk(x), k=99", "topk needs k= between 0 and the last dimension"},
		{"  ROOT a = all-gather(x), dimensions={0}", "the result shape of all-gather must be written"},
		{"  ROOT b = batch-norm-training(x, x, x), feature_index=1", "batch-norm-training operand 1 is f32[2,3], want f32[3]"},
	}
	for _, tc := range bad {
		pe := parseErr(t, "HloModule m\nENTRY e {\n  x = f32[2,3] parameter(0)\n"+tc.src+"\n}\n")
		if !strings.Contains(pe.Msg, tc.msg) {
			t.Errorf("%s: error %v, want %q", tc.src, pe, tc.msg)
		}
	}
}
