package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/dataset/gen"
	"github.com/tpucost/tpucost/gnn"
	"github.com/tpucost/tpucost/tpusim"
)

// genAt generates a small tile dataset in dir.
func genAt(t *testing.T, dir, chipName string, seed int64, models ...string) {
	t.Helper()
	chip, err := tpusim.Preset(chipName)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.Generate(context.Background(), gen.Options{Task: dataset.TaskTile, Models: models, Out: dir, Configs: 6, Chip: chip, Seed: seed}); err != nil {
		t.Fatal(err)
	}
}

// trainTiny trains a one-epoch tile model on data (a path relative to the working
// directory) into out.
func trainTiny(t *testing.T, data, out string) {
	t.Helper()
	cfg := gnn.DefaultConfig()
	cfg.Hidden, cfg.EmbedDim, cfg.Layers, cfg.Head = 8, 4, 1, []int{8}
	_, err := gnn.TrainDataset(context.Background(), gnn.DataOptions{Dir: data, Split: dataset.SplitProgram, TestFraction: 0.34, SplitSeed: 1},
		gnn.TrainOptions{Task: dataset.TaskTile, Model: cfg, Epochs: 1, BatchKernels: 8, Seed: 1, OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRunNeverScoresTrainingRows trains on one dataset and evaluates on its own data
// (found relative to the model directory, from another working directory) and on other
// data holding the training programs: no row whose kernel the model saw is scored, and
// the exclusions are counted.
func TestRunNeverScoresTrainingRows(t *testing.T) {
	root := t.TempDir()
	genAt(t, filepath.Join(root, "a"), "v4", 3, "mlp_96x2_b1", "resnet18_b1", "bert_tiny_s128_b32")
	t.Chdir(root)
	trainTiny(t, "a", filepath.Join("models", "m"))
	model := filepath.Join(root, "models", "m")
	t.Chdir(t.TempDir())

	own, err := Run(RunOptions{ModelDir: model})
	if err != nil {
		t.Fatalf("default data from another working directory: %v", err)
	}
	if filepath.Clean(own.Data) != filepath.Join(root, "a") || !own.DataTrainedOn || own.Kernels == 0 {
		t.Errorf("own data: data %s, trained on %v, %d kernels", own.Data, own.DataTrainedOn, own.Kernels)
	}

	ck, err := gnn.ReadCheckpoint(model)
	if err != nil {
		t.Fatal(err)
	}
	seen, err := gnn.SeenKeys(model, ck)
	if err != nil {
		t.Fatal(err)
	}
	// count returns the rows of dir's test part under the model's split and how many of
	// them are kernels the model saw.
	count := func(dir string) (testRows, seenRows int) {
		d, err := dataset.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		split, err := dataset.NewSplit(d, ck.Meta.Split, ck.Meta.TestFraction, ck.Meta.SplitSeed)
		if err != nil {
			t.Fatal(err)
		}
		d.Rows(dataset.ReadOptions{Split: split, Part: dataset.Test}, func(r *dataset.Row) error {
			testRows++
			if seen.Contains(gnn.KernelID(r.KernelKey)) {
				seenRows++
			}
			return nil
		})
		return testRows, seenRows
	}
	if n, s := count(filepath.Join(root, "a")); own.ExcludedRows != s || own.Kernels != n-s {
		t.Errorf("own data: excluded %d rows, scored %d kernels; want %d excluded of %d", own.ExcludedRows, own.Kernels, s, n)
	}
	var js map[string]any
	b, _ := json.Marshal(own)
	json.Unmarshal(b, &js)
	if js["excluded_rows"] != float64(own.ExcludedRows) {
		t.Errorf("--json excluded_rows %v", js["excluded_rows"])
	}
	var table bytes.Buffer
	own.WriteTable(&table)
	if !strings.Contains(table.String(), fmt.Sprintf("excluded %d rows", own.ExcludedRows)) {
		t.Errorf("table does not say how many rows were excluded:\n%s", table.String())
	}

	// Other data: the model's training programs and one more, regenerated with another
	// seed. Its re-drawn test part holds a program the model trained on (the issue's
	// case: before, it was scored).
	other := filepath.Join(root, "b")
	genAt(t, other, "v4", 5, append(ck.TrainedOn.TrainPrograms, "mlp_768x3_b8")...)
	testRows, seenRows := count(other)
	if seenRows == 0 {
		t.Fatalf("the other data's test part (%d rows) holds no training kernel: the test tests nothing", testRows)
	}
	res, err := Run(RunOptions{ModelDir: model, DataDir: other})
	if seenRows == testRows {
		if err == nil || !strings.Contains(err.Error(), "trained or validated on") {
			t.Errorf("every test row seen: error %v", err)
		}
	} else if err != nil || res.ExcludedRows != seenRows || res.Kernels != testRows-seenRows || res.DataTrainedOn {
		t.Errorf("other data: %v; want %d of %d test rows excluded", err, seenRows, testRows)
	}
}

// TestRunRefusesOtherChip evaluates a v4 model on v5e data: refused, or with
// AllowMismatch evaluated with a warning and chip_mismatch set.
func TestRunRefusesOtherChip(t *testing.T) {
	root := t.TempDir()
	data, other := filepath.Join(root, "a"), filepath.Join(root, "b")
	genAt(t, data, "v4", 3, "mlp_96x2_b1", "resnet18_b1", "bert_tiny_s128_b32")
	genAt(t, other, "v5e", 3, "mlp_96x2_b1", "resnet18_b1", "bert_tiny_s128_b32")
	model := filepath.Join(root, "m")
	trainTiny(t, data, model)
	if _, err := Run(RunOptions{ModelDir: model, DataDir: other}); err == nil || !strings.Contains(err.Error(), "chip v4") || !strings.Contains(err.Error(), "v5e") {
		t.Errorf("v5e data for a v4 model: %v", err)
	}
	var warn bytes.Buffer
	res, err := Run(RunOptions{ModelDir: model, DataDir: other, AllowMismatch: true, Warn: &warn})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	if !res.ChipMismatch || !strings.Contains(string(b), `"chip_mismatch":true`) || !strings.Contains(warn.String(), "WARNING") {
		t.Errorf("override: chip_mismatch %v, warning %q", res.ChipMismatch, warn.String())
	}
}

func TestEvaluateNothingLeft(t *testing.T) {
	d := genData(t, dataset.TaskTile, "mlp_96x2_b1")
	perfect := batch(func(r *dataset.Row) []float64 { return r.RuntimesNs })
	_, err := Evaluate(d, nil, perfect, func(*dataset.Row) bool { return true })
	if err == nil || !strings.Contains(err.Error(), "trained or validated on") {
		t.Errorf("every row excluded: %v", err)
	}
}

// TestRunRefusesOtherFeatureSchema evaluates a model on a copy of its data that claims
// another feature schema version: refused (the rows' features would mean other things).
func TestRunRefusesOtherFeatureSchema(t *testing.T) {
	root := t.TempDir()
	data, other := filepath.Join(root, "a"), filepath.Join(root, "b")
	genAt(t, data, "v4", 3, "mlp_96x2_b1", "resnet18_b1", "bert_tiny_s128_b32")
	model := filepath.Join(root, "m")
	trainTiny(t, data, model)
	d, err := dataset.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	prov := d.Provenance
	prov.FeatureSchema.Version++
	w, err := dataset.NewWriter(dataset.WriterOptions{Dir: other, Provenance: prov})
	if err != nil {
		t.Fatal(err)
	}
	var rows []dataset.Row
	last := int64(0)
	d.Rows(dataset.ReadOptions{}, func(r *dataset.Row) error {
		rows = append(rows, r.Clone())
		last = max(last, r.Unit)
		return nil
	})
	occ, err := d.Occurrences()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range occ {
		last = max(last, o.Unit)
	}
	if err := w.WritePart(0, last, rows, occ); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if _, err := Run(RunOptions{ModelDir: model, DataDir: other, AllowMismatch: true}); !errors.Is(err, gnn.ErrFeatureSchema) {
		t.Errorf("data of another feature schema: %v", err)
	}
}
