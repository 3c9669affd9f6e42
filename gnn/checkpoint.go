package gnn

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/tpucost/tpucost/internal/atomicfile"
	"github.com/tpucost/tpucost/internal/jsonerr"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/features"
	"github.com/tpucost/tpucost/internal/sealed"
	"github.com/tpucost/tpucost/nn"
)

// Checkpoint layout: a directory holding
//
//	model.json            the Checkpoint below (architecture, feature schema, normalization,
//	                      training settings and history, what it was trained on) naming
//	                      the other files with their SHA-256
//	weights-eNNNN.bin     the best epoch's parameters (what Predictor loads)
//	state-eNNNN.bin       the last epoch's parameters and Adam moments (what resuming loads)
//	seen-keys-HHHH.bin    the kernels trained or validated on (see TrainedOn), named by a
//	                      prefix of its SHA-256
//
// Tensor files use the format of writeTensors (little-endian float32 with a small header).
// Every file is verified when a checkpoint is read: the others against the SHA-256
// recorded in model.json, and model.json against its own Checksum field (the SHA-256 of
// the file with that field's value empty). A mismatch is an error naming the file. A
// save writes the other files under new names, then model.json through a temporary file
// renamed into place (the commit point), then removes files model.json no longer names:
// a crash at any point leaves the previous or the new checkpoint, never a mix.

// checkpointFormat identifies model.json's format.
const checkpointFormat = "tpucost-gnn-checkpoint/2"

// ModelFile is the name of a checkpoint's JSON file.
const ModelFile = "model.json"

// ErrFeatureSchema is wrapped by errors loading a checkpoint built for another feature
// schema than this build's.
var ErrFeatureSchema = errors.New("feature schema mismatch")

// FileRef names a tensor file of a checkpoint.
type FileRef struct {
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
	Epoch  int    `json:"epoch"`
}

// Epoch is one epoch of the training history.
type Epoch struct {
	Epoch       int        `json:"epoch"` // 1-based
	TrainLoss   float64    `json:"train_loss"`
	Val         *ValResult `json:"val,omitempty"` // nil without validation rows
	Kernels     int        `json:"kernels"`       // training kernels seen
	Samples     int        `json:"samples"`       // training (kernel, config) samples seen
	WallS       float64    `json:"wall_s"`        // wall time of the epoch, validation included
	KernelsPerS float64    `json:"kernels_per_s"`
	GraphBuilds int        `json:"graph_builds"` // Gorgonia graphs built for training batches this epoch
}

