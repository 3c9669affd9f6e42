package gnn

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/features"
	"github.com/tpucost/tpucost/internal/dirlock"
	"github.com/tpucost/tpucost/nn"
)

// TrainOptions configure TrainDataset. Zero values take the defaults named on each field.
type TrainOptions struct {
	Task dataset.Task // required
	// Loss defaults to rank-hinge-gap for relative tasks (tile, flags), listmle for
	// per-node configuration models and mse otherwise.
	Loss Loss
	// Model is the architecture (zero: DefaultConfig()).
	Model Config
	// Epochs is the number of passes over the training rows, an explicit budget (default:
	// from Steps and the size of the training split, see schedule.go).
	Epochs int
	// Steps is the budget in optimizer steps when Epochs is not given (default
	// DefaultSteps of the task); it must not be set with Epochs.
	Steps int
	// Schedule is the learning-rate schedule over the budget (default ScheduleCosine:
	// warm-up, then cosine decay; see schedule.go).
	Schedule Schedule
	// BatchKernels is the number of kernels per batch (default 32). A kernel's sampled
	// configurations always stay in one batch (the rank loss compares them).
	BatchKernels int
	// MaxConfigs caps the configurations of one kernel per training batch, drawn anew
	// every epoch (default 32).
	MaxConfigs int
	// LR is Adam's learning rate (default 1e-3).
	LR float64
	// Seed seeds initialization, shuffling and config sampling: the same seed and rows
	// give the same weights.
	Seed int64
	// Patience stops training after this many epochs without a better validation
	// metric (default autoPatience of the budget; negative: never stop early).
	Patience int
	// ShuffleBuffer is the number of kernels held for shuffling a streamed epoch
	// (default 2048): memory stays bounded however large the dataset.
	ShuffleBuffer int
	// MaxSegmentNodes, when not 0, sets Model.MaxSegmentNodes: kernels of more nodes are
	// trained by segments of at most this many nodes (see segment.go); it is recorded in
	// the checkpoint's config, and a resume with another value is refused.
	MaxSegmentNodes int
	// NoBucketing builds a graph of every batch's exact shape instead of padding batches
	// to a few cached bucket shapes.
	NoBucketing bool
	// OutDir, if set, receives a checkpoint after every epoch.
	OutDir string
	// Resume continues the checkpoint in OutDir. Zero fields (Loss, Model, BatchKernels,
	// MaxConfigs, LR, Seed, ShuffleBuffer, Patience, Epochs, Datasets) are taken from the
	// checkpoint; a non-zero one that differs from the checkpoint's (NoBucketing: true
	// when the checkpoint buckets), another Task, or Datasets with other fingerprints, is
	// an error naming the field and both values. Epochs and Patience may differ: Epochs
	// may be raised to train longer, or lowered to stop sooner, but never below the
	// epochs the checkpoint has trained (a *FieldError saying both numbers and what to
	// do: a budget is never silently shortened).
	Resume bool
	// Progress receives progress lines (nil: none).
	Progress io.Writer
	// ProgressEvery is the interval between progress lines within an epoch (default 10s).
	ProgressEvery time.Duration
	// Meta is recorded in the checkpoint.
	Meta Meta
	// Datasets are the dataset directories the rows come from (paths as the caller gives
	// them, with dataset.Fingerprint), recorded in the checkpoint's TrainedOn relative to
	// OutDir. TrainDataset fills them.
	Datasets []DatasetRef

	locked bool // TrainDataset holds OutDir's lock already
	// Schema is the feature schema of the rows when Model.FeatureSet names another set
	// than tpucost's (TrainDataset fills it from the data's provenance); it is recorded
	// in the checkpoint and gives the normalization statistics their version. Ignored for
	// tpucost's own features (features.CurrentSchema).
	Schema features.Schema
	// Init, if set, is a checkpoint directory whose weights training starts from (see
	// initFrom): fine-tuning a model on other data of its features, such as real TPU
	// measurements. Not with Resume.
	Init string

	// stepsPerEpoch is the number of batches of an epoch, estimated from the training
	// split's size before training (the schedule's unit; recorded for a resume).
	stepsPerEpoch int
}

// schema is the feature schema the trained model reads.
func (o *TrainOptions) schema() features.Schema {
	if o.Model.FeatureSet == "" {
		return features.CurrentSchema()
	}
	return o.Schema
}

// DefaultLoss is the loss training uses for task and model architecture m when none is
// given.
func DefaultLoss(task dataset.Task, m Config) Loss {
	switch {
	case m.PerNode():
		return LossListMLE // the TpuGraphs layout baseline's
	case task.Relative():
		return LossRankHingeGap // the paper's hinge, pairs weighted by their runtime gap (docs/training.md, Results)
	}
	return LossMSE
}

