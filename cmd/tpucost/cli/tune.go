package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/zoo"
	"github.com/tpucost/tpucost/gnn"
	"github.com/tpucost/tpucost/internal/progress"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/tpusim/ragged"
	"github.com/tpucost/tpucost/tune"
)

// TuneOptions are the options of `tpucost tune`.
type TuneOptions struct {
	IO      IO
	Globals *Globals
	Target  TargetFlags

	Src    string
	Models string // comma-separated sources for batch mode
	Shapes string // --shapes: sizes of dynamic dimensions of every source, or a list of one's (shape-generic)
	// ComparePerShape: with a --shapes list, also tune each size on its own (the baseline).
	ComparePerShape bool
	Lengths         string // --lengths: tune the ragged form of a batch of these sequence lengths
	All             bool   // batch mode over the whole zoo
	Strategy        string
	ModelDir        string
	TopK            int
	KernelTopK      int
	ModelEvals      int
	Budget          int
	Seed            int64
	Noise           float64
	Runs            int
	Workers         int
	Out             string
	Force           bool
	Store           string
	Policy          string               // rl: the policy checkpoint directory
	Kinds           string               // comma-separated config kinds the non-XTAT strategies search
	Fusion          compiler.FusionRule  // --fusion: the starting program's fusion rule
	Staging         compiler.StagingMode // --staging
	// AllowMismatch tunes with a --model trained for another chip, VMEM size or simulator
	// than the one tuned for, with a warning and chip_mismatch in --json.
	AllowMismatch bool

	// LoadModel loads a learned model checkpoint for --model: the model and, when it was
	// trained for another target and --allow-mismatch allows it, what differs (tests
	// replace it; nil: gnn.LoadFor).
	LoadModel func(dir string) (m tune.Model, mismatch string, err error)
}