// UnmarshalJSON reads an epoch, also as checkpoints before the JSON vocabulary rule wrote
// it ("seconds", "kernels_per_sec").
func (e *Epoch) UnmarshalJSON(b []byte) error {
	type plain Epoch
	var v struct {
		plain
		Seconds       *float64 `json:"seconds"`
		KernelsPerSec *float64 `json:"kernels_per_sec"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return err
	}
	*e = Epoch(v.plain)
	if v.Seconds != nil {
		e.WallS = *v.Seconds
	}
	if v.KernelsPerSec != nil {
		e.KernelsPerS = *v.KernelsPerSec
	}
	return nil
}

// Settings are the training settings a checkpoint records (and a resumed run reuses).
type Settings struct {
	Epochs        int     `json:"epochs"`
	BatchKernels  int     `json:"batch_kernels"`
	MaxConfigs    int     `json:"max_configs"`
	LR            float64 `json:"lr"`
	Seed          int64   `json:"seed"`
	Patience      int     `json:"patience"`
	ShuffleBuffer int     `json:"shuffle_buffer"`
	Bucketing     bool    `json:"bucketing"`
	// Steps is the step budget Epochs came from (0: Epochs was given).
	Steps int `json:"steps,omitempty"`
	// StepsPerEpoch is the estimated number of batches per epoch, the schedule's unit.
	StepsPerEpoch int `json:"steps_per_epoch,omitempty"`
	// Schedule is the learning-rate schedule ("": constant, checkpoints from before
	// schedules).
	Schedule Schedule `json:"schedule,omitempty"`
}

// Meta describes the data a model was trained on (informational, from the caller).
type Meta struct {
	Data         string  `json:"data,omitempty"`
	Split        string  `json:"split,omitempty"`
	TestFraction float64 `json:"test_fraction,omitempty"`
	ValFraction  float64 `json:"val_fraction,omitempty"`
	SplitSeed    int64   `json:"split_seed,omitempty"`
	Chip         string  `json:"chip,omitempty"`
	VMEMBytes    int64   `json:"vmem_bytes,omitempty"`
	Simulator    string  `json:"simulator,omitempty"`
	// InitFrom is the checkpoint a fine-tuned model's weights started from
	// (TrainOptions.Init), as given.
	InitFrom string `json:"init_from,omitempty"`
}

// DatasetRef is a dataset a model was trained on.
type DatasetRef struct {
	// Path is the directory: in model.json, relative to the checkpoint directory
	// (slash-separated) when it can be, so that a model and its data move together.
	Path string `json:"path"`
	// Fingerprint is dataset.Fingerprint of the directory when the model was trained.
	Fingerprint string `json:"fingerprint"`
}

// TrainedOn records what a model has seen, so that evaluation never scores it on its own
// training data.
type TrainedOn struct {
	Datasets []DatasetRef `json:"datasets,omitempty"` // empty when trained on rows given directly
	// TrainPrograms are the programs of the training and validation rows (a row's program
	// is the first program the dataset found its kernel in), sorted.
	TrainPrograms []string `json:"train_programs"`
	// SeenKernels is the number of distinct kernel keys of the training and validation
	// rows; SeenKeys names the file listing their KernelIDs.
	SeenKernels int     `json:"seen_kernels"`
	SeenKeys    FileRef `json:"seen_keys"`
}

// Checkpoint is the content of model.json.
type Checkpoint struct {
	Format string `json:"format"`
	// Checksum is the SHA-256 (hex) of model.json with this field's value empty.
	Checksum             string          `json:"checksum"`
	Task                 dataset.Task    `json:"task"`
	Loss                 Loss            `json:"loss"`
	Config               Config          `json:"config"`
	FeatureSchemaVersion int             `json:"feature_schema_version"`
	FeatureSchema        features.Schema `json:"feature_schema"`
	Normalization        features.Stats  `json:"normalization"`
	Target               TargetStats     `json:"target"`
	Metric               string          `json:"metric"`
	Settings             Settings        `json:"settings"`
	Meta                 Meta            `json:"meta"`
	Epochs               int             `json:"epochs"`     // completed
	BestEpoch            int             `json:"best_epoch"` // 0: none
	Stopped              string          `json:"stopped,omitempty"`
	StopReason           string          `json:"stop_reason,omitempty"`
	History              []Epoch         `json:"history"`
	TrainedOn            *TrainedOn      `json:"trained_on,omitempty"` // nil for a model saved by Model.Save
	Weights              FileRef         `json:"weights"`
	State                *FileRef        `json:"state,omitempty"`
}

// checkSchema refuses a checkpoint built for another feature schema than this build's
// (for tpucost's own features) or whose recorded schema does not describe its inputs (a
// model of another feature set, Config.FeatureSet).
func (c *Checkpoint) checkSchema(dir string) error {
	if set := c.Config.FeatureSet; set != "" {
		s := c.FeatureSchema
		w := c.Config.dataWidths()
		switch {
		case c.FeatureSchemaVersion != s.Version || c.Normalization.SchemaVersion != s.Version:
			return fmt.Errorf("%w: model %s records feature set %s with schema version %d, its feature schema has version %d and its normalization version %d",
				ErrFeatureSchema, dir, set, c.FeatureSchemaVersion, s.Version, c.Normalization.SchemaVersion)
		case len(s.Node) != w.Node || len(s.Kernel) != w.Kernel || len(s.Config) != w.Config:
			return fmt.Errorf("%w: model %s reads %d node, %d kernel and %d config features, its feature set %s has %d, %d and %d",
				ErrFeatureSchema, dir, w.Node, w.Kernel, w.Config, set, len(s.Node), len(s.Kernel), len(s.Config))
		}
		return nil
	}
	if c.FeatureSchemaVersion != features.SchemaVersion {
		return fmt.Errorf("%w: model %s was trained on feature schema version %d, but this tpucost computes version %d: retrain it on data generated by this version",
			ErrFeatureSchema, dir, c.FeatureSchemaVersion, features.SchemaVersion)
	}
	if !reflect.DeepEqual(c.FeatureSchema, features.CurrentSchema()) {
		return fmt.Errorf("%w: model %s records feature schema version %d with different feature names or vocabulary than this build's: retrain it",
			ErrFeatureSchema, dir, c.FeatureSchemaVersion)
	}
	return nil
}

// CheckData refuses data of provenance p that the checkpoint's model cannot read: another
// feature set or, for tpucost's own features, another feature schema version; for a
// model of another feature set, a schema with other names or vocabulary, or data with or
// without per-node configurations unlike the model. The error wraps ErrFeatureSchema
// and names both.
func (c *Checkpoint) CheckData(dir string, p dataset.Provenance) error {
	name := func(set string) string {
		if set == "" {
			return fmt.Sprintf("tpucost's own (version %d)", c.FeatureSchemaVersion)
		}
		return set
	}
	switch set := c.Config.FeatureSet; {
	case set != p.FeatureSet:
		return fmt.Errorf("%w: the model reads feature set %s, dataset %s has feature set %s",
			ErrFeatureSchema, name(set), dir, name(p.FeatureSet))
	case set == "" && p.FeatureSchema.Version != c.FeatureSchemaVersion:
		return fmt.Errorf("%w: the model was trained on feature schema version %d, dataset %s has version %d: regenerate the data with this tpucost",
			ErrFeatureSchema, c.FeatureSchemaVersion, dir, p.FeatureSchema.Version)
	case set != "" && !reflect.DeepEqual(c.FeatureSchema, p.FeatureSchema):
		return fmt.Errorf("%w: the model's feature set %s and dataset %s's differ in their feature names or vocabulary", ErrFeatureSchema, set, dir)
	case c.Config.PerNode() != p.PerNodeConfigs && set != "":
		return fmt.Errorf("%w: the model reads per-node configurations: %v, dataset %s has them: %v", ErrFeatureSchema, c.Config.PerNode(), dir, p.PerNodeConfigs)
	}
	return nil
}

// saveCheckpoint writes c with the best parameters and (if state is non-nil) the
// training state to dir, atomically (see the layout above).
func saveCheckpoint(dir string, c *Checkpoint, best nn.Params, bestEpoch int, state nn.Params, step int64, seen KeySet) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("saving checkpoint: %w", err)
	}
	if c.TrainedOn != nil {
		ref, err := writeKeysFile(dir, seen)
		if err != nil {
			return err
		}
		c.TrainedOn.SeenKeys, c.TrainedOn.SeenKernels = ref, len(seen)
	}
	ref, err := writeTensorFile(dir, fmt.Sprintf("weights-e%04d.bin", bestEpoch), 0, best)
	if err != nil {
		return err
	}
	ref.Epoch = bestEpoch
	c.Weights = ref
	c.State = nil
	if state != nil {
		sref, err := writeTensorFile(dir, fmt.Sprintf("state-e%04d.bin", c.Epochs), step, state)
		if err != nil {
			return err
		}
		sref.Epoch = c.Epochs
		c.State = &sref
	}
	c.Format = checkpointFormat
	c.Checksum = ""
	data, err := sealed.Marshal(c)
	if err != nil {
		return fmt.Errorf("saving checkpoint: %w", err)
	}
	c.Checksum = sealed.Sum(data)
	if err := atomicfile.WriteFile(filepath.Join(dir, ModelFile), data); err != nil {
		return fmt.Errorf("saving checkpoint: %w", err)
	}
	// Remove files the new model.json does not name.
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // the checkpoint is complete; stale files are harmless
	}
	keep := map[string]bool{}
	for _, ref := range c.files() {
		keep[ref.File] = true
	}
	for _, e := range entries {
		name := e.Name()
		if (strings.HasPrefix(name, "weights-e") || strings.HasPrefix(name, "state-e") || strings.HasPrefix(name, "seen-keys-")) &&
			strings.HasSuffix(name, ".bin") && !keep[name] {
			os.Remove(filepath.Join(dir, name))
		}
	}
	return nil
}

// files lists the files model.json names.
func (c *Checkpoint) files() []FileRef {
	refs := []FileRef{c.Weights}
	if c.State != nil {
		refs = append(refs, *c.State)
	}
	if c.TrainedOn != nil {
		refs = append(refs, c.TrainedOn.SeenKeys)
	}
	return refs
}

// writeTensorFile writes tensors to dir/name atomically and returns its reference.
func writeTensorFile(dir, name string, step int64, ts nn.Params) (FileRef, error) {
	var buf bytes.Buffer
	if err := nn.WriteTensors(&buf, step, ts); err != nil {
		return FileRef{}, fmt.Errorf("saving checkpoint %s: %w", name, err)
	}
	sum := sha256.Sum256(buf.Bytes())
	if err := atomicfile.WriteFile(filepath.Join(dir, name), buf.Bytes()); err != nil {
		return FileRef{}, fmt.Errorf("saving checkpoint: %w", err)
	}
	return FileRef{File: name, SHA256: hex.EncodeToString(sum[:])}, nil
}

// readRefFile reads a file model.json names and verifies its SHA-256.
func readRefFile(dir string, ref FileRef) ([]byte, error) {
	if ref.File == "" || ref.File != filepath.Base(ref.File) {
		return nil, fmt.Errorf("checkpoint %s: bad file name %q in %s", dir, ref.File, ModelFile)
	}
	path := filepath.Join(dir, ref.File)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	if sealed.Sum(data) != ref.SHA256 {
		return nil, fmt.Errorf("checkpoint %s: %s is corrupt (checksum mismatch with %s)", dir, path, ModelFile)
	}
	return data, nil
}

// readTensorFile reads and verifies a referenced tensor file.
func readTensorFile(dir string, ref FileRef) (int64, nn.Params, error) {
	data, err := readRefFile(dir, ref)
	if err != nil {
		return 0, nil, err
	}
	step, ts, err := nn.ReadTensors(bytes.NewReader(data))
	if err != nil {
		return 0, nil, fmt.Errorf("checkpoint %s: %s: %w", dir, ref.File, err)
	}
	return step, ts, nil
}

// ReadCheckpoint reads model.json of the checkpoint in dir and verifies it and every file
// it names (weights, training state, seen keys) against their checksums. It refuses a
// checkpoint built for another feature schema with an error wrapping ErrFeatureSchema.
func ReadCheckpoint(dir string) (*Checkpoint, error) {
	c, err := readCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	for _, ref := range c.files() {
		if _, err := readRefFile(dir, ref); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// readCheckpoint reads and checks model.json of dir (not the files it names).
func readCheckpoint(dir string) (*Checkpoint, error) {
	path := filepath.Join(dir, ModelFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("loading model: %w", err)
	}
	if err := sealed.Verify(data); err != nil {
		var probe struct {
			Format string `json:"format"`
		}
		if errors.Is(err, sealed.ErrNoChecksum) && json.Unmarshal(data, &probe) == nil && probe.Format != "" && probe.Format != checkpointFormat {
			return nil, fmt.Errorf("loading model %s: format %q, want %q: retrain it with this tpucost", dir, probe.Format, checkpointFormat)
		}
		return nil, fmt.Errorf("loading model: %s is corrupt: %w", path, err)
	}
	var c Checkpoint
	if err := jsonerr.Unmarshal(path, data, &c); err != nil {
		return nil, fmt.Errorf("loading model %s: %w", dir, err)
	}
	if c.Format != checkpointFormat {
		return nil, fmt.Errorf("loading model %s: format %q, want %q", dir, c.Format, checkpointFormat)
	}
	if err := c.checkSchema(dir); err != nil {
		return nil, err
	}
	return &c, nil
}

// Load loads the best model of the checkpoint in dir, verifying every file (see
// ReadCheckpoint). It refuses a checkpoint built for another feature schema with an error
// wrapping ErrFeatureSchema.
func Load(dir string) (*Model, *Checkpoint, error) {
	c, err := ReadCheckpoint(dir)
	if err != nil {
		return nil, nil, err
	}
	m, err := c.model()
	if err != nil {
		return nil, nil, fmt.Errorf("loading model %s: %w", dir, err)
	}
	_, ts, err := readTensorFile(dir, c.Weights)
	if err != nil {
		return nil, nil, err
	}
	if err := m.Params.CopyFrom(ts); err != nil {
		return nil, nil, fmt.Errorf("loading model %s: weights do not fit the architecture: %w", dir, err)
	}
	if err := loadMembers(dir, m, c); err != nil {
		return nil, nil, fmt.Errorf("loading model %s: %w", dir, err)
	}
	return m, c, nil
}

// model builds the (zero-initialized) model c describes.
func (c *Checkpoint) model() (*Model, error) {
	m := &Model{Config: c.Config, Task: c.Task, Loss: c.Loss, Norm: c.Normalization, Target: c.Target}
	if err := m.validate(); err != nil {
		return nil, err
	}
	m.Params = initParams(c.Config, 0)
	return m, nil
}

// Save writes m alone (no training state or history) as a checkpoint in dir: what a
// Predictor needs.
func (m *Model) Save(dir string, meta Meta) error {
	if m.Config.FeatureSet != "" {
		return fmt.Errorf("saving model: a model of feature set %s is saved by training (it records its data's feature schema)", m.Config.FeatureSet)
	}
	c := &Checkpoint{
		Task: m.Task, Loss: m.Loss, Config: m.Config,
		FeatureSchemaVersion: features.SchemaVersion, FeatureSchema: features.CurrentSchema(),
		Normalization: m.Norm, Target: m.Target, Metric: m.Metric(), Meta: meta,
	}
	return saveCheckpoint(dir, c, m.Params, 0, nil, 0, nil)
}

// TargetMismatch compares the target the model's training data was simulated for with
// another (a dataset's, or the chip a prediction is asked for; an empty simulator is not
// compared): the first differing field ("chip", "vmem_bytes" or "simulator") and both
// values, or "" when they agree. Fields the model does not record are not compared.
func (m Meta) TargetMismatch(chip string, vmemBytes int64, simulator string) (field, model, other string) {
	switch {
	case m.Chip != "" && m.Chip != chip:
		return "chip", m.Chip, chip
	case m.VMEMBytes != 0 && m.VMEMBytes != vmemBytes:
		return "vmem_bytes", fmt.Sprint(m.VMEMBytes), fmt.Sprint(vmemBytes)
	case m.Simulator != "" && simulator != "" && m.Simulator != simulator:
		return "simulator", m.Simulator, simulator
	}
	return "", "", ""
}

// DefaultTarget is the chip name and VMEM size (MiB, 0 when not recorded) the model's
// training data was simulated for: what predict uses unless told otherwise.
func (m Meta) DefaultTarget() (chip string, vmemMiB int) {
	return m.Chip, int(m.VMEMBytes >> 20)
}
