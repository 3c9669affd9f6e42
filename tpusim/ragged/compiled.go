package ragged

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/zoo"
)

// The compiled ragged program (after CoRa; docs/ragged.md).
//
// The model's ragged form (zoo.Model.BuildRagged: batch N = len(lengths), seq L = max,
// its token inputs carrying hlo.Ragged) is compiled as any program; compiler.PlanRagged
// lowers each kernel to dense, packed or per-sequence. Each kernel is then timed by the
// work it really does:
//
//   - dense: as compiled (its time in the padded batch-N program).
//   - packed: the kernel over the packed rows, P = Σ⌈lᵢ/8⌉·8 (each sequence padded only
//     to the 8 sublanes its rows map to), compiled and tiled at that extent (the model
//     built with P/8 sequences of 8 tokens: the row-independent kernels see [P, ...]),
//     plus the read of the offsets array from HBM (OffsetsNs).
//   - per-sequence: a loop over the sequences, sequence i over its own bounds: the
//     kernel compiled and tiled at batch 1 and length ⌈lᵢ/8⌉·8 (its steps are
//     Σ⌈lᵢ/t⌉ along each ragged dimension, attention's lᵢ² included, the last tile of
//     every sequence partial, every step's overhead and pipeline fill paid per sequence),
//     horizontally fused into one launch that reads the offsets array. The megacore's
//     cores split the work two ways, and the faster is taken: whole sequences per core,
//     assigned longest first to the least loaded core (balanced by work; the busiest
//     core's excess over the mean is ImbalanceNs), or every sequence split between the
//     cores as the dense kernel is.
//   - pad: an explicit pad (compiler.InsertRaggedPads, run on every ragged build): the
//     packed rows unpacked into the dense layout, a gather of the N·L token slots out of
//     the packed rows (gatherTime), plus the offsets read.
//
// RaggedNs is the sum of the kernels' times (times their weight) plus the packing gather
// (PackNs, as IdealNs has it).

