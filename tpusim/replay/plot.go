package replay

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/tpucost/tpucost/internal/atomicfile"
)

// WritePlots draws, for the tile replay, simulated vs measured time (log-log, one colour
// per kernel, the legend in the empty corner above the diagonal) into dir/tile_sim_vs_measured.png, and returns
// the files written. The file is written atomically.
func WritePlots(dir string, r *Report) ([]string, error) {
	if r.Tile == nil || len(r.Tile.Replayed) == 0 {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("plots: %w", err)
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("tile configs on real TPU runs: %s (%s) vs measured", r.Simulator, r.Chip)
	p.X.Label.Text = "measured time (ns)"
	p.Y.Label.Text = "simulated time (ns)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	cols := palette.Rainbow(len(r.Tile.Replayed), palette.Blue, palette.Red, 1, 0.8, 1).Colors()
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.CrossGlyph{}}
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, k := range r.Tile.Replayed {
		xys := make(plotter.XYs, 0, len(k.Runs))
		for _, run := range k.Runs {
			xys = append(xys, plotter.XY{X: run.MeasuredNs, Y: run.SimNs})
			lo = math.Min(lo, math.Min(run.MeasuredNs, run.SimNs))
			hi = math.Max(hi, math.Max(run.MeasuredNs, run.SimNs))
		}
		s, err := plotter.NewScatter(xys)
		if err != nil {
			return nil, fmt.Errorf("plots: %w", err)
		}
		s.GlyphStyle.Color = cols[i]
		s.GlyphStyle.Radius = vg.Points(2)
		s.GlyphStyle.Shape = shapes[i%len(shapes)]
		p.Add(s)
		p.Legend.Add(fmt.Sprintf("%s (%d)", k.Name, len(k.Runs)), s)
	}
	diag := plotter.NewFunction(func(x float64) float64 { return x })
	diag.Color = color.Gray{Y: 120}
	diag.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
	p.Add(diag)
	p.Legend.Add("y = x", diag)
	// The runs lie along the diagonal: the upper left corner is free for the legend.
	p.Legend.Left, p.Legend.Top = true, true
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = lo/2, hi*2, lo/2, hi*2
	path := filepath.Join(dir, "tile_sim_vs_measured.png")
	wt, err := p.WriterTo(9*vg.Inch, 6*vg.Inch, "png")
	if err != nil {
		return nil, fmt.Errorf("plot %s: %w", path, err)
	}
	if err := atomicfile.Write(path, func(out io.Writer) error {
		_, err := wt.WriteTo(out)
		return err
	}); err != nil {
		return nil, err
	}
	return []string{path}, nil
}
