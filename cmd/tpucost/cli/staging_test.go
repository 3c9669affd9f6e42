package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/tpusim"
)

// TestStagingFlag (on v5e: one core, so the MLP's layers stage; on v4's megacore they do
// not, see docs/compiler.md): --staging on every command that compiles; sim --json reports the
// traffic staging avoids and the staged inputs; a tuned (effective) config reproduces the
// staged program without the flag; bad values are one-line errors.
func TestStagingFlag(t *testing.T) {
	sim := func(args ...string) tpusim.Report {
		t.Helper()
		out, errs, code := run(append([]string{"sim", "mlp_1000x4_b64", "--chip", "v5e", "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("sim %v: exit %d: %s", args, code, errs)
		}
		var r tpusim.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	off, on := sim(), sim("--staging", "on")
	if off.StagedBytes != 0 || on.StagedBytes <= 0 || on.TotalNs >= off.TotalNs {
		t.Errorf("staged_bytes off %g, on %g; total_ns off %g, on %g: want on to avoid traffic and be faster",
			off.StagedBytes, on.StagedBytes, off.TotalNs, on.TotalNs)
	}
	staged := 0
	for _, e := range on.Kernels {
		if e.KernelReport != nil && len(e.KernelReport.StagedInputs) > 0 {
			staged++
		}
	}
	if staged == 0 {
		t.Error("sim --staging on --json lists no staged_inputs")
	}
	if sim("--staging", "off").TotalNs != off.TotalNs {
		t.Error("--staging off differs from the default")
	}
	cfg := filepath.Join(t.TempDir(), "cfg.json")
	if _, errs, code := run("compile", "mlp_1000x4_b64", "--chip", "v5e", "--staging", "on", "--out", cfg, "--check"); code != 0 {
		t.Fatalf("compile --staging on --check: %s", errs)
	}
	data, err := os.ReadFile(cfg)
	if err != nil || !strings.Contains(string(data), `"staging"`) {
		t.Fatalf("effective config has no staging entries (%v): %.200s", err, data)
	}
	if again := sim("--config", cfg); again.TotalNs != on.TotalNs || again.StagedBytes != on.StagedBytes {
		t.Errorf("sim --config (staged effective config): %g ns, %g staged; want %g, %g", again.TotalNs, again.StagedBytes, on.TotalNs, on.StagedBytes)
	}
	for _, args := range [][]string{
		{"sim", "mlp_1000x4_b64", "--staging", "yes"},
		{"compile", "mlp_1000x4_b64", "--staging", ""},
		{"tune", "mlp_1000x4_b64", "--staging", "ON"},
		{"gen", "--models", "mlp_1000x4_b64", "--out", t.TempDir(), "--staging", "1"},
	} {
		out, errs, code := run(args...)
		if code == 0 || out != "" || strings.Count(strings.TrimRight(errs, "\n"), "\n") != 0 || !strings.Contains(errs, "--staging") || !strings.Contains(errs, "off, on, auto") {
			t.Errorf("%v: exit %d, stderr %q: want one line naming --staging and its values", args, code, errs)
		}
	}
}
