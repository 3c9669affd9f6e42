package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/compiler/zoo"
	"github.com/tpucost/tpucost/internal/dirlock"
	"github.com/tpucost/tpucost/internal/workers"
	"github.com/tpucost/tpucost/tune"
)

// TrainPolicyOptions are the options of `tpucost tune train-policy`.
type TrainPolicyOptions struct {
	IO      IO
	Globals *Globals
	Target  TargetFlags

	Programs string
	Out      string
	Seed     int64
	Episodes int
	Samples  int
	LR       float64
	Workers  int
	Kinds    string
}

// NewCmdTrainPolicy builds `tpucost tune train-policy`.
func NewCmdTrainPolicy(ios IO, g *Globals) *cobra.Command {
	o := &TrainPolicyOptions{IO: ios, Globals: g}
	cmd := &cobra.Command{
		Use:   "train-policy --programs A,B,... --out DIR",
		Short: "Train the layout and fusion policy of `tune --strategy rl` by REINFORCE on simulator measurements",
		Long: "Train-policy trains a graph-neural policy that decides, all at once, every layout-configurable node's layout (a distribution over " +
			"its minor-to-major orders) and every producer->consumer edge's fusion (a fuse probability) on the given programs: each episode samples " +
			"--samples configs per program, simulates them (reward log(default_ns/ns)) and takes one REINFORCE step with a moving-average baseline. " +
			"--kinds restricts it to layout or fusion. The policy is written atomically, with a checksum, to --out; " +
			"`tpucost tune --strategy rl --policy DIR` uses it on other programs (not on model variants of the training programs).",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return runTrainPolicy(context.Background(), o) },
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
	f.StringVar(&o.Kinds, "kinds", "layout,fusion", "decisions to train on, comma-separated: layout, fusion or both")
	return cmd
}

func runTrainPolicy(ctx context.Context, o *TrainPolicyOptions) error {
	if o.Out == "" {
		return errors.New("--out: a policy directory is required")
	}
	// Every flag as given: an out-of-range value is an error naming it, never a default.
	switch {
	case o.Episodes < 1:
		return fmt.Errorf("--episodes %d: want an integer >= 1", o.Episodes)
	case o.Samples < 2:
		return fmt.Errorf("--samples %d: want an integer >= 2 (REINFORCE compares samples)", o.Samples)
	case !(o.LR > 0 && o.LR <= 1):
		return fmt.Errorf("--lr %g: want a number in (0, 1]", o.LR)
	}
	if err := workers.Check("--workers", o.Workers); err != nil {
		return err
	}
	names, err := zoo.ParseList(o.Programs)
	if err != nil {
		return fmt.Errorf("--programs: %w", err)
	}
	var mods []*hlo.Module
	for _, s := range names {
		m, err := zoo.Resolve(s)
		if err != nil {
			return fmt.Errorf("--programs: %w", err)
		}
		mods = append(mods, m)
	}
	kinds, err := tune.ParseKinds(o.Kinds)
	if err != nil {
		return err
	}
	if len(kinds) == 0 {
		return errors.New("--kinds: no kind named (layout, fusion or both)")
	}
	if err := tune.CheckRLKinds(kinds); err != nil {
		return err
	}
	c, err := o.Target.chip()
	if err != nil {
		return err
	}
	// The policy directory is checked and locked before training, not after.
	lock, err := dirlock.AcquireDir(o.Out, "policy directory")
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	defer lock.Release()
	p, err := tune.TrainPolicy(ctx, mods, tune.TrainPolicyOptions{
		Chip: c, Seed: o.Seed, Episodes: o.Episodes, Samples: o.Samples, LR: o.LR, Workers: o.Workers, Kinds: kinds,
		Progress: func(r tune.EpisodeReport) {
			fmt.Fprintf(o.IO.Err, "episode %d/%d: mean reward %.4f, greedy %.4f, entropy %.3f nats/decision\n", r.Episode, o.Episodes, r.MeanReward, r.GreedyMean, r.MeanEntropy)
		},
	})
	if err != nil {
		return err
	}
	if err := tune.SavePolicy(o.Out, p); err != nil {
		return err
	}
	if o.Globals.JSON {
		return writeJSON(o.IO.Out, p.Meta)
	}
	return p.Meta.WriteText(o.IO.Out, o.Out)
}
