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
	other, err := dirlock.AcquireDir(dir, dirlock.Model) // another writer (flock is per open file)
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

// TestTrainRefusesOtherKinds: a model is not written into a dataset directory (`train
// --out <dataset dir>` once succeeded) nor into one a gen is writing, and a model
// directory records its kind.
func TestTrainRefusesOtherKinds(t *testing.T) {
	train, val := trainRows(t)
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "tile-0of1.manifest.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := smallOptions(data)
	o.Epochs = 1
	_, err := trainSources(context.Background(), train, val, o)
	if !errors.Is(err, dirlock.ErrOtherKind) || !strings.Contains(err.Error(), data+" is a dataset directory") {
		t.Fatalf("train into a dataset directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(data, ModelFile)); err == nil {
		t.Fatal("the refused run wrote a checkpoint")
	}
	// A directory a gen shard holds (nothing written yet).
	busy := filepath.Join(t.TempDir(), "busy")
	shard, err := dirlock.AcquireShared(busy, dirlock.Dataset, "tile-0of1.lock", dirlock.Options{What: "shard"})
	if err != nil {
		t.Fatal(err)
	}
	o.OutDir = busy
	if _, err := trainSources(context.Background(), train, val, o); !errors.Is(err, dirlock.ErrLocked) {
		t.Errorf("train into a directory a gen holds: %v, want ErrLocked", err)
	}
	shard.Release()
	dir := filepath.Join(t.TempDir(), "model")
	o.OutDir = dir
	if _, err := trainSources(context.Background(), train, val, o); err != nil {
		t.Fatal(err)
	}
	if k, recorded, err := dirlock.KindOf(dir); k != dirlock.Model || !recorded || err != nil {
		t.Errorf("KindOf(model directory) = %q, %v, %v; want model, recorded", k, recorded, err)
	}
}
