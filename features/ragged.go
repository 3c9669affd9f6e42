package features

import (
	"math"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
)

// # The ragged extent (gen --lengths; docs/ragged.md, docs/datasets.md)
//
// A kernel of a compiled ragged program (tpusim/ragged: after CoRa) runs over the
// sequences' own lengths, not the padded extent its graph and kernel features describe:
// the same kernel graph takes different times over different batches of lengths. A
// dataset of such kernels (gen --lengths) is its own feature set, RaggedSet: tpucost's
// own node and config features, and kernel features that are tpucost's own
// (kernelNames, KernelWidth) followed by the RaggedWidth features of the ragged extent
// (RaggedFeatures). The block is a separate, named group, so tpucost's own schema
// (SchemaVersion, KernelWidth, CurrentSchema) and every dense dataset and model are
// unchanged by it; a model trained on a RaggedSet dataset reads its widths from the
// dataset's schema (RaggedSchema), as one of an imported set does.

// RaggedSet names the feature set of ragged datasets (dataset.Provenance.FeatureSet).
// Its version suffix changes whenever a ragged feature is added, removed or redefined,
// and RaggedSchema's Version is SchemaVersion, so either change refuses old models.
const RaggedSet = "tpucost-ragged-v1"

// RaggedWidth is the number of ragged-extent features RaggedFeatures appends.
const RaggedWidth = 10

// raggedNames lists the ragged-extent features, in order (RaggedFeatures).
func raggedNames() []string {
	return []string{"ragged_packed", "ragged_per_sequence", "ragged_pad", "ragged_offsets",
		"seqs_log", "len_mean_log", "len_max_log", "len_spread", "packed_rows_log", "padding_fraction"}
}

// RaggedSchema is the feature schema of RaggedSet: CurrentSchema with the ragged-extent
// names appended to the kernel features.
func RaggedSchema() Schema {
	s := CurrentSchema()
	s.Kernel = append(s.Kernel, raggedNames()...)
	return s
}

// RaggedFeatures are the features of a kernel of kind (compiler.RaggedKind; offsets: it
// reads the offsets array) running over a batch of the given sequence lengths (each at
// least 1), with the sequences packed at align rows (compiler.PackAlign):
//
//   - ragged_packed, ragged_per_sequence, ragged_pad: the kind, one-hot (a dense kernel:
//     all three 0);
//   - ragged_offsets: 1 when the kernel reads the offsets array;
//   - seqs_log: log2(1+N), N the number of sequences;
//   - len_mean_log, len_max_log: log2(1+x) of the mean and the longest length;
//   - len_spread: the lengths' standard deviation over their mean (0 when all equal);
//   - packed_rows_log: log2(1+P), P = Σ⌈lᵢ/align⌉·align the packed rows;
//   - padding_fraction: 1 − Σlᵢ/(N·max lᵢ), the share of the padded token slots that
//     are padding.
//
// A dense kernel gets the batch's features too (its extent is the padded one; they say
// which batch its program runs). Empty lengths give all zeros.
func RaggedFeatures(kind compiler.RaggedKind, offsets bool, lengths []int, align int) []float32 {
	out := make([]float32, RaggedWidth)
	out[0] = b2f(kind == compiler.RaggedPacked)
	out[1] = b2f(kind == compiler.RaggedPerSequence)
	out[2] = b2f(kind == compiler.RaggedPadKernel)
	out[3] = b2f(offsets)
	if len(lengths) == 0 {
		return out
	}
	align = max(align, 1)
	n := float64(len(lengths))
	var sum, sq float64
	longest, packed := 0, 0
	for _, l := range lengths {
		sum += float64(l)
		sq += float64(l) * float64(l)
		longest = max(longest, l)
		packed += (l + align - 1) / align * align
	}
	mean := sum / n
	std := math.Sqrt(max(sq/n-mean*mean, 0))
	out[4] = lg(n)
	out[5] = lg(mean)
	out[6] = lg(float64(longest))
	if mean > 0 {
		out[7] = float32(std / mean)
	}
	out[8] = lg(float64(packed))
	if longest > 0 {
		out[9] = float32(1 - sum/(n*float64(longest)))
	}
	return out
}

// OfRaggedKernel is OfKernel with the ragged extent's features (RaggedFeatures) appended
// to the kernel features: a graph of the RaggedSet schema.
func OfRaggedKernel(k *compiler.Kernel, t cost.Target, kind compiler.RaggedKind, offsets bool, lengths []int) Graph {
	g := OfKernel(k, t)
	g.KernelFeats = append(g.KernelFeats[:len(g.KernelFeats):len(g.KernelFeats)], RaggedFeatures(kind, offsets, lengths, compiler.PackAlign)...)
	return g
}
