package compiler

import (
	"errors"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/zoo"
)

// chainHLO is an elementwise chain of two kernels (exp, then log: the fusion config
// below keeps them apart) over an f32[R,1024] array.
func chainHLO(t *testing.T, rows int) *hlo.Module {
	t.Helper()
	src := strings.ReplaceAll(`HloModule chain
ENTRY e {
  x = f32[ROWS,1024] parameter(0)
  a = f32[ROWS,1024] exponential(x)
  ROOT b = f32[ROWS,1024] log(a)
}
`, "ROWS", itoa(rows))
	m, err := hlo.Parse("chain.hlo", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// unfused keeps exp and log in two kernels.
func unfused() *Config {
	c := NewConfig()
	c.Fusion["a->b"] = false
	return c
}

// compileChain compiles the chain with staging mode mode and config cfg, verifying
// after every pass.
func compileChain(t *testing.T, rows int, mode StagingMode, cfg *Config, strict bool) (*Program, error) {
	t.Helper()
	o := opts()
	o.Staging, o.Strict = mode, strict
	return Compile(chainHLO(t, rows), cfg, o)
}

func TestStagingChainHalvesHBMTraffic(t *testing.T) {
	const rows = 1024 // f32[1024,1024]: 4 MiB, aligned to (8,128) tiles: padded = logical
	const arrayBytes = rows * 1024 * 4
	off, err := compileChain(t, rows, StagingOff, unfused(), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(off.Kernels) != 2 || len(off.Space.Staging) != 0 {
		t.Fatalf("off: %d kernels, %d staging edges; want 2 and none", len(off.Kernels), len(off.Space.Staging))
	}
	on, err := compileChain(t, rows, StagingOn, unfused(), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(on.Space.Staging) != 1 || !on.Space.Staging[0].Chosen || on.Space.Staging[0].Name != "fusion.a->fusion.b" {
		t.Fatalf("on: staging space %+v, want the one edge fusion.a->fusion.b chosen", on.Space.Staging)
	}
	if !on.Config.Staging["fusion.a->fusion.b"] {
		t.Errorf("effective config %v does not record the staged edge", on.Config.Staging)
	}
	prod, cons := on.KernelByName("fusion.a"), on.KernelByName("fusion.b")
	if !prod.Choice.Config.Staging.Equal(cost.Staging{Out: true}) || !cons.Choice.Config.Staging.Equal(cost.Staging{In: []int{0}}) {
		t.Fatalf("staging: producer %s, consumer %s; want out and in0", prod.Choice.Config.Staging, cons.Choice.Config.Staging)
	}
	// Hand count: unstaged, each kernel reads and writes the array once (4 x 4 MiB);
	// staged, the producer only reads x and the consumer only writes b: half of it.
	sum := func(p *Program) (hbm, avoided float64) {
		for _, k := range p.Kernels {
			hbm += k.Choice.Plan.PaddedBytes
			avoided += k.Choice.Plan.AvoidedBytes
		}
		return
	}
	offHBM, _ := sum(off)
	onHBM, avoided := sum(on)
	if offHBM != 4*arrayBytes || onHBM != 2*arrayBytes || avoided != 2*arrayBytes {
		t.Errorf("HBM bytes: off %g, on %g (avoided %g); want %d, %d (%d)", offHBM, onHBM, avoided, 4*arrayBytes, 2*arrayBytes, 2*arrayBytes)
	}
	// The staged array is in both kernels' VMEM, on top of their buffers; the consumer
	// reads it in place, so it drops its input's window buffers (one of its two windows,
	// same tile, same element size: half its buffers); the producer keeps its output
	// window.
	for _, k := range on.Kernels {
		if k.Choice.Plan.StagedBytes != arrayBytes {
			t.Errorf("%s: staged VMEM %g, want %d", k.Name, k.Choice.Plan.StagedBytes, arrayBytes)
		}
	}
	if got, want := prod.Choice.Footprint(), off.KernelByName("fusion.a").Choice.Footprint()+arrayBytes; got != want {
		t.Errorf("producer footprint %g, want %g", got, want)
	}
	if got, want := cons.Choice.Footprint(), off.KernelByName("fusion.b").Choice.Footprint()/2+arrayBytes; got != want {
		t.Errorf("consumer footprint %g, want %g", got, want)
	}
	// Auto stages it too: both kernels are memory-bound.
	auto, err := compileChain(t, rows, StagingAuto, unfused(), true)
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := sum(auto); a != onHBM {
		t.Errorf("auto moves %g HBM bytes, on %g", a, onHBM)
	}
	// The effective config reproduces the program with staging off (a tuned config).
	again, err := compileChain(t, rows, StagingOff, on.Config, true)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := sum(again); h != onHBM {
		t.Errorf("recompiled from the effective config: %g HBM bytes, want %g", h, onHBM)
	}
	if txt := on.Module.String(); !strings.Contains(txt, "vmem_staged_operands={0}") || !strings.Contains(txt, "vmem_staged_output=true") {
		t.Errorf("the module does not record the staging:\n%s", txt)
	}
}

func TestStagingRefusesWhatDoesNotFit(t *testing.T) {
	// f32[4096,1024] is 16 MiB: resident in both kernels on top of their buffers it
	// would fit a 32 MiB VMEM only without them; f32[8192,1024] (32 MiB) cannot.
	const rows = 8192
	on, err := compileChain(t, rows, StagingOn, unfused(), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(on.Space.Staging) != 1 {
		t.Fatalf("staging space %+v, want one candidate edge", on.Space.Staging)
	}
	sc := on.Space.Staging[0]
	if sc.Chosen || sc.Refused == "" || !on.Space.Staging[0].Default {
		t.Errorf("edge %+v: want wanted by default, refused, not chosen", sc)
	}
	for _, k := range on.Kernels {
		if !k.Choice.Config.Staging.Empty() || k.Choice.Plan.AvoidedBytes != 0 {
			t.Errorf("%s is staged (%s) though its array does not fit", k.Name, k.Choice.Config.Staging)
		}
	}
	// A config that asks for it is an error under Strict.
	cfg := unfused()
	cfg.Staging["fusion.a->fusion.b"] = true
	_, err = compileChain(t, rows, StagingOff, cfg, true)
	if err == nil || !errors.Is(err, cost.ErrTileInvalid) || !strings.Contains(err.Error(), "staging fusion.a->fusion.b") {
		t.Errorf("strict config staging an array that does not fit: err = %v", err)
	}
}

func TestStagingVerifiesOnZoo(t *testing.T) {
	for _, name := range []string{"mlp_1000x4_b64", "bert_tiny_s128_b32_train", "lstm_lm_h256_t16_b32"} {
		zm, err := zoo.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		m, err := zm.Build()
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []StagingMode{StagingOn, StagingAuto} {
			o := opts() // Check: the verifier runs after every pass, staging included
			o.Staging = mode
			p, err := Compile(m, nil, o)
			if err != nil {
				t.Fatalf("%s --staging %s: %v", name, mode, err)
			}
			staged := 0
			for _, sc := range p.Space.Staging {
				if sc.Chosen {
					staged++
				}
			}
			if mode == StagingOn && staged == 0 {
				t.Errorf("%s --staging on: no edge staged of %d candidates", name, len(p.Space.Staging))
			}
			// Every staged choice fits VMEM on its own.
			for _, k := range p.Kernels {
				if fp := k.Choice.Footprint(); fp > float64(o.Target.VMEMBytes) {
					t.Errorf("%s: kernel %s needs %g bytes of VMEM", name, k.Name, fp)
				}
			}
		}
	}
}

func TestParseStagingMode(t *testing.T) {
	for i, s := range StagingModes() {
		m, err := ParseStagingMode(s)
		if err != nil || int(m) != i || m.String() != s {
			t.Errorf("ParseStagingMode(%q) = %v, %v", s, m, err)
		}
	}
	if _, err := ParseStagingMode("yes"); err == nil || !strings.Contains(err.Error(), "off, on, auto") {
		t.Errorf("ParseStagingMode(yes): err = %v", err)
	}
}

// TestStagingLifetime: a staged array occupies VMEM from its producer to its last staged
// consumer, so it counts against every kernel in between. a = exp(x), b = log(a),
// c = a + b over f32[4096,1024] (16 MiB each) on a 32 MiB VMEM, three kernels tiled
// 256x1024 (1 MiB windows, two buffers each). In edge order (by consumer, then operand):
// a -> b fits (a: 16 MiB staged + 4 MiB of windows; b: 16 + 2), a -> c fits (a's array is
// live in b, which already holds it, and c: 16 + 4), but b -> c would put both arrays in
// c (and in b) beside a 2 MiB output window: 34 MiB, refused. So b's output still goes through HBM while a's never
// does (both its users read it from VMEM).
func TestStagingLifetime(t *testing.T) {
	m, err := hlo.Parse("diamond.hlo", []byte(`HloModule diamond
ENTRY e {
  x = f32[4096,1024] parameter(0)
  a = f32[4096,1024] exponential(x)
  b = f32[4096,1024] log(a)
  ROOT c = f32[4096,1024] add(a, b)
}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := NewConfig()
	for _, e := range []string{"a->b", "a->c", "b->c"} {
		cfg.Fusion[e] = false
	}
	o := opts()
	base, err := Compile(m, cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range base.Space.Tile {
		cfg.Tile[tc.Key] = cost.Tile{256, 1024}
	}
	o.Staging, o.Strict = StagingOn, true
	p, err := Compile(m, cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]StagingChoice{}
	for _, sc := range p.Space.Staging {
		got[sc.Name] = sc
	}
	if len(got) != 3 || !got["fusion.a->fusion.b"].Chosen || !got["fusion.a->fusion.c"].Chosen {
		t.Fatalf("staging edges %+v: want a->b and a->c staged", p.Space.Staging)
	}
	if bc := got["fusion.b->fusion.c"]; bc.Chosen || !strings.Contains(bc.Refused, "34.0 MiB") {
		t.Errorf("b->c: %+v, want refused: c would need 34 MiB", bc)
	}
	a, b, c := p.KernelByName("fusion.a"), p.KernelByName("fusion.b"), p.KernelByName("fusion.c")
	if !a.Choice.Config.Staging.Out || b.Choice.Config.Staging.Out {
		t.Errorf("outputs staged: a %v, b %v; want a only", a.Choice.Config.Staging.Out, b.Choice.Config.Staging.Out)
	}
	if !c.Choice.Config.Staging.Equal(cost.Staging{In: []int{0}}) {
		t.Errorf("c stages %s, want its operand 0 (a) only", c.Choice.Config.Staging)
	}
}
