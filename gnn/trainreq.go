package gnn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/features"
)

// TrainRequest is a training run as `tpucost train` states it: every setting as given
// (the flag's value, strings unparsed), and which of them the user set. Plan turns it
// into the library's options, Train runs it. Errors name the flags ("--epochs 0 is out of
// range: want an integer >= 1").
type TrainRequest struct {
	Task         string // --task: tile, flags, fusion, layout; with Resume, default the checkpoint's
	Data         string // --data: dataset directories, comma-separated; with Resume, default the checkpoint's
	Out          string // --out: the checkpoint directory (required)
	Loss         string // --loss (ParseLoss); empty: DefaultLoss
	Epochs       int
	Steps        int
	Schedule     string // --lr-schedule (ParseSchedule)
	Batch        int    // --batch: kernels per batch (TrainOptions.BatchKernels)
	MaxConfigs   int
	LR           float64
	Seed         int64 // the first model's; an ensemble's k-th is Seed+k
	Split        string
	TestFraction float64
	ValFraction  float64
	SplitSeed    int64
	Patience     string // --patience (ParsePatience)
	Layers       int
	Hidden       int    // node embedding width, and every head layer's
	Reduce       string // --reduce (ParseReductions)
	Features     string // --features (features.ParseConfigSet)
	Prior        string // --prior: auto (DefaultPrior) or a weight
	Resume       bool
	NoBucketing  bool
	MaxSegment   int    // --max-segment-nodes
	Heads        string // --heads: tasks of a multi-task model, the first being Task
	Init         string // --init: a checkpoint to fine-tune (its architecture is kept)
	Ensemble     int    // models trained (TrainEnsemble)

	// Set reports whether the user gave a flag (named without dashes: "epochs",
	// "max-segment-nodes"); nil: none. Resume takes unset settings from the checkpoint;
	// some combinations are refused only when both are set.
	Set func(flag string) bool
	// Progress receives progress lines (nil: none).
	Progress io.Writer
}

// TrainPlan is a TrainRequest resolved: the data, the training options and the number
// of models, as TrainEnsemble takes them.
type TrainPlan struct {
	Data     DataOptions
	Options  TrainOptions
	Ensemble int
}

// trainFlag is the train flag that sets the library's option field (FieldError.Field),
// and whether there is one.
func trainFlag(field string) (string, bool) {
	flag, ok := map[string]string{
		"epochs": "--epochs", "batch_kernels": "--batch", "max_configs": "--max-configs", "lr": "--lr", "layers": "--layers",
		"hidden": "--hidden", "test_fraction": "--test-fraction", "val_fraction": "--val-fraction", "split": "--split", "seed": "--seed",
		"split_seed": "--split-seed", "features": "--features", "heads": "--heads", "patience": "--patience", "loss": "--loss", "reduce": "--reduce", "bucketing": "--no-bucketing",
		"max_segment_nodes": "--max-segment-nodes", "steps": "--steps", "schedule": "--lr-schedule", "ensemble": "--ensemble", "prior": "--prior",
	}[field]
	return flag, ok
}

// trainFlagError rewrites an out-of-range option as the flag that set it, in the command
// line's one style: `--epochs "0": want an integer >= 1`. Other errors pass through.
func trainFlagError(err error) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		if flag, ok := trainFlag(fe.Field); ok {
			v := fe.Value // a string option's value may be quoted already
			if u, err := strconv.Unquote(v); err == nil {
				v = u
			}
			return fmt.Errorf("%s %q: want %s", flag, v, fe.Range)
		}
	}
	return err
}

// Train runs r (Plan, then TrainEnsemble) and returns its summary.
func (r TrainRequest) Train(ctx context.Context) (*TrainSummary, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	p, err := r.Plan()
	if err != nil {
		return nil, err
	}
	res, err := TrainEnsemble(ctx, p.Data, p.Options, p.Ensemble)
	if err != nil {
		return nil, trainFlagError(err)
	}
	s := res.Summary(p.Options.OutDir)
	return &s, nil
}

