package zoo

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// withBatchSeq declares that v's graph can be built at any batch and sequence length
// (BuildAt, BuildRagged): at(batch, seq).
func (v variant) withBatchSeq(at func(batch, seq int) graphFn) variant {
	v.batchSeq = at
	return v
}

// withLayer declares that v's graph has a layer that builds as its own program (Layer):
// at(batch, seq).
func (v variant) withLayer(at func(batch, seq int) graphFn) variant {
	v.layer = at
	return v
}

// withLayerSeq declares, for a layered sequence model (bert, gpt2) whose graph at is at
// every size (at(batch, seq, false); one layer: at(batch, seq, true)), its sequence
// length (def, up to max, at v's batch), its batch and sequence length, and its layer:
// withSeq, withBatchSeq and withLayer from one function.
func (v variant) withLayerSeq(batch, def, max int, at func(batch, seq int, layerOnly bool) graphFn) variant {
	return v.withSeq(def, max, func(seq int) graphFn { return at(batch, seq, false) }).
		withBatchSeq(func(batch, seq int) graphFn { return at(batch, seq, false) }).
		withLayer(func(batch, seq int) graphFn { return at(batch, seq, true) })
}

// LayerSuffix ends the name of a model's one-layer program (Layer).
const LayerSuffix = ".layer"

// Layer is m's one-layer program: a bert_* encoder layer (hidden states [B·S, D] and the
// [B, S] mask in) or a gpt2_* decoder layer (hidden states in), the layer's hidden
// states out, with the model's sizes, activation type and weights; named m.Name +
// LayerSuffix. It builds at any batch and length as m does (BuildAt, BuildRagged: the
// hidden states packed and ragged, the mask ragged); its own Build is the model's batch
// and default length. An inference bert_* or gpt2_* model has one; other models are an
// error.
func (m Model) Layer() (Model, error) {
	if m.buildLayer == nil {
		return Model{}, fmt.Errorf("%s has no layer program (a bert_* or gpt2_* inference model has one)", m.Name)
	}
	l := m
	l.Name = m.Name + LayerSuffix
	l.buildBatchSeq, l.buildLayer = m.buildLayer, nil
	seqDefault := 0
	if i := slices.IndexFunc(m.Dynamic, func(d Dim) bool { return d.Name == "seq" }); i >= 0 {
		seqDefault = m.Dynamic[i].Default
	}
	batch := 1
	if i := strings.LastIndex(m.Name, "_b"); i >= 0 {
		if v, err := strconv.Atoi(m.Name[i+2:]); err == nil && v > 0 {
			batch = v
		}
	}
	l.build = func() (*hlo.Module, error) { return m.buildLayer(l.Name, batch, seqDefault) }
	l.buildSeq = func(name string, seq int) (*hlo.Module, error) { return m.buildLayer(name, batch, seq) }
	return l, nil
}

// Raggable reports whether m can be built at any batch and sequence length (BuildAt,
// BuildRagged): the encoder and decoder sequence models (bert_*, gpt2_*).
func (m Model) Raggable() bool { return m.buildBatchSeq != nil }

// BuildAt builds m at batch sequences of length seq, named "NAME@batch=B_seq=S" (no comma: HLO text reads one as a header attribute). The
// length is bounded like WithShapes' seq.
func (m Model) BuildAt(batch, seq int) (*hlo.Module, error) {
	if m.buildBatchSeq == nil {
		return nil, fmt.Errorf("%s: its batch is fixed (a ragged build takes a bert_* or gpt2_* model)", m.Name)
	}
	if batch < 1 || seq < 1 {
		return nil, fmt.Errorf("%s: batch=%d seq=%d, want both >= 1", m.Name, batch, seq)
	}
	if i := slices.IndexFunc(m.Dynamic, func(d Dim) bool { return d.Name == "seq" }); i >= 0 && seq > m.Dynamic[i].Max {
		return nil, fmt.Errorf("seq=%d: %s takes seq up to %d", seq, m.Name, m.Dynamic[i].Max)
	}
	mod, err := m.buildBatchSeq(m.Name, batch, seq)
	if err != nil {
		return nil, err
	}
	mod.Name = fmt.Sprintf("%s@batch=%d_seq=%d", m.Name, batch, seq)
	return mod, nil
}

// BuildRagged builds m's ragged form for a batch of sequences of the given lengths: the
// model at batch len(lengths) and seq max(lengths) whose per-token inputs carry the
// ragged attribute (hlo.Ragged): the s32 token inputs [B·S] packed (dim 0, outer 0) (a
// layer program's hidden states [B·S, D], its first parameter, likewise), a [B, S] input
// (BERT's mask) ragged along dim 1 with outer dim 0. Every length must be in
// [1, the model's seq bound].
func (m Model) BuildRagged(lengths []int) (*hlo.Module, error) {
	if len(lengths) == 0 {
		return nil, fmt.Errorf("%s: no lengths", m.Name)
	}
	for _, l := range lengths {
		if l < 1 {
			return nil, fmt.Errorf("%s: length %d, want >= 1", m.Name, l)
		}
	}
	B, S := len(lengths), slices.Max(lengths)
	mod, err := m.BuildAt(B, S)
	if err != nil {
		return nil, err
	}
	n := 0
	for _, p := range mod.Entry.Parameters() {
		d := p.Shape.Dims
		switch {
		case p.Shape.Elem == hlo.S32 && len(d) == 1 && d[0] == B*S:
			hlo.SetRagged(p, hlo.Ragged{Dim: 0, Outer: 0, Lengths: slices.Clone(lengths)})
		case p.Shape.Elem != hlo.S32 && len(d) == 2 && d[0] == B*S && p.ParamNum == 0: // a layer's hidden states
			hlo.SetRagged(p, hlo.Ragged{Dim: 0, Outer: 0, Lengths: slices.Clone(lengths)})
		case len(d) == 2 && d[0] == B && d[1] == S && p.ParamNum < 8: // inputs come before the weights
			hlo.SetRagged(p, hlo.Ragged{Dim: 1, Outer: 0, Lengths: slices.Clone(lengths)})
		default:
			continue
		}
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: no per-token input to make ragged", m.Name)
	}
	if err := hlo.Verify(mod); err != nil {
		return nil, fmt.Errorf("%s: ragged build: %w", m.Name, err)
	}
	return mod, nil
}
