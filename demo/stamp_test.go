package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/dataset/gen"
	"github.com/tpucost/tpucost/features"
	"github.com/tpucost/tpucost/internal/atomicfile"
	"github.com/tpucost/tpucost/tpusim"
)

// TestGenerateRedoesOtherFeatureSchema: a complete dataset, stamped with the demo's
// settings and its fingerprint, but of an older feature schema (as an earlier tpucost
// wrote it) is regenerated rather than reused, since training would refuse it.
func TestGenerateRedoesOtherFeatureSchema(t *testing.T) {
	chip, err := tpusim.Preset(tpusim.DefaultChip)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "tile")
	o := gen.Options{Task: dataset.TaskTile, Models: []string{"mlp_96x2_b1"}, Out: out, Configs: 2, Variants: 1, Seed: 1,
		Chip: chip, ToolVersion: "demo"}

	// The older data: one valid part of the demo's task, feature schema one version back.
	old := features.CurrentSchema()
	old.Version--
	prov := dataset.Provenance{SchemaVersion: dataset.SchemaVersion, FeatureSchema: old, SimulatorVersion: tpusim.Version,
		Chip: chip.Name, Seed: 1, Task: dataset.TaskTile, ConfigsPerKernel: 2, Models: o.Models, ShardCount: 1}
	w, err := dataset.NewWriter(dataset.WriterOptions{Dir: out, Provenance: prov})
	if err != nil {
		t.Fatal(err)
	}
	row := dataset.Row{Program: "mlp_96x2_b1", Task: dataset.TaskTile, KernelKey: "k1", KernelName: "fusion", Kind: "kLoop",
		Graph: features.Graph{Opcodes: []int32{1, 19}, NodeFeats: make([]float32, 2*features.NodeWidth),
			EdgeSrc: []int32{0}, EdgeDst: []int32{1}, KernelFeats: make([]float32, features.KernelWidth)},
		Configs: []string{"tile=8x128", "tile=16x128"}, ConfigFeats: [][]float32{make([]float32, features.ConfigWidth), make([]float32, features.ConfigWidth)},
		RuntimesNs: []float64{100, 200}, AnalyticalNs: []float64{100, 200}}
	if err := w.WritePart(0, 1, []dataset.Row{row}, []dataset.Occurrence{{Program: "mlp_96x2_b1", KernelKey: "k1", Count: 1}}); err != nil {
		t.Fatal(err)
	}
	fp, err := dataset.Fingerprint(out)
	if err != nil {
		t.Fatal(err)
	}
	st := stamp{Task: o.Task, Models: o.Models, Configs: o.Configs, Variants: o.Variants, Seed: o.Seed, Chip: chip.Name,
		VMEMBytes: chip.VMEMBytes, Simulator: tpusim.Version, Generator: gen.Version, Fingerprint: fp}
	b, _ := json.Marshal(st)
	if err := atomicfile.WriteFile(stampFile(out), b); err != nil {
		t.Fatal(err)
	}

	var progress bytes.Buffer
	reused, err := generate(context.Background(), o, &progress)
	if err != nil {
		t.Fatal(err)
	}
	if len(reused) != 0 || !strings.Contains(progress.String(), "regenerating") {
		t.Errorf("reused %v, progress %q: want the older-schema data regenerated", reused, progress.String())
	}
	d, err := dataset.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	if v := d.Provenance.FeatureSchema.Version; v != features.SchemaVersion {
		t.Errorf("regenerated data has feature schema %d, want %d", v, features.SchemaVersion)
	}
	// The regenerated data, stamped anew, is reused by the next run.
	if reused, err = generate(context.Background(), o, &progress); err != nil || len(reused) != 1 {
		t.Errorf("second generate reused %v (%v), want the data", reused, err)
	}
	if _, err := os.Stat(stampFile(out)); err != nil {
		t.Error(err)
	}
}
