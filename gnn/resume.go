package gnn

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// ResumeCheckpoint reads the checkpoint in out that a resumed run continues: nil (and no
// error) when out holds no model file, so the run starts afresh (training itself reports
// an out it cannot use).
func ResumeCheckpoint(out string) (*Checkpoint, error) {
	if _, err := os.Stat(filepath.Join(out, ModelFile)); err != nil {
		return nil, nil
	}
	return ReadCheckpoint(out)
}

// MergeResume returns the options of a run that continues ck from those the caller
// built, given which settings the caller set (set(field); fields are named as in
// FieldError.Field, and "layers", "hidden", "reduce", "features", "heads", "prior" for
// the model's architecture): a setting not set is taken from ck (cleared, for training to
// fill from the checkpoint, or ck's split settings), a set one is kept for training to
// compare with ck's (it refuses one that differs). model is the architecture the
// caller's settings describe, of which only the set parts are used.
func MergeResume(ck *Checkpoint, model Config, data DataOptions, opts TrainOptions, set func(field string) bool) (DataOptions, TrainOptions) {
	if !set("layers") && !set("hidden") && !set("reduce") && !set("features") && !set("heads") && !set("prior") {
		opts.Model = Config{}
	} else {
		m := ck.Config
		if set("layers") {
			m.Layers = model.Layers
		}
		if set("hidden") {
			m.Hidden, m.Head = model.Hidden, model.Head
		}
		if set("reduce") {
			m.Reduce = model.Reduce
		}
		if set("features") {
			m = m.WithFeatures(model.Features)
		}
		if set("heads") {
			m.Tasks = model.Tasks
		}
		if set("prior") {
			m.Prior = model.Prior
		}
		opts.Model = m
	}
	for field, p := range map[string]any{"epochs": &opts.Epochs, "batch_kernels": &opts.BatchKernels, "max_configs": &opts.MaxConfigs,
		"lr": &opts.LR, "seed": &opts.Seed, "patience": &opts.Patience, "max_segment_nodes": &opts.MaxSegmentNodes,
		"steps": &opts.Steps, "schedule": &opts.Schedule} {
		if !set(field) {
			switch p := p.(type) {
			case *int:
				*p = 0
			case *int64:
				*p = 0
			case *float64:
				*p = 0
			case *Schedule:
				*p = ""
			}
		}
	}
	m := ck.Meta
	if !set("split") {
		data.Split = m.Split
	}
	if !set("test_fraction") {
		data.TestFraction = m.TestFraction
	}
	if !set("val_fraction") {
		data.ValFraction = m.ValFraction
	}
	if !set("split_seed") {
		data.SplitSeed = m.SplitSeed
	}
	return data, opts
}

// ParsePatience reads a patience setting as TrainOptions.Patience takes it: "auto" (0,
// the default from the budget), "off" or an integer number of epochs (0 or negative:
// off, -1).
func ParsePatience(s string) (int, error) {
	switch s {
	case "auto":
		return 0, nil
	case "off":
		return -1, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q: want auto, off or an integer number of epochs", s)
	}
	if n <= 0 {
		return -1, nil // 0 epochs of patience would stop after the first; the library's 0 means "default"
	}
	return n, nil
}