// DefaultPrior is the analytical prior's weight (Config.Prior) training uses for task,
// architecture m (its feature set read from the data) and loss when the architecture is
// not given, for single-task models of tpucost's own features (0 for others):
//
//   - 1 for a tile model with a rank loss (a residual on the analytical model: the tile
//     APE on four held-out families, ensembles of 3, went from 5.29 to 3.14 against the
//     analytical model's 3.41; docs/training.md, Results, "The analytical prior");
//   - AbsolutePrior for a fusion model with the mse loss (it predicts the analytical
//     estimate to the power AbsolutePrior times the network's correction;
//     docs/training.md, Results, "The analytical prior for absolute models"); layout
//     models get none: on held-out programs it halved the worst program's error but
//     raised the mean error of kernels ≥ 5 µs (27.2% → 31.1%, the same page);
//   - 0 for flags models: the analytical estimate does not depend on flags, so the prior
//     would be one constant per kernel.
func DefaultPrior(task dataset.Task, m Config, loss Loss) float64 {
	if m.MultiTask() || m.FeatureSet != "" || m.PerNode() {
		return 0
	}
	switch {
	case task == dataset.TaskTile && loss.Rank():
		return 1
	case task == dataset.TaskFusion && loss == LossMSE:
		return AbsolutePrior
	}
	return 0
}

// AbsolutePrior is the default prior weight of fusion models: ln t = σ·net +
// ½·ln(analytical) + ½·μ. Chosen on held-out programs (fusion MAPE of kernels ≥ 5 µs,
// two datasets, five splits; docs/training.md, "The analytical prior for absolute
// models") and the random split: weight 1 carries over the analytical model's errors
// where the training programs do not show how to correct them (small kernels whose
// per-step overhead it counts twice; lstm_cls_h300_t32_b8 held out: 0.40–0.57× the
// analytical model's MAPE), ½ keeps most of the prior's gain on programs unlike the
// training ones (mean 0.27× over the five splits, no prior 0.38×) and is the best of
// 0, ½, ¾ and 1 on the random split (0.09×, no prior 0.13×).
const AbsolutePrior = 0.5

// DefaultIgnoreKernel is the kernel features (Config.IgnoreKernel) training leaves out
// for task and architecture m when the architecture is not given: mxu_pad_log for tile
// and flags models of tpucost's own features, none otherwise. The MXU's padding is what
// the fusion model on held-out programs needed (docs/training.md, Results, "The
// analytical prior for absolute models"); a tile model ranks one kernel's tiles, which
// all pad the same way, and on held-out families (ensembles of 3) reading it took
// resnet_v1's tile APE from 3.34 to 4.59 (seed 2: 2.54 to 4.74) and the mean over four
// families from 3.14 to 3.48, above the analytical model's 3.41; ignoring it, 4.06
// (seed 2: 3.14) and 3.29.
func DefaultIgnoreKernel(task dataset.Task, m Config) []string {
	if !task.Relative() || m.FeatureSet != "" {
		return nil
	}
	return []string{"mxu_pad_log"}
}

func (o *TrainOptions) defaults() error {
	if !slices.Contains(dataset.Tasks(), o.Task) {
		return fmt.Errorf("unknown task %q", o.Task)
	}
	defaultModel := reflect.DeepEqual(o.Model, Config{})
	if defaultModel {
		o.Model = DefaultConfig()
	}
	if o.Loss == "" {
		o.Loss = DefaultLoss(o.Task, o.Model)
	}
	if defaultModel {
		o.Model.Prior = DefaultPrior(o.Task, o.Model, o.Loss)
		o.Model.IgnoreKernel = DefaultIgnoreKernel(o.Task, o.Model)
	}
	if o.Schedule == "" {
		o.Schedule = ScheduleCosine
	}
	if o.BatchKernels == 0 {
		o.BatchKernels = 32
	}
	if o.MaxConfigs == 0 {
		o.MaxConfigs = 32
	}
	if o.LR == 0 {
		o.LR = 1e-3
	}
	if o.ShuffleBuffer == 0 {
		o.ShuffleBuffer = 2048
	}
	if o.ProgressEvery == 0 {
		o.ProgressEvery = 10 * time.Second
	}
	if o.MaxSegmentNodes != 0 && !o.Resume {
		if m := o.Model.MaxSegmentNodes; m != 0 && m != o.MaxSegmentNodes {
			return fmt.Errorf("max_segment_nodes is %d, the model config's is %d", o.MaxSegmentNodes, m)
		}
		o.Model.MaxSegmentNodes = o.MaxSegmentNodes
	}
	return nil
}

func (o *TrainOptions) settings() Settings {
	return Settings{Epochs: o.Epochs, BatchKernels: o.BatchKernels, MaxConfigs: o.MaxConfigs, LR: o.LR, Seed: o.Seed,
		Patience: o.Patience, ShuffleBuffer: o.ShuffleBuffer, Bucketing: !o.NoBucketing,
		Steps: o.Steps, StepsPerEpoch: o.stepsPerEpoch, Schedule: o.Schedule}
}

// TrainResult is the outcome of TrainDataset.
type TrainResult struct {
	Model     *Model // the best epoch's model: lowest validation metric, ties by validation loss (without validation rows: training loss)
	History   []Epoch
	BestEpoch int    // 1-based
	Stopped   string // "epochs" (the budget ran out) or "early-stopping"
	// StopReason says why training stopped, in a sentence.
	StopReason string
	Checkpoint *Checkpoint
	// Backend is the BLAS backend the matrix products ran on (nn.BLASBackend: "openblas"
	// or "go"). It is not recorded in the checkpoint: both give the same model up to
	// float32 summation order.
	Backend string
}

