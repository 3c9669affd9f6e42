package cli

import (
	"context"
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tpucost/tpucost/bitserial/lutcpu"
	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/dataset/gen"
	"github.com/tpucost/tpucost/internal/cliflag"
)

// The bitserial task (issue 37): the bit-serial LUT kernel's configs measured on this
// machine's CPU (package bitserial/lutcpu), through gen, train, eval and tune.

// backendNames are the --backend values of gen and tune: sim (the TPU simulator, the
// four compiler tasks) and cpu (this machine, the bitserial task).
func backendNames() []string { return []string{"sim", "cpu"} }

// bindBackend adds --backend to a command.
func bindBackend(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "backend", "sim", "where configurations are timed: sim (the TPU simulator; tile, flags, fusion, layout) or cpu (this machine's processor; --task bitserial)")
}

// checkBackend refuses a --backend that is not one of backendNames, or that does not
// time task.
func checkBackend(task, backend string) error {
	switch {
	case !slices.Contains(backendNames(), backend):
		return cliflag.Invalid("backend", backend, "want sim or cpu")
	case task == lutcpu.TaskName && backend != "cpu":
		return cliflag.Invalid("backend", backend, "the bitserial task is measured on this machine's processor: want cpu")
	case task != lutcpu.TaskName && backend == "cpu":
		return cliflag.Invalid("backend", backend, "only --task bitserial is measured on the CPU; the "+task+" task is timed on the simulator: want sim")
	}
	return nil
}

// refuseFlags refuses any of the named flags set on cmd: they do not apply to the
// bitserial task.
func refuseFlags(cmd *cobra.Command, names ...string) error {
	return refuseFlagsWhy(cmd, "does not apply to --task bitserial", names...)
}

// refuseFlagsWhy refuses any of the named flags set on cmd, saying why.
func refuseFlagsWhy(cmd *cobra.Command, why string, names ...string) error {
	for _, n := range names {
		if f := cmd.Flags().Lookup(n); f != nil && f.Changed {
			return cliflag.Invalid(n, f.Value.String(), why)
		}
	}
	return nil
}

// bitserialTuneFlags are the flags only `tune --task bitserial` takes.
func bitserialTuneFlags() []string { return []string{"sample", "top", "fit-rounds", "data", "rounds"} }

// runGenBitserial is `gen --task bitserial --backend cpu`: --configs (default: the whole
// space), --runs (timed repeats per attempt, default 9), --seed, --format, --out (a
// measured-config table, package dataset).
func runGenBitserial(ctx context.Context, cmd *cobra.Command, o *GenOptions) error {
	if err := refuseFlags(cmd, "models", "all", "variants", "shard", "noise", "part-rows", "strict", "fusion", "staging", "shapes", "workers", "chip", "chip-file", "vmem"); err != nil {
		return err
	}
	m := lutcpu.DefaultMethod()
	if cmd.Flags().Changed("runs") {
		m.Repeats = o.NoiseRuns
		if err := m.Check(); err != nil {
			return cliflag.Invalid("runs", cmd.Flags().Lookup("runs").Value.String(), err.Error())
		}
	}
	f := dataset.Format(o.Format)
	if !f.Valid() {
		return cliflag.Invalid("format", o.Format, "want arrow or parquet")
	}
	r := lutcpu.GenRequest{Backend: o.Backend, Out: o.Out, Format: f, Seed: o.Seed, Method: m, ToolVersion: gen.ToolVersion, Progress: o.IO.Err}
	if cmd.Flags().Changed("configs") {
		if o.Configs < 1 {
			return cliflag.Invalid("configs", cmd.Flags().Lookup("configs").Value.String(), "want a positive count of configs to measure (unset: the whole space)")
		}
		r.Configs = o.Configs
	}
	return o.printResult(r.Run(ctx))
}

// runTrainBitserial is `train --task bitserial --data DIR --out DIR`: the learned model
// (ridge regression on log time) fitted to the dataset's training split
// (--test-fraction held out, --seed).
func runTrainBitserial(cmd *cobra.Command, o *TrainOptions) error {
	var other []string
	cmd.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
		if !slices.Contains([]string{"task", "data", "out", "seed", "test-fraction", "split"}, f.Name) {
			other = append(other, f.Name)
		}
	})
	if err := refuseFlags(cmd, other...); err != nil {
		return err
	}
	if o.Split != lutcpu.SplitRandom && o.Split != lutcpu.SplitProblem {
		return cliflag.Invalid("split", o.Split, "want random (configs held out) or problem (whole (P, z, b) problems held out) for --task bitserial")
	}
	r := lutcpu.TrainRequest{Data: o.Data, Out: o.Out, Split: o.Split, TestFrac: o.TestFraction, Seed: o.Seed, Lambda: lutcpu.DefaultLambda}
	return o.printResult(r.Run())
}

