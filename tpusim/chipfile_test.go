package tpusim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestChipFileRoundTrip(t *testing.T) {
	base, err := Preset("v3")
	if err != nil {
		t.Fatal(err)
	}
	k := base.Constants()
	k.LaunchNs = 800
	f := ChipFile{Name: "v3-fit", Base: "v3", Constants: k}
	path := filepath.Join(t.TempDir(), "v3-fit.json")
	if err := WriteChipFile(path, f); err != nil {
		t.Fatal(err)
	}
	c, err := LoadChipFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.LaunchNs != 800 || c.ClockHz != base.ClockHz || c.HBMBandwidth != base.HBMBandwidth || c.VMEMBytes != base.VMEMBytes {
		t.Errorf("loaded %+v", c)
	}
	// The name records the constants: another launch cost is another preset.
	if !strings.HasPrefix(c.Name, "v3-fit@") || c.Name != "v3-fit@"+f.Hash() {
		t.Errorf("name %q", c.Name)
	}
	k.LaunchNs = 900
	if (ChipFile{Name: "v3-fit", Base: "v3", Constants: k}).Hash() == f.Hash() {
		t.Error("hash ignores the constants")
	}
}

func TestChipFileRefusals(t *testing.T) {
	dir := t.TempDir()
	good := `{"name": "x", "base": "v3", "constants": {"launch_ns": 1500, "step_overhead_cycles": 96, "dma_latency_ns": 500, "burst_ns": 4,
 "sync_cycles": 24, "valu_slots": 2, "eup_cycles_per_vreg": 4, "xlu_cycles_per_vreg": 2, "mxu_fill_cycles": 128, "weight_load_cycles": 128, "code_load_ns_per_op": 8}}`
	for _, c := range []struct {
		name, body, want string
	}{
		{"malformed", `{"name": "x",`, "malformed.json:1:"},
		{"unknown", strings.Replace(good, `"base"`, `"bogus": 1, "base"`, 1), `unknown field "bogus"`},
		{"unknownconst", strings.Replace(good, `"launch_ns"`, `"launch_us": 1, "launch_ns"`, 1), `launch_us`},
		{"range", strings.Replace(good, `"burst_ns": 4`, `"burst_ns": -1`, 1), "field constants.burst_ns: -1 is outside [0, 100]"},
		{"missing", strings.Replace(good, `"burst_ns": 4,`, ``, 1), "field constants.burst_ns is missing"},
		{"base", strings.Replace(good, `"v3"`, `"v9"`, 1), "field base: unknown chip"},
		{"kind", strings.Replace(good, `"launch_ns": 1500`, `"launch_ns": "fast"`, 1), "constants.launch_ns"},
		{"name", strings.Replace(good, `"x"`, `"a b"`, 1), "field name"},
	} {
		path := filepath.Join(dir, c.name+".json")
		if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadChipFile(path)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line naming %s and %q", c.name, err, path, c.want)
		}
	}
	if _, err := LoadChipFile(filepath.Join(dir, "good.json")); err == nil {
		t.Error("a missing file loads")
	}
}
