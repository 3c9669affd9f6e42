package gnn

import (
	"errors"
	"fmt"
	"slices"

	"gorgonia.org/tensor"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/features"
	"github.com/tpucost/tpucost/nn"
)

// Model is a cost model: its architecture, its parameters, and what it needs to read
// inputs the way it was trained (normalization statistics, target statistics). A Model
// is not safe for concurrent use; Predictor serializes access to one.
type Model struct {
	Config Config
	Task   dataset.Task
	Loss   Loss
	Norm   features.Stats
	Target TargetStats
	Params nn.Params
	// Members are the other models of an ensemble (ensemble.go; nil: a single model),
	// of the same architecture, task, loss and data.
	Members []*Model
}

// NewModel returns a model with parameters initialized from seed (He-uniform weights,
// zero biases; the same seed gives the same parameters).
func NewModel(cfg Config, task dataset.Task, loss Loss, norm features.Stats, target TargetStats, seed int64) (*Model, error) {
	m := &Model{Config: cfg, Task: task, Loss: loss, Norm: norm, Target: target}
	if err := m.validate(); err != nil {
		return nil, err
	}
	m.Params = initParams(cfg, seed)
	return m, nil
}

func (m *Model) validate() error {
	if err := m.Config.Validate(); err != nil {
		return err
	}
	if err := m.Config.matchesSchema(); err != nil {
		return err
	}
	if !slices.Contains(dataset.Tasks(), m.Task) {
		return fmt.Errorf("unknown task %q", m.Task)
	}
	if !slices.Contains(Losses(), m.Loss) {
		return fmt.Errorf("unknown loss %q", m.Loss)
	}
	if m.Loss.Rank() && !m.Ranked() {
		return fmt.Errorf("the %s loss ranks the configurations of one kernel; task %s has one runtime per kernel: use mse", m.Loss, m.Task)
	}
	if m.Config.MultiTask() {
		if m.Config.Tasks[0] != m.Task {
			return fmt.Errorf("a multi-task model's task is its first head's (%s), not %s", m.Config.Tasks[0], m.Task)
		}
		for _, t := range m.Config.Tasks {
			if t.Relative() != m.Task.Relative() {
				return fmt.Errorf("a multi-task model's heads must all be relative (tile, flags) or all absolute (fusion, layout), got %s", list(m.Config.Tasks))
			}
		}
	}
	if err := m.Target.validate(); err != nil {
		return err
	}
	if m.Config.FeatureSet == "" {
		return m.Norm.Validate()
	}
	// Another feature set: its statistics carry its schema version (the checkpoint's
	// feature_schema_version, checked on load).
	return m.Norm.ValidateFor(m.Norm.SchemaVersion, m.Config.dataWidths())
}

// Relative reports whether the model's outputs are scores comparable only among the
// configurations of one kernel (rank losses) rather than runtimes in ns.
func (m *Model) Relative() bool { return m.Loss.Rank() }

// Ranked reports whether the model's rows hold several configurations measured to be
// compared (dataset.Provenance.Ranked): a relative task, or a per-node configuration
// model (TpuGraphs' layout collection: one program under many layouts per row). Its
// validation and evaluation rank each row's configurations.
func (m *Model) Ranked() bool { return m.Task.Relative() || m.Config.PerNode() }

// FlopsPerKernel and FlopsPerConfig are the forward-pass FLOPs (2 per multiply-add of the
// matrix products, which dominate; element-wise work, gathers and padding are not
// counted) of a kernel with the given number of nodes, and of each of its
// configurations. A sample's FLOPs are FlopsPerKernel / configs + FlopsPerConfig; a
// training step costs about three times the forward pass.
func (m *Model) FlopsPerKernel(nodes int) float64 {
	c := m.Config
	H := float64(c.Hidden)
	n := float64(nodes)
	f := 2 * n * float64(c.EmbedDim+c.NodeWidth) * H // input layer
	f += float64(c.Layers) * 2 * n * 3 * H * H       // GraphSAGE layers
	gk, _ := c.headInput()
	f += 2 * float64(gk) * float64(c.Head[0]) // per-kernel part of the head
	return f
}

// FlopsPerConfig: see FlopsPerKernel. A per-node configuration model (Config.PerNode)
// runs its graph layers once per configuration: each of its samples costs
// FlopsPerKernel + FlopsPerConfig.
func (m *Model) FlopsPerConfig() float64 {
	c := m.Config
	_, gc := c.headInput()
	f := 2 * float64(gc) * float64(c.Head[0])
	for i := 1; i < len(c.Head); i++ {
		f += 2 * float64(c.Head[i-1]) * float64(c.Head[i])
	}
	f += 2 * float64(c.Head[len(c.Head)-1])
	return f
}

