package gnn

import (
	"fmt"
	"math"
	"sync"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/features"
)

// Predictor scores (kernel, config) pairs with a trained model, many per call, in
// batches. It featurizes with features.OfKernel and features.Config for the target it was
// made for. It is safe for concurrent use; calls are serialized (one Gorgonia machine
// runs at a time).
type Predictor struct {
	mu           sync.Mutex
	m            *Model
	target       cost.Target
	eng          *engine
	members      []*engine // an ensemble's other members (ensemble.go)
	batchKernels int
}

// PredictorOptions configure a Predictor.
type PredictorOptions struct {
	// BatchKernels is the number of kernels per inference batch (default 64).
	BatchKernels int
	// NoBucketing builds a graph of every batch's exact shape instead of padding batches
	// to cached bucket shapes.
	NoBucketing bool
}

// NewPredictor returns a predictor for m on target t. m must not be modified while the
// predictor is in use.
func NewPredictor(m *Model, t cost.Target, opts PredictorOptions) (*Predictor, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	if set := m.Config.FeatureSet; set != "" {
		return nil, fmt.Errorf("the model reads feature set %s (it was trained on imported data): it scores rows of that set (tpucost eval, tpucost predict --data), not kernels tpucost compiles", set)
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if opts.BatchKernels <= 0 {
		opts.BatchKernels = 64
	}
	return newPredictor(m, t, opts), nil
}

// NewRowPredictor returns a predictor of dataset rows (PredictRows, PredictSource), which
// carry their features; it has no target, so it cannot score compiled kernels (ScoreKernel).
// Models of another feature set than tpucost's (Config.FeatureSet) score rows only.
func NewRowPredictor(m *Model, opts PredictorOptions) (*Predictor, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	if opts.BatchKernels <= 0 {
		opts.BatchKernels = 64
	}
	return newPredictor(m, cost.Target{}, opts), nil
}

func newPredictor(m *Model, t cost.Target, opts PredictorOptions) *Predictor {
	p := &Predictor{m: m, target: t, eng: newEngine(m, false, !opts.NoBucketing, defaultNetCache), batchKernels: opts.BatchKernels}
	for _, mm := range m.Members {
		p.members = append(p.members, newEngine(mm, false, !opts.NoBucketing, defaultNetCache))
	}
	return p
}

// Target is what a predictor scores kernels for: the chip (preset name), its VMEM size,
// the simulator version the model's data should come from (empty: not compared) and the
// cost target kernels are featurized for.
type Target struct {
	Chip      string
	VMEMBytes int64
	Simulator string
	Cost      cost.Target
}

// Loaded is a checkpoint loaded to score kernels for a target (LoadFor).
type Loaded struct {
	// Predictor scores kernels for Target; the caller closes it.
	Predictor *Predictor
	// Checkpoint is the checkpoint read (its task, loss, config and data Meta).
	Checkpoint *Checkpoint
	// Target is the target the predictor scores for.
	Target Target
	// Mismatch describes how the model's training target differs from Target (with
	// allowMismatch only; empty when they agree), for the caller to warn about.
	Mismatch string
}

// LoadFor loads the model of the checkpoint in dir to score kernels compiled for the
// target that target returns (given the checkpoint's Meta, e.g. to default to the chip
// the model was trained for). A model trained on data simulated for another chip, VMEM
// size or simulator is refused, naming the field and both values, unless allowMismatch:
// then it is returned with that description in Loaded.Mismatch (empty when the targets
// agree), for the caller to warn about. A model of another feature set than tpucost's is
// refused (NewPredictor).
func LoadFor(dir string, target func(Meta) (Target, error), allowMismatch bool) (*Loaded, error) {
	m, ck, err := Load(dir)
	if err != nil {
		return nil, err
	}
	t, err := target(ck.Meta)
	if err != nil {
		return nil, err
	}
	var mismatch string
	if field, mv, cv := ck.Meta.TargetMismatch(t.Chip, t.VMEMBytes, t.Simulator); field != "" {
		mismatch = fmt.Sprintf("model %s was trained on data for %s %s, not %s", dir, field, mv, cv)
		if !allowMismatch {
			return nil, fmt.Errorf("%s: use it for its target (or pass --allow-mismatch)", mismatch)
		}
	}
	p, err := NewPredictor(m, t.Cost, PredictorOptions{})
	if err != nil {
		return nil, err
	}
	return &Loaded{Predictor: p, Checkpoint: ck, Target: t, Mismatch: mismatch}, nil
}

// LoadPredictor loads the model of the checkpoint in dir (see Load) for target t.
func LoadPredictor(dir string, t cost.Target) (*Predictor, error) {
	m, _, err := Load(dir)
	if err != nil {
		return nil, err
	}
	return NewPredictor(m, t, PredictorOptions{})
}

// Target returns the cost target the predictor featurizes kernels for (zero for a row
// predictor, NewRowPredictor).
func (p *Predictor) Target() cost.Target { return p.target }

// Model returns the predictor's model (do not modify it).
func (p *Predictor) Model() *Model { return p.m }

// Relative reports whether scores are relative (rank-loss models: lower is better, only
// comparable among the configurations of one kernel) rather than runtimes in ns.
func (p *Predictor) Relative() bool { return p.m.Relative() }

// Close releases the predictor's Gorgonia machines.
func (p *Predictor) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.eng.close()
	for _, e := range p.members {
		e.close()
	}
}

