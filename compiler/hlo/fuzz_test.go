package hlo

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that Parse never panics, that its errors are *ParseError with a
// valid position, and that every module it accepts verifies, prints, and re-parses to
// an equal module that prints identically. Regression inputs live in
// testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob("testdata/*.hlo")
	if err != nil {
		f.Fatal(err)
	}
	real, err := filepath.Glob("testdata/real/*.hlo")
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range real {
		// Large seeds make minimizing every new input take minutes; TestRealFiles covers
		// the large files.
		if st, err := os.Stat(name); err == nil && st.Size() < 8<<10 {
			files = append(files, name)
		}
	}
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	for _, tc := range malformedCases() {
		f.Add([]byte(tc.src))
	}
	// The syntax of real XLA dumps: stack-frame tables, terse forms, dynamic dimensions,
	// new element types and opcodes, computation attributes.
	for _, src := range []string{
		stackFrameHeader,
		"HloModule c.1:\nf {\n  a = f64[3] parameter(0)\n  b = f64[3] parameter(1)\n  out = add(a, b)\n}\n",
		"HloModule m\nENTRY e {\n  p = f32[<=8,?]{1,0} parameter(0)\n  ROOT q = s4[2,<=3] parameter(1)\n}\n",
		"HloModule m\nENTRY e {\n  x = f8e4m3fn[4,4] parameter(0)\n  y = f8e5m2[4,4] parameter(1)\n  ROOT d = bf16[4,4] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n",
		"HloModule m\nENTRY e {\n  x = f32[4,8] parameter(0)\n  t = topk(x), k=2, largest=true\n  p = partition-id()\n  ROOT c = cholesky(f32[4,8] x), lower=true\n}, execution_thread=\"main\"\n",
		"HloModule m\nENTRY e {\n  x = f32[8] parameter(0)\n  ROOT c = f32[8] custom-call(x), custom_call_target=\"f\", literal=s32[] 1, replica_groups=mesh['a'=2] {'a'}\n}\n",
		// Modules without the header (XLA's emitter tests), layouts with E and S.
		"add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\nfusion {\n  p = s4[8,128]{1,0:E(4)} parameter(0)\n  c = s4[] constant(0)\n  ROOT r = s4[8]{0:E(4)S(1)} reduce(p, c), dimensions={1}, to_apply=add\n}\n",
		"ENTRY %e (a: f32[2]) -> f32[2] {\n  ROOT %a = f32[2]{0:T(256)S(1)} parameter(0)\n}\n",
	} {
		f.Add([]byte(src))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		m, err := Parse("fuzz.hlo", src)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is %T, want *ParseError", err, err)
			}
			if pe.Line < 1 || pe.Col < 1 || pe.File != "fuzz.hlo" || pe.Msg == "" {
				t.Fatalf("bad error position or message: %+v", pe)
			}
			return
		}
		if err := Verify(m); err != nil {
			t.Fatalf("parsed module does not verify: %v", err)
		}
		text := m.String()
		m2, err := Parse("printed.hlo", []byte(text))
		if err != nil {
			t.Fatalf("printed module does not parse: %v\n%s", err, text)
		}
		if err := ModulesEqual(m, m2); err != nil {
			t.Fatalf("printed module parses differently: %v\n%s", err, text)
		}
		if text2 := m2.String(); text2 != text {
			t.Fatalf("printing is not stable:\n%s\n---\n%s", text, text2)
		}
	})
}
