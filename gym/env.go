// Package gym is a pass-ordering environment after CompilerGym's reset/step interface
// and "XLA Gym" (Ganai et al., NeurIPS 2022 ML-for-Systems workshop): an agent chooses,
// one step at a time, which target-independent HLO pass (compiler/opt) to run next on a
// program, and is rewarded by the reduction in op count.
//
//   - Program: a zoo model name, a path to an HLO file (both through zoo.Resolve), or a
//     bundled benchmark "bench:NAME" (Benchmarks).
//   - Action: the index of a pass in opt.All() (Actions names them), or Stop
//     (len(opt.All())), which ends the episode.
//   - Observation: the op-count histogram by opcode (features.Vocabulary ids), the graph
//     tensors of the module (Graph), the op counts and the episode's history.
//   - Reward: the op-count reduction of the step divided by the program's initial op
//     count, so an episode's rewards sum to (initial − final) / initial (RewardOps); or
//     the same of the simulated time (RewardTime, Options.Reward). Expanders may grow
//     the op count, so a reward may be negative.
//
// The environment is deterministic: the passes are, so the same program and actions give
// the same observations and rewards. The seed only picks the program when Reset is given
// none (from Options.Programs), and is what agents seed their sampling with.
package gym

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/compiler/opt"
	"github.com/tpucost/tpucost/internal/stablehash"
	"github.com/tpucost/tpucost/tpusim"
)

// DefaultMaxSteps is the default episode limit, and with the 39 passes the searches'
// default budget (39 × 30 = 1170 compiler calls). XLA's own order runs 56 to 95 passes on
// the held-out programs; on the real MaxText step the moves that open its last
// simplifications (while-loop-invariant-code-motion, then cse and while-loop-simplifier)
// come at passes 20 to 24 of the best sequences found, which 20-pass episodes cut off
// (docs/gym.md, "Results").
const DefaultMaxSteps = 30

// StopName is the name of the stop action.
const StopName = "stop"

// NumActions is the number of actions: every pass of opt.All() and Stop.
func NumActions() int { return len(opt.All()) + 1 }

// Stop is the index of the stop action (the last one).
func Stop() int { return len(opt.All()) }

// Actions names the actions by index: the passes of opt.All(), in order, then "stop".
func Actions() []string { return append(opt.Names(), StopName) }

// ErrInvalidAction is wrapped by Step's error for an action index out of range; the
// episode is left as it was.
var ErrInvalidAction = errors.New("invalid action")

// ErrEpisodeOver is wrapped by Step's error when there is no episode running (before the
// first Reset, or after the episode ended).
var ErrEpisodeOver = errors.New("no episode running (call reset)")

// Options configure an Env.
type Options struct {
	// MaxSteps ends an episode after this many steps (passes run); 0 means
	// DefaultMaxSteps. The stop action counts as a step.
	MaxSteps int
	// Seed picks the program when Reset is given none.
	Seed int64
	// Programs are the programs Reset("") picks from (uniformly, seeded).
	Programs []string
	// Verify runs hlo.Verify after every pass (and on the program at Reset); a module
	// that does not verify ends the episode with an error.
	Verify bool
	// Reward is RewardOps ("" too) or RewardTime: what a step's reward measures.
	Reward string
	// Chip is the tpusim chip preset of RewardTime ("": tpusim.DefaultChip).
	Chip string
}

// The rewards: RewardOps, the step's op-count reduction ÷ the initial op count (XLA
// Gym's measure); RewardTime, the step's reduction of the simulated time (SimNs on
// Options.Chip) ÷ the initial simulated time, one compile and simulation per step.
const (
	RewardOps  = "ops"
	RewardTime = "time"
)

