package features

import (
	"fmt"
	"math"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/compiler/hlo"
)

// Graph is one kernel as tensors: node i has opcode id Opcodes[i] and features
// NodeFeats[i*NodeWidth:(i+1)*NodeWidth]; edge j goes from node EdgeSrc[j] (an operand) to
// node EdgeDst[j] (its user).
type Graph struct {
	Opcodes     []int32
	NodeFeats   []float32
	EdgeSrc     []int32
	EdgeDst     []int32
	KernelFeats []float32
}

// Nodes is the number of nodes.
func (g *Graph) Nodes() int { return len(g.Opcodes) }

// Validate checks the tensor sizes and edge indices.
func (g *Graph) Validate() error { return g.ValidateWidths(NodeWidth, KernelWidth) }

// ValidateWidths is Validate for a feature schema of node and kernel widths other than
// this package's (an imported dataset's).
func (g *Graph) ValidateWidths(node, kernel int) error {
	n := len(g.Opcodes)
	if len(g.NodeFeats) != n*node {
		return fmt.Errorf("graph has %d node features, want %d x %d", len(g.NodeFeats), n, node)
	}
	if len(g.KernelFeats) != kernel {
		return fmt.Errorf("graph has %d kernel features, want %d", len(g.KernelFeats), kernel)
	}
	if len(g.EdgeSrc) != len(g.EdgeDst) {
		return fmt.Errorf("graph has %d edge sources and %d destinations", len(g.EdgeSrc), len(g.EdgeDst))
	}
	for j := range g.EdgeSrc {
		if s, d := g.EdgeSrc[j], g.EdgeDst[j]; s < 0 || int(s) >= n || d < 0 || int(d) >= n {
			return fmt.Errorf("edge %d (%d->%d) out of range for %d nodes", j, s, d, n)
		}
	}
	return nil
}

// lg is the log2(1+x) scaling used for counts and sizes. Small integers (most counts,
// dimensions and tile sizes) read it from a table of the same values.
func lg(x float64) float32 {
	if x <= 0 {
		return 0
	}
	if x < lgTableSize {
		if i := int(x); float64(i) == x {
			return lgTable[i]
		}
	}
	return float32(math.Log2(1 + x))
}

const lgTableSize = 1 << 12

var lgTable = func() (t [lgTableSize]float32) {
	for i := range t {
		t[i] = float32(math.Log2(1 + float64(i)))
	}
	return t
}()

func b2f(b bool) float32 {
	if b {
		return 1
	}
	return 0
}

var categories = []hlo.Category{
	hlo.CatSource, hlo.CatElementwise, hlo.CatTranscendental, hlo.CatDot, hlo.CatConvolution, hlo.CatReduce,
	hlo.CatReduceWindow, hlo.CatDataMovement, hlo.CatIndexed, hlo.CatTuple, hlo.CatControl, hlo.CatOther,
}

func nodeNames() []string {
	n := []string{}
	for _, c := range categories {
		n = append(n, "cat_"+c.String())
	}
	n = append(n, "elem_bytes_log", "elem_is_float", "rank")
	for i := 0; i < MaxRank; i++ {
		n = append(n, fmt.Sprintf("dim%d_log", i))
	}

	for i := 0; i < MaxRank; i++ {
		n = append(n, fmt.Sprintf("phys%d_log", i)) // phys0 is the minor-most dimension
	}
	for i := 0; i < MaxRank; i++ {
		n = append(n, fmt.Sprintf("dim%d_phys_pos", i))
	}
	n = append(n,
		"minor_mod128", "minor_aligned128", "second_minor_mod8", "pad_ratio_log",
		"elements_log", "bytes_log", "padded_bytes_log",
		"operands", "users_log", "is_parameter", "is_root",
		"win0_log", "win1_log", "stride0_log", "stride1_log", "pad_total_log", "lhs_dilate_log", "rhs_dilate_log",
		"feature_groups_log", "batch_groups_log",
		"dot_contracting_dims", "dot_contracting_log", "dot_batch_dims", "dot_batch_log", "dot_lhs_contracting_minor",
	)
	for i := 0; i < MaxRank; i++ {
		n = append(n, fmt.Sprintf("reduce_dim%d", i))
	}
	n = append(n, "reduce_size_log", "reduces_minor", "transpose_moves_minor", "broadcast_new_dims", "size_ratio_log",
		"flops_log", "transcendentals_log", "vector_ops_log", "bytes_read_log", "bytes_written_log",
		"dynamic_dims_fraction")
	return n
}

