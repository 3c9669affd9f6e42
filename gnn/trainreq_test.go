package gnn

import (
	"strings"
	"testing"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/nn"
)

// trainRequest is a request as `tpucost train` builds it with the flags' defaults, for
// the tile task on a directory that does not exist (Plan reads no rows).
func trainRequest(t *testing.T) TrainRequest {
	return TrainRequest{Task: "tile", Data: t.TempDir() + "/none", Out: t.TempDir(), Schedule: "cosine", Batch: 32, MaxConfigs: 32,
		LR: 1e-3, Seed: 1, Split: dataset.SplitRandom, TestFraction: 0.2, ValFraction: 0.1, SplitSeed: 1, Patience: "auto",
		Layers: 3, Hidden: 64, Reduce: "mean,max", Features: "paper", Prior: "auto", Ensemble: 1}
}

// setFlags is a TrainRequest.Set reporting the flags named as given.
func setFlags(flags ...string) func(string) bool {
	return func(f string) bool {
		for _, g := range flags {
			if f == g {
				return true
			}
		}
		return false
	}
}

// TestTrainRequestErrors: every refused combination or value is one error naming the
// flag, before any data is read.
func TestTrainRequestErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*TrainRequest)
		want string
	}{
		{"no task", func(r *TrainRequest) { r.Task = "" }, "--task is required (tile, flags, fusion or layout)"},
		{"no data", func(r *TrainRequest) { r.Data = "" }, "--data is required"},
		{"no out", func(r *TrainRequest) { r.Out = "" }, "--out is required"},
		{"bad loss", func(r *TrainRequest) { r.Loss = "l1" }, "l1"},
		{"bad reduce", func(r *TrainRequest) { r.Reduce = "median" }, "--reduce: "},
		{"bad features", func(r *TrainRequest) { r.Features = "x" }, "--features: "},
		{"heads without the task first", func(r *TrainRequest) { r.Heads = "flags,tile" }, "--heads flags,tile: want at least two tasks, the first being --task tile"},
		{"one head", func(r *TrainRequest) { r.Heads = "tile" }, "--heads tile: want at least two tasks"},
		{"bad prior", func(r *TrainRequest) { r.Prior = "-1" }, "--prior \"-1\": want auto or a number >= 0"},
		{"prior out of range", func(r *TrainRequest) { r.Prior = "1000" }, "prior weight must be in [0, 100], got 1000"},
		{"bad patience", func(r *TrainRequest) { r.Patience = "soon" }, "--patience \"soon\": want auto, off or an integer number of epochs"},
		{"bad schedule", func(r *TrainRequest) { r.Schedule = "step" }, "--lr-schedule: "},
		{"no models", func(r *TrainRequest) { r.Ensemble = 0 }, "--ensemble \"0\": want an integer in [1, "},
		{"ensemble resumed", func(r *TrainRequest) { r.Ensemble, r.Resume = 2, true }, "--ensemble 2 with --resume: an ensemble is not resumed"},
		{"two budgets", func(r *TrainRequest) { r.Set = setFlags("epochs", "steps") }, "--epochs and --steps are two budgets: give one"},
		{"zero batch", func(r *TrainRequest) { r.Batch = 0 }, "--batch \"0\": want an integer >= 1"},
		{"bad split", func(r *TrainRequest) { r.Split = "by-name" }, "--split \"by-name\": want"},
		{"architecture with init", func(r *TrainRequest) { r.Init, r.Set = "m", setFlags("hidden") }, "--hidden with --init: the architecture is the initial model's"},
	} {
		r := trainRequest(t)
		c.edit(&r)
		_, err := r.Plan()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// TestTrainRequestPlan: the flags assemble the model configuration and the options as
// given (no defaults substituted); --init leaves the architecture to the initial model.
func TestTrainRequestPlan(t *testing.T) {
	r := trainRequest(t)
	r.Layers, r.Hidden, r.Reduce, r.Prior, r.Patience, r.Schedule, r.Ensemble = 2, 16, "sum", "0.5", "off", "constant", 3
	r.Loss, r.MaxSegment, r.Heads = "mse", 64, "tile,flags"
	p, err := r.Plan()
	if err != nil {
		t.Fatal(err)
	}
	m := p.Options.Model
	if m.Layers != 2 || m.Hidden != 16 || len(m.Reduce) != 1 || m.Reduce[0] != nn.ReduceSum || m.Prior != 0.5 || len(m.Tasks) != 2 {
		t.Errorf("model %+v: want 2 layers of 16, sum, prior 0.5, two heads", m)
	}
	for i, h := range m.Head {
		if h != 16 {
			t.Errorf("head layer %d is %d wide, want --hidden 16", i, h)
		}
	}
	o := p.Options
	if o.Patience != -1 || o.Schedule != ScheduleConstant || o.Loss != LossMSE || o.MaxSegmentNodes != 64 || o.OutDir != r.Out || o.Task != dataset.TaskTile || p.Ensemble != 3 {
		t.Errorf("options %+v, ensemble %d: want the request's settings", o, p.Ensemble)
	}
	if p.Data.Dir != r.Data || p.Data.TestFraction != 0.2 || p.Data.SplitSeed != 1 {
		t.Errorf("data %+v: want the request's", p.Data)
	}

	r = trainRequest(t)
	p, err = r.Plan()
	if err != nil {
		t.Fatal(err)
	}
	if want := DefaultPrior(dataset.TaskTile, p.Options.Model, DefaultLoss(dataset.TaskTile, p.Options.Model)); p.Options.Model.Prior != want {
		t.Errorf("--prior auto: %g, want DefaultPrior %g", p.Options.Model.Prior, want)
	}

	r.Init, r.Set = "m", setFlags("epochs", "lr")
	if p, err = r.Plan(); err != nil || p.Options.Init != "m" || p.Options.Model.Layers != 0 {
		t.Errorf("--init: %+v, %v: want the initial model's architecture (a zero Model)", p.Options, err)
	}
}
