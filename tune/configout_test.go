package tune

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tpucost/tpucost/compiler"
)

// TestConfigOut: one program's --out is a file, not a directory; a batch's is a
// directory, not a file, locked while open, receiving PROGRAM.json per report.
func TestConfigOut(t *testing.T) {
	dir := t.TempDir()
	if _, err := OpenConfigOut("--out", dir, false, false); err == nil {
		t.Error("a directory accepted as one program's config file")
	}
	file := filepath.Join(dir, "one.json")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenConfigOut("--out", file, true, false); err == nil {
		t.Error("a file accepted as a batch's directory")
	}
	if _, err := OpenConfigOut("--out", filepath.Join(dir, "no", "such", "x.json"), false, false); err == nil {
		t.Error("a file in a missing directory accepted")
	}

	batch := filepath.Join(dir, "tuned")
	out, err := OpenConfigOut("--out", batch, true, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenConfigOut("--out", batch, true, false); err == nil {
		t.Error("a second writer of the batch directory accepted")
	}
	cfg := &compiler.Config{Version: compiler.ConfigVersion}
	if err := out.Write(&Report{Program: "a", Config: cfg}); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := compiler.ReadConfig(filepath.Join(batch, "a.json")); err != nil {
		t.Errorf("a.json: %v", err)
	}

	one := filepath.Join(dir, "single.json")
	out, err = OpenConfigOut("--out", one, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Write(&Report{Program: "b", Config: cfg}); err != nil {
		t.Fatal(err)
	}
	out.Close()
	if _, err := compiler.ReadConfig(one); err != nil {
		t.Errorf("single.json: %v", err)
	}
}
