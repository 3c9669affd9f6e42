package cli

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/zoo"
	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/dataset/gen"
	"github.com/tpucost/tpucost/internal/progress"
	"github.com/tpucost/tpucost/tpusim"
)

// Version is the tool version recorded in datasets and reports.
const Version = "0.1.0"

// GenOptions are the options of `tpucost gen`.
type GenOptions struct {
	IO         IO
	Globals    *Globals
	Target     TargetFlags
	Task       string
	Models     string
	All        bool
	Out        string
	Configs    int
	Variants   int
	Workers    int
	Seed       int64
	Format     string
	Shard      string
	NoiseSigma float64
	NoiseRuns  int
	PartRows   int
	Fusion     compiler.FusionRule  // --fusion
	Staging    compiler.StagingMode // --staging
	Shapes     string               // --shapes: sizes of one dynamic dimension (gen.Options.Shapes)
}

// NewCmdGen builds `tpucost gen`.
func NewCmdGen(ios IO, g *Globals) *cobra.Command {
	o := &GenOptions{IO: ios, Globals: g}
	cmd := &cobra.Command{
		Use:   "gen --task tile|flags|fusion|layout --models a,b|--all --out DIR",
		Short: "Generate a dataset: random configs compiled, timed on tpusim, featurized, written as Arrow",
		Long: "Gen compiles zoo models (or HLO files) under random configurations, times every kernel's configurations on the simulator, " +
			"and writes one row per distinct kernel to Arrow IPC (zstd) or Parquet files in DIR. Work is split into units (model x variant); " +
			"--shard i/n runs the units u with u mod n = i, so n machines can each run one shard into the same DIR (or separate DIRs) and the union " +
			"equals one run. Parts are written atomically and committed in the shard's manifest (sizes and SHA-256, which readers verify); " +
			"running the same command again resumes after the last committed part. A run locks its shard of DIR: a second run on the same " +
			"shard fails, naming the process that holds it.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runGen(cmd.Context(), o) },
	}
	o.Target.bind(cmd)
	f := cmd.Flags()
	f.StringVar(&o.Task, "task", "tile", "what configurations vary: tile, flags, fusion, layout")
	f.StringVar(&o.Models, "models", "", "comma-separated zoo models or HLO files")
	f.BoolVar(&o.All, "all", false, "every zoo model")
	f.StringVar(&o.Out, "out", "", "output directory")
	f.IntVar(&o.Configs, "configs", 32, "configs per kernel (tile, flags) or random program configs per model (fusion, layout)")
	f.IntVar(&o.Variants, "variants", 1, "program variants per model for tile/flags (variant 0 = default compile, others perturb layout and fusion)")
	f.IntVar(&o.Workers, "workers", 0, fmt.Sprintf("parallel workers, 0-%d (0: all cores, the default); the data does not depend on it", gen.MaxWorkers))
	f.Int64Var(&o.Seed, "seed", 1, "seed for config sampling, variants and noise")
	f.StringVar(&o.Format, "format", "arrow", "arrow (IPC, zstd) or parquet (zstd)")
	f.StringVar(&o.Shard, "shard", "0/1", "run shard i of n (i/n)")
	f.Float64Var(&o.NoiseSigma, "noise", 0, "measurement noise sigma (0: off)")
	f.IntVar(&o.NoiseRuns, "runs", 3, "runs per measurement (the minimum is kept) when noise is on")
	f.IntVar(&o.PartRows, "part-rows", 2048, "rows per output file (bounds file size)")
	bindFusion(cmd, &o.Fusion)
	bindStaging(cmd, &o.Staging)
	f.Var(checkedString(&o.Shapes, "shapes", func(s string) error { _, err := zoo.ParseShapeList(s); return err }), "shapes", "generate every model at each of these sizes of a dynamic dimension, NAME=V,V,... (e.g. seq=64,128,256; zoo list: DYNAMIC): "+
		"one program per size, named MODEL@seq=V, with its model's family; a model without the dimension is an error")
	return cmd
}

func runGen(ctx context.Context, o *GenOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	// Generation allocates fast and keeps little alive: collecting less often lets two
	// workers scale to ~1.9x one (gen.BenchmarkGenerate in dataset/gen) for a larger heap.
	defer debug.SetGCPercent(debug.SetGCPercent(gen.GCPercent))
	// ... but no more than the workers need (gen --task fusion --all --configs 16 peaked at
	// 7.3 GB on 2 workers; BenchmarkGenerateFusionMemory).
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(gen.MemoryLimit(o.Workers)))
	c, err := o.Target.chip()
	if err != nil {
		return err
	}
	models, err := zoo.Select(o.Models, o.All)
	if err != nil {
		return err
	}
	si, sn, err := gen.ParseShard(o.Shard)
	if err != nil {
		return err
	}
	rep := progress.NewLazy(o.IO.Err, "gen "+o.Task)
	opts := gen.Options{
		Task: dataset.Task(o.Task), Models: models, Out: o.Out, Format: dataset.Format(o.Format), Configs: o.Configs,
		Variants: o.Variants, Workers: o.Workers, Seed: o.Seed, ShardIndex: si, ShardCount: sn, Chip: c,
		Noise: tpusim.Options{NoiseSigma: o.NoiseSigma, Runs: o.NoiseRuns, Seed: o.Seed}, MaxRowsPerPart: o.PartRows, ToolVersion: Version, Fusion: o.Fusion, Staging: o.Staging, Shapes: o.Shapes,
		Progress: func(p gen.Progress) {
			rate := float64(p.Samples) / max(p.Elapsed.Seconds(), 1e-9)
			rep.Update(p.UnitsDone, p.UnitsTotal, fmt.Sprintf("units, %d rows, %d samples, %.0f samples/s", p.Rows, p.Samples, rate))
		},
	}
	// Every flag's value is checked as given: the library's defaults for zero values are
	// not for flags (`--configs 0` is an error, not 32).
	if err := opts.Validate(); err != nil {
		return err
	}
	res, err := gen.Generate(ctx, opts) // builds every model first: a bad one fails before any output
	rep.Done()
	if err != nil {
		return err
	}
	if o.Globals.JSON {
		return writeJSON(o.IO.Out, res)
	}
	fmt.Fprintf(o.IO.Out, "%s: %d units (%d resumed), %d rows, %d samples, %d duplicate kernels dropped, %d parts in %.1fs (%.0f samples/s)\n",
		o.Out, res.Units, res.Resumed, res.Rows, res.Samples, res.DuplicateKernels, res.Parts, res.Elapsed.Seconds(), res.SamplesPerSecond)
	return nil
}
