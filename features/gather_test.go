package features

import (
	"slices"
	"testing"

	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/compiler/hlo"
)

// lookupKernel is the kernel of an embedding lookup (gather, then an activation) of rows
// indices from a [vocab, width] f32 table.
func lookupKernel(t *testing.T, vocab, width, rows int) (*hlo.Computation, *cost.KernelInfo) {
	t.Helper()
	b := hlo.NewBuilder("lookup")
	root := b.Exp(b.Gather(b.Param(hlo.F32, vocab, width), b.Param(hlo.S32, rows)))
	m, err := b.Build(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range m.Entry.Instructions {
		if in.Shape.IsArray() && in.Shape.Layout == nil {
			in.Shape.Layout = hlo.RowMajor(in.Shape.Rank())
		}
	}
	info, err := cost.Analyze(m.Entry, v4)
	if err != nil {
		t.Fatal(err)
	}
	return m.Entry, info
}

// No kernel feature grows with a gathered table: a lookup reads the rows it gathers, so
// the same lookup from a table 1,000 times bigger has the same kernel features (the
// leak of schema version 5, issue 20: in_bytes_log and in_padded_log counted the table).
// Its input bytes are the gathered rows and the indices.
func TestKernelFeaturesIgnoreTableSize(t *testing.T) {
	const width, rows = 128, 16
	fcS, small := lookupKernel(t, 100, width, rows)
	fcB, big := lookupKernel(t, 100000, width, rows)
	fs, fb := Kernel(fcS, small, v4).KernelFeats, Kernel(fcB, big, v4).KernelFeats
	names := kernelNames()
	for i := range fs {
		if fs[i] != fb[i] {
			t.Errorf("kernel feature %s: %v for a table of 100 rows, %v for 100,000", names[i], fs[i], fb[i])
		}
	}
	in := fs[slices.Index(names, "in_bytes_log")]
	if want := lg(rows*width*4 + rows*4); in != want {
		t.Errorf("in_bytes_log = %v, want %v (the gathered rows and the indices)", in, want)
	}
}
