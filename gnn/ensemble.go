package gnn

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"

	"github.com/tpucost/tpucost/internal/atomicfile"
)

// An ensemble (train --ensemble K) is K models trained alike on the same data and split
// with seeds Seed, Seed+1, …: the first in the output directory itself (an ordinary
// checkpoint), the others in its subdirectories member-1 … member-(K−1), listed in
// EnsembleFile. Load returns the first with the others as its Members; a Predictor then
// reports the members' mean and, per configuration, their spread:
//
//   - absolute models: the mean of the members' standardized log runtimes (the
//     geometric mean runtime); the spread is the standard deviation of their natural-log
//     runtimes (0.1 ≈ members disagree by 10%);
//   - relative models: each member's scores are standardized over the kernel's
//     configurations (a rank model's scale and offset are arbitrary), then averaged; the
//     spread is the standard deviation of the standardized scores (in units of the
//     spread of a kernel's scores: 1 means the members disagree as much as the
//     configurations differ).

// EnsembleFile lists an ensemble's other members, in the first member's directory.
const EnsembleFile = "ensemble.json"

// EnsembleManifest is the content of EnsembleFile.
type EnsembleManifest struct {
	Format  string           `json:"format"`
	Members []EnsembleMember `json:"members"` // the members after the first
}

// EnsembleMember is one member of an ensemble besides the first.
type EnsembleMember struct {
	Dir  string `json:"dir"` // relative to the ensemble's directory
	Seed int64  `json:"seed"`
	// ModelSHA256 is the SHA-256 of the member's model.json (which verifies the rest).
	ModelSHA256 string `json:"model_sha256"`
}

const ensembleFormat = "tpucost-ensemble-1"

// MaxEnsemble bounds train --ensemble.
const MaxEnsemble = 32

// TrainEnsemble trains k models (see above) into opts.OutDir and returns the first
// one's result, its Model carrying the others as Members. k = 1 is TrainDataset.
func TrainEnsemble(ctx context.Context, data DataOptions, opts TrainOptions, k int) (*TrainResult, error) {
	if err := intField("ensemble", k, 1, MaxEnsemble); err != nil {
		return nil, err
	}
	if k == 1 {
		return TrainDataset(ctx, data, opts)
	}
	if opts.OutDir == "" {
		return nil, errors.New("train: an ensemble needs an output directory")
	}
	if opts.Resume {
		return nil, errors.New("train: an ensemble is not resumed: train it again into a new directory")
	}
	first, err := TrainDataset(ctx, data, opts)
	if err != nil {
		return nil, err
	}
	man := EnsembleManifest{Format: ensembleFormat}
	for i := 1; i < k; i++ {
		o := opts
		o.Seed = opts.Seed + int64(i)
		dir := fmt.Sprintf("member-%d", i)
		o.OutDir = filepath.Join(opts.OutDir, dir)
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "ensemble member %d of %d (seed %d)\n", i+1, k, o.Seed)
		}
		r, err := TrainDataset(ctx, data, o)
		if err != nil {
			return nil, fmt.Errorf("ensemble member %d: %w", i+1, err)
		}
		sum, err := fileSHA256(filepath.Join(o.OutDir, ModelFile))
		if err != nil {
			return nil, err
		}
		man.Members = append(man.Members, EnsembleMember{Dir: dir, Seed: o.Seed, ModelSHA256: sum})
		first.Model.Members = append(first.Model.Members, r.Model)
	}
	b, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(filepath.Join(opts.OutDir, EnsembleFile), append(b, '\n')); err != nil {
		return nil, fmt.Errorf("train: writing %s: %w", EnsembleFile, err)
	}
	return first, nil
}

func fileSHA256(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), nil
}

