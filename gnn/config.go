// Package gnn is tpucost's learned cost model: a GraphSAGE network over a kernel's
// operation graph, after "A Learned Performance Model for Tensor Processing Units"
// (Kaufman et al., MLSys 2021) and the TpuGraphs baseline, built with Gorgonia.
//
// # Architecture
//
// For a kernel with N nodes (features.Graph) and its configurations c:
//
//	h⁰_v = ReLU(emb(opcode_v) W_op + x_v W_x + b₀)                      x_v: normalized node features
//	      (+ n_{v,c} W_nc in a per-node configuration model: n_{v,c} is configuration c's
//	       features of node v, zero for nodes it does not configure; everything below is
//	       then computed once per configuration)
//	hˡ_v = ReLU(hˡ⁻¹_v W_self + mean_{u∈operands(v)} hˡ⁻¹_u W_in
//	            + mean_{u∈users(v)} hˡ⁻¹_u W_out + bₗ),   l = 1..K       (= [h, mean_in, mean_out] Wₗ)
//	       then hˡ_v ← hˡ_v / √(‖hˡ_v‖² + 10⁻⁶) when L2Norm is set (the paper's GraphSAGE)
//	g    = Σ_r reduce_r(hᴷ) W_r + k W_k                                 reductions over the kernel's nodes
//	                                                                  (sum, mean, max); k: kernel features
//	z¹_c = ReLU(g + c_c W_c + b)                                        c_c: normalized config features
//	zⁱ⁺¹_c = ReLU(zⁱ_c Wᵢ + bᵢ);  ŷ_c = z_c w_out + b_out               one output per (kernel, config)
//
// The first head layer is the product of [reduce₁(hᴷ), …, k, c_c] with one weight
// matrix, split into a per-kernel part g (computed once per kernel) and a per-config
// part, which costs far fewer FLOPs when a kernel has many configurations; likewise the
// concatenations of the input and GraphSAGE layers are computed as sums of products.
// Neighbour aggregation is directional (operands and users separately) and takes at most
// Config.MaxDegree neighbours per node (evenly spaced when a node has more, like
// GraphSAGE's fixed-size neighbourhoods; the node features carry the true degree).
// Defaults (DefaultConfig): opcode embedding 32, K = 3 layers of width 64, mean and max
// reductions, a 64-64 head. Forward FLOPs (matrix products): FlopsPerKernel and
// FlopsPerConfig; about 2.0 MFLOP for a kernel of 23 nodes (the zoo's mean) plus 12.3
// kFLOP per configuration.
//
// # Outputs and losses
//
// Absolute models (loss mse) predict the standardized log runtime, ŷ ≈ (ln t − μ)/σ with
// μ, σ fitted on the training split, and report exp(σŷ + μ) ns. Relative models
// (rank-hinge, rank-logistic, listmle) output a score where lower is better (a faster
// configuration), comparable only among the configurations of one kernel. The formulas
// are in loss.go and on kernelRankLoss.
//
// # Everything else
//
// TrainDataset trains on a dataset directory's streamed rows with Adam, batches that keep a kernel's sampled configurations together,
// validation every epoch, early stopping and atomic, resumable checkpoints (Load reads
// one). Predictor scores many (kernel, config) pairs per call for the tuner and the
// predict command. Inputs are normalized with features.Stats fitted on the training
// split and saved with the model. Gorgonia graphs have fixed shapes: batches are padded
// to a ladder of bucket shapes whose graphs are cached (or, without bucketing, a graph
// is built per batch).
//
// The graph-building machinery (parameters and their file format, Adam, the custom
// Gorgonia ops, the GraphSAGE layer stack and the BLAS hook) is package nn, shared
// with the tuner's and the gym's policies; this package holds what is the cost model's:
// the architecture (Config, its parameters), the net, losses, batching, training,
// checkpoints, prediction and reports.
package gnn

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/features"
	"github.com/tpucost/tpucost/nn"
)

// Loss is a training loss.
type Loss string

