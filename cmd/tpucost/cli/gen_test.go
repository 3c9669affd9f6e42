package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/dataset"
)

// TestGenRefusesBadFlags: out-of-range flags are one-line errors naming the flag and its
// range, never a quiet default (the ranges themselves: dataset.TestGenOptionsValidate).
func TestGenRefusesBadFlags(t *testing.T) {
	out := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--configs", "0"}, "--configs 0: want an integer in [1,"},
		{[]string{"--configs", "-1"}, "--configs -1"},
		{[]string{"--variants", "0"}, "--variants 0"},
		{[]string{"--workers", "-2"}, "--workers -2"},
		{[]string{"--part-rows", "0"}, "--part-rows 0"},
		{[]string{"--runs", "0"}, "--runs 0"},
		{[]string{"--noise", "-1"}, "--noise -1"},
		{[]string{"--shard", "2/2"}, `--shard "2/2"`},
		{[]string{"--shard", "1/2x"}, `--shard "1/2x"`},
		{[]string{"--task", "speed"}, `--task "speed"`},
		{[]string{"--all"}, "--all and --models"},
		{[]string{"--task", "fusion", "--configs", "1", "--lengths", "0,64"}, "--lengths"},
		{[]string{"--task", "fusion", "--configs", "1", "--lengths", "zipf:16-128"}, "--lengths"},
		{[]string{"--task", "fusion", "--configs", "1", "--lengths", "64,32"}, "mlp_96x2_b1 has no ragged form"},
		{[]string{"--lengths", "64,32"}, "want --task fusion --configs 1"},
	} {
		args := append([]string{"gen", "--models", "mlp_96x2_b1", "--out", out}, tc.args...)
		stdout, errs, code := run(args...)
		if code == 0 || stdout != "" || strings.Count(strings.TrimRight(errs, "\n"), "\n") != 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want one line mentioning %q", tc.args, code, errs, tc.want)
		}
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("refused runs wrote %d files", len(entries))
	}
}

// TestGenSecondRunOnOneShardIsRefused: a second gen on a directory and shard another
// process writes fails at once, saying who holds it; `gen --json` then reports the
// finished run in snake_case with units.
func TestGenSecondRunOnOneShardIsRefused(t *testing.T) {
	dir := t.TempDir()
	// Hold the shard as a running gen would.
	w, err := dataset.NewWriter(dataset.WriterOptions{Dir: dir, Provenance: dataset.Provenance{Task: dataset.TaskTile, ShardCount: 1}})
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"gen", "--models", "mlp_96x2_b1", "--out", dir, "--configs", "4", "--workers", "1"}
	_, errs, code := run(args...)
	if code == 0 || strings.Count(strings.TrimRight(errs, "\n"), "\n") != 0 || !strings.Contains(errs, fmt.Sprintf("pid %d", os.Getpid())) ||
		!strings.Contains(errs, filepath.Join(dir, dataset.LockName(dataset.TaskTile, 0, 1))) {
		t.Errorf("second gen: exit %d, stderr %q", code, errs)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	stdout, errs, code := run(append(args, "--json")...)
	if code != 0 {
		t.Fatalf("gen after the lock was released: exit %d, %s", code, errs)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	for _, k := range []string{"units", "rows", "samples", "duplicate_kernels", "wall_s", "samples_per_s", "compile_s",
		"failed_units", "failures", "run_units", "run_rows", "run_samples", "run_failed_units"} {
		if _, ok := res[k]; !ok {
			t.Errorf("gen --json has no %q: %s", k, stdout)
		}
	}
}

// TestGenStrictAndSummary: --strict is a gen flag (a run without failures is the same
// with it), and the text summary gives the dataset's totals and this run's share; after
// a resume the totals are still the dataset's (the failure paths: dataset/gen's
// TestGenerateRecordsFailedUnits and TestGenerateStrictStopsAtFailure).
func TestGenStrictAndSummary(t *testing.T) {
	dir := t.TempDir()
	args := []string{"gen", "--models", "mlp_96x2_b1", "--out", dir, "--configs", "4", "--workers", "1", "--strict"}
	first, errs, code := run(args...)
	if code != 0 {
		t.Fatalf("gen --strict: exit %d, %s", code, errs)
	}
	again, errs, code := run(args...)
	if code != 0 {
		t.Fatalf("gen --strict, resumed: exit %d, %s", code, errs)
	}
	total := strings.SplitN(first, "\n", 2)[0]
	if !strings.Contains(first, "this run: 1 units") || !strings.Contains(total, "0 failed") ||
		strings.SplitN(again, "\n", 2)[0] != total || !strings.Contains(again, "this run: 0 units (1 resumed") {
		t.Errorf("summaries:\n%s\nthen, resumed:\n%s", first, again)
	}
	if _, errs, code := run("gen", "--models", "mlp_96x2_b1", "--out", t.TempDir(), "--strict=maybe"); code == 0 || !strings.Contains(errs, "--strict") {
		t.Errorf("--strict=maybe: exit %d, %s", code, errs)
	}
}
