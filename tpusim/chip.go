// Package tpusim is tpucost's ground truth: a simulator of one device of a TPU-like chip
// (a TensorCore, or v4's two as one megacore device) that times compiled programs — their
// kernels, loops, conditionals and collectives over the interconnect — and their kernels with the effects an analytical roofline ignores —
// (8,128) layout tiling and padding, MXU passes with weight loads and fill/drain, vector,
// transcendental and transpose-unit work, DMA latency and burst overheads, double- or
// triple-buffered overlap of DMA with compute, per-step loop overhead, unrolling, VMEM
// capacity — plus seeded measurement noise and a modelled cost per measurement.
package tpusim

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tpucost/tpucost/compiler/cost"
)

// Version identifies the simulator's timing model; it is recorded with every dataset and
// every cached measurement. Bump it whenever a timing changes.
//
// tpusim-1.4: a gather's elementwise producers are timed for the rows it reads, and a
// kernel's smallest tile whose windows do not fit VMEM runs in pieces (cost.Plan.Chunks).
// tpusim-1.5: the DMA engine's cost per contiguous run (BurstNs) is 8 ns, not 4: every
// kernel whose windows are strided or partial rows (and every kernel, by a few ns per
// window) takes longer; and on a TPU tile (validate) a parameter broadcast into the
// box's array is re-read whole by every loop outside the innermost one its window moves
// along (cost.Operand.Reads), not once.
const Version = "tpusim-1.5"

// Chip is a chip preset: the compiler-visible Target plus the micro-architectural
// parameters only the simulator uses.
type Chip struct {
	cost.Target
	// Base is the built-in preset the chip is (Name, for a preset) or was loaded from (a
	// chip file's base, see ChipFile).
	Base         string
	CoresPerChip int
	HBMBytes     int64

	DMALatencyNs float64 // issue to first byte of one DMA
	// BurstNs is the DMA engine's cost per contiguous run of HBM it moves (one descriptor
	// or burst: cost.BoxRuns), on top of the bytes at bandwidth: a window of runs of r
	// bytes moves at r / (r + BurstNs·bandwidth) of the bandwidth, so a strided box or a
	// box one (8,128) tile row high (4 KiB runs of f32) is slower per byte than a
	// contiguous one.
	BurstNs          float64
	SyncCycles       float64 // extra per step when double buffering (buffer hand-off)
	VALUSlots        float64 // vector-register ops per cycle
	EUPCyclesPerVreg float64 // transcendental unit: cycles per vector register
	XLUCyclesPerVreg float64 // transpose/reduce unit: cycles per vector register
	MXUFillCycles    float64 // systolic fill and drain, once per step
	WeightLoadCycles float64 // loading one [128,128] weight block into an MXU
	IMemOps          int     // unrolled ops that fit instruction memory; beyond, fetch stalls
	IFetchCycles     float64 // stall cycles per op beyond IMemOps, per step
	CodeLoadNsPerOp  float64 // loading one (unrolled) op's code at launch

	// Interconnect (ICI), for collectives: links per chip, bandwidth per link and
	// direction (bytes/s), latency per hop.
	ICILinks         int
	ICILinkBandwidth float64
	ICIHopNs         float64
}

