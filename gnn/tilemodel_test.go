package gnn

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/dataset"
)

// TestLoadTileModel: a tile model loads for its target; a model of another task is
// refused naming it; another chip is refused, or warned about with allowMismatch.
func TestLoadTileModel(t *testing.T) {
	train, _ := trainRows(t)
	chip := testChip(t)
	save := func(task dataset.Task) string {
		dir := t.TempDir()
		if err := testModel(t, tinyConfig(), task, LossRankHinge, train, 1).Save(dir, Meta{Chip: chip.Name, VMEMBytes: chip.VMEMBytes}); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	tile, flags := save(dataset.TaskTile), save(dataset.TaskFlags)
	target := Target{Chip: chip.Name, VMEMBytes: chip.VMEMBytes, Cost: chip.Target}
	var warn bytes.Buffer
	l, err := LoadTileModel(tile, target, false, &warn)
	if err != nil {
		t.Fatal(err)
	}
	l.Predictor.Close()
	if warn.Len() != 0 {
		t.Errorf("same target: warning %q", warn.String())
	}
	if _, err := LoadTileModel(flags, target, false, &warn); err == nil || err.Error() != "--model "+flags+" is a flags model: validate scores tile runs with a tile model" {
		t.Errorf("flags model: %v", err)
	}
	other := target
	other.Chip = "v3"
	if _, err := LoadTileModel(tile, other, false, &warn); err == nil || !strings.Contains(err.Error(), "--allow-mismatch") {
		t.Errorf("another chip: %v, want a refusal naming --allow-mismatch", err)
	}
	if l, err = LoadTileModel(tile, other, true, &warn); err != nil || !strings.HasPrefix(warn.String(), "WARNING: model ") {
		t.Errorf("another chip, allowed: %v, warning %q", err, warn.String())
	} else {
		l.Predictor.Close()
	}
}
