package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/dataset/tpugraphs"
	"github.com/tpucost/tpucost/gnn"
	"github.com/tpucost/tpucost/gym"
	"github.com/tpucost/tpucost/internal/dirlock"
	"github.com/tpucost/tpucost/internal/outpath"
	"github.com/tpucost/tpucost/tune"
)

// TestEveryDirectoryWriterTakesTheLock: every command that writes a directory as a whole
// refuses, at once and in one line naming the lock file and its holder, a directory
// another process is writing (two `train` runs into one --out both exited 0 and one
// model was lost). gen's per-shard lock is TestGenSecondRunOnOneShardIsRefused.
func TestEveryDirectoryWriterTakesTheLock(t *testing.T) {
	data := t.TempDir()
	writeTestDataset(t, data, dataset.FormatArrow)
	cases := []struct {
		name string
		args func(dir string) []string
	}{
		{"train", func(dir string) []string {
			return []string{"train", "--task", "tile", "--data", data, "--out", dir, "--epochs", "1"}
		}},
		{"tune train-policy", func(dir string) []string {
			return []string{"tune", "train-policy", "--programs", "mlp_96x2_b1", "--out", dir, "--episodes", "1"}
		}},
		{"gym train", func(dir string) []string { return []string{"gym", "train", "--agent", dir, "--iterations", "1"} }},
		{"export tpugraphs", func(dir string) []string { return []string{"export", "tpugraphs", data, "--out", dir} }},
		{"eval --plots", func(dir string) []string {
			return []string{"eval", "--model", filepath.Join(dir, "nosuch"), "--plots", dir}
		}},
		{"demo", func(dir string) []string { return []string{"demo", "--out", dir, "--quick"} }},
		{"tune --models --out", func(dir string) []string {
			return []string{"tune", "--models", "mlp_96x2_b1", "--budget", "2", "--out", dir}
		}},
	}
	// Each case's directory is held by a writer of its own kind (one of another kind may
	// be refused for its kind first: TestDirectoryKindsAreNotMixed).
	writerKind := map[string]dirlock.Kind{"train": dirlock.Model, "tune train-policy": dirlock.Policy, "gym train": dirlock.Agent,
		"export tpugraphs": dirlock.Export, "eval --plots": dirlock.Plots, "demo": dirlock.Demo, "tune --models --out": dirlock.TunedConfigs}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			held, err := dirlock.AcquireDir(dir, writerKind[tc.name]) // as another process would (flock is per open file)
			if err != nil {
				t.Fatal(err)
			}
			defer held.Release()
			_, errs, code := run(tc.args(dir)...)
			if code == 0 || strings.Count(strings.TrimRight(errs, "\n"), "\n") != 0 ||
				!strings.Contains(errs, filepath.Join(dir, dirlock.Name)) || !strings.Contains(errs, fmt.Sprintf("pid %d", os.Getpid())) {
				t.Errorf("%s into a locked directory: exit %d, stderr %q; want one line naming the lock and its holder", tc.name, code, errs)
			}
		})
	}
}