// engine runs a model's nets, caching them by batch shape (LRU). Bucketing rounds batch
// shapes up a size ladder so a few nets serve every batch; without it every batch gets a
// net of its exact shape, built and dropped.
type engine struct {
	m        *Model
	train    bool
	bucket   bool
	capacity int
	nets     map[shape]*net
	lru      []shape // least recently used first
	builds   int     // nets built (for benchmarks and tests)
}

// defaultNetCache is the number of nets an engine keeps.
const defaultNetCache = 24

func newEngine(m *Model, train, bucket bool, capacity int) *engine {
	return &engine{m: m, train: train, bucket: bucket, capacity: capacity, nets: map[shape]*net{}}
}

// run runs batch b on the net of its shape, building it if needed.
func (e *engine) run(b *batch) (*net, []float64, float64, error) {
	n, err := e.net(b.shape)
	if err != nil {
		return nil, nil, 0, err
	}
	out, loss, err := n.run(b)
	if err != nil {
		return nil, nil, 0, err
	}
	return n, out, loss, nil
}

func (e *engine) net(s shape) (*net, error) {
	if n, ok := e.nets[s]; ok {
		i := slices.Index(e.lru, s)
		e.lru = append(append(e.lru[:i:i], e.lru[i+1:]...), s)
		return n, nil
	}
	n, err := newNet(e.m.Config, e.m.Loss, e.m.Params, s, e.train, tensor.Float32)
	if err != nil {
		return nil, err
	}
	e.builds++
	cap := e.capacity
	if !e.bucket {
		cap = 1
	}
	for len(e.lru) >= cap && len(e.lru) > 0 {
		old := e.lru[0]
		e.nets[old].close()
		delete(e.nets, old)
		e.lru = e.lru[1:]
	}
	e.nets[s] = n
	e.lru = append(e.lru, s)
	return n, nil
}

func (e *engine) close() {
	for _, n := range e.nets {
		n.close()
	}
	e.nets = map[shape]*net{}
	e.lru = nil
}

// maxBatchSamples bounds the samples of one inference batch.
const maxBatchSamples = 8192

// maxBatchNodes bounds the node copies of one inference batch of a per-node configuration
// model (which copies a kernel's nodes per configuration): at the default width, 2^17
// nodes hold 32 MiB per layer activation.
const maxBatchNodes = 1 << 17

// samplesPerBatch is the most configurations of k one inference batch takes.
func (e *engine) samplesPerBatch(k *kernel) int {
	if !e.m.Config.PerNode() {
		return maxBatchSamples
	}
	return max(1, min(maxBatchSamples, maxBatchNodes/k.nodes()))
}