// ScoreRequest asks for the scores of one kernel under planned choices (cost.Planned:
// the compiler's, or options it listed): see ScoreKernels.
type ScoreRequest struct {
	Kernel  *compiler.Kernel
	Choices []cost.Planned
}

// ScoreKernel returns, for each planned choice of kernel k, the model's predicted runtime
// in ns (absolute models) or a score where lower is better (relative models). A choice is
// featurized from its plan; one planned for another target than the predictor's is
// planned for it, and scores +Inf (ranks last) when it is not valid there.
func (p *Predictor) ScoreKernel(k *compiler.Kernel, choices []cost.Planned) ([]float64, error) {
	out, _, err := p.ScoreKernelSpread(k, choices)
	return out, err
}

// ScoreKernelSpread is ScoreKernel with an ensemble's spread of each choice's score (see
// ensemble.go; nil for a single model; +Inf scores have spread 0).
func (p *Predictor) ScoreKernelSpread(k *compiler.Kernel, choices []cost.Planned) (scores, spread []float64, err error) {
	out, sp, err := p.ScoreKernels([]ScoreRequest{{Kernel: k, Choices: choices}})
	if err != nil {
		return nil, nil, err
	}
	return out[0], sp[0], nil
}

// ScoreKernels is ScoreKernelSpread for many kernels at once: their graphs and
// configurations share batches, which is much faster than one call per kernel. out[i]
// and spread[i] are the scores and spreads of reqs[i].
func (p *Predictor) ScoreKernels(reqs []ScoreRequest) (out, spread [][]float64, err error) {
	if p.target == (cost.Target{}) {
		return nil, nil, fmt.Errorf("this predictor scores dataset rows only (NewRowPredictor): it has no target to featurize kernels for")
	}
	out = make([][]float64, len(reqs))
	spread = make([][]float64, len(reqs))
	var ks []*kernel
	var valid [][]int // per prepared kernel, the request's indices it scores
	var owner []int   // per prepared kernel, its request
	for ri, r := range reqs {
		if r.Kernel == nil || r.Kernel.Info == nil || r.Kernel.Comp == nil {
			return nil, nil, fmt.Errorf("score request %d: no kernel", ri)
		}
		out[ri] = make([]float64, len(r.Choices))
		var cfs [][]float32
		var idx []int
		var an []float64
		for i, c := range r.Choices {
			out[ri][i] = math.Inf(1)
			c, err := c.For(p.target)
			if err != nil {
				continue
			}
			cfs = append(cfs, features.Config(c))
			idx = append(idx, i)
			an = append(an, c.Analytical())
		}
		if len(cfs) == 0 {
			continue
		}
		g := features.OfKernel(r.Kernel, p.target)
		k, err := prepareKernel(&g, cfs, &p.m.Norm, p.m.Config, features.ConfigWidth)
		if err != nil {
			return nil, nil, fmt.Errorf("kernel %s: %w", r.Kernel.Name, err)
		}
		k.key = r.Kernel.Key
		k.analytical = an
		ks = append(ks, k)
		valid = append(valid, idx)
		owner = append(owner, ri)
	}
	if len(ks) == 0 {
		return out, spread, nil
	}
	raw, spreads, err := p.run(ks)
	if err != nil {
		return nil, nil, err
	}
	for j, o := range raw {
		scores := p.m.report(o)
		for i, s := range scores {
			out[owner[j]][valid[j][i]] = s
		}
		if spreads != nil {
			if spread[owner[j]] == nil {
				spread[owner[j]] = make([]float64, len(out[owner[j]]))
			}
			for i, s := range spreads[j] {
				spread[owner[j]][valid[j][i]] = s
			}
		}
	}
	return out, spread, nil
}

