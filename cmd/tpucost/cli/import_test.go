package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// `sim` reads binary HLO (*.hlo.pb, a serialized HloModuleProto) like HLO text, and its
// JSON reports the ops timed approximately.
func TestSimBinaryHLO(t *testing.T) {
	data, err := os.ReadFile("../../../compiler/hlo/testdata/tpugraphs/module_tuning_data_layout.pb")
	if err != nil {
		t.Fatal(err)
	}
	// The module is field 1 of the ModuleTuningData.
	num, typ, n := protowire.ConsumeTag(data)
	if num != 1 || typ != protowire.BytesType {
		t.Fatalf("field %d type %d", num, typ)
	}
	mod, k := protowire.ConsumeBytes(data[n:])
	if k < 0 {
		t.Fatal(protowire.ParseError(k))
	}
	path := filepath.Join(t.TempDir(), "module.hlo.pb")
	if err := os.WriteFile(path, mod, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := run("sim", path, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r struct {
		TotalNs          float64 `json:"total_ns"`
		ApproximateOps   *int    `json:"approximate_ops"`
		ApproximateShare float64 `json:"approximate_share"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if !(r.TotalNs > 0) || r.ApproximateOps == nil || r.ApproximateShare < 0 || r.ApproximateShare > 1 {
		t.Errorf("report total %g, approximate ops %v share %g", r.TotalNs, r.ApproximateOps, r.ApproximateShare)
	}
}

// A shape whose size overflows is one error line with its position, never a negative time.
func TestSimRejectsOverflowingShape(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.hlo")
	src := "HloModule m\nENTRY e {\n  p = f32[99999999999,99999999999] parameter(0)\n  ROOT n = f32[99999999999,99999999999] negate(p)\n}\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := run("sim", path)
	if code == 0 || !strings.Contains(errs, path+":3:7: f32[99999999999,99999999999] is too large") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