// Plan checks r's settings as given (no quiet defaults: `--epochs 0` is an error) and
// assembles the run: the model configuration from the architecture flags, the prior's
// weight, the loss, schedule and patience, and with Resume the checkpoint's settings
// for those not set (MergeResume); with Init the architecture is the initial model's.
// It reads the data's provenance and, with Resume, the checkpoint; it trains nothing.
func (r TrainRequest) Plan() (TrainPlan, error) {
	changed := r.Set
	if changed == nil {
		changed = func(string) bool { return false }
	}
	var ck *Checkpoint
	if r.Resume && r.Out != "" {
		var err error
		if ck, err = ResumeCheckpoint(r.Out); err != nil {
			return TrainPlan{}, fmt.Errorf("train --resume: %w", err)
		}
		if ck != nil && r.Data == "" {
			r.Data = strings.Join(ck.DatasetPaths(r.Out), ",")
		}
		if ck != nil && r.Task == "" {
			r.Task = string(ck.Task)
		}
	}
	switch {
	case r.Task == "":
		return TrainPlan{}, fmt.Errorf("--task is required (%s)", orList(dataset.Tasks()))
	case r.Data == "":
		return TrainPlan{}, fmt.Errorf("--data is required")
	case r.Out == "":
		return TrainPlan{}, fmt.Errorf("--out is required")
	}
	task := dataset.Task(r.Task)
	if !slices.Contains(dataset.Tasks(), task) {
		return TrainPlan{}, fmt.Errorf("--task %q: want %s", r.Task, orList(dataset.Tasks()))
	}
	var loss Loss
	if r.Loss != "" {
		var err error
		if loss, err = ParseLoss(r.Loss); err != nil {
			return TrainPlan{}, fmt.Errorf("--loss %q: want one of %s", r.Loss, LossNames())
		}
	}
	// The data's feature set (another than tpucost's own for imported data), read once.
	var dataSet string
	if p, err := DataProvenance(r.Data); err == nil {
		dataSet = p.FeatureSet
	}
	cfg, err := r.model(task, dataSet, changed)
	if err != nil {
		return TrainPlan{}, err
	}
	if cfg.Prior, err = trainPrior(r.Prior, task, cfg, loss, dataSet); err != nil {
		return TrainPlan{}, err
	}
	cfg.IgnoreKernel = DefaultIgnoreKernel(task, cfg)
	patience, err := ParsePatience(r.Patience)
	if err != nil {
		return TrainPlan{}, fmt.Errorf("--patience %w", err)
	}
	sched, err := ParseSchedule(r.Schedule)
	if err != nil {
		return TrainPlan{}, fmt.Errorf("--lr-schedule: %w", err)
	}
	if r.Ensemble < 1 || r.Ensemble > MaxEnsemble {
		return TrainPlan{}, fmt.Errorf("--ensemble \"%d\": want an integer in [1, %d]", r.Ensemble, MaxEnsemble)
	}
	if r.Ensemble > 1 && r.Resume {
		return TrainPlan{}, fmt.Errorf("--ensemble %d with --resume: an ensemble is not resumed, train it again into a new directory", r.Ensemble)
	}
	if changed("epochs") && changed("steps") {
		return TrainPlan{}, fmt.Errorf("--epochs and --steps are two budgets: give one")
	}
	data := DataOptions{Dir: r.Data, Split: r.Split, TestFraction: r.TestFraction, ValFraction: r.ValFraction, SplitSeed: r.SplitSeed}
	opts := TrainOptions{
		Task: task, Loss: loss, Model: cfg, Epochs: r.Epochs, Steps: r.Steps, Schedule: sched, BatchKernels: r.Batch, MaxConfigs: r.MaxConfigs, LR: r.LR,
		Seed: r.Seed, Patience: patience, NoBucketing: r.NoBucketing, OutDir: r.Out, Resume: r.Resume, Progress: r.Progress,
		MaxSegmentNodes: r.MaxSegment,
	}
	// The flags as given, before anything is taken from a checkpoint: no quiet defaults.
	if err := errors.Join(data.Validate(), opts.Validate()); err != nil {
		return TrainPlan{}, trainFlagError(err)
	}
	if r.Init != "" {
		// Fine-tuning keeps the model's architecture: flags that would set another are
		// refused, the others are the model's.
		for _, f := range []string{"layers", "hidden", "reduce", "features", "heads", "max-segment-nodes", "prior"} {
			if changed(f) {
				return TrainPlan{}, fmt.Errorf("--%s with --init: the architecture is the initial model's", f)
			}
		}
		opts.Model, opts.Init = Config{}, r.Init
	}
	if ck != nil {
		// Resuming: flags the user did not set are the checkpoint's; the library refuses
		// set ones that differ.
		data, opts = MergeResume(ck, cfg, data, opts, func(field string) bool {
			flag, _ := trainFlag(field)
			return changed(strings.TrimPrefix(flag, "--"))
		})
	}
	return TrainPlan{Data: data, Options: opts, Ensemble: r.Ensemble}, nil
}