// trainSources trains a model on train, validating on val after every epoch, and returns the
// best epoch's model. Rows are streamed: each epoch is one pass of train.Rows through a
// shuffle buffer, so memory is bounded by the buffer, not the dataset. Normalization
// statistics are fitted on train first (one extra pass). With OutDir set, a checkpoint
// is saved atomically after every epoch, and Resume continues one: the resumed run gives
// the same weights as an uninterrupted one. Cancelling ctx stops at the next batch
// (the last checkpoint stays).
func trainSources(ctx context.Context, train, val RowSource, opts TrainOptions) (*TrainResult, error) {
	given := opts
	lossGiven := opts.Loss != ""
	if err := opts.defaults(); err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	t := &trainer{opts: opts, start: time.Now(), lastEpochLine: time.Now(), lossGiven: lossGiven, seen: map[uint64]bool{}, programs: map[string]bool{}}
	if opts.OutDir != "" && !opts.locked {
		lock, err := lockModelDir(opts.OutDir)
		if err != nil {
			return nil, err
		}
		defer lock.Release()
	}
	if !opts.Resume && opts.OutDir != "" {
		if _, err := os.Stat(filepath.Join(opts.OutDir, ModelFile)); err == nil {
			return nil, fmt.Errorf("train: %s already holds a checkpoint: resume it or choose another output directory", opts.OutDir)
		}
	}
	if opts.OutDir != "" {
		if err := checkWritable(opts.OutDir); err != nil {
			return nil, fmt.Errorf("train: %w", err)
		}
	}
	if opts.Resume && opts.Init != "" {
		return nil, fmt.Errorf("train: --init starts a new model; resume continues one: give one")
	}
	if opts.Resume {
		if err := t.resume(given); err != nil {
			return nil, err
		}
	} else if opts.Init != "" {
		if err := t.initFrom(opts.Init, given); err != nil {
			return nil, err
		}
		// The initial model's statistics stay; the pass only sizes the budget.
		_, _, rows, err := fitStatsCount(train, t.opts.schema().Version, t.opts.Model.dataWidths())
		if err != nil {
			return nil, fmt.Errorf("train: %w", err)
		}
		t.budget(rows)
	} else {
		t.progressf("fitting normalization on the training rows")
		if opts.Model.FeatureSet != "" && opts.Schema.Version == 0 {
			return nil, fmt.Errorf("train: a model of feature set %s needs its data's feature schema (TrainOptions.Schema)", opts.Model.FeatureSet)
		}
		norm, target, rows, err := fitStatsCount(train, opts.schema().Version, opts.Model.dataWidths())
		if err != nil {
			return nil, fmt.Errorf("train: %w", err)
		}
		t.budget(rows)
		if t.m, err = NewModel(opts.Model, opts.Task, opts.Loss, norm, target, opts.Seed); err != nil {
			return nil, fmt.Errorf("train: %w", err)
		}
		t.best = t.m.Params.Clone()
		t.adam = nn.NewAdam(t.m.Params, opts.LR)
	}
	t.progressf("matrix products on the %s backend", nn.BLASBackend)
	t.eng = newEngine(t.m, true, !t.opts.NoBucketing, defaultNetCache)
	t.val = newEngine(t.m, false, !t.opts.NoBucketing, defaultNetCache)
	defer t.eng.close()
	defer t.val.close()
	stopped := "epochs"
	patient := func() bool {
		return t.opts.Patience >= 0 && t.bestEpoch > 0 && len(t.history)-t.bestEpoch >= t.opts.Patience
	}
	for e := len(t.history) + 1; e <= t.opts.Epochs && !patient(); e++ {
		if err := t.epoch(ctx, e, train, val); err != nil {
			return nil, err
		}
	}
	if patient() {
		stopped = "early-stopping"
	}
	t.stopped, t.stopReason = stopped, t.reason(stopped)
	t.progressf("stopped: %s", t.stopReason)
	best := &Model{Config: t.m.Config, Task: t.m.Task, Loss: t.m.Loss, Norm: t.m.Norm, Target: t.m.Target, Params: t.best.Clone()}
	c := t.checkpoint()
	if t.opts.OutDir != "" {
		if err := saveCheckpoint(t.opts.OutDir, c, t.best, t.bestEpoch, t.state(), t.adam.Step(), newKeySet(t.seen)); err != nil {
			return nil, err
		}
		if err := writeTrainLog(t.opts.OutDir, t.history); err != nil {
			return nil, err
		}
	}
	return &TrainResult{Model: best, History: slices.Clone(t.history), BestEpoch: t.bestEpoch, Stopped: stopped, StopReason: t.stopReason, Checkpoint: c, Backend: nn.BLASBackend}, nil
}

// lockModelDir takes the lock of a model directory: one writer per directory, so a
// second run into it is refused while the first holds it (internal/dirlock), never left
// to overwrite its checkpoint.
func lockModelDir(dir string) (*dirlock.Lock, error) {
	lock, err := dirlock.AcquireDir(dir, dirlock.Model)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	return lock, nil
}

