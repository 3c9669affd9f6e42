package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler"
)

// TestFusionFlag: --fusion partition on compile, sim, gen and tune compiles the
// partition-fusion program (a training MLP, where sibling and reduce-epilogue fusion
// pay: fewer kernels, less simulated time), --fusion xla is the default, and a bad rule
// is refused with one line naming the flag on every command.
func TestFusionFlag(t *testing.T) {
	type simOut struct {
		TotalNs float64 `json:"total_ns"`
	}
	const model = "mlp_96x2_b1_train"
	var def, xla, part simOut
	for _, c := range []struct {
		args []string
		into *simOut
	}{{nil, &def}, {[]string{"--fusion", "xla"}, &xla}, {[]string{"--fusion", "partition"}, &part}} {
		out, errs, code := run(append([]string{"sim", model, "--json"}, c.args...)...)
		if code != 0 || json.Unmarshal([]byte(out), c.into) != nil {
			t.Fatalf("sim %v: exit %d: %s", c.args, code, errs)
		}
	}
	if def.TotalNs != xla.TotalNs || !(part.TotalNs < xla.TotalNs) {
		t.Errorf("sim: default %.0f ns, xla %.0f ns, partition %.0f ns; want default = xla > partition", def.TotalNs, xla.TotalNs, part.TotalNs)
	}

	var cx, cp compiler.CompileResult
	cfgPath := filepath.Join(t.TempDir(), "part.json")
	for _, c := range []struct {
		args []string
		into *compiler.CompileResult
	}{{[]string{"--fusion", "xla"}, &cx}, {[]string{"--fusion", "partition", "--check", "--out", cfgPath}, &cp}} {
		out, errs, code := run(append([]string{"compile", model, "--json"}, c.args...)...)
		if code != 0 || json.Unmarshal([]byte(out), c.into) != nil {
			t.Fatalf("compile %v: exit %d: %s", c.args, code, errs)
		}
	}
	if !(len(cp.Kernels) < len(cx.Kernels)) {
		t.Errorf("compile: %d kernels under partition fusion, %d under xla", len(cp.Kernels), len(cx.Kernels))
	}
	// The effective config is an ordinary config: sim with it (and the default rule)
	// reproduces the partition program.
	var again simOut
	out, errs, code := run("sim", model, "--config", cfgPath, "--json")
	if code != 0 || json.Unmarshal([]byte(out), &again) != nil {
		t.Fatalf("sim --config: exit %d: %s", code, errs)
	}
	if again.TotalNs != part.TotalNs {
		t.Errorf("sim --config of the partition config: %.0f ns, want %.0f", again.TotalNs, part.TotalNs)
	}
	if _, err := compiler.ReadConfig(cfgPath); err != nil {
		t.Error(err)
	}

	out, errs, code = run("tune", model, "--fusion", "partition", "--budget", "8", "--json")
	var rep struct {
		DefaultNs float64 `json:"default_ns"`
		StartNs   float64 `json:"start_ns"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("tune --fusion partition: exit %d: %s", code, errs)
	}
	if rep.StartNs != part.TotalNs || rep.DefaultNs != xla.TotalNs {
		t.Errorf("tune: start %.0f ns, default %.0f ns; want the partition program's %.0f and xla's %.0f", rep.StartNs, rep.DefaultNs, part.TotalNs, xla.TotalNs)
	}

	// --strategy partition is the same start (the XTAT schedule from the partition program);
	// with an explicit --fusion xla it is a contradiction, refused in one line.
	out, errs, code = run("tune", model, "--strategy", "partition", "--budget", "8", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.StartNs != part.TotalNs {
		t.Errorf("tune --strategy partition: exit %d, start %.0f ns (want %.0f): %s", code, rep.StartNs, part.TotalNs, errs)
	}
	if _, errs, code := run("tune", model, "--strategy", "partition", "--fusion", "xla", "--budget", "8"); code == 0 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, "--fusion") {
		t.Errorf("tune --strategy partition --fusion xla: exit %d, stderr %q; want one line naming --fusion", code, errs)
	}

	dir := t.TempDir()
	if _, errs, code := run("gen", "--task", "fusion", "--models", model, "--configs", "2", "--fusion", "partition", "--out", dir, "--workers", "1"); code != 0 {
		t.Fatalf("gen --fusion partition: exit %d: %s", code, errs)
	}
	// The rule is provenance: resuming the directory under another rule is refused.
	if _, errs, code := run("gen", "--task", "fusion", "--models", model, "--configs", "2", "--out", dir, "--workers", "1"); code == 0 || !strings.Contains(errs, "fusion") {
		t.Errorf("gen resumed a partition-fusion dataset under xla: exit %d: %s", code, errs)
	}

	for _, args := range [][]string{
		{"compile", model}, {"sim", model}, {"tune", model, "--budget", "4"},
		{"gen", "--task", "fusion", "--models", model, "--out", t.TempDir()},
	} {
		_, errs, code := run(append(args, "--fusion", "apollo")...)
		if code == 0 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, "--fusion") {
			t.Errorf("%s --fusion apollo: exit %d, stderr %q; want one line naming --fusion", args[0], code, errs)
		}
	}
}