// TestOutOverwriteRule: --out never replaces a file of another kind, or a file of a
// directory tpucost manages, without --force (`tune --out models/tile/model.json` once
// exited 0 and destroyed a checkpoint); a config over a config is fine.
func TestOutOverwriteRule(t *testing.T) {
	model := t.TempDir()
	ckpt := filepath.Join(model, outpath.ModelMarker)
	notes := filepath.Join(t.TempDir(), "notes.txt")
	for path, content := range map[string]string{ckpt: `{"format":"tpucost-model-v9"}`, notes: "my notes\n"} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data := t.TempDir()
	writeTestDataset(t, data, dataset.FormatArrow)
	for _, args := range [][]string{
		{"tune", "mlp_96x2_b1", "--budget", "2", "--out", ckpt},
		{"compile", "mlp_96x2_b1", "--out", ckpt},
		{"tune", "mlp_96x2_b1", "--budget", "2", "--out", notes},
		{"compile", "mlp_96x2_b1", "--out", notes},
		{"tune", "--models", "mlp_96x2_b1", "--budget", "2", "--out", data},
	} {
		_, errs, code := run(args...)
		if code == 0 || !strings.Contains(errs, "--force") {
			t.Errorf("%s: exit %d, stderr %q; want a refusal pointing to --force", strings.Join(args, " "), code, errs)
		}
	}
	if b, _ := os.ReadFile(ckpt); string(b) != `{"format":"tpucost-model-v9"}` {
		t.Errorf("the checkpoint was overwritten: %s", b)
	}
	if b, _ := os.ReadFile(notes); string(b) != "my notes\n" {
		t.Errorf("the notes were overwritten: %s", b)
	}
	// A config over a config, and anything with --force.
	cfg := filepath.Join(t.TempDir(), "cfg.json")
	for _, args := range [][]string{
		{"compile", "mlp_96x2_b1", "--out", cfg},
		{"compile", "mlp_96x2_b1", "--out", cfg},
		{"compile", "mlp_96x2_b1", "--out", notes, "--force"},
	} {
		if _, errs, code := run(args...); code != 0 {
			t.Errorf("%s: exit %d, %s", strings.Join(args, " "), code, errs)
		}
	}
}

// TestOutpathMarkersAreTheLibraries: the overwrite rule recognizes the directories by the
// libraries' own file names.
func TestOutpathMarkersAreTheLibraries(t *testing.T) {
	if outpath.ModelMarker != gnn.ModelFile || outpath.PolicyMarker != tune.PolicyFile || outpath.AgentMarker != gym.AgentFile ||
		outpath.ExportMarker != tpugraphs.ExportManifestName || !strings.HasSuffix(dataset.ManifestName(dataset.TaskTile, 0, 1), outpath.ManifestSuffix) {
		t.Error("internal/outpath's marker names differ from the libraries'")
	}
}

// TestOutputDirCheckedBeforeTraining: gym train --agent and tune train-policy --out
// refuse an unwritable directory at once, as train does (they checked it only after
// training).
func TestOutputDirCheckedBeforeTraining(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(file, "sub")
	for _, args := range [][]string{
		{"gym", "train", "--agent", dir, "--iterations", "50"},
		{"tune", "train-policy", "--programs", "mlp_96x2_b1", "--out", dir, "--episodes", "50"},
	} {
		_, errs, code := run(args...)
		if code == 0 || !strings.Contains(errs, "not writable") || strings.Contains(errs, "iteration") || strings.Contains(errs, "episode 1") {
			t.Errorf("%s: exit %d, stderr %q; want a refusal before training", strings.Join(args, " "), code, errs)
		}
	}
}

// TestDirectoryKindsAreNotMixed: `gen --out <model dir>` and `train --out <dataset dir>`
// both once succeeded; each is refused in one line naming the directory's kind and
// writer (internal/dirlock).
func TestDirectoryKindsAreNotMixed(t *testing.T) {
	model := t.TempDir()
	if err := os.WriteFile(filepath.Join(model, outpath.ModelMarker), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	data, other := t.TempDir(), t.TempDir()
	writeTestDataset(t, data, dataset.FormatArrow)
	writeTestDataset(t, other, dataset.FormatArrow)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"gen", "--models", "mlp_96x2_b1", "--out", model, "--configs", "4", "--workers", "1"}, model + " is a model directory (written by tpucost train)"},
		{[]string{"train", "--task", "tile", "--data", data, "--out", other, "--epochs", "1"}, other + " is a dataset directory"},
	} {
		_, errs, code := run(tc.args...)
		if code == 0 || strings.Count(strings.TrimRight(errs, "\n"), "\n") != 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want one line saying %q", strings.Join(tc.args, " "), code, errs, tc.want)
		}
	}
	if ents, _ := os.ReadDir(model); len(ents) != 1 {
		t.Errorf("the refused gen wrote into the model directory: %v", ents)
	}
}
