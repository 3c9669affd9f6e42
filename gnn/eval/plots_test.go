package eval

import (
	"fmt"
	"image/png"
	"os"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// manyPrograms is a report of n programs with errors 0.1·i %.
func manyPrograms(n int) *Report {
	rep := &Report{Task: "tile", Split: "program", Ranked: true, Analytical: &Metrics{}}
	for i := range n {
		a := 5 + 0.05*float64(i)
		rep.PerProgram = append(rep.PerProgram, ProgramRow{Program: fmt.Sprintf("program_%03d_b32", i), Kernels: 3, Learned: 0.1 * float64(i), Analytical: &a})
	}
	return rep
}

// TestProgramsPlotStaysReadable: with 116 programs (the held-out real set) programs.png
// draws the worst maxProgramBars as sorted horizontal bars above a histogram of all, in a
// page-sized image (it was one vertical bar per program, 41 inches wide).
func TestProgramsPlotStaysReadable(t *testing.T) {
	// pageInches bounds each side of the image: a chart one can read on a screen.
	const pageInches = 16
	dir := t.TempDir()
	rep := manyPrograms(116)
	path, err := programPlot(dir, rep)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	dpi := float64(vgimg.DefaultDPI)
	if w, h := float64(cfg.Width)/dpi, float64(cfg.Height)/dpi; w > pageInches || h > pageInches {
		t.Errorf("programs.png is %.1f x %.1f inches, want at most %d x %d", w, h, pageInches, pageInches)
	}
	worst := worstPrograms(rep.PerProgram, maxProgramBars)
	if len(worst) != maxProgramBars || worst[0].Program != "program_115_b32" || worst[1].Learned > worst[0].Learned {
		t.Errorf("worst programs start %+v", worst[:2])
	}
}

// TestTrainingPlotReadable: the loss axis is labelled even when the losses stay within one
// decade (log ticks alone labelled none), and the legends sit beside the data, not on it.
func TestTrainingPlotReadable(t *testing.T) {
	hist := []EpochPoint{{1, 0.52, 0.55, 3}, {2, 0.41, 0.47, 2.5}, {3, 0.33, 0.44, 2.2}}
	losses, _, legends, err := trainingPlots(hist, "slowdown_at_1")
	if err != nil {
		t.Fatal(err)
	}
	labelled := 0
	for _, tk := range losses.Y.Tick.Marker.Ticks(0.33, 0.55) {
		if tk.Label != "" {
			labelled++
		}
	}
	if labelled < 2 {
		t.Errorf("the loss axis over [0.33, 0.55] has %d labelled ticks, want >= 2", labelled)
	}
	c := draw.New(vgimg.New(8*vg.Inch, 6*vg.Inch))
	area, col := legendOutside(c, legends...)
	if col.Min.X < area.Max.X {
		t.Errorf("the legend column (x from %v) overlaps the plot area (to %v)", col.Min.X, area.Max.X)
	}
	for _, l := range legends {
		if w := l.Rectangle(col).Size().X; w > col.Size().X {
			t.Errorf("a legend %v wide does not fit its column of %v", w, col.Size().X)
		}
	}
	if losses.Legend.Rectangle(c).Size().Y != 0 {
		t.Error("the loss panel still draws a legend on its data")
	}
	files, err := WritePlots(t.TempDir(), manyPrograms(3), hist, "slowdown_at_1")
	if err != nil || len(files) != 2 { // no points: no scatter.png
		t.Fatalf("WritePlots: %v, %v", files, err)
	}
}
