// Package dataset stores training data for learned cost models as Arrow files: one row
// per kernel (its graph tensors and its measured configurations), plus the occurrences of
// kernels in programs, with provenance metadata. It writes shards atomically and
// resumably, reads them back as a stream with bounded memory, merges shards, and splits
// rows into train and test sets at random, by held-out program or by held-out model
// family. A second table kind, the measured-config table (measured.go: one row per
// configuration of one kernel measured on real hardware, with its median, spread, noise
// and repeat counts), shares the directory contract: lock, kind, sealed manifest,
// provenance. It does not
// compile or simulate anything: the generation driver that compiles zoo models under
// random configurations and times them on tpusim is package dataset/gen, so that readers
// (gnn, eval) do not depend on the simulator or the zoo.
package dataset

import (
	"fmt"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/features"
)

// SchemaVersion is the version of the dataset's schema (columns and provenance) that this
// tpucost writes. Version 2 records each program's model family in the provenance
// (Provenance.Families), so that reading a dataset never asks the model zoo.
const SchemaVersion = 2

// MinSchemaVersion is the oldest schema version this tpucost reads. Version 1 datasets
// read as before, except that they record no model families: a family split of one is
// refused (Provenance.Family), since the family is no longer looked up in the zoo.
const MinSchemaVersion = 1

// FeatureSetTpuGraphs is the feature set of TpuGraphs' npz files (Provenance.FeatureSet):
// their 140 node features and opcode ids, no kernel features, 24 tile config features per
// config or 18 layout config features per configurable node.
const FeatureSetTpuGraphs = "tpugraphs-v1"

// Task is what a dataset's configurations vary: the config kind of the compiler pass
// whose choices it measures (one enum for compiler, dataset and tune).
type Task = compiler.Kind

// The tasks. Tile and flags datasets are relative (many configs of one kernel, compared
// with each other); fusion and layout datasets are absolute (kernels of randomly fused or
// laid-out programs, one runtime each).
const (
	TaskTile   = compiler.KindTile
	TaskFlags  = compiler.KindFlags
	TaskFusion = compiler.KindFusion
	TaskLayout = compiler.KindLayout
)

// Tasks lists every task.
func Tasks() []Task { return []Task{TaskTile, TaskFlags, TaskFusion, TaskLayout} }

// Row is one kernel with its measured configurations. Kernels with the same key are one
// row: the one from the smallest work unit.
type Row struct {
	Program    string // the program (zoo model) of the work unit that produced the row
	Unit       int64  // that work unit's global index
	Task       Task
	KernelKey  string // structural hash of the fused computation
	KernelName string // the kernel's name in that program
	Kind       string // fusion kind: kLoop, kInput, kOutput
	Graph      features.Graph
	// Configs are canonical config strings ("tile=8x128x512;flags=db2/u1"), with one
	// feature vector (features.ConfigWidth), one runtime and one analytical estimate
	// each, in the same order.
	Configs      []string
	ConfigFeats  [][]float32
	RuntimesNs   []float64 // simulated (measured, with noise if enabled)
	AnalyticalNs []float64 // the analytical model (NaN where a source has none)
	// ConfigNodes are the configurable nodes of a dataset with per-node configs
	// (Provenance.PerNodeConfigs, e.g. TpuGraphs' layout collection): node indices into
	// Graph, in order. Each ConfigFeats vector then holds len(ConfigNodes) blocks of the
	// config width, one per node in this order. Empty in every other dataset.
	ConfigNodes []int32
	// Normalizers, when the dataset records them (Provenance.RuntimeNormalizers), hold one
	// positive divisor per config: configs of a row are compared by RuntimesNs[i] /
	// Normalizers[i] (TpuGraphs' tile collection: each config's runtime over the default
	// tile's runtime measured beside it, which cancels differences between the machines
	// that measured them). Empty in every other dataset.
	Normalizers []float64
}

// TargetTimes are the times a model learns and evaluation compares for the row's
// configs: RuntimesNs[i] / Normalizers[i] when the row has normalizers (TpuGraphs' tile
// convention, as its baselines train and score), else RuntimesNs itself (not a copy).
func (r *Row) TargetTimes() []float64 {
	if len(r.Normalizers) == 0 || len(r.Normalizers) != len(r.RuntimesNs) {
		return r.RuntimesNs
	}
	out := make([]float64, len(r.RuntimesNs))
	for i, t := range r.RuntimesNs {
		out[i] = t / r.Normalizers[i]
	}
	return out
}

// Ranked reports whether the dataset's rows hold several configurations of one kernel
// or program measured to be compared with each other (a model ranks them): the relative
// tasks (tile, flags) and datasets with per-node configurations (TpuGraphs' layout
// collection: each row is a whole program under many layouts). tpucost's own fusion and
// layout datasets are absolute: a row is a kernel measured once.
func (p Provenance) Ranked() bool { return p.Task.Relative() || p.PerNodeConfigs }

// UnlabelledError is RequireLabels' refusal: Dir holds unlabelled data and Use (a
// command: "train", "eval") needs measured runtimes.
type UnlabelledError struct {
	Dir, Use string
}

func (e *UnlabelledError) Error() string {
	return fmt.Sprintf("%s holds unlabelled data (TpuGraphs' test split: every runtime is 0): %s needs measured runtimes", e.Dir, e.Use)
}

// RequireLabels returns an *UnlabelledError when p, the provenance of the dataset in dir,
// is Unlabelled, for use, the command that needs its runtimes; nil otherwise.
func (p Provenance) RequireLabels(dir, use string) error {
	if p.Unlabelled {
		return &UnlabelledError{Dir: dir, Use: use}
	}
	return nil
}

