package ragged

import (
	"errors"
	"fmt"
	"io"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/zoo"
)

// CompileReport is `tpucost compile SRC --lengths ...`: the ragged form of a zoo model
// compiled and lowered (compiler.PlanRagged): every kernel's kind, the counts, and the
// ops padded because they cannot carry raggedness.
type CompileReport struct {
	Program     string                  `json:"program"`
	Lengths     []int                   `json:"lengths"`
	PackedRows  int                     `json:"packed_rows"` // Σ⌈lᵢ/8⌉·8
	PaddedRows  int                     `json:"padded_rows"` // N · max lᵢ
	PerSequence int                     `json:"per_sequence"`
	Packed      int                     `json:"packed"`
	Dense       int                     `json:"dense"`
	PadKernels  int                     `json:"pad_kernels"` // explicit pads (compiler.InsertRaggedPads)
	Kernels     []compiler.RaggedKernel `json:"kernels"`
	Pads        []string                `json:"pads"`
}

// CompileRequest is `tpucost compile SRC --lengths L,...`: Src a zoo model with a ragged
// form (bert_*, gpt2_*), Lengths as ParseLengths reads them.
type CompileRequest struct {
	Src, Lengths string
	// Other names a compile flag set alongside --lengths that the ragged compile does not
	// take ("" when none).
	Other string
}

// Compile builds the ragged form of r.Src over r.Lengths, compiles it for t with default
// configs and lowers it.
func (r CompileRequest) Compile(t cost.Target) (*CompileReport, error) {
	if r.Other != "" {
		return nil, fmt.Errorf("--lengths compiles the ragged form with default configs: drop %s", r.Other)
	}
	lengths, err := ParseLengths(r.Lengths)
	if err != nil {
		return nil, fmt.Errorf("--lengths: %w", err)
	}
	m, err := LookupZoo(r.Src)
	if err != nil {
		return nil, fmt.Errorf("--lengths: %w", err)
	}
	if !m.Raggable() {
		return nil, errors.New("--lengths: " + r.Src + " has no ragged form (compile --lengths takes a bert_* or gpt2_* zoo model)")
	}
	for _, l := range lengths {
		if _, err := m.WithShapes(zoo.Shapes{{Name: "seq", Value: l}}); err != nil {
			return nil, fmt.Errorf("--lengths: %w", err)
		}
	}
	mod, err := m.BuildRagged(lengths)
	if err != nil {
		return nil, fmt.Errorf("--lengths: %w", err)
	}
	if _, err := compiler.InsertRaggedPads(mod); err != nil {
		return nil, fmt.Errorf("--lengths: %w", err)
	}
	p, err := compiler.Compile(mod, nil, compiler.Options{Target: t})
	if err != nil {
		return nil, fmt.Errorf("--lengths: compiling %s: %w", mod.Name, err)
	}
	plan, err := compiler.PlanRagged(p)
	if err != nil {
		return nil, fmt.Errorf("--lengths: %w", err)
	}
	rep := &CompileReport{Program: m.Name, Lengths: lengths, Kernels: plan.Kernels, Pads: []string{},
		PerSequence: plan.Count(compiler.RaggedPerSequence), Packed: plan.Count(compiler.RaggedPacked), Dense: plan.Count(compiler.RaggedDense), PadKernels: plan.Count(compiler.RaggedPadKernel)}
	longest := 0
	for _, l := range lengths {
		rep.PackedRows += padTo(l)
		longest = max(longest, l)
	}
	rep.PaddedRows = len(lengths) * longest
	for _, pd := range plan.Pads {
		rep.Pads = append(rep.Pads, pd.String())
	}
	return rep, nil
}

// WriteText lists the ragged kernels: one line per kernel (name, kind, ragged dims, and
// whether it reads the offsets), then the pads.
func (r *CompileReport) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%s ragged over %d sequences (lengths %s): %d packed rows of %d padded\n",
		r.Program, len(r.Lengths), FormatLengths(r.Lengths), r.PackedRows, r.PaddedRows)
	fmt.Fprintf(w, "%d kernels: %d per-sequence, %d packed, %d dense, %d pad\n", len(r.Kernels), r.PerSequence, r.Packed, r.Dense, r.PadKernels)
	for _, k := range r.Kernels {
		off := ""
		if k.Offsets {
			off = " offsets"
		}
		fmt.Fprintf(w, "  %-24s %-13s %s%s\n", k.Name, k.Kind, k.Dims, off)
	}
	if len(r.Pads) == 0 {
		_, err := fmt.Fprintln(w, "no pads: every op carries the raggedness")
		return err
	}
	for _, p := range r.Pads {
		fmt.Fprintf(w, "pad: %s\n", p)
	}
	return nil
}
