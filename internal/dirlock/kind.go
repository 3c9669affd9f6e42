package dirlock

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/tpucost/tpucost/internal/atomicfile"
	"github.com/tpucost/tpucost/internal/jsonerr"
)

// Kind is what a directory tpucost writes holds. Every writer of a directory names its
// kind when it takes the directory's lock (AcquireDir, AcquireShared); the first records it
// in the directory (KindFile), and a writer of another kind is refused (*KindError).
type Kind string

// The kinds of directory tpucost writes, and the commands that write them.
const (
	Dataset      Kind = "dataset"       // tpucost gen, import tpugraphs, validate --rows (shared by the shards of a run)
	Model        Kind = "model"         // tpucost train
	Policy       Kind = "policy"        // tpucost tune train-policy
	Agent        Kind = "agent"         // tpucost gym train
	TunedConfigs Kind = "tuned-configs" // tpucost tune --models/--all --out
	Plots        Kind = "plots"         // tpucost eval --plots, validate --plots
	Export       Kind = "export"        // tpucost export tpugraphs
	Demo         Kind = "demo"          // tpucost demo
)

// Kinds lists every kind, in a fixed order.
func Kinds() []Kind {
	return []Kind{Dataset, Model, Policy, Agent, TunedConfigs, Plots, Export, Demo}
}

// KindFile is the record of a directory's kind, written (atomically, deterministic
// content: {"format":"tpucost-dir-v1","kind":...,"written_by":...}) by its first writer.
const KindFile = "tpucost-dir.json"

// kindFormat is the format of KindFile.
const kindFormat = "tpucost-dir-v1"

// Marker files by which a directory written before kinds were recorded (no KindFile) is
// recognized (InferKind). They are the libraries' own names (gnn.ModelFile,
// tune.PolicyFile, gym.AgentFile, the dataset manifests' suffix,
// tpugraphs.ExportManifestName, the demo's report); a test pins them to those.
const (
	ModelMarker    = "model.json"
	PolicyMarker   = "policy.json"
	AgentMarker    = "agent.json"
	ManifestSuffix = ".manifest.json"
	ExportMarker   = "tpucost_export.json"
	DemoMarker     = "report.json" // with a models/ subdirectory
)

// Noun is k for a person: "model directory".
func (k Kind) Noun() string {
	if k == TunedConfigs {
		return "tuned-config directory"
	}
	return string(k) + " directory"
}

// WrittenBy is the command (or commands) that write directories of kind k.
func (k Kind) WrittenBy() string {
	switch k {
	case Dataset:
		return "tpucost gen, import tpugraphs or validate --rows"
	case Model:
		return "tpucost train"
	case Policy:
		return "tpucost tune train-policy"
	case Agent:
		return "tpucost gym train"
	case TunedConfigs:
		return "tpucost tune --out"
	case Plots:
		return "tpucost eval --plots or validate --plots"
	case Export:
		return "tpucost export tpugraphs"
	case Demo:
		return "tpucost demo"
	}
	return "another program"
}

// contents is what directories of kind k hold, plural, for a person: "models".
func (k Kind) contents() string {
	switch k {
	case Dataset:
		return "datasets"
	case Policy:
		return "policies"
	case TunedConfigs:
		return "tuned configs"
	case Plots:
		return "plots"
	case Export:
		return "TpuGraphs exports"
	case Demo:
		return "the demo's outputs"
	}
	return string(k) + "s"
}

// valid reports whether k is one of Kinds.
func (k Kind) valid() bool {
	for _, x := range Kinds() {
		if k == x {
			return true
		}
	}
	return false
}

// ErrOtherKind is wrapped by the error of a writer refused because the directory holds
// another kind.
var ErrOtherKind = errors.New("directory of another kind")

// KindError is a writer of kind Want refused because Dir holds kind Have.
type KindError struct {
	Dir  string
	Have Kind
	Want Kind
}

func (e *KindError) Error() string {
	return fmt.Sprintf("%s is a %s (written by %s); %s writes %s: choose another directory",
		e.Dir, e.Have.Noun(), e.Have.WrittenBy(), e.Want.WrittenBy(), e.Want.contents())
}