// The losses.
const (
	// LossMSE is the mean squared error of the standardized log runtime (absolute models):
	// L = Σ_s (ŷ_s − (ln t_s − μ)/σ)² / S over the S samples of a batch.
	LossMSE Loss = "mse"
	// LossRankHinge is the paper's pairwise rank loss with φ(z) = max(0, 1 − z).
	LossRankHinge Loss = "rank-hinge"
	// LossRankLogistic is the paper's pairwise rank loss with φ(z) = log(1 + e^(−z)).
	LossRankLogistic Loss = "rank-logistic"
	// LossListMLE is the listwise ListMLE loss (Xia et al. 2008; the TpuGraphs layout
	// baseline's): the negative log-likelihood of the true order, fastest first, under the
	// Plackett–Luce model of the scores −ŷ (see listMLELoss).
	LossListMLE Loss = "listmle"
	// LossRankHingeGap is the pairwise hinge loss with each pair weighted by how much the
	// two runtimes differ, min(1, |ln t_i − ln t_j| / ln(1+gapScale)) (see pairWeight): a
	// near tie (two tiles within a fraction of a percent) no longer counts as much as a
	// pair of which one is 3× slower, so the model spends its capacity on the picks that
	// move a program's time.
	LossRankHingeGap Loss = "rank-hinge-gap"
)

// lossForm is what a loss compares: one sample with its target (pointwise), pairs of
// one kernel's configurations (pairwise, through φ), or a kernel's whole list (listwise).
type lossForm int

const (
	pointwise lossForm = iota
	pairwise
	listwise
)

// lossDef is one registered loss: its name, its form, for a pairwise loss its φ, and
// whether its pairs are weighted by their runtime gap (pairWeight).
type lossDef struct {
	name        Loss
	form        lossForm
	phi         phiFunc
	gapWeighted bool
}

// lossDefs is the registry of losses: Losses, ParseLoss's error, the --loss help text and
// the properties of each loss (Rank, φ, gap weighting) derive from it.
func lossDefs() []lossDef {
	return []lossDef{
		{name: LossMSE, form: pointwise},
		{name: LossRankHinge, form: pairwise, phi: hingePhi{}},
		{name: LossRankLogistic, form: pairwise, phi: logisticPhi{}},
		{name: LossListMLE, form: listwise},
		{name: LossRankHingeGap, form: pairwise, phi: hingePhi{}, gapWeighted: true},
	}
}

// def returns l's registered definition (the zero lossDef, pointwise with no φ, for a
// name that is not registered).
func (l Loss) def() lossDef {
	for _, d := range lossDefs() {
		if d.name == l {
			return d
		}
	}
	return lossDef{name: l}
}

// Losses lists the registered losses.
func Losses() []Loss {
	var out []Loss
	for _, d := range lossDefs() {
		out = append(out, d.name)
	}
	return out
}

// LossNames writes the losses as a list for help and messages: "mse, rank-hinge, ...".
func LossNames() string { return strings.Join(lossNames(), ", ") }

