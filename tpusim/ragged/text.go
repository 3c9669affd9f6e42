package ragged

import (
	"fmt"
	"io"
	"slices"
)

// WriteText writes r as text (tpucost sim --lengths): the batch, its padded, ideal and
// compiled ragged times, where the gap to the ideal goes, the padding's share, and one
// line per ragged kernel of the compiled program.
func (r *Report) WriteText(w io.Writer) error {
	longest := 0
	if len(r.Lengths) > 0 {
		longest = slices.Max(r.Lengths)
	}
	fmt.Fprintf(w, "%s on %s (%s): %d sequences (lengths %s), batch %d per run\n", r.Program, r.Chip, r.Simulator, len(r.Lengths), FormatLengths(r.Lengths), r.Batch)
	fmt.Fprintf(w, "padded to %d: %.1f us; ideal: %.1f us (packing %.1f us, %.0f bytes per token): %.3fx\n",
		longest, r.PaddedNs/1e3, r.IdealNs/1e3, r.PackNs/1e3, r.PackBytesPerToken, r.IdealSpeedup)
	if r.RaggedNs > 0 {
		ragged, per := 0, 0
		for _, k := range r.Kernels {
			if k.Ragged {
				ragged++
			}
			if k.Kind == "per_sequence" {
				per++
			}
		}
		fmt.Fprintf(w, "ragged (compiled): %.1f us: %.3fx; %d of %d kernels ragged (%d per-sequence)\n",
			r.RaggedNs/1e3, r.Speedup, ragged, len(r.Kernels), per)
		fmt.Fprintf(w, "gap to ideal: %.1f us = offsets %.1f + imbalance %.1f + per-sequence steps, partial tiles and alignment %.1f\n",
			(r.RaggedNs-r.IdealNs)/1e3, r.OffsetsNs/1e3, r.ImbalanceNs/1e3, r.StepsNs/1e3)
	}
	_, err := fmt.Fprintf(w, "padding: %.1f%% of the token slots, %.1f%% of the padded flops\n", 100*r.PaddingShare, 100*r.PaddingWaste)
	return err
}
