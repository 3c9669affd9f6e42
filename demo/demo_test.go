package demo

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/gnn"
	"github.com/tpucost/tpucost/gnn/eval"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/tune"
	"github.com/tpucost/tpucost/zoo"
)

// TestDemoMatchesTheCommands runs the quick demo and checks that its report holds the
// numbers `tpucost eval` and `tpucost tune` give for the same data and models.
func TestDemoMatchesTheCommands(t *testing.T) {
	out := t.TempDir()
	ctx := context.Background()
	res, err := Run(ctx, Options{Out: out, Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"report.md", "report.json", "plots/tile/scatter.png", "plots/fusion/programs.png", "plots/tile/training.png"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(out, "report.md"))
	// Evaluation: the same call as `tpucost eval --model DIR`.
	for _, m := range []struct {
		name string
		got  *eval.Result
	}{{"tile", res.Tile}, {"fusion", res.Graph}} {
		want, err := eval.Run(eval.RunOptions{ModelDir: modelDir(out, m.name)})
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(want.Report)
		b, _ := json.Marshal(m.got.Report)
		if string(a) != string(b) {
			t.Errorf("%s: demo evaluation differs from tpucost eval's", m.name)
		}
		var table strings.Builder
		want.WriteSummary(&table)
		if !strings.Contains(string(md), strings.SplitN(table.String(), "\n", 3)[1]) {
			t.Errorf("%s: report.md lacks eval's learned row %q", m.name, strings.SplitN(table.String(), "\n", 3)[1])
		}
	}
	// Tuning: the same call as `tpucost tune SRC --model ...` (wall time aside).
	tileModel, err := gnn.LoadPredictor(modelDir(out, "tile"), mustChip(t).Target)
	if err != nil {
		t.Fatal(err)
	}
	graphModel, err := gnn.LoadPredictor(modelDir(out, "fusion"), mustChip(t).Target)
	if err != nil {
		t.Fatal(err)
	}
	row := res.Tuning[0]
	m, err := zoo.Resolve(row.Program)
	if err != nil {
		t.Fatal(err)
	}
	s := Options{Quick: true}.settings()
	again, err := tune.Run(ctx, m, tune.Options{Chip: mustChip(t), Seed: 1, Noise: 0.02, Budget: s.ModelBudget, GraphModel: graphModel, KernelModel: tileModel})
	if err != nil {
		t.Fatal(err)
	}
	if again.TunedNs != row.Model.TunedNs || again.Measurements != row.Model.Measurements || again.HardwareS != row.Model.HardwareS {
		t.Errorf("model-guided tuning: demo %.1f ns / %d / %.1f s, tune again %.1f ns / %d / %.1f s",
			row.Model.TunedNs, row.Model.Measurements, row.Model.HardwareS, again.TunedNs, again.Measurements, again.HardwareS)
	}
	simOnly, err := tune.Run(ctx, m, tune.Options{Chip: mustChip(t), Seed: 1, Noise: 0.02, Budget: s.SimBudget})
	if err != nil {
		t.Fatal(err)
	}
	if simOnly.TunedNs != row.Sim.TunedNs {
		t.Errorf("simulator-only tuning: demo %.1f ns, tune again %.1f ns", row.Sim.TunedNs, simOnly.TunedNs)
	}
}

func mustChip(t *testing.T) tpusim.Chip {
	t.Helper()
	c, err := tpusim.Preset(tpusim.DefaultChip)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
