package validate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/dataset/tpugraphs"
	"github.com/tpucost/tpucost/tpusim"
)

// LayoutRun is one timed layout run of a module replayed on tpucost: its index in the
// module's runs, the compiler config it became (compact JSON of its layout and
// operand_layout entries), the measured compute time, the simulated time (noiseless) and
// the analytical model's estimate, and whether XLA chose it by default.
type LayoutRun struct {
	Index        int     `json:"index"`
	Config       string  `json:"config"`
	MeasuredNs   float64 `json:"measured_ns"`
	SimNs        float64 `json:"sim_ns"`
	AnalyticalNs float64 `json:"analytical_ns"`
	Default      bool    `json:"default,omitempty"`
}

// LayoutReplay is the replay of one module's layout runs. Runs holds the replayed runs
// in the module's order; Unmapped every run not replayed (error runs and runs without a
// compute time are counted there too, with that reason) and every configured node whose
// setting could not be carried over.
type LayoutReplay struct {
	Program  string      `json:"program"`
	Runs     []LayoutRun `json:"runs"`
	Unmapped []Unmapped  `json:"unmapped"`
}

// ReplayLayout replays every timed layout run of mt on chip c. A run's per-node layouts
// (LayoutConfig.Nodes[i] configures instruction mt.Instructions[mt.ConfigIndexToNode[i]])
// become a compiler config for the same instruction names: the node's tensor 0 (its
// result) a "layout" entry, its operands (tensors 1...) an "operand_layout" entry. The
// TPU lists each tensor's minor-to-major order as a prefix (the minor dimensions it
// constrains; an empty list leaves the tensor unconstrained); the replay completes a
// prefix with the tensor's other dimensions in the order of its layout in the module
// (see CompleteLayout). Nodes whose tensors have at most one physical order (scalars,
// rank 1) need no entry. The module is then compiled by the pipeline (its
// config-independent preparation done once, kernel analyses shared between runs) and
// timed by the simulator (Simulator.Program, no noise) and the analytical model (the sum
// of tpusim.Analytical over the kernels, times their weights).
//
// Runs with error set, without a profile, or with compute_time_ns <= 1 are not timed
// (as tpu_graphs' loader skips them) and are listed in Unmapped. A run whose config the
// compiler rejects is listed in Unmapped with the compiler's error; a configured node the
// compiled program does not have (removed or renamed by the simplification passes), with
// a non-trivial layout in some run, is listed once. The error is for a module that
// cannot be compiled at all or data that is inconsistent (a config index out of range).
func ReplayLayout(mt tpugraphs.ModuleTuning, c tpusim.Chip) (LayoutReplay, error) {
	out := LayoutReplay{}
	if mt.Module == nil {
		return out, fmt.Errorf("replay: module tuning data has no module")
	}
	out.Program = mt.Module.Name
	sim, err := tpusim.New(c, tpusim.Options{})
	if err != nil {
		return out, fmt.Errorf("replay %s: %w", out.Program, err)
	}
	nodes, err := configuredNodes(mt)
	if err != nil {
		return out, fmt.Errorf("replay %s: %w", out.Program, err)
	}
	opts := compiler.Options{Target: c.Target, Kernels: &compiler.KernelCache{}}
	// The default compile lists the configurable nodes the program has.
	base, err := compiler.Compile(mt.Module, nil, opts)
	if err != nil {
		return out, fmt.Errorf("replay %s: default compile: %w", out.Program, err)
	}
	configurable := map[string]bool{}
	for _, l := range base.Space.Layout {
		configurable[l.Name] = true
	}
	lost := map[string]bool{}
	for ri, r := range mt.Runs {
		name := fmt.Sprintf("run %d", ri)
		switch {
		case r.Error:
			out.Unmapped = append(out.Unmapped, Unmapped{name, "error run (failed on the TPU)"})
			continue
		case !r.HasProfile || r.Profile.ComputeTimeNs <= 1:
			out.Unmapped = append(out.Unmapped, Unmapped{name, "no measured compute time"})
			continue
		case r.Layout == nil:
			out.Unmapped = append(out.Unmapped, Unmapped{name, "not a layout run"})
			continue
		case len(r.Layout.Nodes) != len(nodes):
			out.Unmapped = append(out.Unmapped, Unmapped{name, fmt.Sprintf("configures %d nodes, config_index_to_node lists %d", len(r.Layout.Nodes), len(nodes))})
			continue
		}
		cfg, err := layoutConfig(nodes, r.Layout, configurable, lost)
		if err != nil {
			out.Unmapped = append(out.Unmapped, Unmapped{name, err.Error()})
			continue
		}
		p, err := compiler.Compile(mt.Module, cfg, opts)
		if err != nil {
			out.Unmapped = append(out.Unmapped, Unmapped{name, fmt.Sprintf("compile: %v", err)})
			continue
		}
		pt, err := sim.Program(p)
		if err != nil {
			return out, fmt.Errorf("replay %s: %s: simulate: %w", out.Program, name, err)
		}
		an := 0.0
		for _, k := range p.Kernels {
			an += tpusim.Analytical(k, c) * k.Weight
		}
		js, err := cfg.MarshalIndent()
		if err != nil {
			return out, fmt.Errorf("replay %s: %s: %w", out.Program, name, err)
		}
		var cb bytes.Buffer
		if err := json.Compact(&cb, js); err != nil {
			return out, fmt.Errorf("replay %s: %s: %w", out.Program, name, err)
		}
		out.Runs = append(out.Runs, LayoutRun{Index: ri, Config: cb.String(), MeasuredNs: float64(r.Profile.ComputeTimeNs),
			SimNs: pt.TotalNs, AnalyticalNs: an, Default: r.IsDefault})
	}
	var names []string
	for n := range lost {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		out.Unmapped = append(out.Unmapped, Unmapped{"node " + n, "configured by the runs but not a layout-configurable node of the compiled program; its layouts are not replayed"})
	}
	return out, nil
}