// PredictRows returns the model's prediction for every configuration of every row, in
// order: runtimes in ns (absolute models) or scores (relative models). Rows carry their
// own features (computed when the dataset was generated); the feature schema of the
// dataset must be the model's.
func (p *Predictor) PredictRows(rows []*dataset.Row) ([][]float64, error) {
	out, _, err := p.PredictRowsSpread(rows)
	return out, err
}

// PredictRowsSpread is PredictRows with an ensemble's spread of every prediction (see
// ensemble.go; nil for a single model).
func (p *Predictor) PredictRowsSpread(rows []*dataset.Row) (out, spread [][]float64, err error) {
	ks := make([]*kernel, 0, len(rows))
	for _, r := range rows {
		k, err := p.m.prepare(r)
		if err != nil {
			return nil, nil, err
		}
		ks = append(ks, k)
	}
	out = make([][]float64, len(rows))
	var nonEmpty []*kernel
	var pos []int
	for i, k := range ks {
		if k.configs() > 0 {
			nonEmpty = append(nonEmpty, k)
			pos = append(pos, i)
		} else {
			out[i] = []float64{}
		}
	}
	if len(nonEmpty) == 0 {
		return out, nil, nil
	}
	raw, spreads, err := p.run(nonEmpty)
	if err != nil {
		return nil, nil, err
	}
	if spreads != nil {
		spread = make([][]float64, len(rows))
	}
	for j, o := range raw {
		out[pos[j]] = p.m.report(o)
		if spreads != nil {
			spread[pos[j]] = spreads[j]
		}
	}
	return out, spread, nil
}

// PredictRow is PredictRows for one row; its signature is gnn/eval's Predict. (Calls with
// many rows batch better: PredictRows, PredictSource.)
func (p *Predictor) PredictRow(r *dataset.Row) ([]float64, error) {
	out, err := p.PredictRows([]*dataset.Row{r})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// PredictSource streams src through the model, calling fn with each row and its
// predictions (see PredictRows) in src's order, a batch of rows at a time; memory stays
// bounded. fn must not keep the row.
func (p *Predictor) PredictSource(src RowSource, fn func(r *dataset.Row, pred []float64) error) error {
	var rows []dataset.Row
	flush := func() error {
		ptrs := make([]*dataset.Row, len(rows))
		for i := range rows {
			ptrs[i] = &rows[i]
		}
		preds, err := p.PredictRows(ptrs)
		if err != nil {
			return err
		}
		for i := range rows {
			if err := fn(&rows[i], preds[i]); err != nil {
				return err
			}
		}
		rows = rows[:0]
		return nil
	}
	err := src.Rows(func(r *dataset.Row) error {
		rows = append(rows, r.Clone())
		if len(rows) == 4*p.batchKernels {
			return flush()
		}
		return nil
	})
	if err == nil && len(rows) > 0 {
		err = flush()
	}
	return err
}
