// Package ragged times a batch of sequences of different lengths two ways (after CoRa,
// Fegade et al., MLSys 2022): padded to the longest, as a dense program runs it, and
// ragged, each sequence over its own length, as CoRa's kernels run it, plus the cost of
// packing the batch.
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
//   - ragged: RaggedNs = Σ_i t(l_i)/B + PackNs. Every kernel (the attention's
//     score and context matmuls, the projections, the feed-forward layers, the
//     normalizations) runs over the real length of each sequence, its tiles padded
//     only to the hardware's alignment at that length.
//   - packing: the ragged form keeps the batch packed (the tokens of every sequence
//     back to back). Packing the padded input costs one gather of the Σ l_i real token
//     rows out of the N·L padded ones, each row the bytes per token of the program's
//     per-token inputs: what grows with the sequence length in the entry parameters,
//     (P(L) − P(l_min)) / (B·(L − l_min)) bytes. The gather is compiled and timed by the
//     same compiler and simulator (PackNs). When every length is the same the batch is
//     dense: nothing is packed, PackNs is 0 and RaggedNs = PaddedNs.
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
	"github.com/tpucost/tpucost/compiler/zoo"
	"github.com/tpucost/tpucost/tpusim"
)

// Builder builds the program at sequence length seq.
type Builder func(seq int) (*hlo.Module, error)

// Report is a ragged batch timed two ways (see the package doc).
type Report struct {
	Program   string `json:"program"`
	Chip      string `json:"chip"`
	Simulator string `json:"simulator"`
	Lengths   []int  `json:"lengths"`
	Batch     int    `json:"batch"` // B: the sequences one run of the program holds
	// PaddedNs is the batch padded to the longest length; RaggedNs each sequence at its
	// own length plus PackNs, the packing gather.
	PaddedNs float64 `json:"padded_ns"`
	RaggedNs float64 `json:"ragged_ns"`
	PackNs   float64 `json:"pack_ns"`
	Speedup  float64 `json:"speedup"` // PaddedNs / RaggedNs
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
// length), as is the order. Errors do not name the flag.
func ParseLengths(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty; want lengths L,L,... (e.g. 37,64,200,512)")
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
		rep.RaggedNs += a.ns / b
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
	rep.RaggedNs += rep.PackNs
	rep.Speedup = rep.PaddedNs / rep.RaggedNs
	rep.PaddingWaste = math.Max(0, 1-flops/(n*padded.flops/b))
	rep.PaddingShare = 1 - float64(tokens)/(n*float64(L))
	return rep, nil
}

// PackNs is the simulated time of packing a batch: one gather of tokens rows of
// rowBytes bytes (f32 words, rounded up) out of a table of slots rows, compiled with
// default configs and timed on c.
func PackNs(slots, tokens int, rowBytes float64, c tpusim.Chip) (float64, error) {
	words := int(math.Ceil(rowBytes / 4))
	b := hlo.NewBuilder("ragged_pack")
	table := b.Param(hlo.F32, slots, words)
	idx := b.Param(hlo.S32, tokens)
	m, err := b.Build(b.Gather(table, idx))
	if err != nil {
		return 0, err
	}
	p, err := compiler.Compile(m, nil, compiler.Options{Target: c.Target})
	if err != nil {
		return 0, err
	}
	r, err := tpusim.Simulate(p, c)
	if err != nil {
		return 0, err
	}
	return r.TotalNs, nil
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

// TimeZoo times the batch of the given lengths on the zoo model src, built at each
// length through its "seq" dimension (zoo.Model.WithShapes). A model without "seq", an
// HLO file, or a length above the model's bound is refused.
func TimeZoo(src string, lengths []int, c tpusim.Chip) (*Report, error) {
	m, err := zoo.Lookup(src)
	if err != nil {
		if st, statErr := os.Stat(src); statErr == nil && !st.IsDir() { // a file: named, not read
			return nil, fmt.Errorf("%s: ragged batches take a zoo model that declares seq (an HLO file's batch is not known)", src)
		}
		return nil, err
	}
	batch, err := ZooBatch(m.Name)
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
	return Time(m.Name, build, batch, lengths, c)
}
