package cost

import (
	"math"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
)

func parseEntry(t *testing.T, src string) *hlo.Computation {
	t.Helper()
	m, err := hlo.Parse("t.hlo", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return m.Entry
}

// The cost entries of the library-like and collective ops (formulas in otherCost's doc).
func TestOtherOpCosts(t *testing.T) {
	e := parseEntry(t, `HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  sq = f32[4,32,32] parameter(0)
  ch = f32[4,32,32] cholesky(sq), lower=true
  rhs = f32[4,32,8] parameter(1)
  ts = f32[4,32,8] triangular-solve(sq, rhs), left_side=true, lower=true
  x = f32[64,16] parameter(2)
  sc = f32[16] parameter(3)
  bnt = (f32[64,16], f32[16], f32[16]) batch-norm-training(x, sc, sc), epsilon=0.001, feature_index=1
  l = f32[2,1024] parameter(4)
  tk = (f32[2,16], s32[2,16]) topk(l), k=16, largest=true
  c = c64[8,256] parameter(5)
  ff = c64[8,256] fft(c), fft_type=FFT, fft_length={256}
  ar = f32[64,16] all-reduce(x), to_apply=add
  ROOT ag = f32[128,16] all-gather(x), dimensions={0}
}
`)
	want := map[string]float64{
		"ch":  4 * 2 * 32 * 32 * 32 / 3.0, // n^3/3 multiply-adds per matrix
		"ts":  4 * 32 * 8 * 32,            // n^2 m per system
		"bnt": 7 * 64 * 16,
		"tk":  2 * 1024 * 4, // log2(16) compares per input element
		"ff":  5 * 8 * 256 * 8,
		"ar":  64 * 16,
		"ag":  0, // data movement only
	}
	const tol = 1e-9 // exact formulas; relative tolerance for float rounding only
	for name, w := range want {
		in := e.Lookup(name)
		c := Of(in)
		if math.Abs(c.Flops-w) > tol*math.Max(w, 1) || c.VectorOps != c.Flops {
			t.Errorf("%s: flops %g vector %g, want %g", name, c.Flops, c.VectorOps, w)
		}
		if c.Bytes() <= 0 {
			t.Errorf("%s: no bytes counted", name)
		}
		if !Approximate(in.Opcode) {
			t.Errorf("%s is not marked approximate", name)
		}
	}
	for _, name := range []string{"x", "sq"} {
		if Approximate(e.Lookup(name).Opcode) {
			t.Errorf("%s marked approximate", name)
		}
	}
}

// Every opcode has a cost entry: Of never panics and never counts negative work on a
// well-formed instruction, and the elementwise ones count their elements.
func TestEveryOpcodeHasCost(t *testing.T) {
	x := &hlo.Instruction{Name: "x", Opcode: hlo.OpParameter, Shape: hlo.Array(hlo.F32, 4, 4)}
	for _, op := range hlo.AllOpcodes() {
		in := &hlo.Instruction{Name: "y", Opcode: op, Shape: hlo.Array(hlo.F32, 4, 4)}
		a := op.Info().Arity
		if a == hlo.Variadic {
			a = 2
		}
		if a > 0 {
			for i := 0; i < a; i++ {
				in.Operands = append(in.Operands, x)
			}
		}
		if op == hlo.OpDot || op == hlo.OpConvolution || op == hlo.OpReduce || op == hlo.OpScatter || op == hlo.OpSelectAndScatter {
			continue // need dimension numbers or computations; covered by TestOpCosts
		}
		c := Of(in)
		if c.Flops < 0 || c.VectorOps < 0 || c.BytesRead < 0 || c.BytesWritten < 0 || c.Transcendentals < 0 {
			t.Errorf("%s: negative cost %+v", op, c)
		}
		if op.IsElementwise() && c.Flops+c.Transcendentals == 0 {
			t.Errorf("%s: elementwise op with no work", op)
		}
	}
}