func (o Options) withDefaults() (Options, error) {
	if o.MaxSteps == 0 {
		o.MaxSteps = DefaultMaxSteps
	}
	if o.MaxSteps < 1 {
		return o, fmt.Errorf("gym: max steps must be positive, got %d", o.MaxSteps)
	}
	switch o.Reward {
	case "":
		o.Reward = RewardOps
	case RewardOps, RewardTime:
	default:
		return o, fmt.Errorf("gym: reward %q: want %s or %s", o.Reward, RewardOps, RewardTime)
	}
	if o.Chip == "" {
		o.Chip = tpusim.DefaultChip
	}
	if _, err := tpusim.Preset(o.Chip); err != nil {
		return o, fmt.Errorf("gym: %w", err)
	}
	return o, nil
}

// Observation is what the agent sees after Reset and after every Step.
type Observation struct {
	Program        string `json:"program"`
	Step           int    `json:"step"` // steps taken in this episode
	MaxSteps       int    `json:"max_steps"`
	OpCount        int    `json:"op_count"`         // opt.OpCount of the current module
	InitialOpCount int    `json:"initial_op_count"` // opt.OpCount of the program at Reset
	// SimNs and InitialSimNs are the simulated times (SimNs) of the current module and
	// of the program at Reset under RewardTime; 0 under RewardOps.
	SimNs        float64 `json:"sim_ns"`
	InitialSimNs float64 `json:"initial_sim_ns"`
	// Histogram counts the ops OpCount counts by features.Vocabulary id.
	Histogram []int `json:"histogram"`
	// Graph is the module's graph tensors (see Graph).
	Graph Graph `json:"graph"`
	// History is the actions taken so far, in order.
	History []int `json:"history"`
	// Idle[a] is true when pass a is known to change nothing on the current module: it
	// ran on it (since the last change) and reported no change. Passes are
	// deterministic, so running it again is a wasted step.
	Idle []bool `json:"idle"`
}

// Env is one pass-ordering environment. It is not safe for concurrent use; run one Env
// per goroutine.
type Env struct {
	opts    Options
	passes  []opt.Pass
	rng     *rand.Rand
	cache   map[string]*hlo.Module // program → its module as loaded (never mutated)
	program string
	mod     *hlo.Module
	initial int
	ops     int
	chip    tpusim.Chip
	initNs  float64
	ns      float64
	steps   int
	history []int
	idle    []bool
	running bool
}

// New returns an environment with options o.
func New(o Options) (*Env, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	chip, _ := tpusim.Preset(o.Chip) // checked by withDefaults
	return &Env{
		chip:   chip,
		opts:   o,
		passes: opt.All(),
		rng:    rand.New(rand.NewPCG(stablehash.Seeded(o.Seed).Str("gym").Sum64(), 1)),
		cache:  map[string]*hlo.Module{},
	}, nil
}

// Options returns the environment's options (with defaults applied).
func (e *Env) Options() Options { return e.opts }

// Reset starts an episode on program (see the package doc for the forms it takes; "" picks
// one of Options.Programs with the seeded generator) and returns the first observation.
// A program that fails to load or, with Options.Verify, to verify is an error, and no
// episode is running afterwards.
func (e *Env) Reset(program string) (Observation, error) {
	e.running = false
	if program == "" {
		if len(e.opts.Programs) == 0 {
			return Observation{}, errors.New("gym: reset without a program and no programs to pick from")
		}
		program = e.opts.Programs[e.rng.IntN(len(e.opts.Programs))]
	}
	m, ok := e.cache[program]
	if !ok {
		var err error
		if m, err = Load(program); err != nil {
			return Observation{}, fmt.Errorf("gym: reset: %w", err)
		}
		if e.opts.Verify {
			if err := hlo.Verify(m); err != nil {
				return Observation{}, fmt.Errorf("gym: reset: %s does not verify: %w", program, err)
			}
		}
		e.cache[program] = m
	}
	return e.ResetModule(program, m.Clone())
}

