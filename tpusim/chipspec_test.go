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
		{"vmem 0 given", ChipSpec{Preset: "v3", VMEMSet: true}, "", 0, "--vmem: got 0, want MiB in [1, 1048576]"},
		{"vmem negative", ChipSpec{Preset: "v3", VMEMMiB: -1}, "", 0, "--vmem: got -1"},
		{"vmem too large", ChipSpec{Preset: "v3", VMEMMiB: MaxVMEMMiB + 1}, "", 0, "--vmem: got 1048577"},
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
