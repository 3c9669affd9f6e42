package tune

import (
	"context"
	"fmt"
	"math"

	"github.com/tpucost/tpucost/tpusim"
)

// The outcomes of the final confirmation (Confirmation.Outcome).
const (
	// KeptWinner: the search's best program was confirmed faster than the start (and,
	// with a store, than the default compile).
	KeptWinner = "kept-winner"
	// KeptStart: the search's best program was not faster than the start beyond the
	// noise; the starting program is the result (without a store, the start is the
	// default compile; with one, the store-repaired start was confirmed faster than the
	// default).
	KeptStart = "kept-start"
	// KeptDefault: with a store whose repaired start differs from the default compile,
	// neither the search's best nor the start was confirmed faster than the default
	// compile beyond the noise; the default compile is the result.
	KeptDefault = "kept-default"
	// NoChange: the search's best program is the starting program, which is the default
	// compile; nothing to confirm.
	NoChange = "no-change"
)

// confirmFalseKeep bounds the probability that the confirmation keeps a winner whose
// noiseless time is not below the start's (see Confirmation).
const confirmFalseKeep = 1e-6

// Confirmation is the final check of a run, which makes sure a tuner never hands back a
// regression: a program slower than the default compile (or than the start). Search
// measurements are noisy minima of a few runs, and the best of many noisy minima is
// biased low: the search's best program may be no faster, or slower, than where it
// started. So the winner and the starting program (and, when a store made the start
// differ from it, the default compile) are each re-measured with RunsEach = max(10·Runs,
// 30) runs under the same noise model (with salts of their own, derived from the seed).
// Program a is confirmed faster than program b when
//
//	a's minimum · (1 + Margin) < b's minimum
//
// over those runs. Noise only slows a run (a run takes true·(1+|N(0,σ)|)), so a's minimum
// bounds its true time from above, and b's minimum exceeds its true time by more than the
// factor 1+cσ with probability (2(1−Φ(c)))^RunsEach; Margin = cσ with c chosen to make
// that at most 1e-6. With noise off, Margin is 0 and the comparison is exact; a tie keeps
// the incumbent.
//
// The result is the winner if it is confirmed faster than the start, else the start;
// and when the default compile differs from the start (a store), that result must also be
// confirmed faster than the default, else the other of winner and start if it is, else the
// default compile. So the result is never slower than the default compile, store or not.
//
// The confirmation's measurements are not part of the search budget (Report.Measurements)
// but their modelled cost is part of Report.HardwareS.
type Confirmation struct {
	Outcome      string `json:"outcome"`      // KeptWinner, KeptStart, KeptDefault or NoChange
	Measurements int    `json:"measurements"` // distinct programs re-measured: 2 or 3, or 0 for NoChange
	RunsEach     int    `json:"runs_each"`    // runs per re-measured program
	// WinnerNs and StartNs are the winner's and the start's minimum over the runs. For
	// NoChange nothing is re-measured: they are 0 and absent from the JSON (a 0 there
	// would read as a measured time).
	WinnerNs float64 `json:"winner_ns,omitempty"`
	StartNs  float64 `json:"start_ns,omitempty"`
	// DefaultNs is the default compile's minimum over the runs, when it differs from
	// the start (a store); else 0 (absent), and StartNs is the default's.
	DefaultNs float64 `json:"default_ns,omitempty"`
	Margin    float64 `json:"margin"`     // relative margin a program must beat another by
	HardwareS float64 `json:"hardware_s"` // modelled cost of the re-measurements
}

// confirmRuns is the number of runs of each program in the confirmation. Runs are cheap
// next to the compile a measurement pays anyway (tpusim: 1 s per program, 0.01 s per run
// plus its time), and more runs shrink the margin a real win must clear: at 30 runs it is
// 0.48σ (1% at σ = 0.02), at 10 runs 1.15σ.
func confirmRuns(runs int) int { return max(10*runs, 30) }

// confirmMargin is the relative margin c·σ of the confirmation for n runs per program:
// c solves (2(1−Φ(c)))^n = confirmFalseKeep, i.e. c = √2·erfinv(1 − p^(1/n)).
func confirmMargin(sigma float64, n int) float64 {
	if sigma == 0 {
		return 0
	}
	c := math.Sqrt2 * math.Erfinv(1-math.Pow(confirmFalseKeep, 1/float64(n)))
	return c * sigma
}

// confirm re-measures the winner, the starting program and the default compile (each
// distinct program once) and returns the one to keep (see Confirmation) with the
// confirmation's account; the measurements' cost is added to the run's hardware time.
// It is deterministic for the seed.
func (r *run) confirm(ctx context.Context, start, def, winner *candidate) (*candidate, Confirmation, error) {
	n := confirmRuns(r.opts.Runs)
	c := Confirmation{Outcome: NoChange, RunsEach: n, Margin: confirmMargin(r.opts.Noise, n)}
	if winner.fp == start.fp && start.fp == def.fp {
		return start, c, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, c, err
	}
	sim, err := tpusim.New(r.opts.Chip, tpusim.Options{NoiseSigma: r.opts.Noise, Runs: n, Seed: r.opts.Seed})
	if err != nil {
		return nil, c, err
	}
	ns := map[string]float64{}
	for _, cand := range []*candidate{winner, start, def} {
		if _, done := ns[cand.fp]; done {
			continue
		}
		m, err := sim.Measure(cand.prog, r.salt("confirm|"+cand.fp))
		if err != nil {
			return nil, c, fmt.Errorf("confirmation: measuring %s: %w", cand.prog.Name, err)
		}
		ns[cand.fp] = m.Ns
		c.HardwareS += m.CostS
		c.Measurements++
	}
	r.hardwareS += c.HardwareS
	c.WinnerNs, c.StartNs = ns[winner.fp], ns[start.fp]
	if def.fp != start.fp {
		c.DefaultNs = ns[def.fp]
	}
	// faster: a is confirmed faster than b (never a program than itself).
	faster := func(a, b *candidate) bool { return a.fp != b.fp && ns[a.fp]*(1+c.Margin) < ns[b.fp] }
	keep := start
	if faster(winner, start) {
		keep = winner
	}
	if keep.fp != def.fp && !faster(keep, def) {
		// Not confirmed faster than the default. (keep is the start: a winner faster than
		// the start is faster than the default whenever the start is.)
		keep = def
		if faster(winner, def) {
			keep = winner
		}
	}
	switch {
	case keep.fp == start.fp:
		c.Outcome = KeptStart
	case keep.fp == def.fp:
		c.Outcome = KeptDefault
	default:
		c.Outcome = KeptWinner
	}
	return keep, c, nil
}
