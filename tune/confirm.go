package tune

import (
	"context"
	"fmt"
	"math"

	"github.com/tpucost/tpucost/tpusim"
)

// The outcomes of the final confirmation (Confirmation.Outcome).
const (
	// KeptWinner: the search's best program was confirmed faster than the start.
	KeptWinner = "kept-winner"
	// KeptStart: the search's best program was not faster than the start beyond the
	// noise; the starting program is the result.
	KeptStart = "kept-start"
	// NoChange: the search's best program is the starting program; nothing to confirm.
	NoChange = "no-change"
)

// confirmFalseKeep bounds the probability that the confirmation keeps a winner whose
// noiseless time is not below the start's (see Confirmation).
const confirmFalseKeep = 1e-6

// Confirmation is the final check of a run, which makes sure a tuner never hands back a
// regression. Search measurements are noisy minima of a few runs, and the best of many
// noisy minima is biased low: the search's best program may be no faster, or slower, than
// where it started. So the winner and the starting program are both re-measured with
// RunsEach = max(10·Runs, 30) runs under the same noise model (with salts of their own,
// derived from the seed), and the winner is kept only if
//
//	WinnerNs · (1 + Margin) < StartNs
//
// where WinnerNs and StartNs are the minima of those runs. Noise only slows a run
// (a run takes true·(1+|N(0,σ)|)), so WinnerNs bounds the winner's true time from above,
// and the start's minimum exceeds its true time by more than the factor 1+cσ with
// probability (2(1−Φ(c)))^RunsEach; Margin = cσ with c chosen to make that at most 1e-6.
// With noise off, Margin is 0 and the comparison is exact; a tie keeps the start.
//
// The confirmation's measurements are not part of the search budget (Report.Measurements)
// but their modelled cost is part of Report.HardwareS.
type Confirmation struct {
	Outcome      string  `json:"outcome"`      // KeptWinner, KeptStart or NoChange
	Measurements int     `json:"measurements"` // programs re-measured: 2, or 0 for NoChange
	RunsEach     int     `json:"runs_each"`    // runs per re-measured program
	WinnerNs     float64 `json:"winner_ns"`    // the winner's minimum over the runs
	StartNs      float64 `json:"start_ns"`     // the start's minimum over the runs
	Margin       float64 `json:"margin"`       // relative margin the winner must beat the start by
	HardwareS    float64 `json:"hardware_s"`   // modelled cost of the re-measurements
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

// confirm re-measures the winner and the starting program and returns the one to keep
// with the confirmation's account; the measurements' cost is added to the run's hardware
// time. It is deterministic for the seed.
func (r *run) confirm(ctx context.Context, start, winner *candidate) (*candidate, Confirmation, error) {
	n := confirmRuns(r.opts.Runs)
	c := Confirmation{Outcome: NoChange, RunsEach: n, Margin: confirmMargin(r.opts.Noise, n)}
	if winner.fp == start.fp {
		return start, c, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, c, err
	}
	sim, err := tpusim.New(r.opts.Chip, tpusim.Options{NoiseSigma: r.opts.Noise, Runs: n, Seed: r.opts.Seed})
	if err != nil {
		return nil, c, err
	}
	var ns [2]float64
	for i, cand := range []*candidate{winner, start} {
		m, err := sim.Measure(cand.prog, r.salt("confirm|"+cand.fp))
		if err != nil {
			return nil, c, fmt.Errorf("confirmation: measuring %s: %w", cand.prog.Name, err)
		}
		ns[i] = m.Ns
		c.HardwareS += m.CostS
		c.Measurements++
	}
	r.hardwareS += c.HardwareS
	c.WinnerNs, c.StartNs = ns[0], ns[1]
	if c.WinnerNs*(1+c.Margin) < c.StartNs {
		c.Outcome = KeptWinner
		return winner, c, nil
	}
	c.Outcome = KeptStart
	return start, c, nil
}
