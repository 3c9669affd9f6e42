package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/tune"
)

// TrainPolicyOptions are the options of `tpucost tune train-policy`: the flags fill the
// embedded tune.TrainPolicyRequest, which runs them.
type TrainPolicyOptions struct {
	cmdIO
	Target TargetFlags
	tune.TrainPolicyRequest
}

// NewCmdTrainPolicy builds `tpucost tune train-policy`.
func NewCmdTrainPolicy(ios IO, g *Globals) *cobra.Command {
	o := &TrainPolicyOptions{cmdIO: cmdIO{IO: ios, Globals: g}}
	cmd := &cobra.Command{
		Use:   "train-policy --programs A,B,... --out DIR",
		Short: "Train the layout and fusion policy of `tune --strategy rl` by REINFORCE on simulator measurements",
		Long: "Train-policy trains a graph-neural policy that decides, all at once, every layout-configurable node's layout (a distribution over " +
			"its minor-to-major orders) and every producer->consumer edge's fusion (a fuse probability) on the given programs: each episode samples " +
			"--samples configs per program, simulates them (reward log(default_ns/ns)) and takes one REINFORCE step with a moving-average baseline. " +
			"--kinds restricts it to layout or fusion. The policy is written atomically, with a checksum, to --out; " +
			"`tpucost tune --strategy rl --policy DIR` uses it on other programs (not on model variants of the training programs).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runTrainPolicy(cmd.Context(), o) },
	}
	o.Target.bind(cmd)
	f := cmd.Flags()
	f.StringVar(&o.Programs, "programs", "", "comma-separated zoo models or HLO files to train on (required)")
	f.StringVar(&o.Out, "out", "", "policy checkpoint directory to write (required)")
	f.Int64Var(&o.Seed, "seed", 1, "seed of the initial weights and the sampling")
	f.IntVar(&o.Episodes, "episodes", 50, "training episodes (each samples every program once)")
	f.IntVar(&o.Samples, "samples", 8, "configs sampled per program per episode")
	f.Float64Var(&o.LR, "lr", 0.01, "Adam learning rate")
	f.IntVar(&o.Workers, "workers", 0, "parallel compiles and simulations (default: all cores); results do not depend on it")
	f.StringVar(&o.Kinds, "kinds", "layout,fusion", "decisions to train on, comma-separated: "+tune.RLKindChoices())
	return cmd
}

func runTrainPolicy(ctx context.Context, o *TrainPolicyOptions) error {
	o.Chip, o.Log = o.Target.spec(), o.IO.Err
	return o.printResult(o.TrainPolicyRequest.Run(ctx))
}
