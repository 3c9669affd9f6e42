package ragged

import (
	"fmt"
	"io"
	"slices"
)

// WriteText writes r as text (tpucost sim --lengths): the batch, its padded and ragged
// times, and the padding's share.
func (r *Report) WriteText(w io.Writer) error {
	longest := 0
	if len(r.Lengths) > 0 {
		longest = slices.Max(r.Lengths)
	}
	fmt.Fprintf(w, "%s on %s (%s): %d sequences (lengths %s), batch %d per run\n", r.Program, r.Chip, r.Simulator, len(r.Lengths), FormatLengths(r.Lengths), r.Batch)
	fmt.Fprintf(w, "padded to %d: %.1f us; ragged: %.1f us (packing %.1f us, %.0f bytes per token): %.3fx\n",
		longest, r.PaddedNs/1e3, r.RaggedNs/1e3, r.PackNs/1e3, r.PackBytesPerToken, r.Speedup)
	_, err := fmt.Fprintf(w, "padding: %.1f%% of the token slots, %.1f%% of the padded flops\n", 100*r.PaddingShare, 100*r.PaddingWaste)
	return err
}