// trainer is the state of one trainSources call.
type trainer struct {
	opts  TrainOptions
	m     *Model    // current parameters
	best  nn.Params // best epoch's parameters
	adam  *nn.Adam
	eng   *engine // training nets
	val   *engine // inference nets (validation), sharing m's parameters
	start time.Time

	history    []Epoch
	bestEpoch  int
	stopped    string
	stopReason string
	lossGiven  bool // the caller chose the loss (else a resumed run takes the checkpoint's)

	lastEpochLine time.Time // when the last epoch's progress line was written

	seen     map[uint64]bool // KernelIDs of the training and validation rows
	programs map[string]bool // their programs
}

func (t *trainer) progressf(format string, args ...any) {
	if t.opts.Progress != nil {
		fmt.Fprintf(t.opts.Progress, format+"\n", args...)
	}
}

// epochRNG is the generator of epoch e (1-based): a function of the seed and the epoch
// only, so a resumed run draws what an uninterrupted one would.
func (t *trainer) epochRNG(e int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(t.opts.Seed), 0x6570_6f63_6800_0000|uint64(e))) // "epoch"
}

func (t *trainer) epoch(ctx context.Context, e int, train, val RowSource) error {
	start := time.Now()
	builds := t.eng.builds
	rng := t.epochRNG(e)
	var (
		buf     []*kernel
		pending []item
		heads   = map[string][]item{} // a multi-task model's pending items per head
	)
	// Batches are laid out here, while a worker goroutine runs the previous one (the
	// pipeline: see stepper); the worker keeps the epoch's step statistics.
	sp := t.newStepper(ctx, e, start)
	defer sp.stop()
	step := func() error {
		if len(pending) == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		items := pending
		pending = nil // the worker owns items now
		return sp.send(items)
	}
	emit := func(k *kernel) error {
		it, ok := t.sample(k, rng)
		if !ok {
			return nil
		}
		if t.m.Config.MultiTask() {
			// A batch is scored by one head: kernels wait with those of their task.
			heads[k.head] = append(heads[k.head], it)
			if len(heads[k.head]) < t.opts.BatchKernels {
				return nil
			}
			pending, heads[k.head] = heads[k.head], nil
			return step()
		}
		pending = append(pending, it)
		if len(pending) == t.opts.BatchKernels {
			return step()
		}
		return nil
	}
	err := train.Rows(func(r *dataset.Row) error {
		k, err := t.prepareRow(r)
		if err != nil || k == nil {
			return err
		}
		if len(buf) < t.opts.ShuffleBuffer {
			buf = append(buf, k)
			return nil
		}
		j := rng.IntN(len(buf))
		out := buf[j]
		buf[j] = k
		return emit(out)
	})
	if err == nil {
		rng.Shuffle(len(buf), func(i, j int) { buf[i], buf[j] = buf[j], buf[i] })
		for _, k := range buf {
			if err = emit(k); err != nil {
				break
			}
		}
	}
	if err == nil {
		err = step()
	}
	for _, h := range t.m.Config.Tasks {
		if err != nil {
			break
		}
		pending = heads[string(h)]
		err = step()
	}
	if werr := sp.stop(); err == nil {
		err = werr
	}
	batches, lossSum, kernels, samples := sp.batches, sp.lossSum, sp.kernels, sp.samples
	if err != nil {
		if ctx.Err() != nil {
			if t.opts.OutDir != "" && len(t.history) > 0 {
				return fmt.Errorf("train: interrupted in epoch %d (%w): %s holds the checkpoint of epoch %d; run the same command with --resume to continue",
					e, ctx.Err(), t.opts.OutDir, len(t.history))
			}
			return fmt.Errorf("train: interrupted in epoch %d: %w", e, ctx.Err())
		}
		return fmt.Errorf("train: epoch %d: %w", e, err)
	}
	if batches == 0 {
		return fmt.Errorf("train: epoch %d: no training batch (rank losses need kernels with at least 2 configurations): %w", e, errNoRows)
	}
	trainLoss := lossSum / float64(batches)
	ep := Epoch{Epoch: e, TrainLoss: trainLoss, Kernels: kernels, Samples: samples, GraphBuilds: t.eng.builds - builds}
	trainSecs := time.Since(start).Seconds()
	if val != nil {
		v, err := t.validate(val)
		if err != nil {
			return fmt.Errorf("train: validating epoch %d: %w", e, err)
		}
		ep.Val = v
	}
	ep.WallS = time.Since(start).Seconds()
	ep.KernelsPerS = float64(kernels) / trainSecs
	note := ""
	if t.bestEpoch == 0 || better(ep, t.history[t.bestEpoch-1]) {
		t.bestEpoch = e
		if err := t.best.CopyFrom(t.m.Params); err != nil {
			return err
		}
		note = " (best)"
	}
	t.history = append(t.history, ep)
	// A line per summaryEvery epochs (and the first and last of the budget), or after a
	// quiet ProgressEvery; every epoch is in the log (TrainLogFile).
	if now := time.Now(); showEpoch(e, t.opts.Epochs) || now.Sub(t.lastEpochLine) >= t.opts.ProgressEvery {
		t.lastEpochLine = now
		if ep.Val != nil {
			t.progressf("epoch %d/%d: train loss %.4g, val loss %.4g, val %s %.3g%s; %d kernels, %.0f kernels/s, %.1fs",
				e, t.opts.Epochs, trainLoss, ep.Val.Loss, t.m.Metric(), ep.Val.Metric, note, kernels, ep.KernelsPerS, ep.WallS)
		} else {
			t.progressf("epoch %d/%d: train loss %.4g%s (no validation rows); %d kernels, %.0f kernels/s, %.1fs",
				e, t.opts.Epochs, trainLoss, note, kernels, ep.KernelsPerS, ep.WallS)
		}
	}
	if t.opts.OutDir != "" {
		if err := saveCheckpoint(t.opts.OutDir, t.checkpoint(), t.best, t.bestEpoch, t.state(), t.adam.Step(), newKeySet(t.seen)); err != nil {
			return err
		}
		if err := writeTrainLog(t.opts.OutDir, t.history); err != nil {
			return err
		}
	}
	return nil
}