// KernelReport is one kernel of the compiled ragged program.
type KernelReport struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`   // compiler.RaggedKind: dense, packed, per_sequence
	Ragged bool   `json:"ragged"` // packed or per-sequence
	// Steps is the grid steps the ragged kernel runs (per-sequence: summed over the
	// sequences); PaddedSteps the dense kernel's at the longest length.
	Steps       int64   `json:"steps"`
	PaddedSteps int64   `json:"padded_steps"`
	Ns          float64 `json:"ns"`
	PaddedNs    float64 `json:"padded_ns"`
	// Split is how a per-sequence kernel's sequences share the megacore: "sequences"
	// (whole sequences per core) or "within" (each sequence split); "" otherwise.
	Split string `json:"split"`
	// ImbalanceNs is the busiest core's load above the mean with whole sequences per core.
	ImbalanceNs float64 `json:"imbalance_ns"`
	OffsetsNs   float64 `json:"offsets_ns"`
	// AnalyticalNs is the analytical model's estimate of the same ragged work (not in the
	// JSON): the compiler's estimate (cost.Planned.Analytical) of each counterpart kernel
	// the ragged kernel is timed from — dense: the kernel's; packed: the packed program's,
	// plus the offsets read where it needs one; per-sequence: the megacore's batch-1
	// kernel summed over the sequences, plus the offsets read; pad: the gather's time,
	// as timed. The baseline gen --lengths records (dataset.Row.AnalyticalNs).
	AnalyticalNs float64 `json:"-"`
}

// padTo rounds l up to the packing alignment.
func padTo(l int) int { return (l + compiler.PackAlign - 1) / compiler.PackAlign * compiler.PackAlign }

// OffsetsNs is the time of reading the offsets array of n sequences (n+1 s32) from HBM:
// one DMA's latency plus its bytes at c's bandwidth.
func OffsetsNs(n int, c tpusim.Chip) float64 {
	return c.DMALatencyNs + float64(4*(n+1))/(c.HBMBandwidth/1e9)
}

// timedKernel is a compiled kernel and its simulated time.
type timedKernel struct {
	kt tpusim.KernelTime
	k  *compiler.Kernel
}

// byRoot simulates every kernel of p on ch, by the name of the instruction the kernel
// computes (Kernel.Root: the same across the builds of one model at different sizes);
// the first kernel of a root is kept.
func byRoot(p *compiler.Program, ch tpusim.Chip) (map[string]timedKernel, error) {
	out := map[string]timedKernel{}
	for _, k := range p.Kernels {
		kt, err := tpusim.SimulateChoice(k.Choice, ch)
		if err != nil {
			return nil, fmt.Errorf("%s: kernel %s: %w", p.Name, k.Name, err)
		}
		if _, dup := out[k.Root]; !dup {
			out[k.Root] = timedKernel{kt: kt, k: k}
		}
	}
	return out, nil
}

// ErrNoCounterpart is a ragged or packed kernel with no kernel of the same root in the
// build it is timed from (a config that fuses the builds differently).
var ErrNoCounterpart = errors.New("no counterpart")

// Parts are the builds the compiled ragged program of a zoo model over a batch of lengths
// is timed from (see the section above): the ragged form itself (its dense kernels, and
// the padded program: compiled, the ragged form is the dense program at batch N and the
// longest length), the packed program (the packed kernels) and, for each distinct padded
// length, the program at batch 1 compiled for one core and for the megacore (the
// per-sequence kernels). The modules are only read: a caller may compile them with any
// config (the tuner's candidates, tune --lengths).
type Parts struct {
	Model   zoo.Model
	Lengths []int
	Chip    tpusim.Chip
	// Ragged is the ragged form (zoo.Model.BuildRagged); Packed the model over the packed
	// rows (PackedRows/slot sequences of slot tokens).
	Ragged, Packed *hlo.Module
	PackedRows     int
	// Seq lists the distinct padded lengths ⌈lᵢ/8⌉·8, ascending; Single[i] is the model at
	// batch 1 and length Seq[i], compiled for SingleCore() (its tiles chosen for one core)
	// and for Chip (the megacore).
	Seq    []int
	Single []*hlo.Module
}

// SingleCore is p.Chip with one core: the target a sequence's kernel is compiled and timed
// for when whole sequences are split between the cores.
func (p *Parts) SingleCore() tpusim.Chip {
	c := p.Chip
	c.Cores = 1
	return c
}

// NewParts builds the parts of model m's compiled ragged program over lengths on c.
func NewParts(m zoo.Model, lengths []int, c tpusim.Chip) (*Parts, error) {
	mod, err := m.BuildRagged(lengths)
	if err != nil {
		return nil, err
	}
	if _, err := compiler.InsertRaggedPads(mod); err != nil {
		return nil, err
	}
	p := &Parts{Model: m, Lengths: slices.Clone(lengths), Chip: c, Ragged: mod}
	// The packed program: P/s sequences of s tokens, P the packed extent and s the
	// longest multiple of 8 up to the longest length that divides it (the rows of the
	// row-independent kernels are [P, ...] whatever s is; s = L when every length is L).
	for _, l := range lengths {
		p.PackedRows += padTo(l)
	}
	slot := compiler.PackAlign
	for s := padTo(slices.Max(lengths)); s > compiler.PackAlign; s -= compiler.PackAlign {
		if p.PackedRows%s == 0 {
			slot = s
			break
		}
	}
	if p.Packed, err = m.BuildAt(p.PackedRows/slot, slot); err != nil {
		return nil, err
	}
	for _, l := range lengths {
		p.Seq = append(p.Seq, padTo(l))
	}
	slices.Sort(p.Seq)
	p.Seq = slices.Compact(p.Seq)
	for _, l := range p.Seq {
		sm, err := m.BuildAt(1, l)
		if err != nil {
			return nil, err
		}
		p.Single = append(p.Single, sm)
	}
	return p, nil
}

// Programs are the parts compiled: Ragged and Packed for Parts.Chip, One[i] and Two[i]
// Parts.Single[i] for one core and for the megacore.
type Programs struct {
	Ragged, Packed *compiler.Program
	One, Two       []*compiler.Program
}

// CompileDefault compiles every part with default configs.
func (p *Parts) CompileDefault() (*Programs, error) {
	comp := func(m *hlo.Module, c tpusim.Chip) (*compiler.Program, error) {
		pr, err := compiler.Compile(m, nil, compiler.Options{Target: c.Target})
		if err != nil {
			return nil, fmt.Errorf("compiling %s: %w", m.Name, err)
		}
		return pr, nil
	}
	out := &Programs{}
	var err error
	if out.Ragged, err = comp(p.Ragged, p.Chip); err != nil {
		return nil, err
	}
	if out.Packed, err = comp(p.Packed, p.Chip); err != nil {
		return nil, err
	}
	for _, sm := range p.Single {
		one, err := comp(sm, p.SingleCore())
		if err != nil {
			return nil, err
		}
		two, err := comp(sm, p.Chip)
		if err != nil {
			return nil, err
		}
		out.One, out.Two = append(out.One, one), append(out.Two, two)
	}
	return out, nil
}

// Compiled is the compiled ragged program's timing (Parts.Time): Ns the kernels' times
// times their weights (without the packing gather), OffsetsNs and ImbalanceNs their
// shares of it.
type Compiled struct {
	Ns, OffsetsNs, ImbalanceNs float64
	Kernels                    []KernelReport
	Pads                       []string
}

// Time times the ragged program whose parts are compiled as pr (pr.Ragged lowered by
// compiler.PlanRagged; every other kernel found by its root in the part it is timed
// from, else an error wrapping ErrNoCounterpart). Times are the simulator's noiseless
// kernel times on p.Chip (per-sequence kernels also on SingleCore()).
func (p *Parts) Time(pr *Programs) (*Compiled, error) {
	c, m, lengths := p.Chip, p.Model, p.Lengths
	if len(pr.One) != len(p.Seq) || len(pr.Two) != len(p.Seq) {
		return nil, fmt.Errorf("%s: %d and %d batch-1 programs for %d lengths", m.Name, len(pr.One), len(pr.Two), len(p.Seq))
	}
	cores := c.DeviceCores()
	prog := pr.Ragged
	dense, err := byRoot(prog, c)
	if err != nil {
		return nil, err
	}
	plan, err := compiler.PlanRagged(prog)
	if err != nil {
		return nil, err
	}
	out := &Compiled{}
	for _, pd := range plan.Pads {
		out.Pads = append(out.Pads, pd.String())
	}
	offsets := OffsetsNs(len(lengths), c)
	var packed map[string]timedKernel
	if plan.Count(compiler.RaggedPacked) > 0 {
		if packed, err = byRoot(pr.Packed, c); err != nil {
			return nil, err
		}
	}
	// Per-sequence kernels at batch 1, each distinct padded length, on one core and on
	// the megacore.
	perLen := map[int][]map[string]timedKernel{}
	if plan.Count(compiler.RaggedPerSequence) > 0 {
		for i, l := range p.Seq {
			one, err := byRoot(pr.One[i], p.SingleCore())
			if err != nil {
				return nil, err
			}
			two, err := byRoot(pr.Two[i], c)
			if err != nil {
				return nil, err
			}
			perLen[l] = []map[string]timedKernel{one, two}
		}
	}
	for i, k := range prog.Kernels {
		rk := plan.Kernels[i]
		d := dense[k.Root]
		if d.k != k { // a second kernel of the same root: time it from the program itself
			kt, err := tpusim.SimulateChoice(k.Choice, c)
			if err != nil {
				return nil, err
			}
			d = timedKernel{kt: kt, k: k}
		}
		kr := KernelReport{Name: k.Name, Kind: string(rk.Kind), Ragged: rk.Kind != compiler.RaggedDense,
			PaddedSteps: d.kt.Steps, PaddedNs: d.kt.Ns}
		switch rk.Kind {
		case compiler.RaggedDense:
			kr.Steps, kr.Ns = d.kt.Steps, d.kt.Ns
			kr.AnalyticalNs = k.Choice.Analytical()
		case compiler.RaggedPacked:
			pk, ok := packed[k.Root]
			if !ok {
				return nil, fmt.Errorf("%s: packed kernel %s (%s): %w over the packed rows", m.Name, k.Name, k.Root, ErrNoCounterpart)
			}
			kr.Steps, kr.Ns = pk.kt.Steps, pk.kt.Ns
			kr.AnalyticalNs = pk.k.Choice.Analytical()
			if rk.Offsets {
				kr.Ns += offsets
				kr.OffsetsNs = offsets
				kr.AnalyticalNs += offsets
			}
		case compiler.RaggedPadKernel:
			// An explicit pad: the packed rows unpacked into the dense layout, a gather of
			// the N·L token slots (the padding ones from a zero row) out of the packed
			// rows, each slot the pad's bytes over N·L, after reading the offsets.
			slots := len(lengths) * slices.Max(lengths)
			ns, steps, err := gatherTime(p.PackedRows+1, slots, float64(k.Comp.Root.Shape.Bytes())/float64(slots), c)
			if err != nil {
				return nil, fmt.Errorf("%s: pad kernel %s: %w", m.Name, k.Name, err)
			}
			kr.Steps, kr.Ns, kr.OffsetsNs = steps, ns+offsets, offsets
			kr.AnalyticalNs = kr.Ns
		case compiler.RaggedPerSequence:
			// One launch; the pipeline runs across sequence boundaries, so each sequence's
			// exposed first fetch and last write-back (fill) are paid once per core.
			fill := 2 * c.DMALatencyNs
			var work []float64
			within := c.LaunchNs + offsets + fill
			for _, l := range lengths {
				ts := perLen[padTo(l)]
				one, ok1 := ts[0][k.Root]
				two, ok2 := ts[1][k.Root]
				if !ok1 || !ok2 {
					return nil, fmt.Errorf("%s: per-sequence kernel %s (%s): %w at batch 1, seq %d", m.Name, k.Name, k.Root, ErrNoCounterpart, padTo(l))
				}
				kr.Steps += one.kt.Steps
				kr.AnalyticalNs += two.k.Choice.Analytical()
				work = append(work, max(one.kt.Ns-c.LaunchNs-fill, 0))
				within += max(two.kt.Ns-c.LaunchNs-fill, 0)
			}
			busiest, mean := balance(work, cores)
			bySeq := c.LaunchNs + offsets + fill + busiest
			if bySeq <= within {
				kr.Split, kr.Ns, kr.ImbalanceNs = "sequences", bySeq, busiest-mean
			} else {
				kr.Split, kr.Ns = "within", within
			}
			kr.OffsetsNs = offsets
			kr.AnalyticalNs += offsets
		}
		out.Ns += kr.Ns * k.Weight
		out.OffsetsNs += kr.OffsetsNs * k.Weight
		out.ImbalanceNs += kr.ImbalanceNs * k.Weight
		out.Kernels = append(out.Kernels, kr)
	}
	return out, nil
}

// timeCompiled compiles and times model m's ragged form over lengths on c, default configs.
func timeCompiled(m zoo.Model, lengths []int, c tpusim.Chip) (*Compiled, error) {
	p, err := NewParts(m, lengths, c)
	if err != nil {
		return nil, err
	}
	pr, err := p.CompileDefault()
	if err != nil {
		return nil, err
	}
	return p.Time(pr)
}

// balance assigns the work items to cores longest first, each to the least loaded core
// (LPT), and returns the busiest core's load and the mean load.
func balance(work []float64, cores int) (busiest, mean float64) {
	cores = max(cores, 1)
	w := slices.Clone(work)
	slices.SortFunc(w, func(a, b float64) int { return cmp.Compare(b, a) })
	load := make([]float64, cores)
	total := 0.0
	for _, x := range w {
		load[slices.Index(load, slices.Min(load))] += x
		total += x
	}
	return slices.Max(load), total / float64(cores)
}
