package tune

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// TestConfirmationJSONHasOnlyMeasuredTimes: a no-change confirmation re-measures nothing,
// so its JSON has no winner_ns or start_ns (a 0 there once read as a measured time); a
// confirmation that measured has both.
func TestConfirmationJSONHasOnlyMeasuredTimes(t *testing.T) {
	m, err := hlo.Parse("t.hlo", []byte("HloModule m\nENTRY e {\n  ROOT p = f32[4] parameter(0)\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	chip := testChip(t)
	for _, c := range []struct {
		name     string
		r        *Report
		measured bool
	}{
		{"nothing to tune", mustRun(t, m, Options{Chip: chip, Budget: 3, Seed: 1}), false},
		{"small", mustRun(t, smallModule(t), Options{Chip: chip, Budget: 30, Seed: 1, Noise: 0.02}), true},
	} {
		if (c.r.Confirmation.Outcome != NoChange) != c.measured {
			t.Fatalf("%s: outcome %s: the case no longer tests a confirmation that measured %v", c.name, c.r.Confirmation.Outcome, c.measured)
		}
		b, err := json.Marshal(c.r)
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Confirmation map[string]any `json:"confirmation"`
		}
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"winner_ns", "start_ns"} {
			v, ok := out.Confirmation[key]
			if ok != c.measured || ok && !(v.(float64) > 0) {
				t.Errorf("%s (%s): %s = %v (present %v); want it present and > 0 exactly when measured", c.name, c.r.Confirmation.Outcome, key, v, ok)
			}
		}
		if !strings.Contains(string(b), `"outcome"`) {
			t.Errorf("%s: no outcome in %s", c.name, b)
		}
	}
}
