package dataset

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/internal/dirlock"
)

// TestWriterRefusesOtherKinds: a dataset is not written into a model (or any other kind
// of) directory, nor into one another command holds (`gen --out <model dir>` once
// succeeded, even while a train held it); shards of one run still share a directory.
func TestWriterRefusesOtherKinds(t *testing.T) {
	prov := testProv(TaskTile, 0, 1)
	// A model directory written before kinds were recorded (model.json only).
	model := t.TempDir()
	if err := os.WriteFile(filepath.Join(model, dirlock.ModelMarker), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := NewWriter(WriterOptions{Dir: model, Provenance: prov})
	if !errors.Is(err, dirlock.ErrOtherKind) || !strings.Contains(err.Error(), model+" is a model directory (written by tpucost train)") {
		t.Fatalf("a dataset into a model directory: %v", err)
	}
	if ents, _ := os.ReadDir(model); len(ents) != 1 {
		t.Errorf("the refused writer left files: %v", ents)
	}
	// A directory a train holds (nothing written there yet).
	busy := filepath.Join(t.TempDir(), "busy")
	held, err := dirlock.AcquireDir(busy, dirlock.Model)
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewWriter(WriterOptions{Dir: busy, Provenance: prov})
	if !errors.Is(err, ErrLocked) {
		t.Errorf("a dataset into a directory a train holds: %v", err)
	}
	held.Release()
	// Two shards of one run share a directory, and it is recorded as a dataset.
	dir := t.TempDir()
	w0, err := NewWriter(WriterOptions{Dir: dir, Provenance: testProv(TaskTile, 0, 2)})
	if err != nil {
		t.Fatal(err)
	}
	w1, err := NewWriter(WriterOptions{Dir: dir, Provenance: testProv(TaskTile, 1, 2)})
	if err != nil {
		t.Fatalf("the second shard of one run: %v", err)
	}
	if _, err := dirlock.AcquireDir(dir, dirlock.Dataset); !errors.Is(err, ErrLocked) {
		t.Errorf("a whole-directory writer while shards write: %v, want ErrLocked", err)
	}
	w0.Close()
	w1.Close()
	if k, recorded, err := dirlock.KindOf(dir); k != dirlock.Dataset || !recorded || err != nil {
		t.Errorf("KindOf = %q, %v, %v; want dataset, recorded", k, recorded, err)
	}
	if _, err := dirlock.AcquireDir(dir, dirlock.Model); !errors.Is(err, dirlock.ErrOtherKind) {
		t.Errorf("a model into a dataset directory: %v", err)
	}
}