// better reports whether epoch a beats epoch b: a lower validation metric, ties broken
// by the lower validation loss (without validation rows: the lower training loss).
func better(a, b Epoch) bool {
	if a.Val == nil || b.Val == nil {
		return a.TrainLoss < b.TrainLoss
	}
	if a.Val.Metric != b.Val.Metric {
		return a.Val.Metric < b.Val.Metric
	}
	return a.Val.Loss < b.Val.Loss
}

// sample picks the configurations of k for one training batch: all of them, or
// MaxConfigs drawn without replacement. For a rank loss, kernels with fewer than two
// configurations carry no pair and are skipped.
func (t *trainer) sample(k *kernel, rng *rand.Rand) (item, bool) {
	n := k.configs()
	if t.m.Loss.Rank() && n < 2 {
		return item{}, false
	}
	var cfgs []int
	if n <= t.opts.MaxConfigs {
		cfgs = make([]int, n)
		for i := range cfgs {
			cfgs[i] = i
		}
	} else {
		cfgs = rng.Perm(n)[:t.opts.MaxConfigs]
	}
	it := item{k: k, cfgs: cfgs}
	if segs := segments(k.nodes(), t.m.Config.MaxSegmentNodes); len(segs) > 2 {
		// Segment training: backpropagate through one segment (step adds the others'
		// detached statistics).
		j := rng.IntN(len(segs) - 1)
		it.lo, it.hi = segs[j], segs[j+1]
	}
	return it, true
}

// detach computes, for every item that holds one segment of its kernel, the other
// segments' statistics with the current parameters (no gradients).
func (t *trainer) detach(items []item) error {
	for i := range items {
		it := &items[i]
		if it.hi == 0 {
			continue
		}
		if t.val == nil {
			t.val = newEngine(t.m, false, t.eng.bucket, defaultNetCache)
		}
		segs := segments(it.k.nodes(), t.m.Config.MaxSegmentNodes)
		skip := -1
		for j := 0; j+1 < len(segs); j++ {
			if segs[j] == it.lo && segs[j+1] == it.hi {
				skip = j
			}
		}
		if skip < 0 {
			return fmt.Errorf("kernel %s: nodes %d..%d are not one of its segments", it.k.key, it.lo, it.hi-1)
		}
		other, err := t.val.otherStats(it.k, it.cfgs, segs, skip)
		if err != nil {
			return fmt.Errorf("kernel %s: other segments: %w", it.k.key, err)
		}
		it.other = other
	}
	return nil
}

// stepper runs an epoch's training steps on a worker goroutine while the epoch's
// goroutine reads rows and lays out the next batch: batch preparation overlaps the step.
// Batches are stepped in the order they are sent, so the weights are those of stepping
// them one after the other. The worker alone touches the parameters, the optimizer and
// the engines; the sender touches none of them. A segmented model's batch needs the
// current parameters to be laid out (detach), so for one the worker lays it out too.
type stepper struct {
	t       *trainer
	ctx     context.Context
	epoch   int
	work    chan stepWork
	failed  chan struct{} // closed when the worker stops on an error (err)
	done    chan struct{} // closed when the worker has returned
	stopped bool
	err     error

	// The epoch's step statistics, written by the worker; read them after stop.
	batches, kernels, samples int
	lossSum                   float64
	lastProgress              time.Time
	kernelsAtReport           int
}

// stepWork is one batch for the worker: its items, laid out (b) unless the worker must.
type stepWork struct {
	items []item
	b     *batch
}

func (t *trainer) newStepper(ctx context.Context, epoch int, start time.Time) *stepper {
	sp := &stepper{t: t, ctx: ctx, epoch: epoch, work: make(chan stepWork, 1), failed: make(chan struct{}), done: make(chan struct{}), lastProgress: start}
	go sp.run()
	return sp
}

// send lays out items as a batch and hands it to the worker; it returns the worker's
// error once the worker has failed.
func (sp *stepper) send(items []item) error {
	w := stepWork{items: items}
	if sp.t.m.Config.MaxSegmentNodes == 0 {
		b, err := newBatch(sp.t.m.Config, items, sp.t.eng.bucket, sp.t.opts.BatchKernels, sp.t.m.Loss, sp.t.m.Target, true)
		if err != nil {
			return fmt.Errorf("train: epoch %d: laying out a batch: %w", sp.epoch, err)
		}
		w.b = b
	}
	select {
	case sp.work <- w:
		return nil
	case <-sp.failed:
		return sp.err
	}
}

