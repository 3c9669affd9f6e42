package cost

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// Staging says which of a kernel's arrays stay resident in VMEM across kernels (the
// compiler's staging pass, after the Inferentia memory-staging work): In lists the
// fusion parameters read from VMEM, where their producer left them, instead of from HBM;
// Out marks an output kept in VMEM for its consumers instead of written to HBM. The
// zero value stages nothing and is how every kernel is planned unless the staging pass
// says otherwise.
//
// Cost model (one place, used by the simulator, the analytical model and the features
// through the Plan): a staged input moves no HBM bytes and needs no stream window (the
// kernel reads its windows straight from the resident array, like a RoleResident input
// whose load is free); a staged output moves no HBM bytes but keeps its output window
// (each block is assembled there and stored into the resident array). Both occupy their
// whole padded size in VMEM (Plan.StagedBytes, part of Plan.Footprint); compute is
// unchanged. Plan.AvoidedBytes is the padded HBM traffic the staging removes.
type Staging struct {
	In  []int `json:"in,omitempty"`
	Out bool  `json:"out,omitempty"`
}

// Empty reports whether s stages nothing.
func (s Staging) Empty() bool { return len(s.In) == 0 && !s.Out }

// Equal reports whether two stagings are the same.
func (s Staging) Equal(o Staging) bool { return s.Out == o.Out && slices.Equal(s.In, o.In) }

// String renders s as "in0,2+out", "in1", "out" ("-" when empty).
func (s Staging) String() string { return string(s.appendTo(nil)) }

func (s Staging) appendTo(b []byte) []byte {
	if s.Empty() {
		return append(b, '-')
	}
	if len(s.In) > 0 {
		b = append(b, "in"...)
		for i, p := range s.In {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(p), 10)
		}
		if s.Out {
			b = append(b, '+')
		}
	}
	if s.Out {
		b = append(b, "out"...)
	}
	return b
}

// clone returns a copy that shares no memory with s.
func (s Staging) clone() Staging { return Staging{In: slices.Clone(s.In), Out: s.Out} }

// StageableInput reports whether input param of the kernel analyzed as k, tiled with
// tile, can be read from a VMEM-resident copy, and why not. The rule (the access-footprint
// check): every window a grid step reads of the array must be an affine box of it whose
// extent along the array's second-minor physical dimension is a multiple of its sublane
// tile (or the whole dimension) and along its minor dimension a multiple of 128 lanes,
// read in the array's own physical orientation; the window is then a union of whole
// (8,128) memory tiles of the resident array, which the producer wrote in that layout,
// and the consumer reads them with plain vector loads in any order. Refused: gathered
// rows (a data-dependent footprint, not a box), an operand updated in place, a transposed
// read (its box is in the other orientation: a relayout), a convolution's input (its
// windows overlap and are strided), a stream broadcast along rows (its window is a
// lane-width strip, not aligned to its tiles), and an operand whose windows are not
// aligned to its memory tiles.
func (k *KernelInfo) StageableInput(param int, tile Tile, t Target) error {
	i := slices.IndexFunc(k.Inputs, func(o Operand) bool { return o.Param == param })
	if i < 0 {
		return fmt.Errorf("kernel has no parameter %d", param)
	}
	in := k.Inputs[i]
	if in.Shape.IsTuple() {
		return fmt.Errorf("parameter %d is a tuple", param)
	}
	// rows and lanes: the tile extent along the operand's second-minor physical dimension
	// and the kernel's extent along its minor one.
	var rows, lanes int
	switch {
	case in.Role == RoleGather:
		return fmt.Errorf("parameter %d is gathered by index: its footprint is not an affine box", param)
	case in.Role == RoleAliased:
		return fmt.Errorf("parameter %d is updated in place", param)
	case in.Role == RoleResident || k.Kind == KindOpaque || len(tile) == 0:
		return nil // read whole: the box is the array
	case in.Transposed:
		return fmt.Errorf("parameter %d is read transposed (a relayout, not a box of its tiles)", param)
	case k.Kind == KindGEMM && in.Role == RoleLHS:
		if k.IsConv {
			return fmt.Errorf("parameter %d is a convolution's input: its windows overlap", param)
		}
		if k.LHSTransposed || k.DotSwapped {
			return fmt.Errorf("parameter %d is read transposed (a relayout, not a box of its tiles)", param)
		}
		rows, lanes = tile[0], k.K
	case k.Kind == KindGEMM && in.Role == RoleRHS:
		if k.RHSTransposed || k.DotSwapped {
			return fmt.Errorf("parameter %d is read transposed (a relayout, not a box of its tiles)", param)
		}
		rows, lanes = tile[2], k.N
	case in.Ratio != 1:
		return fmt.Errorf("parameter %d is broadcast along the iteration: its windows are strips, not boxes of its tiles", param)
	case k.Kind == KindGEMM:
		rows, lanes = tile[0], k.N
	default:
		rows, lanes = tile[0], k.Dims[1].Size
	}
	if in.Minor != lanes {
		return fmt.Errorf("parameter %d is read in another shape (minor dimension %d, the kernel's lanes %d): its windows are not boxes of it", param, in.Minor, lanes)
	}
	return alignedRows(in, rows, t, "parameter "+strconv.Itoa(param))
}

