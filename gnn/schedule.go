package gnn

import (
	"fmt"
	"math"

	"github.com/tpucost/tpucost/dataset"
)

// This file holds the training budget, the learning-rate schedule and the stopping
// rule: what makes a default `train` converge on 300 kernels or on 300,000.
//
// Budget. Without Epochs, training runs for a budget of optimizer steps (Steps, default
// DefaultSteps of the task), turned into epochs with the size of the training split:
//
//	epochs = clamp(⌈steps / batches per epoch⌉, minAutoEpochs, maxAutoEpochs)
//
// so a small dataset gets many passes and a large one at least a few. Given Epochs (an
// explicit override), the budget is those epochs.
//
// Schedule (Schedule, default cosine). Over the budget's S = epochs × batches per epoch
// steps, with W = ⌈warmupFraction · S⌉ warm-up steps and peak rate LR:
//
//	lr(s) = LR · (s+1)/W                                          s < W
//	lr(s) = LR · (f + (1−f) · (1 + cos(π (s−W)/(S−W))) / 2)      s ≥ W, f = finalLRFraction
//
// s counts the optimizer's steps, so a resumed run follows the same schedule. ScheduleConstant
// keeps LR throughout (the behaviour before schedules).
//
// Stopping. Validation runs after every epoch; training stops early when the validation
// metric (ties: the validation loss) has not improved for Patience epochs, default
// autoPatience of the budget. The best epoch's weights are kept.

// Schedule is a learning-rate schedule.
type Schedule string

// The schedules.
const (
	ScheduleCosine   Schedule = "cosine"   // linear warm-up, then cosine decay to finalLRFraction·LR
	ScheduleConstant Schedule = "constant" // LR throughout
)

// ParseSchedule parses a schedule name.
func ParseSchedule(s string) (Schedule, error) {
	switch Schedule(s) {
	case ScheduleCosine, ScheduleConstant:
		return Schedule(s), nil
	}
	return "", fmt.Errorf("unknown learning-rate schedule %q (want cosine or constant)", s)
}

const (
	// warmupFraction of the budget's steps warms the rate up linearly: Adam's first
	// moments are noisy, and a full rate from step 1 overshoots on small data.
	warmupFraction = 0.03
	// finalLRFraction is where the cosine ends, as a fraction of LR.
	finalLRFraction = 0.02
	// minAutoEpochs and maxAutoEpochs bound the epochs a step budget turns into: at least a
	// few passes over a large dataset (each configuration sample is drawn anew per epoch),
	// at most this many over a tiny one (early stopping ends most runs long before).
	minAutoEpochs = 4
	maxAutoEpochs = 1000
)

// DefaultSteps is the optimizer-step budget of a task when neither Epochs nor Steps is
// given. Measured on the zoo (docs/training.md, Training): rank models of tile and flags reach their
// best validation slowdown within about 2,000 steps of 32 kernels on 12–20 programs and
// stop early well before 4,000; absolute models (fusion, layout) fit a regression of
// every kernel's runtime and keep improving longer.
func DefaultSteps(task dataset.Task) int {
	if task.Relative() {
		return 4000
	}
	return 6000
}

// autoEpochs turns a step budget into epochs for a training split of kernels kernels
// in batches of batch.
func autoEpochs(steps, kernels, batch int) int {
	per := max(1, (kernels+batch-1)/batch)
	return min(max((steps+per-1)/per, minAutoEpochs), maxAutoEpochs)
}

// autoPatience is the default patience of a budget of epochs: a tenth of it, at least 5
// epochs (validation is noisy on a small split; a long run deserves a long wait, since
// the decaying rate keeps finding improvements late).
func autoPatience(epochs int) int { return max(5, (epochs+9)/10) }

// lrAt is the learning rate of optimizer step s (0-based) of a run of total steps.
func lrAt(sched Schedule, lr float64, s, total int64) float64 {
	if sched != ScheduleCosine || total <= 1 {
		return lr
	}
	w := int64(math.Ceil(warmupFraction * float64(total)))
	if s < w {
		return lr * float64(s+1) / float64(w)
	}
	p := math.Min(1, float64(s-w)/float64(max(1, total-w)))
	return lr * (finalLRFraction + (1-finalLRFraction)*(1+math.Cos(math.Pi*p))/2)
}

// budget resolves the epochs, the patience and the schedule's unit for a training split
// of rows kernels (fresh runs; a resumed run takes them from its checkpoint).
func (t *trainer) budget(rows int) {
	o := &t.opts
	o.stepsPerEpoch = max(1, (rows+o.BatchKernels-1)/o.BatchKernels)
	if o.Epochs == 0 {
		if o.Steps == 0 {
			o.Steps = DefaultSteps(o.Task)
		}
		o.Epochs = autoEpochs(o.Steps, rows, o.BatchKernels)
	}
	if o.Patience == 0 {
		o.Patience = autoPatience(o.Epochs)
	}
	budget := fmt.Sprintf("%d epochs", o.Epochs)
	if o.Steps > 0 {
		budget = fmt.Sprintf("%d epochs (a budget of %d steps of %d kernels over %d training kernels)", o.Epochs, o.Steps, o.BatchKernels, rows)
	}
	patience := fmt.Sprintf("early stopping after %d epochs without improvement", o.Patience)
	if o.Patience < 0 {
		patience = "no early stopping"
	}
	t.progressf("training for at most %s, %s learning rate %g, %s", budget, o.Schedule, o.LR, patience)
}

// reason says why training stopped ("epochs" or "early-stopping").
func (t *trainer) reason(stopped string) string {
	if stopped == "early-stopping" {
		what := "validation " + t.m.Metric()
		if t.history[t.bestEpoch-1].Val == nil {
			what = "training loss"
		}
		return fmt.Sprintf("early stopping: the %s did not improve for %d epochs after epoch %d (budget %d epochs)",
			what, len(t.history)-t.bestEpoch, t.bestEpoch, t.opts.Epochs)
	}
	if t.opts.Steps > 0 {
		return fmt.Sprintf("budget: %d epochs, %d steps of a budget of %d; best epoch %d", len(t.history), len(t.history)*t.opts.stepsPerEpoch, t.opts.Steps, t.bestEpoch)
	}
	return fmt.Sprintf("budget: the %d epochs asked for; best epoch %d", t.opts.Epochs, t.bestEpoch)
}
