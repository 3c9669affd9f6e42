package tune

import (
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/tpusim"
)

// TestTuneStaging: with Options.Staging the staging edges are a searchable kind. Off, they
// do not exist (a search of staging alone has nothing to change); on, the tuner searches
// them, the tuned config records them, and compiling it with staging off (strictly)
// reproduces the tuned time.
func TestTuneStaging(t *testing.T) {
	chip, err := tpusim.Preset("v5e") // one core: the small module's edges stage
	if err != nil {
		t.Fatal(err)
	}
	m := smallModule(t)
	base := Options{Chip: chip, Strategy: Exhaustive, Budget: 8, Seed: 1, Kinds: []compiler.Kind{compiler.KindStaging}}
	off := mustRun(t, m, base)
	if off.Measurements != 1 || len(off.Config.Staging) != 0 {
		t.Errorf("staging off: %d measurements, staging entries %v; want only the default compile", off.Measurements, off.Config.Staging)
	}
	on := base
	on.Staging = compiler.StagingOn
	r := mustRun(t, m, on)
	if len(r.Config.Staging) == 0 || r.Measurements < 2 {
		t.Fatalf("staging on: %d measurements, staging entries %v; want a search over them", r.Measurements, r.Config.Staging)
	}
	if r.TunedNs > r.DefaultNs || r.DefaultNs >= off.DefaultNs {
		t.Errorf("tuned %g ns, default (staged) %g ns, default unstaged %g ns: want tuned <= staged default < unstaged", r.TunedNs, r.DefaultNs, off.DefaultNs)
	}
	p, err := compiler.Compile(m, r.Config, compiler.Options{Target: chip.Target, Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := truth(t, p, chip); got != r.TunedNs {
		t.Errorf("the tuned config compiled with staging off: %g ns, want the tuned %g ns", got, r.TunedNs)
	}
}
