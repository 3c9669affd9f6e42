package tpusim

import (
	"encoding/json"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
)

// KernelReport is one kernel's line of a simulation report.
type KernelReport struct {
	Name         string    `json:"name"`
	Kind         string    `json:"kind"`
	Key          string    `json:"key"`
	Nodes        int       `json:"nodes"`
	Tile         cost.Tile `json:"tile"` // [] for a kernel without one, as compile --json
	Flags        string    `json:"flags"`
	SimNs        float64   `json:"sim_ns"`
	AnalyticalNs float64   `json:"analytical_ns"`
	Bound        Bound     `json:"bound"`
	Flops        float64   `json:"flops"`
	Bytes        float64   `json:"bytes"` // padded HBM bytes moved
	VMEMBytes    float64   `json:"vmem_bytes"`
	// ApproximateOps counts the kernel's instructions timed by the streaming model only
	// (cost.Approximate); Approximate marks a kernel whose time is such an estimate (it
	// holds one, or it is a custom-call with no precise model), not a model of the op.
	// Both are in every kernel's JSON (false and 0 for a precisely timed kernel).
	ApproximateOps int  `json:"approximate_ops"`
	Approximate    bool `json:"approximate"`
	// StagedInputs names the kernel's inputs read from VMEM, where their producer kernel
	// left them (the staging pass); StagedOutput marks an output kept in VMEM and not
	// written to HBM; StagedBytes is the padded HBM traffic this kernel avoids by them
	// (one run).
	StagedInputs []string `json:"staged_inputs,omitempty"`
	StagedOutput bool     `json:"staged_output,omitempty"`
	StagedBytes  float64  `json:"staged_bytes,omitempty"`
	// Pieces is, for a kernel whose smallest tile's windows do not fit VMEM even with one
	// buffer each, the number of pieces every step's windows are streamed in (the tiler's
	// last resort, cost.Plan.Chunks; each piece a step of its own); absent otherwise.
	Pieces int64 `json:"pieces,omitempty"`
	// DeviceShape is the shape of the kernel's result on one device, in a program
	// partitioned from sharding annotations (Report.Partitions > 0; empty otherwise).
	DeviceShape string `json:"device_shape,omitempty"`
}

// ControlReport is a control-flow or collective step of a simulation report.
type ControlReport struct {
	Instruction string  `json:"name"`
	Control     string  `json:"control"` // "while", "conditional", "collective" or "collective-done"
	TotalNs     float64 `json:"sim_ns"`  // one execution of the step (a loop: all its iterations)
	// While: the trip count (-1 when unknown: the loop ran compiler.DefaultTripCount
	// times), where it came from, the condition's and the body's steps (one iteration).
	TripCount  *int64  `json:"trip_count,omitempty"`
	TripSource string  `json:"trip_source,omitempty"`
	Condition  []Entry `json:"condition,omitempty"`
	Body       []Entry `json:"kernels,omitempty"`
	// Conditional: each branch's steps and weight.
	Branches [][]Entry `json:"branches,omitempty"`
	Weights  []float64 `json:"weights,omitempty"`
	// Collective: its kind, size, the bytes per ring link and the group size.
	Collective      string  `json:"collective,omitempty"`
	CollectiveBytes float64 `json:"bytes,omitempty"`
	BytesPerLink    float64 `json:"bytes_per_link,omitempty"`
	GroupSize       int     `json:"group_size,omitempty"`
	// Async marks a collective's -start: its sim_ns overlaps the steps up to its
	// "collective-done" entry, whose sim_ns is the exposed rest.
	Async bool `json:"async,omitempty"`
}

// Entry is one step of a report's schedule: a kernel or a control step (exactly one is
// set); it marshals as the one that is set.
type Entry struct {
	*KernelReport
	*ControlReport
}

// MarshalJSON writes the step that is set.
func (e Entry) MarshalJSON() ([]byte, error) {
	if e.KernelReport != nil {
		return json.Marshal(e.KernelReport)
	}
	return json.Marshal(e.ControlReport)
}

