package gym

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/tpucost/tpucost/internal/dirlock"
	"github.com/tpucost/tpucost/internal/saved"
	"github.com/tpucost/tpucost/nn/rl"
)

// ParseProgramList parses a --programs value: comma-separated programs (zoo models, HLO
// files, bench:NAME) or sets (train, heldout, all), expanded (ExpandPrograms). An empty
// list is nil, or with required an error; errors name --programs.
func ParseProgramList(list string, required bool) ([]string, error) {
	if strings.TrimSpace(list) == "" {
		if required {
			return nil, errors.New("--programs: no program named (programs: zoo models, HLO files, bench:NAME; sets: train, heldout, all)")
		}
		return nil, nil
	}
	ps, err := ExpandPrograms(strings.Split(list, ","))
	if err != nil {
		return nil, fmt.Errorf("--programs: %w", err)
	}
	return ps, nil
}

// TrainRequest is one run of `tpucost gym train` as its command line gives it: the flags'
// values, unchecked. Run checks every one as given (an out-of-range value is an error
// naming its flag, never a default), trains the agent (Train) and writes it to Agent
// (SaveAgent).
type TrainRequest struct {
	Agent      string // the agent checkpoint directory to write; required
	Programs   string // ParseProgramList; required
	Seed       int64
	Iterations int     // >= 1
	Samples    int     // episodes per program per iteration, >= 2
	MaxSteps   int     // >= 1
	LR         float64 // > 0, finite
	Entropy    float64 // >= 0, finite; 0: no entropy bonus
	Reward     string  // RewardOps or RewardTime ("": ops)
	Algorithm  string  // AlgoREINFORCE or AlgoPPO ("": REINFORCE)
	Epochs     int     // PPO's epochs per iteration, >= 0 (0: rl.DefaultEpochs); 0 under REINFORCE
	Clip       float64 // PPO's ratio clip, 0 or in (0, 1) (0: rl.DefaultClip); 0 under REINFORCE
	Advantages string  // AdvantagesAuto (""), AdvantagesNormalized or AdvantagesRaw
	// Log receives a line per iteration; nil: discarded.
	Log io.Writer
}

// AgentResult is a trained agent's record and the directory it was written to. Its JSON
// is the record (AgentMeta).
type AgentResult = saved.Result[*AgentMeta]

// check checks the request's values in the order of the command line's errors.
func (q TrainRequest) check() error {
	if q.Agent == "" {
		return errors.New("--agent: an agent directory is required")
	}
	switch {
	case q.Iterations < 1:
		return fmt.Errorf("--iterations \"%d\": want at least 1", q.Iterations)
	case q.Samples < 2:
		return fmt.Errorf("--samples \"%d\": want at least 2", q.Samples)
	case q.MaxSteps < 1:
		return fmt.Errorf("--max-steps \"%d\": want at least 1", q.MaxSteps)
	case !(q.LR > 0) || math.IsInf(q.LR, 0):
		return fmt.Errorf("--lr \"%g\": want a positive number", q.LR)
	case !(q.Entropy >= 0) || math.IsInf(q.Entropy, 0):
		return fmt.Errorf("--entropy \"%g\": want a finite number >= 0 (0: no entropy bonus)", q.Entropy)
	case q.Reward != "" && q.Reward != RewardOps && q.Reward != RewardTime:
		return fmt.Errorf("--reward %q: want %s or %s", q.Reward, RewardOps, RewardTime)
	case q.Algorithm != "" && q.Algorithm != AlgoREINFORCE && q.Algorithm != AlgoPPO && q.Algorithm != AlgoEffect:
		return fmt.Errorf("--algo %q: want %s, %s or %s", q.Algorithm, AlgoREINFORCE, AlgoPPO, AlgoEffect)
	case q.Algorithm == AlgoEffect && q.Reward == RewardTime:
		return fmt.Errorf("--reward %q: a pass-effect model (--algo %s) learns op counts, want %s", q.Reward, AlgoEffect, RewardOps)
	case q.Epochs < 0:
		return fmt.Errorf("--epochs \"%d\": want a number >= 0 (0: %d)", q.Epochs, rl.DefaultEpochs)
	case !(q.Clip == 0 || (q.Clip > 0 && q.Clip < 1)):
		return fmt.Errorf("--clip \"%g\": want a number in (0, 1), or 0 for %g", q.Clip, rl.DefaultClip)
	case q.Algorithm != AlgoPPO && q.Epochs != 0:
		return fmt.Errorf("--epochs \"%d\": PPO's setting, want 0 (or --algo ppo)", q.Epochs)
	case q.Algorithm != AlgoPPO && q.Clip != 0:
		return fmt.Errorf("--clip \"%g\": PPO's setting, want 0 (or --algo ppo)", q.Clip)
	case q.Advantages != "" && q.Advantages != AdvantagesAuto && q.Advantages != AdvantagesNormalized && q.Advantages != AdvantagesRaw:
		return fmt.Errorf("--advantages %q: want %s, %s or %s", q.Advantages, AdvantagesAuto, AdvantagesNormalized, AdvantagesRaw)
	}
	return nil
}

