// Package pngplot holds what every tpucost plot shares: writing a gonum plot as a PNG
// atomically, and the dashed y = x line of a predicted-against-true scatter.
package pngplot

import (
	"fmt"
	"image/color"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/tpucost/tpucost/internal/atomicfile"
)

// Save writes p, w by h, to path as a PNG, atomically (internal/atomicfile).
func Save(p *plot.Plot, w, h vg.Length, path string) error {
	wt, err := p.WriterTo(w, h, "png")
	if err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return atomicfile.Write(path, func(out io.Writer) error {
		_, err := wt.WriteTo(out)
		return err
	})
}

// AddDiagonal adds the dashed grey line y = x to p, with its legend entry.
func AddDiagonal(p *plot.Plot) {
	diag := plotter.NewFunction(func(x float64) float64 { return x })
	diag.Color = color.Gray{Y: 120}
	diag.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
	p.Add(diag)
	p.Legend.Add("y = x", diag)
}