// nodeFeatures writes the features of in (a node of a kernel with nUsers users) into f.
func nodeFeatures(f []float32, in *hlo.Instruction, nUsers int, isRoot bool, t cost.Target) {
	i := 0
	put := func(v float32) { f[i] = v; i++ }
	for _, c := range categories {
		put(b2f(in.Opcode.Category() == c))
	}
	s := in.Shape
	for s.IsTuple() && len(s.Tuple) > 0 {
		s = s.Tuple[0]
	}
	eb := s.Elem.Bytes()
	put(lg(float64(eb)))
	put(b2f(s.Elem.IsFloat()))
	put(float32(s.Rank()))
	for d := 0; d < MaxRank; d++ {
		if d < s.Rank() {
			put(lg(float64(s.Dims[d])))
		} else {
			put(0)
		}
	}

	mtm := []int{}
	if s.IsArray() && s.Rank() > 0 {
		mtm = s.LayoutOrDefault().MinorToMajor
	}
	for j := 0; j < MaxRank; j++ {
		if j < len(mtm) {
			put(lg(float64(s.Dims[mtm[j]])))
		} else {
			put(0)
		}
	}
	pos := make([]float32, MaxRank)
	for j, d := range mtm {
		if d < MaxRank {
			pos[d] = float32(j+1) / MaxRank
		}
	}
	for _, p := range pos {
		put(p)
	}
	minor, second := 1, 1
	if len(mtm) > 0 {
		minor = s.Dims[mtm[0]]
	}
	if len(mtm) > 1 {
		second = s.Dims[mtm[1]]
	}
	put(float32(minor%128) / 128)
	put(b2f(minor%128 == 0))
	put(float32(second%8) / 8)
	bytes := float64(s.Bytes())
	padded := cost.PaddedBytes(s, t)
	if bytes > 0 {
		put(float32(math.Log2(padded / bytes)))
	} else {
		put(0)
	}
	put(lg(float64(s.Elements())))
	put(lg(bytes))
	put(lg(padded))
	put(float32(len(in.Operands)))
	put(lg(float64(nUsers)))
	put(b2f(in.Opcode == hlo.OpParameter))
	put(b2f(isRoot))
	// Windows (convolution, reduce-window).
	var win [2]hlo.WindowDim
	if in.Window != nil {
		for j := 0; j < 2 && j < len(in.Window.Dims); j++ {
			win[j] = in.Window.Dims[j]
		}
	}
	put(lg(float64(win[0].Size)))
	put(lg(float64(win[1].Size)))
	put(lg(float64(win[0].Stride)))
	put(lg(float64(win[1].Stride)))
	put(lg(float64(win[0].PadLo + win[0].PadHi + win[1].PadLo + win[1].PadHi)))
	put(lg(float64(max(win[0].LhsDilate, win[1].LhsDilate))))
	put(lg(float64(max(win[0].RhsDilate, win[1].RhsDilate))))
	put(lg(float64(in.FeatureGroupCount)))
	put(lg(float64(in.BatchGroupCount)))
	// Dot dimension numbers.
	if dd := in.Dot; dd != nil && len(in.Operands) == 2 {
		ls := in.Operands[0].Shape
		k, b := 1, 1
		for _, d := range dd.LhsContracting {
			k *= ls.Dims[d]
		}
		for _, d := range dd.LhsBatch {
			b *= ls.Dims[d]
		}
		minorC := false
		if ls.Rank() > 0 {
			lm := ls.LayoutOrDefault().MinorToMajor[0]
			for _, d := range dd.LhsContracting {
				minorC = minorC || d == lm
			}
		}
		put(float32(len(dd.LhsContracting)))
		put(lg(float64(k)))
		put(float32(len(dd.LhsBatch)))
		put(lg(float64(b)))
		put(b2f(minorC))
	} else {
		i += 5
	}
	// Reductions.
	red := make([]float32, MaxRank)
	redSize, redMinor := 1, false
	if in.Opcode == hlo.OpReduce && len(in.Operands) > 0 {
		is := in.Operands[0].Shape
		lm := -1
		if is.Rank() > 0 {
			lm = is.LayoutOrDefault().MinorToMajor[0]
		}
		for _, d := range in.Dimensions {
			if d < MaxRank {
				red[d] = 1
			}
			redSize *= is.Dims[d]
			redMinor = redMinor || d == lm
		}
	}
	for _, r := range red {
		put(r)
	}
	put(lg(float64(redSize - 1)))
	put(b2f(redMinor))
	moves := false
	if in.Opcode == hlo.OpTranspose && len(mtm) > 0 {
		moves = in.Dimensions[mtm[0]] != in.Operands[0].Shape.LayoutOrDefault().MinorToMajor[0]
	}
	if in.Opcode == hlo.OpCopy && len(in.Operands) == 1 && in.Operands[0].Shape.Rank() > 0 && len(mtm) > 0 {
		moves = in.Operands[0].Shape.LayoutOrDefault().MinorToMajor[0] != mtm[0]
	}
	put(b2f(moves))
	newDims := 0
	if in.Opcode == hlo.OpBroadcast && len(in.Operands) == 1 {
		newDims = s.Rank() - in.Operands[0].Shape.Rank()
	}
	put(float32(newDims))
	ratio := float32(0)
	if len(in.Operands) > 0 && in.Operands[0].Shape.IsArray() && in.Operands[0].Shape.Elements() > 0 && s.Elements() > 0 {
		ratio = float32(math.Log2(float64(s.Elements()) / float64(in.Operands[0].Shape.Elements())))
	}
	put(ratio)
	c := cost.Of(in)
	put(lg(c.Flops))
	put(lg(c.Transcendentals))
	put(lg(c.VectorOps))
	put(lg(c.BytesRead))
	put(lg(c.BytesWritten))
	dyn := 0
	for d := range s.Rank() {
		if s.IsDynamic(d) {
			dyn++
		}
	}
	put(float32(dyn) / float32(max(s.Rank(), 1)))
	if i != NodeWidth {
		panic(fmt.Sprintf("features: wrote %d node features, NodeWidth is %d", i, NodeWidth))
	}
}

