package lutcpu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/tpucost/tpucost/bitserial"
	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/internal/atomicfile"
	"github.com/tpucost/tpucost/internal/dirlock"
)

// TaskName is the task of the LUT kernel's measured datasets and models.
const TaskName = "bitserial"

// ModelFile is a trained model's file in its checkpoint directory.
const ModelFile = "bitserial-model.json"

// CheckBackend refuses a --backend other than the ones the bitserial task measures on.
func CheckBackend(b string) error {
	if !slices.Contains(Backends(), b) {
		return fmt.Errorf("want %v for --task bitserial (the simulator does not run the LUT kernel)", Backends())
	}
	return nil
}

// GenRequest is `tpucost gen --task bitserial --backend cpu` as its flags state it.
type GenRequest struct {
	Backend string
	Out     string
	Configs int            // configs measured, 0: the whole space
	Format  dataset.Format // "": arrow
	Seed    int64
	Method  Method
	// ToolVersion is recorded in the metadata.
	ToolVersion string
	Progress    io.Writer // progress lines (nil: none)

	backend Backend // set by tests: measures instead of NewBackend's
}

// NewBackend is the backend --backend names, measuring configs of layer l with method m
// (the kernel's data drawn from seed): "cpu", this processor (CPU). It is the one
// constructor gen and tune take their backend from.
func NewBackend(name string, l bitserial.Layer, seed uint64, m Method) (Backend, error) {
	if err := CheckBackend(name); err != nil {
		return nil, fmt.Errorf("--backend %q: %w", name, err)
	}
	return &CPU{Layer: l, Seed: seed, Method: m}, nil
}

// GenReport is a generation: the dataset's metadata (the JSON) and where it is.
type GenReport struct {
	*Meta
	Dir string `json:"dir"`
}

// Run measures the default space on the backend into r.Out.
func (r GenRequest) Run(ctx context.Context) (*GenReport, error) {
	sp := DefaultSpace()
	be, err := requestBackend(r.Backend, r.backend, sp, r.Seed, r.Method)
	if err != nil {
		return nil, err
	}
	o := GenOptions{Space: sp, Backend: be, Method: r.Method, Out: r.Out, Format: r.Format, Configs: r.Configs, Seed: r.Seed, ToolVersion: r.ToolVersion}
	if r.Progress != nil {
		o.Progress = func(done, total int) {
			if done%200 == 0 || done == total {
				fmt.Fprintf(r.Progress, "measured %d of %d configs (load %s)\n", done, total, LoadAverage())
			}
		}
	}
	m, _, err := Generate(ctx, o)
	if err != nil {
		return nil, err
	}
	return &GenReport{Meta: m, Dir: r.Out}, nil
}

// WriteText is the summary of a generation.
func (g *GenReport) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "%d of %d configs measured on %s (%d CPUs, %s) in %.0f s: %d outlier repeats rejected, %d re-measurements, %d samples still noisier than %.0f%%; load %s -> %s; wrote %s\n",
		g.Configs, g.Space, g.Backend, g.CPUs, g.GOARCH, g.WallSeconds, g.Rejected, g.Remeasured, g.NoisySamples, 100*g.Method.MaxNoise,
		g.LoadStart, g.LoadEnd, filepath.Join(g.Dir, dataset.MeasuredFileName(g.Task, g.Format)))
	return err
}

// TrainRequest is `tpucost train --task bitserial`.
type TrainRequest struct {
	Data     string
	Out      string
	Split    string // SplitRandom or SplitProblem
	TestFrac float64
	Seed     int64
	Lambda   float64
}

// Checkpoint is a trained model as written: the model, how it was split, and its
// held-out scores.
type Checkpoint struct {
	Task string `json:"task"`
	// Data is the training dataset's directory, relative to the checkpoint's directory
	// when it can be.
	Data     string   `json:"data"`
	Split    string   `json:"split"`
	HeldOut  []string `json:"held_out_problems"` // with SplitProblem
	TestFrac float64  `json:"test_fraction"`
	Seed     int64    `json:"seed"`
	Model    *Model   `json:"learned_model"`
	Test     Scores   `json:"test"`
}

// TrainReport is a finished training (the JSON: the checkpoint and its directory).
type TrainReport struct {
	*Checkpoint
	Dir string `json:"dir"`
}

