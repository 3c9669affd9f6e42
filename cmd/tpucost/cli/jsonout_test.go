package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/internal/buildinfo"
	"github.com/tpucost/tpucost/tpusim"
)

// TestVersionJSON: --version --json prints the build info as JSON (it once printed the
// text line); --version alone still prints the line.
func TestVersionJSON(t *testing.T) {
	out, errs, code := run("--version", "--json")
	var info buildinfo.Info
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if code != 0 || dec.Decode(&info) != nil || info.Simulator != tpusim.Version || info.Module == "" || info.FeatureSchema == 0 {
		t.Errorf("--version --json: exit %d, stdout %q, stderr %q: want buildinfo.Info as JSON", code, out, errs)
	}
	if out, _, _ := run("--version"); !strings.HasPrefix(out, "tpucost ") || strings.Contains(out, "{") {
		t.Errorf("--version: %q, want the text line", out)
	}
}

// simJSON runs sim --json with args and returns its top-level keys and its kernels.
func simJSON(t *testing.T, args ...string) (map[string]json.RawMessage, []map[string]any) {
	t.Helper()
	out, errs, code := run(append([]string{"sim", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("sim %v: exit %d: %s", args, code, errs)
	}
	var top map[string]json.RawMessage
	var ks struct {
		Kernels []map[string]any `json:"kernels"`
	}
	if err := json.Unmarshal([]byte(out), &top); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(out), &ks); err != nil {
		t.Fatal(err)
	}
	return top, ks.Kernels
}

// TestSimJSONKeys: sim --json's kernels give their tile as an array of numbers (as
// compile does; it was "2048x128x256") and say whether they are approximate (as the docs
// say; it was absent unless true); staged_bytes and hbm_bytes are there exactly when the
// program is compiled with staging (they were 0 without --staging), --staging on even when
// nothing stages.
func TestSimJSONKeys(t *testing.T) {
	top, kernels := simJSON(t, "mlp_96x2_b1")
	if len(kernels) == 0 {
		t.Fatal("no kernels")
	}
	for _, k := range kernels {
		tile, ok := k["tile"].([]any)
		if !ok {
			t.Errorf("kernel %v: tile %#v, want an array", k["name"], k["tile"])
		}
		for _, d := range tile {
			if _, ok := d.(float64); !ok {
				t.Errorf("kernel %v: tile %v, want numbers", k["name"], tile)
			}
		}
		if _, ok := k["approximate"].(bool); !ok {
			t.Errorf("kernel %v: approximate %#v, want a bool", k["name"], k["approximate"])
		}
	}
	for _, key := range []string{"staged_bytes", "hbm_bytes"} {
		if _, ok := top[key]; ok {
			t.Errorf("sim without --staging has %s", key)
		}
	}
	// One kernel: no edge to stage, but --staging on was asked for.
	one := filepath.Join(t.TempDir(), "one.hlo")
	if err := os.WriteFile(one, []byte("HloModule one\nENTRY e {\n  p = f32[256,256] parameter(0)\n  ROOT t = f32[256,256] tanh(p)\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{one, "--staging", "on"}, {"mlp_1000x4_b64", "--chip", "v5e", "--staging", "auto"}} {
		top, _ := simJSON(t, args...)
		for _, key := range []string{"staged_bytes", "hbm_bytes"} {
			if _, ok := top[key]; !ok {
				t.Errorf("sim %v has no %s", args, key)
			}
		}
	}
}