// NewCmdTune builds `tpucost tune [SRC]`.
func NewCmdTune(ios IO, g *Globals) *cobra.Command {
	o := &TuneOptions{IO: ios, Globals: g}
	cmd := &cobra.Command{
		Use:   "tune [SRC]",
		Short: "Autotune a program's compiler configs on the simulator, optionally guided by a learned model",
		Long: "Tune searches the per-pass configs of SRC (a zoo model or an HLO file) for the fastest program on the simulator, " +
			"within a budget of measurements. The default xtat schedule tunes layout and fusion jointly by simulated annealing, " +
			"then each kernel's tile and then its flags exhaustively; the other strategies (exhaustive, random, sa, evo, mbo) search " +
			"the passes of --kinds (default all four) jointly; rl samples layout and fusion configs from a trained policy (--policy, see `tune train-policy`). With --model, strategies search on the model's predictions and only its top-k candidates are measured. " +
			"Before reporting, the search's best, the starting program and the default compile are re-measured with more runs, and the best is kept only if it is faster beyond the noise: the result is never slower than the default compile (nor the start). " +
			"The report gives default_ns and tuned_ns (noiseless simulated times), the speedup, the measurements used, the modelled " +
			"hardware time they cost and the wall time; --out writes the tuned config, which `tpucost sim SRC --config F` reproduces. " +
			"--fusion partition starts every strategy from the partition-fusion program (the default compile competes with it). " +
			"With --models or --all, several programs are tuned in turn (sharing --store) and summarized. " +
			"With --shapes NAME=V,V,... (a list of one dynamic dimension's sizes), one shape-generic search tunes SRC at every size and reports per size the best config and the dispatch rule; --compare-per-shape adds the per-size baseline. " +
			"With --lengths L,L,..., it tunes the ragged form of a batch of those sequence lengths (see sim --lengths): the same search over the distinct lengths, scored by the batch's ragged time.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Src = args[0]
			}
			if !cmd.Flags().Changed("fusion") {
				o.Fusion = "" // unset: the strategy's own start (partition's, or the default compile)
			}
			return runTune(cmd.Context(), o)
		},
	}
	o.Target.bind(cmd)
	bindFusion(cmd, &o.Fusion)
	bindStaging(cmd, &o.Staging)
	f := cmd.Flags()
	f.Var(checkedString(&o.Shapes, "shapes", checkTuneShapes), "shapes", shapesUsage+"; a list of one dimension's sizes, NAME=V,V,... (e.g. seq=64,128,256), tunes them in one shape-generic search")
	f.Var(lengthsFlag(&o.Lengths), "lengths", "tune the ragged form of a batch of these sequence lengths (L,L,...; a zoo model with seq; see sim --lengths): one shape-generic search over the distinct lengths, scored by the batch's ragged time")
	f.BoolVar(&o.ComparePerShape, "compare-per-shape", false, "with a --shapes list: also tune each size on its own with the same strategy, seed and budget (the baseline; per_shape in --json)")
	f.StringVar(&o.Models, "models", "", "batch mode: comma-separated zoo models or HLO files")
	f.BoolVar(&o.All, "all", false, "batch mode: every zoo model")
	d := tune.Defaults()
	f.StringVar(&o.Strategy, "strategy", string(d.Strategy), "search strategy: "+strategyNames())
	f.StringVar(&o.ModelDir, "model", "", "learned model checkpoints DIR[,DIR]: an absolute (fusion/layout) model guides layout and fusion, a relative (tile/flags) one ranks kernel options; only their top-k are measured")
	f.BoolVar(&o.AllowMismatch, "allow-mismatch", false, "with --model: tune for another --chip/--vmem/simulator than a model was trained for (warns; chip_mismatch in --json)")
	f.IntVar(&o.TopK, "topk", d.TopKGraph, "with --model: program-level candidates measured (>= 1)")
	f.IntVar(&o.KernelTopK, "kernel-topk", d.TopKKernel, "with --model: options measured per kernel (>= 1)")
	f.IntVar(&o.ModelEvals, "model-evals", d.ModelEvals, "with --model: programs the model scores per search (>= 1)")
	f.IntVar(&o.Budget, "budget", 300, "simulator measurements (programs and kernels; >= 1)")
	f.Int64Var(&o.Seed, "seed", 1, "seed of the search and the measurement noise")
	f.Float64Var(&o.Noise, "noise", 0.02, "measurement noise sigma in [0, 1] (a run takes true*(1+|N(0,sigma)|); 0: off)")
	f.IntVar(&o.Runs, "runs", d.Runs, "runs per measurement, the minimum is reported (1-1000)")
	f.IntVar(&o.Workers, "workers", 0, fmt.Sprintf("parallel measurements, 0-%d (0: all cores, the default); results do not depend on it", tune.MaxWorkers))
	f.StringVar(&o.Out, "out", "", "write the tuned config (JSON) to this file; in batch mode, a directory of MODEL.json")
	f.BoolVar(&o.Force, "force", false, "let --out overwrite a file that is not a config, or write into a model, dataset, policy or agent directory")
	f.StringVar(&o.Store, "store", "", "global config store (SQLite file): seeds candidate repair, records the results")
	f.StringVar(&o.Policy, "policy", "", "with --strategy rl: the layout and fusion policy checkpoint DIR (`tpucost tune train-policy`)")
	f.StringVar(&o.Kinds, "kinds", "", "config kinds the non-xtat strategies search, comma-separated: layout, fusion, tile, flags, staging (default: all; layout,fusion for rl)")
	cmd.AddCommand(NewCmdTrainPolicy(ios, g))
	return cmd
}

// sources returns the programs to tune and whether that is batch mode (--models/--all).
func (o *TuneOptions) sources() ([]string, bool, error) {
	if o.Src != "" {
		if o.Models != "" || o.All {
			return nil, false, errors.New("give exactly one of SRC, --models or --all")
		}
		return []string{o.Src}, false, nil
	}
	if o.Models == "" && !o.All {
		return nil, false, errors.New("give exactly one of SRC, --models or --all")
	}
	srcs, err := zoo.Select(o.Models, o.All)
	return srcs, true, err
}

