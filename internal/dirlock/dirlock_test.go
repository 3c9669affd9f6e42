package dirlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAcquireRelease(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	a, err := AcquireDir(dir, "model directory")
	if err != nil {
		t.Fatal(err)
	}
	// flock(2) locks are per open file: a second Acquire, even in this process, is refused.
	_, err = AcquireDir(dir, "model directory")
	var le *LockedError
	if !errors.Is(err, ErrLocked) || !errors.As(err, &le) || le.File != filepath.Join(dir, Name) ||
		!strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) || !strings.Contains(err.Error(), "model directory") {
		t.Fatalf("second Acquire: %v", err)
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	// Acquire made dir and nothing was written there: Release removed it.
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("an empty directory Acquire created outlived Release: %v", err)
	}
	// A directory that holds files stays, without the lock file.
	b, err := AcquireDir(dir, "model directory")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "model.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := b.Release(); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "model.json" {
		t.Errorf("after Release the directory holds %v, want model.json alone", ents)
	}
	// Not a directory: one line saying so.
	file := filepath.Join(dir, "model.json")
	if _, err := AcquireDir(filepath.Join(file, "sub"), "x"); err == nil || !strings.Contains(err.Error(), "not writable") {
		t.Errorf("Acquire under a file: %v", err)
	}
}
