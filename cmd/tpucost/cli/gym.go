package cli

import (
	"fmt"

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
		Short: "Train a pass-ordering agent by REINFORCE or PPO on the gym",
		Long: "Train trains a policy over the gym's actions (a GraphSAGE encoder of the module plus its op-count histogram) by REINFORCE " +
			"with a moving-average baseline: each iteration runs --samples episodes per program and takes one Adam step " +
			"(--algo ppo: --epochs Adam steps on PPO's clipped surrogate of the same episodes). " +
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
	f.IntVar(&o.MaxSteps, "max-steps", gym.DefaultMaxSteps, "episode limit (passes per episode)")
	f.Float64Var(&o.LR, "lr", 0.01, "Adam learning rate")
	f.Float64Var(&o.Entropy, "entropy", 0.01, "entropy bonus weight, >= 0 (0: no entropy bonus)")
	f.StringVar(&o.Reward, "reward", "ops", "what a step's reward measures: ops (op-count reduction) or time (simulated-time reduction, one simulation per step)")
	f.StringVar(&o.Algorithm, "algo", "reinforce", "training algorithm: reinforce (one step per iteration), ppo (clipped surrogate, --epochs steps per iteration) or effect (a pass-effect model: the network regressed on every pass's effect on the modules a beam search expands, --iterations epochs)")
	f.IntVar(&o.Epochs, "epochs", 0, "PPO: Adam steps over each iteration's episodes (0: 4); --algo ppo only")
	f.Float64Var(&o.Clip, "clip", 0, "PPO: the ratio clip epsilon, in (0, 1) (0: 0.2); --algo ppo only")
	f.StringVar(&o.Advantages, "advantages", "auto", "advantage scaling: normalized (divided by their standard deviation per iteration), raw, or auto (normalized for ppo, raw for reinforce)")
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
		Short: "Compare an agent's pass order with XLA's default order, random, greedy and beam search",
		Long: "Eval reports, per program, the op count and simulated time reached by XLA's own default order (its CPU pipeline), random search, " +
			"greedy search (one-step lookahead), beam search in a random pass order and the agent (by default the same beam search in its policy's pass order; " +
			"--agent-search sample: its most likely sequence, then sampled ones), the last four at an equal budget of " +
			"compiler calls (--budget pass runs), and the agent's gain_vs_default: (ops it removed - ops the default removed) / |ops the default removed|. " +
			"Programs of a model variant the agent trained on (the same zoo model as inference graph or training step, at any batch size) are refused.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runGymEval(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Agent, "agent", "", "agent checkpoint directory (required)")
	f.StringVar(&o.Programs, "programs", "heldout", "comma-separated programs (zoo models, HLO files, bench:NAME) or sets (train, heldout, all)")
	f.Int64Var(&o.Seed, "seed", 1, "seed of random search and of the agent's sampled episodes")
	f.IntVar(&o.Budget, "budget", 0, "compiler calls (pass runs) per search and program (0: passes x max steps)")
	f.StringVar(&o.Chip, "chip", "", "tpusim chip preset of sim_ns (default: the simulator's default chip)")
	f.IntVar(&o.MaxSteps, "max-steps", 0, "the episode limit (0: the one the agent trained with)")
	f.BoolVar(&o.Verify, "verify", false, "run the HLO verifier after every pass of the agent's episodes")
	f.StringVar(&o.AgentSearch, "agent-search", "beam", "how the agent spends its budget: beam (beam search in its policy's pass order) or sample (its most likely sequence, then sampled ones)")
	f.IntVar(&o.BeamWidth, "beam-width", 0, fmt.Sprintf("modules kept per depth by the beam searches (0: %d)", gym.DefaultBeamWidth))
	f.IntVar(&o.BeamLookahead, "beam-lookahead", gym.DefaultBeamLookahead, "passes of the pass order tried on each new module that removes no op from its parent, to judge it, by the beam searches (0: none)")
	f.IntVar(&o.BeamChildren, "beam-children", 0, fmt.Sprintf("new modules sought per expanded module by the beam searches (0: %d)", gym.DefaultBeamChildren))
	f.StringVar(&o.Judge, "judge", "", "what random search, greedy search and the agent's best prefix minimise: ops or time (default: what the agent trained for, its checkpoint's reward)")
	return cmd
}

func runGymEval(cmd *cobra.Command, o *GymEvalOptions) error {
	o.Log = o.IO.Err
	return o.printResult(o.EvalRequest.Run(cmd.Context()))
}
