package gnn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTrainLogIsEveryEpochAndResumes: a model directory holds the per-epoch log
// (TrainLogFile), a line per epoch with no wall-clock field, and a run interrupted and
// resumed writes the same bytes as an uninterrupted one.
func TestTrainLogIsEveryEpochAndResumes(t *testing.T) {
	train, val := trainRows(t)
	full := smallOptions(filepath.Join(t.TempDir(), "full"))
	r, err := trainSources(context.Background(), train, val, full)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(full.OutDir, TrainLogFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(want), "\n"), "\n")
	if len(lines) != len(r.History) {
		t.Fatalf("%d log lines for %d epochs:\n%s", len(lines), len(r.History), want)
	}
	bests := newBests(r.History)
	for i, l := range lines {
		var e TrainLogEntry
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if e.Epoch != i+1 || e.TrainLoss != r.History[i].TrainLoss || e.Val == nil || e.Val.Metric != r.History[i].Val.Metric || e.Best != bests[i] {
			t.Errorf("line %d: %s, epoch %+v", i+1, l, r.History[i])
		}
		for _, f := range []string{"wall_s", "kernels_per_s", "seconds"} {
			if strings.Contains(l, `"`+f+`"`) {
				t.Errorf("line %d holds the wall-clock field %s: %s", i+1, f, l)
			}
		}
	}
	if !bests[0] || !bests[r.BestEpoch-1] {
		t.Errorf("new bests %v, best epoch %d", bests, r.BestEpoch)
	}
	// Interrupted after the first epoch's checkpoint, then resumed.
	part := smallOptions(filepath.Join(t.TempDir(), "part"))
	ctx, cancel := context.WithCancel(context.Background())
	part.Progress = cancelAfter{"epoch 1/3: train loss", cancel}
	if _, err := trainSources(ctx, train, val, part); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted training: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(part.OutDir, TrainLogFile)); strings.Count(string(b), "\n") != 1 {
		t.Errorf("the log of an interrupted run's checkpoint of epoch 1:\n%s", b)
	}
	part.Progress, part.Resume = nil, true
	r2, err := trainSources(context.Background(), train, val, part)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(part.OutDir, TrainLogFile))
	if !bytes.Equal(got, want) {
		t.Errorf("resumed log:\n%s\nuninterrupted:\n%s", got, want)
	}
	if s := r2.Summary(part.OutDir); s.Log != filepath.Join(part.OutDir, TrainLogFile) {
		t.Errorf("summary log %q", s.Log)
	}
}

// TestTrainTextIsAScreenful: train's text output was a row per epoch (407 rows); it is
// now a row per summaryEvery epochs, the first, the last and the best, and says where
// every epoch is.
func TestTrainTextIsAScreenful(t *testing.T) {
	const epochs, best = 407, 133
	// maxRows: 20 summary rows (every 21st epoch), the first, the last and the best.
	const maxRows = 23
	s := TrainSummary{Out: "m", Task: "tile", Metric: MetricSlowdown, BestEpoch: best, Log: filepath.Join("m", TrainLogFile)}
	for e := 1; e <= epochs; e++ {
		s.History = append(s.History, Epoch{Epoch: e, TrainLoss: 1 / float64(e), Val: &ValResult{Metric: float64(e)}})
	}
	var b bytes.Buffer
	if err := s.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	rows := 0
	seen := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] != "EPOCH" && strings.Trim(f[0], "0123456789") == "" {
			rows++
			seen[f[0]] = true
		}
	}
	if rows > maxRows || !seen["1"] || !seen[fmt.Sprint(epochs)] || !seen[fmt.Sprint(best)] || !seen["21"] {
		t.Errorf("%d rows (at most %d, with epochs 1, 21, %d and %d):\n%s", rows, maxRows, best, epochs, out)
	}
	if !strings.Contains(out, "every epoch: "+s.Log+" (above: every 21 epochs") {
		t.Errorf("no pointer to the log:\n%s", out)
	}
	// No run length prints more rows.
	for n := 1; n <= 1000; n++ {
		shown := 0
		for e := 1; e <= n; e++ {
			if showEpoch(e, n) {
				shown++
			}
		}
		if shown+1 > maxRows {
			t.Fatalf("a run of %d epochs shows %d rows and the best", n, shown)
		}
	}
	// A short run shows every epoch.
	s.History, s.BestEpoch = s.History[:3], 2
	b.Reset()
	if err := s.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "\n"); n != 1+3+4 {
		t.Errorf("3 epochs: %d lines:\n%s", n, b.String())
	}
}

// TestTrainProgressIsASummary: progress on stderr is a line per summaryEvery epochs
// (the first and the last of the budget too), not a line per epoch.
func TestTrainProgressIsASummary(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 42 epochs")
	}
	const epochs = 42 // summaryEvery: 3
	train, _ := trainRows(t)
	o := smallOptions(filepath.Join(t.TempDir(), "m"))
	o.Epochs, o.Patience, o.ProgressEvery = epochs, -1, time.Hour
	var progress bytes.Buffer
	o.Progress = &progress
	if _, err := trainSources(context.Background(), train[:8], nil, o); err != nil {
		t.Fatal(err)
	}
	var shown []string
	for _, l := range strings.Split(progress.String(), "\n") {
		if strings.HasPrefix(l, "epoch ") && strings.Contains(l, "train loss") {
			shown = append(shown, strings.TrimSuffix(strings.Fields(l)[1], ":"))
		}
	}
	if len(shown) != 1+epochs/3 || shown[0] != "1/42" || shown[1] != "3/42" || shown[len(shown)-1] != "42/42" {
		t.Errorf("epoch lines %v, want 1/42 and every 3rd", shown)
	}
	if b, _ := os.ReadFile(filepath.Join(o.OutDir, TrainLogFile)); strings.Count(string(b), "\n") != epochs {
		t.Errorf("the log has %d lines, want %d", strings.Count(string(b), "\n"), epochs)
	}
}
