package gen

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/tpucost/tpucost/dataset"
)

// errInjected is the failure the tests inject into one unit.
var errInjected = errors.New("injected failure")

// failOne returns an inject hook that fails unit (program, variant) and counts the calls
// for it.
func failOne(program string, variant int32, calls *int) func(string, int32) error {
	var mu sync.Mutex
	return func(p string, v int32) error {
		if p != program || v != variant {
			return nil
		}
		mu.Lock()
		*calls++
		mu.Unlock()
		return errInjected
	}
}

// TestGenerateRecordsFailedUnits: a unit that fails is recorded in the manifest with its
// error and skipped, the other units are written as in a run without the failure, the
// result counts it (the dataset's and the run's), and a resume keeps the record without
// retrying the unit.
func TestGenerateRecordsFailedUnits(t *testing.T) {
	ref := genOpts(t, dataset.TaskTile, t.TempDir())
	refRes, err := Generate(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if refRes.FailedUnits != 0 || len(refRes.Failures) != 0 {
		t.Fatalf("a run without failures reports %d failed units", refRes.FailedUnits)
	}

	o := genOpts(t, dataset.TaskTile, t.TempDir())
	calls := 0
	o.inject = failOne("resnet18_b1", 1, &calls)
	res, err := Generate(context.Background(), o)
	if err != nil {
		t.Fatalf("a failing unit ended the run: %v", err)
	}
	if res.FailedUnits != 1 || res.RunFailedUnits != 1 || len(res.Failures) != 1 || calls != 1 {
		t.Fatalf("failed units %d (run %d), failures %v, unit called %d times; want 1 of each", res.FailedUnits, res.RunFailedUnits, res.Failures, calls)
	}
	f := res.Failures[0]
	if f.Program != "resnet18_b1" || f.Variant != 1 || f.Unit != 3 || !strings.Contains(f.Error, errInjected.Error()) || !strings.Contains(f.Error, "resnet18_b1 variant 1") {
		t.Errorf("failure recorded as %+v", f)
	}
	if res.Units != refRes.Units || res.RunUnits != res.Units || res.Rows == 0 || res.Rows != res.RunRows || res.Samples != res.RunSamples {
		t.Errorf("units %d (run %d), rows %d (run %d), samples %d (run %d); reference units %d", res.Units, res.RunUnits, res.Rows, res.RunRows, res.Samples, res.RunSamples, refRes.Units)
	}
	// The manifest records it; the dataset reads, without rows of the failed unit.
	ds, err := dataset.Open(o.Out)
	if err != nil {
		t.Fatal(err)
	}
	if got := ds.FailedUnits(); len(got) != 1 || got[0] != f {
		t.Errorf("manifest records %+v, want [%+v]", got, f)
	}
	occ, err := ds.Occurrences()
	if err != nil {
		t.Fatal(err)
	}
	for _, oc := range occ {
		if oc.Unit == 3 {
			t.Fatalf("the failed unit has occurrences: %+v", oc)
		}
	}

	// A resume retries nothing: every unit is committed, the failure kept.
	calls = 0
	again, err := Generate(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 0 || again.RunUnits != 0 || again.Resumed != again.Units || again.FailedUnits != 1 || again.RunFailedUnits != 0 ||
		again.Rows != res.Rows || again.Samples != res.Samples {
		t.Errorf("resume: unit retried %d times, run units %d, resumed %d of %d, failed %d (run %d), rows %d (first run %d), samples %d (%d)",
			calls, again.RunUnits, again.Resumed, again.Units, again.FailedUnits, again.RunFailedUnits, again.Rows, res.Rows, again.Samples, res.Samples)
	}

	// The summary says it, and the run's error counts it.
	var text bytes.Buffer
	rep := &Report{Result: again, out: o.Out}
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1 failed", "this run: 0 units", "failed: unit 3 (resnet18_b1 variant 1)"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, text.String())
		}
	}
	if err := rep.Failed(); err == nil || !strings.Contains(err.Error(), "1 of 6 units failed") {
		t.Errorf("Failed() = %v, want 1 of 6 units failed", err)
	}
	if err := (&Report{Result: refRes}).Failed(); err != nil {
		t.Errorf("a run without failures: Failed() = %v", err)
	}
}

// TestGenerateStrictStopsAtFailure: with Strict the first failing unit ends the run with
// its error, as before failures were recorded.
func TestGenerateStrictStopsAtFailure(t *testing.T) {
	o := genOpts(t, dataset.TaskTile, t.TempDir())
	calls := 0
	o.inject = failOne("resnet18_b1", 1, &calls)
	o.Strict = true
	_, err := Generate(context.Background(), o)
	if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "unit 3 (resnet18_b1 variant 1)") {
		t.Fatalf("strict run: err = %v, want the injected failure of unit 3", err)
	}
}

// TestGenerateRecordsPanickingUnit: a unit that panics fails alone.
func TestGenerateRecordsPanickingUnit(t *testing.T) {
	o := genOpts(t, dataset.TaskTile, t.TempDir())
	o.inject = func(p string, v int32) error {
		if p == "mlp_96x2_b1" && v == 0 {
			panic("boom")
		}
		return nil
	}
	res, err := Generate(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.FailedUnits != 1 || !strings.Contains(res.Failures[0].Error, "internal error: boom") {
		t.Fatalf("failures %+v", res.Failures)
	}
}