// BitserialTuneOptions are the flags `tune --task bitserial` adds.
type BitserialTuneOptions struct {
	Task    string
	Backend string
	Data    string
	Sample  int
	Top     int
	// FitRounds: rounds of best-predicted measurements, the model refitted before each
	// (without --model; 1 with it).
	FitRounds int
	Rounds    int
}

// bindBitserialTune adds tune's bitserial flags.
func bindBitserialTune(cmd *cobra.Command, b *BitserialTuneOptions) {
	f := cmd.Flags()
	f.StringVar(&b.Task, "task", "", "bitserial: tune the bit-serial LUT kernel's config on this machine's CPU (with --backend cpu) instead of a program")
	bindBackend(cmd, &b.Backend)
	f.IntVar(&b.Sample, "sample", 200, "with --task bitserial: configs measured, spread over the problems and variants, to fit the learned model (0 with --model: none)")
	f.IntVar(&b.Top, "top", 4, "with --task bitserial: best-predicted variants measured per (P, z, b) problem, 1-36, in all rounds")
	f.IntVar(&b.FitRounds, "fit-rounds", 2, "with --task bitserial and no --model: rounds the --top variants are measured in, the model refitted to every measurement before each (with --model: 1)")
	f.StringVar(&b.Data, "data", "", "with --task bitserial: an exhaustive dataset of the space (gen --task bitserial --backend cpu) to compare the tuned config with")
	f.IntVar(&b.Rounds, "rounds", 9, "with --task bitserial and --data: alternating re-measurements of the tuned and exhaustive bests")
}

// runTuneBitserial is `tune --task bitserial --backend cpu`.
func runTuneBitserial(cmd *cobra.Command, o *TuneOptions, b *BitserialTuneOptions) error {
	switch {
	case b.Task == "" && b.Backend == "cpu":
		return cliflag.Invalid("backend", b.Backend, "only --task bitserial is tuned on the CPU; a program is tuned on the simulator: want sim")
	case b.Task == "":
		return checkBackend("", b.Backend)
	case b.Task != lutcpu.TaskName:
		return cliflag.Invalid("task", b.Task, "want bitserial, or no --task to tune a program")
	}
	if err := checkBackend(b.Task, b.Backend); err != nil {
		return err
	}
	var other []string
	cmd.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
		if !slices.Contains([]string{"task", "backend", "data", "sample", "top", "fit-rounds", "rounds", "seed", "model", "runs"}, f.Name) {
			other = append(other, f.Name)
		}
	})
	if err := refuseFlags(cmd, other...); err != nil {
		return err
	}
	if o.Src != "" {
		return cliflag.Invalid("task", b.Task, "tunes the LUT kernel, not SRC "+o.Src)
	}
	m := lutcpu.DefaultMethod()
	if cmd.Flags().Changed("runs") {
		m.Repeats = o.Runs
		if err := m.Check(); err != nil {
			return cliflag.Invalid("runs", cmd.Flags().Lookup("runs").Value.String(), err.Error())
		}
	}
	fitRounds := b.FitRounds
	if o.ModelDir != "" && !cmd.Flags().Changed("fit-rounds") {
		fitRounds = 1 // a trained model is not refitted
	}
	r := lutcpu.TuneRequest{Backend: b.Backend, Model: o.ModelDir, Data: b.Data, Sample: b.Sample, Top: b.Top, FitRounds: fitRounds, Seed: o.Seed,
		Lambda: lutcpu.DefaultLambda, Method: m, Rounds: b.Rounds}
	return o.printResult(r.Run())
}

// runEvalBitserial is `eval --model DIR` of a bitserial model: Kendall τ of the learned
// and analytical models on the held-out configs of its split.
func runEvalBitserial(cmd *cobra.Command, o *EvalOptions) error {
	if err := refuseFlags(cmd, "split", "plots"); err != nil {
		return err
	}
	return o.printResult(lutcpu.Evaluate(o.ModelDir, o.DataDir))
}