// CoreRows says which rows of an array the kernel, tiled with tile, gives each core of a
// megacore device of cores cores, for the array it reads as fusion parameter param or
// writes (param -1). The device deals a kernel's output blocks out to its cores in
// contiguous ranges of ceil(blocks/cores), row blocks outer: when every core's range is
// whole rows of the array's physical (rows, lanes) view, rows is how many rows each core
// owns (the last core fewer) and ok is true; ok is false when a core's blocks split rows
// between cores, or when every block reads the whole array (a GEMM's RHS, a resident
// operand). Two kernels whose CoreRows of an array agree compute and read the same rows of
// it on each core: what staging needs on a megacore device, whose cores have separate
// VMEMs. Call it only for a parameter or output that passes StageableInput or
// StageableOutput.
func (k *KernelInfo) CoreRows(param int, tile Tile, cores int) (rows int, ok bool) {
	var rowBlocks, colBlocks, rowTile int
	switch k.Kind {
	case KindLoop:
		rowBlocks, colBlocks, rowTile = ceilDiv(max(k.Dims[0].Size, 1), tile[0]), ceilDiv(max(k.Dims[1].Size, 1), tile[1]), tile[0]
	case KindReduce:
		if param < 0 || !k.RowReduce || k.FullReduce {
			return 0, false // an output vector, or blocks over lanes
		}
		rowBlocks, colBlocks, rowTile = ceilDiv(max(k.Dims[0].Size, 1), tile[0]), 1, tile[0] // lanes in inner steps
	case KindGEMM:
		if k.Batch > 1 || k.IsConv || k.DotSwapped {
			return 0, false
		}
		if param >= 0 {
			i := slices.IndexFunc(k.Inputs, func(o Operand) bool { return o.Param == param })
			if i < 0 || k.Inputs[i].Role == RoleRHS || k.Inputs[i].Role == RoleResident {
				return 0, false // read by every block
			}
		}
		rowBlocks, colBlocks, rowTile = ceilDiv(max(k.M, 1), tile[0]), ceilDiv(max(k.N, 1), tile[1]), tile[0]
	default:
		return 0, false
	}
	per := ceilDiv(rowBlocks*colBlocks, max(cores, 1))
	if per%colBlocks != 0 {
		return 0, false
	}
	return per / colBlocks * rowTile, true
}

// StageableOutput reports whether the output of the kernel analyzed as k, tiled with tile,
// can be kept resident in VMEM, and why not: every block must write an affine box of the
// output aligned to its memory tiles (see StageableInput), in its own orientation. A
// tuple output (a multi-output kernel) is refused.
func (k *KernelInfo) StageableOutput(tile Tile, t Target) error {
	out := k.Output
	switch {
	case out.Shape.IsTuple():
		return fmt.Errorf("the output is a tuple")
	case k.Kind == KindOpaque:
		return nil
	case k.Hero == hlo.OpDynamicUpdateSlice || k.Hero == hlo.OpScatter:
		return fmt.Errorf("the output is updated in place")
	case k.Kind == KindGEMM && (k.OutTransposed || k.DotSwapped):
		return fmt.Errorf("the output is written transposed")
	case k.Kind == KindReduce || len(tile) == 0:
		return nil // written in whole lane rows of its blocks, in order
	}
	return alignedRows(out, tile[0], t, "the output")
}

