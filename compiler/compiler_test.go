package compiler

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/compiler/opt"
)

// testTarget is a v4-like core (the tpusim preset, restated here because compiler must
// not import tpusim).
var testTarget = cost.Target{Name: "v4", ClockHz: 1.049e9, MXUs: 4, MXUDim: 128, Lanes: 128, Sublanes: 8,
	HBMBandwidth: 600e9, VMEMBytes: 32 << 20, LaunchNs: 1000, StepOverheadCycles: 96}

func opts() Options { return Options{Target: testTarget, Check: true} }

// mlpBlock is x[b,d] -> relu(x W1 + b1) W2 + b2, then layer-norm-ish statistics.
func mlpBlock(t *testing.T, name string, batch, d, h int) *hlo.Module {
	t.Helper()
	b := hlo.NewBuilder(name)
	x := b.Param(hlo.BF16, batch, d)
	w1 := b.Param(hlo.BF16, d, h)
	b1 := b.Param(hlo.BF16, h)
	w2 := b.Param(hlo.BF16, h, d)
	y := b.Relu(b.AddOp(b.MatMul(x, w1), b.BroadcastTrailing(b1, batch, h)))
	z := b.MatMul(y, w2)
	zf := b.Convert(z, hlo.F32)
	mean := b.Div(b.ReduceSum(zf, 1), b.Full(hlo.F32, float64(d), batch))
	zc := b.Sub(zf, b.Broadcast(mean, []int{0}, batch, d))
	out := b.Mul(zc, b.Tanh(zc))
	m, err := b.Build(b.Transpose(out, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestPassList: the list is valid; its configurable passes read the config kinds in
// order; everything before them (preparation, then the simplification group of opt's
// default passes, iterated) is the config-independent prefix.
func TestPassList(t *testing.T) {
	ps := Passes()
	if err := CheckPasses(ps); err != nil {
		t.Error(err)
	}
	var order []Kind
	first := -1
	for i, p := range ps {
		if p.Kind != "" {
			order = append(order, p.Kind)
			if first < 0 {
				first = i
			}
		}
	}
	if !slices.Equal(order, Kinds()) {
		t.Errorf("pass kinds in order %v, want %v", order, Kinds())
	}
	if n := prefixLen(ps); n != first {
		t.Errorf("config-independent prefix of %d passes, want the %d before %s", n, first, ps[first].Name)
	}
	g := byName(ps, SimplifyGroup)
	if !slices.Equal(passNames(g.Group), opt.DefaultNames()) || g.MaxIterations != opt.DefaultMaxIterations || g.Run != nil {
		t.Errorf("simplification group %v (cap %d), want %v to a fixed point (cap %d)", passNames(g.Group), g.MaxIterations, opt.DefaultNames(), opt.DefaultMaxIterations)
	}
}

func TestDefaultCompile(t *testing.T) {
	m := mlpBlock(t, "mlp", 64, 300, 1000)
	p, err := Compile(m, nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	// Input module untouched.
	if err := hlo.Verify(m); err != nil {
		t.Fatalf("input module changed: %v", err)
	}
	if m.Entry.Root.Opcode != hlo.OpTranspose {
		t.Error("input module's root changed")
	}
	var kinds []string
	for _, k := range p.Kernels {
		kinds = append(kinds, k.Kind)
		if len(k.Choice.Config.Tile) != len(k.Info.Dims) {
			t.Errorf("kernel %s: tile %s for %d dims", k.Name, k.Choice.Config.Tile, len(k.Info.Dims))
		}
		// Double buffering unless the kernel has a single step.
		want := cost.DefaultFlags()
		if k.Choice.Plan.Steps == 1 {
			want = cost.Flags{Unroll: 1, PipelineDepth: 1}
		}
		if k.Choice.Config.Flags != want {
			t.Errorf("kernel %s (%d steps): flags %s, want %s", k.Name, k.Choice.Plan.Steps, k.Choice.Config.Flags, want)
		}
	}
	// Output fusion: bias add and relu fuse into the first dot; the second dot's
	// convert fuses into it; the reduce is its own input fusion.
	outputs := 0
	for _, k := range p.Kernels {
		if k.Kind == "kOutput" {
			outputs++
			if k.Comp.Root.Opcode == hlo.OpDot && k.Info.NumOps == 1 && k.Root == "dot.0" {
				t.Errorf("first dot not output-fused: %s", k.Comp)
			}
		}
	}
	if outputs != 2 {
		t.Errorf("kernel kinds %v: want 2 kOutput", kinds)
	}
	// Every configurable node is in the effective config with a valid choice.
	if got, want := len(p.Config.Layout), len(p.Space.Layout); got != want {
		t.Errorf("effective layout entries %d, space %d", got, want)
	}
	if got, want := len(p.Config.Tile), len(p.Space.Tile); got != want {
		t.Errorf("effective tile entries %d, space %d", got, want)
	}
	for _, tc := range p.Space.Tile {
		if tc.Chosen != tc.Default {
			t.Errorf("default compile chose tile %d, default %d", tc.Chosen, tc.Default)
		}
	}
}

func TestTileDefaultIsAnalyticalArgmin(t *testing.T) {
	p, err := Compile(mlpBlock(t, "mlp", 256, 512, 2048), nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range p.Space.Tile {
		k := p.KernelByName(tc.Kernels[0])
		best, err := k.Info.Analytical(tc.Options[tc.Default], testTarget)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range tc.Options {
			ns, _ := k.Info.Analytical(o, testTarget)
			// 1e-3: BestAnalyticalTile's tie tolerance.
			if ns < best*(1-1e-3) {
				t.Errorf("kernel %s: option %s has analytical %.1f ns < default's %.1f ns", k.Name, o, ns, best)
			}
		}
	}
}

func TestRandomConfigsCompileAndVerify(t *testing.T) {
	// Every option of the space is valid: random choices compile with the verifier on
	// between passes, and recompiling with the effective config reproduces the program.
	r := rand.New(rand.NewPCG(1, 2))
	m := mlpBlock(t, "mlp", 32, 129, 384)
	base, err := Compile(m, nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 30; i++ {
		cfg := NewConfig()
		for _, lc := range base.Space.Layout {
			cfg.Layout[lc.Name] = lc.Options[r.IntN(len(lc.Options))]
		}
		for _, fc := range base.Space.Fusion {
			cfg.Fusion[fc.Name] = r.IntN(2) == 0
		}
		p1, err := Compile(m, cfg, opts())
		if err != nil {
			t.Fatalf("random config %d: %v", i, err)
		}
		// Random tiles and flags on the resulting kernels.
		cfg2 := p1.Config.Clone()
		for _, tc := range p1.Space.Tile {
			cfg2.Tile[tc.Key] = tc.Options[r.IntN(len(tc.Options))]
		}
		p2, err := Compile(m, cfg2, opts())
		if err != nil {
			t.Fatalf("random tiles %d: %v", i, err)
		}
		for _, fc := range p2.Space.Flags {
			cfg2.Flags[fc.Key] = fc.Options[r.IntN(len(fc.Options))]
		}
		p3, err := Compile(m, cfg2, Options{Target: testTarget, Check: true, Strict: true})
		if err != nil {
			t.Fatalf("random flags %d: %v", i, err)
		}
		p4, err := Compile(m, p3.Config, Options{Target: testTarget, Strict: true})
		if err != nil {
			t.Fatalf("recompile %d: %v", i, err)
		}
		if a, b := p3.Module.String(), p4.Module.String(); a != b {
			t.Fatalf("recompiling with the effective config changed the program")
		}
	}
}

func TestLayoutChoices(t *testing.T) {
	m := mlpBlock(t, "mlp", 64, 256, 512)
	base, err := Compile(m, nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	// The final transpose becomes a bitcast by default, and a copy restores the
	// row-major result.
	found := false
	for _, in := range base.Module.Entry.Instructions {
		if in.Opcode == hlo.OpBitcast {
			found = true
		}
	}
	if !found {
		for _, k := range base.Kernels {
			if k.Comp.Root.Opcode == hlo.OpCopy {
				found = true
			}
		}
	}
	if !found {
		t.Error("transpose neither became a bitcast nor a copy")
	}
	// Choosing a column-major dot result inserts a copy before its row-major users.
	cfg := NewConfig()
	var dot string
	for _, lc := range base.Space.Layout {
		if strings.HasPrefix(lc.Name, "dot.") {
			dot = lc.Name
			cfg.Layout[lc.Name] = []int{0, 1}
			break
		}
	}
	p, err := Compile(m, cfg, opts())
	if err != nil {
		t.Fatal(err)
	}
	copies := 0
	for _, k := range p.Kernels {
		for _, in := range k.Comp.Instructions {
			if in.Opcode == hlo.OpCopy {
				copies++
			}
		}
	}
	if copies == 0 {
		t.Errorf("column-major %s inserted no copy", dot)
	}
	if !slices.Equal(p.Config.Layout[dot], []int{0, 1}) {
		t.Errorf("effective layout of %s = %v", dot, p.Config.Layout[dot])
	}
}

func TestLayoutOptions(t *testing.T) {
	for _, tc := range []struct {
		dims []int
		want int
	}{
		// Every permutation up to rank 5 (5! = 120; a size-1 dimension merges orders:
		// 4! = 24 distinct for [2,1,4,5,6]); beyond, every ordered pair of minor
		// dimensions with the rest row-major (6·5 = 30, 7·6 = 42; row-major and the
		// minor swap are among them) plus the legacy column-major.
		{[]int{4, 5}, 2}, {[]int{1, 5}, 1}, {[]int{2, 3, 4}, 6}, {[]int{2, 1, 4}, 2}, {[]int{2, 3, 4, 5}, 24},
		{[]int{2, 3, 4, 5, 6}, 120}, {[]int{2, 1, 4, 5, 6}, 24}, {[]int{2, 3, 4, 5, 6, 7}, 31}, {[]int{2, 3, 4, 5, 6, 7, 8}, 43},
	} {
		s := hlo.Array(hlo.F32, tc.dims...)
		opts := LayoutOptions(s)
		if len(opts) != tc.want {
			t.Errorf("%v: %d options, want %d", tc.dims, len(opts), tc.want)
		}
		if !slices.Equal(opts[0], hlo.RowMajor(len(tc.dims)).MinorToMajor) {
			t.Errorf("%v: first option %v is not row-major", tc.dims, opts[0])
		}
		// The options earlier versions listed keep their indices.
		legacy := distinctLayouts(s, legacyLayoutCandidates(len(tc.dims)))
		for i, o := range legacy {
			if !slices.Equal(opts[i], o) {
				t.Errorf("%v: option %d = %v, was %v", tc.dims, i, opts[i], o)
			}
		}
	}
}

// A rank-5 convolution: its layout space has every order (XLA's TPU layouts such as
// {4,0,3,2,1}), a config may give a prefix ([4 0] is {4,0,3,2,1}) and operand layouts;
// the default compile is what it was when only row-major, minor-swap and column-major
// were listed.
func TestLayoutRank5AndOperands(t *testing.T) {
	m, err := hlo.Parse("conv3d.hlo", []byte(`HloModule conv3d
ENTRY e {
  x = bf16[2,8,8,8,32] parameter(0)
  w = bf16[3,3,3,32,64] parameter(1)
  ROOT c = bf16[2,8,8,8,64] convolution(x, w), window={size=3x3x3 pad=1_1x1_1x1_1}, dim_labels=b012f_012io->b012f
}
`))
	if err != nil {
		t.Fatal(err)
	}
	tgt := testTarget
	def, err := Compile(m, nil, Options{Target: tgt})
	if err != nil {
		t.Fatal(err)
	}
	if got := def.Config.Layout["c"]; !slices.Equal(got, []int{4, 3, 2, 1, 0}) {
		t.Errorf("default layout of c = %v, want row-major (unchanged)", got)
	}
	cfg := NewConfig()
	cfg.Layout["c"] = []int{4, 0}
	cfg.OperandLayout["c"] = [][]int{{0, 4}, nil}
	p, err := Compile(m, cfg, Options{Target: tgt, Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Config.Layout["c"]; !slices.Equal(got, []int{4, 0, 3, 2, 1}) {
		t.Errorf("layout [4 0] of c = %v, want {4,0,3,2,1}", got)
	}
	if got := p.Config.OperandLayout["c"]; len(got) != 2 || !slices.Equal(got[0], []int{0, 4, 3, 2, 1}) || len(got[1]) != 0 {
		t.Errorf("effective operand layouts of c = %v", got)
	}
	// The input now reaches the convolution through a copy into {0,4,3,2,1}.
	found := false
	for _, c := range p.Module.Computations {
		for _, in := range c.Instructions {
			if in.Opcode == hlo.OpCopy && slices.Equal(in.Shape.Layout.MinorToMajor, []int{0, 4, 3, 2, 1}) {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("no copy of x into {0,4,3,2,1}")
	}
	// Compiling with the effective config reproduces the program's config.
	again, err := Compile(m, p.Config, Options{Target: tgt, Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := again.Config.MarshalIndent()
	b, _ := p.Config.MarshalIndent()
	if string(a) != string(b) {
		t.Errorf("effective config does not reproduce itself:\n%s\n%s", a, b)
	}
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
		want string
	}{
		{"repeated dim", func(c *Config) { c.Layout["c"] = []int{4, 4} }, "not a valid option"},
		{"operand order", func(c *Config) { c.OperandLayout["c"] = [][]int{{5}} }, "operand layout 0 of c"},
		{"too many operands", func(c *Config) { c.OperandLayout["c"] = [][]int{nil, nil, {0}} }, "3 orders for 2 operands"},
		{"unknown node", func(c *Config) { c.OperandLayout["nope"] = [][]int{{0}} }, "nope"},
	} {
		c := NewConfig()
		tc.cfg(c)
		if _, err := Compile(m, c, Options{Target: tgt, Strict: true}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func TestStrictConfigErrors(t *testing.T) {
	m := mlpBlock(t, "mlp", 16, 128, 128)
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
		want string
	}{
		{"unknown layout node", func(c *Config) { c.Layout["nope.1"] = []int{1, 0} }, "nope.1"},
		{"invalid layout option", func(c *Config) { c.Layout["dot.0"] = []int{0, 0} }, "not a valid option"},
		{"unknown fusion edge", func(c *Config) { c.Fusion["a->b"] = true }, "a->b"},
		{"unknown kernel", func(c *Config) { c.Tile["deadbeef"] = cost.Tile{8, 128} }, "deadbeef"},
	} {
		cfg := NewConfig()
		tc.cfg(cfg)
		_, err := Compile(m, cfg, Options{Target: testTarget, Strict: true})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want mention of %q", tc.name, err, tc.want)
		}
	}
	// Invalid tile for a real kernel.
	p, _ := Compile(m, nil, opts())
	cfg := NewConfig()
	cfg.Tile[p.Kernels[0].Key] = cost.Tile{3, 5, 7}
	if _, err := Compile(m, cfg, Options{Target: testTarget, Strict: true}); err == nil || !strings.Contains(err.Error(), "not a valid option") {
		t.Errorf("invalid tile: err = %v", err)
	}
}

func TestCandidateRepair(t *testing.T) {
	m := mlpBlock(t, "mlp", 64, 256, 512)
	base, err := Compile(m, nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	// Give every kernel a non-default tile, then change a fusion decision: kernels that
	// keep their key keep their tile; new kernels come from the store, else default.
	cfg := base.Config.Clone()
	for _, tc := range base.Space.Tile {
		cfg.Tile[tc.Key] = tc.Options[0]
	}
	var edge string
	for _, fc := range base.Space.Fusion {
		if fc.Chosen && strings.HasPrefix(fc.Name, "dot.0->") {
			edge = fc.Name
		}
	}
	if edge == "" {
		t.Fatal("no fused edge out of dot.0")
	}
	cfg.Fusion[edge] = false
	store := tileStore{}
	p, err := Compile(m, cfg, Options{Target: testTarget, Check: true, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	newKeys := 0
	for _, k := range p.Kernels {
		if old, ok := cfg.Tile[k.Key]; ok {
			if !k.Choice.Config.Tile.Equal(old) {
				t.Errorf("kernel %s kept its key but not its tile: %s vs %s", k.Name, k.Choice.Config.Tile, old)
			}
			continue
		}
		newKeys++
		for _, tc := range p.Space.Tile {
			if tc.Key == k.Key && tc.Chosen != tc.Default {
				t.Errorf("new kernel %s did not get the default tile", k.Name)
			}
		}
	}
	if newKeys == 0 {
		t.Fatal("changing fusion made no new kernel")
	}
	// Now the store knows a tile for each new kernel: repair takes it.
	for _, tc := range p.Space.Tile {
		if _, ok := cfg.Tile[tc.Key]; !ok {
			store[tc.Key] = tc.Options[len(tc.Options)-1]
		}
	}
	p2, err := Compile(m, cfg, Options{Target: testTarget, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range p2.Space.Tile {
		if _, ok := cfg.Tile[tc.Key]; !ok && tc.Chosen != len(tc.Options)-1 {
			t.Errorf("kernel %s: store tile not used", tc.Key)
		}
	}
}

// tileStore is a Store that knows tiles only, by kernel key.
type tileStore map[string]cost.Tile

func (s tileStore) Lookup(k Kind, key string) (Entry, bool) {
	t, ok := s[key]
	return Entry{Tile: t}, ok && k == KindTile
}

func TestKernelKeysAreStructural(t *testing.T) {
	// The same block in two differently named modules has the same kernel keys.
	a, err := Compile(mlpBlock(t, "a", 32, 256, 256), nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	b, err := Compile(mlpBlock(t, "b", 32, 256, 256), nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(mlpBlock(t, "c", 32, 256, 384), nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	keys := func(p *Program) []string {
		var k []string
		for _, x := range p.Kernels {
			k = append(k, x.Key)
		}
		return k
	}
	if !slices.Equal(keys(a), keys(b)) {
		t.Error("identical modules have different kernel keys")
	}
	if slices.Equal(keys(a), keys(c)) {
		t.Error("different shapes share kernel keys")
	}
}

func TestConfigJSON(t *testing.T) {
	p, err := Compile(mlpBlock(t, "mlp", 32, 256, 256), nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cfg.json")
	if err := WriteConfig(path, p.Config); err != nil {
		t.Fatal(err)
	}
	back, err := ReadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := p.Config.MarshalIndent()
	b, _ := back.MarshalIndent()
	if !bytes.Equal(a, b) {
		t.Error("config JSON does not round-trip")
	}
	for _, tc := range []struct{ src, want string }{
		{"{\n  \"layout\": {\"x\": [1,0]},\n  \"bogus\": 1\n}", `cfg.json:3:3: invalid config: unknown field "bogus" (allowed: flags, fusion, layout, operand_layout, staging, tile, version)`},
		{"{\n  \"layout\": [1,\n", "cfg.json:"},
		{"{\"tile\": {\"k\": \"big\"}}", "expected an array of integers, found a JSON string"},
		{"{\"layout\": 5}", "expected an object whose values are an array of integers"}, // no Go type names
		{"{\"flags\": {\"k\": {\"double_buffer\": true, \"unroll\": 3, \"pipeline_depth\": 2}}}", "unroll"},
		{"{\"version\": 99}", "newer"},
	} {
		_, err := ParseConfig("cfg.json", []byte(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "map[") || strings.Contains(err.Error(), "cost.") ||
			strings.Contains(err.Error(), "json: unknown") {
			t.Errorf("ParseConfig(%q) = %v, want mention of %q", tc.src, err, tc.want)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("atomic write left %d files", len(entries))
	}
}

func TestDumpAfter(t *testing.T) {
	m := mlpBlock(t, "mlp", 32, 256, 256)
	for _, pass := range PassNames() {
		var buf bytes.Buffer
		o := opts()
		o.DumpAfter, o.Dump = pass, &buf
		if _, err := Compile(m, nil, o); err != nil {
			t.Fatal(err)
		}
		txt := buf.String()
		if !strings.HasPrefix(txt, "HloModule mlp") {
			t.Errorf("dump after %s does not start with the module header: %.40q", pass, txt)
		}
		if pass == "tiling" && !strings.Contains(txt, "tile={") {
			t.Error("dump after tiling shows no tiles")
		}
		if _, err := hlo.Parse("dump", buf.Bytes()); err != nil {
			t.Errorf("dump after %s does not parse: %v", pass, err)
		}
	}
	o := opts()
	o.DumpAfter = "nope"
	if _, err := Compile(m, nil, o); err == nil {
		t.Error("unknown pass name accepted")
	}
}

func TestDefaultFlagsForMatchesTheFlagsPass(t *testing.T) {
	p, err := Compile(mlpBlock(t, "mlp", 64, 300, 1000), nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range p.Kernels {
		if f := DefaultFlagsFor(k.Choice); f != k.Choice.Config.Flags {
			t.Errorf("kernel %s: DefaultFlagsFor %s, flags pass %s", k.Name, f, k.Choice.Config.Flags)
		}
	}
}
