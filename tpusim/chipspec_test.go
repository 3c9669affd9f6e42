package tpusim

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestChipSpecResolve: a preset, a preset file, the VMEM override and its range, and the
// refusals of a preset given with a file and of an unknown preset.
func TestChipSpecResolve(t *testing.T) {
	v3, err := Preset("v3")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "fit.json")
	if err := WriteChipFile(path, ChipFile{Name: "fit", Base: "v3", Constants: v3.Constants()}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		spec     ChipSpec
		wantName string // a prefix of the chip's name
		wantVMEM int64  // 0: the base preset's
		wantErr  string
	}{
		{"preset", ChipSpec{Preset: "v3"}, "v3", 0, ""},
		{"vmem", ChipSpec{Preset: "v3", VMEMMiB: 8, VMEMSet: true}, "v3", 8 << 20, ""},
		{"file", ChipSpec{Preset: DefaultChip, File: path}, "fit@", 0, ""},
		{"file and explicit preset", ChipSpec{Preset: "v3", PresetSet: true, File: path}, "", 0, "--chip and --chip-file: give one"},
		{"unknown preset", ChipSpec{Preset: "v9"}, "", 0, "unknown chip"},
		{"vmem 0 given", ChipSpec{Preset: "v3", VMEMSet: true}, "", 0, "--vmem \"0\": want MiB in [1, 1048576]"},
		{"vmem negative", ChipSpec{Preset: "v3", VMEMMiB: -1}, "", 0, "--vmem \"-1\""},
		{"vmem too large", ChipSpec{Preset: "v3", VMEMMiB: MaxVMEMMiB + 1}, "", 0, "--vmem \"1048577\""},
	} {
		c, err := tc.spec.Resolve()
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		want := tc.wantVMEM
		if want == 0 {
			want = v3.VMEMBytes
		}
		if !strings.HasPrefix(c.Name, tc.wantName) || c.VMEMBytes != want {
			t.Errorf("%s: chip %s with %d VMEM bytes, want %s... with %d", tc.name, c.Name, c.VMEMBytes, tc.wantName, want)
		}
	}
}

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
