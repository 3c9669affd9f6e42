package validate

import (
	"fmt"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/tpucost/tpucost/internal/pngplot"
)

// WritePlots draws simulated against measured time: for the tile runs log-log, one colour
// per kernel, the legend in the empty corner above the diagonal
// (dir/tile_sim_vs_measured.png); for the layout runs one colour per program
// (dir/layout_sim_vs_measured.png). It returns the files written, each atomically.
func WritePlots(dir string, r *Report) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("plots: %w", err)
	}
	var files []string
	if r.Tile != nil && len(r.Tile.Replayed) > 0 {
		f, err := tilePlot(dir, r)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	if r.Layout != nil && len(r.Layout.Replayed) > 0 {
		f, err := layoutPlot(dir, r)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// layoutPlot draws each layout run's simulated against its measured time, one colour
// per program, linear axes (the runs of a module differ by a few percent).
func layoutPlot(dir string, r *Report) (string, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("layout configs on real TPU runs: %s (%s) vs measured", r.Simulator, r.Chip)
	p.X.Label.Text = "measured time (ms)"
	p.Y.Label.Text = "simulated time (ms)"
	cols := palette.Rainbow(max(len(r.Layout.Replayed), 2), palette.Blue, palette.Red, 1, 0.8, 1).Colors()
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for i, pr := range r.Layout.Replayed {
		xys := make(plotter.XYs, 0, len(pr.Runs))
		for _, run := range pr.Runs {
			x, y := run.MeasuredNs/1e6, run.SimNs/1e6
			xys = append(xys, plotter.XY{X: x, Y: y})
			xlo, xhi, ylo, yhi = math.Min(xlo, x), math.Max(xhi, x), math.Min(ylo, y), math.Max(yhi, y)
		}
		s, err := plotter.NewScatter(xys)
		if err != nil {
			return "", fmt.Errorf("plots: %w", err)
		}
		s.GlyphStyle.Color = cols[i]
		s.GlyphStyle.Radius = vg.Points(2.5)
		p.Add(s)
		p.Legend.Add(fmt.Sprintf("%s (%d runs)", pr.Program, len(pr.Runs)), s)
	}
	p.Legend.Left, p.Legend.Top = true, true
	// A margin of a tenth of the range keeps the extreme runs off the axes, and room
	// above for the legend.
	mx, my := math.Max((xhi-xlo)/10, 1e-3), math.Max((yhi-ylo)/10, 1e-3)
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = xlo-mx, xhi+mx, ylo-my, yhi+3*my
	path := filepath.Join(dir, "layout_sim_vs_measured.png")
	return path, pngplot.Save(p, 8*vg.Inch, 6*vg.Inch, path)
}

// tilePlot draws the tile runs' simulated against measured time (log-log).
func tilePlot(dir string, r *Report) (string, error) {
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
			return "", fmt.Errorf("plots: %w", err)
		}
		s.GlyphStyle.Color = cols[i]
		s.GlyphStyle.Radius = vg.Points(2)
		s.GlyphStyle.Shape = shapes[i%len(shapes)]
		p.Add(s)
		p.Legend.Add(fmt.Sprintf("%s (%d)", k.Name, len(k.Runs)), s)
	}
	pngplot.AddDiagonal(p)
	// The runs lie along the diagonal: the upper left corner is free for the legend.
	p.Legend.Left, p.Legend.Top = true, true
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = lo/2, hi*2, lo/2, hi*2
	path := filepath.Join(dir, "tile_sim_vs_measured.png")
	return path, pngplot.Save(p, 9*vg.Inch, 6*vg.Inch, path)
}
