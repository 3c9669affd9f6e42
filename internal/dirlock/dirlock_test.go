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
	a, err := AcquireDir(dir, Model)
	if err != nil {
		t.Fatal(err)
	}
	// flock(2) locks are per open file: a second Acquire, even in this process, is refused.
	_, err = AcquireDir(dir, Model)
	var le *LockedError
	if !errors.Is(err, ErrLocked) || !errors.As(err, &le) || le.File != filepath.Join(dir, Name) ||
		!strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
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
	b, err := AcquireDir(dir, Model)
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
	if len(ents) != 2 || ents[0].Name() != "model.json" || ents[1].Name() != KindFile {
		t.Errorf("after Release the directory holds %v, want model.json and %s", ents, KindFile)
	}
	// Not a directory: one line saying so.
	file := filepath.Join(dir, "model.json")
	if _, err := AcquireDir(filepath.Join(file, "sub"), Model); err == nil || !strings.Contains(err.Error(), "not writable") {
		t.Errorf("Acquire under a file: %v", err)
	}
}

// TestKindsDoNotMix: a directory records the kind of its first writer, and a writer of
// another kind is refused in one line naming the directory, its kind and its writer
// (`gen --out <model dir>` and `train --out <dataset dir>` both once succeeded).
func TestKindsDoNotMix(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	l, err := AcquireDir(dir, Model)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ModelMarker), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if k, recorded, err := KindOf(dir); k != Model || !recorded || err != nil {
		t.Fatalf("KindOf = %q, %v, %v; want model, recorded", k, recorded, err)
	}
	_, err = AcquireShared(dir, Dataset, "tile-0of1.lock", Options{What: "shard"})
	var ke *KindError
	want := dir + " is a model directory (written by tpucost train); tpucost gen, import tpugraphs or validate --rows writes datasets: choose another directory"
	if !errors.Is(err, ErrOtherKind) || !errors.As(err, &ke) || err.Error() != want {
		t.Fatalf("a dataset writer into a model directory: %v\nwant %s", err, want)
	}
	// Every other kind is refused too, and the same kind is let in again.
	for _, k := range Kinds() {
		l, err := AcquireDir(dir, k)
		if k == Model {
			if err != nil {
				t.Errorf("model writer into a model directory: %v", err)
			}
			l.Release()
			continue
		}
		if !errors.Is(err, ErrOtherKind) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s writer into a model directory: %v; want one line, ErrOtherKind", k, err)
			l.Release()
		}
	}
	if _, err := os.Stat(filepath.Join(dir, Name)); !os.IsNotExist(err) {
		t.Errorf("a refused writer left the lock file: %v", err)
	}
	// A record this tpucost does not know is refused, not overwritten.
	if err := os.WriteFile(filepath.Join(dir, KindFile), []byte(`{"format":"tpucost-dir-v9","kind":"hologram"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := AcquireDir(dir, Model); err == nil || !strings.Contains(err.Error(), "hologram") {
		t.Errorf("a directory of an unknown recorded kind: %v", err)
	}
}

// TestLegacyKinds: a directory written before kinds were recorded is recognized by its
// files, so a later writer of the same kind resumes it (and records its kind) and one
// of another kind is refused.
func TestLegacyKinds(t *testing.T) {
	for _, tc := range []struct {
		files []string
		kind  Kind
	}{
		{[]string{ModelMarker, "weights-e0003.bin"}, Model},
		{[]string{"tile-0of1.manifest.json", "tile-0of1-00000.arrow"}, Dataset},
		{[]string{PolicyMarker}, Policy},
		{[]string{AgentMarker}, Agent},
		{[]string{ExportMarker}, Export},
		{[]string{DemoMarker, "report.md", "models/tile/model.json"}, Demo},
		{[]string{"scatter.png", "error_hist.png"}, Plots},
		{[]string{"resnet18_b1.json"}, ""},
		{nil, ""},
	} {
		dir := t.TempDir()
		for _, f := range tc.files {
			p := filepath.Join(dir, f)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if k, recorded, err := KindOf(dir); k != tc.kind || recorded || err != nil {
			t.Errorf("%v: KindOf = %q, %v, %v; want %q, not recorded", tc.files, k, recorded, err, tc.kind)
			continue
		}
		if tc.kind == "" {
			continue
		}
		other := Model
		if tc.kind == Model {
			other = Dataset
		}
		if _, err := AcquireDir(dir, other); !errors.Is(err, ErrOtherKind) {
			t.Errorf("%v: a %s writer: %v, want ErrOtherKind", tc.files, other, err)
		}
		l, err := AcquireDir(dir, tc.kind)
		if err != nil {
			t.Errorf("%v: a %s writer: %v", tc.files, tc.kind, err)
			continue
		}
		l.Release()
		if k, recorded, _ := KindOf(dir); k != tc.kind || !recorded {
			t.Errorf("%v: after a %s writer, KindOf = %q (recorded %v)", tc.files, tc.kind, k, recorded)
		}
	}
}

// TestLockedForAll: a directory one command holds is locked for every other, whatever
// its kind: a dataset's shards share the directory's lock with one another but not with
// a train (gen into a directory a train held once succeeded), and the last shard to
// leave removes the lock file.
func TestLockedForAll(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	s0, err := AcquireShared(dir, Dataset, "tile-0of2.lock", Options{What: "shard"})
	if err != nil {
		t.Fatal(err)
	}
	s1, err := AcquireShared(dir, Dataset, "tile-1of2.lock", Options{What: "shard"})
	if err != nil {
		t.Fatalf("a second shard of one run: %v", err)
	}
	if _, err := AcquireShared(dir, Dataset, "tile-1of2.lock", Options{What: "shard"}); !errors.Is(err, ErrLocked) ||
		!strings.Contains(err.Error(), filepath.Join(dir, "tile-1of2.lock")) {
		t.Errorf("the same shard twice: %v", err)
	}
	// Another kind's writer is refused by the kind already; one of the same kind that
	// writes the whole directory is refused by the lock.
	if _, err := AcquireDir(dir, Dataset); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), filepath.Join(dir, Name)) {
		t.Errorf("an exclusive writer while shards write: %v", err)
	}
	if err := s0.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, Name)); err != nil {
		t.Errorf("the first shard to leave removed the directory's lock while another holds it: %v", err)
	}
	if err := s1.Release(); err != nil {
		t.Fatal(err)
	}
	// Nothing was written: the last shard removed its lock, the record and the directory
	// is empty (Acquire did not create it: the first shard did, and the second holds it).
	ents, _ := os.ReadDir(dir)
	if len(ents) != 0 {
		t.Errorf("after the shards left, the directory holds %v", ents)
	}

	// A whole-directory writer (a train) excludes shards, even of a directory with no
	// kind yet recorded and no files.
	m := filepath.Join(t.TempDir(), "m")
	if err := os.MkdirAll(m, 0o755); err != nil {
		t.Fatal(err)
	}
	held, err := lockFile(m, filepath.Join(m, Name), false, Options{What: "directory"}) // a train that has not yet recorded its kind
	if err != nil {
		t.Fatal(err)
	}
	if _, err := AcquireShared(m, Dataset, "tile-0of1.lock", Options{What: "shard"}); !errors.Is(err, ErrLocked) {
		t.Errorf("a shard into a directory a train holds: %v, want ErrLocked", err)
	}
	if _, err := os.Stat(filepath.Join(m, "tile-0of1.lock")); !os.IsNotExist(err) {
		t.Errorf("the refused shard left its lock file: %v", err)
	}
	held.Close()
}
