// Package ragged times a batch of sequences of different lengths three ways (after
// CoRa, Fegade et al., MLSys 2022): padded to the longest, as a dense program runs it;
// ideal, each sequence's share of the dense program at its own length plus the cost of
// packing the batch (the bound a ragged compiler could reach); and ragged, the compiled
// ragged program (compiled.go): packed storage, per-sequence kernels timed by their real
// steps, offsets reads and the megacore's split of the sequences.
//
// # The model
//
// A program built at sequence length l (Builder) runs a batch of B sequences (its batch
// dimension). The per-sequence time at length l is t(l)/B, where t(l) is the simulator's
// time of the compiled program at l with default configs: a sequence of a batch costs
// its share of the batch, launch and weight traffic included. For a batch of N sequences
// of lengths l_1..l_N, L = max l_i:
//
//   - padded: every sequence padded to L, PaddedNs = N·t(L)/B. With N = B this is the
//     dense program at seq=L, as it runs today.
//   - ideal: IdealNs = Σ_i t(l_i)/B + PackNs. Every kernel (the attention's
//     score and context matmuls, the projections, the feed-forward layers, the
//     normalizations) runs over the real length of each sequence, its tiles padded
//     only to the hardware's alignment at that length.
//   - packing: the ragged form keeps the batch packed (the tokens of every sequence
//     back to back). Packing the padded input costs one gather of the Σ l_i real token
//     rows out of the N·L padded ones, each row the bytes per token of the program's
//     per-token inputs: what grows with the sequence length in the entry parameters,
//     (P(L) − P(l_min)) / (B·(L − l_min)) bytes. The gather is compiled and timed by the
//     same compiler and simulator (PackNs). When every length is the same the batch is
//     dense: nothing is packed, PackNs is 0 and IdealNs = PaddedNs.
//   - ragged: RaggedNs, the compiled ragged program (compiled.go; TimeZoo only), plus
//     PackNs.
//
// PaddingWaste is the share of the padded batch's flops spent on padding:
// 1 − Σ_i F(l_i) / (N·F(L)), F(l) the compiled program's flops at l (kernel flops times
// their weight). For a program whose flops grow linearly with the length it is the share
// of token slots that are padding; attention's quadratic terms make it larger.
package ragged

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/zoo"
)

// Builder builds the program at sequence length seq.
type Builder func(seq int) (*hlo.Module, error)

// Report is a ragged batch timed three ways (see the package doc).
type Report struct {
	Program   string `json:"program"`
	Chip      string `json:"chip"`
	Simulator string `json:"simulator"`
	Lengths   []int  `json:"lengths"`
	Batch     int    `json:"batch"` // B: the sequences one run of the program holds
	// PaddedNs is the batch padded to the longest length; IdealNs each sequence's share
	// of the program at its own length plus PackNs, the packing gather; RaggedNs the
	// compiled ragged program plus PackNs (0 from Time, which compiles no ragged form).
	PaddedNs float64 `json:"padded_ns"`
	IdealNs  float64 `json:"ideal_ns"`
	RaggedNs float64 `json:"ragged_ns"`
	PackNs   float64 `json:"pack_ns"`
	Speedup  float64 `json:"speedup"` // PaddedNs / RaggedNs (0 without RaggedNs)
	// IdealSpeedup is PaddedNs / IdealNs.
	IdealSpeedup float64 `json:"ideal_speedup"`
	// The gap from IdealNs to RaggedNs: OffsetsNs the ragged kernels' reads of the offsets
	// array, ImbalanceNs the busiest core's excess in the per-sequence kernels split by
	// sequence, StepsNs the rest (per-sequence steps and pipeline fills, every sequence's
	// partial last tile, the packing alignment). StepsNs may be negative where a ragged
	// kernel beats the share of the batch-B kernel.
	OffsetsNs   float64 `json:"offsets_ns"`
	ImbalanceNs float64 `json:"imbalance_ns"`
	StepsNs     float64 `json:"steps_ns"`
	// Kernels is every kernel of the compiled ragged program; Pads the ops that could not
	// carry raggedness (padded to the dense extent); both empty from Time.
	Kernels []KernelReport `json:"kernels"`
	Pads    []string       `json:"pads"`
	// PaddingWaste is the share of the padded batch's flops spent on padding.
	PaddingWaste float64 `json:"padding_waste"`
	// PaddingShare is the share of the padded batch's token slots that are padding:
	// 1 − Σ l_i / (N·L).
	PaddingShare float64 `json:"padding_share"`
	// PackBytesPerToken is the bytes of per-token input each packed token row moves.
	PackBytesPerToken float64 `json:"pack_bytes_per_token"`
}

// FormatLengths writes lengths as people write a list, "37, 64, 128" (ParseLengths reads
// them back without the spaces).
func FormatLengths(lengths []int) string {
	s := make([]string, len(lengths))
	for i, l := range lengths {
		s[i] = strconv.Itoa(l)
	}
	return strings.Join(s, ", ")
}

