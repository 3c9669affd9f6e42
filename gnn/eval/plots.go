package eval

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/tpucost/tpucost/internal/atomicfile"
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

// savePlot writes p as a PNG atomically.
func savePlot(p *plot.Plot, w, h vg.Length, path string) error {
	wt, err := p.WriterTo(w, h, "png")
	if err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return atomicfile.Write(path, func(out io.Writer) error {
		_, err := wt.WriteTo(out)
		return err
	})
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
	diag := plotter.NewFunction(func(x float64) float64 { return x })
	diag.Color = color.Gray{Y: 120}
	diag.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
	p.Add(diag)
	p.Legend.Add("y = x", diag)
	p.Legend.Top, p.Legend.Left = true, true
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = lo/2, hi*2, lo/2, hi*2
	path := filepath.Join(dir, "scatter.png")
	return path, savePlot(p, 6*vg.Inch, 6*vg.Inch, path)
}

func programPlot(dir string, rep *Report) (string, error) {
	if len(rep.PerProgram) == 0 {
		return "", nil
	}
	p := plot.New()
	metric := "APE (%)"
	if !rep.Ranked {
		metric = "program-time error (%)"
	}
	p.Title.Text = fmt.Sprintf("%s: per-program %s", rep.Task, metric)
	p.Y.Label.Text = metric
	n := len(rep.PerProgram)
	l, a := make(plotter.Values, n), make(plotter.Values, n)
	names := make([]string, n)
	for i, pr := range rep.PerProgram {
		l[i], names[i] = pr.Learned, pr.Program
		if pr.Analytical != nil {
			a[i] = *pr.Analytical
		}
	}
	w := vg.Points(math.Max(4, math.Min(14, 400/float64(n))))
	bl, err := plotter.NewBarChart(l, w)
	if err != nil {
		return "", err
	}
	bl.Color, bl.LineStyle.Width, bl.Offset = learnedColor, 0, -w/2
	p.Add(bl)
	p.Legend.Add("learned", bl)
	if rep.Analytical != nil {
		ba, err := plotter.NewBarChart(a, w)
		if err != nil {
			return "", err
		}
		ba.Color, ba.LineStyle.Width, ba.Offset = analyticalColor, 0, w/2
		p.Add(ba)
		p.Legend.Add("analytical", ba)
	}
	p.Legend.Top = true
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = math.Pi / 2.5
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	width := vg.Length(math.Max(6, float64(n)*0.35)) * vg.Inch
	path := filepath.Join(dir, "programs.png")
	return path, savePlot(p, width, 5*vg.Inch, path)
}

func trainingPlot(dir string, history []EpochPoint, metricName string) (string, error) {
	// Two panels: losses (log scale) above, the validation metric below.
	losses := plot.New()
	losses.Title.Text = "training curve"
	losses.Y.Label.Text = "loss"
	losses.Y.Scale = plot.LogScale{}
	losses.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	metric := plot.New()
	metric.X.Label.Text = "epoch"
	metric.Y.Label.Text = "validation " + metricName
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
	if err := line(losses, tr, "train", learnedColor); err != nil {
		return "", err
	}
	if err := line(losses, va, "validation", analyticalColor); err != nil {
		return "", err
	}
	if err := line(metric, me, "validation "+metricName, color.RGBA{G: 140, A: 255}); err != nil {
		return "", err
	}
	losses.Legend.Top = true
	metric.Legend.Top = true
	w, h := 7*vg.Inch, 6*vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4, PadY: vg.Millimeter * 4}
	plots := [][]*plot.Plot{{losses}, {metric}}
	canvases := plot.Align(plots, tiles, dc)
	losses.Draw(canvases[0][0])
	metric.Draw(canvases[1][0])
	path := filepath.Join(dir, "training.png")
	return path, atomicfile.Write(path, func(out io.Writer) error {
		_, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(out)
		return err
	})
}
