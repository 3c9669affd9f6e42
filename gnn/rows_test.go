package gnn

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/features"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/zoo"
)

// testChip is the chip every test compiles for and simulates on.
func testChip(tb testing.TB) tpusim.Chip {
	tb.Helper()
	c, err := tpusim.Preset("v4")
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// compileZoo compiles a zoo model with its default config.
func compileZoo(tb testing.TB, name string) *compiler.Program {
	tb.Helper()
	m, err := zoo.Resolve(name)
	if err != nil {
		tb.Fatal(err)
	}
	p, err := compiler.Compile(m, nil, compiler.Options{Target: testChip(tb).Target})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// rowsFor builds in-memory rows from a compiled zoo model, one per distinct kernel: for a
// relative task, up to maxConfigs (tile, flags) options drawn with rng (tile task: tiles
// with the kernel's flags; flags task: flags with its tile); for an absolute task, the
// kernel's own config. Times come from tpusim.SimulateChoice.
func rowsFor(tb testing.TB, model string, task dataset.Task, maxConfigs int, rng *rand.Rand) []dataset.Row {
	tb.Helper()
	chip := testChip(tb)
	p := compileZoo(tb, model)
	seen := map[string]bool{}
	var rows []dataset.Row
	for _, k := range p.Kernels {
		if seen[k.Key] {
			continue
		}
		seen[k.Key] = true
		var choices []cost.Planned
		switch task {
		case dataset.TaskTile:
			choices = k.Info.Options(k.Key, chip.Target, k.Choice.Config.Flags)
		case dataset.TaskFlags:
			for _, f := range k.Choice.FlagOptions() {
				if c, err := k.Choice.WithFlags(f); err == nil {
					choices = append(choices, c)
				}
			}
		default:
			choices = []cost.Planned{k.Choice}
		}
		if len(choices) > maxConfigs {
			perm := rng.Perm(len(choices))[:maxConfigs]
			var c2 []cost.Planned
			for _, i := range perm {
				c2 = append(c2, choices[i])
			}
			choices = c2
		}
		r := dataset.Row{Program: p.Name, Task: task, KernelKey: k.Key, KernelName: k.Name, Kind: k.Kind, Graph: features.OfKernel(k, chip.Target)}
		for _, c := range choices {
			kt, err := tpusim.SimulateChoice(c, chip)
			if err != nil {
				continue
			}
			r.Configs = append(r.Configs, c.Config.String())
			r.ConfigFeats = append(r.ConfigFeats, features.Config(c))
			r.RuntimesNs = append(r.RuntimesNs, kt.Ns)
			r.AnalyticalNs = append(r.AnalyticalNs, c.Analytical())
		}
		if len(r.Configs) > 0 {
			rows = append(rows, r)
		}
	}
	return rows
}

// testRows caches rows per (model, task) across tests of one run: compiling is the slow
// part.
var testRows = struct {
	sync.Mutex
	m map[string][]dataset.Row
}{m: map[string][]dataset.Row{}}

func cachedRows(tb testing.TB, model string, task dataset.Task, maxConfigs int) []dataset.Row {
	tb.Helper()
	// The key names every argument: a test's rows must not depend on which test ran first.
	key := fmt.Sprintf("%s/%s/%d", model, task, maxConfigs)
	testRows.Lock()
	defer testRows.Unlock()
	if r, ok := testRows.m[key]; ok {
		return r
	}
	r := rowsFor(tb, model, task, maxConfigs, rand.New(rand.NewPCG(1, 2)))
	testRows.m[key] = r
	return r
}

// rowsWithConfigs keeps rows with at least n configurations, truncated to n.
func rowsWithConfigs(rows []dataset.Row, n, maxRows int) []dataset.Row {
	var out []dataset.Row
	for _, r := range rows {
		if len(r.Configs) < n {
			continue
		}
		r.Configs, r.ConfigFeats, r.RuntimesNs, r.AnalyticalNs = r.Configs[:n], r.ConfigFeats[:n], r.RuntimesNs[:n], r.AnalyticalNs[:n]
		out = append(out, r)
		if len(out) == maxRows {
			break
		}
	}
	return out
}

// TestMetaTargetMismatch: the first differing target field is named with both values;
// fields the model does not record, and an unknown simulator, are not compared.
func TestMetaTargetMismatch(t *testing.T) {
	m := Meta{Chip: "v4", VMEMBytes: 32 << 20, Simulator: "tpusim-3"}
	for _, c := range []struct {
		chip      string
		vmem      int64
		sim, want string
	}{
		{"v4", 32 << 20, "tpusim-3", ""},
		{"v5e", 32 << 20, "tpusim-3", "chip"},
		{"v4", 16 << 20, "tpusim-3", "vmem_bytes"},
		{"v4", 32 << 20, "tpusim-2", "simulator"},
		{"v4", 32 << 20, "", ""},
	} {
		if f, _, _ := m.TargetMismatch(c.chip, c.vmem, c.sim); f != c.want {
			t.Errorf("%+v: field %q, want %q", c, f, c.want)
		}
	}
	if f, _, _ := (Meta{}).TargetMismatch("v5e", 1, "x"); f != "" {
		t.Errorf("a model recording no target: mismatch %q", f)
	}
	if chip, vmem := m.DefaultTarget(); chip != "v4" || vmem != 32 {
		t.Errorf("default target %s, %d MiB", chip, vmem)
	}
}
