package tune

import (
	"strings"
	"testing"
)

// TestMethodsRegistry: the strategies are the registry's (Methods): names unique, each
// parsed in any case, the XTAT schedule exactly xtat and partition, and Run dispatches
// every program-level search through its Method (rl aside: it needs a trained policy,
// TestRL*), spending no more than the budget and reporting the strategy's name.
func TestMethodsRegistry(t *testing.T) {
	seen := map[Strategy]bool{}
	for _, m := range Methods() {
		name := m.Name()
		if seen[name] {
			t.Errorf("strategy %s registered twice", name)
		}
		seen[name] = true
		if st, err := ParseStrategy(strings.ToUpper(string(name))); err != nil || st != name {
			t.Errorf("ParseStrategy(%s) = %v, %v", strings.ToUpper(string(name)), st, err)
		}
		if got, ok := Lookup(name); !ok || got.Name() != name {
			t.Errorf("Lookup(%s) = %v, %v", name, got, ok)
		}
		if want := name == XTAT || name == Partition; m.Schedule() != want {
			t.Errorf("%s: Schedule() = %v, want %v", name, m.Schedule(), want)
		}
	}
	if _, ok := Lookup("nope"); ok {
		t.Error(`Lookup("nope") found a strategy`)
	}
	m := smallModule(t)
	chip := testChip(t)
	const budget = 10
	for _, meth := range Methods() {
		if meth.Schedule() || meth.Name() == RL {
			continue
		}
		r := mustRun(t, m, Options{Chip: chip, Strategy: meth.Name(), Budget: budget, Kinds: graphKinds})
		if r.Strategy != string(meth.Name()) || r.Measurements > budget || r.Measurements == 0 {
			t.Errorf("%s: report says strategy %s, %d measurements (budget %d)", meth.Name(), r.Strategy, r.Measurements, budget)
		}
	}
}
