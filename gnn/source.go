package gnn

import (
	"fmt"
	"math"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/features"
)

// RowSource streams rows. Each call of Rows is one pass over the data and must visit the
// same rows in the same order every time (training is deterministic only if its data
// is). fn must not keep the *Row or anything it points to after it returns, and an error
// from fn stops the pass and is returned.
type RowSource interface {
	Rows(fn func(*dataset.Row) error) error
}

// sliceSource is an in-memory RowSource.
type sliceSource []dataset.Row

// Rows implements RowSource.
func (s sliceSource) Rows(fn func(*dataset.Row) error) error {
	for i := range s {
		if err := fn(&s[i]); err != nil {
			return err
		}
	}
	return nil
}

// filterSource passes on the rows of Source for which Keep returns true.
type filterSource struct {
	Source RowSource
	Keep   func(*dataset.Row) bool
}

// Rows implements RowSource.
func (f filterSource) Rows(fn func(*dataset.Row) error) error {
	return f.Source.Rows(func(r *dataset.Row) error {
		if !f.Keep(r) {
			return nil
		}
		return fn(r)
	})
}

// fitStats fits the normalization statistics of features and of the log runtimes on one
// pass over src, rows in tpucost's own feature schema. Rows without configurations are
// skipped. It fails when src has no usable row or a runtime is not positive and finite.
func fitStats(src RowSource) (features.Stats, TargetStats, error) {
	return fitStatsFor(src, features.SchemaVersion, features.CurrentWidths())
}

// fitStatsFor is fitStats for rows of feature schema version version with widths w (an
// imported dataset's). A row with per-node configurations (ConfigNodes) contributes each
// configurable node's block of w.Config features as one config vector. The log runtimes
// are those of the row's TargetTimes (runtime over normalizer where the data has them);
// the range of the analytical estimates is that of the row's positive finite AnalyticalNs.
func fitStatsFor(src RowSource, version int, w features.Widths) (features.Stats, TargetStats, error) {
	st, ts, _, err := fitStatsCount(src, version, w)
	return st, ts, err
}

// fitStatsCount is fitStatsFor that also counts the rows with configurations.
func fitStatsCount(src RowSource, version int, w features.Widths) (features.Stats, TargetStats, int, error) {
	f := features.NewFitterFor(version, w)
	var n int64
	var mean, m2 float64
	var analytical *LogRange
	rows := 0
	err := src.Rows(func(r *dataset.Row) error {
		if len(r.ConfigFeats) == 0 {
			return nil
		}
		if len(r.RuntimesNs) != len(r.ConfigFeats) {
			return fmt.Errorf("row %s/%s has %d config vectors and %d runtimes", r.Program, r.KernelName, len(r.ConfigFeats), len(r.RuntimesNs))
		}
		rows++
		f.AddGraph(&r.Graph)
		times := r.TargetTimes()
		for i, c := range r.ConfigFeats {
			if nc := len(r.ConfigNodes); nc > 0 {
				if len(c) != nc*w.Config {
					return fmt.Errorf("row %s/%s: config %d has %d features for %d configurable nodes, want %d each", r.Program, r.KernelName, i, len(c), nc, w.Config)
				}
				for j := range nc {
					f.AddConfig(c[j*w.Config : (j+1)*w.Config])
				}
			} else {
				f.AddConfig(c)
			}
			t := times[i]
			if !(t > 0) || math.IsInf(t, 0) {
				return fmt.Errorf("row %s/%s: config %d has runtime %g ns", r.Program, r.KernelName, i, t)
			}
			if i < len(r.AnalyticalNs) {
				if a := r.AnalyticalNs[i]; a > 0 && !math.IsInf(a, 1) {
					analytical = analytical.add(math.Log(a))
				}
			}
			n++
			d := math.Log(t) - mean
			mean += d / float64(n)
			m2 += d * (math.Log(t) - mean)
		}
		return nil
	})
	if err != nil {
		return features.Stats{}, TargetStats{}, 0, fmt.Errorf("fitting normalization: %w", err)
	}
	if rows == 0 {
		return features.Stats{}, TargetStats{}, 0, fmt.Errorf("fitting normalization: %w", errNoRows)
	}
	st, err := f.Stats()
	if err != nil {
		return features.Stats{}, TargetStats{}, 0, err
	}
	return st, TargetStats{LogMean: mean, LogStd: math.Sqrt(m2 / float64(n)), Analytical: analytical}, rows, nil
}
