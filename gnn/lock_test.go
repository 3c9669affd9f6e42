package gnn

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/internal/dirlock"
)

// TestTrainTakesTheDirectoryLock: a second writer of one model directory is refused while
// the first holds it (two `train` runs into one --out both exited 0 and one model was
// lost), and the lock is gone once training ends.
func TestTrainTakesTheDirectoryLock(t *testing.T) {
	train, val := trainRows(t)
	dir := filepath.Join(t.TempDir(), "model")
	other, err := dirlock.AcquireDir(dir, "model directory") // another writer (flock is per open file)
	if err != nil {
		t.Fatal(err)
	}
	o := smallOptions(dir)
	o.Epochs = 1
	_, err = trainSources(context.Background(), train, val, o)
	if !errors.Is(err, dirlock.ErrLocked) || !strings.Contains(err.Error(), filepath.Join(dir, dirlock.Name)) ||
		!strings.Contains(err.Error(), "pid ") {
		t.Fatalf("train into a locked directory: err = %v, want ErrLocked naming the lock file and its holder", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ModelFile)); err == nil {
		t.Fatal("the refused run wrote a checkpoint")
	}
	if err := other.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := trainSources(context.Background(), train, val, o); err != nil {
		t.Fatalf("train after the lock was released: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, dirlock.Name)); !os.IsNotExist(err) {
		t.Errorf("the lock file outlived training: %v", err)
	}
}