// Run checks the request, locks Agent before training (so a directory it cannot write
// fails first), trains and saves the agent.
func (q TrainRequest) Run(ctx context.Context) (*AgentResult, error) {
	if q.Log == nil {
		q.Log = io.Discard
	}
	if err := q.check(); err != nil {
		return nil, err
	}
	// The agent directory is checked and locked before training, not after.
	lock, err := dirlock.AcquireDir(q.Agent, dirlock.Agent)
	if err != nil {
		return nil, fmt.Errorf("--agent: %w", err)
	}
	defer lock.Release()
	entropy := q.Entropy
	if entropy == 0 {
		entropy = -1 // TrainOptions' "none" (its zero value means its default)
	}
	programs, err := ParseProgramList(q.Programs, true)
	if err != nil {
		return nil, err
	}
	if q.Algorithm == AlgoEffect {
		a, err := TrainEffect(ctx, EffectOptions{Programs: programs, Seed: q.Seed, Epochs: q.Iterations, MaxSteps: q.MaxSteps, LR: q.LR,
			Progress: func(ep int, mse float64) {
				fmt.Fprintf(q.Log, "epoch %d/%d: mean squared error %.4f\n", ep, q.Iterations, mse)
			}})
		if err != nil {
			return nil, err
		}
		if err := SaveAgent(q.Agent, a); err != nil {
			return nil, err
		}
		return &AgentResult{Meta: &a.Meta, Dir: q.Agent}, nil
	}
	a, err := Train(ctx, TrainOptions{
		Programs: programs, Seed: q.Seed, Iterations: q.Iterations, Samples: q.Samples, MaxSteps: q.MaxSteps, LR: q.LR, Entropy: entropy, Reward: q.Reward,
		Algorithm: q.Algorithm, Epochs: q.Epochs, Clip: q.Clip, Advantages: q.Advantages,
		Progress: func(r IterReport) {
			fmt.Fprintf(q.Log, "iteration %d/%d: mean return %.4f, greedy %.4f, entropy %.3f nats, %.1f steps",
				r.Iteration, q.Iterations, r.MeanReturn, r.GreedyReturn, r.Entropy, r.MeanSteps)
			if q.Algorithm == AlgoPPO {
				fmt.Fprintf(q.Log, ", clipped %.3f, approx KL %.4f, max |r-1| %.3f", r.ClipFraction, r.ApproxKL, r.MaxRatioDev)
			}
			fmt.Fprintln(q.Log)
		},
	})
	if err != nil {
		return nil, err
	}
	if err := SaveAgent(q.Agent, a); err != nil {
		return nil, err
	}
	return &AgentResult{Meta: &a.Meta, Dir: q.Agent}, nil
}