// Run trains on r.Data's training split and writes r.Out/bitserial-model.json.
func (r TrainRequest) Run() (*TrainReport, error) {
	if r.Out == "" {
		return nil, errors.New("--out: no checkpoint directory")
	}
	// The checkpoint directory is a model directory (internal/dirlock): a dataset or
	// other directory is refused, and so is one another command is writing.
	lock, err := dirlock.AcquireDir(r.Out, dirlock.Model)
	if err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	defer lock.Release()
	meta, recs, err := Read(r.Data)
	if err != nil {
		return nil, err
	}
	train, test, held, err := SplitBy(recs, r.Split, r.TestFrac, r.Seed)
	if err != nil {
		return nil, err
	}
	m, err := Train(meta.Layer.Layer(), train, r.Lambda)
	if err != nil {
		return nil, err
	}
	sc, err := Score(m, test)
	if err != nil {
		return nil, err
	}
	data := r.Data
	if ad, err := filepath.Abs(r.Data); err == nil {
		if ao, err := filepath.Abs(r.Out); err == nil {
			if rel, err := filepath.Rel(ao, ad); err == nil {
				data = rel
			}
		}
	}
	ck := &Checkpoint{Task: TaskName, Data: data, Split: r.Split, HeldOut: []string{}, TestFrac: r.TestFrac, Seed: r.Seed, Model: m, Test: sc}
	for _, p := range held {
		ck.HeldOut = append(ck.HeldOut, p.String())
	}
	b, err := json.MarshalIndent(ck, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(filepath.Join(r.Out, ModelFile), append(b, '\n')); err != nil {
		return nil, err
	}
	return &TrainReport{Checkpoint: ck, Dir: r.Out}, nil
}

// WriteText is the summary of a training.
func (t *TrainReport) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "trained on %d configs; held out %d: Kendall tau learned %.3f, analytical %.3f; wrote %s\n",
		t.Model.Trained, t.Test.Configs, t.Test.Learned, t.Test.Analytical, filepath.Join(t.Dir, ModelFile))
	return err
}

// IsCheckpoint reports whether dir holds a bitserial model (ModelFile).
func IsCheckpoint(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, ModelFile))
	return err == nil
}

// ReadCheckpoint reads dir's ModelFile, refusing one that does not parse or fit.
func ReadCheckpoint(dir string) (*Checkpoint, error) {
	p := filepath.Join(dir, ModelFile)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	var ck Checkpoint
	if err := json.Unmarshal(b, &ck); err != nil || ck.Task != TaskName || ck.Model == nil {
		return nil, fmt.Errorf("%s: not a bitserial model checkpoint (%v)", p, err)
	}
	if err := ck.Model.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return &ck, nil
}

// EvalReport is `tpucost eval` of a bitserial model: Kendall τ of the learned and
// analytical models on its held-out configs, in the shape of the other tasks' reports
// (learned.kendall_tau, analytical.kendall_tau).
type EvalReport struct {
	Task         string     `json:"task"`
	Split        string     `json:"split"` // the model's: random (configs) or problem (whole problems held out)
	Data         string     `json:"data"`
	TrainSamples int        `json:"train_samples"`
	Samples      int        `json:"samples"` // held-out configs scored
	Learned      TauMetrics `json:"learned"`
	Analytical   TauMetrics `json:"analytical"`
}

// TauMetrics is a model's Kendall τ-b against the measured medians.
type TauMetrics struct {
	KendallTau float64 `json:"kendall_tau"`
}

// Evaluate scores the model in dir on the held-out split of data ("": the dataset it
// was trained on, found relative to dir), split as in training.
func Evaluate(dir, data string) (*EvalReport, error) {
	ck, err := ReadCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	if data == "" {
		data = ck.Data
		if !filepath.IsAbs(data) {
			data = filepath.Join(dir, data)
		}
	}
	meta, recs, err := Read(data)
	if err != nil {
		return nil, err
	}
	if meta.Layer != ck.Model.Shape {
		return nil, fmt.Errorf("%s was measured on layer %+v, the model on %+v", data, meta.Layer, ck.Model.Shape)
	}
	_, test, _, err := SplitBy(recs, ck.Split, ck.TestFrac, ck.Seed)
	if err != nil {
		return nil, err
	}
	sc, err := Score(ck.Model, test)
	if err != nil {
		return nil, err
	}
	return &EvalReport{Task: TaskName, Split: ck.Split, Data: data, TrainSamples: ck.Model.Trained, Samples: sc.Configs,
		Learned: TauMetrics{sc.Learned}, Analytical: TauMetrics{sc.Analytical}}, nil
}

