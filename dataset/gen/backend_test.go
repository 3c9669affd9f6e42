package gen

import (
	"context"
	"sync"
	"testing"

	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/internal/measure"
	"github.com/tpucost/tpucost/internal/stablehash"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/tpusim/ragged"
)

// fakeChoices is a fake measure.Backend[cost.Planned]: a choice takes its noiseless
// simulated time times scale plus a hash of its identity (below 1 ns), so a row's time
// shows which backend measured it; it records its calls in order.
type fakeChoices struct {
	chip  tpusim.Chip
	scale float64
	mu    sync.Mutex
	calls []cost.Planned
}

func (*fakeChoices) Name() string { return "fake" }

func (f *fakeChoices) ns(c cost.Planned) (float64, error) {
	kt, err := tpusim.SimulateChoice(c, f.chip)
	if err != nil {
		return 0, err
	}
	return kt.Ns * f.scale, nil
}

func (f *fakeChoices) Measure(c cost.Planned) (measure.Sample, error) {
	ns, err := f.ns(c)
	if err != nil {
		return measure.Sample{}, err
	}
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	return measure.Sample{MedianNs: ns, Kept: 1, Calls: 1}, nil
}

// TestSimTasksMeasureThroughTheSharedLoop: gen's kernel rows (the tile task) take their
// times from the backend its one constructor (generator.backend) gives, through
// measure.Run: with a fake backend injected there, each row's times are the fake's, and
// each kernel's configurations are measured once each in measure.Order of the kernel's
// seed. A loop that called the simulator itself, or measured the configurations in their
// own order, fails it.
func TestSimTasksMeasureThroughTheSharedLoop(t *testing.T) {
	dir := t.TempDir()
	o := genOpts(t, dataset.TaskTile, dir)
	o.Models, o.Variants = []string{"resnet18_b1"}, 1
	fake := &fakeChoices{chip: o.Chip, scale: 3}
	o.backend = func(uint64) measure.Backend[cost.Planned] { return fake }
	if _, err := Generate(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	d, err := dataset.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The calls, grouped by kernel (one worker: each kernel's calls are consecutive).
	byKernel := map[string][]string{}
	for i, c := range fake.calls {
		if i > 0 && fake.calls[i-1].Key == c.Key && len(byKernel[c.Key]) > 0 {
			byKernel[c.Key] = append(byKernel[c.Key], c.Config.String())
			continue
		}
		if _, seen := byKernel[c.Key]; !seen {
			byKernel[c.Key] = []string{c.Config.String()}
		}
	}
	rows, shuffled := 0, 0
	err = d.Rows(dataset.ReadOptions{}, func(r *dataset.Row) error {
		rows++
		calls := byKernel[r.KernelKey]
		if len(calls) != len(r.Configs) {
			t.Fatalf("kernel %s: %d configs, %d measured", r.KernelKey, len(r.Configs), len(calls))
		}
		order := measure.Order(measureSeed(o.Seed, r.KernelKey), len(r.Configs))
		for k, i := range order {
			if calls[k] != r.Configs[i] {
				t.Fatalf("kernel %s: measurement %d was %s, want %s (config %d, the seeded order)", r.KernelKey, k, calls[k], r.Configs[i], i)
			}
			if k != i {
				shuffled++
			}
		}
		for i, c := range fake.calls {
			if c.Key != r.KernelKey {
				continue
			}
			for j, s := range r.Configs {
				if s == c.Config.String() {
					want, _ := fake.ns(fake.calls[i])
					if r.RuntimesNs[j] != want {
						t.Errorf("kernel %s config %s: runtime %v, the fake measured %v", r.KernelKey, s, r.RuntimesNs[j], want)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rows == 0 || shuffled == 0 {
		t.Errorf("%d rows, %d configs measured out of their order: want some of each", rows, shuffled)
	}
}

// TestRaggedMeasuresThroughTheBackend: gen --lengths with noise takes each kernel's
// noise from the backend (generator.backend, through measure.Run): with a fake backend
// that reports 2× the noiseless time, every row is 2× the compiled ragged time.
func TestRaggedMeasuresThroughTheBackend(t *testing.T) {
	dir := t.TempDir()
	o := raggedOpts(t, dir)
	o.Lengths = o.Lengths[:1]
	o.Noise = tpusim.Options{NoiseSigma: 0.05, Runs: 3, Seed: 7}
	fake := &fakeChoices{chip: o.Chip, scale: 2}
	var salts []uint64
	o.backend = func(salt uint64) measure.Backend[cost.Planned] { salts = append(salts, salt); return fake }
	if _, err := Generate(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	quiet := raggedOpts(t, t.TempDir())
	quiet.Lengths = o.Lengths
	if _, err := Generate(context.Background(), quiet); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{}
	read := func(dir string, f func(r *dataset.Row)) {
		d, err := dataset.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Rows(dataset.ReadOptions{}, func(r *dataset.Row) error { f(r); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	read(quiet.Out, func(r *dataset.Row) { want[r.KernelKey] = 2 * r.RuntimesNs[0] })
	n := 0
	read(dir, func(r *dataset.Row) {
		n++
		if r.RuntimesNs[0] != want[r.KernelKey] {
			t.Errorf("kernel %s: %v ns, want 2× the noiseless %v", r.KernelKey, r.RuntimesNs[0], want[r.KernelKey]/2)
		}
	})
	lengths, err := ragged.ParseLengths(o.Lengths[0])
	if err != nil {
		t.Fatal(err)
	}
	salt := stablehash.New().Label("ragged").Str(ragged.FormatLengths(lengths)).Sum64()
	if n == 0 || len(fake.calls) != n || len(salts) != n || salts[0] != salt {
		t.Errorf("%d rows, %d measured, %d backends salted %v; want one each, salted by the batch", n, len(fake.calls), len(salts), salts[:min(1, len(salts))])
	}
}
