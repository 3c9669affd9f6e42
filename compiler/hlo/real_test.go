package hlo

import (
	"path/filepath"
	"strings"
	"testing"
)

// invalidByDesign are the real files that XLA's own shape rules reject, with the error
// the importer must give (file:line:col and what is wrong).
var invalidByDesign = map[string]string{
	// XLA's hlo_to_mhlo import test: a convolution whose window (3x3) contradicts its
	// 2x2 kernel, which XLA's shape inference rejects too.
	"import.hlo": "import.hlo:502:3: %convolution.4: convolution window size 3 != kernel spatial size 2",
}

// TestRealFiles imports every real XLA dump in testdata/real: each verifies and
// round-trips through the printer (parse, print, parse: equal modules, identical text);
// the ones invalid by design fail with their expected error.
func TestRealFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/real/*.hlo")
	if err != nil || len(files) < 13 {
		t.Fatalf("real files: %v (%d found, want 13)", err, len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			m, err := ParseFile(f)
			if want, bad := invalidByDesign[filepath.Base(f)]; bad {
				if err == nil || !strings.HasSuffix(err.Error(), want) {
					t.Fatalf("error = %v, want ...%s", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := Verify(m); err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if err := CheckBounded(m); err != nil {
				t.Fatalf("CheckBounded: %v", err)
			}
			roundTrip(t, m)
		})
	}
}

func TestCheckBounded(t *testing.T) {
	src := "HloModule m\nf {\n  a = f32[?,3] parameter(0)\n  ROOT b = f32[?,3] abs(a)\n}\nENTRY e {\n  ROOT p = f32[<=4] parameter(0)\n}\n"
	m := mustParse(t, src)
	roundTrip(t, m)
	if err := CheckBounded(m); err != nil {
		t.Errorf("unreachable unbounded computation rejected: %v", err)
	}
	m = mustParse(t, strings.Replace(src, "ROOT p = f32[<=4] parameter(0)", "p = f32[?,3] parameter(0)\n  ROOT c = f32[?,3] call(p), to_apply=f", 1))
	if err := CheckBounded(m); err == nil || !strings.Contains(err.Error(), "computation e: %p has an unbounded dynamic dimension (f32[?,3])") {
		t.Errorf("CheckBounded = %v", err)
	}
}
