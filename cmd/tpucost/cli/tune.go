package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/zoo"
	"github.com/tpucost/tpucost/gnn"
	"github.com/tpucost/tpucost/internal/progress"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/tune"
)

// TuneOptions are the options of `tpucost tune`.
type TuneOptions struct {
	IO      IO
	Globals *Globals
	Target  TargetFlags

	Src        string
	Models     string // comma-separated sources for batch mode
	All        bool   // batch mode over the whole zoo
	Strategy   string
	ModelDir   string
	TopK       int
	KernelTopK int
	ModelEvals int
	Budget     int
	Seed       int64
	Noise      float64
	Runs       int
	Workers    int
	Out        string
	Store      string
	Policy     string // rl: the policy checkpoint directory
	Kinds      string // comma-separated config kinds the non-XTAT strategies search

	// LoadModel loads a learned model checkpoint for --model; nil: gnn.LoadPredictor.
	LoadModel func(dir string) (tune.Model, error)
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
			"the passes of --kinds (default all four) jointly; rl samples fusion configs from a trained policy (--policy, see `tune train-policy`). With --model, strategies search on the model's predictions and only its top-k candidates are measured. " +
			"The report gives default_ns and tuned_ns (noiseless simulated times), the speedup, the measurements used, the modelled " +
			"hardware time they cost and the wall time; --out writes the tuned config, which `tpucost sim SRC --config F` reproduces. " +
			"With --models or --all, several programs are tuned in turn (sharing --store) and summarized.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Src = args[0]
			}
			return runTune(context.Background(), o)
		},
	}
	o.Target.bind(cmd)
	f := cmd.Flags()
	f.StringVar(&o.Models, "models", "", "batch mode: comma-separated zoo models or HLO files")
	f.BoolVar(&o.All, "all", false, "batch mode: every zoo model")
	f.StringVar(&o.Strategy, "strategy", string(tune.XTAT), "search strategy: xtat, exhaustive, random, sa, evo, mbo, rl")
	f.StringVar(&o.ModelDir, "model", "", "learned model checkpoints DIR[,DIR]: an absolute (fusion/layout) model guides layout and fusion, a relative (tile/flags) one ranks kernel options; only their top-k are measured")
	f.IntVar(&o.TopK, "topk", 10, "with --model: program-level candidates measured")
	f.IntVar(&o.KernelTopK, "kernel-topk", 5, "with --model: options measured per kernel")
	f.IntVar(&o.ModelEvals, "model-evals", 500, "with --model: programs the model scores per search")
	f.IntVar(&o.Budget, "budget", 300, "simulator measurements (programs and kernels)")
	f.Int64Var(&o.Seed, "seed", 1, "seed of the search and the measurement noise")
	f.Float64Var(&o.Noise, "noise", 0.02, "measurement noise sigma (a run takes true*(1+|N(0,sigma)|); 0: off)")
	f.IntVar(&o.Runs, "runs", 3, "runs per measurement (the minimum is reported)")
	f.IntVar(&o.Workers, "workers", 0, "parallel measurements (default: all cores); results do not depend on it")
	f.StringVar(&o.Out, "out", "", "write the tuned config (JSON) to this file; in batch mode, a directory of MODEL.json")
	f.StringVar(&o.Store, "store", "", "global config store (SQLite file): seeds candidate repair, records the results")
	f.StringVar(&o.Policy, "policy", "", "with --strategy rl: the fusion policy checkpoint DIR (`tpucost tune train-policy`)")
	f.StringVar(&o.Kinds, "kinds", "", "config kinds the non-xtat strategies search, comma-separated: layout, fusion, tile, flags (default: all; fusion for rl)")
	cmd.AddCommand(NewCmdTrainPolicy(ios, g))
	return cmd
}

