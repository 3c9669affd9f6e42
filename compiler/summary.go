package compiler

import (
	"fmt"
	"io"
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
	// DumpAfter and HLO: with --dump-after, the pass and the module's HLO text after it.
	DumpAfter string `json:"dump_after,omitempty"`
	HLO       string `json:"hlo,omitempty"`

	stagedEdges int // staging candidates chosen (for WriteText)
}

// Summarize returns p's CompileResult for chip (its name); dumpAfter and hlo are the pass
// whose output was dumped and that HLO text, if any.
func Summarize(p *Program, chip, dumpAfter, hlo string) *CompileResult {
	res := &CompileResult{Program: p.Name, Chip: chip, DumpAfter: dumpAfter, HLO: hlo, Space: map[string]int{
		"layout": len(p.Space.Layout), "fusion": len(p.Space.Fusion), "tile": len(p.Space.Tile), "flags": len(p.Space.Flags), "staging": len(p.Space.Staging)}}
	res.OpCountBefore, res.OpCountAfter = p.OpCountBefore, p.OpCountAfter
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
// a line per kernel; with DumpAfter, the HLO text after that pass instead. r must come
// from Summarize (the staging count is not in the JSON).
func (r *CompileResult) WriteText(out io.Writer) error {
	if r.DumpAfter != "" {
		_, err := io.WriteString(out, r.HLO)
		return err
	}
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