// alignedRows checks that a window of rows rows of o covers whole sublane tiles of o.
func alignedRows(o Operand, rows int, t Target, what string) error {
	pd := o.Shape.PhysicalDims()
	if len(pd) < 2 {
		return nil
	}
	st := t.SublaneTile(o.ElemBytes)
	if rows%st != 0 && rows < pd[len(pd)-2] {
		return fmt.Errorf("%s: windows of %d rows split its (%d,128) memory tiles", what, rows, st)
	}
	return nil
}

// Staged returns the same tile and flags with staging s in place of p's own (empty:
// nothing staged): the kernel's arrays s names are resident in VMEM (see Staging) and the
// plan is that of the same tile without their HBM traffic, with their VMEM. It fails,
// wrapping ErrTileInvalid, when s names a parameter the kernel does not have or one it
// cannot stage (StageableInput, StageableOutput), or when the tile does not fit VMEM with
// the flags and the staged arrays.
func (p Planned) Staged(s Staging) (Planned, error) {
	base := p.Info.unstaged()
	s = s.clone()
	slices.Sort(s.In)
	s.In = slices.Compact(s.In)
	for _, param := range s.In {
		if err := base.StageableInput(param, p.Config.Tile, p.Target); err != nil {
			return Planned{}, fmt.Errorf("%w: staging %s: %v", ErrTileInvalid, s, err)
		}
	}
	if s.Out {
		if err := base.StageableOutput(p.Config.Tile, p.Target); err != nil {
			return Planned{}, fmt.Errorf("%w: staging %s: %v", ErrTileInvalid, s, err)
		}
	}
	info := base
	if !s.Empty() {
		info = base.staged(s)
	}
	plan := info.plan(p.Config.Tile, p.Target)
	if !s.Empty() {
		unstaged := base.plan(p.Config.Tile, p.Target)
		if plan.Steps != unstaged.Steps || plan.Blocks != unstaged.Blocks {
			// A batched matmul packs products per step by its traffic (packBatch): staging
			// keeps the grid the tile was chosen for.
			return Planned{}, fmt.Errorf("%w: staging %s would change the kernel's grid", ErrTileInvalid, s)
		}
		plan.AvoidedBytes = unstaged.PaddedBytes - plan.PaddedBytes
	}
	if err := fits(p.Config.Tile, plan, p.Config.Flags, p.Target); err != nil {
		if s.Empty() {
			return Planned{}, err
		}
		return Planned{}, fmt.Errorf("staging %s: %w", s, err)
	}
	q := p
	q.Info, q.Plan = info, plan
	q.Config.Tile = slices.Clone(p.Config.Tile)
	q.Config.Staging = s
	if s.Empty() {
		q.Config.Staging = Staging{}
	}
	return q, nil
}

// unstaged is the kernel's own analysis: k, or the one a staged copy was made from.
func (k *KernelInfo) unstaged() *KernelInfo {
	if k.base != nil {
		return k.base
	}
	return k
}

// staged returns a copy of k's own analysis whose operands s names are marked staged (an
// analysis is shared and read-only; the copy shares everything else).
func (k *KernelInfo) staged(s Staging) *KernelInfo {
	base := k.unstaged()
	c := *base
	c.base = base
	c.Inputs = slices.Clone(base.Inputs)
	for i := range c.Inputs {
		if slices.Contains(s.In, c.Inputs[i].Param) {
			c.Inputs[i].Staged = true
		}
	}
	c.Output.Staged = s.Out
	return &c
}

// unstageOutput applies a staged output to a plan computed with the output streamed:
// no output traffic, its padded size in VMEM.
func (k *KernelInfo) unstageOutput(p *Plan) {
	if !k.Output.Staged {
		return
	}
	p.PaddedBytes -= float64(p.Blocks) * p.OutBytesPerBlock
	p.OutBytesPerBlock, p.OutBurstsPerBlock = 0, 0
	p.LogicalBytes -= k.Output.Bytes
	p.StagedBytes += k.Output.Padded
}
