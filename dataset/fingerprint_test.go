package dataset

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyDir copies the regular files of src into a new temporary directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func TestFingerprint(t *testing.T) {
	dir, rows, occ := smallDataset(t, FormatArrow)
	fp, err := Fingerprint(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(fp) != 64 {
		t.Fatalf("fingerprint %q is not a SHA-256 hex digest", fp)
	}
	// Location-independent; other files are ignored.
	cp := copyDir(t, dir)
	os.WriteFile(filepath.Join(cp, "notes.txt"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(cp, filepath.Base(rows)+".tmp"), []byte("x"), 0o644)
	if got, err := Fingerprint(cp); err != nil || got != fp {
		t.Errorf("copy with unrelated files: fingerprint %q, %v; want %q", got, err, fp)
	}
	// One flipped byte in either file of a part changes it.
	for _, f := range []string{rows, occ} {
		c := copyDir(t, dir)
		path := filepath.Join(c, filepath.Base(f))
		b, _ := os.ReadFile(path)
		b[len(b)/2] ^= 1
		os.WriteFile(path, b, 0o644)
		if got, err := Fingerprint(c); err != nil || got == fp {
			t.Errorf("%s with a flipped byte: fingerprint %q, %v; want a different one", filepath.Base(f), got, err)
		}
	}
	// A removed part file changes it.
	c := copyDir(t, dir)
	os.Remove(filepath.Join(c, filepath.Base(occ)))
	if got, err := Fingerprint(c); err != nil || got == fp {
		t.Errorf("without %s: fingerprint %q, %v; want a different one", filepath.Base(occ), got, err)
	}
	// No part file: an error naming the directory.
	empty := t.TempDir()
	if _, err := Fingerprint(empty); err == nil || !strings.Contains(err.Error(), empty) {
		t.Errorf("empty directory: error %v, want one naming it", err)
	}
}

// TestDatasetFingerprintIsTheDirectorys: the fingerprint of an opened dataset, from the
// sums Open verified, is the directory's (which reads every file again).
func TestDatasetFingerprintIsTheDirectorys(t *testing.T) {
	dir, _, _ := smallDataset(t, FormatArrow)
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Fingerprint(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Fingerprint(); got != want {
		t.Errorf("Dataset.Fingerprint %s, Fingerprint(dir) %s", got, want)
	}
}
