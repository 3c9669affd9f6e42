package zoo

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tpucost/tpucost/compiler/hlo"
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
	opt    optimizer
	graph  graphFn
	// seq, when set, is the graph at another sequence length (the "seq" dimension),
	// seqMax its largest accepted value and seqDefault the one graph uses.
	seq        func(seq int) graphFn
	seqDefault int
	seqMax     int
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
	} {
		vs = append(vs, f()...)
	}
	return vs
}

// All returns every model of the zoo, sorted by name: each variant's inference graph and,
// for the variants that have one, its training step (named with a "_train" suffix).
func All() []Model {
	var ms []Model
	for _, v := range variants() {
		ms = append(ms, v.model(v.name, Inference))
		if v.train {
			ms = append(ms, v.model(v.name+"_train", Training))
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
	return m
}

// Lookup returns the model called name. When there is none, the error lists a few of the
// closest names.
func Lookup(name string) (Model, error) {
	all := All()
	for _, m := range all {
		if m.Name == name {
			return m, nil
		}
	}
	type cand struct {
		name string
		d    int
	}
	cs := make([]cand, 0, len(all))
	for _, m := range all {
		d := editDistance(name, m.Name)
		if strings.HasPrefix(m.Name, name) || (len(name) >= 3 && strings.Contains(m.Name, name)) {
			d = min(d, 1+len(m.Name)-len(name)) // a fragment of a name is a close match
		}
		cs = append(cs, cand{m.Name, d})
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d })
	var close []string
	for _, c := range cs[:min(5, len(cs))] {
		close = append(close, c.name)
	}
	return Model{}, fmt.Errorf("zoo: no model named %q (close: %s)", name, strings.Join(close, ", "))
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

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
