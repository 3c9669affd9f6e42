package tune

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/tpucost/tpucost/compiler/zoo"
	"github.com/tpucost/tpucost/tpusim/ragged"
)

// RaggedReport is the result of tuning a ragged batch (RunRagged). Times are noiseless
// simulator times; the ragged times follow tpusim/ragged's model (each sequence's share
// of its length's program, plus the packing gather).
type RaggedReport struct {
	Program string `json:"program"` // the zoo model tuned (its SRC), as sim --lengths says
	Lengths []int  `json:"lengths"`
	Batch   int    `json:"batch"`
	// PaddedNs is the batch padded to the longest length with default configs;
	// DefaultRaggedNs the ragged form with default configs, TunedRaggedNs with each
	// length's tuned config (Shapes); PackNs the packing gather in both.
	PaddedNs        float64 `json:"padded_ns"`
	DefaultRaggedNs float64 `json:"default_ragged_ns"`
	TunedRaggedNs   float64 `json:"tuned_ragged_ns"`
	PackNs          float64 `json:"pack_ns"`
	Speedup         float64 `json:"speedup"`           // DefaultRaggedNs / TunedRaggedNs
	SpeedupVsPadded float64 `json:"speedup_vs_padded"` // PaddedNs / TunedRaggedNs
	PaddingWaste    float64 `json:"padding_waste"`
	// Measurements and Shapes are the shape-generic search's over the distinct lengths.
	Measurements int           `json:"measurements"`
	Strategy     string        `json:"strategy"`
	Shapes       []ShapeResult `json:"shapes"`
	HardwareS    float64       `json:"hardware_s"`
	WallS        float64       `json:"wall_s"`
}

// RunRagged tunes the ragged form of a batch of sequence lengths on the zoo model src:
// one shape-generic search (RunShapes) over the distinct lengths whose candidates are
// scored by the batch's ragged time (each length weighted by how many sequences have it)
// relative to the starting config's, then per length the fastest program confirmed
// against its default. The ragged time with the tuned configs is never above the
// default's. Refusals are RunShapes' and ragged.TimeZoo's.
func RunRagged(ctx context.Context, src string, lengths []int, opts Options) (*RaggedReport, error) {
	if len(lengths) == 0 {
		return nil, errors.New("ragged tuning: no lengths")
	}
	base, err := ragged.TimeZoo(src, lengths, opts.Chip)
	if err != nil {
		return nil, err
	}
	distinct := slices.Clone(lengths)
	slices.Sort(distinct)
	distinct = slices.Compact(distinct)
	counts := make([]int, len(distinct))
	for _, l := range lengths {
		counts[slices.Index(distinct, l)]++
	}
	rep, err := runShapes(ctx, src, zoo.ShapeList{Name: "seq", Values: distinct}, opts, false, counts)
	if err != nil {
		return nil, err
	}
	out := &RaggedReport{Program: src, Lengths: base.Lengths, Batch: base.Batch, PaddedNs: base.PaddedNs,
		DefaultRaggedNs: base.RaggedNs, PackNs: base.PackNs, PaddingWaste: base.PaddingWaste,
		Measurements: rep.Measurements, Strategy: rep.Strategy, Shapes: rep.Shapes, HardwareS: rep.HardwareS, WallS: rep.WallS}
	// The tuned ragged time: the default's, less each sequence's share of what tuning
	// saved at its length (ragged.Time sums default compiles' times the same way).
	out.TunedRaggedNs = base.RaggedNs
	for j, s := range rep.Shapes {
		out.TunedRaggedNs -= float64(counts[j]) * (s.DefaultNs - s.TunedNs) / float64(base.Batch)
	}
	if !(out.TunedRaggedNs > 0) {
		return nil, fmt.Errorf("ragged tuning %s: tuned ragged time %g ns", src, out.TunedRaggedNs)
	}
	out.Speedup = out.DefaultRaggedNs / out.TunedRaggedNs
	out.SpeedupVsPadded = out.PaddedNs / out.TunedRaggedNs
	return out, nil
}