// WriteText is the summary of an evaluation.
func (e *EvalReport) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "bitserial: %d held-out configs of %s; Kendall tau learned %.3f, analytical %.3f\n",
		e.Samples, e.Data, e.Learned.KendallTau, e.Analytical.KendallTau)
	return err
}

// TuneRequest is `tpucost tune --task bitserial`: model-guided search on the CPU of each
// problem's implementation, and, given an exhaustive dataset of the space (Data), the
// comparison with its per-problem bests.
type TuneRequest struct {
	Backend string
	// Model is a checkpoint directory ("": fit from Sample random measurements). A model
	// trained with --split problem tunes its held-out problems; otherwise every problem.
	Model  string
	Data   string // exhaustive dataset to compare with ("": none)
	Sample int
	Top    int // variants measured per problem
	// FitRounds divides Top into rounds, the model fitted again before each (1 with
	// Model); see TuneOptions.Rounds.
	FitRounds int
	Seed      int64
	Lambda    float64
	Method    Method
	Rounds    int // alternating re-measurements of a tuned and an exhaustive best that differ

	backend Backend // set by tests: measures instead of NewBackend's
}

// TuneReport is a tuning run, and its comparison with an exhaustive search.
type TuneReport struct {
	*TuneResult
	Exhaustive *Exhaustive `json:"exhaustive,omitempty"` // with Data
}

// Exhaustive compares a tuning with the exhaustive search of a dataset, problem by
// problem: the ratio exhaustive best / tuned best (1: the tuner found the best), from
// the dataset's medians and re-measured now side by side (Rounds alternations; 1 where
// the two are the same config).
type Exhaustive struct {
	Measurements  int     `json:"measurements"`   // the exhaustive search's, over the tuned problems
	MeasuredShare float64 `json:"measured_share"` // tune's measurements / the exhaustive search's
	MinRatio      float64 `json:"min_ratio"`      // in the dataset
	MeanRatio     float64 `json:"mean_ratio"`     // geometric mean, in the dataset
	AtLeast95     int     `json:"at_least_95"`    // problems with ratio >= 0.95, in the dataset
	SameConfig    int     `json:"same_config"`    // problems where the tuner found the exhaustive best
	// The same, re-measured side by side.
	MinRatioRemeasured  float64      `json:"min_ratio_remeasured"`
	MeanRatioRemeasured float64      `json:"mean_ratio_remeasured"`
	AtLeast95Remeasured int          `json:"at_least_95_remeasured"`
	Problems            []Comparison `json:"per_problem"`
}

// Comparison is one problem's tuned and exhaustive bests.
type Comparison struct {
	Problem          string  `json:"problem"`
	TunedConfig      string  `json:"tuned_config"`
	ExhaustiveConfig string  `json:"exhaustive_config"`
	Ratio            float64 `json:"ratio"`
	RatioRemeasured  float64 `json:"ratio_remeasured"`
}