func (o *TuneOptions) sources() ([]string, bool, error) {
	n := 0
	for _, set := range []bool{o.Src != "", o.Models != "", o.All} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, false, errors.New("give exactly one of SRC, --models or --all")
	}
	switch {
	case o.Src != "":
		return []string{o.Src}, false, nil
	case o.All:
		var srcs []string
		for _, m := range zoo.All() {
			srcs = append(srcs, m.Name)
		}
		return srcs, true, nil
	}
	var srcs []string
	for _, s := range strings.Split(o.Models, ",") {
		if s = strings.TrimSpace(s); s != "" {
			srcs = append(srcs, s)
		}
	}
	if len(srcs) == 0 {
		return nil, false, errors.New("--models: no model named")
	}
	return srcs, true, nil
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
	st, err := tune.ParseStrategy(o.Strategy)
	if err != nil {
		return err
	}
	opts := tune.Options{
		Chip: c, Strategy: st, Budget: o.Budget, Seed: o.Seed, Workers: o.Workers, Noise: o.Noise, Runs: o.Runs,
		TopKGraph: o.TopK, TopKKernel: o.KernelTopK, ModelEvals: o.ModelEvals,
	}
	if opts.Kinds, opts.Policy, err = tuneRLOptions(o, st); err != nil {
		return err
	}
	if o.ModelDir != "" {
		if opts.GraphModel, opts.KernelModel, err = loadTuneModels(o.ModelDir, o.LoadModel, c); err != nil {
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
	if batch && o.Out != "" {
		if err := os.MkdirAll(o.Out, 0o755); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
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
		fmt.Fprintf(o.IO.Err, "tune %s: %d measurements, %.0f ns -> %.0f ns (%.3fx)\n", r.Program, r.Measurements, r.DefaultNs, r.TunedNs, r.Speedup)
	}
	var writeErr error
	b, err := tune.RunMany(ctx, srcs, opts, func(r *tune.Report) {
		done(r)
		if o.Out != "" && writeErr == nil {
			path := o.Out
			if batch {
				path = filepath.Join(o.Out, r.Program+".json")
			}
			if err := compiler.WriteConfig(path, r.Config); err != nil {
				writeErr = fmt.Errorf("--out: %w", err)
			}
		}
	})
	if err != nil {
		return err
	}
	if writeErr != nil {
		return writeErr
	}
	if !batch {
		return printTuneReport(o, b.Reports[0])
	}
	if o.Globals.JSON {
		return writeJSON(o.IO.Out, b)
	}
	w := table(o.IO.Out)
	fmt.Fprintln(w, "MODEL\tKERNELS\tDEFAULT_NS\tTUNED_NS\tSPEEDUP\tMEASUREMENTS\tHARDWARE_S\tWALL_S")
	for _, r := range b.Reports {
		fmt.Fprintf(w, "%s\t%d\t%.0f\t%.0f\t%.3f\t%d\t%.1f\t%.2f\n", r.Program, r.Kernels, r.DefaultNs, r.TunedNs, r.Speedup, r.Measurements, r.HardwareS, r.WallS)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(o.IO.Out, "%d programs, strategy %s, budget %d: mean speedup %.3fx (geomean %.3fx), max %.3fx; %d measurements, %.0f s hardware, %.1f s wall\n",
		len(b.Reports), st, o.Budget, b.MeanSpeedup, b.GeomeanSpeedup, b.MaxSpeedup, b.Measurements, b.HardwareS, b.WallS)
	return nil
}

func printTuneReport(o *TuneOptions, r *tune.Report) error {
	if o.Globals.JSON {
		return writeJSON(o.IO.Out, r)
	}
	guided := ""
	if r.ModelGuided {
		guided = ", model-guided"
	}
	fmt.Fprintf(o.IO.Out, "%s on %s (%s), strategy %s%s, budget %d, seed %d\n", r.Program, r.Chip, r.Simulator, r.Strategy, guided, r.Budget, r.Seed)
	w := table(o.IO.Out)
	fmt.Fprintln(w, "PHASE\tSTRATEGY\tMEASUREMENTS\tMODEL_EVALS\tBEST_NS")
	for _, p := range r.Phases {
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%.0f\n", p.Name, p.Strategy, p.Measurements, p.ModelEvaluations, p.BestNs)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(o.IO.Out, "default %.0f ns, tuned %.0f ns: speedup %.3fx; %d measurements (%d program, %d kernel), %.1f s hardware, %.2f s wall\n",
		r.DefaultNs, r.TunedNs, r.Speedup, r.Measurements, r.ProgramMeasures, r.KernelMeasures, r.HardwareS, r.WallS)
	if o.Out != "" {
		fmt.Fprintf(o.IO.Out, "tuned config written to %s\n", o.Out)
	}
	return nil
}

// loadTuneModels loads the comma-separated checkpoints of --model and gives each its role
// by what it predicts: an absolute model (fusion, layout) scores whole programs, a
// relative one (tile, flags) ranks a kernel's options.
func loadTuneModels(dirs string, load func(string) (tune.Model, error), c tpusim.Chip) (graph, kernel tune.Model, err error) {
	if load == nil {
		load = func(dir string) (tune.Model, error) { return gnn.LoadPredictor(dir, c.Target) }
	}
	for _, dir := range strings.Split(dirs, ",") {
		if dir = strings.TrimSpace(dir); dir == "" {
			continue
		}
		m, err := load(dir)
		if err != nil {
			return nil, nil, fmt.Errorf("--model %s: %w", dir, err)
		}
		switch {
		case m.Relative() && kernel == nil:
			kernel = m
		case !m.Relative() && graph == nil:
			graph = m
		default:
			return nil, nil, fmt.Errorf("--model: give at most one absolute (fusion/layout) and one relative (tile/flags) model; %s is a second %s model", dir, map[bool]string{true: "relative", false: "absolute"}[m.Relative()])
		}
	}
	return graph, kernel, nil
}
