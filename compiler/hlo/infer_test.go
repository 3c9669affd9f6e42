package hlo

import (
	"strings"
	"testing"
)

// TestResultElementTypes pins the result element type of the ops whose result type is not
// their first operand's, as XLA's shape inference (shape_inference.cc) derives it: a
// module declaring XLA's type must parse and InferShape must give exactly that type (the
// parser accepts float-precision differences, as XLA's mixed-precision verifier does, so
// the inferred type is checked directly); a module declaring another type must not parse.
func TestResultElementTypes(t *testing.T) {
	cases := []struct {
		name string
		body string // the ENTRY body
		ok   bool
	}{
		{"real c64", "p0 = c64[8,128] parameter(0)\n  ROOT r = f32[8,128] real(p0)", true},
		{"imag c64", "p0 = c64[8,128] parameter(0)\n  ROOT r = f32[8,128] imag(p0)", true},
		{"abs c64", "p0 = c64[8,128] parameter(0)\n  ROOT r = f32[8,128] abs(p0)", true},
		{"real c128", "p0 = c128[4] parameter(0)\n  ROOT r = f64[4] real(p0)", true},
		{"imag c128", "p0 = c128[4] parameter(0)\n  ROOT r = f64[4] imag(p0)", true},
		{"abs c128", "p0 = c128[4] parameter(0)\n  ROOT r = f64[4] abs(p0)", true},
		{"real c64 declared complex", "p0 = c64[4] parameter(0)\n  ROOT r = c64[4] real(p0)", false},
		{"abs c128 declared complex", "p0 = c128[4] parameter(0)\n  ROOT r = c128[4] abs(p0)", false},
		{"real f32", "p0 = f32[4] parameter(0)\n  ROOT r = f32[4] real(p0)", true},
		{"abs s32", "p0 = s32[4] parameter(0)\n  ROOT r = s32[4] abs(p0)", true},
		{"sign c64 stays complex", "p0 = c64[4] parameter(0)\n  ROOT r = c64[4] sign(p0)", true},
		{"negate c64 stays complex", "p0 = c64[4] parameter(0)\n  ROOT r = c64[4] negate(p0)", true},
		{"exp c64 stays complex", "p0 = c64[4] parameter(0)\n  ROOT r = c64[4] exponential(p0)", true},
		{"complex f32", "a = f32[4] parameter(0)\n  b = f32[4] parameter(1)\n  ROOT r = c64[4] complex(a, b)", true},
		{"compare c64", "a = c64[4] parameter(0)\n  b = c64[4] parameter(1)\n  ROOT r = pred[4] compare(a, b), direction=EQ", true},
		{"is-finite", "a = bf16[4] parameter(0)\n  ROOT r = pred[4] is-finite(a)", true},
		{"reduce into an f32 accumulator", "a = bf16[4,8] parameter(0)\n  z = f32[] constant(0)\n  ROOT r = f32[4] reduce(a, z), dimensions={1}, to_apply=add", true},
		{"reduce-window into an f32 accumulator", "a = bf16[4,8] parameter(0)\n  z = f32[] constant(0)\n  ROOT r = f32[4,4] reduce-window(a, z), window={size=1x2 stride=1x2}, to_apply=add", true},
		{"bitcast-convert to a narrower type", "p = f32[4] parameter(0)\n  ROOT r = s8[4,4] bitcast-convert(p)", true},
		{"bitcast-convert to a wider type", "p = bf16[4,2] parameter(0)\n  ROOT r = f32[4] bitcast-convert(p)", true},
		{"bitcast-convert of one width", "p = f32[4] parameter(0)\n  ROOT r = s32[4] bitcast-convert(p)", true},
		{"bitcast-convert to a wider type, wrong minor dim", "p = bf16[4,3] parameter(0)\n  ROOT r = f32[4] bitcast-convert(p)", false},
		{"add bf16 f32 is f32", "a = bf16[4] parameter(0)\n  b = f32[4] parameter(1)\n  ROOT r = f32[4] add(a, b)", true},
		{"multiply f32 bf16 is f32", "a = f32[4] parameter(0)\n  b = bf16[4] parameter(1)\n  ROOT r = f32[4] multiply(a, b)", true},
		{"add bf16 f16 is bf16 (range first)", "a = f16[4] parameter(0)\n  b = bf16[4] parameter(1)\n  ROOT r = bf16[4] add(a, b)", true},
		{"select of bf16 and f32 is f32", "p = pred[4] parameter(0)\n  a = bf16[4] parameter(1)\n  b = f32[4] parameter(2)\n  ROOT r = f32[4] select(p, a, b)", true},
		{"concatenate bf16 f32 is f32", "a = bf16[4] parameter(0)\n  b = f32[2] parameter(1)\n  ROOT r = f32[6] concatenate(a, b), dimensions={0}", true},
		{"add s32 f32 mixes kinds", "a = s32[4] parameter(0)\n  b = f32[4] parameter(1)\n  ROOT r = f32[4] add(a, b)", false},
		{"partition-id", "ROOT r = u32[] partition-id()", true},
		{"get-dimension-size", "a = f32[4] parameter(0)\n  ROOT r = s32[] get-dimension-size(a), dimensions={0}", true},
	}
	const add = "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n\n"
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := "HloModule m\n\n"
			if strings.Contains(tc.body, "to_apply=add") {
				src += add
			}
			src += "ENTRY main {\n  " + tc.body + "\n}\n"
			m, err := Parse("t.hlo", []byte(src))
			if tc.ok && err != nil {
				t.Fatalf("Parse: %v\n%s", err, src)
			}
			if tc.ok {
				root := m.Entry.Root
				got, err := InferShape(root)
				if err != nil {
					t.Fatalf("InferShape: %v", err)
				}
				if got.Elem != root.Shape.Elem {
					t.Errorf("InferShape(%s) element type = %s, want %s (XLA)", root.Opcode, got.Elem, root.Shape.Elem)
				}
			}
			if !tc.ok && err == nil {
				t.Fatalf("Parse accepted a wrong result type\n%s", src)
			}
		})
	}
}