// Report is the simulation of a whole program: per-kernel simulated and analytical time,
// in program order, with loops, conditionals and collectives as nested steps.
type Report struct {
	Program   string `json:"program"`
	Chip      string `json:"chip"`
	Simulator string `json:"simulator"`
	Chips     int    `json:"chips"`
	// Partitions is the number of devices a GSPMD module was partitioned over (its
	// sharding annotations; compiler.Program.Partitions): the kernels are then one
	// device's, and the collectives the partitioner inserted are steps of the schedule.
	// 0 for a program compiled as written.
	Partitions        int     `json:"partitions"`
	TotalNs           float64 `json:"total_ns"`
	AnalyticalTotalNs float64 `json:"analytical_total_ns"`
	// ApproximateOps counts the program's ops timed by the streaming model only (in
	// approximate kernels, each at least one); ApproximateNs is the time spent in those
	// kernels (every run of a loop body counted) and ApproximateShare its fraction of
	// TotalNs. UnknownTripCounts counts loops whose trip count is unknown.
	ApproximateOps    int     `json:"approximate_ops"`
	ApproximateNs     float64 `json:"approximate_ns"`
	ApproximateShare  float64 `json:"approximate_share"`
	UnknownTripCounts int     `json:"unknown_trip_counts"`
	CollectiveNs      float64 `json:"collective_ns"`
	// UnsizedCollectives counts the collectives (each instruction once) whose group size
	// nothing gives: no replica groups, no Options.Chips, a module header of one chip.
	// Each is timed as a one-chip no-op; a command reporting them warns.
	UnsizedCollectives int `json:"unsized_collectives"`
	// StagedBytes is the padded HBM traffic the staging pass avoids in one run of the
	// program (every run of a loop body counted): the writes and reads of the arrays kept
	// in VMEM between kernels. HBMBytes is the padded HBM traffic the kernels still move.
	// Both are always computed; the JSON has them only when Staged.
	StagedBytes float64 `json:"staged_bytes"`
	HBMBytes    float64 `json:"hbm_bytes"`
	Kernels     []Entry `json:"kernels"`
	// Staged says the program was compiled with staging: a mode other than off
	// (SimRequest.Staging), or a config with staging entries (the program has candidate
	// staging edges). Without it the JSON omits staged_bytes and hbm_bytes.
	Staged bool `json:"-"`
}

// MarshalJSON writes r as its fields say, staged_bytes and hbm_bytes only when r.Staged
// (`sim --staging on|auto`, or a staged config).
func (r *Report) MarshalJSON() ([]byte, error) {
	type plain Report
	if r.Staged {
		return json.Marshal((*plain)(r))
	}
	return json.Marshal(struct {
		*plain
		// Nil and omitted: they hide the embedded fields of the same names.
		StagedBytes *float64 `json:"staged_bytes,omitempty"`
		HBMBytes    *float64 `json:"hbm_bytes,omitempty"`
	}{plain: (*plain)(r)})
}

// Simulate reports every kernel of p on chip c with its simulated (ground-truth) and
// analytical time.
func Simulate(p *compiler.Program, c Chip) (*Report, error) {
	return SimulateWith(p, c, Options{})
}

