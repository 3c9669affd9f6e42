package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimHugeTripCountIsAnInteger: a loop counted to 2^63-1 simulates (its s64 bound once
// failed a simplification pass as an "unknown literal") and its trip_count is written as
// the integer it is, never as a float (9223372036854776000).
func TestSimHugeTripCountIsAnInteger(t *testing.T) {
	const src = `HloModule l
cond {
  p = (s64[], f32[8,128]) parameter(0)
  i = s64[] get-tuple-element(p), index=0
  n = s64[] constant(9223372036854775807)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s64[], f32[8,128]) parameter(0)
  i = s64[] get-tuple-element(p), index=0
  one = s64[] constant(1)
  i1 = s64[] add(i, one)
  x = f32[8,128] get-tuple-element(p), index=1
  e = f32[8,128] exponential(x)
  ROOT t = (s64[], f32[8,128]) tuple(i1, e)
}
ENTRY main {
  x = f32[8,128] parameter(0)
  z = s64[] constant(0)
  t = (s64[], f32[8,128]) tuple(z, x)
  ROOT w = (s64[], f32[8,128]) while(t), condition=cond, body=body
}
`
	path := filepath.Join(t.TempDir(), "loop.hlo")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := run("sim", path, "--json")
	if code != 0 || !strings.Contains(out, `"trip_count": 9223372036854775807,`) || !strings.Contains(out, `"trip_source": "induction"`) {
		t.Errorf("exit %d, stderr %q; want trip_count 9223372036854775807 written as an integer in:\n%.600s", code, errs, out)
	}
}