func (e *KindError) Unwrap() error { return ErrOtherKind }

// record is the content of KindFile.
type record struct {
	Format    string `json:"format"`
	Kind      Kind   `json:"kind"`
	WrittenBy string `json:"written_by"`
}

// KindOf is the kind of dir: the one its KindFile records, else the one InferKind
// recognizes from its contents; "" for a directory that is missing, empty or holds
// nothing tpucost recognizes. recorded says whether it came from KindFile. A KindFile
// that cannot be read or names a kind this tpucost does not know is an error.
func KindOf(dir string) (k Kind, recorded bool, err error) {
	path := filepath.Join(dir, KindFile)
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return InferKind(dir), false, nil
	case err != nil:
		return "", false, fmt.Errorf("reading the directory's kind: %w", err)
	}
	var r record
	if err := jsonerr.Unmarshal(path, b, &r); err != nil {
		return "", false, err
	}
	if r.Format != kindFormat || !r.Kind.valid() {
		return "", false, fmt.Errorf("%s: records kind %q (format %q), which this tpucost does not write (it writes %s %s): choose another directory",
			path, r.Kind, r.Format, kindFormat, kindList())
	}
	return r.Kind, true, nil
}

func kindList() string {
	var s []string
	for _, k := range Kinds() {
		s = append(s, string(k))
	}
	return strings.Join(s, ", ")
}

// InferKind recognizes a directory written before tpucost recorded kinds, by the files
// its writers leave: model.json a model, policy.json a policy, agent.json an agent,
// tpucost_export.json an export, a dataset manifest (*.manifest.json) a dataset,
// report.json beside a models/ subdirectory the demo, and PNG files alone plots. Anything
// else (a tuned-config directory among them: its files are configs named by program) is
// "": the first writer claims it.
func InferKind(dir string) Kind {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	names := map[string]bool{}
	pngs, others := 0, 0
	for _, e := range ents {
		name := e.Name()
		names[name] = true
		switch {
		case e.IsDir(), strings.HasSuffix(name, Suffix), strings.HasSuffix(name, atomicfile.TmpSuffix):
		case strings.HasSuffix(name, ".png"):
			pngs++
		default:
			others++
		}
	}
	switch {
	case names[ModelMarker]:
		return Model
	case names[PolicyMarker]:
		return Policy
	case names[AgentMarker]:
		return Agent
	case names[ExportMarker]:
		return Export
	}
	for name := range names {
		if strings.HasSuffix(name, ManifestSuffix) {
			return Dataset
		}
	}
	if names[DemoMarker] && names["models"] {
		return Demo
	}
	if pngs > 0 && others == 0 {
		return Plots
	}
	return ""
}

// checkKind refuses dir for a writer of kind want if it holds another kind.
func checkKind(dir string, want Kind) (recorded bool, err error) {
	have, recorded, err := KindOf(dir)
	if err != nil {
		return false, err
	}
	if have != "" && have != want {
		return recorded, &KindError{Dir: dir, Have: have, Want: want}
	}
	return recorded, nil
}

// writeKind records k in dir (atomically, under a temporary name of this writer's own:
// the shards of a dataset may record it at the same time, with the same content).
func writeKind(dir string, k Kind) error {
	b, err := json.Marshal(record{Format: kindFormat, Kind: k, WrittenBy: k.WrittenBy()})
	if err != nil {
		return err
	}
	path := filepath.Join(dir, KindFile)
	f, err := os.CreateTemp(dir, KindFile+".*"+atomicfile.TmpSuffix) // a name of this writer's own
	if err != nil {
		return fmt.Errorf("recording the directory's kind: %w", err)
	}
	tmp := f.Name()
	f.Close()
	if err := atomicfile.WriteVia(path, tmp, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	}); err != nil {
		return fmt.Errorf("recording the directory's kind: %w", err)
	}
	return nil
}

// removeBareKind removes dir's KindFile if the directory holds nothing else but lock
// files: a writer that was refused or interrupted before it wrote anything leaves no
// claim behind.
func removeBareKind(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if name := e.Name(); name != KindFile && !strings.HasSuffix(name, Suffix) {
			return
		}
	}
	_ = os.Remove(filepath.Join(dir, KindFile))
}
