package tune

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/internal/dirlock"
	"github.com/tpucost/tpucost/internal/saved"
	"github.com/tpucost/tpucost/internal/workers"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/zoo"
)

// TrainPolicyRequest is one run of `tpucost tune train-policy` as its command line gives
// it: the flags' values, unchecked. Run checks every one as given (an out-of-range value
// is an error naming its flag, never a default), trains the policy (TrainPolicy) and
// writes it to Out (SavePolicy).
type TrainPolicyRequest struct {
	Programs string          // comma-separated zoo models or HLO files to train on (zoo.ParseList)
	Out      string          // the policy checkpoint directory to write; required
	Chip     tpusim.ChipSpec // --chip, --chip-file, --vmem
	Seed     int64
	Episodes int     // >= 1
	Samples  int     // >= 2 (REINFORCE compares samples)
	LR       float64 // in (0, 1]
	Workers  int     // 0: all cores (internal/workers)
	Kinds    string  // comma-separated decisions: layout, fusion or both (ParseKinds)
	// Log receives a line per episode; nil: discarded.
	Log io.Writer
}

// PolicyResult is a trained policy's record and the directory it was written to. Its JSON
// is the record (PolicyMeta).
type PolicyResult = saved.Result[*PolicyMeta]

// Run checks the request, locks Out before training (so a directory it cannot write
// fails first), trains and saves the policy. When ctx is cancelled, training stops within
// an episode, nothing is saved, and the error wraps ctx.Err() and says how to carry on.
func (q TrainPolicyRequest) Run(ctx context.Context) (*PolicyResult, error) {
	if q.Log == nil {
		q.Log = io.Discard
	}
	mods, opts, err := q.options(ctx)
	if err != nil {
		return nil, err
	}
	// The policy directory is checked and locked before training, not after.
	lock, err := dirlock.AcquireDir(q.Out, dirlock.Policy)
	if err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	defer lock.Release()
	p, err := TrainPolicy(ctx, mods, opts)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return nil, fmt.Errorf("interrupted (%w): no policy was written to %s; re-run the same command to train it again (the same seed gives the same policy)", err, q.Out)
		}
		return nil, err
	}
	if err := SavePolicy(q.Out, p); err != nil {
		return nil, err
	}
	return &PolicyResult{Meta: &p.Meta, Dir: q.Out}, nil
}

// options checks the request's flags in order and assembles the programs and the
// TrainPolicyOptions (with a Progress writing to Log).
func (q TrainPolicyRequest) options(ctx context.Context) ([]*hlo.Module, TrainPolicyOptions, error) {
	var none TrainPolicyOptions
	if q.Out == "" {
		return nil, none, errors.New("--out: a policy directory is required")
	}
	switch {
	case q.Episodes < 1:
		return nil, none, fmt.Errorf("--episodes \"%d\": want an integer >= 1", q.Episodes)
	case q.Samples < 2:
		return nil, none, fmt.Errorf("--samples \"%d\": want an integer >= 2 (REINFORCE compares samples)", q.Samples)
	case !(q.LR > 0 && q.LR <= 1):
		return nil, none, fmt.Errorf("--lr \"%g\": want a number in (0, 1]", q.LR)
	}
	if err := workers.Check("--workers", q.Workers); err != nil {
		return nil, none, err
	}
	names, err := zoo.ParseList(q.Programs)
	if err != nil {
		return nil, none, fmt.Errorf("--programs: %w", err)
	}
	var mods []*hlo.Module
	for _, s := range names {
		m, err := zoo.ResolveContext(ctx, s)
		if err != nil {
			return nil, none, fmt.Errorf("--programs: %w", err)
		}
		mods = append(mods, m)
	}
	kinds, err := ParseKinds(q.Kinds)
	if err != nil {
		return nil, none, err
	}
	if len(kinds) == 0 {
		return nil, none, fmt.Errorf("--kinds: no kind named (%s)", RLKindChoices())
	}
	if err := CheckRLKinds(kinds); err != nil {
		return nil, none, err
	}
	c, err := q.Chip.ResolveContext(ctx)
	if err != nil {
		return nil, none, err
	}
	return mods, TrainPolicyOptions{
		Chip: c, Seed: q.Seed, Episodes: q.Episodes, Samples: q.Samples, LR: q.LR, Workers: q.Workers, Kinds: kinds,
		Progress: func(r EpisodeReport) {
			fmt.Fprintf(q.Log, "episode %d/%d: mean reward %.4f, greedy %.4f, entropy %.3f nats/decision\n", r.Episode, q.Episodes, r.MeanReward, r.GreedyMean, r.MeanEntropy)
		},
	}, nil
}
