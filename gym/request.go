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
	a, err := Train(ctx, TrainOptions{
		Programs: programs, Seed: q.Seed, Iterations: q.Iterations, Samples: q.Samples, MaxSteps: q.MaxSteps, LR: q.LR, Entropy: entropy, Reward: q.Reward,
		Progress: func(r IterReport) {
			fmt.Fprintf(q.Log, "iteration %d/%d: mean return %.4f, greedy %.4f, entropy %.3f nats, %.1f steps\n",
				r.Iteration, q.Iterations, r.MeanReturn, r.GreedyReturn, r.Entropy, r.MeanSteps)
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
		Progress: func(p ProgramEval) {
			fmt.Fprintf(q.Log, "%s: %d ops; default %d, random %d, greedy %d, agent %d\n", p.Program, p.InitialOpCount,
				p.Default.OpCount, p.Random.OpCount, p.Greedy.OpCount, p.Agent.OpCount)
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
