package bitserial

import (
	"fmt"
	"image/color"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/tpucost/tpucost/internal/pngplot"
)

// PlotFiles are the plots WriteFiles writes beside report.md, in the order it writes them:
// the accuracy, the time per image and the speedup of the bit-serial network against
// the activation precision b, and the storage of the two networks.
func PlotFiles() []string {
	return []string{"accuracy_vs_bits.png", "time_vs_bits.png", "speedup_vs_bits.png", "storage.png"}
}

// paperSpeedup is Li and Gupta's (MLSys 2022) headline speedup of the bit-serial
// weight-pool network over the 8-bit network on microcontrollers, drawn for comparison.
const paperSpeedup = 2.8

// writePlots writes PlotFiles into dir.
func (r *Report) writePlots(dir string) error {
	if len(r.Bits) == 0 {
		return fmt.Errorf("bitserial: no per-b results to plot")
	}
	bits := make(plotter.XYs, len(r.Bits))
	times := make(plotter.XYs, len(r.Bits))
	speedups := make(plotter.XYs, len(r.Bits))
	for i, b := range r.Bits {
		bits[i] = plotter.XY{X: float64(b.B), Y: 100 * b.Accuracy}
		times[i] = plotter.XY{X: float64(b.B), Y: b.NsPerImage / 1e3}
		speedups[i] = plotter.XY{X: float64(b.B), Y: b.SpeedupVsInt8}
	}
	lo, hi := float64(r.Bits[0].B), float64(r.Bits[len(r.Bits)-1].B)
	level := func(y float64) plotter.XYs { return plotter.XYs{{X: lo, Y: y}, {X: hi, Y: y}} }

	files := PlotFiles()
	if err := linePlot(filepath.Join(dir, files[0]), "Accuracy against activation bits (MNIST test)", "accuracy (%)",
		series{"pool network, bit-serial LUT", bits, false},
		series{"8-bit network", level(100 * r.Accuracy.Int8), true},
		series{"float32 network", level(100 * r.Accuracy.Float32), true}); err != nil {
		return err
	}
	if err := linePlot(filepath.Join(dir, files[1]), "Time per image against activation bits (this CPU, one core)", "µs per image",
		series{"bit-serial LUT", times, false},
		series{"8-bit integer kernel", level(r.Int8.NsPerImage / 1e3), true}); err != nil {
		return err
	}
	if err := linePlot(filepath.Join(dir, files[2]), "Speedup over the 8-bit integer kernel", "speedup (×)",
		series{"bit-serial LUT, this CPU", speedups, false},
		series{"break-even", level(1), true},
		series{fmt.Sprintf("paper, microcontrollers (%.1f×)", paperSpeedup), level(paperSpeedup), true}); err != nil {
		return err
	}
	return r.storagePlot(filepath.Join(dir, files[3]))
}

// series is one line of a plot; a dashed one is a reference level.
type series struct {
	name   string
	xys    plotter.XYs
	dashed bool
}

// linePlot draws the series against b (x) into path.
func linePlot(path, title, ylabel string, ss ...series) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "activation bits b"
	p.Y.Label.Text = ylabel
	p.Legend.Top = true
	palette := []color.Color{color.RGBA{R: 31, G: 119, B: 180, A: 255}, color.RGBA{R: 214, G: 39, B: 40, A: 255}, color.Gray{Y: 110}}
	for i, s := range ss {
		l, err := plotter.NewLine(s.xys)
		if err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
		l.Color = palette[i%len(palette)]
		l.Width = vg.Points(1.5)
		if s.dashed {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		} else {
			pts, err := plotter.NewScatter(s.xys)
			if err != nil {
				return fmt.Errorf("plot %s: %w", path, err)
			}
			pts.Color = l.Color
			p.Add(pts)
		}
		p.Add(l)
		p.Legend.Add(s.name, l)
	}
	p.Y.Max += 0.15 * (p.Y.Max - p.Y.Min) // room for the legend above the lines
	return pngplot.Save(p, 7*vg.Inch, 4.5*vg.Inch, path)
}

// storagePlot draws the bytes each network stores, split by what they hold.
func (r *Report) storagePlot(path string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Storage: %.2f× smaller than 8-bit", r.CompressionVsInt8)
	p.Y.Label.Text = "KiB"
	parts := []struct {
		name string
		of   func(Storage) int
	}{
		{"8-bit weights", func(s Storage) int { return s.Weights }},
		{"pool indices", func(s Storage) int { return s.Indices }},
		{"pool vectors", func(s Storage) int { return s.Pool }},
		{"scales and biases", func(s Storage) int { return s.Scales + s.Bias }},
	}
	palette := []color.Color{color.RGBA{R: 31, G: 119, B: 180, A: 255}, color.RGBA{R: 255, G: 127, B: 14, A: 255},
		color.RGBA{R: 44, G: 160, B: 44, A: 255}, color.Gray{Y: 110}}
	var below *plotter.BarChart
	for i, part := range parts {
		v := plotter.Values{float64(part.of(r.StorageInt8)) / 1024, float64(part.of(r.StoragePool)) / 1024}
		bar, err := plotter.NewBarChart(v, vg.Points(60))
		if err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
		bar.Color = palette[i]
		bar.LineStyle.Width = 0
		if below != nil {
			bar.StackOn(below)
		}
		below = bar
		p.Add(bar)
		p.Legend.Add(part.name, bar)
	}
	p.Legend.Top = true
	p.NominalX("8-bit network", fmt.Sprintf("weight pool (P=%d, z=%d)", r.P, r.Z))
	return pngplot.Save(p, 6*vg.Inch, 4.5*vg.Inch, path)
}