// model is the architecture r's flags describe (--layers, --hidden, --reduce,
// --features, --heads), without the prior's weight, for data of feature set dataSet
// ("" for tpucost's own).
func (r TrainRequest) model(task dataset.Task, dataSet string, changed func(string) bool) (Config, error) {
	cfg := DefaultConfig()
	cfg.Layers, cfg.Hidden = r.Layers, r.Hidden
	for i := range cfg.Head {
		cfg.Head[i] = r.Hidden
	}
	red, err := ParseReductions(r.Reduce)
	if err != nil {
		return cfg, fmt.Errorf("--reduce: %w", err)
	}
	cfg.Reduce = red
	set, err := features.ParseConfigSet(r.Features)
	if err != nil {
		return cfg, fmt.Errorf("--features: %w", err)
	}
	cfg = cfg.WithFeatures(set)
	if changed("features") {
		// --features chooses among tpucost's own config features; imported data (another
		// feature set) is read as it is.
		if dataSet != "" {
			return cfg, fmt.Errorf("--features %s: dataset %s has feature set %s, whose config features are read as they are (--features chooses among tpucost's own)", r.Features, r.Data, dataSet)
		}
	}
	if r.Heads != "" {
		for _, h := range strings.Split(r.Heads, ",") {
			cfg.Tasks = append(cfg.Tasks, dataset.Task(strings.TrimSpace(h)))
		}
		if len(cfg.Tasks) < 2 || cfg.Tasks[0] != task {
			return cfg, fmt.Errorf("--heads %s: want at least two tasks, the first being --task %s", r.Heads, task)
		}
		if err := cfg.Validate(); err != nil {
			return cfg, fmt.Errorf("--heads %s: %w", r.Heads, err)
		}
	}
	return cfg, nil
}

// trainPrior is the analytical prior's weight --prior sets: auto is DefaultPrior for the
// task, the architecture (the data's feature set dataSet, "" for tpucost's own) and the
// loss (its default when --loss is unset), a number is taken as it is
// (TrainOptions.Validate checks its range).
func trainPrior(flag string, task dataset.Task, cfg Config, loss Loss, dataSet string) (float64, error) {
	if flag != "auto" {
		w, err := strconv.ParseFloat(flag, 64)
		if err != nil || math.IsNaN(w) || w < 0 {
			return 0, fmt.Errorf("--prior %q: want auto or a number >= 0", flag)
		}
		return w, nil
	}
	if dataSet != "" {
		cfg.FeatureSet = dataSet
	}
	if loss == "" {
		loss = DefaultLoss(task, cfg)
	}
	return DefaultPrior(task, cfg, loss), nil
}
