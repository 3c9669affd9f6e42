package tpusim

import (
	"strings"
	"testing"

	"github.com/tpucost/tpucost/zoo"
)

// TestReportSaysWhenAKernelRunsInPieces: a kernel whose plan streams its windows in
// pieces (the tiler's last resort, cost.Plan.Chunks) is reported with pieces, and takes
// longer than whole windows (each piece pays a step's overhead and DMA issue); a kernel
// with whole windows reports none. compiler/cost TestSmallestTileStreamsOversizedWindows
// checks when the tiler chooses pieces.
func TestReportSaysWhenAKernelRunsInPieces(t *testing.T) {
	c := preset(t, "v4")
	m, err := zoo.Build("mlp_96x2_b1")
	if err != nil {
		t.Fatal(err)
	}
	p := compileDefault(t, m, c, nil)
	whole, err := Simulate(p, c)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range whole.Kernels {
		if k.Pieces != 0 {
			t.Fatalf("kernel %s: pieces %d with whole windows", k.Name, k.Pieces)
		}
	}
	const pieces = 4
	k := p.Kernels[0]
	k.Choice.Plan.Chunks = pieces
	k.Choice.Plan.Steps *= pieces
	k.Choice.Plan.InBytesPerStep /= pieces
	got, err := Simulate(p, c)
	if err != nil {
		t.Fatal(err)
	}
	if got.Kernels[0].Pieces != pieces {
		t.Errorf("kernel %s: pieces %d, want %d", got.Kernels[0].Name, got.Kernels[0].Pieces, pieces)
	}
	var text strings.Builder
	if err := got.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if want := "in 4 pieces"; !strings.Contains(text.String(), want) {
		t.Errorf("text report does not say %q:\n%s", want, text.String())
	}
	if got.Kernels[0].SimNs <= whole.Kernels[0].SimNs {
		t.Errorf("kernel %s in %d pieces: %.0f ns, whole windows %.0f ns: want slower", k.Name, pieces, got.Kernels[0].SimNs, whole.Kernels[0].SimNs)
	}
}