func (sp *stepper) run() {
	defer close(sp.done)
	for w := range sp.work {
		if sp.err != nil {
			continue // drain: the sender sees failed
		}
		if err := sp.step(w); err != nil {
			sp.err = fmt.Errorf("train: epoch %d, batch %d: %w", sp.epoch, sp.batches+1, err)
			close(sp.failed)
		}
	}
}

func (sp *stepper) step(w stepWork) error {
	if err := sp.ctx.Err(); err != nil {
		return err
	}
	var l float64
	var err error
	if w.b == nil {
		l, err = sp.t.step(w.items)
	} else {
		l, err = sp.t.apply(w.b)
	}
	if err != nil {
		return err
	}
	t := sp.t
	sp.batches++
	sp.lossSum += l
	for _, it := range w.items {
		sp.kernels++
		sp.samples += len(it.cfgs)
	}
	if now := time.Now(); now.Sub(sp.lastProgress) >= t.opts.ProgressEvery {
		t.progressf("epoch %d/%d: %d batches, %d kernels, loss %.4g, %.0f kernels/s",
			sp.epoch, t.opts.Epochs, sp.batches, sp.kernels, sp.lossSum/float64(sp.batches), float64(sp.kernels-sp.kernelsAtReport)/now.Sub(sp.lastProgress).Seconds())
		sp.lastProgress, sp.kernelsAtReport = now, sp.kernels
	}
	return nil
}

// stop waits for the worker to finish the batches sent and returns its error. It may be
// called more than once.
func (sp *stepper) stop() error {
	if !sp.stopped {
		sp.stopped = true
		close(sp.work)
		<-sp.done
	}
	return sp.err
}

// step runs one training batch and applies Adam.
func (t *trainer) step(items []item) (float64, error) {
	if t.m.Config.MaxSegmentNodes > 0 {
		if err := t.detach(items); err != nil {
			return 0, err
		}
	}
	b, err := newBatch(t.m.Config, items, t.eng.bucket, t.opts.BatchKernels, t.m.Loss, t.m.Target, true)
	if err != nil {
		return 0, err
	}
	return t.apply(b)
}

// apply runs a laid-out training batch and applies Adam.
func (t *trainer) apply(b *batch) (float64, error) {
	n, _, loss, err := t.eng.run(b)
	if err != nil {
		return 0, err
	}
	defer n.zeroGrads()
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return 0, fmt.Errorf("the loss is %g: training diverged (try a lower learning rate)", loss)
	}
	grads := make([][]float32, len(t.m.Params))
	for i, pi := range n.paramIdx {
		if grads[pi], err = n.grad32(i); err != nil {
			return 0, err
		}
	}
	if t.opts.stepsPerEpoch > 0 { // else a trainer driven step by step: the optimizer's rate
		t.adam.LR = lrAt(t.opts.Schedule, t.opts.LR, t.adam.Step(), int64(t.opts.Epochs)*int64(t.opts.stepsPerEpoch))
	}
	t.adam.Update(t.m.Params, grads)
	return loss, nil
}

