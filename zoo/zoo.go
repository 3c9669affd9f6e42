package zoo

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/internal/suggest"
)

// Kind says whether a model is an inference graph or a training step.
type Kind string

// The model kinds.
const (
	Inference Kind = "inference"
	Training  Kind = "training"
)

// Model is one named graph of the zoo.
type Model struct {
	Name   string // e.g. "resnet50_b32"; training variants end in "_train"
	Family string // e.g. "resnet_v1"
	Kind   Kind
	// Dynamic lists the dynamic dimensions the model's builder takes (sequence models:
	// "seq", the sequence length); WithShapes builds the model at other sizes of them.
	Dynamic []Dim
	build   func() (*hlo.Module, error)
	// buildSeq builds the model at sequence length seq, named name (nil: no "seq").
	// Its errors carry the name.
	buildSeq func(name string, seq int) (*hlo.Module, error)
	// buildBatchSeq builds the model at batch batch and sequence length seq (nil: the
	// batch is fixed); see BuildAt.
	buildBatchSeq func(name string, batch, seq int) (*hlo.Module, error)
	// buildLayer builds one layer of the model as its own program at batch and seq (nil:
	// none); see Layer.
	buildLayer func(name string, batch, seq int) (*hlo.Module, error)
}

// Build builds a fresh module named m.Name. Builds are deterministic: every call gives
// the same instructions, names, shapes and order. The module passes hlo.Verify. Errors
// carry the model name.
func (m Model) Build() (*hlo.Module, error) {
	if m.build == nil {
		return nil, fmt.Errorf("zoo: model %q has no builder", m.Name)
	}
	mod, err := m.build()
	if err != nil {
		return nil, fmt.Errorf("zoo: building %s: %w", m.Name, err)
	}
	return mod, nil
}

// variant is one size variant of a family: its inference graph and, when train is set,
// its training step.
type variant struct {
	name   string
	family string
	act    hlo.ElemType // activation type
	train  bool
	// tp adds the inference graph annotated for 8-way tensor parallelism, named with
	// TensorParallelSuffix (tp.go).
	tp    bool
	opt   optimizer
	graph graphFn
	// seq, when set, is the graph at another sequence length (the "seq" dimension),
	// seqMax its largest accepted value and seqDefault the one graph uses.
	seq        func(seq int) graphFn
	seqDefault int
	seqMax     int
	// batchSeq, when set, is the graph at another batch and sequence length (ragged.go).
	batchSeq func(batch, seq int) graphFn
	// layer, when set, is one layer of the graph as its own program (ragged.go).
	layer func(batch, seq int) graphFn
}

// withSeq declares the sequence length of v: graph at seq is at(seq); def is the length
// v's graph uses and max the largest accepted.
func (v variant) withSeq(def, max int, at func(seq int) graphFn) variant {
	v.seq, v.seqDefault, v.seqMax = at, def, max
	return v
}

// variants lists every family's variants. It constructs the list on each call: the
// package keeps no mutable state.
func variants() []variant {
	var vs []variant
	for _, f := range []func() []variant{
		mlpVariants, resnetV1Variants, resnetV2Variants, mobilenetVariants, ssdVariants,
		unetVariants, bertVariants, gpt2Variants, translationVariants, lstmVariants,
		wavernnVariants, convdrawVariants, dlrmVariants, vitVariants,
		flaxGPT2Variants, flaxBERTVariants,
	} {
		vs = append(vs, f()...)
	}
	return vs
}

// All returns every model of the zoo, sorted by name: each variant's inference graph and,
// for the variants that have one, its training step (named with a "_train" suffix) and
// its graph annotated for 8-way tensor parallelism (TensorParallelSuffix, "_tp8").
func All() []Model {
	var ms []Model
	for _, v := range variants() {
		ms = append(ms, v.model(v.name, Inference))
		if v.train {
			ms = append(ms, v.model(v.name+"_train", Training))
		}
		if v.tp {
			ms = append(ms, v.tensorParallel())
		}
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Name < ms[j].Name })
	return ms
}

func (v variant) model(name string, kind Kind) Model {
	m := Model{Name: name, Family: v.family, Kind: kind,
		build: func() (*hlo.Module, error) { return buildGraph(name, kind, v.act, v.opt, v.graph) }}
	if v.seq != nil {
		m.Dynamic = []Dim{{Name: "seq", Default: v.seqDefault, Max: v.seqMax}}
		m.buildSeq = func(name string, seq int) (*hlo.Module, error) {
			mod, err := buildGraph(name, kind, v.act, v.opt, v.seq(seq))
			if err != nil {
				return nil, fmt.Errorf("zoo: building %s at seq=%d: %w", name, seq, err)
			}
			return mod, nil
		}
	}
	if v.batchSeq != nil {
		m.buildBatchSeq = func(name string, batch, seq int) (*hlo.Module, error) {
			mod, err := buildGraph(name, kind, v.act, v.opt, v.batchSeq(batch, seq))
			if err != nil {
				return nil, fmt.Errorf("zoo: building %s at batch=%d seq=%d: %w", name, batch, seq, err)
			}
			return mod, nil
		}
	}
	if v.layer != nil && kind == Inference {
		m.buildLayer = func(name string, batch, seq int) (*hlo.Module, error) {
			mod, err := buildGraph(name, kind, v.act, v.opt, v.layer(batch, seq))
			if err != nil {
				return nil, fmt.Errorf("zoo: building a layer of %s at batch=%d seq=%d: %w", name, batch, seq, err)
			}
			return mod, nil
		}
	}
	return m
}

// Lookup returns the model called name. When there is none, the error lists up to five
// names close to it by edit distance (suggest.Closest), closest first, or, when none is
// close, where the list of models is.
func Lookup(name string) (Model, error) {
	all := All()
	names := make([]string, len(all))
	for i, m := range all {
		if m.Name == name {
			return m, nil
		}
		names[i] = m.Name
	}
	if close := suggest.Closest(name, names, 5); len(close) > 0 {
		return Model{}, fmt.Errorf("zoo: no model named %q (close: %s)", name, strings.Join(close, ", "))
	}
	return Model{}, fmt.Errorf("zoo: no model named %q, and none is close (tpucost zoo list lists them)", name)
}

// Build builds the model called name (Lookup, then Model.Build).
func Build(name string) (*hlo.Module, error) {
	m, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	return m.Build()
}

// Families returns the family names of the zoo, sorted.
func Families() []string {
	var fs []string
	for _, v := range variants() {
		if !slices.Contains(fs, v.family) {
			fs = append(fs, v.family)
		}
	}
	sort.Strings(fs)
	return fs
}
