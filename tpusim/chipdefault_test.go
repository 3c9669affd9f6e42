package tpusim

import "testing"

// TestChipSpecDefault: a default target replaces the preset only when none was named, and
// its VMEM only when none was given.
func TestChipSpecDefault(t *testing.T) {
	for _, c := range []struct {
		name       string
		s          ChipSpec
		preset     string
		vmem       int
		wantPreset string
		wantVMEM   int
	}{
		{"flags' defaults", ChipSpec{Preset: "v4"}, "v3", 16, "v3", 16},
		{"preset named", ChipSpec{Preset: "v4", PresetSet: true}, "v3", 16, "v4", 0},
		{"vmem given", ChipSpec{Preset: "v4", VMEMMiB: 32, VMEMSet: true}, "v3", 16, "v3", 32},
		{"no default", ChipSpec{Preset: "v4"}, "", 16, "v4", 0},
	} {
		got := c.s.Default(c.preset, c.vmem)
		if got.Preset != c.wantPreset || got.VMEMMiB != c.wantVMEM || got.PresetSet != c.s.PresetSet || got.VMEMSet != c.s.VMEMSet {
			t.Errorf("%s: %+v, want preset %s, VMEM %d, the set flags unchanged", c.name, got, c.wantPreset, c.wantVMEM)
		}
	}
}
