package gen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/internal/dirlock"
)

// The child half of TestGenerateSurvivesKill9: a slow generation run that the parent kills.
func TestMain(m *testing.M) {
	if dir := os.Getenv("TPUCOST_GEN_CHILD"); dir != "" {
		t := &testing.T{}
		o := genOpts(t, dataset.TaskTile, dir)
		o.Progress = func(Progress) { time.Sleep(300 * time.Millisecond) }
		if _, err := Generate(context.Background(), o); err != nil {
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestGenerateSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	ref := t.TempDir()
	if _, err := Generate(context.Background(), genOpts(t, dataset.TaskTile, ref)); err != nil {
		t.Fatal(err)
	}
	want := dirFiles(t, ref)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TPUCOST_GEN_CHILD="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill -9 as soon as the first part is committed (listed in the manifest), mid-run.
	// (Between the part's rename and the manifest's, the part is not committed yet and
	// the dataset may have no part to open: TestResume covers that state.)
	manifest := filepath.Join(dir, dataset.ManifestName(dataset.TaskTile, 0, 1))
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		var m dataset.Manifest // written atomically: the old one or the new one, never a mix
		if b, err := os.ReadFile(manifest); err == nil && json.Unmarshal(b, &m) == nil && len(m.Parts) > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	left := dirFiles(t, dir)
	if len(left) == 0 || len(left) >= len(want) {
		t.Fatalf("killed run left %d files, complete run has %d: not killed mid-run", len(left), len(want))
	}
	for name, b := range left {
		if strings.HasSuffix(name, ".tmp") {
			continue // a temporary file is allowed; readers ignore it and the next run removes it
		}
		if name == filepath.Base(manifest) || name == dataset.LockName(dataset.TaskTile, 0, 1) || name == dirlock.Name {
			continue // the manifest lists fewer parts; the lock files name the killed process
		}
		if string(want[name]) != string(b) {
			t.Errorf("killed run left %s, which is not a complete part of the reference run", name)
		}
	}
	if _, err := dataset.Open(dir); err != nil {
		t.Errorf("dataset of the killed run does not open: %v", err)
	}
	if _, err := Generate(context.Background(), genOpts(t, dataset.TaskTile, dir)); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, "after kill -9 and resume", want, dirFiles(t, dir))
}

// TestSecondGenProcessIsRefused runs two generations of one shard into one directory from
// two processes (they used to share temporary names, and one died renaming a file the
// other had renamed): the second is refused at once, naming the first's pid.
func TestSecondGenProcessIsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TPUCOST_GEN_CHILD="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	lock := filepath.Join(dir, dataset.LockName(dataset.TaskTile, 0, 1))
	holder := fmt.Sprintf("pid %d", cmd.Process.Pid)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(lock); strings.Contains(string(b), fmt.Sprintf(`"pid":%d`, cmd.Process.Pid)) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, err := Generate(context.Background(), genOpts(t, dataset.TaskTile, dir))
	if !errors.Is(err, dataset.ErrLocked) || !strings.Contains(err.Error(), holder) || !strings.Contains(err.Error(), lock) {
		t.Fatalf("second gen: err = %v; want dataset.ErrLocked naming %s and %s", err, lock, holder)
	}
}
