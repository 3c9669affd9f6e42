package gnn

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/dataset"
)

func TestOptionsValidate(t *testing.T) {
	valid := smallOptions("")
	valid.Loss = LossRankHinge
	if err := valid.Validate(); err != nil {
		t.Fatalf("valid options: %v", err)
	}
	for _, tc := range []struct {
		field string
		edit  func(*TrainOptions)
	}{
		{"epochs", func(o *TrainOptions) { o.Epochs = -3 }},
		{"steps", func(o *TrainOptions) { o.Steps = -1 }},
		{"steps", func(o *TrainOptions) { o.Epochs, o.Steps = 3, 100 }},
		{"batch_kernels", func(o *TrainOptions) { o.BatchKernels = 0 }},
		{"max_configs", func(o *TrainOptions) { o.MaxConfigs = 1 }}, // a rank loss needs pairs
		{"lr", func(o *TrainOptions) { o.LR = 0 }},
		{"lr", func(o *TrainOptions) { o.LR = 2 }},
		{"lr", func(o *TrainOptions) { o.LR = -1e-3 }},
		{"shuffle_buffer", func(o *TrainOptions) { o.ShuffleBuffer = -1 }},
		{"layers", func(o *TrainOptions) { o.Model.Layers = -1 }},
		{"layers", func(o *TrainOptions) { o.Model.Layers = maxLayers + 1 }},
		{"hidden", func(o *TrainOptions) { o.Model.Hidden = 0 }},
		{"hidden", func(o *TrainOptions) { o.Model.Hidden = maxHidden + 1 }},
	} {
		o := valid
		o.Model.Head = []int{16}
		tc.edit(&o)
		var fe *FieldError
		if err := o.Validate(); !errors.As(err, &fe) || fe.Field != tc.field || fe.Range == "" {
			t.Errorf("%s out of range: %v", tc.field, err)
		}
	}
	d := DataOptions{Split: dataset.SplitRandom, TestFraction: 0.2, ValFraction: 0.1}
	for _, kind := range dataset.SplitKinds() { // every split the dataset package makes (family was once refused)
		o := d
		o.Split = kind
		if err := o.Validate(); err != nil {
			t.Errorf("split %s: %v", kind, err)
		}
	}
	for _, tc := range []struct {
		field string
		edit  func(*DataOptions)
	}{
		{"test_fraction", func(o *DataOptions) { o.TestFraction = 0 }},
		{"test_fraction", func(o *DataOptions) { o.TestFraction = 1 }},
		{"val_fraction", func(o *DataOptions) { o.ValFraction = 1.5 }},
		{"split", func(o *DataOptions) { o.Split = "kernel" }},
	} {
		o := d
		tc.edit(&o)
		var fe *FieldError
		if err := o.Validate(); !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s out of range: %v", tc.field, err)
		}
	}
}

// countingSource counts the passes over its rows.
type countingSource struct {
	RowSource
	passes *int
}

func (c countingSource) Rows(fn func(*dataset.Row) error) error {
	*c.passes++
	return c.RowSource.Rows(fn)
}

func TestTrainChecksOutputBeforeTraining(t *testing.T) {
	train, val := trainRows(t)
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	passes := 0
	o := smallOptions(filepath.Join(file, "model")) // a directory under a regular file
	_, err := trainSources(context.Background(), countingSource{train, &passes}, val, o)
	if err == nil || !strings.Contains(err.Error(), "not writable") || passes != 0 {
		t.Errorf("unwritable output: %v after %d passes over the data", err, passes)
	}
}

// TestResumeRefusesOtherSettings resumes a checkpoint with each setting changed, and with
// other data: refused with the field and both values; unset settings are the
// checkpoint's.
func TestResumeRefusesOtherSettings(t *testing.T) {
	train, val := trainRows(t)
	dir := filepath.Join(t.TempDir(), "m")
	o := smallOptions(dir)
	o.Epochs = 1
	o.Datasets = []DatasetRef{{Path: "d", Fingerprint: "aaaa"}}
	if _, err := trainSources(context.Background(), train, val, o); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		want string
		edit func(*TrainOptions)
	}{
		{"lr is 0.01, the checkpoint's is 0.003", func(o *TrainOptions) { o.LR = 0.01 }},
		{"batch_kernels is 4, the checkpoint's is 8", func(o *TrainOptions) { o.BatchKernels = 4 }},
		{"seed is 7, the checkpoint's is 42", func(o *TrainOptions) { o.Seed = 7 }},
		{"hidden is 32, the checkpoint's is 16", func(o *TrainOptions) { o.Model.Hidden = 32 }},
		{"layers is 2, the checkpoint's is 3", func(o *TrainOptions) { o.Model.Layers = 2 }},
		{"bucketing is false, the checkpoint's is true", func(o *TrainOptions) { o.NoBucketing = true }},
		{"split is program, the checkpoint's is ", func(o *TrainOptions) { o.Meta.Split = "program" }},
		{"training data is d (fingerprint bbbb), the checkpoint's is", func(o *TrainOptions) { o.Datasets = []DatasetRef{{Path: "d", Fingerprint: "bbbb"}} }},
	} {
		r := smallOptions(dir)
		r.Resume, r.Epochs = true, 2
		r.Datasets = []DatasetRef{{Path: "d", Fingerprint: "aaaa"}}
		tc.edit(&r)
		if _, err := trainSources(context.Background(), train, val, r); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("resume: %v, want %q", err, tc.want)
		}
	}
	// Nothing given but Resume and Epochs: the checkpoint's settings.
	res, err := trainSources(context.Background(), train, val, TrainOptions{Task: dataset.TaskTile, OutDir: dir, Resume: true, Epochs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Checkpoint.Settings; s.LR != o.LR || s.BatchKernels != o.BatchKernels || s.Seed != o.Seed || len(res.History) != 2 ||
		res.Checkpoint.TrainedOn.Datasets[0].Fingerprint != "aaaa" {
		t.Errorf("resumed with %+v, %d epochs", s, len(res.History))
	}
}
