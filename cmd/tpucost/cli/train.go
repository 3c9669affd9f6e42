package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/features"
	"github.com/tpucost/tpucost/gnn"
)

// TrainOptions are the options of `tpucost train`.
type TrainOptions struct {
	IO      IO
	Globals *Globals

	Task         string
	Data         string
	Out          string
	Loss         string
	Epochs       int
	Steps        int
	Schedule     string
	Batch        int
	MaxConfigs   int
	LR           float64
	Seed         int64
	Split        string
	TestFraction float64
	ValFraction  float64
	SplitSeed    int64
	Patience     string
	Layers       int
	Hidden       int
	Reduce       string
	Features     string
	Prior        string
	Resume       bool
	NoBucketing  bool
	MaxSegment   int
	Heads        string
	Init         string
	Ensemble     int

	changed func(flag string) bool // whether the user set the flag (nil: none)
}

// NewCmdTrain builds `tpucost train`.
func NewCmdTrain(ios IO, g *Globals) *cobra.Command {
	o := &TrainOptions{IO: ios, Globals: g}
	cmd := &cobra.Command{
		Use:   "train --task T --data DIR --out DIR",
		Short: "Train a GraphSAGE cost model on a dataset",
		Long: "Train fits a GraphSAGE cost model (opcode embedding and node features, GraphSAGE layers over operands and users, per-kernel " +
			"reductions, a feed-forward head over kernel and config features) to a dataset made by `tpucost gen`. Absolute tasks (fusion, layout) " +
			"default to the MSE of the log runtime, relative tasks (tile, flags) to the paper's pairwise hinge rank loss with pairs weighted by their runtime gap (rank-hinge-gap). The dataset is split " +
			"(--split, --test-fraction, --split-seed; the test part is left for `tpucost eval`), a validation part of the training rows is scored " +
			"after every epoch (tile/flags: slowdown@1, fusion/layout: MAPE), training stops early when it no longer improves, and a checkpoint " +
			"is written atomically to --out after every epoch; --resume continues it (only with the checkpoint's data and settings: " +
			"flags you set must match the checkpoint, the others are taken from it; --epochs and --patience may change). Progress goes to stderr.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.changed = cmd.Flags().Changed
			return runTrain(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Task, "task", "", "task of the dataset: tile, flags, fusion, layout")
	f.StringVar(&o.Data, "data", "", "dataset directory (from tpucost gen); several, comma-separated, of one task or all absolute (fusion,layout)")
	f.StringVar(&o.Out, "out", "", "checkpoint directory")
	f.StringVar(&o.Loss, "loss", "", "mse, rank-hinge, rank-hinge-gap, rank-logistic or listmle (default: rank-hinge-gap for tile/flags, mse for fusion/layout)")
	f.IntVar(&o.Epochs, "epochs", 0, "passes over the training rows, an explicit budget (0: from --steps and the data size)")
	f.IntVar(&o.Steps, "steps", 0, "budget in optimizer steps, turned into epochs by the data size (0: the task's default, tile/flags 4000, fusion/layout 6000)")
	f.StringVar(&o.Schedule, "lr-schedule", string(gnn.ScheduleCosine), "learning-rate schedule over the budget: cosine (warm-up, then cosine decay) or constant")
	f.IntVar(&o.Batch, "batch", 32, "kernels per batch (a kernel's configs stay in one batch)")
	f.IntVar(&o.MaxConfigs, "max-configs", 32, "configs sampled per kernel per batch")
	f.Float64Var(&o.LR, "lr", 1e-3, "Adam learning rate")
	f.Int64Var(&o.Seed, "seed", 1, "seed for initialization, shuffling and config sampling")
	f.StringVar(&o.Split, "split", dataset.SplitRandom, "train/test split: random (by kernel), program (held-out programs), family (held-out model families, e.g. train on CNNs, test on transformers) or shape:NAME=V[,V...] (held-out sizes of a gen --shapes dataset, e.g. shape:seq=384)")
	f.Float64Var(&o.TestFraction, "test-fraction", 0.2, "fraction held out for evaluation")
	f.Float64Var(&o.ValFraction, "val-fraction", 0.1, "fraction of the training part used for validation")
	f.Int64Var(&o.SplitSeed, "split-seed", 1, "seed of the split (use the same with tpucost eval)")
	f.StringVar(&o.Patience, "patience", "auto", "stop after this many epochs without a better validation metric: auto (a tenth of the budget, at least 5), N, or off (0 or negative: off too)")
	f.IntVar(&o.Layers, "layers", 3, "GraphSAGE layers")
	f.IntVar(&o.Hidden, "hidden", 64, "width of node embeddings and of the head")
	f.StringVar(&o.Reduce, "reduce", "mean,max", "per-kernel reductions, comma-separated: sum, mean, max")
	f.StringVar(&o.Features, "features", "paper", "configuration features: paper (the raw tile and flags, as the MLSys 2021 model), tiling (paper and arithmetic on the (8,128) tiling: blocks in all, one block or more, the tile against the padded dimension) or plan (adds the cost package's static plan: steps, bytes, footprint, unit work)")
	f.StringVar(&o.Prior, "prior", "auto", "weight w of the analytical prior, a residual on the compiler's estimate: a rank model's score = network + w·ln(analytical ns), an mse model's ln ns = σ·network + w·ln(analytical ns) + (1−w)·μ; auto (1 for tile models of tpucost's features, 0.5 for fusion models, else 0) or a number in [0, 100] (0: off)")
	f.BoolVar(&o.Resume, "resume", false, "continue the checkpoint in --out (same data and settings; unset flags are the checkpoint's; --epochs may be raised)")
	f.IntVar(&o.MaxSegment, "max-segment-nodes", 0, fmt.Sprintf("train kernels of more nodes by sampled segments of at most this many nodes (0: off; else %d..%d)", gnn.MinSegmentNodes, gnn.MaxSegmentNodes))
	f.StringVar(&o.Heads, "heads", "", "multi-task model: one shared graph embedding with a head per task, comma-separated, the first being --task (e.g. tile,flags); --data lists datasets of these tasks")
	f.IntVar(&o.Ensemble, "ensemble", 1, fmt.Sprintf("train this many models (seeds --seed, --seed+1, ...; 1..%d): predictions are their mean, their spread an uncertainty (eval, predict --json, tune --model)", gnn.MaxEnsemble))
	f.BoolVar(&o.NoBucketing, "no-bucketing", false, "build a graph per batch shape instead of padding to cached bucket shapes")
	f.StringVar(&o.Init, "init", "", "start from this trained model's weights (same task and features; its architecture, loss and normalization): fine-tuning, e.g. on measured rows from validate --rows")
	return cmd
}

// trainFlags maps the library's option names (gnn.FieldError.Field) to train's flags.
var trainFlags = map[string]string{
	"epochs": "--epochs", "batch_kernels": "--batch", "max_configs": "--max-configs", "lr": "--lr", "layers": "--layers",
	"hidden": "--hidden", "test_fraction": "--test-fraction", "val_fraction": "--val-fraction", "split": "--split", "seed": "--seed",
	"split_seed": "--split-seed", "features": "--features", "heads": "--heads", "patience": "--patience", "loss": "--loss", "reduce": "--reduce", "bucketing": "--no-bucketing",
	"max_segment_nodes": "--max-segment-nodes", "steps": "--steps", "schedule": "--lr-schedule", "ensemble": "--ensemble", "prior": "--prior",
}

// trainFlagError rewrites an out-of-range option as the flag that set it: "--epochs 0 is out
// of range: want an integer >= 1". Other errors pass through.
func trainFlagError(err error) error {
	var fe *gnn.FieldError
	if errors.As(err, &fe) {
		if flag, ok := trainFlags[fe.Field]; ok {
			return fmt.Errorf("%s %s is out of range: want %s", flag, fe.Value, fe.Range)
		}
	}
	return err
}

func runTrain(ctx context.Context, o *TrainOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	changed := o.changed
	if changed == nil {
		changed = func(string) bool { return false }
	}
	var ck *gnn.Checkpoint
	if o.Resume && o.Out != "" {
		var err error
		if ck, err = gnn.ResumeCheckpoint(o.Out); err != nil {
			return fmt.Errorf("train --resume: %w", err)
		}
		if ck != nil && o.Data == "" {
			o.Data = strings.Join(ck.DatasetPaths(o.Out), ",")
		}
		if ck != nil && o.Task == "" {
			o.Task = string(ck.Task)
		}
	}
	switch {
	case o.Task == "":
		return fmt.Errorf("--task is required (tile, flags, fusion or layout)")
	case o.Data == "":
		return fmt.Errorf("--data is required")
	case o.Out == "":
		return fmt.Errorf("--out is required")
	}
	task := dataset.Task(o.Task)
	var loss gnn.Loss
	if o.Loss != "" {
		var err error
		if loss, err = gnn.ParseLoss(o.Loss); err != nil {
			return err
		}
	}
	cfg := gnn.DefaultConfig()
	cfg.Layers, cfg.Hidden = o.Layers, o.Hidden
	for i := range cfg.Head {
		cfg.Head[i] = o.Hidden
	}
	red, err := gnn.ParseReductions(o.Reduce)
	if err != nil {
		return fmt.Errorf("--reduce: %w", err)
	}
	cfg.Reduce = red
	set, err := features.ParseConfigSet(o.Features)
	if err != nil {
		return fmt.Errorf("--features: %w", err)
	}
	cfg = cfg.WithFeatures(set)
	if changed("features") {
		// --features chooses among tpucost's own config features; imported data (another
		// feature set) is read as it is.
		if p, err := gnn.DataProvenance(o.Data); err == nil && p.FeatureSet != "" {
			return fmt.Errorf("--features %s: dataset %s has feature set %s, whose config features are read as they are (--features chooses among tpucost's own)", o.Features, o.Data, p.FeatureSet)
		}
	}
	if o.Heads != "" {
		for _, h := range strings.Split(o.Heads, ",") {
			cfg.Tasks = append(cfg.Tasks, dataset.Task(strings.TrimSpace(h)))
		}
		if len(cfg.Tasks) < 2 || cfg.Tasks[0] != task {
			return fmt.Errorf("--heads %s: want at least two tasks, the first being --task %s", o.Heads, task)
		}
		if err := cfg.Validate(); err != nil {
			return fmt.Errorf("--heads %s: %w", o.Heads, err)
		}
	}
	if cfg.Prior, err = trainPrior(o.Prior, task, cfg, loss, o.Data); err != nil {
		return err
	}
	cfg.IgnoreKernel = gnn.DefaultIgnoreKernel(task, cfg)
	patience, err := gnn.ParsePatience(o.Patience)
	if err != nil {
		return fmt.Errorf("--patience %w", err)
	}
	sched, err := gnn.ParseSchedule(o.Schedule)
	if err != nil {
		return fmt.Errorf("--lr-schedule: %w", err)
	}
	if o.Ensemble < 1 || o.Ensemble > gnn.MaxEnsemble {
		return fmt.Errorf("--ensemble %d is out of range: want an integer in [1, %d]", o.Ensemble, gnn.MaxEnsemble)
	}
	if o.Ensemble > 1 && o.Resume {
		return fmt.Errorf("--ensemble %d with --resume: an ensemble is not resumed, train it again into a new directory", o.Ensemble)
	}
	if changed("epochs") && changed("steps") {
		return fmt.Errorf("--epochs and --steps are two budgets: give one")
	}
	data := gnn.DataOptions{Dir: o.Data, Split: o.Split, TestFraction: o.TestFraction, ValFraction: o.ValFraction, SplitSeed: o.SplitSeed}
	opts := gnn.TrainOptions{
		Task: task, Loss: loss, Model: cfg, Epochs: o.Epochs, Steps: o.Steps, Schedule: sched, BatchKernels: o.Batch, MaxConfigs: o.MaxConfigs, LR: o.LR,
		Seed: o.Seed, Patience: patience, NoBucketing: o.NoBucketing, OutDir: o.Out, Resume: o.Resume, Progress: o.IO.Err,
		MaxSegmentNodes: o.MaxSegment,
	}
	// The flags as given, before anything is taken from a checkpoint: no quiet defaults.
	if err := errors.Join(data.Validate(), opts.Validate()); err != nil {
		return trainFlagError(err)
	}
	if o.Init != "" {
		// Fine-tuning keeps the model's architecture: flags that would set another are
		// refused, the others are the model's.
		for _, f := range []string{"layers", "hidden", "reduce", "features", "heads", "max-segment-nodes", "prior"} {
			if changed(f) {
				return fmt.Errorf("--%s with --init: the architecture is the initial model's", f)
			}
		}
		opts.Model, opts.Init = gnn.Config{}, o.Init
	}
	if ck != nil {
		// Resuming: flags the user did not set are the checkpoint's; the library refuses
		// set ones that differ.
		data, opts = gnn.MergeResume(ck, cfg, data, opts, func(field string) bool { return changed(strings.TrimPrefix(trainFlags[field], "--")) })
	}
	res, err := gnn.TrainEnsemble(ctx, data, opts, o.Ensemble)
	if err != nil {
		return trainFlagError(err)
	}
	s := res.Summary(o.Out)
	if o.Globals.JSON {
		return writeJSON(o.IO.Out, s)
	}
	return s.WriteText(o.IO.Out)
}

// trainPrior is the analytical prior's weight --prior sets: auto is gnn.DefaultPrior for
// the task, the architecture (the data's feature set) and the loss (its default when
// --loss is unset), a number is taken as it is (the library checks its range).
func trainPrior(flag string, task dataset.Task, cfg gnn.Config, loss gnn.Loss, data string) (float64, error) {
	if flag != "auto" {
		w, err := strconv.ParseFloat(flag, 64)
		if err != nil || math.IsNaN(w) || w < 0 {
			return 0, fmt.Errorf("--prior %s: want auto or a number >= 0", flag)
		}
		return w, nil
	}
	if p, err := gnn.DataProvenance(data); err == nil && p.FeatureSet != "" {
		cfg.FeatureSet = p.FeatureSet
	}
	if loss == "" {
		loss = gnn.DefaultLoss(task, cfg)
	}
	return gnn.DefaultPrior(task, cfg, loss), nil
}
