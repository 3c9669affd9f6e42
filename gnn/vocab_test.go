package gnn

import (
	"encoding/json"
	"testing"
)

// TestEpochReadsLegacyKeys: epochs of checkpoints written before the JSON vocabulary rule
// ("seconds", "kernels_per_sec") still read; new ones are written as wall_s and
// kernels_per_s.
func TestEpochReadsLegacyKeys(t *testing.T) {
	var e Epoch
	if err := json.Unmarshal([]byte(`{"epoch":2,"train_loss":0.5,"kernels":3,"samples":9,"seconds":1.5,"kernels_per_sec":7,"graph_builds":1}`), &e); err != nil {
		t.Fatal(err)
	}
	if e.Epoch != 2 || e.WallS != 1.5 || e.KernelsPerS != 7 || e.Samples != 9 {
		t.Errorf("legacy epoch read as %+v", e)
	}
	if err := json.Unmarshal([]byte(`{"epoch":2,"bogus":1}`), &e); err == nil {
		t.Error("an unknown epoch field was accepted")
	}
	b, _ := json.Marshal(Epoch{Epoch: 1, WallS: 2, KernelsPerS: 3})
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["wall_s"]; !ok || m["kernels_per_s"] != 3.0 || m["seconds"] != nil {
		t.Errorf("epoch written as %s", b)
	}
}
