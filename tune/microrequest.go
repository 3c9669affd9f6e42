package tune

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/tpucost/tpucost/internal/outpath"
	"github.com/tpucost/tpucost/zoo"
)

// DispatchFileKind is the kind of a dispatch table file, for --out's overwrite rule.
func DispatchFileKind() outpath.Kind {
	return outpath.Kind{Name: "micro-kernel dispatch table (JSON)", Is: func(_ string, b []byte) bool {
		_, ok, err := ParseDispatchTable(b)
		return ok && err == nil
	}}
}

// microHoldout is how many held-out values of the range range_check times.
const microHoldout = 8

// runMicro runs `tune SRC --shapes LIST --micro-kernels`: the joint micro-kernel search
// (RunMicro) with the per-shape baseline under --compare-per-shape; --out writes the
// dispatch table.
func (q Request) runMicro(ctx context.Context, srcs []string, batch bool, list zoo.ShapeList, opts Options) (*Result, error) {
	switch {
	case batch:
		return nil, errors.New("--micro-kernels tunes one SRC, not --models or --all")
	case q.Store != "":
		return nil, errors.New("--store: a micro-kernel run does not read or record a config store")
	case q.ModelDir != "":
		return nil, errors.New("--model: a micro-kernel run uses its own micro-kernel cost model (drop --model)")
	case q.Kinds != "":
		return nil, errors.New("--kinds: a micro-kernel run searches tiles and their flags only (drop --kinds)")
	}
	if err := opts.Validate(); err != nil {
		return nil, flagError(err)
	}
	if q.Out != "" {
		if err := checkOutPath("--out", q.Out, false); err != nil {
			return nil, err
		}
		if err := outpath.CheckFile("--out", q.Out, DispatchFileKind(), q.Force); err != nil {
			return nil, err
		}
	}
	spec := MicroSpec{Lo: list.Lo, Hi: list.Hi, Holdout: microHoldout, Compare: q.ComparePerShape}
	rep, err := RunMicro(ctx, srcs[0], list, opts, spec)
	if err != nil {
		return nil, flagError(err)
	}
	if q.Out != "" {
		if err := writeDispatchTable(q.Out, rep.DispatchTable); err != nil {
			return nil, fmt.Errorf("--out: %w", err)
		}
	}
	return &Result{Micro: rep, req: q, shapeList: list}, nil
}

// writeDispatchTable writes t to path atomically (a temporary file renamed into place).
func writeDispatchTable(path string, t *DispatchTable) error {
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".dispatch-*.json")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// WriteText writes rep as text: a line per tuned value, the search, the baseline and the
// range check.
func (rep *MicroReport) WriteText(w io.Writer, list zoo.ShapeList, out string) error {
	fmt.Fprintf(w, "%s at %s on %s (%s), micro-kernels, seed %d: one joint search over %d values\n", rep.Program, list, rep.Chip, rep.Simulator, rep.Seed, len(rep.Shapes))
	t := table(w)
	fmt.Fprintln(t, "VALUE\tDEFAULT_NS\tTUNED_NS\tSPEEDUP\tPER_SHAPE")
	for i, s := range rep.Shapes {
		ps := "-"
		if rep.PerShape != nil {
			ps = fmt.Sprintf("%.3f", rep.PerShape.Shapes[i].Speedup)
		}
		fmt.Fprintf(t, "%d\t%.0f\t%.0f\t%.3f\t%s\n", s.Value, s.DefaultNs, s.TunedNs, s.Speedup, ps)
	}
	if err := t.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "joint search: %d measurements (%d micro-kernels), mean speedup %.3fx, 95%% of the reference gain (%.4fx) after %s measurements\n",
		rep.Measurements, rep.MicroKernels, rep.MeanSpeedup, rep.Target95, countOrNever(rep.MeasurementsTo95))
	if p := rep.PerShape; p != nil {
		fmt.Fprintf(w, "per-shape baseline: %d measurements, mean speedup %.3fx, 95%% after %s\n", p.Measurements, p.MeanSpeedup, countOrNever(p.MeasurementsTo95))
	}
	if rc := rep.RangeCheck; rc != nil {
		fmt.Fprintf(w, "range check at %d held-out values %v: mean speedup %.3fx, min %.3fx", len(rc.Values), rc.Values, rc.MeanSpeedup, rc.MinSpeedup)
		if rc.PerShapeMeanSpeedup > 0 {
			fmt.Fprintf(w, " (per-shape tuned there: %.3fx)", rc.PerShapeMeanSpeedup)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "dispatch: %s; %d families dispatched over %d..%d\n", rep.Dispatch, len(rep.DispatchTable.Families), rep.DispatchTable.Lo, rep.DispatchTable.Hi)
	if out != "" {
		fmt.Fprintf(w, "dispatch table written to %s\n", out)
	}
	return nil
}

func countOrNever(n int) string {
	if n < 0 {
		return "never"
	}
	return fmt.Sprint(n)
}