func kernelNames() []string {
	n := []string{"kind_loop", "kind_reduce", "kind_gemm", "kind_opaque",
		"ops_log", "inputs_log", "flops_log", "transcendentals_log", "vector_ops_log",
		"in_bytes_log", "in_padded_log", "out_bytes_log", "out_padded_log",
		"gemm_batch_log", "gemm_m_log", "gemm_n_log", "gemm_k_log", "groups_log", "is_conv",
		"lhs_transposed", "out_transposed", "row_reduce", "in_elems_log", "out_elems_log",
		"transposed_inputs", "resident_inputs", "gather_inputs", "stream_inputs", "mxu_pad_log",
	}
	for i := 0; i < 3; i++ {
		n = append(n, fmt.Sprintf("iter%d_log", i), fmt.Sprintf("iter%d_align_log", i))
	}
	return n
}

// mxuPadLog is log2 of the work a GEMM kernel's matrix unit does per useful
// multiply-add: the MXU multiplies [·,D]×[D,D] weight blocks (D = t.MXUDim, 128), so a
// product's K and its outputs per group (N/Groups) are padded to multiples of D, and
// (⌈K/D⌉·D/K)·(⌈n/D⌉·D/n) of the array's work is spent per useful product (a
// convolution of 16 channels in and out, K = 144: 8 · 1.78, 3.8 here). 0 for other
// kernels and for products of whole blocks. The analytical model counts logical flops
// and is blind to it (cost.KernelInfo.Analytical), and without it a held-out program
// of thinner convolutions than any trained on was predicted 50-60% too fast (feature
// schema 7, docs/training.md).
func mxuPadLog(k *cost.KernelInfo, t cost.Target) float32 {
	if k.Kind != cost.KindGEMM || k.N <= 0 || k.K <= 0 || t.MXUDim <= 0 {
		return 0
	}
	d := float64(t.MXUDim)
	n := float64(max(k.N/max(k.Groups, 1), 1))
	kk := float64(k.K)
	return float32(math.Log2(math.Ceil(n/d) * d / n * math.Ceil(kk/d) * d / kk))
}

func kernelFeatures(k *cost.KernelInfo, t cost.Target) []float32 {
	f := make([]float32, 0, KernelWidth)
	for _, kind := range []cost.KernelKind{cost.KindLoop, cost.KindReduce, cost.KindGEMM, cost.KindOpaque} {
		f = append(f, b2f(k.Kind == kind))
	}
	var inB, inP float64
	var transposed, resident, gather, stream int
	for _, in := range k.Inputs {
		// What the kernel reads, not what its operands hold: a gathered table's rows,
		// not the table (SchemaVersion 6).
		b, p := k.ReadBytes(in, t)
		inB += b
		inP += p
		switch in.Role {
		case cost.RoleResident:
			resident++
		case cost.RoleGather:
			gather++
		default:
			stream++
		}
		if in.Transposed {
			transposed++
		}
	}
	f = append(f, lg(float64(k.NumOps)), lg(float64(len(k.Inputs))), lg(k.Flops), lg(k.Transcendentals), lg(k.VectorOps),
		lg(inB), lg(inP), lg(k.Output.Bytes), lg(k.Output.Padded),
		lg(float64(k.Batch)), lg(float64(k.M)), lg(float64(k.N)), lg(float64(k.K)), lg(float64(k.Groups-1)), b2f(k.IsConv),
		b2f(k.LHSTransposed), b2f(k.OutTransposed), b2f(k.RowReduce), lg(float64(k.InElems)), lg(float64(k.OutElems)),
		float32(transposed), float32(resident), float32(gather), float32(stream), mxuPadLog(k, t))
	for i := 0; i < 3; i++ {
		if i < len(k.Dims) {
			f = append(f, lg(float64(k.Dims[i].Size)), lg(float64(k.Dims[i].Align)))
		} else {
			f = append(f, 0, 0)
		}
	}
	if len(f) != KernelWidth {
		panic(fmt.Sprintf("features: wrote %d kernel features, KernelWidth is %d", len(f), KernelWidth))
	}
	return f
}

