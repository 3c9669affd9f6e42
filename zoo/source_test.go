package zoo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestResolveSources: a directory given as a source says so (it once said "no model
// named"), a missing HLO path says the file does not exist, and a zoo name builds.
func TestResolveSources(t *testing.T) {
	dir := t.TempDir()
	if _, err := Resolve(dir); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory: %v", err)
	}
	missing := filepath.Join(dir, "m.hlo")
	if _, err := Resolve(missing); err == nil || !strings.Contains(err.Error(), "no such HLO file") {
		t.Errorf("missing file: %v", err)
	}
	if err := os.WriteFile(missing, []byte("HloModule m\nENTRY e {\n  ROOT p = f32[8] parameter(0)\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if m, err := Resolve(missing); err != nil || m.Entry == nil {
		t.Errorf("file: %v", err)
	}
	if m, err := Resolve("mlp_96x2_b1"); err != nil || m.Name != "mlp_96x2_b1" {
		t.Errorf("zoo model: %v", err)
	}
}