// SimulateWith is Simulate with options (Chips; noise is not applied to reports).
func SimulateWith(p *compiler.Program, c Chip, opts Options) (*Report, error) {
	opts.NoiseSigma = 0
	s, err := New(c, opts)
	if err != nil {
		return nil, err
	}
	pt, err := s.Program(p)
	if err != nil {
		return nil, err
	}
	r := &Report{Program: p.Name, Chip: c.Name, Simulator: Version, TotalNs: pt.TotalNs, Staged: p.Space != nil && len(p.Space.Staging) > 0,
		ApproximateOps: pt.ApproxOps, ApproximateNs: pt.ApproxNs, UnknownTripCounts: pt.UnknownTrips, CollectiveNs: pt.CollectiveNs,
		Partitions: p.Partitions}
	kr := make(map[*compiler.Kernel]*KernelReport, len(p.Kernels))
	for i, k := range p.Kernels {
		kt := pt.Kernels[i]
		an := Analytical(k, c)
		r.AnalyticalTotalNs += an * k.Weight
		e := &KernelReport{
			Name: k.Name, Kind: k.Kind, Key: k.Key, Nodes: k.Info.NumOps, Tile: append(cost.Tile{}, k.Choice.Config.Tile...), Flags: k.Choice.Config.Flags.String(),
			SimNs: kt.Ns, AnalyticalNs: an, Bound: kt.Bound, Flops: k.Info.Flops, Bytes: kt.HBMBytes, VMEMBytes: kt.VMEMBytes,
			ApproximateOps: k.Info.ApproxOps, Approximate: k.Approximate || k.Info.ApproxOps > 0,
		}
		st := k.Choice.Config.Staging
		for _, p := range st.In {
			if p >= 0 && p < len(k.Inputs) {
				e.StagedInputs = append(e.StagedInputs, k.Inputs[p])
			}
		}
		e.StagedOutput, e.StagedBytes = st.Out, k.Choice.Plan.AvoidedBytes
		if k.Choice.Plan.Chunks > 1 {
			e.Pieces = k.Choice.Plan.Chunks
		}
		if p.Partitions > 0 && k.Comp != nil && k.Comp.Root != nil {
			e.DeviceShape = k.Comp.Root.Shape.String()
		}
		r.StagedBytes += e.StagedBytes * k.Weight
		r.HBMBytes += kt.HBMBytes * k.Weight
		kr[k] = e
	}
	if r.TotalNs > 0 {
		r.ApproximateShare = r.ApproximateNs / r.TotalNs
	}
	if p.Schedule == nil {
		r.Kernels = make([]Entry, 0, len(p.Kernels)) // [] in JSON for a program of no kernels, never null
		for _, k := range p.Kernels {
			r.Kernels = append(r.Kernels, Entry{KernelReport: kr[k]})
		}
		return r, nil
	}
	w := &walker{s: s, p: p, pt: &ProgramTime{Kernels: pt.Kernels}, idx: map[*compiler.Kernel]int{}, mult: 1}
	for i, k := range p.Kernels {
		w.idx[k] = i
	}
	// The chips the program spans: the ones asked for (or the header's), or more if some
	// collective's replica groups name more devices (a header without replica_count).
	span, unsized := collectiveSpan(p.Schedule, opts.Chips, p.Chips)
	r.Chips, r.UnsizedCollectives = max(w.chips(), span), unsized
	r.Kernels, err = w.entries(p.Schedule, kr)
	if err != nil {
		return nil, err
	}
	if r.Kernels == nil {
		r.Kernels = []Entry{} // a program of no kernels (its entry only bitcasts): [] in JSON, never null
	}
	return r, nil
}

// entries lists the steps of block b as report entries.
func (w *walker) entries(b *compiler.Block, kr map[*compiler.Kernel]*KernelReport) ([]Entry, error) {
	var out []Entry
	fl := inflight{}
	for _, st := range b.Steps {
		_, ns, err := w.timed(st, fl)
		if err != nil {
			return nil, err
		}
		switch {
		case st.Done != nil:
			out = append(out, Entry{ControlReport: &ControlReport{Instruction: st.Done.Name, Control: "collective-done", TotalNs: ns}})
		case st.Kernel != nil:
			out = append(out, Entry{KernelReport: kr[st.Kernel]})
		case st.Loop != nil:
			l := st.Loop
			trips := l.TripCount
			if !l.TripKnown {
				trips = -1
			}
			cr := &ControlReport{Instruction: l.Name, Control: "while", TotalNs: ns, TripCount: &trips, TripSource: l.TripSource}
			if cr.Condition, err = w.entries(l.Cond, kr); err != nil {
				return nil, err
			}
			if cr.Body, err = w.entries(l.Body, kr); err != nil {
				return nil, err
			}
			out = append(out, Entry{ControlReport: cr})
		case st.Cond != nil:
			cr := &ControlReport{Instruction: st.Cond.Name, Control: "conditional", TotalNs: ns, Weights: st.Cond.Weights}
			for _, br := range st.Cond.Branches {
				e, err := w.entries(br, kr)
				if err != nil {
					return nil, err
				}
				cr.Branches = append(cr.Branches, e)
			}
			out = append(out, Entry{ControlReport: cr})
		case st.Collective != nil:
			cc, err := w.collective(st.Collective)
			if err != nil {
				return nil, err
			}
			out = append(out, Entry{ControlReport: &ControlReport{Instruction: st.Collective.Name, Control: "collective", TotalNs: ns,
				Collective: st.Collective.Kind, CollectiveBytes: st.Collective.Bytes, BytesPerLink: cc.BytesPerLink, GroupSize: cc.GroupSize,
				Async: st.Collective.Async}})
		}
	}
	return out, nil
}
