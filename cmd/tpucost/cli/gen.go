package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/bitserial/lutcpu"
	"github.com/tpucost/tpucost/dataset/gen"
	"github.com/tpucost/tpucost/features"
	"github.com/tpucost/tpucost/zoo"
)

// GenOptions are the options of `tpucost gen`: the flags of a gen.Request.
type GenOptions struct {
	cmdIO
	Target TargetFlags
	gen.Request
	Backend string // --backend: sim, or cpu for --task bitserial
}

// NewCmdGen builds `tpucost gen`.
func NewCmdGen(ios IO, g *Globals) *cobra.Command {
	o := &GenOptions{cmdIO: cmdIO{IO: ios, Globals: g}}
	cmd := &cobra.Command{
		Use:   "gen --task " + taskAlternatives() + " --models a,b|--all --out DIR",
		Short: "Generate a dataset: random configs compiled, timed on tpusim, featurized, written as Arrow",
		Long: "Gen compiles zoo models (or HLO files) under random configurations, times every kernel's configurations on the simulator, " +
			"and writes one row per distinct kernel to Arrow IPC (zstd) or Parquet files in DIR. Work is split into units (model x variant); " +
			"--shard i/n runs the units u with u mod n = i, so n machines can each run one shard into the same DIR (or separate DIRs) and the union " +
			"equals one run. Parts are written atomically and committed in the shard's manifest (sizes and SHA-256, which readers verify); " +
			"running the same command again resumes after the last committed part. A run locks its shard of DIR: a second run on the same " +
			"shard fails, naming the process that holds it. A unit that fails to compile or simulate is recorded in the manifest with its error " +
			"and skipped; the summary counts the failed units (the dataset's and this run's) and the command then exits 1. --strict stops at the " +
			"first failure instead. A resume does not retry recorded failures (they are deterministic under the same settings).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkBackend(o.Task, o.Backend); err != nil {
				return err
			}
			if o.Task == lutcpu.TaskName {
				return runGenBitserial(cmd.Context(), cmd, o)
			}
			return runGen(cmd.Context(), o)
		},
	}
	o.Target.bind(cmd)
	f := cmd.Flags()
	f.StringVar(&o.Task, "task", "tile", "what configurations vary: "+taskNames()+"; or bitserial (with --backend cpu: the bit-serial LUT kernel's configs measured on this machine, docs/bitserial.md)")
	f.StringVar(&o.Models, "models", "", "comma-separated zoo models or HLO files")
	f.BoolVar(&o.All, "all", false, "every zoo model")
	f.StringVar(&o.Out, "out", "", "output directory")
	f.IntVar(&o.Configs, "configs", 32, "configs per kernel (tile, flags) or random program configs per model (fusion, layout); bitserial: configs of the space measured (unset: all 4,320)")
	f.IntVar(&o.Variants, "variants", 1, "program variants per model for tile/flags (variant 0 = default compile, others perturb layout and fusion)")
	f.IntVar(&o.Workers, "workers", 0, fmt.Sprintf("parallel workers, 0-%d (0: all cores, the default); the data does not depend on it", gen.MaxWorkers))
	f.Int64Var(&o.Seed, "seed", 1, "seed for config sampling, variants and noise")
	f.StringVar(&o.Format, "format", "arrow", "arrow (IPC, zstd) or parquet (zstd)")
	f.StringVar(&o.Shard, "shard", "0/1", "run shard i of n (i/n)")
	f.Float64Var(&o.NoiseSigma, "noise", 0, "measurement noise sigma (0: off)")
	f.IntVar(&o.NoiseRuns, "runs", 3, "runs per measurement (the minimum is kept) when noise is on; bitserial: timed repeats per attempt (unset: 9)")
	f.IntVar(&o.PartRows, "part-rows", 2048, "rows per output file (bounds file size)")
	f.BoolVar(&o.Strict, "strict", false, "stop at the first unit that fails to compile or simulate (default: record it in the manifest, skip it, exit 1 at the end)")
	bindFusion(cmd, &o.Fusion)
	bindStaging(cmd, &o.Staging)
	bindBackend(cmd, &o.Backend)
	f.Var(checkedString(&o.Shapes, "shapes", func(s string) error { _, err := zoo.ParseShapeList(s); return err }), "shapes", "generate every model at each of these sizes of a dynamic dimension, NAME=V,V,... (e.g. seq=64,128,256; zoo list: DYNAMIC): "+
		"one program per size, named MODEL@seq=V, with its model's family; a model without the dimension is an error")
	f.StringArrayVar(&o.Lengths, "lengths", nil, "generate each bert_*/gpt2_* model's compiled ragged program over this batch of lengths (a sim --lengths form: L,L,..., uniform:LO-HI:N:SEED, zipf:LO-HI:N:SEED, file:PATH; repeat the flag for more batches), "+
		"one program per batch named MODEL@lengths=SPEC, rows timed by the compiled ragged timing with the ragged extent's kernel features (feature set "+features.RaggedSet+"; with --task fusion --configs 1; docs/ragged.md)")
	return cmd
}

func runGen(ctx context.Context, o *GenOptions) error {
	o.ToolVersion, o.Progress = gen.ToolVersion, o.IO.Err
	rep, err := o.Run(ctx, o.Target.chipOf(ctx))
	if err := o.printResult(rep, err); err != nil {
		return err
	}
	return rep.Failed() // after the summary: exit 1 when units failed
}
