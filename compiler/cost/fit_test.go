package cost

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// v2VMEM is a core with v2's and v3's 16 MiB of VMEM (the tpusim presets; v4 above has 32).
var v2VMEM = func() Target { t := v4; t.Name, t.VMEMBytes = "v2", 16<<20; return t }()

// fusedKernel parses a module whose entry calls one fused computation and returns that
// computation.
func fusedKernel(t *testing.T, src string) *hlo.Computation {
	t.Helper()
	m, err := hlo.Parse("kernel.hlo", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range m.Entry.Instructions {
		if in.Opcode == hlo.OpFusion {
			return in.Calls
		}
	}
	t.Fatal("no fusion in the module")
	return nil
}

// mustOptions analyzes fc on target tg and returns its tile options with the compiler's
// default flags, else with one buffer (as the tiling pass falls back), failing when
// there are none.
func mustOptions(t *testing.T, fc *hlo.Computation, tg Target) (*KernelInfo, []Planned) {
	t.Helper()
	info, err := Analyze(fc, tg)
	if err != nil {
		t.Fatal(err)
	}
	opts := info.Options("k", tg, DefaultFlags())
	if len(opts) == 0 {
		opts = info.Options("k", tg, singleBuffer)
	}
	if len(opts) == 0 {
		t.Fatalf("no tile of the kernel fits %s's VMEM", tg.Name)
	}
	return info, opts
}

// depthwiseFilterGrad is the weight gradient of a depthwise convolution as a random
// layout left it in ssdlite320_coco_b16_train (gen --task tile --variants 2, variant 1):
// K is 16 input features, under the 128 the tiler searches, and the input's two minor
// dimensions are 2x2, so its padded size is 512 times its own.
const depthwiseFilterGrad = `HloModule dw

%fused_convolution.100 (p0: f32[16,1,1,64], p1: bf16[16,2,2,64]) -> bf16[3,3,1,64] {
  %p0 = f32[16,1,1,64]{3,2,1,0} parameter(0)
  %convert = bf16[16,1,1,64]{3,2,1,0} convert(%p0)
  %p1 = bf16[16,2,2,64]{2,1,3,0} parameter(1)
  ROOT %conv = bf16[3,3,1,64]{3,2,1,0} convolution(%p1, %convert), window={size=1x1 pad=0_1x0_1 rhs_dilate=2x2}, dim_labels=f01b_i01o->01bf, batch_group_count=64
}

ENTRY %e (a: f32[16,1,1,64], b: bf16[16,2,2,64]) -> bf16[3,3,1,64] {
  %a = f32[16,1,1,64]{3,2,1,0} parameter(0)
  %b = bf16[16,2,2,64]{2,1,3,0} parameter(1)
  ROOT %f = bf16[3,3,1,64]{3,2,1,0} fusion(%a, %b), kind=kOutput, calls=%fused_convolution.100
}
`

// TestConvWindowNeverExceedsItsInput: a convolution's input window is at most the whole
// input, however far the tile exceeds an extent (here K = 16 under a searched tile of
// 128). The window used to be 8 times the input's 4 MiB, and no tile fit v4.
func TestConvWindowNeverExceedsItsInput(t *testing.T) {
	info, opts := mustOptions(t, fusedKernel(t, depthwiseFilterGrad), v4)
	var lhs Operand
	for _, in := range info.Inputs {
		if in.Role == RoleLHS {
			lhs = in
		}
	}
	for _, o := range opts {
		// One buffer of every window: the input's share, the weight's and the output's;
		// the input's is at most its padded size.
		if o.Plan.StreamBufferBytes > lhs.Padded+info.Inputs[0].Padded+info.Output.Padded {
			t.Errorf("tile %s: stream buffers %.0f bytes, more than the whole input (%.0f) and the rest", o.Config.Tile, o.Plan.StreamBufferBytes, lhs.Padded)
		}
	}
}

// oversizedDepthwise is a depthwise convolution (128 groups of one feature) whose input
// and its two elementwise producers have 1x1 minor dimensions: each is 4 KiB of data and
// 8 MiB padded, and even the smallest tile holds all three at once (M, N and K are each
// one block), 24 MiB against v2's 16 MiB (ssdlite320_coco_b16, a random layout).
const oversizedDepthwise = `HloModule dw

%fused_convolution.47 (p0: bf16[16,1,1,128], p1: bf16[16,1,1,128], p2: bf16[16,1,1,128], p3: bf16[3,3,1,128]) -> bf16[16,1,1,128] {
  %p0 = bf16[16,1,1,128]{2,1,0,3} parameter(0)
  %p1 = bf16[16,1,1,128]{2,1,0,3} parameter(1)
  %p2 = bf16[16,1,1,128]{2,1,0,3} parameter(2)
  %m = bf16[16,1,1,128]{2,1,0,3} multiply(%p0, %p1)
  %a = bf16[16,1,1,128]{2,1,0,3} add(%m, %p2)
  %w = bf16[3,3,1,128]{3,2,1,0} parameter(3)
  ROOT %conv = bf16[16,1,1,128]{2,1,0,3} convolution(%a, %w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=128
}

ENTRY %e (a: bf16[16,1,1,128], b: bf16[16,1,1,128], c: bf16[16,1,1,128], w: bf16[3,3,1,128]) -> bf16[16,1,1,128] {
  %a = bf16[16,1,1,128]{2,1,0,3} parameter(0)
  %b = bf16[16,1,1,128]{2,1,0,3} parameter(1)
  %c = bf16[16,1,1,128]{2,1,0,3} parameter(2)
  %w = bf16[3,3,1,128]{3,2,1,0} parameter(3)
  ROOT %f = bf16[16,1,1,128]{2,1,0,3} fusion(%a, %b, %c, %w), kind=kOutput, calls=%fused_convolution.47
}
`

// TestSmallestTileStreamsOversizedWindows: when even the smallest tile's windows do not
// fit VMEM with one buffer each, the tile is still an option, its windows streamed in
// pieces (Plan.Chunks): the same HBM traffic and work as the whole windows, in Chunks
// times the steps, each piece's buffers small enough to double-buffer; the simulator then
// pays a step's overhead and DMA issue per piece. Kernels that fit are not chunked.
func TestSmallestTileStreamsOversizedWindows(t *testing.T) {
	fc := fusedKernel(t, oversizedDepthwise)
	info, opts := mustOptions(t, fc, v2VMEM)
	if len(opts) != 1 || !opts[0].Config.Tile.Equal(info.smallestTile()) {
		t.Fatalf("options %v, want the smallest tile %s alone", opts, info.smallestTile())
	}
	p := opts[0].Plan
	whole := info.planWhole(opts[0].Config.Tile, v2VMEM)
	if whole.Footprint(singleBuffer) <= float64(v2VMEM.VMEMBytes) {
		t.Fatalf("the whole windows fit (%.0f bytes): the kernel does not test chunking", whole.Footprint(singleBuffer))
	}
	// relTol is float rounding: the pieces' per-step quantities are the whole step's
	// divided by a power of two and multiplied back.
	const relTol = 1e-9
	near := func(a, b float64) bool { return a == b || (a-b)/b < relTol && (b-a)/b < relTol }
	switch {
	case p.Chunks < 2:
		t.Fatalf("chunks = %d, want at least 2", p.Chunks)
	case p.Steps != whole.Steps*p.Chunks || p.Blocks != whole.Blocks:
		t.Errorf("steps %d, blocks %d; whole windows: %d, %d; chunks %d", p.Steps, p.Blocks, whole.Steps, whole.Blocks, p.Chunks)
	case !near(p.PaddedBytes, whole.PaddedBytes) || !near(float64(p.Steps)*p.InBytesPerStep, float64(whole.Steps)*whole.InBytesPerStep):
		t.Errorf("HBM traffic %.0f (per step %.0f), whole windows %.0f (%.0f)", p.PaddedBytes, p.InBytesPerStep, whole.PaddedBytes, whole.InBytesPerStep)
	case !near(float64(p.Steps)*p.MXUPasses, float64(whole.Steps)*whole.MXUPasses):
		t.Errorf("MXU passes %g in all, whole windows %g", float64(p.Steps)*p.MXUPasses, float64(whole.Steps)*whole.MXUPasses)
	case p.InBurstsPerStep < float64(info.streamedWindows()):
		t.Errorf("%g DMA bursts per piece, fewer than the %d streamed windows", p.InBurstsPerStep, info.streamedWindows())
	case p.Footprint(DefaultFlags()) > float64(v2VMEM.VMEMBytes):
		t.Errorf("double-buffered pieces need %.0f bytes of %d", p.Footprint(DefaultFlags()), v2VMEM.VMEMBytes)
	case p.Footprint(DefaultFlags()) <= float64(v2VMEM.VMEMBytes)/2 && p.Chunks > 2:
		t.Errorf("%d chunks where %d fit", p.Chunks, p.Chunks/2)
	}
	// CheckTile plans the same (a config or a replay names the tile, not the chunks).
	if q, err := info.CheckTile(opts[0].Config.Tile, DefaultFlags(), v2VMEM); err != nil || q.Chunks != p.Chunks {
		t.Errorf("CheckTile: chunks %d, err %v", q.Chunks, err)
	}
	// With 32 MiB the whole windows fit one buffer each: no chunks, the plan as before.
	if _, opts := mustOptions(t, fc, v4); opts[0].Plan.Chunks > 1 {
		t.Errorf("v4 (32 MiB): chunks %d, want whole windows", opts[0].Plan.Chunks)
	}
}

// concatOfSlices builds a loop kernel that concatenates n column-major f32[8,300]
// arrays (LSTM gate slices) into f32[8*n... ], each padded to 300 rows x 128 lanes (150
// KiB: under ResidentMaxBytes, so each is resident).
func concatOfSlices(n int) string {
	var b strings.Builder
	params := make([]string, n)
	for i := range params {
		params[i] = fmt.Sprintf("p%d: f32[8,300]", i)
	}
	fmt.Fprintf(&b, "HloModule cat\n\n%%fused_concatenate (%s) -> f32[%d,300] {\n", strings.Join(params, ", "), 8*n)
	ops := make([]string, n)
	for i := range n {
		fmt.Fprintf(&b, "  %%p%d = f32[8,300]{0,1} parameter(%d)\n", i, i)
		ops[i] = fmt.Sprintf("%%p%d", i)
	}
	fmt.Fprintf(&b, "  ROOT %%cat = f32[%d,300]{0,1} concatenate(%s), dimensions={0}\n}\n\n", 8*n, strings.Join(ops, ", "))
	fmt.Fprintf(&b, "ENTRY %%e (%s) -> f32[%d,300] {\n", strings.Join(params, ", "), 8*n)
	for i := range n {
		fmt.Fprintf(&b, "  %%p%d = f32[8,300]{0,1} parameter(%d)\n", i, i)
	}
	fmt.Fprintf(&b, "  ROOT %%f = f32[%d,300]{0,1} fusion(%s), kind=kLoop, calls=%%fused_concatenate\n}\n", 8*n, strings.Join(ops, ", "))
	return b.String()
}

// TestResidentInputsThatDoNotFitAreStreamed: a kernel whose small inputs, each resident
// alone, together exceed VMEM streams the largest until the rest take at most half of
// it (a concatenation of 111 LSTM slices in lstm_cls_h300_t32_b8_train needed 16.5 MiB
// of v2's 16); a kernel whose residents fit keeps them all.
func TestResidentInputsThatDoNotFitAreStreamed(t *testing.T) {
	roles := func(info *KernelInfo) (resident, streamed int, bytes float64) {
		for _, in := range info.Inputs {
			switch in.Role {
			case RoleResident:
				resident++
				bytes += in.Padded
			case RoleStream:
				streamed++
			}
		}
		return
	}
	big, _ := mustOptions(t, fusedKernel(t, concatOfSlices(120)), v2VMEM)
	res, str, bytes := roles(big)
	if str == 0 || bytes > float64(v2VMEM.VMEMBytes)/2 {
		t.Errorf("120 inputs on 16 MiB: %d resident (%.1f MiB), %d streamed; want some streamed and the resident within half of VMEM", res, bytes/(1<<20), str)
	}
	small, _ := mustOptions(t, fusedKernel(t, concatOfSlices(8)), v2VMEM)
	if res, str, _ := roles(small); res != 8 || str != 0 {
		t.Errorf("8 inputs: %d resident, %d streamed; want all 8 resident, as before", res, str)
	}
}

// rotaryGather is what DeepSeek-V2 and GPT-OSS generate steps fuse (issue 33): a complex
// rotary table computed elementwise from an f32[163840,32] table, of which a gather reads
// one row. The table is 80 MiB padded: no window of it fits any chip's VMEM.
const rotaryGather = `HloModule rope

%fused_gather (t: f32[163840,32], i: s32[1,1]) -> c64[1,32] {
  %t = f32[163840,32]{1,0} parameter(0)
  %i = s32[1,1]{1,0} parameter(1)
  %c = f32[163840,32]{1,0} cosine(%t)
  %s = f32[163840,32]{1,0} sine(%t)
  %z = c64[163840,32]{1,0} complex(%c, %s)
  ROOT %g = c64[1,32]{1,0} gather(%z, %i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,32}
}

ENTRY %e (t: f32[163840,32], i: s32[1,1]) -> c64[1,32] {
  %t = f32[163840,32]{1,0} parameter(0)
  %i = s32[1,1]{1,0} parameter(1)
  ROOT %f = c64[1,32]{1,0} fusion(%t, %i), kind=kLoop, calls=%fused_gather
}
`

// TestGatheredProducersComputeOnlyTheRowsRead: an elementwise producer of a gather's
// operand is computed for the rows the gather reads, and its parameter is read as a
// gathered table (those rows), not streamed whole.
func TestGatheredProducersComputeOnlyTheRowsRead(t *testing.T) {
	fc := fusedKernel(t, rotaryGather)
	for _, tg := range []Target{v2VMEM, v4} {
		info, opts := mustOptions(t, fc, tg)
		if r := info.Inputs[0].Role; r != RoleGather {
			t.Errorf("%s: the table's role is %s, want gather", tg.Name, r)
		}
		// One row of 32: a cosine and a sine per element (TranscendentalWeight may weigh
		// them above 1 each, but never by the 163840 rows not read).
		if perRow := 2 * 32 * TranscendentalWeight(hlo.OpCosine); info.Transcendentals > perRow {
			t.Errorf("%s: %g transcendentals, want at most %g (one row)", tg.Name, info.Transcendentals, perRow)
		}
		if logical, _ := info.ReadBytes(info.Inputs[0], tg); logical != 32*4 {
			t.Errorf("%s: reads %g bytes of the table, want one row (128)", tg.Name, logical)
		}
		_ = opts
	}
	// A producer also used whole (here: returned beside the gather) is computed whole,
	// and its table streamed.
	both := strings.Replace(strings.Replace(rotaryGather,
		"ROOT %g = c64[1,32]{1,0} gather", "%g = c64[1,32]{1,0} gather", 1),
		"slice_sizes={1,32}\n}", "slice_sizes={1,32}\n  %r = f32[1,32]{1,0} real(%g)\n  %rs = f32[1,32]{1,0} slice(%c), slice={[0:1], [0:32]}\n  ROOT %o = f32[1,32]{1,0} add(%r, %rs)\n}", 1)
	both = strings.ReplaceAll(both, "-> c64[1,32]", "-> f32[1,32]")
	both = strings.Replace(both, "ROOT %f = c64[1,32]{1,0} fusion", "ROOT %f = f32[1,32]{1,0} fusion", 1)
	info, err := Analyze(fusedKernel(t, both), v4)
	if err != nil {
		t.Fatal(err)
	}
	if info.Transcendentals < 163840*32 {
		t.Errorf("cosine used outside the gather: %g transcendentals, want the whole table's", info.Transcendentals)
	}
}