// node is one configured instruction: its config name (qualified by its computation
// unless it is in the entry) and the instruction as decoded.
type node struct {
	name string
	in   *hlo.Instruction
}

func configuredNodes(mt tpugraphs.ModuleTuning) ([]node, error) {
	byName := map[[2]string]*hlo.Instruction{}
	for _, c := range mt.Module.Computations {
		for _, in := range c.Instructions {
			byName[[2]string{c.Name, in.Name}] = in
		}
	}
	out := make([]node, len(mt.ConfigIndexToNode))
	for i, at := range mt.ConfigIndexToNode {
		if at >= uint64(len(mt.Instructions)) {
			return nil, fmt.Errorf("configured node %d is node %d, the module has %d instructions", i, at, len(mt.Instructions))
		}
		key := mt.Instructions[at]
		in := byName[key]
		if in == nil {
			return nil, fmt.Errorf("configured node %d (%s/%s) is not an instruction of the decoded module", i, key[0], key[1])
		}
		name := key[1]
		if mt.Module.Entry == nil || key[0] != mt.Module.Entry.Name {
			name = key[0] + "/" + key[1]
		}
		out[i] = node{name: name, in: in}
	}
	return out, nil
}

// layoutConfig builds the compiler config of one run. Nodes that the compiled program
// does not configure are recorded in lost when the run constrains them non-trivially.
func layoutConfig(nodes []node, lc *tpugraphs.LayoutConfig, configurable, lost map[string]bool) (*compiler.Config, error) {
	cfg := compiler.NewConfig()
	for i, n := range nodes {
		tensors := lc.Nodes[i]
		shapes := []hlo.Shape{n.in.Shape}
		for _, op := range n.in.Operands {
			shapes = append(shapes, op.Shape)
		}
		if len(tensors) > len(shapes) {
			return nil, fmt.Errorf("node %s: %d tensor layouts for a result and %d operands", n.name, len(tensors), len(n.in.Operands))
		}
		full := make([][]int, len(tensors))
		nontrivial := false
		for t, prefix := range tensors {
			if len(prefix) == 0 {
				continue
			}
			mtm, err := CompleteLayout(shapes[t], prefix)
			if err != nil {
				return nil, fmt.Errorf("node %s tensor %d: %w", n.name, t, err)
			}
			full[t] = mtm
			if shapes[t].Rank() >= 2 {
				nontrivial = true
			}
		}
		if !nontrivial {
			continue // only scalars and rank-1 tensors: one physical order each
		}
		if !configurable[n.name] {
			lost[n.name] = true
			continue
		}
		if len(full) > 0 && full[0] != nil {
			cfg.Layout[n.name] = full[0]
		}
		if len(full) > 1 {
			ops := make([][]int, len(n.in.Operands))
			for i := range ops {
				ops[i] = []int{} // unconstrained
			}
			constrained := false
			for t := 1; t < len(full); t++ {
				if full[t] != nil && shapes[t].Rank() >= 2 {
					ops[t-1] = full[t]
					constrained = true
				}
			}
			if constrained {
				cfg.OperandLayout[n.name] = ops
			}
		}
	}
	return cfg, nil
}

// CompleteLayout turns the TPU's minor-to-major prefix of a tensor of shape s into a full
// minor-to-major order: the listed dimensions are the minor ones, in that order; the
// others follow, more major, in the order they have in s's layout (row-major when s has
// none). It fails when the prefix is not a list of distinct dimensions of s.
func CompleteLayout(s hlo.Shape, prefix []int32) ([]int, error) {
	r := s.Rank()
	seen := make([]bool, r)
	out := make([]int, 0, r)
	for _, d := range prefix {
		if d < 0 || int(d) >= r || seen[d] {
			return nil, fmt.Errorf("minor-to-major %v is not an order of distinct dimensions of a rank-%d tensor", prefix, r)
		}
		seen[d] = true
		out = append(out, int(d))
	}
	for _, d := range s.LayoutOrDefault().MinorToMajor {
		if !seen[d] {
			out = append(out, d)
		}
	}
	return out, nil
}