// ResetModule starts an episode on module m (which the environment takes over and
// mutates), named program in observations.
func (e *Env) ResetModule(program string, m *hlo.Module) (Observation, error) {
	e.running = false
	if m == nil || m.Entry == nil {
		return Observation{}, fmt.Errorf("gym: reset: %s has no entry computation", program)
	}
	e.program, e.mod = program, m
	e.initial = opt.OpCount(m)
	e.ops = e.initial
	e.initNs, e.ns = 0, 0
	if e.opts.Reward == RewardTime {
		ns, err := SimNs(m, e.chip)
		if err != nil {
			return Observation{}, fmt.Errorf("gym: reset: %s: %w", program, err)
		}
		e.initNs, e.ns = ns, ns
	}
	e.steps = 0
	e.history = nil
	e.idle = make([]bool, len(e.passes))
	e.running = true
	return e.observe()
}

// Step takes action (a pass index or Stop) and returns the new observation, the step's
// reward ((previous − current op count) / initial op count; 0 for Stop and for a program
// with no ops) and whether the episode is over (Stop, or MaxSteps reached).
//
// An action out of range is an error wrapping ErrInvalidAction and leaves the episode as
// it was. A pass that fails (or, with Options.Verify, leaves a module that does not
// verify) is an error that ends the episode: no reward is given for it.
func (e *Env) Step(action int) (Observation, float64, bool, error) {
	if !e.running {
		return Observation{}, 0, true, fmt.Errorf("gym: step: %w", ErrEpisodeOver)
	}
	if action < 0 || action > Stop() {
		return Observation{}, 0, false, fmt.Errorf("gym: step: %w: %d (actions are 0..%d, %d = stop)", ErrInvalidAction, action, Stop(), Stop())
	}
	e.steps++
	e.history = append(e.history, action)
	if action == Stop() {
		e.running = false
		obs, err := e.observe()
		return obs, 0, true, err
	}
	p := e.passes[action]
	changed, err := p.Run(e.mod)
	if err == nil && e.opts.Verify {
		if verr := hlo.Verify(e.mod); verr != nil {
			err = fmt.Errorf("the module does not verify after it: %w", verr)
		}
	}
	if err != nil {
		e.running = false
		return Observation{}, 0, true, fmt.Errorf("gym: step %d: pass %s on %s: %w", e.steps, p.Name, e.program, err)
	}
	if changed {
		clear(e.idle)
	}
	e.idle[action] = !changed
	prev := e.ops
	e.ops = opt.OpCount(e.mod)
	reward := 0.0
	switch {
	case e.opts.Reward == RewardTime:
		prevNs := e.ns
		if changed { // an unchanged module keeps its time
			ns, err := SimNs(e.mod, e.chip)
			if err != nil {
				e.running = false
				return Observation{}, 0, true, fmt.Errorf("gym: step %d: after %s on %s: %w", e.steps, p.Name, e.program, err)
			}
			e.ns = ns
		}
		if e.initNs > 0 {
			reward = (prevNs - e.ns) / e.initNs
		}
	case e.initial > 0:
		reward = float64(prev-e.ops) / float64(e.initial)
	}
	done := e.steps >= e.opts.MaxSteps
	if done {
		e.running = false
	}
	obs, err := e.observe()
	return obs, reward, done, err
}

// Module returns the current module (owned by the environment; do not mutate it).
func (e *Env) Module() *hlo.Module { return e.mod }

func (e *Env) observe() (Observation, error) {
	g, err := BuildGraph(e.mod)
	if err != nil {
		return Observation{}, err
	}
	return Observation{
		Program: e.program, Step: e.steps, MaxSteps: e.opts.MaxSteps,
		OpCount: e.ops, InitialOpCount: e.initial, SimNs: e.ns, InitialSimNs: e.initNs,
		Histogram: Histogram(e.mod), Graph: g,
		History: append([]int{}, e.history...), Idle: append([]bool(nil), e.idle...),
	}, nil
}