// presets builds the presets from public per-chip figures: bf16 peak, HBM bandwidth and
// capacity, TensorCores and MXUs per core (the clock follows from peak = 2 * 128^2 *
// MXUs * cores * clock). VMEM is 16 MiB per core on v2/v3 and 128 MiB on v5e; v4's is not
// public and is a parameter (default 32 MiB, see WithVMEM).
func presets() map[string]Chip {
	mk := func(name string, cores, mxus int, peakTF, hbmGBs float64, hbmGiB int64, vmemMiB int64, launchNs float64) Chip {
		perCore := peakTF * 1e12 / float64(cores)
		clock := perCore / (2 * 128 * 128 * float64(mxus))
		return Chip{
			Target: cost.Target{
				Name: name, ClockHz: clock, MXUs: mxus, MXUDim: 128, Lanes: 128, Sublanes: 8,
				HBMBandwidth: hbmGBs * 1e9 / float64(cores), VMEMBytes: vmemMiB << 20, LaunchNs: launchNs,
				StepOverheadCycles: 96,
			},
			Base: name, CoresPerChip: cores, HBMBytes: hbmGiB << 30,
			DMALatencyNs: 500, BurstNs: DefaultBurstNs, SyncCycles: 24,
			VALUSlots: 2, EUPCyclesPerVreg: 4, XLUCyclesPerVreg: 2,
			MXUFillCycles: 128, WeightLoadCycles: 128, IMemOps: 256, IFetchCycles: 2, CodeLoadNsPerOp: 8,
		}
	}
	ici := func(c Chip, links int, gbitPerLink float64) Chip {
		c.ICILinks, c.ICILinkBandwidth, c.ICIHopNs = links, gbitPerLink*1e9/8, ICIHopNs
		return c
	}
	// ICI: v2 and v3 have 4 links per chip at 496 and 656 Gbit/s (Jouppi et al., "A
	// Domain-Specific Supercomputer for Training Deep Neural Networks", CACM 63(7), 2020,
	// table 3); v4 has 6 links at 50 GB/s (Jouppi et al., "TPU v4: An Optically
	// Reconfigurable Supercomputer", ISCA 2023: 2,400 Gbit/s per chip, as Google Cloud's
	// TPU v4 page lists); v5e has 4 links, 1,600 Gbit/s per chip (Google Cloud's TPU v5e
	// page).
	v4 := ici(mk("v4", 2, 4, 275, 1200, 32, 32, 1000), 6, 400)
	v4.Cores = 2 // megacore, XLA's default on v4: both TensorCores as one device
	return map[string]Chip{
		"v2":  ici(mk("v2", 2, 1, 45, 700, 16, 16, 2000), 4, 496),
		"v3":  ici(mk("v3", 2, 2, 123, 900, 32, 16, 1500), 4, 656),
		"v4":  v4,
		"v5e": ici(mk("v5e", 1, 4, 197, 819, 16, 128, 1000), 4, 400),
	}
}

// DefaultBurstNs is the presets' DMA cost per contiguous run (Chip.BurstNs). It is not
// public; 8 ns (about 8 cycles of a v3 core, the time 3.6 KB take at a v3 core's 450
// GB/s) is what the real TPU v3 tile runs of TpuGraphs show once the replay counts the
// runs of the TPU's own boxes (validate: fusion.232's boxes one tile row high,
// 8 KiB runs, measure 1.3–1.45× the time of its contiguous ones at equal bytes; 4 ns
// explained half of that), and what calibrate fits on them (docs/simulator.md). With the
// broadcast re-reads modelled, validate's picks are the same for every value from 5 to
// 10 ns.
const DefaultBurstNs = 8

// ICIHopNs is the latency of one ICI hop (router and link traversal). It is not public;
// 1 us is an estimate of the same order as measured small-message collective latencies.
const ICIHopNs = 1000

// DefaultChip is the preset used when none is given.
const DefaultChip = "v4"

// Preset returns the named chip preset ("v2", "v3", "v4", "v5e").
func Preset(name string) (Chip, error) {
	p := presets()
	c, ok := p[strings.ToLower(name)]
	if !ok {
		return Chip{}, fmt.Errorf("unknown chip %q (presets: %s)", name, strings.Join(PresetNames(), ", "))
	}
	return c, nil
}

// PresetNames lists the presets in order.
func PresetNames() []string {
	var n []string
	for k := range presets() {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// WithVMEM returns the chip with a different VMEM size per core (v4's is not public).
func (c Chip) WithVMEM(bytes int64) Chip {
	c.VMEMBytes = bytes
	return c
}

// PeakChipFlops is the bf16 peak of the whole chip.
func (c Chip) PeakChipFlops() float64 { return c.PeakFlops() * float64(c.CoresPerChip) }

// Validate checks the preset's fields.
func (c Chip) Validate() error {
	if err := c.Target.Validate(); err != nil {
		return err
	}
	if c.VALUSlots <= 0 || c.EUPCyclesPerVreg <= 0 || c.XLUCyclesPerVreg <= 0 {
		return fmt.Errorf("chip %s: unit throughputs must be positive", c.Name)
	}
	return nil
}
