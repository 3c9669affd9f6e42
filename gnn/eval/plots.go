package eval

import (
	"cmp"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tpucost/tpucost/internal/atomicfile"
	"github.com/tpucost/tpucost/internal/pngplot"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Colors of the two models in every plot.
var (
	learnedColor    = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	analyticalColor = color.RGBA{R: 214, G: 39, B: 40, A: 255}
)

// EpochPoint is one epoch of a training history, for the training-curve plot.
type EpochPoint struct {
	Epoch              int
	TrainLoss, ValLoss float64
	ValMetric          float64
}

// WritePlots writes scatter.png (predicted vs true runtime, log-log, both models),
// programs.png (per-program APE or program-time error, both models) and, when history is
// given, training.png (losses and the validation metric per epoch) into dir. It returns
// the files written.
func WritePlots(dir string, rep *Report, history []EpochPoint, metricName string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("plots: %w", err)
	}
	var files []string
	if f, err := scatterPlot(dir, rep); err != nil {
		return nil, err
	} else if f != "" {
		files = append(files, f)
	}
	if f, err := programPlot(dir, rep); err != nil {
		return nil, err
	} else if f != "" {
		files = append(files, f)
	}
	if len(history) > 0 {
		f, err := trainingPlot(dir, history, metricName)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

func scatterPlot(dir string, rep *Report) (string, error) {
	if len(rep.Points) == 0 {
		return "", nil
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: predicted vs true runtime (%s split)", rep.Task, rep.Split)
	p.X.Label.Text = "true runtime (ns)"
	p.Y.Label.Text = "predicted runtime (ns)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	lo, hi := math.Inf(1), math.Inf(-1)
	var lxy, axy plotter.XYs
	for _, pt := range rep.Points {
		if pt.True <= 0 {
			continue
		}
		lo, hi = math.Min(lo, pt.True), math.Max(hi, pt.True)
		if pt.Analytical > 0 {
			axy = append(axy, plotter.XY{X: pt.True, Y: pt.Analytical})
		}
		if pt.Learned > 0 {
			lxy = append(lxy, plotter.XY{X: pt.True, Y: pt.Learned})
		}
	}
	if rep.Ranked {
		p.Title.Text = fmt.Sprintf("%s: rank-implied vs true runtime (%s split)", rep.Task, rep.Split)
		p.Y.Label.Text = "true runtime at the model's rank (ns)"
	}
	add := func(xys plotter.XYs, c color.Color, name string) error {
		if len(xys) == 0 {
			return nil
		}
		s, err := plotter.NewScatter(xys)
		if err != nil {
			return err
		}
		s.GlyphStyle.Color = c
		s.GlyphStyle.Radius = vg.Points(1.5)
		s.GlyphStyle.Shape = draw.CircleGlyph{}
		p.Add(s)
		p.Legend.Add(name, s)
		return nil
	}
	if err := add(axy, analyticalColor, "analytical"); err != nil {
		return "", err
	}
	if err := add(lxy, learnedColor, "learned"); err != nil {
		return "", err
	}
	pngplot.AddDiagonal(p)
	p.Legend.Top, p.Legend.Left = true, true
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = lo/2, hi*2, lo/2, hi*2
	path := filepath.Join(dir, "scatter.png")
	return path, pngplot.Save(p, 6*vg.Inch, 6*vg.Inch, path)
}

// maxProgramBars is how many programs programs.png draws as bars: with more, it draws
// the worst ones and a histogram of all (116 programs once made a 40-inch-wide chart).
const maxProgramBars = 40

// worstPrograms returns up to n rows of rows, the largest learned error first (ties by
// name).
func worstPrograms(rows []ProgramRow, n int) []ProgramRow {
	out := slices.Clone(rows)
	slices.SortStableFunc(out, func(a, b ProgramRow) int {
		if c := cmp.Compare(b.Learned, a.Learned); c != 0 {
			return c
		}
		return strings.Compare(a.Program, b.Program)
	})
	return out[:min(n, len(out))]
}

// legendOutside splits c into the area of the plots and a column on its right that holds
// legends, so that no legend covers data.
func legendOutside(c draw.Canvas, legends ...*plot.Legend) (plots, legend draw.Canvas) {
	var w vg.Length
	for _, l := range legends {
		w = max(w, l.Rectangle(c).Size().X)
	}
	w += 6 * vg.Millimeter
	return draw.Crop(c, 0, -w, 0, 0), draw.Crop(c, c.Size().X-w+3*vg.Millimeter, 0, 0, 0)
}

// takeLegend moves p's legend out of the data area (see legendOutside) and returns it,
// drawn from the top of its column.
func takeLegend(p *plot.Plot) *plot.Legend {
	l := p.Legend
	l.Top, l.Left = true, true
	p.Legend = plot.NewLegend()
	return &l
}

// readableTicks labels a log axis at powers of ten when the range spans them, else at
// round values in between (a loss curve within one decade once had no labelled tick).
type readableTicks struct{}

func (readableTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.LogTicks{Prec: -1}.Ticks(lo, hi)
	labelled := 0
	for _, t := range ticks {
		if t.Label != "" {
			labelled++
		}
	}
	if labelled >= 2 {
		return ticks
	}
	return plot.DefaultTicks{}.Ticks(lo, hi)
}

func programPlot(dir string, rep *Report) (string, error) {
	if len(rep.PerProgram) == 0 {
		return "", nil
	}
	metric := "APE (%)"
	if !rep.Ranked {
		metric = "program-time error (%)"
	}
	rows := worstPrograms(rep.PerProgram, maxProgramBars)
	n := len(rows)
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: per-program %s", rep.Task, metric)
	if n < len(rep.PerProgram) {
		p.Title.Text = fmt.Sprintf("%s: per-program %s, the worst %d of %d", rep.Task, metric, n, len(rep.PerProgram))
	}
	p.X.Label.Text = metric
	// Horizontal bars, sorted: the worst program on top (bar 0 is drawn at the bottom).
	l, a := make(plotter.Values, n), make(plotter.Values, n)
	names := make([]string, n)
	for i, pr := range rows {
		j := n - 1 - i
		l[j], names[j] = pr.Learned, pr.Program
		if pr.Analytical != nil {
			a[j] = *pr.Analytical
		}
	}
	w := vg.Points(6)
	bl, err := plotter.NewBarChart(l, w)
	if err != nil {
		return "", err
	}
	bl.Horizontal, bl.Color, bl.LineStyle.Width, bl.Offset = true, learnedColor, 0, w/2
	p.Add(bl)
	p.Legend.Add("learned", bl)
	if rep.Analytical != nil {
		ba, err := plotter.NewBarChart(a, w)
		if err != nil {
			return "", err
		}
		ba.Horizontal, ba.Color, ba.LineStyle.Width, ba.Offset = true, analyticalColor, 0, -w/2
		p.Add(ba)
		p.Legend.Add("analytical", ba)
	}
	p.NominalY(names...)
	p.Add(plotter.NewGrid())
	legends := []*plot.Legend{takeLegend(p)}
	plots := []*plot.Plot{p}
	heights := []vg.Length{vg.Length(n)*0.2*vg.Inch + 1.2*vg.Inch}
	if n < len(rep.PerProgram) {
		h, err := programHistogram(rep, metric)
		if err != nil {
			return "", err
		}
		legends = append(legends, takeLegend(h))
		plots = append(plots, h)
		heights = append(heights, 3*vg.Inch)
	}
	width := 8 * vg.Inch
	var total vg.Length
	for _, h := range heights {
		total += h
	}
	img := vgimg.New(width, total)
	dc := draw.New(img)
	area, col := legendOutside(dc, legends...)
	top := area.Max.Y
	for i, pl := range plots {
		c := area
		c.Max.Y, c.Min.Y = top, top-heights[i]
		lc := col
		lc.Max.Y, lc.Min.Y = top-0.4*vg.Inch, top-heights[i]
		pl.Draw(c)
		legends[i].Draw(lc)
		top -= heights[i]
	}
	path := filepath.Join(dir, "programs.png")
	return path, atomicfile.Write(path, func(out io.Writer) error {
		_, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(out)
		return err
	})
}

// programHistogram is the distribution of every program's error, learned and analytical.
func programHistogram(rep *Report, metric string) (*plot.Plot, error) {
	h := plot.New()
	h.Title.Text = fmt.Sprintf("all %d programs", len(rep.PerProgram))
	h.X.Label.Text = metric
	h.Y.Label.Text = "programs"
	var l, a plotter.Values
	for _, pr := range rep.PerProgram {
		l = append(l, pr.Learned)
		if pr.Analytical != nil {
			a = append(a, *pr.Analytical)
		}
	}
	const bins = 20
	add := func(v plotter.Values, c color.RGBA, name string) error {
		if len(v) == 0 {
			return nil
		}
		hist, err := plotter.NewHist(v, bins)
		if err != nil {
			return err
		}
		// Translucent (non-premultiplied alpha), so that the overlap of the two shows.
		hist.FillColor, hist.LineStyle.Width = color.NRGBA{R: c.R, G: c.G, B: c.B, A: 140}, 0
		h.Add(hist)
		h.Legend.Add(name, hist)
		return nil
	}
	if err := add(l, learnedColor, "learned"); err != nil {
		return nil, err
	}
	if rep.Analytical != nil {
		if err := add(a, analyticalColor, "analytical"); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// trainingPlots are the two panels of training.png: losses (log scale, labelled ticks)
// and the validation metric, with their legends taken out of the data areas.
func trainingPlots(history []EpochPoint, metricName string) (losses, metric *plot.Plot, legends []*plot.Legend, err error) {
	losses = plot.New()
	losses.Title.Text = "training curve"
	losses.Y.Label.Text = "loss"
	losses.Y.Scale = plot.LogScale{}
	losses.Y.Tick.Marker = readableTicks{}
	losses.Add(plotter.NewGrid())
	metric = plot.New()
	metric.X.Label.Text = "epoch"
	metric.Y.Label.Text = "validation " + metricName
	metric.Add(plotter.NewGrid())
	var tr, va, me plotter.XYs
	for _, h := range history {
		if h.TrainLoss > 0 {
			tr = append(tr, plotter.XY{X: float64(h.Epoch), Y: h.TrainLoss})
		}
		if h.ValLoss > 0 {
			va = append(va, plotter.XY{X: float64(h.Epoch), Y: h.ValLoss})
		}
		me = append(me, plotter.XY{X: float64(h.Epoch), Y: h.ValMetric})
	}
	line := func(p *plot.Plot, xys plotter.XYs, name string, c color.Color) error {
		if len(xys) == 0 {
			return nil
		}
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return err
		}
		l.Color, l.Width = c, vg.Points(1.5)
		pts.Color, pts.Shape = c, draw.CircleGlyph{}
		p.Add(l, pts)
		p.Legend.Add(name, l)
		return nil
	}
	if err := line(losses, tr, "train loss", learnedColor); err != nil {
		return nil, nil, nil, err
	}
	if err := line(losses, va, "validation loss", analyticalColor); err != nil {
		return nil, nil, nil, err
	}
	if err := line(metric, me, "validation "+metricName, color.RGBA{G: 140, A: 255}); err != nil {
		return nil, nil, nil, err
	}
	return losses, metric, []*plot.Legend{takeLegend(losses), takeLegend(metric)}, nil
}

func trainingPlot(dir string, history []EpochPoint, metricName string) (string, error) {
	losses, metric, legends, err := trainingPlots(history, metricName)
	if err != nil {
		return "", err
	}
	w, h := 8*vg.Inch, 6*vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	area, col := legendOutside(dc, legends...)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2, PadY: vg.Millimeter * 4}
	canvases := plot.Align([][]*plot.Plot{{losses}, {metric}}, tiles, area)
	for i, p := range []*plot.Plot{losses, metric} {
		c := canvases[i][0]
		p.Draw(c)
		lc := col
		lc.Max.Y, lc.Min.Y = c.Max.Y-0.4*vg.Inch, c.Min.Y
		legends[i].Draw(lc)
	}
	path := filepath.Join(dir, "training.png")
	return path, atomicfile.Write(path, func(out io.Writer) error {
		_, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(out)
		return err
	})
}