// ParseLengths parses a --lengths value: comma-separated sequence lengths, each an
// integer in [1, zoo.MaxDimValue]; repeats are kept (a batch may hold two sequences of one
// length), as is the order. It also takes a named distribution, N lengths drawn with a
// seed (the same seed, the same lengths): uniform:LO-HI:N:SEED (uniform in [LO, HI]) or
// zipf:LO-HI:N:SEED (LO + k, P(k) ∝ (1+k)^-ZipfExponent, k <= HI-LO); or file:PATH, a
// file of lengths separated by commas, spaces or newlines. Errors do not name the flag.
func ParseLengths(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty; want lengths L,L,... (e.g. 37,64,200,512), uniform:LO-HI:N:SEED, zipf:LO-HI:N:SEED or file:PATH")
	}
	if out, ok, err := parseForm(s); ok {
		return out, err
	}
	var out []int
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("%q: an empty item (a stray comma)", s)
		}
		v, err := strconv.Atoi(item)
		if err != nil || v < 1 || v > zoo.MaxDimValue {
			return nil, fmt.Errorf("%q is not a length in [1, %d]", item, zoo.MaxDimValue)
		}
		out = append(out, v)
	}
	return out, nil
}

// Time times the batch of the given lengths with the program build makes at each length,
// which runs batch sequences at a time, on chip c (see the package doc).
func Time(name string, build Builder, batch int, lengths []int, c tpusim.Chip) (*Report, error) {
	if len(lengths) == 0 {
		return nil, fmt.Errorf("%s: no lengths", name)
	}
	if batch < 1 {
		return nil, fmt.Errorf("%s: batch %d, want >= 1", name, batch)
	}
	type at struct {
		ns, flops   float64
		paramBytes  int64
		programName string
	}
	cache := map[int]at{}
	timeAt := func(l int) (at, error) {
		if a, ok := cache[l]; ok {
			return a, nil
		}
		m, err := build(l)
		if err != nil {
			return at{}, err
		}
		var pb int64
		for _, p := range m.Entry.Parameters() {
			pb += p.Shape.Bytes()
		}
		p, err := compiler.Compile(m, nil, compiler.Options{Target: c.Target})
		if err != nil {
			return at{}, fmt.Errorf("compiling %s: %w", m.Name, err)
		}
		r, err := tpusim.Simulate(p, c)
		if err != nil {
			return at{}, fmt.Errorf("simulating %s: %w", m.Name, err)
		}
		a := at{ns: r.TotalNs, flops: programFlops(p), paramBytes: pb, programName: m.Name}
		cache[l] = a
		return a, nil
	}
	L, lmin := slices.Max(lengths), slices.Min(lengths)
	n, b := float64(len(lengths)), float64(batch)
	padded, err := timeAt(L)
	if err != nil {
		return nil, err
	}
	if !(padded.flops > 0) {
		return nil, fmt.Errorf("%s at seq=%d has no flops: nothing to compare", name, L)
	}
	rep := &Report{Program: name, Chip: c.Name, Simulator: tpusim.Version, Lengths: slices.Clone(lengths), Batch: batch,
		PaddedNs: n * padded.ns / b}
	tokens, flops := 0, 0.0
	for _, l := range lengths {
		a, err := timeAt(l)
		if err != nil {
			return nil, err
		}
		rep.IdealNs += a.ns / b
		flops += a.flops / b
		tokens += l
	}
	if lmin < L {
		small, _ := timeAt(lmin)
		rep.PackBytesPerToken = float64(padded.paramBytes-small.paramBytes) / (b * float64(L-lmin))
		if rep.PackBytesPerToken > 0 {
			if rep.PackNs, err = PackNs(len(lengths)*L, tokens, rep.PackBytesPerToken, c); err != nil {
				return nil, fmt.Errorf("%s: the packing gather: %w", name, err)
			}
		}
	}
	rep.IdealNs += rep.PackNs
	rep.IdealSpeedup = rep.PaddedNs / rep.IdealNs
	rep.Kernels, rep.Pads = []KernelReport{}, []string{}
	rep.PaddingWaste = math.Max(0, 1-flops/(n*padded.flops/b))
	rep.PaddingShare = 1 - float64(tokens)/(n*float64(L))
	return rep, nil
}

// PackNs is the simulated time of packing a batch: one gather of tokens rows of
// rowBytes bytes (f32 words, rounded up) out of a table of slots rows, compiled with
// default configs and timed on c.
func PackNs(slots, tokens int, rowBytes float64, c tpusim.Chip) (float64, error) {
	ns, _, err := gatherTime(slots, tokens, rowBytes, c)
	return ns, err
}