// Kernel returns the graph tensors of a fused computation with its analysis.
func Kernel(fc *hlo.Computation, info *cost.KernelInfo, t cost.Target) Graph {
	ids := opcodeIDs()
	n := len(fc.Instructions)
	g := Graph{Opcodes: make([]int32, n), NodeFeats: make([]float32, n*NodeWidth)}
	pos := make(map[*hlo.Instruction]int32, n)
	users := make([]int, n)
	for i, in := range fc.Instructions {
		pos[in] = int32(i)
	}
	for i, in := range fc.Instructions {
		for _, op := range in.Operands {
			if j, ok := pos[op]; ok {
				g.EdgeSrc = append(g.EdgeSrc, j)
				g.EdgeDst = append(g.EdgeDst, int32(i))
				users[j]++
			}
		}
	}
	for i, in := range fc.Instructions {
		g.Opcodes[i] = ids[in.Opcode]
		nodeFeatures(g.NodeFeats[i*NodeWidth:(i+1)*NodeWidth], in, users[i], in == fc.Root, t)
	}
	g.KernelFeats = kernelFeatures(info, t)
	return g
}

// OfKernel is Kernel for a compiled kernel.
func OfKernel(k *compiler.Kernel, t cost.Target) Graph { return Kernel(k.Comp, k.Info, t) }

func configNames() []string {
	n := []string{}
	for i := 0; i < 3; i++ {
		n = append(n, fmt.Sprintf("tile%d_log", i), fmt.Sprintf("tile%d_fraction", i), fmt.Sprintf("blocks%d_log", i))
	}
	n = append(n, "double_buffer", "pipeline_depth", "unroll_log",
		"steps_log", "blocks_log", "inner_steps_log", "in_bytes_per_step_log", "in_bursts_per_step_log",
		"out_bytes_per_block_log", "epi_bytes_per_block_log", "resident_bytes_log", "footprint_log", "footprint_vmem_fraction",
		"logical_bytes_log", "padded_bytes_log", "mxu_passes_log", "weight_blocks_log", "vector_ops_log",
		"transcendental_log", "xlu_ops_log", "epi_vector_ops_log", "edge_waste")
	return n
}

// Config returns the features of a planned kernel choice: its tile and flags and what
// they imply statically (the plan the cost package made: steps, bytes per step, VMEM
// footprint, unit work per step) on the target it was planned for.
func Config(c cost.Planned) []float32 {
	info, tile, flags, p, t := c.Info, c.Config.Tile, c.Config.Flags, c.Plan, c.Target
	f := make([]float32, 0, ConfigWidth)
	waste := 1.0
	for i := 0; i < 3; i++ {
		if i < len(tile) {
			d := info.Dims[i]
			blocks := (max(d.Size, 1) + tile[i] - 1) / tile[i]
			f = append(f, lg(float64(tile[i])), float32(math.Min(float64(tile[i])/float64(max(d.Size, 1)), 4)), lg(float64(blocks)))
			waste *= float64(blocks*tile[i]) / float64(max(d.Size, 1))
		} else {
			f = append(f, 0, 0, 0)
		}
	}
	fp := p.Footprint(flags)
	f = append(f, b2f(flags.DoubleBuffer), float32(flags.PipelineDepth), lg(float64(flags.Unroll)),
		lg(float64(p.Steps)), lg(float64(p.Blocks)), lg(float64(p.InnerSteps)), lg(p.InBytesPerStep), lg(p.InBurstsPerStep),
		lg(p.OutBytesPerBlock), lg(p.EpiBytesPerBlock), lg(p.ResidentBytes), lg(fp), float32(fp/float64(t.VMEMBytes)),
		lg(p.LogicalBytes), lg(p.PaddedBytes), lg(p.MXUPasses), lg(p.WeightBlocks), lg(p.VectorOps),
		lg(p.Transcendental), lg(p.XLUOps), lg(p.EpiVectorOps), float32(math.Log2(waste)))
	if len(f) != ConfigWidth {
		panic(fmt.Sprintf("features: wrote %d config features, ConfigWidth is %d", len(f), ConfigWidth))
	}
	return f
}
