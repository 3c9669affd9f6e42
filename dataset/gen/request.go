package gen

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/internal/progress"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/zoo"
)

// ToolVersion is the tool version `tpucost gen` records in the datasets it writes (their
// provenance's tool_version; Version is the generator's).
const ToolVersion = "0.1.0"

// Request is a generation run as `tpucost gen` states it: the flags' values as given,
// with the models as a list (or All) and the shard as "i/n". Options resolves it, Run
// runs it. Every value is checked as given: the zero-value defaults of Options are not
// for flags (`--configs 0` is an error, not 32).
type Request struct {
	Task       string // tile, flags, fusion or layout
	Models     string // comma-separated zoo models or HLO files (zoo.Select)
	All        bool   // every zoo model, in place of Models
	Out        string
	Configs    int
	Variants   int
	Workers    int
	Seed       int64 // config sampling, variants and measurement noise
	Format     string
	Shard      string // "i/n" (ParseShard)
	NoiseSigma float64
	NoiseRuns  int // runs per measurement when NoiseSigma > 0
	PartRows   int // Options.MaxRowsPerPart
	Fusion     compiler.FusionRule
	Staging    compiler.StagingMode
	Shapes     string   // sizes of one dynamic dimension (Options.Shapes)
	Strict     bool     // the first unit that fails ends the run (Options.Strict)
	Lengths    []string // batches of sequence lengths: the compiled ragged programs (Options.Lengths)
	// ToolVersion is recorded in the datasets' provenance.
	ToolVersion string
	// Progress receives progress lines (nil: none).
	Progress io.Writer
}

// Report is a finished run: its Result (the JSON) and the directory written.
type Report struct {
	*Result
	out string
}

// Options resolves r into the options of a run on chip: the models (zoo.Select), the
// shard (ParseShard), the noise, and checks them (Options.Validate) as given.
func (r Request) Options(chip tpusim.Chip) (Options, error) {
	models, err := zoo.Select(r.Models, r.All)
	if err != nil {
		return Options{}, err
	}
	si, sn, err := ParseShard(r.Shard)
	if err != nil {
		return Options{}, err
	}
	o := Options{
		Task: dataset.Task(r.Task), Models: models, Out: r.Out, Format: dataset.Format(r.Format), Configs: r.Configs,
		Variants: r.Variants, Workers: r.Workers, Seed: r.Seed, ShardIndex: si, ShardCount: sn, Chip: chip,
		Noise:          tpusim.Options{NoiseSigma: r.NoiseSigma, Runs: r.NoiseRuns, Seed: r.Seed},
		MaxRowsPerPart: r.PartRows, ToolVersion: r.ToolVersion, Fusion: r.Fusion, Staging: r.Staging, Shapes: r.Shapes,
		Strict: r.Strict, Lengths: r.Lengths,
	}
	return o, o.Validate()
}

// Run resolves the chip (chipOf) and r (Options), and generates (Generate), with
// progress lines to r.Progress. For the run the process's garbage collector runs at
// GCPercent under MemoryLimit of the workers (both restored after).
func (r Request) Run(ctx context.Context, chipOf func() (tpusim.Chip, error)) (*Report, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	// Generation allocates fast and keeps little alive: collecting less often lets two
	// workers scale to ~1.9x one (BenchmarkGenerate) for a larger heap ...
	defer debug.SetGCPercent(debug.SetGCPercent(GCPercent))
	// ... but no more than the workers need (gen --task fusion --all --configs 16 peaked at
	// 7.3 GB on 2 workers; BenchmarkGenerateFusionMemory).
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(MemoryLimit(r.Workers)))
	chip, err := chipOf()
	if err != nil {
		return nil, err
	}
	o, err := r.Options(chip)
	if err != nil {
		return nil, err
	}
	rep := progress.NewLazy(r.Progress, "gen "+r.Task)
	if r.Progress != nil {
		o.Progress = func(p Progress) {
			rate := float64(p.Samples) / max(p.Elapsed.Seconds(), 1e-9)
			failed := ""
			if p.Failed > 0 {
				failed = fmt.Sprintf(", %d failed", p.Failed)
			}
			rep.Update(p.UnitsDone, p.UnitsTotal, fmt.Sprintf("units%s, %d rows, %d samples, %.0f samples/s", failed, p.Rows, p.Samples, rate))
		}
	}
	res, err := Generate(ctx, o) // builds every model first: a bad one fails before any output
	rep.Done()
	if err != nil {
		return nil, err
	}
	return &Report{Result: res, out: r.Out}, nil
}

// MaxFailuresShown is how many failed units WriteText lists, one line each; the rest
// are counted (every one is in the manifest and the JSON).
const MaxFailuresShown = 10

// WriteText writes the run's summary: a line with the dataset's shard after the run
// (units, failed units, rows, samples: every run's), a line with this run's share
// (units, failed units, rows, samples, duplicate kernels dropped, parts, wall time,
// rate), and a line per failed unit of the shard (at most MaxFailuresShown).
func (r *Report) WriteText(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "%s: %d units, %d failed, %d rows, %d samples\n", r.out, r.Units, r.FailedUnits, r.Rows, r.Samples); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "this run: %d units (%d resumed from earlier runs), %d failed, %d rows, %d samples, %d duplicate kernels dropped, %d parts in %.1fs (%.0f samples/s)\n",
		r.RunUnits, r.Resumed, r.RunFailedUnits, r.RunRows, r.RunSamples, r.DuplicateKernels, r.Parts, r.Elapsed.Seconds(), r.SamplesPerSecond); err != nil {
		return err
	}
	for i, f := range r.Failures {
		if i == MaxFailuresShown {
			_, err := fmt.Fprintf(w, "... and %d more failed units (the manifest and --json list them)\n", len(r.Failures)-i)
			return err
		}
		if _, err := fmt.Fprintf(w, "failed: %s\n", f.Error); err != nil {
			return err
		}
	}
	return nil
}

// Failed is the error of a run some of whose units failed (nil when none did): it says
// how many, so that the command exits non-zero after printing the summary.
func (r *Report) Failed() error {
	if r.FailedUnits == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d units failed, recorded in the manifest of %s (run with --strict to stop at the first)", r.FailedUnits, r.Units, r.out)
}