func runTune(ctx context.Context, o *TuneOptions) error {
	srcs, batch, err := o.sources()
	if err != nil {
		return err
	}
	c, err := o.Target.chip()
	if err != nil {
		return err
	}
	opts := tune.Defaults()
	opts.Chip, opts.Strategy, opts.Budget, opts.Seed, opts.Workers, opts.Noise, opts.Runs = c, tune.Strategy(o.Strategy), o.Budget, o.Seed, o.Workers, o.Noise, o.Runs
	opts.TopKGraph, opts.TopKKernel, opts.ModelEvals = o.TopK, o.KernelTopK, o.ModelEvals
	opts.Fusion, opts.Staging = o.Fusion, o.Staging
	if o.Lengths != "" {
		return runTuneRagged(ctx, o, srcs, batch, opts)
	}
	if list, ok := shapeList(o.Shapes); ok {
		return runTuneShapes(ctx, o, srcs, batch, list, opts)
	}
	if o.ComparePerShape {
		return errors.New("--compare-per-shape: give --shapes a list of sizes (e.g. seq=64,128,256)")
	}
	if o.Shapes != "" {
		if _, err := zoo.ParseShapes(o.Shapes); err != nil {
			return fmt.Errorf("--shapes: %w", err)
		}
		opts.Shapes = o.Shapes
	}
	if err := opts.Validate(); err != nil {
		return tuneFlagError(err)
	}
	var out *tune.ConfigOut
	if o.Out != "" {
		if out, err = tune.OpenConfigOut("--out", o.Out, batch, o.Force); err != nil {
			return err
		}
		defer out.Close()
	}
	st, _ := tune.ParseStrategy(o.Strategy) // valid: its canonical spelling
	kinds, err := tune.ParseKinds(o.Kinds)
	if err != nil {
		return err
	}
	kinds, policy, err := tune.SearchKinds(st, kinds, o.Policy)
	if err != nil {
		return err
	}
	if kinds != nil {
		opts.Kinds = kinds
	}
	opts.Policy = policy
	mismatch := false
	if o.ModelDir != "" {
		if opts.GraphModel, opts.KernelModel, mismatch, err = loadTuneModels(o, c); err != nil {
			return err
		}
	}
	if o.Store != "" {
		s, err := tune.OpenStore(o.Store, c.Name, tpusim.Version)
		if err != nil {
			return err
		}
		defer s.Close()
		opts.Store = s
	}
	var bar *progress.Reporter
	opts.Progress = func(p tune.Progress) {
		if bar == nil {
			bar = progress.New(o.IO.Err, "tune "+p.Program, int64(p.Budget))
		}
		best := "-"
		if p.BestNs > 0 && p.BestNs < 1e300 {
			best = fmt.Sprintf("%.0f ns", p.BestNs)
		}
		bar.Update(int64(p.Measurements), fmt.Sprintf("[%s] best %s", p.Phase, best))
	}
	done := func(r *tune.Report) {
		if bar != nil {
			bar.Done()
			bar = nil
		}
		r.WriteDone(o.IO.Err)
	}
	var writeErr error
	finished := 0
	b, err := tune.RunMany(ctx, srcs, opts, func(r *tune.Report) {
		finished++
		done(r)
		if out != nil && writeErr == nil {
			writeErr = out.Write(r)
		}
	})
	if err != nil {
		if bar != nil {
			bar.Done()
		}
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return interrupted(o, srcs, finished, batch, err)
		}
		return err
	}
	if writeErr != nil {
		return writeErr
	}
	if !batch {
		return printTuneReport(o, b.Reports[0], mismatch)
	}
	if o.Globals.JSON {
		return writeJSON(o.IO.Out, struct {
			*tune.BatchReport
			ChipMismatch bool `json:"chip_mismatch"`
		}{b, mismatch})
	}
	return b.WriteText(o.IO.Out, st, o.Budget)
}

// printTuneReport prints the report of one program; mismatch says a --model was trained
// for another target (--allow-mismatch).
func printTuneReport(o *TuneOptions, r *tune.Report, mismatch bool) error {
	if o.Globals.JSON {
		return writeJSON(o.IO.Out, struct {
			*tune.Report
			ChipMismatch bool `json:"chip_mismatch"`
		}{r, mismatch})
	}
	if err := r.WriteText(o.IO.Out, o.Fusion, mismatch); err != nil {
		return err
	}
	if o.Out != "" {
		fmt.Fprintf(o.IO.Out, "tuned config written to %s\n", o.Out)
	}
	return nil
}