// validate predicts every validation row with the current parameters.
func (t *trainer) validate(val RowSource) (*ValResult, error) {
	acc := &valAccum{m: t.m}
	var chunk []*kernel
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		outs, err := t.val.predict(chunk, t.opts.BatchKernels)
		if err != nil {
			return err
		}
		for i, k := range chunk {
			acc.add(k, outs[i])
		}
		chunk = chunk[:0]
		return nil
	}
	err := val.Rows(func(r *dataset.Row) error {
		k, err := t.prepareRow(r)
		if err != nil || k == nil {
			return err
		}
		chunk = append(chunk, k)
		if len(chunk) == 4*t.opts.BatchKernels {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return nil, err
	}
	if acc.kernels == 0 {
		return nil, nil
	}
	r, err := acc.result()
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// state is the training state saved for resuming: current parameters and Adam moments.
func (t *trainer) state() nn.Params {
	var s nn.Params
	for _, p := range t.m.Params {
		s = append(s, &nn.Param{Name: "param/" + p.Name, Shape: p.Shape, Data: p.Data})
	}
	return append(s, t.adam.State()...)
}

func (t *trainer) checkpoint() *Checkpoint {
	on := &TrainedOn{TrainPrograms: []string{}, SeenKernels: len(t.seen)}
	for p := range t.programs {
		on.TrainPrograms = append(on.TrainPrograms, p)
	}
	slices.Sort(on.TrainPrograms)
	for _, d := range t.opts.Datasets {
		if t.opts.OutDir != "" {
			d.Path = relPath(t.opts.OutDir, d.Path)
		}
		on.Datasets = append(on.Datasets, d)
	}
	return &Checkpoint{
		TrainedOn: on,
		Task:      t.m.Task, Loss: t.m.Loss, Config: t.m.Config,
		FeatureSchemaVersion: t.opts.schema().Version, FeatureSchema: t.opts.schema(),
		Normalization: t.m.Norm, Target: t.m.Target, Metric: t.m.Metric(),
		Settings: t.opts.settings(), Meta: t.opts.Meta,
		Epochs: len(t.history), BestEpoch: t.bestEpoch, Stopped: t.stopped, StopReason: t.stopReason, History: slices.Clone(t.history),
	}
}

// resume restores the trainer from the checkpoint in OutDir, refusing options of given
// (as the caller gave them, before defaults) that differ from the checkpoint's.
func (t *trainer) resume(given TrainOptions) error {
	dir := t.opts.OutDir
	if _, err := os.Stat(filepath.Join(dir, ModelFile)); err != nil {
		return fmt.Errorf("train: nothing to resume in %s: %w", dir, err)
	}
	c, err := ReadCheckpoint(dir)
	if err != nil {
		return fmt.Errorf("train: resuming: %w", err)
	}
	if c.State == nil {
		return fmt.Errorf("train: %s holds a model without training state; it cannot be resumed", dir)
	}
	if c.Metric == legacyMetricSlowdown {
		return fmt.Errorf("train: the checkpoint in %s records its validation slowdown in percent (%s, before tpucost's JSON vocabulary rule); "+
			"this tpucost compares fractions (%s), so it cannot be resumed: train it again into another directory", dir, c.Metric, MetricSlowdown)
	}
	if c.Task != t.opts.Task {
		return fmt.Errorf("train: the checkpoint in %s is for task %s, not %s", dir, c.Task, t.opts.Task)
	}
	if t.lossGiven && c.Loss != t.opts.Loss {
		return fmt.Errorf("train: the checkpoint in %s was trained with loss %s, not %s", dir, c.Loss, t.opts.Loss)
	}
	if err := checkResume(dir, c, given); err != nil {
		return err
	}
	t.opts.Loss = c.Loss
	m, err := c.model()
	if err != nil {
		return fmt.Errorf("train: resuming %s: %w", dir, err)
	}
	step, state, err := readTensorFile(dir, *c.State)
	if err != nil {
		return fmt.Errorf("train: resuming: %w", err)
	}
	byName := map[string]*nn.Param{}
	for _, p := range state {
		byName[p.Name] = p
	}
	for _, p := range m.Params {
		s, ok := byName["param/"+p.Name]
		if !ok || !slices.Equal(s.Shape, p.Shape) {
			return fmt.Errorf("train: resuming %s: state lacks parameter %s%v", dir, p.Name, p.Shape)
		}
		copy(p.Data, s.Data)
	}
	_, best, err := readTensorFile(dir, c.Weights)
	if err != nil {
		return fmt.Errorf("train: resuming: %w", err)
	}
	t.best = m.Params.Clone()
	if err := t.best.CopyFrom(best); err != nil {
		return fmt.Errorf("train: resuming %s: %w", dir, err)
	}
	// The checkpoint's settings (checked against the given ones above), except the
	// number of epochs and the patience, which may change: epochs given (never below the
	// epochs trained: checkResume) are the budget asked for now, replacing the
	// checkpoint's (a step budget included); else the checkpoint's budget stands.
	epochs := given.Epochs
	if epochs == 0 {
		epochs = c.Settings.Epochs
	}
	patience := given.Patience
	if patience == 0 {
		patience = c.Settings.Patience
	}
	s := c.Settings
	t.opts.BatchKernels, t.opts.MaxConfigs, t.opts.LR, t.opts.Seed = s.BatchKernels, s.MaxConfigs, s.LR, s.Seed
	t.opts.Patience, t.opts.ShuffleBuffer, t.opts.NoBucketing = patience, s.ShuffleBuffer, !s.Bucketing
	t.opts.Epochs = max(epochs, c.Epochs)
	t.opts.Steps, t.opts.stepsPerEpoch, t.opts.Schedule = s.Steps, s.StepsPerEpoch, s.Schedule
	if given.Epochs != 0 {
		t.opts.Steps = 0 // the budget is the epochs asked for, not the steps they once came from
	}
	if s.Schedule == "" {
		t.opts.Schedule = ScheduleConstant // a checkpoint from before schedules
	}
	t.opts.Model = c.Config
	if c.Config.FeatureSet != "" {
		t.opts.Schema = c.FeatureSchema
	}
	if t.opts.Meta == (Meta{}) {
		t.opts.Meta = c.Meta
	}
	t.m = m
	t.adam = nn.NewAdam(m.Params, t.opts.LR)
	if err := t.adam.Restore(step, state); err != nil {
		return fmt.Errorf("train: resuming %s: %w", dir, err)
	}
	if c.TrainedOn != nil {
		keys, err := SeenKeys(dir, c)
		if err != nil {
			return fmt.Errorf("train: resuming: %w", err)
		}
		for _, k := range keys {
			t.seen[k] = true
		}
		for _, p := range c.TrainedOn.TrainPrograms {
			t.programs[p] = true
		}
		if t.opts.Datasets == nil {
			for i, p := range c.DatasetPaths(dir) {
				t.opts.Datasets = append(t.opts.Datasets, DatasetRef{Path: p, Fingerprint: c.TrainedOn.Datasets[i].Fingerprint})
			}
		}
	}
	t.history = slices.Clone(c.History)
	t.bestEpoch = c.BestEpoch
	if t.bestEpoch < 0 || t.bestEpoch > len(t.history) {
		return fmt.Errorf("train: resuming %s: best epoch %d of %d", dir, t.bestEpoch, len(t.history))
	}
	t.progressf("resuming %s after epoch %d (best epoch %d)", dir, len(t.history), t.bestEpoch)
	if len(t.history) >= t.opts.Epochs {
		asked := "its budget"
		if given.Epochs != 0 {
			asked = "the budget asked for"
		}
		t.progressf("%s has trained %d epochs, %s: nothing to train (give --epochs above %d to train longer)", dir, len(t.history), asked, len(t.history))
	}
	return nil
}

// CheckResume reports whether TrainDataset could resume the checkpoint in dir with opts (as
// it would be given them, Resume aside): it verifies every checkpoint file and
// compares the task, loss and the options opts sets with the checkpoint's (see
// TrainOptions.Resume). It returns the checkpoint; an error wrapping fs.ErrNotExist
// when dir holds none.
func CheckResume(dir string, opts TrainOptions) (*Checkpoint, error) {
	if _, err := os.Stat(filepath.Join(dir, ModelFile)); err != nil {
		return nil, err
	}
	c, err := ReadCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	if c.Task != opts.Task {
		return nil, mismatchError(dir, "task", string(opts.Task), string(c.Task))
	}
	if opts.Loss != "" && opts.Loss != c.Loss {
		return nil, mismatchError(dir, "loss", string(opts.Loss), string(c.Loss))
	}
	if c.State == nil {
		return nil, fmt.Errorf("train: %s holds a model without training state; it cannot be resumed", dir)
	}
	if err := checkResume(dir, c, opts); err != nil {
		return nil, err
	}
	return c, nil
}

// checkResume refuses to resume the checkpoint c in dir with given options (zero: take
// the checkpoint's) that differ from its own.
func checkResume(dir string, c *Checkpoint, given TrainOptions) error {
	if !reflect.DeepEqual(given.Model, Config{}) {
		if f, gv, cv := diffStruct(given.Model, c.Config); f != "" {
			return mismatchError(dir, f, gv, cv)
		}
	}
	s := c.Settings
	if given.Epochs != 0 && given.Epochs < c.Epochs {
		// Never silently shortened: fewer epochs than trained would stop at once and
		// record a smaller budget than the one asked for at the start.
		return &FieldError{Field: "epochs", Value: fmt.Sprint(given.Epochs), Range: fmt.Sprintf(
			"at least %d to resume %s, which has trained %d epochs of its budget of %d: give more epochs to train longer, "+
				"leave them unset to finish its budget, or train into a new directory", c.Epochs, dir, c.Epochs, s.Epochs)}
	}
	for _, m := range []struct {
		field    string
		set      bool
		giv, ckp any
	}{
		{"batch_kernels", given.BatchKernels != 0, given.BatchKernels, s.BatchKernels},
		{"max_configs", given.MaxConfigs != 0, given.MaxConfigs, s.MaxConfigs},
		{"lr", given.LR != 0, given.LR, s.LR},
		{"seed", given.Seed != 0, given.Seed, s.Seed},
		{"shuffle_buffer", given.ShuffleBuffer != 0, given.ShuffleBuffer, s.ShuffleBuffer},
		{"bucketing", given.NoBucketing, !given.NoBucketing, s.Bucketing},
		{"max_segment_nodes", given.MaxSegmentNodes != 0, given.MaxSegmentNodes, c.Config.MaxSegmentNodes},
		{"steps", given.Steps != 0, given.Steps, s.Steps},
		{"schedule", given.Schedule != "", given.Schedule, cmp.Or(s.Schedule, ScheduleConstant)},
	} {
		if m.set && m.giv != m.ckp {
			return mismatchError(dir, m.field, fmt.Sprint(m.giv), fmt.Sprint(m.ckp))
		}
	}
	if given.Meta != (Meta{}) {
		if f, gv, cv := diffStruct(given.Meta, c.Meta); f != "" && f != "data" {
			return mismatchError(dir, f, gv, cv)
		}
	}
	if given.Datasets != nil && c.TrainedOn != nil {
		var gf, cf []string
		for _, d := range given.Datasets {
			gf = append(gf, d.Path+" (fingerprint "+d.Fingerprint[:min(12, len(d.Fingerprint))]+")")
		}
		paths := c.DatasetPaths(dir)
		for i, d := range c.TrainedOn.Datasets {
			cf = append(cf, paths[i]+" (fingerprint "+d.Fingerprint[:min(12, len(d.Fingerprint))]+")")
		}
		same := len(given.Datasets) == len(c.TrainedOn.Datasets)
		for i := 0; same && i < len(given.Datasets); i++ {
			same = given.Datasets[i].Fingerprint == c.TrainedOn.Datasets[i].Fingerprint
		}
		if !same {
			return mismatchError(dir, "the training data", strings.Join(gf, ", "), strings.Join(cf, ", "))
		}
	}
	return nil
}

// prepareRow prepares a training or validation row: nil for a row without configs, an
// error for one without runtimes.
func (t *trainer) prepareRow(r *dataset.Row) (*kernel, error) {
	if t.seen != nil {
		t.seen[KernelID(r.KernelKey)] = true
		t.programs[r.Program] = true
	}
	if len(r.ConfigFeats) == 0 {
		return nil, nil
	}
	k, err := t.m.prepare(r)
	if err != nil {
		return nil, err
	}
	if k.runtimes == nil {
		return nil, fmt.Errorf("row %s/%s has no runtimes", r.Program, r.KernelName)
	}
	return k, nil
}