// predict runs kernels through the model in batches of at most batchKernels kernels and
// maxBatchSamples samples and returns every kernel's outputs, one per configuration (the
// raw model outputs: scores, or standardized log runtimes). A kernel with more
// configurations than a batch holds is split over several batches.
func (e *engine) predict(kernels []*kernel, batchKernels int) ([][]float64, error) {
	out := make([][]float64, len(kernels))
	type ref struct{ kernel, first int }
	var items []item
	var refs []ref
	samples, nodes := 0, 0
	flush := func() error {
		if len(items) == 0 {
			return nil
		}
		b, err := newBatch(e.m.Config, items, e.bucket, 0, e.m.Loss, e.m.Target, false)
		if err != nil {
			return err
		}
		_, o, _, err := e.run(b)
		if err != nil {
			return err
		}
		for i := range items {
			copy(out[refs[i].kernel][refs[i].first:], o[b.starts[i]:b.starts[i+1]])
		}
		items, refs, samples, nodes = items[:0], refs[:0], 0, 0
		return nil
	}
	perNode := e.m.Config.PerNode()
	for ki, k := range kernels {
		nc := k.configs()
		if nc == 0 {
			return nil, fmt.Errorf("kernel %s has no configurations to score", k.key)
		}
		out[ki] = make([]float64, nc)
		if segs := segments(k.nodes(), e.m.Config.MaxSegmentNodes); len(segs) > 2 {
			all := make([]int, nc)
			for i := range all {
				all[i] = i
			}
			o, err := e.predictSegmented(k, all, segs)
			if err != nil {
				return nil, fmt.Errorf("kernel %s: %w", k.key, err)
			}
			copy(out[ki], o)
			continue
		}
		per := e.samplesPerBatch(k)
		for first := 0; first < nc; first += per {
			cfgs := make([]int, min(per, nc-first))
			for i := range cfgs {
				cfgs[i] = first + i
			}
			full := len(items) >= batchKernels || samples+len(cfgs) > maxBatchSamples || (len(items) > 0 && items[0].k.head != k.head)
			if perNode {
				full = full || nodes+len(cfgs)*k.nodes() > maxBatchNodes
			}
			if len(items) > 0 && full {
				if err := flush(); err != nil {
					return nil, err
				}
			}
			items = append(items, item{k: k, cfgs: cfgs})
			refs = append(refs, ref{ki, first})
			samples += len(cfgs)
			nodes += len(cfgs) * k.nodes()
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	for ki, o := range out {
		if !isFinite(o) {
			return nil, fmt.Errorf("kernel %s: the model produced a non-finite output", kernels[ki].key)
		}
	}
	return out, nil
}

// prepare normalizes a row for the model.
func (m *Model) prepare(r *dataset.Row) (*kernel, error) {
	if len(r.ConfigFeats) != len(r.RuntimesNs) && len(r.RuntimesNs) != 0 {
		return nil, fmt.Errorf("row %s/%s has %d config vectors and %d runtimes", r.Program, r.KernelName, len(r.ConfigFeats), len(r.RuntimesNs))
	}
	configs := r.ConfigFeats
	if m.Config.PerNode() {
		if m.Config.FeatureSet == "" {
			return nil, fmt.Errorf("row %s/%s: tpucost's own rows carry no per-node configurations, which a per-node configuration model (node_config_width %d) reads", r.Program, r.KernelName, m.Config.NodeConfigWidth)
		}
		configs = make([][]float32, len(r.ConfigFeats)) // the configurations are per node (below)
	}
	k, err := prepareKernel(&r.Graph, configs, &m.Norm, m.Config, m.Config.storedConfigWidth())
	if err != nil {
		return nil, fmt.Errorf("row %s/%s: %w", r.Program, r.KernelName, err)
	}
	k.key, k.program = r.KernelKey, r.Program
	if m.Config.MultiTask() {
		if !slices.Contains(m.Config.Tasks, r.Task) {
			return nil, fmt.Errorf("row %s/%s is a %s row; the model has heads for %s", r.Program, r.KernelName, r.Task, list(m.Config.Tasks))
		}
		k.head = string(r.Task)
	}
	if m.Config.PerNode() {
		nc, err := rowNodeConfigs(r, m.Config.NodeConfigWidth, &m.Norm.Config)
		if err != nil {
			return nil, fmt.Errorf("row %s/%s: %w", r.Program, r.KernelName, err)
		}
		if err := k.attachNodeConfigs(nc, m.Config.NodeConfigWidth); err != nil {
			return nil, fmt.Errorf("row %s/%s: %w", r.Program, r.KernelName, err)
		}
	}
	if len(r.RuntimesNs) > 0 {
		k.runtimes = slices.Clone(r.TargetTimes())
	}
	if len(r.AnalyticalNs) == len(r.ConfigFeats) {
		k.analytical = slices.Clone(r.AnalyticalNs)
	}
	return k, nil
}

// report maps raw outputs to what the model reports: ns for absolute models, the score
// for relative ones.
func (m *Model) report(out []float64) []float64 {
	if m.Relative() {
		return out
	}
	ns := make([]float64, len(out))
	for i, y := range out {
		ns[i] = m.Target.runtime(y)
	}
	return ns
}

var errNoRows = errors.New("no rows")

// rowNodeConfigs returns a row's per-node configurations (dataset.Row.ConfigNodes, each
// config vector holding one block of width features per configurable node, in that
// order: the TpuGraphs layout collection's node_config_ids and node_config_feat),
// normalized with st (fitted per node block, fitStatsFor).
func rowNodeConfigs(r *dataset.Row, width int, st *features.ColumnStats) (*nodeConfigs, error) {
	if len(r.ConfigNodes) == 0 {
		return nil, fmt.Errorf("the row has no per-node configurations, which a per-node configuration model (node_config_width %d) reads", width)
	}
	nc := &nodeConfigs{Nodes: r.ConfigNodes, Width: width, Feats: make([][]float32, len(r.ConfigFeats))}
	for i, c := range r.ConfigFeats {
		if len(c) != len(r.ConfigNodes)*width {
			return nil, fmt.Errorf("config %d has %d features for %d configurable nodes, want %d each", i, len(c), len(r.ConfigNodes), width)
		}
		nc.Feats[i] = make([]float32, len(c))
		st.Apply(nc.Feats[i], c)
	}
	return nc, nil
}