// Run tunes on the backend and compares with r.Data's exhaustive bests.
func (r TuneRequest) Run() (*TuneReport, error) {
	if err := CheckBackend(r.Backend); err != nil {
		return nil, fmt.Errorf("--backend %q: %w", r.Backend, err)
	}
	if r.Rounds < 1 {
		return nil, fmt.Errorf("--rounds %d: want at least 1", r.Rounds)
	}
	if err := r.Method.Check(); err != nil {
		return nil, err
	}
	sp := DefaultSpace()
	be, err := requestBackend(r.Backend, r.backend, sp, r.Seed, r.Method)
	if err != nil {
		return nil, err
	}
	o := TuneOptions{Space: sp, Backend: be, Sample: r.Sample, Top: r.Top, Rounds: r.FitRounds, Lambda: r.Lambda, Seed: r.Seed}
	if r.Model != "" {
		ck, err := ReadCheckpoint(r.Model)
		if err != nil {
			return nil, err
		}
		if ck.Model.Shape != ShapeOf(sp.Layer) {
			return nil, fmt.Errorf("%s: model of layer %+v, the space's is %+v", r.Model, ck.Model.Shape, ShapeOf(sp.Layer))
		}
		o.Model = ck.Model
		if ck.Split == SplitProblem {
			for _, s := range ck.HeldOut {
				p, err := ParseProblem(s)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", r.Model, err)
				}
				o.Problems = append(o.Problems, p)
			}
		}
	}
	res, err := Tune(o)
	if err != nil {
		return nil, err
	}
	rep := &TuneReport{TuneResult: res}
	if r.Data == "" {
		return rep, nil
	}
	meta, recs, err := Read(r.Data)
	if err != nil {
		return nil, err
	}
	if meta.Layer != ShapeOf(sp.Layer) {
		return nil, fmt.Errorf("%s: measured on layer %+v, the space's is %+v", r.Data, meta.Layer, ShapeOf(sp.Layer))
	}
	byConfig := map[Config]float64{}
	for _, rec := range recs {
		byConfig[rec.Config] = rec.MedianNs
	}
	ex := &Exhaustive{MinRatio: math.Inf(1), MinRatioRemeasured: math.Inf(1)}
	var logSum, logSumRe float64
	for _, tp := range res.Problems {
		p, _ := ParseProblem(tp.Problem) // written by Tune
		var best Config
		bestNs := math.Inf(1)
		for _, c := range p.Variants() {
			t, ok := byConfig[c]
			if !ok {
				return nil, fmt.Errorf("%s: no measurement of %s: want an exhaustive dataset of the tuned problems", r.Data, c)
			}
			ex.Measurements++
			if t < bestNs {
				bestNs, best = t, c
			}
		}
		cmp := Comparison{Problem: tp.Problem, TunedConfig: tp.BestConfig, ExhaustiveConfig: best.String(),
			Ratio: bestNs / byConfig[tp.best], RatioRemeasured: 1}
		if best == tp.best {
			ex.SameConfig++
		} else {
			bNs, tNs, err := Compare(be, best, tp.best, r.Rounds)
			if err != nil {
				return nil, err
			}
			cmp.RatioRemeasured = bNs / tNs
		}
		ex.MinRatio = math.Min(ex.MinRatio, cmp.Ratio)
		ex.MinRatioRemeasured = math.Min(ex.MinRatioRemeasured, cmp.RatioRemeasured)
		logSum += math.Log(cmp.Ratio)
		logSumRe += math.Log(cmp.RatioRemeasured)
		if cmp.Ratio >= 0.95 {
			ex.AtLeast95++
		}
		if cmp.RatioRemeasured >= 0.95 {
			ex.AtLeast95Remeasured++
		}
		ex.Problems = append(ex.Problems, cmp)
	}
	n := float64(len(res.Problems))
	ex.MeanRatio, ex.MeanRatioRemeasured = math.Exp(logSum/n), math.Exp(logSumRe/n)
	ex.MeasuredShare = float64(res.Measurements) / float64(ex.Measurements)
	rep.Exhaustive = ex
	return rep, nil
}

// ParseProblem reads a problem's form, "P=64;z=8;b=4".
func ParseProblem(s string) (Problem, error) {
	var p Problem
	if _, err := fmt.Sscanf(s, "P=%d;z=%d;b=%d", &p.P, &p.Z, &p.B); err != nil || p.String() != s {
		return p, fmt.Errorf("problem %q: want P=..;z=..;b=..", s)
	}
	return p, nil
}

// WriteText is the summary of a tuning.
func (t *TuneReport) WriteText(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "tuned %d problems in %d measurements (%d sampled + %d best-predicted in %d rounds; exhaustive: %d)\n",
		len(t.Problems), t.Measurements, t.Sampled, t.Predicted, t.FitRounds, t.ExhaustiveConfigs); err != nil {
		return err
	}
	if e := t.Exhaustive; e != nil {
		_, err := fmt.Fprintf(w, "vs exhaustive search (%d measurements; tune used %.1f%%): exhaustive best / tuned best per problem, in the dataset min %.3f, geometric mean %.3f, %d of %d >= 0.95 (%d the same config); re-measured side by side min %.3f, mean %.3f, %d >= 0.95\n",
			e.Measurements, 100*e.MeasuredShare, e.MinRatio, e.MeanRatio, e.AtLeast95, len(t.Problems), e.SameConfig,
			e.MinRatioRemeasured, e.MeanRatioRemeasured, e.AtLeast95Remeasured)
		return err
	}
	return nil
}

// requestBackend is the backend a gen or tune request measures on: the one named (checked
// by NewBackend even when a test injected another), or the injected one.
func requestBackend(name string, injected Backend, sp Space, seed int64, m Method) (Backend, error) {
	be, err := NewBackend(name, sp.Layer, uint64(seed), m)
	if err != nil || injected == nil {
		return be, err
	}
	return injected, nil
}