// Measured reports whether the runtimes were measured on hardware by another source
// (Source set, e.g. TpuGraphs, and no simulator version: a tpucost export imported back
// keeps its simulator's) rather than simulated by tpucost; Chip then only says what
// tpucost's own features (of .pb modules) were computed for.
func (p Provenance) Measured() bool { return p.Source != "" && p.SimulatorVersion == "" }

// Family returns the model family of program as the dataset records it: Families[program]
// when listed, else the program itself (a family of its own). A schema 1 dataset records
// no families: for it Family is an error saying so, since the family is never looked up
// in the model zoo when reading.
func (p Provenance) Family(program string) (string, error) {
	if p.SchemaVersion < 2 {
		return "", fmt.Errorf("written with dataset schema %d, which records no model families (schema 2 and later do): regenerate it with tpucost gen, or split by program", p.SchemaVersion)
	}
	if f, ok := p.Families[program]; ok {
		return f, nil
	}
	return program, nil
}

// Samples is the number of measured configurations of the row.
func (r *Row) Samples() int { return len(r.RuntimesNs) }

// Occurrence records that a work unit's program contains a kernel Count times. Together
// with the rows it gives every program's complete kernel list (rows are deduplicated by
// key), which per-program metrics and held-out-program splits need.
type Occurrence struct {
	Unit      int64
	Program   string
	Variant   int32 // the unit's config variant of the program (0: default config)
	KernelKey string
	Count     int32
}

// Provenance is recorded in every file's schema metadata.
type Provenance struct {
	SchemaVersion    int             `json:"schema_version"`
	FeatureSchema    features.Schema `json:"feature_schema"`
	SimulatorVersion string          `json:"simulator_version"`
	Chip             string          `json:"chip"`
	VMEMBytes        int64           `json:"vmem_bytes"`
	NoiseSigma       float64         `json:"noise_sigma"`
	NoiseRuns        int             `json:"noise_runs"`
	Seed             int64           `json:"seed"`
	Task             Task            `json:"task"`
	ConfigsPerKernel int             `json:"configs_per_kernel"`
	Models           []string        `json:"models"`
	ShardIndex       int             `json:"shard_index"`
	ShardCount       int             `json:"shard_count"`
	ToolVersion      string          `json:"tool_version"`
	GeneratorVersion string          `json:"generator_version"`
	// Families is the model family of each program its writer knew one for (schema 2 on):
	// the zoo family of every zoo model a tpucost gen run built. A program absent from it
	// (an HLO file, an imported or replayed program) is a family of its own. Omitted from
	// the JSON when empty.
	Families map[string]string `json:"families,omitempty"`
	// Fusion is the fusion rule of the programs' default compile (gen.Options.Fusion):
	// omitted for the XLA-like default, so that such datasets are unchanged by it.
	Fusion string `json:"fusion,omitempty"`
	// Staging is the compiler's staging mode of a generated dataset ("on", "auto"),
	// omitted when off, so that datasets generated without staging are unchanged.
	Staging string `json:"staging,omitempty"`
	// Shapes is the --shapes list of a generated dataset over sizes of a dynamic
	// dimension ("seq=64,128,256", gen.Options.Shapes): Models then lists the sized
	// programs, MODEL@seq=V. Omitted when empty, so other datasets are unchanged by it.
	Shapes string `json:"shapes,omitempty"`
	// Lengths are the --lengths batches of a ragged dataset (gen.Options.Lengths: each a
	// sim --lengths form, "zipf:16-128:16:1"): Models then lists MODEL@lengths=SPEC, the
	// compiled ragged program of each model over each batch, and FeatureSet is
	// features.RaggedSet (the kernel features end with the ragged extent's). Omitted when
	// empty, so other datasets are unchanged by it.
	Lengths []string `json:"length_batches,omitempty"`

	// Imported data (tpucost import); every field is omitted from the JSON when empty, so
	// tpucost's own datasets are unchanged by them.
	//
	// FeatureSet names a feature schema other than tpucost's (FeatureSchema then holds
	// its names and widths; a model must refuse a set it was not trained on): "" for
	// tpucost's own features (FeatureSchema.Version is features.SchemaVersion), or
	// FeatureSetTpuGraphs, or features.RaggedSet (gen --lengths: tpucost's own features
	// with the ragged extent's appended to the kernel features).
	FeatureSet string `json:"feature_set,omitempty"`
	// PerNodeConfigs says that rows carry ConfigNodes and that a config's features are
	// one block of the config width per configurable node.
	PerNodeConfigs bool `json:"per_node_configs,omitempty"`
	// Source is where the data came from: "" (generated by tpucost) or "tpugraphs".
	Source string `json:"source,omitempty"`
	// Collection and Split locate the data in its source (TpuGraphs: "tile/xla",
	// "layout/nlp/random", ...; "train", "valid", "test"; "" when unknown).
	Collection string `json:"collection,omitempty"`
	Split      string `json:"split,omitempty"`
	// SourceFiles is the number of files imported; each row's Program and KernelName
	// name its file.
	SourceFiles int `json:"source_files,omitempty"`
	// RuntimeNormalizers says that rows carry Normalizers (Row.TargetTimes).
	RuntimeNormalizers bool `json:"runtime_normalizers,omitempty"`
	// Unlabelled says that the rows carry no measured runtimes: every runtime is 0 (the
	// test split of TpuGraphs, whose runtimes the release withholds). A model can predict
	// on such rows; training and evaluation refuse them (RequireLabels).
	Unlabelled bool `json:"unlabelled,omitempty"`

	// widths are the feature widths a file's flat metadata gave when its feature schema
	// lists no names (older or minimal files); see Widths.
	widths [3]int
}
