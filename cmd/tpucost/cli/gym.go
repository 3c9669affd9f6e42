package cli

import (
	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/gym"
)

// NewCmdGym builds `tpucost gym` and its subcommands.
func NewCmdGym(ios IO, g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gym",
		Short: "Pass-ordering environment (JSON lines on stdio) and its agents",
		Long: "The gym lets an agent choose the order of the target-independent HLO passes: each step runs one pass (or stops); " +
			"the reward is the op-count reduction divided by the program's initial op count.",
	}
	cmd.AddCommand(NewCmdGymServe(ios, g), NewCmdGymTrain(ios, g), NewCmdGymEval(ios, g))
	return cmd
}

// GymServeOptions are the options of `tpucost gym serve`: the flags fill the embedded
// gym.ServeRequest, which runs them.
type GymServeOptions struct {
	IO IO
	gym.ServeRequest
}

// NewCmdGymServe builds `tpucost gym serve`.
func NewCmdGymServe(ios IO, _ *Globals) *cobra.Command {
	o := &GymServeOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the pass-ordering environment as line-delimited JSON on stdin/stdout",
		Long: "Serve reads one JSON request per line on stdin ({\"op\":\"actions\"}, {\"op\":\"reset\",\"program\":P,\"seed\":S,\"max_steps\":N}, " +
			"{\"op\":\"step\",\"action\":A}) and writes one JSON response per line on stdout (observation, reward, done, info; " +
			"or ok=false with an error naming the line). It ends at EOF. See docs/gym.md.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.ServeRequest.Run(cmd.Context(), o.IO.In, o.IO.Out)
		},
	}
	cmd.Flags().StringVar(&o.Programs, "programs", "", "comma-separated programs (zoo models, HLO files, bench:NAME) or sets (train, heldout, all) a reset without a program picks from")
	cmd.Flags().BoolVar(&o.Verify, "verify", false, "run the HLO verifier after every pass")
	return cmd
}

// GymTrainOptions are the options of `tpucost gym train`: the flags fill the embedded
// gym.TrainRequest, which runs them.
type GymTrainOptions struct {
	cmdIO
	gym.TrainRequest
}

// NewCmdGymTrain builds `tpucost gym train`.
func NewCmdGymTrain(ios IO, g *Globals) *cobra.Command {
	o := &GymTrainOptions{cmdIO: cmdIO{IO: ios, Globals: g}}
	cmd := &cobra.Command{
		Use:   "train --agent DIR [--programs train]",
		Short: "Train a pass-ordering agent by REINFORCE on the gym",
		Long: "Train trains a policy over the gym's actions (a GraphSAGE encoder of the module plus its op-count histogram) by REINFORCE " +
			"with a moving-average baseline: each iteration runs --samples episodes per program and takes one Adam step. " +
			"The agent is written atomically, with a checksum, to --agent.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runGymTrain(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Agent, "agent", "", "agent checkpoint directory to write (required)")
	f.StringVar(&o.Programs, "programs", "train", "comma-separated programs (zoo models, HLO files, bench:NAME) or sets (train, heldout, all)")
	f.Int64Var(&o.Seed, "seed", 1, "seed of the initial weights and the sampling")
	f.IntVar(&o.Iterations, "iterations", 30, "training iterations (each runs --samples episodes per program, then one update)")
	f.IntVar(&o.Samples, "samples", 4, "episodes per program per iteration, at least 2")
	f.IntVar(&o.MaxSteps, "max-steps", 20, "episode limit (passes per episode)")
	f.Float64Var(&o.LR, "lr", 0.01, "Adam learning rate")
	f.Float64Var(&o.Entropy, "entropy", 0.01, "entropy bonus weight, >= 0 (0: no entropy bonus)")
	return cmd
}

func runGymTrain(cmd *cobra.Command, o *GymTrainOptions) error {
	o.Log = o.IO.Err
	return o.printResult(o.TrainRequest.Run(cmd.Context()))
}

// GymEvalOptions are the options of `tpucost gym eval`: the flags fill the embedded
// gym.EvalRequest, which runs them.
type GymEvalOptions struct {
	cmdIO
	gym.EvalRequest
}

// NewCmdGymEval builds `tpucost gym eval`.
func NewCmdGymEval(ios IO, g *Globals) *cobra.Command {
	o := &GymEvalOptions{cmdIO: cmdIO{IO: ios, Globals: g}}
	cmd := &cobra.Command{
		Use:   "eval --agent DIR [--programs heldout]",
		Short: "Compare an agent's pass order with the default pipeline and random orders",
		Long: "Eval runs the agent's greedy pass sequence on every program and reports the op-count reduction (fraction of the initial ops removed) " +
			"beside the default pipeline's (every pass, iterated to a fixed point), one iteration of it (every pass once, in order, as XLA runs a pipeline), " +
			"the default order cut to the agent's number of passes, and random sequences of that length (mean and SD over --random-seeds). " +
			"Programs of a model variant the agent trained on (the same zoo model as inference graph or training step, at any batch size) are refused.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runGymEval(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Agent, "agent", "", "agent checkpoint directory (required)")
	f.StringVar(&o.Programs, "programs", "heldout", "comma-separated programs (zoo models, HLO files, bench:NAME) or sets (train, heldout, all)")
	f.Int64Var(&o.Seed, "seed", 1, "seed of the random sequences")
	f.IntVar(&o.RandomSeeds, "random-seeds", 5, "random sequences per program")
	f.IntVar(&o.MaxSteps, "max-steps", 0, "the agent's episode limit (0: the one it trained with)")
	f.BoolVar(&o.Verify, "verify", false, "run the HLO verifier after every pass of the agent's sequence")
	return cmd
}

func runGymEval(cmd *cobra.Command, o *GymEvalOptions) error {
	o.Log = o.IO.Err
	return o.printResult(o.EvalRequest.Run(cmd.Context()))
}