// list writes xs as people write a list, "tile, flags" (not Go's [tile flags]).
func list[T any](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

// orList writes xs as "tile, flags, fusion or layout".
func orList[T any](xs []T) string {
	if len(xs) < 2 {
		return list(xs)
	}
	return list(xs[:len(xs)-1]) + " or " + fmt.Sprint(xs[len(xs)-1])
}

// DefaultLosses writes DefaultLoss for the --loss help: the default of each task (of
// DefaultConfig; tasks sharing a default joined by "/", in dataset.Tasks order), then the
// per-node configuration models' (the TpuGraphs layout data's) where it differs: "rank-hinge-gap for tile/flags, mse
// for fusion/layout, listmle for per-node configuration models".
func DefaultLosses() string {
	var losses []Loss
	tasks := map[Loss][]string{}
	for _, t := range dataset.Tasks() {
		l := DefaultLoss(t, DefaultConfig())
		if tasks[l] == nil {
			losses = append(losses, l)
		}
		tasks[l] = append(tasks[l], string(t))
	}
	var parts []string
	for _, l := range losses {
		parts = append(parts, fmt.Sprintf("%s for %s", l, strings.Join(tasks[l], "/")))
	}
	perNode := DefaultConfig()
	perNode.NodeConfigWidth = 1
	if l := DefaultLoss(dataset.TaskLayout, perNode); l != DefaultLoss(dataset.TaskLayout, DefaultConfig()) {
		parts = append(parts, fmt.Sprintf("%s for per-node configuration models", l))
	}
	return strings.Join(parts, ", ")
}

// lossNames are the names of Losses, in order.
func lossNames() []string {
	var names []string
	for _, l := range Losses() {
		names = append(names, string(l))
	}
	return names
}

// ParseLoss parses a loss name.
func ParseLoss(s string) (Loss, error) {
	for _, l := range Losses() {
		if string(l) == s {
			return l, nil
		}
	}
	return "", fmt.Errorf("unknown loss %q (want one of %s)", s, strings.Join(lossNames(), ", "))
}

// Rank reports whether l is a ranking loss over one kernel's configurations (pairwise or
// listwise): a relative model.
func (l Loss) Rank() bool { return l.def().form != pointwise }

// pairwise reports whether l is one of the pairwise rank losses (φ below).
func (l Loss) pairwise() bool { return l.def().form == pairwise }

// gapWeighted reports whether l weights pairs by their runtime gap (pairWeight); its
// batches then carry each sample's log runtime where the others carry its rank.
func (l Loss) gapWeighted() bool { return l.def().gapWeighted }

// MultiTask reports whether c has a head per task (Tasks).
func (c Config) MultiTask() bool { return len(c.Tasks) > 0 }

// headPrefix is the parameter name prefix of the head of task (a multi-task model's
// "TASK/"; "" for a single-head model).
func (c Config) headPrefix(task string) string {
	if !c.MultiTask() {
		return ""
	}
	return task + "/"
}

// PerNode reports whether c is a per-node configuration model (NodeConfigWidth > 0).
func (c Config) PerNode() bool { return c.NodeConfigWidth > 0 }

// Config is a model's architecture. The zero value is not valid: start from
// DefaultConfig. Widths of the inputs come from the feature schema.
type Config struct {
	// EmbedDim is the width of the opcode embedding.
	EmbedDim int `json:"embed_dim"`
	// Hidden is the width of the node embeddings (every GraphSAGE layer).
	Hidden int `json:"hidden"`
	// Layers is K, the number of GraphSAGE layers after the input layer.
	Layers int `json:"layers"`
	// Reduce lists the per-kernel reductions, concatenated in this order.
	Reduce []nn.Reduction `json:"reduce"`
	// Head lists the widths of the feed-forward head's hidden layers (at least one).
	Head []int `json:"head"`
	// L2Norm normalizes every GraphSAGE layer's output to unit L2 norm per node.
	L2Norm bool `json:"l2_norm"`
	// MaxDegree caps the neighbours aggregated per node and direction.
	MaxDegree int `json:"max_degree"`

	// FeatureSet names the feature schema of the model's inputs: "" for tpucost's own
	// (features.CurrentSchema; the model can then also score kernels tpucost compiles), or
	// the named set of the data it was trained on (dataset.Provenance.FeatureSet, e.g.
	// TpuGraphs' "tpugraphs-v1"; such a model scores rows of that set only). ForData sets
	// it and the input widths from a dataset.
	FeatureSet string `json:"feature_set,omitempty"`

	// Features is the configuration feature set the model reads among tpucost's own
	// (features.ConfigPaper or ConfigPlan); checkpoints from before the field read every
	// feature ("plan"). Empty for a model of another FeatureSet, which reads its data's
	// whole config vector.
	Features features.ConfigSet `json:"features,omitempty"`

	// NodeConfigWidth > 0 makes a per-node configuration model (the TpuGraphs layout
	// baseline's): a configuration is one feature vector of this width per configurable
	// node (nodeConfigs), added to those nodes' input layer (other nodes get zeros), so
	// the node embeddings, and the graph embedding, are computed once per configuration.
	// 0 (the default): configurations enter only the head.
	NodeConfigWidth int `json:"node_config_width,omitempty"`

	// Tasks, when set (at least two distinct tasks), makes a multi-task model (the seed
	// design's): one graph embedding (opcode embedding, input and GraphSAGE layers)
	// shared by one head per task, parameters "TASK/head…" and "TASK/out…"; a row is
	// scored by the head of its task. Empty (the default): one head.
	Tasks []dataset.Task `json:"tasks,omitempty"`

	// MaxSegmentNodes > 0 splits kernels of more nodes into segments of at most this many
	// nodes, trained one sampled segment per step (segment.go); 0 (the default): off.
	MaxSegmentNodes int `json:"max_segment_nodes,omitempty"`

	// Prior > 0 makes the model a residual on the analytical model (tpucost's own features
	// only). A relative model's score is the network's output plus Prior · ln(analytical
	// ns), so the network learns the correction to the compiler's estimate,
	// ln(sim/analytical) up to a per-kernel constant and the scale Prior, instead of the
	// whole ranking. An absolute model's output (the standardized log runtime) is the
	// network's plus Prior · (ln(analytical ns) − μ)/σ, so it predicts
	// ln t = σ·net + Prior·ln(analytical) + (1 − Prior)·μ: at Prior 1 the analytical
	// estimate times e^(σ·net), a correction whose scale does not grow with the kernel's.
	// The analytical estimate is the row's (dataset.Row.AnalyticalNs) or, when scoring
	// compiled kernels, cost.Planned.Analytical. 0 (no prior): the output is the
	// network's alone.
	Prior float64 `json:"prior,omitempty"`

	// IgnoreKernel names kernel features of tpucost's own schema (features.Schema.Kernel)
	// the model reads as 0, whatever the data hold: a feature that helps one task and
	// misleads another (DefaultIgnoreKernel). Empty (the default): every feature is read.
	IgnoreKernel []string `json:"ignore_kernel,omitempty"`

	// Input widths, from the feature schema the model was built for; ConfigWidth is the
	// width of the Features set.
	Vocab       int `json:"vocab"`
	NodeWidth   int `json:"node_width"`
	KernelWidth int `json:"kernel_width"`
	ConfigWidth int `json:"config_width"`
}

// DefaultConfig is the paper's and the TpuGraphs baseline's size: 3 GraphSAGE layers of
// width 64, a 64-64 head, mean and max reductions, for the current feature schema, reading
// the paper's configuration features (the raw tile and flags).
func DefaultConfig() Config {
	s := features.CurrentSchema()
	return Config{
		EmbedDim: 32, Hidden: 64, Layers: 3, Reduce: []nn.Reduction{nn.ReduceMean, nn.ReduceMax}, Head: []int{64, 64},
		L2Norm: true, MaxDegree: 8, Features: features.ConfigPaper,
		Vocab: len(s.Vocab), NodeWidth: features.NodeWidth, KernelWidth: features.KernelWidth, ConfigWidth: features.PaperConfigWidth,
	}
}

// WithFeatures returns c reading configuration feature set f.
func (c Config) WithFeatures(f features.ConfigSet) Config {
	c.Features, c.ConfigWidth = f, f.Width()
	return c
}

// ignoredKernel returns the indices of the kernel features c reads as 0 (IgnoreKernel).
func (c Config) ignoredKernel() []int {
	if len(c.IgnoreKernel) == 0 {
		return nil
	}
	names := features.CurrentSchema().Kernel
	idx := make([]int, 0, len(c.IgnoreKernel))
	for _, n := range c.IgnoreKernel {
		if i := slices.Index(names, n); i >= 0 {
			idx = append(idx, i)
		}
	}
	return idx
}

// ConfigSet is the configuration feature set the model reads among tpucost's own ("plan"
// for checkpoints from before feature sets; "" for a model of another FeatureSet).
func (c Config) ConfigSet() features.ConfigSet {
	if c.FeatureSet != "" {
		return ""
	}
	if c.Features == "" {
		return features.ConfigPlan
	}
	return c.Features
}

// dataWidths are the widths of the feature vectors of the model's data: tpucost's own
// schema (whose stored config vector holds every config feature; the model reads a
// prefix), or its feature set's, the config width per configurable node for a per-node
// model.
func (c Config) dataWidths() features.Widths {
	if c.FeatureSet == "" {
		return features.CurrentWidths()
	}
	w := features.Widths{Node: c.NodeWidth, Kernel: c.KernelWidth, Config: c.ConfigWidth}
	if c.PerNode() { // ConfigWidth is 0 (ForData)
		w.Config = c.NodeConfigWidth
	}
	return w
}

// storedConfigWidth is the width of each global config vector prepareKernel is given:
// tpucost's whole stored vector, none for a per-node model of another feature set (its
// rows' config vectors are the per-node blocks), else the feature set's config width.
func (c Config) storedConfigWidth() int {
	switch {
	case c.FeatureSet == "":
		return features.ConfigWidth
	case c.PerNode():
		return 0
	}
	return c.ConfigWidth
}

// foreignVocab is the opcode vocabulary of a model whose feature set names no opcode
// vocabulary (TpuGraphs' npz files number opcodes by XLA's HloOpcode enum and store
// them as uint8): opcode ids must be below it.
const foreignVocab = 256

// ForData returns c set up for data of provenance p: for tpucost's own features (an
// empty p.FeatureSet) c itself, which must not name another set; for a named set, the
// set and the input widths of its schema (node, kernel and config features; the opcode
// vocabulary, or foreignVocab when the schema lists none), with per-node configurations
// (NodeConfigWidth = the config width, no global config features) when p has them.
// Choosing tpucost's config features (c.Features other than the default paper set) for
// another feature set is an error: the data's config vector is read as it is.
func (c Config) ForData(p dataset.Provenance) (Config, error) {
	if p.FeatureSet == "" {
		if c.FeatureSet != "" {
			return c, fmt.Errorf("the model reads feature set %s, the data has tpucost's own features", c.FeatureSet)
		}
		if p.FeatureSchema.Version != features.SchemaVersion {
			return c, fmt.Errorf("%w: the data has feature schema version %d, this tpucost computes version %d: regenerate it",
				ErrFeatureSchema, p.FeatureSchema.Version, features.SchemaVersion)
		}
		if p.PerNodeConfigs {
			return c, fmt.Errorf("the data has per-node configurations but tpucost's own features: not supported")
		}
		return c, nil
	}
	if c.FeatureSet != "" && c.FeatureSet != p.FeatureSet {
		return c, fmt.Errorf("the model reads feature set %s, the data has feature set %s", c.FeatureSet, p.FeatureSet)
	}
	if c.Features != "" && c.Features != features.ConfigPaper {
		return c, fmt.Errorf("configuration features %s are tpucost's own; the data has feature set %s, whose config features are read as they are", c.Features, p.FeatureSet)
	}
	node, kernel, config := p.Widths()
	c.FeatureSet, c.Features, c.IgnoreKernel = p.FeatureSet, "", nil
	c.NodeWidth, c.KernelWidth, c.ConfigWidth = node, kernel, config
	c.Vocab = len(p.FeatureSchema.Vocab)
	if c.Vocab == 0 {
		c.Vocab = foreignVocab
	}
	c.NodeConfigWidth = 0
	if p.PerNodeConfigs {
		c.NodeConfigWidth, c.ConfigWidth = config, 0
	}
	return c, nil
}

// ParseReductions parses a comma-separated list such as "mean,max".
func ParseReductions(s string) ([]nn.Reduction, error) {
	var out []nn.Reduction
	for _, f := range strings.Split(s, ",") {
		r := nn.Reduction(strings.TrimSpace(f))
		if !r.Valid() {
			return nil, fmt.Errorf("unknown reduction %q (want sum, mean or max)", r)
		}
		if slices.Contains(out, r) {
			return nil, fmt.Errorf("reduction %q listed twice", r)
		}
		out = append(out, r)
	}
	return out, nil
}

// Validate reports an invalid architecture.
func (c Config) Validate() error {
	var errs []error
	if c.EmbedDim <= 0 {
		errs = append(errs, fmt.Errorf("embedding width must be positive, got %d", c.EmbedDim))
	}
	errs = append(errs, intField("hidden", c.Hidden, 1, maxHidden), intField("layers", c.Layers, 0, maxLayers))
	if len(c.Reduce) == 0 {
		errs = append(errs, errors.New("at least one reduction is needed"))
	}
	for i, r := range c.Reduce {
		if !r.Valid() {
			errs = append(errs, fmt.Errorf("unknown reduction %q", r))
		}
		if slices.Contains(c.Reduce[:i], r) {
			errs = append(errs, fmt.Errorf("reduction %q listed twice", r))
		}
	}
	if len(c.Head) == 0 {
		errs = append(errs, errors.New("the head needs at least one hidden layer"))
	}
	for _, w := range c.Head {
		if w <= 0 || w > maxHidden {
			errs = append(errs, fmt.Errorf("head widths must be in [1, %d], got %s", maxHidden, list(c.Head)))
			break
		}
	}
	errs = append(errs, intField("node_config_width", c.NodeConfigWidth, 0, maxNodeConfigWidth))
	if len(c.Tasks) == 1 {
		errs = append(errs, fmt.Errorf("a multi-task model needs at least two tasks, got %s", list(c.Tasks)))
	}
	for i, t := range c.Tasks {
		if !slices.Contains(dataset.Tasks(), t) {
			errs = append(errs, fmt.Errorf("unknown task %q in the model's heads", t))
		}
		if slices.Contains(c.Tasks[:i], t) {
			errs = append(errs, fmt.Errorf("task %q has two heads", t))
		}
	}
	if c.MaxSegmentNodes != 0 {
		errs = append(errs, intField("max_segment_nodes", c.MaxSegmentNodes, MinSegmentNodes, MaxSegmentNodes))
	}
	if !(c.Prior >= 0 && c.Prior <= maxPrior) {
		errs = append(errs, fmt.Errorf("prior weight must be in [0, %g], got %g", float64(maxPrior), c.Prior))
	}
	if len(c.IgnoreKernel) > 0 {
		names := features.CurrentSchema().Kernel
		switch {
		case c.FeatureSet != "":
			errs = append(errs, fmt.Errorf("ignored kernel features %v name tpucost's own features, not feature set %q's", c.IgnoreKernel, c.FeatureSet))
		default:
			for _, n := range c.IgnoreKernel {
				if !slices.Contains(names, n) {
					errs = append(errs, fmt.Errorf("ignored kernel feature %q is not a kernel feature of schema %d", n, features.SchemaVersion))
				}
			}
		}
	}
	if c.Prior > 0 && (c.FeatureSet != "" || c.PerNode()) {
		errs = append(errs, fmt.Errorf("an analytical prior needs tpucost's own features (analytical estimates per configuration), not feature set %q", c.FeatureSet))
	}
	if c.MaxDegree <= 0 {
		errs = append(errs, fmt.Errorf("max degree must be positive, got %d", c.MaxDegree))
	}
	if c.Vocab <= 0 || c.NodeWidth <= 0 || c.KernelWidth < 0 || c.ConfigWidth < 0 {
		errs = append(errs, fmt.Errorf("input widths must be positive (vocab %d, node %d; kernel %d and config %d may be 0)", c.Vocab, c.NodeWidth, c.KernelWidth, c.ConfigWidth))
	}
	if c.ConfigWidth == 0 && !c.PerNode() {
		errs = append(errs, errors.New("the model reads no configuration features (config width 0 without per-node configurations): it could not tell configurations apart"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("model config: %w", err)
	}
	return nil
}

// matchesSchema checks that c's input widths are those of the current feature schema (a
// model of another FeatureSet has the widths of its data's schema, which the checkpoint
// records and OpenData and evaluation compare with the data's).
func (c Config) matchesSchema() error {
	if c.FeatureSet != "" {
		return nil
	}
	s := features.CurrentSchema()
	set := c.ConfigSet()
	if set.Width() == 0 {
		return fmt.Errorf("model reads unknown configuration feature set %q (want paper or plan)", set)
	}
	if c.Vocab != len(s.Vocab) || c.NodeWidth != features.NodeWidth || c.KernelWidth != features.KernelWidth || c.ConfigWidth != set.Width() {
		return fmt.Errorf("model input widths (vocab %d, node %d, kernel %d, config %d) differ from feature schema %d with the %s config set (vocab %d, node %d, kernel %d, config %d)",
			c.Vocab, c.NodeWidth, c.KernelWidth, c.ConfigWidth, features.SchemaVersion, set, len(s.Vocab), features.NodeWidth, features.KernelWidth, set.Width())
	}
	return nil
}
