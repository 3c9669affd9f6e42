package compiler

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/tpucost/tpucost/compiler/cost"
)

// CompiledKernel is one kernel of a CompileResult.
type CompiledKernel struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	Key   string `json:"key"`
	Nodes int    `json:"nodes"`
	Tile  []int  `json:"tile"`
	Flags string `json:"flags"`
	// Staged is what the kernel keeps in VMEM across kernels (cost.Staging: "in0,2+out"),
	// absent when nothing.
	Staged string `json:"staged,omitempty"`
}

// CompiledPass is one pass run of a CompileResult. Iteration is the fixed-point
// iteration of a pass of the default simplification pipeline (absent otherwise).
type CompiledPass struct {
	Name         string `json:"name"`
	Changed      bool   `json:"changed"`
	OpCountAfter int    `json:"op_count_after"`
	Iteration    int    `json:"iteration,omitempty"`
}

// PassStatRun is one pass run of a compile (compile --pass-stats), in the order the
// passes ran: its wall time and opt.OpCount of the module before and after it. Iteration
// is the fixed-point iteration of a pass the simplify group iterates (absent otherwise);
// the group's own run follows its members' and covers them (its time includes theirs).
type PassStatRun struct {
	Name      string `json:"name"`
	Iteration int    `json:"iteration,omitempty"`
	WallNS    int64  `json:"wall_ns"`
	OpsBefore int    `json:"ops_before"`
	OpsAfter  int    `json:"ops_after"`
}

// CompileResult summarizes a compiled program (tpucost compile --json): its kernels, the
// size of its config space, and the passes run.
type CompileResult struct {
	Program string           `json:"program"`
	Chip    string           `json:"chip"`
	Kernels []CompiledKernel `json:"kernels"`
	Space   map[string]int   `json:"configurable"`
	// OpCountBefore and OpCountAfter: the module's op count (opt.OpCount) before and after
	// the simplification passes.
	OpCountBefore int `json:"op_count_before"`
	OpCountAfter  int `json:"op_count_after"`
	// Passes lists every pass run, in order: simplification, then the compiler passes.
	Passes []CompiledPass `json:"passes"`
	// DumpAfter and HLO: with --dump-after, the pattern and the module's HLO text after
	// the passes it selects (DumpHook's output).
	DumpAfter string `json:"dump_after,omitempty"`
	HLO       string `json:"hlo,omitempty"`
	// PassStats (--pass-stats): every pass run with its time and op counts, in order.
	PassStats []PassStatRun `json:"pass_stats,omitempty"`

	stagedEdges int // staging candidates chosen (for WriteText)
}

// Summarize returns p's CompileResult for chip (its name); dumpAfter and hlo are the pass
// whose output was dumped and that HLO text, if any.
func Summarize(p *Program, chip, dumpAfter, hlo string) *CompileResult {
	res := &CompileResult{Program: p.Name, Chip: chip, DumpAfter: dumpAfter, HLO: hlo, Space: map[string]int{
		"layout": len(p.Space.Layout), "fusion": len(p.Space.Fusion), "tile": len(p.Space.Tile), "flags": len(p.Space.Flags), "staging": len(p.Space.Staging)}}
	res.OpCountBefore, res.OpCountAfter = p.OpCountBefore, p.OpCountAfter
	// [] in JSON when there are none (--passes none, a program of no kernels), never null.
	res.Passes, res.Kernels = []CompiledPass{}, []CompiledKernel{}
	for _, r := range p.Passes {
		res.Passes = append(res.Passes, CompiledPass{Name: r.Name, Changed: r.Changed, OpCountAfter: r.OpCount, Iteration: r.Iteration})
	}
	for _, k := range p.Kernels {
		res.Kernels = append(res.Kernels, CompiledKernel{Name: k.Name, Kind: k.Kind, Key: k.Key, Nodes: k.Info.NumOps,
			Tile: append([]int{}, k.Choice.Config.Tile...), Flags: k.Choice.Config.Flags.String()})
		if st := k.Choice.Config.Staging; !st.Empty() {
			res.Kernels[len(res.Kernels)-1].Staged = st.String()
		}
	}
	for _, sc := range p.Space.Staging {
		if sc.Chosen {
			res.stagedEdges++
		}
	}
	return res
}

// WriteText writes r as text (tpucost compile): the config space, the staging chosen and
// a line per kernel; with DumpAfter, the HLO text after those passes instead; then, with
// PassStats, a line per pass run (name, iteration, wall time in µs, op counts). r must come
// from Summarize (the staging count is not in the JSON).
func (r *CompileResult) WriteText(out io.Writer) error {
	if r.DumpAfter != "" {
		if _, err := io.WriteString(out, r.HLO); err != nil {
			return err
		}
		return r.writePassStats(out)
	}
	if err := r.writeKernels(out); err != nil {
		return err
	}
	return r.writePassStats(out)
}

// writePassStats writes the pass statistics table, if any: a line per pass run.
func (r *CompileResult) writePassStats(out io.Writer) error {
	if len(r.PassStats) == 0 {
		return nil
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "PASS\tITERATION\tWALL_US\tOPS_BEFORE\tOPS_AFTER")
	for _, p := range r.PassStats {
		it := "-"
		if p.Iteration > 0 {
			it = strconv.Itoa(p.Iteration)
		}
		fmt.Fprintf(w, "%s\t%s\t%.1f\t%d\t%d\n", p.Name, it, float64(p.WallNS)/1e3, p.OpsBefore, p.OpsAfter)
	}
	return w.Flush()
}

// writeKernels writes the config space, the staging chosen and a line per kernel.
func (r *CompileResult) writeKernels(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "%s on %s: %d kernels; configurable: %d layout nodes, %d fusion edges, %d tiled kernel keys; simplification: %d -> %d ops\n",
		r.Program, r.Chip, len(r.Kernels), r.Space["layout"], r.Space["fusion"], r.Space["tile"], r.OpCountBefore, r.OpCountAfter)
	if n := r.Space["staging"]; n > 0 {
		fmt.Fprintf(w, "staging: %d of %d candidate edges keep their array in VMEM\n", r.stagedEdges, n)
	}
	fmt.Fprintln(w, "KERNEL\tKIND\tNODES\tTILE\tFLAGS\tKEY")
	for _, k := range r.Kernels {
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\n", k.Name, k.Kind, k.Nodes, cost.Tile(k.Tile), k.Flags, k.Key)
	}
	return w.Flush()
}
