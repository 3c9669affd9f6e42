package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/bitserial/lutcpu"
	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/gnn"
)

// TrainOptions are the options of `tpucost train`: the flags of a gnn.TrainRequest.
type TrainOptions struct {
	cmdIO
	gnn.TrainRequest
}

// NewCmdTrain builds `tpucost train`.
func NewCmdTrain(ios IO, g *Globals) *cobra.Command {
	o := &TrainOptions{cmdIO: cmdIO{IO: ios, Globals: g}}
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
			o.Set = cmd.Flags().Changed
			if o.Task == lutcpu.TaskName {
				return runTrainBitserial(cmd, o)
			}
			return runTrain(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Task, "task", "", "task of the dataset: "+taskNames()+", or bitserial (a gen --task bitserial --backend cpu dataset: a ridge model of log time; takes only --data, --out, --seed, --test-fraction and --split random|problem)")
	f.StringVar(&o.Data, "data", "", "dataset directory (from tpucost gen); several, comma-separated, of one task or all absolute (fusion,layout)")
	f.StringVar(&o.Out, "out", "", "checkpoint directory")
	f.StringVar(&o.Loss, "loss", "", gnn.LossNames()+" (default: "+gnn.DefaultLosses()+")")
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

func runTrain(ctx context.Context, o *TrainOptions) error {
	o.Progress = o.IO.Err
	return o.printResult(o.Train(ctx))
}