// EvalRequest is one run of `tpucost gym eval` as its command line gives it: the flags'
// values, unchecked. Run checks them, loads the agent (LoadAgent) and evaluates it
// (Evaluate).
type EvalRequest struct {
	Agent    string // the agent checkpoint directory; required
	Programs string // ParseProgramList; required
	Seed     int64
	Budget   int    // compiler calls per search and program, >= 0 (0: passes × max steps)
	Chip     string // tpusim chip preset of sim_ns ("": tpusim.DefaultChip)
	MaxSteps int    // the episode limit, >= 0 (0: the one the agent trained with)
	Verify   bool   // run the HLO verifier after every pass of the agent's episodes
	// Judge is "", "ops" or "time" (EvalOptions.Judge; "": what the agent trained for).
	Judge string
	// AgentSearch is "", "beam" or "sample" (EvalOptions.AgentSearch; "": beam).
	AgentSearch string
	// BeamWidth and BeamChildren are >= 0 (0: DefaultBeamWidth, DefaultBeamChildren).
	BeamWidth, BeamChildren int
	// BeamLookahead is >= 0 (0: none; the command's default is DefaultBeamLookahead).
	BeamLookahead int
	// Log receives a line per program evaluated; nil: discarded.
	Log io.Writer
}

// Run checks the request, loads the agent and evaluates it.
func (q EvalRequest) Run(ctx context.Context) (*EvalReport, error) {
	if q.Log == nil {
		q.Log = io.Discard
	}
	if q.Agent == "" {
		return nil, errors.New("--agent: an agent directory is required")
	}
	if q.Budget < 0 {
		return nil, fmt.Errorf("--budget \"%d\": want at least 1 (or 0: passes × max steps)", q.Budget)
	}
	if q.MaxSteps < 0 {
		return nil, fmt.Errorf("--max-steps \"%d\": want at least 1 (or 0: the agent's)", q.MaxSteps)
	}
	if q.Judge != "" && q.Judge != RewardOps && q.Judge != RewardTime {
		return nil, fmt.Errorf("--judge %q: want %s or %s (or none: what the agent trained for)", q.Judge, RewardOps, RewardTime)
	}
	if q.AgentSearch != "" && q.AgentSearch != AgentSearchBeam && q.AgentSearch != AgentSearchSample {
		return nil, fmt.Errorf("--agent-search %q: want %s or %s", q.AgentSearch, AgentSearchBeam, AgentSearchSample)
	}
	if q.BeamWidth < 0 {
		return nil, fmt.Errorf("--beam-width \"%d\": want at least 1 (or 0: %d)", q.BeamWidth, DefaultBeamWidth)
	}
	if q.BeamLookahead < 0 {
		return nil, fmt.Errorf("--beam-lookahead \"%d\": want a number >= 0 (0: none)", q.BeamLookahead)
	}
	if q.BeamChildren < 0 {
		return nil, fmt.Errorf("--beam-children \"%d\": want at least 1 (or 0: %d)", q.BeamChildren, DefaultBeamChildren)
	}
	programs, err := ParseProgramList(q.Programs, true)
	if err != nil {
		return nil, err
	}
	a, err := LoadAgent(q.Agent)
	if err != nil {
		return nil, fmt.Errorf("--agent: %w", err)
	}
	return Evaluate(ctx, a, EvalOptions{
		Programs: programs, Seed: q.Seed, Budget: q.Budget, Chip: q.Chip, MaxSteps: q.MaxSteps, Verify: q.Verify, Judge: q.Judge,
		AgentSearch: q.AgentSearch, BeamWidth: q.BeamWidth, BeamChildren: q.BeamChildren, BeamLookahead: q.BeamLookahead,
		Progress: func(p ProgramEval) {
			fmt.Fprintf(q.Log, "%s: %d ops; default %d, random %d, greedy %d, beam %d, agent %d\n", p.Program, p.InitialOpCount,
				p.Default.OpCount, p.Random.OpCount, p.Greedy.OpCount, p.Beam.OpCount, p.Agent.OpCount)
		},
	})
}

// ServeRequest is one run of `tpucost gym serve` as its command line gives it.
type ServeRequest struct {
	Programs string // ParseProgramList, optional: the programs a reset without one picks from
	Verify   bool   // run the HLO verifier after every pass
}

// Run parses the program list and serves the environment on r and w (Serve) until EOF.
func (q ServeRequest) Run(ctx context.Context, r io.Reader, w io.Writer) error {
	programs, err := ParseProgramList(q.Programs, false)
	if err != nil {
		return err
	}
	return Serve(ctx, r, w, ServeOptions{Programs: programs, Verify: q.Verify})
}
