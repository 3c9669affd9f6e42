package tpusim

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/internal/stablehash"
)

// The modelled cost of measuring on real hardware, in seconds: compiling a whole program
// (fixed plus per kernel) or a single kernel, and each run (the time itself plus the
// host round trip).
const (
	ProgramCompileS  = 1.0
	PerKernelCompile = 0.02
	KernelCompileS   = 0.3
	RunOverheadS     = 0.01
	KernelRunOverS   = 0.001
)

// Measurement is one timing on the simulated hardware.
type Measurement struct {
	Ns     float64 `json:"ns"`      // the reported time: the minimum over the runs
	TrueNs float64 `json:"true_ns"` // the noiseless time
	CostS  float64 `json:"cost_s"`  // modelled hardware time spent measuring
	Runs   int     `json:"runs"`
}

// identity hashes a choice's identity (cost.Planned.Hash: its kernel key, tile and
// flags), so that its noise depends on the candidate and the salt but not on the order
// measurements are taken in.
func identity(p cost.Planned) uint64 { return p.Hash(stablehash.New()).Sum64() }

// noisy returns min over runs of trueNs * (1 + |N(0, sigma)|), seeded by the simulator
// seed, the candidate identity and the salt.
func (s *Simulator) noisy(trueNs float64, id, salt uint64) float64 {
	if s.opts.NoiseSigma == 0 {
		return trueNs
	}
	r := rand.New(rand.NewPCG(uint64(s.opts.Seed)^id, stablehash.Weyl(salt)))
	best := math.Inf(1)
	for i := 0; i < s.opts.Runs; i++ {
		best = math.Min(best, trueNs*(1+math.Abs(r.NormFloat64()*s.opts.NoiseSigma)))
	}
	return best
}

// programIdentity names a compiled program by its kernels and their configs.
func programIdentity(p *compiler.Program) uint64 {
	h := stablehash.New().Str(p.Name)
	for _, k := range p.Kernels {
		k.Choice.Hash(h)
	}
	return h.Sum64()
}

// Measure times program p as the hardware would: the noisy minimum of Runs runs, with the
// modelled cost of compiling and running it. salt distinguishes repeated measurements of
// the same candidate.
func (s *Simulator) Measure(p *compiler.Program, salt uint64) (Measurement, error) {
	pt, err := s.Program(p)
	if err != nil {
		return Measurement{}, err
	}
	ns := s.noisy(pt.TotalNs, programIdentity(p), salt)
	runs := s.opts.Runs
	c := ProgramCompileS + PerKernelCompile*float64(len(p.Kernels)) + float64(runs)*(pt.TotalNs*1e-9+RunOverheadS)
	return Measurement{Ns: ns, TrueNs: pt.TotalNs, CostS: c, Runs: runs}, nil
}

// MeasureKernel times one compiled kernel on its own (its Choice, see MeasureChoice).
func (s *Simulator) MeasureKernel(k *compiler.Kernel, salt uint64) (Measurement, error) {
	m, err := s.MeasureChoice(k.Choice, salt)
	if err != nil {
		return m, fmt.Errorf("kernel %s: %w", k.Name, err)
	}
	return m, nil
}

// MeasureChoice times a planned kernel choice on its own (kernel-level autotuning), with
// the modelled cost of compiling and running it. The noise depends on the choice's
// identity (its kernel key and config) and the salt only, so the same config measures the
// same wherever it is met.
func (s *Simulator) MeasureChoice(p cost.Planned, salt uint64) (Measurement, error) {
	kt, err := SimulateChoice(p, s.chip)
	if err != nil {
		return Measurement{}, err
	}
	ns := kt.Ns
	if s.opts.NoiseSigma != 0 {
		ns = s.noisy(kt.Ns, identity(p), salt)
	}
	runs := s.opts.Runs
	c := KernelCompileS + float64(runs)*(kt.Ns*1e-9+KernelRunOverS)
	return Measurement{Ns: ns, TrueNs: kt.Ns, CostS: c, Runs: runs}, nil
}

// String summarizes a measurement.
func (m Measurement) String() string {
	return fmt.Sprintf("%.0f ns (true %.0f ns, %d runs, %.2f s)", m.Ns, m.TrueNs, m.Runs, m.CostS)
}
