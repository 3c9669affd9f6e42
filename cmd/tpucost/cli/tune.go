package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/gnn"
	"github.com/tpucost/tpucost/internal/cliflag"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/tune"
)

// TuneOptions are the options of `tpucost tune`: the flags fill the embedded
// tune.Request, which runs them (its LoadModel: gnn.LoadFor unless a test sets one).
type TuneOptions struct {
	cmdIO
	Target TargetFlags
	tune.Request
	Bitserial BitserialTuneOptions // --task bitserial and its flags
}

// NewCmdTune builds `tpucost tune [SRC]`.
func NewCmdTune(ios IO, g *Globals) *cobra.Command {
	o := &TuneOptions{cmdIO: cmdIO{IO: ios, Globals: g}}
	cmd := &cobra.Command{
		Use:   "tune [SRC]",
		Short: "Autotune a program's compiler configs on the simulator, optionally guided by a learned model",
		Long: "Tune searches the per-pass configs of SRC (a zoo model or an HLO file) for the fastest program on the simulator, " +
			"within a budget of measurements. The default xtat schedule tunes layout and fusion jointly by simulated annealing, " +
			"then each kernel's tile and then its flags exhaustively; the other strategies (" + searchStrategies() + ") search " +
			"the passes of --kinds (default all) jointly; rl samples layout and fusion configs from a trained policy (--policy, see `tune train-policy`). With --model, strategies search on the model's predictions and only its top-k candidates are measured. " +
			"Before reporting, the search's best, the starting program and the default compile are re-measured with more runs, and the best is kept only if it is faster beyond the noise: the result is never slower than the default compile (nor the start). " +
			"The report gives default_ns and tuned_ns (noiseless simulated times), the speedup, the measurements used, the modelled " +
			"hardware time they cost and the wall time; --out writes the tuned config, which `tpucost sim SRC --config F` reproduces. " +
			"--fusion partition starts every strategy from the partition-fusion program (the default compile competes with it). " +
			"With --models or --all, several programs are tuned in turn (sharing --store) and summarized. " +
			"With --shapes NAME=V,V,... (a list of one dynamic dimension's sizes), one shape-generic search tunes SRC at every size and reports per size the best config and the dispatch rule; --compare-per-shape adds the per-size baseline. " +
			"With --lengths L,L,..., it tunes the compiled ragged program of a batch of those sequence lengths on a bert_*/gpt2_* model (see sim --lengths): each candidate is a config of the ragged form, applied to every part of the ragged program and timed as sim --lengths times ragged_ns; it reports padded, ideal and ragged times with default and tuned configs.",
		Args: cliflag.AtMostOneArg("at most one HLO file or zoo model name (SRC)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Src = args[0]
			}
			if o.Bitserial.Task != "" || o.Bitserial.Backend != "sim" {
				return runTuneBitserial(cmd, o, &o.Bitserial)
			}
			if err := refuseFlagsWhy(cmd, "only --task bitserial takes it", bitserialTuneFlags()...); err != nil {
				return err
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
	f.Var(checkedString(&o.Shapes, "shapes", tune.CheckShapes), "shapes", shapesUsage+"; a list of one dimension's sizes, NAME=V,V,... (e.g. seq=64,128,256), tunes them in one shape-generic search")
	f.Var(lengthsFlag(&o.Lengths), "lengths", "tune the compiled ragged program of a batch of these sequence lengths (L,L,..., uniform:..., zipf:..., file:PATH; a bert_*/gpt2_* model; see sim --lengths), scored by its ragged time")
	f.BoolVar(&o.ComparePerShape, "compare-per-shape", false, "with a --shapes list: also tune each size on its own with the same strategy, seed and budget (the baseline; per_shape in --json)")
	f.BoolVar(&o.MicroKernels, "micro-kernels", false, "with a --shapes list or range (seq=LO..HI, seq=uniform:LO-HI:N:SEED): one joint search over micro-kernels with a micro-kernel cost model (after DietCode); --budget caps its kernel measurements, --out writes the dispatch table that sim --shapes seq=V --config FILE applies")
	f.StringVar(&o.Models, "models", "", "batch mode: comma-separated zoo models or HLO files")
	f.BoolVar(&o.All, "all", false, "batch mode: every zoo model")
	d := tune.Defaults()
	f.StringVar(&o.Strategy, "strategy", string(d.Strategy), "search strategy: "+tune.StrategyNames())
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
	f.StringVar(&o.Policy, "policy", "", "with --strategy rl: the layout and fusion policy checkpoint `DIR` (as tpucost tune train-policy writes)")
	f.StringVar(&o.Kinds, "kinds", "", "config kinds the non-xtat strategies search, comma-separated: "+tune.KindNames(compiler.Kinds())+" (default: all; "+tune.KindList(tune.RLKinds())+" for rl)")
	bindBitserialTune(cmd, &o.Bitserial)
	cmd.AddCommand(NewCmdTrainPolicy(ios, g))
	return cmd
}

func runTune(ctx context.Context, o *TuneOptions) error {
	o.Chip, o.Log = o.Target.spec(), o.IO.Err
	if o.LoadModel == nil {
		o.LoadModel = loadModel
	}
	return o.printResult(o.Request.Run(ctx))
}

// loadModel loads a learned model checkpoint for `tune --model` (gnn.LoadFor) for chip c:
// the model and, when it was trained for another target and allowMismatch allows it,
// what differs.
func loadModel(dir string, c tpusim.Chip, allowMismatch bool) (tune.Model, string, error) {
	target := gnn.Target{Chip: c.Name, VMEMBytes: c.VMEMBytes, Simulator: tpusim.Version, Cost: c.Target}
	l, err := gnn.LoadFor(dir, func(gnn.Meta) (gnn.Target, error) { return target, nil }, allowMismatch)
	if err != nil {
		return nil, "", err
	}
	return l.Predictor, l.Mismatch, nil
}
