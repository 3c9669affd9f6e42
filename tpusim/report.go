package tpusim

import (
	"github.com/tpucost/tpucost/compiler"
)

// KernelReport is one kernel's line of a simulation report.
type KernelReport struct {
	Name         string  `json:"name"`
	Kind         string  `json:"kind"`
	Key          string  `json:"key"`
	Nodes        int     `json:"nodes"`
	Tile         string  `json:"tile"`
	Flags        string  `json:"flags"`
	SimNs        float64 `json:"sim_ns"`
	AnalyticalNs float64 `json:"analytical_ns"`
	Bound        Bound   `json:"bound"`
	Flops        float64 `json:"flops"`
	Bytes        float64 `json:"bytes"` // padded HBM bytes moved
	VMEMBytes    float64 `json:"vmem_bytes"`
	// ApproximateOps counts the kernel's instructions timed by the streaming model only
	// (cost.Approximate): its time is an estimate, not a model of the op.
	ApproximateOps int `json:"approximate_ops"`
}

// Report is the simulation of a whole program: per-kernel simulated and analytical time.
type Report struct {
	Program           string  `json:"program"`
	Chip              string  `json:"chip"`
	Simulator         string  `json:"simulator"`
	TotalNs           float64 `json:"total_ns"`
	AnalyticalTotalNs float64 `json:"analytical_total_ns"`
	// ApproximateOps counts the program's instructions timed by the streaming model only;
	// ApproximateShare is the fraction of TotalNs spent in kernels that hold any.
	ApproximateOps   int            `json:"approximate_ops"`
	ApproximateShare float64        `json:"approximate_share"`
	Kernels          []KernelReport `json:"kernels"`
}

// Simulate reports every kernel of p on chip c with its simulated (ground-truth) and
// analytical time.
func Simulate(p *compiler.Program, c Chip) (*Report, error) {
	s, err := New(c, Options{})
	if err != nil {
		return nil, err
	}
	pt, err := s.Program(p)
	if err != nil {
		return nil, err
	}
	r := &Report{Program: p.Name, Chip: c.Name, Simulator: Version, TotalNs: pt.TotalNs, Kernels: make([]KernelReport, len(p.Kernels))}
	for i, k := range p.Kernels {
		kt := pt.Kernels[i]
		an := Analytical(k, c)
		r.AnalyticalTotalNs += an
		r.Kernels[i] = KernelReport{
			Name: k.Name, Kind: k.Kind, Key: k.Key, Nodes: k.Info.NumOps, Tile: k.Tile.String(), Flags: k.Flags.String(),
			SimNs: kt.Ns, AnalyticalNs: an, Bound: kt.Bound, Flops: k.Info.Flops, Bytes: kt.HBMBytes, VMEMBytes: kt.VMEMBytes,
			ApproximateOps: k.Info.ApproxOps,
		}
		if k.Info.ApproxOps > 0 {
			r.ApproximateOps += k.Info.ApproxOps
			r.ApproximateShare += kt.Ns
		}
	}
	if r.TotalNs > 0 {
		r.ApproximateShare /= r.TotalNs
	} else {
		r.ApproximateShare = 0
	}
	return r, nil
}