// gatherTime is PackNs with the gather's grid steps.
func gatherTime(slots, tokens int, rowBytes float64, c tpusim.Chip) (float64, int64, error) {
	words := int(math.Ceil(rowBytes / 4))
	b := hlo.NewBuilder("ragged_pack")
	table := b.Param(hlo.F32, slots, words)
	idx := b.Param(hlo.S32, tokens)
	m, err := b.Build(b.Gather(table, idx))
	if err != nil {
		return 0, 0, err
	}
	p, err := compiler.Compile(m, nil, compiler.Options{Target: c.Target})
	if err != nil {
		return 0, 0, err
	}
	r, err := tpusim.Simulate(p, c)
	if err != nil {
		return 0, 0, err
	}
	var steps int64
	for _, k := range p.Kernels {
		kt, err := tpusim.SimulateChoice(k.Choice, c)
		if err != nil {
			return 0, 0, err
		}
		steps += kt.Steps * int64(k.Weight)
	}
	return r.TotalNs, steps, nil
}

// programFlops is the flops one run of p executes: its kernels' flops times how often
// each runs.
func programFlops(p *compiler.Program) float64 {
	f := 0.0
	for _, k := range p.Kernels {
		f += k.Info.Flops * k.Weight
	}
	return f
}

// ZooBatch is the batch a zoo model's name carries (its "_bN" suffix, before "_train").
func ZooBatch(name string) (int, error) {
	base := strings.TrimSuffix(name, "_train")
	i := strings.LastIndex(base, "_b")
	if i < 0 {
		return 0, fmt.Errorf("%s: no _bN batch suffix in the name", name)
	}
	v, err := strconv.Atoi(base[i+2:])
	if err != nil || v < 1 {
		return 0, fmt.Errorf("%s: no _bN batch suffix in the name", name)
	}
	return v, nil
}

// LookupZoo finds the zoo model src names, or its one-layer program (zoo.Model.Layer) when
// src is MODEL + zoo.LayerSuffix ("bert_small_s128_b8.layer"). An HLO file is refused.
func LookupZoo(src string) (zoo.Model, error) {
	if base, ok := strings.CutSuffix(src, zoo.LayerSuffix); ok {
		m, err := zoo.Lookup(base)
		if err != nil {
			return zoo.Model{}, err
		}
		return m.Layer()
	}
	m, err := zoo.Lookup(src)
	if err != nil {
		if st, statErr := os.Stat(src); statErr == nil && !st.IsDir() { // a file: named, not read
			return zoo.Model{}, fmt.Errorf("%s: ragged batches take a zoo model that declares seq (an HLO file's batch is not known)", src)
		}
		return zoo.Model{}, err
	}
	return m, nil
}

// TimeZoo times the batch of the given lengths on the zoo model src (LookupZoo: a model,
// or MODEL.layer, its one-layer program), built at each
// length through its "seq" dimension (zoo.Model.WithShapes), and its compiled ragged
// form (zoo.Model.BuildRagged) when the model has one (bert_*, gpt2_*; RaggedNs 0
// otherwise). A model with a ragged form is built at batch N = len(lengths) (BuildAt):
// one run holds exactly the batch, padded, ideal and ragged alike; the others keep their
// batch (the _bN suffix) and the batch's sequences are a share of its runs. A model
// without "seq", an HLO file, or a length above the model's bound is refused.
func TimeZoo(src string, lengths []int, c tpusim.Chip) (*Report, error) {
	m, err := LookupZoo(src)
	if err != nil {
		return nil, err
	}
	build := func(l int) (*hlo.Module, error) {
		sized, err := m.WithShapes(zoo.Shapes{{Name: "seq", Value: l}})
		if err != nil {
			return nil, err
		}
		return sized.Build()
	}
	if !m.Raggable() {
		batch, err := ZooBatch(m.Name)
		if err != nil {
			return nil, err
		}
		return Time(m.Name, build, batch, lengths, c)
	}
	// A model with a ragged form runs exactly the batch of lengths: B = N.
	for _, l := range lengths {
		if _, err := m.WithShapes(zoo.Shapes{{Name: "seq", Value: l}}); err != nil {
			return nil, err
		}
	}
	n := len(lengths)
	rep, err := Time(m.Name, func(l int) (*hlo.Module, error) { return m.BuildAt(n, l) }, n, lengths, c)
	if err != nil {
		return nil, err
	}
	cr, err := timeCompiled(m, lengths, c)
	if err != nil {
		return nil, fmt.Errorf("%s: the ragged program: %w", m.Name, err)
	}
	rep.RaggedNs = cr.Ns + rep.PackNs
	rep.Speedup = rep.PaddedNs / rep.RaggedNs
	rep.OffsetsNs, rep.ImbalanceNs = cr.OffsetsNs, cr.ImbalanceNs
	rep.StepsNs = rep.RaggedNs - rep.IdealNs - rep.OffsetsNs - rep.ImbalanceNs
	rep.Kernels, rep.Pads = cr.Kernels, cr.Pads
	if rep.Pads == nil {
		rep.Pads = []string{}
	}
	return rep, nil
}