// loadMembers attaches the other members of the ensemble in dir (if it is one) to m,
// verifying each (its model.json's recorded SHA-256, its own checksums) and that it is
// the same kind of model on the same data.
func loadMembers(dir string, m *Model, c *Checkpoint) error {
	b, err := os.ReadFile(filepath.Join(dir, EnsembleFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var man EnsembleManifest
	if err := json.Unmarshal(b, &man); err != nil || man.Format != ensembleFormat {
		return fmt.Errorf("%s: not an ensemble manifest of format %s", filepath.Join(dir, EnsembleFile), ensembleFormat)
	}
	for _, e := range man.Members {
		mdir := filepath.Join(dir, filepath.FromSlash(e.Dir))
		sum, err := fileSHA256(filepath.Join(mdir, ModelFile))
		if err != nil {
			return fmt.Errorf("ensemble member %s: %w", e.Dir, err)
		}
		if sum != e.ModelSHA256 {
			return fmt.Errorf("ensemble member %s: %s does not have the SHA-256 %s records", e.Dir, ModelFile, EnsembleFile)
		}
		mm, mc, err := Load(mdir)
		if err != nil {
			return fmt.Errorf("ensemble member %s: %w", e.Dir, err)
		}
		if mc.Task != c.Task || mc.Loss != c.Loss || !reflect.DeepEqual(mc.Config, c.Config) || mc.Meta != c.Meta {
			return fmt.Errorf("ensemble member %s is not the same kind of model on the same data as %s", e.Dir, dir)
		}
		m.Members = append(m.Members, mm)
	}
	return nil
}

// combineMembers merges the members' raw outputs for one kernel (outs[i]: member i's, the
// first model's first) into the mean and the spread (see above), in the model's output
// space (standardized log runtime, or standardized score).
func combineMembers(relative bool, target TargetStats, outs [][]float64) (mean, spread []float64) {
	n := len(outs[0])
	mean, spread = make([]float64, n), make([]float64, n)
	zs := make([][]float64, len(outs))
	for i, o := range outs {
		z := append([]float64(nil), o...)
		if relative {
			standardize(z)
		} else {
			for j := range z {
				z[j] *= target.scale() // natural-log units
			}
		}
		zs[i] = z
	}
	k := float64(len(outs))
	for j := range n {
		var s, v float64
		for _, z := range zs {
			s += z[j]
		}
		mu := s / k
		for _, z := range zs {
			v += (z[j] - mu) * (z[j] - mu) // two passes: no cancellation when members agree
		}
		mean[j], spread[j] = mu, math.Sqrt(v/k)
		if !relative {
			mean[j] /= target.scale()
		}
	}
	return mean, spread
}

// standardize maps xs to zero mean and unit standard deviation (all zeros when they are
// equal).
func standardize(xs []float64) {
	var s, s2 float64
	for _, x := range xs {
		s += x
		s2 += x * x
	}
	n := float64(len(xs))
	mu := s / n
	sd := math.Sqrt(math.Max(0, s2/n-mu*mu))
	for i := range xs {
		if sd > 0 {
			xs[i] = (xs[i] - mu) / sd
		} else {
			xs[i] = 0
		}
	}
}

// run predicts ks with every member's engine and combines them: the raw outputs (the
// mean for an ensemble) and, for an ensemble, the spreads (nil for one model).
func (p *Predictor) run(ks []*kernel) (outs, spreads [][]float64, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	outs, err = p.eng.predict(ks, p.batchKernels)
	if err != nil || len(p.members) == 0 {
		return outs, nil, err
	}
	all := [][][]float64{outs}
	for _, e := range p.members {
		o, err := e.predict(ks, p.batchKernels)
		if err != nil {
			return nil, nil, err
		}
		all = append(all, o)
	}
	spreads = make([][]float64, len(ks))
	for j := range ks {
		per := make([][]float64, len(all))
		for i := range all {
			per[i] = all[i][j]
		}
		outs[j], spreads[j] = combineMembers(p.m.Relative(), p.m.Target, per)
	}
	return outs, spreads, nil
}

// Ensemble reports the number of models the predictor averages (1: a single model).
func (p *Predictor) Ensemble() int { return 1 + len(p.members) }
