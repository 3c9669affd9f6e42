package tpusim

import (
	"math"
	"testing"

	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/internal/measure"
	"github.com/tpucost/tpucost/internal/measure/measuretest"
)

// choices are a matmul program's kernel choices, each under every tile option it lists
// (at least 2 in all).
func choices(t *testing.T, c Chip) []cost.Planned {
	t.Helper()
	p := compileDefault(t, matmulModule(t, hlo.BF16, 512, 512, 512), c, nil)
	var out []cost.Planned
	for _, k := range p.Kernels {
		out = append(out, k.Choice)
	}
	for i := range p.Space.Tile {
		out = append(out, p.Space.Tile[i].Planned()...)
	}
	if len(out) < 4 {
		t.Fatalf("%d choices, want at least 4", len(out))
	}
	return out[:min(len(out), 12)]
}

// TestChoiceBackendConformance: the simulator behind measure.Backend passes the shared
// machinery's checks, without noise and with it.
func TestChoiceBackendConformance(t *testing.T) {
	c := preset(t, "v4")
	cs := choices(t, c)
	for _, o := range []Options{{}, {NoiseSigma: 0.05, Runs: 5, Seed: 7}} {
		sim, err := New(c, o)
		if err != nil {
			t.Fatal(err)
		}
		measuretest.Conformance[cost.Planned](t, ChoiceBackend{Sim: sim}, "sim", cs, 1)
	}
}

// TestChoiceBackendSameNumbers: the adapter's time is MeasureChoice's, bit for bit, for
// every salt; its spread and noise are those of the runs' copies (0 without noise,
// positive with it, the same for the same seed); it rejects and repeats nothing.
func TestChoiceBackendSameNumbers(t *testing.T) {
	c := preset(t, "v4")
	cs := choices(t, c)
	quiet, _ := New(c, Options{})
	noisy, _ := New(c, Options{NoiseSigma: 0.05, Runs: 5, Seed: 7})
	again, _ := New(c, Options{NoiseSigma: 0.05, Runs: 5, Seed: 7})
	for _, p := range cs {
		for salt := uint64(0); salt < 3; salt++ {
			b := ChoiceBackend{Sim: noisy, Salt: func(cost.Planned) uint64 { return salt }}
			s, err := b.Measure(p)
			if err != nil {
				t.Fatal(err)
			}
			m, _ := noisy.MeasureChoice(p, salt)
			if s.MedianNs != m.Ns {
				t.Fatalf("adapter %v ns, MeasureChoice %v ns", s.MedianNs, m.Ns)
			}
			s2, _ := ChoiceBackend{Sim: again, Salt: b.Salt}.Measure(p)
			if s2 != s {
				t.Fatalf("same seed and salt: %+v and %+v", s, s2)
			}
			// The copies' spread: min is the time, so spread > 0 unless all 5 runs drew
			// the same |N|, which has probability 0.
			if !(s.SpreadPct > 0) || !(s.Noise > 0) || s.Kept != 5 || s.Calls != 5 || s.Rejected != 0 || s.Remeasured != 0 {
				t.Errorf("noisy sample %+v: want spread and noise > 0, 5 runs kept and called, none rejected or repeated", s)
			}
			// Each copy is truth·(1 + |N(0, 0.05)|): a spread of 100% would need a 20-sigma draw.
			if s.SpreadPct > 100 {
				t.Errorf("spread %v%% of 5%% noise", s.SpreadPct)
			}
		}
		s, err := ChoiceBackend{Sim: quiet}.Measure(p)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := quiet.MeasureChoice(p, 0)
		if s.MedianNs != m.Ns || s.MedianNs != m.TrueNs || s.SpreadPct != 0 || s.Noise != 0 || s.Kept != 3 {
			t.Errorf("noiseless sample %+v, MeasureChoice %+v: want its time, no spread, 3 runs", s, m)
		}
	}
	// The copies' minimum is what noisy reports.
	cp := noisy.copies(1000, 42, 9)
	lo := math.Inf(1)
	for _, v := range cp {
		lo = math.Min(lo, v)
	}
	if lo != noisy.noisy(1000, 42, 9) {
		t.Errorf("min of copies %v, noisy %v", lo, noisy.noisy(1000, 42, 9))
	}
	var _ measure.Backend[cost.Planned] = ChoiceBackend{}
}
