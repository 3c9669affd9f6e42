package tpusim

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/internal/measure"
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
// seed, the candidate identity and the salt: the minimum of copies.
func (s *Simulator) noisy(trueNs float64, id, salt uint64) float64 {
	if s.opts.NoiseSigma == 0 {
		return trueNs
	}
	best := math.Inf(1)
	for _, c := range s.copies(trueNs, id, salt) {
		best = math.Min(best, c)
	}
	return best
}

// copies returns the runs' noisy times trueNs * (1 + |N(0, sigma)|), seeded by the
// simulator seed, the candidate identity and the salt (every run trueNs without noise).
func (s *Simulator) copies(trueNs float64, id, salt uint64) []float64 {
	out := make([]float64, s.opts.Runs)
	if s.opts.NoiseSigma == 0 {
		for i := range out {
			out[i] = trueNs
		}
		return out
	}
	r := rand.New(rand.NewPCG(uint64(s.opts.Seed)^id, stablehash.Weyl(salt)))
	for i := range out {
		out[i] = trueNs * (1 + math.Abs(r.NormFloat64()*s.opts.NoiseSigma))
	}
	return out
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

// ChoiceBackend is the simulator as a measure.Backend[cost.Planned]: the backend `gen`
// measures the compiler tasks' kernel configurations on and tune counts kernel
// measurements of, through the machinery every backend shares (measure.Run,
// measure.Counted; the real processor's is lutcpu.CPU). It is an adapter over
// MeasureChoice: a sample's time is MeasureChoice's Ns, the same number, the minimum of
// the Runs seeded noisy copies (the noiseless time without noise); its spread and noise
// are those copies' (measure.Stats: deterministic for a seed, 0 without noise), Kept and
// Calls the runs, Rejected and Remeasured 0 (the simulator rejects and repeats nothing).
// It is safe for concurrent use.
type ChoiceBackend struct {
	Sim *Simulator
	// Salt, if set, is a choice's measurement salt (MeasureChoice's salt: it tells repeated
	// measurements of a candidate apart); nil: 0.
	Salt func(cost.Planned) uint64
	// Measured, if set, is called with each choice and the Measurement MeasureChoice
	// returned for it (its noiseless time, its modelled hardware cost, which a Sample does
	// not carry), from the goroutine that measured it.
	Measured func(cost.Planned, Measurement)
}

// Name is "sim", as --backend names the simulator.
func (ChoiceBackend) Name() string { return "sim" }

// Measure times choice p on the simulator (see ChoiceBackend).
func (b ChoiceBackend) Measure(p cost.Planned) (measure.Sample, error) {
	var salt uint64
	if b.Salt != nil {
		salt = b.Salt(p)
	}
	m, err := b.Sim.MeasureChoice(p, salt)
	if err != nil {
		return measure.Sample{}, err
	}
	if b.Measured != nil {
		b.Measured(p, m)
	}
	cs := []float64{m.TrueNs}
	if b.Sim.opts.NoiseSigma != 0 {
		cs = b.Sim.copies(m.TrueNs, identity(p), salt)
	}
	_, spread, noise := measure.Stats(cs)
	return measure.Sample{MedianNs: m.Ns, SpreadPct: spread, Noise: noise, Kept: m.Runs, Calls: m.Runs}, nil
}

// String summarizes a measurement.
func (m Measurement) String() string {
	return fmt.Sprintf("%.0f ns (true %.0f ns, %d runs, %.2f s)", m.Ns, m.TrueNs, m.Runs, m.CostS)
}