// interrupted is the error of a tuning run stopped by its context (Ctrl-C): what was
// kept and how to carry on. It wraps err (context.Canceled).
func interrupted(o *TuneOptions, srcs []string, finished int, batch bool, err error) error {
	if !batch {
		return fmt.Errorf("interrupted (%w): nothing was written; re-run the same command to tune %s again (the same seed gives the same result)", err, srcs[0])
	}
	kept := ""
	if o.Out != "" && finished > 0 {
		kept += ", their configs are in " + o.Out
	}
	if o.Store != "" && finished > 0 {
		kept += ", their results in the store " + o.Store
	}
	return fmt.Errorf("interrupted (%w): %d of %d programs finished%s, nothing was written for %s; to tune the rest with the same results, re-run the same command with --models %s in place of --models/--all",
		err, finished, len(srcs), kept, srcs[finished], strings.Join(srcs[finished:], ","))
}

// tuneFlag names the flag of a tune.Options field the command line sets.
func tuneFlag(field string) (string, bool) {
	switch field {
	case "Strategy", "Budget", "Runs", "Workers", "Noise", "Fusion":
		return "--" + strings.ToLower(field), true
	case "TopKGraph":
		return "--topk", true
	case "TopKKernel":
		return "--kernel-topk", true
	case "ModelEvals":
		return "--model-evals", true
	}
	return "", false
}

// tuneFlagError rewrites an invalid tune option as an error naming its flag.
func tuneFlagError(err error) error {
	var oe *tune.OptionError
	if errors.As(err, &oe) {
		if flag, ok := tuneFlag(oe.Field); ok {
			return fmt.Errorf("%s: got %s, want %s", flag, oe.Value, oe.Want)
		}
	}
	return err
}

func strategyNames() string {
	var names []string
	for _, st := range tune.Strategies() {
		names = append(names, string(st))
	}
	return strings.Join(names, ", ")
}

// loadTuneModels loads the comma-separated checkpoints of --model and gives each its role
// by what it predicts: an absolute model (fusion, layout) scores whole programs, a
// relative one (tile, flags) ranks a kernel's options. A model trained for another chip,
// VMEM size or simulator than c and tpusim's is refused unless --allow-mismatch, which
// warns and returns mismatch.
func loadTuneModels(o *TuneOptions, c tpusim.Chip) (graph, kernel tune.Model, mismatch bool, err error) {
	load := o.LoadModel
	if load == nil {
		load = func(dir string) (tune.Model, string, error) {
			target := gnn.Target{Chip: c.Name, VMEMBytes: c.VMEMBytes, Simulator: tpusim.Version, Cost: c.Target}
			l, err := gnn.LoadFor(dir, func(gnn.Meta) (gnn.Target, error) { return target, nil }, o.AllowMismatch)
			if err != nil {
				return nil, "", err
			}
			return l.Predictor, l.Mismatch, nil
		}
	}
	var models []tune.Model
	var names []string
	for _, dir := range strings.Split(o.ModelDir, ",") {
		if dir = strings.TrimSpace(dir); dir == "" {
			continue
		}
		m, msg, err := load(dir)
		if err != nil {
			return nil, nil, false, fmt.Errorf("--model %s: %w", dir, err)
		}
		if msg != "" {
			fmt.Fprintf(o.IO.Err, "WARNING: %s: its predictions are not validated for this target\n", msg)
			mismatch = true
		}
		models, names = append(models, m), append(names, dir)
	}
	graph, kernel, err = tune.AssignRoles(models, names)
	if err != nil {
		return nil, nil, false, fmt.Errorf("--model: %w", err)
	}
	return graph, kernel, mismatch, nil
}

// runTuneRagged is `tune SRC --lengths L,L,...`: the ragged form tuned (tune.RunRagged).
func runTuneRagged(ctx context.Context, o *TuneOptions, srcs []string, batch bool, opts tune.Options) error {
	switch {
	case batch:
		return errors.New("--lengths tunes one SRC, not --models or --all")
	case o.Shapes != "":
		return errors.New("--lengths sizes every sequence itself: drop --shapes")
	case o.ComparePerShape:
		return errors.New("--compare-per-shape goes with a --shapes list, not --lengths")
	case o.Out != "":
		return errors.New("--out: a ragged run has one config per length: they are in --json's shapes[].config")
	case o.Store != "":
		return errors.New("--store: a ragged run does not read or record a config store")
	case o.ModelDir != "":
		return errors.New("--model: a ragged run measures every candidate on the simulator")
	}
	if err := shapeRunKinds(o, &opts); err != nil {
		return err
	}
	if err := opts.Validate(); err != nil {
		return tuneFlagError(err)
	}
	lengths, err := ragged.ParseLengths(o.Lengths)
	if err != nil {
		return fmt.Errorf("--lengths: %w", err)
	}
	rep, err := tune.RunRagged(ctx, srcs[0], lengths, opts)
	var oe *tune.OptionError
	if errors.As(err, &oe) {
		return tuneFlagError(err)
	}
	if err != nil {
		return fmt.Errorf("--lengths: %w", err)
	}
	if o.Globals.JSON {
		return writeJSON(o.IO.Out, rep)
	}
	return rep.WriteText(o.IO.Out, o.Budget)
}

// shapeRunKinds applies --kinds to a shape-generic or ragged run (whose xtat runs as sa,
// so --kinds applies to it too) and refuses --policy (the rl strategy is not shape-generic).
func shapeRunKinds(o *TuneOptions, opts *tune.Options) error {
	if o.Policy != "" {
		return errors.New("--policy: a shape-generic run does not take the rl strategy")
	}
	kinds, err := tune.ParseKinds(o.Kinds)
	if err != nil {
		return err
	}
	if len(kinds) > 0 {
		opts.Kinds = kinds
	}
	return nil
}

// checkTuneShapes checks tune's --shapes: a --shapes value of every command
// (zoo.ParseShapes) or a list of one dimension's sizes (zoo.ParseShapeList).
func checkTuneShapes(s string) error {
	_, errList := zoo.ParseShapeList(s)
	if errList == nil {
		return nil
	}
	if _, err := zoo.ParseShapes(s); err != nil {
		if strings.Count(s, "=") > 1 {
			return err
		}
		return errList
	}
	return nil
}

// shapeList returns the sizes of a --shapes value that lists several of one dimension.
func shapeList(s string) (zoo.ShapeList, bool) {
	l, err := zoo.ParseShapeList(s)
	return l, err == nil && len(l.Values) > 1
}

// runTuneShapes is `tune SRC --shapes NAME=V,V,...`: one shape-generic search
// (tune.RunShapes), with --compare-per-shape the per-size baseline.
func runTuneShapes(ctx context.Context, o *TuneOptions, srcs []string, batch bool, list zoo.ShapeList, opts tune.Options) error {
	switch {
	case batch:
		return errors.New("--shapes with a list of sizes tunes one SRC, not --models or --all")
	case o.Out != "":
		return errors.New("--out: a shape-generic run has one config per size: they are in --json's shapes[].config")
	case o.Store != "":
		return errors.New("--store: a shape-generic run does not read or record a config store")
	}
	if err := shapeRunKinds(o, &opts); err != nil {
		return err
	}
	if err := opts.Validate(); err != nil {
		return tuneFlagError(err)
	}
	if o.ModelDir != "" {
		var err error
		if opts.GraphModel, opts.KernelModel, _, err = loadTuneModels(o, opts.Chip); err != nil {
			return err
		}
	}
	var bar *progress.Reporter
	prog := ""
	opts.Progress = func(p tune.Progress) {
		if bar != nil && p.Program+p.Phase != prog { // the per-shape baseline's next run
			bar.Done()
			bar = nil
		}
		if bar == nil {
			bar, prog = progress.New(o.IO.Err, "tune "+p.Program+" ["+p.Phase+"]", int64(p.Budget)), p.Program+p.Phase
		}
		bar.Update(int64(p.Measurements), "")
	}
	rep, err := tune.RunShapes(ctx, srcs[0], list, opts, o.ComparePerShape)
	if bar != nil {
		bar.Done()
	}
	if err != nil {
		return tuneFlagError(err)
	}
	if o.Globals.JSON {
		return writeJSON(o.IO.Out, rep)
	}
	return rep.WriteText(o.IO.Out, list)
}
