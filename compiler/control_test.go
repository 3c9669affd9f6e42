package compiler

import (
	"os"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/compiler/hlo"
)

func parseText(t *testing.T, src string) *hlo.Module {
	t.Helper()
	m, err := hlo.Parse("test.hlo", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func readTestdata(t *testing.T, name string) *hlo.Module {
	t.Helper()
	src, err := os.ReadFile("testdata/control/" + name)
	if err != nil {
		t.Fatal(err)
	}
	m, err := hlo.Parse(name, src)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// loopModule is a while loop over a scalar induction variable: init, compare against
// bound with dir, body advancing by step (negative: subtract), plus extra backend_config.
func loopModule(init, bound, step int, dir, extra string) string {
	upd := "add(bi, st)"
	if step < 0 {
		upd = "subtract(bi, st)"
		step = -step
	}
	r := strings.NewReplacer("INIT", itoa(init), "BOUND", itoa(bound), "STEP", itoa(step), "DIR", dir, "UPD", upd, "EXTRA", extra)
	return r.Replace(`HloModule l
cond {
  cp = (s32[], f32[64,128]) parameter(0)
  ci = s32[] get-tuple-element(cp), index=0
  n = s32[] constant(BOUND)
  ROOT c = pred[] compare(ci, n), direction=DIR
}
body {
  bp = (s32[], f32[64,128]) parameter(0)
  bi = s32[] get-tuple-element(bp), index=0
  st = s32[] constant(STEP)
  nx = s32[] UPD
  x = f32[64,128] get-tuple-element(bp), index=1
  y = f32[64,128] exponential(x)
  ROOT t = (s32[], f32[64,128]) tuple(nx, y)
}
ENTRY main {
  p = f32[64,128] parameter(0)
  z = s32[] constant(INIT)
  init = (s32[], f32[64,128]) tuple(z, p)
  w = (s32[], f32[64,128]) while(init), condition=cond, body=bodyEXTRA
  ROOT r = f32[64,128] get-tuple-element(w), index=1
}
`)
}

func TestTripCount(t *testing.T) {
	for _, c := range []struct {
		name              string
		init, bound, step int
		dir, extra        string
		want              int64
		src               string
		known             bool
	}{
		{"lt", 0, 8, 1, "LT", "", 8, "induction", true},
		{"lt-step3", 1, 10, 3, "LT", "", 3, "induction", true}, // 1, 4, 7
		{"le", 0, 8, 2, "LE", "", 5, "induction", true},        // 0, 2, 4, 6, 8
		{"gt-down", 10, 0, -1, "GT", "", 10, "induction", true},
		{"ge-down", 10, 0, -5, "GE", "", 3, "induction", true}, // 10, 5, 0
		{"ne", 0, 12, 4, "NE", "", 3, "induction", true},
		{"never", 5, 2, 1, "LT", "", 0, "induction", true},
		{"backend-config", 0, 8, 1, "LT", `, backend_config={"known_trip_count":{"n":"42"}}`, 42, "backend_config", true},
		{"escaped-backend-config", 0, 8, 1, "LT", `, backend_config="{\"known_trip_count\":{\"n\":\"7\"}}"`, 7, "backend_config", true},
		{"wrong-direction", 0, 8, -1, "LT", "", 0, "", false}, // counts away from the bound
	} {
		t.Run(c.name, func(t *testing.T) {
			m := parseText(t, loopModule(c.init, c.bound, c.step, c.dir, c.extra))
			w := m.Entry.Lookup("w")
			n, src, ok := TripCount(w)
			if ok != c.known || (ok && (n != c.want || src != c.src)) {
				t.Errorf("TripCount = %d, %q, %v; want %d, %q, %v", n, src, ok, c.want, c.src, c.known)
			}
		})
	}
}

func TestTripCountUnknownBound(t *testing.T) {
	src := strings.Replace(loopModule(0, 8, 1, "LT", ""), "n = s32[] constant(8)", "n = s32[] get-tuple-element(cp), index=0", 1)
	m := parseText(t, src)
	if _, _, ok := TripCount(m.Entry.Lookup("w")); ok {
		t.Fatal("a loop bounded by a loop-carried value has no static trip count")
	}
	p, err := Compile(m, nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	l := p.Schedule.Steps[0].Loop
	if l == nil || l.TripKnown || l.TripCount != DefaultTripCount || l.TripSource != "default" {
		t.Fatalf("loop = %+v, want the default trip count, marked unknown", l)
	}
}

func TestWhileBodyIsCompiled(t *testing.T) {
	m := readTestdata(t, "loop.hlo")
	p, err := Compile(m, nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Schedule.Steps) != 1 || p.Schedule.Steps[0].Loop == nil {
		t.Fatalf("entry schedule = %+v, want one loop", p.Schedule.Steps)
	}
	l := p.Schedule.Steps[0].Loop
	if l.TripCount != 8 || !l.TripKnown {
		t.Errorf("trip count = %d (known %v), want 8", l.TripCount, l.TripKnown)
	}
	var body *Kernel
	for _, k := range p.Kernels {
		if k.Info.Kind == cost.KindOpaque {
			t.Errorf("kernel %s is opaque: control flow must not be one opaque kernel", k.Name)
		}
		if k.Computation == "body" && k.Info.Transcendentals > 0 {
			body = k
		}
	}
	if body == nil {
		t.Fatalf("no kernel of the body computes the exponential: %v", kernelNames(p))
	}
	if body.Weight != 8 {
		t.Errorf("body kernel weight = %g, want 8 (trip count)", body.Weight)
	}
	// The body's kernels are in the tuning space like the entry's.
	found := false
	for _, tc := range p.Space.Tile {
		if tc.Key == body.Key {
			found = true
		}
	}
	if !found {
		t.Errorf("body kernel %s has no tile choice", body.Name)
	}
	// The config of a body kernel is honoured like an entry kernel's.
	tc := p.Space.Tile[p.tileChoice(body.Key)]
	if len(tc.Options) > 1 {
		alt := tc.Options[(tc.Chosen+1)%len(tc.Options)]
		cfg := NewConfig()
		cfg.Tile[body.Key] = alt
		q, err := Compile(m, cfg, Options{Target: testTarget, Check: true, Strict: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := q.KernelByName(body.Name).Choice.Config.Tile; !got.Equal(alt) {
			t.Errorf("body kernel tile = %s, want the configured %s", got, alt)
		}
	}
}

func (p *Program) tileChoice(key string) int {
	for i, tc := range p.Space.Tile {
		if tc.Key == key {
			return i
		}
	}
	return -1
}

func kernelNames(p *Program) []string {
	var n []string
	for _, k := range p.Kernels {
		n = append(n, k.Computation+":"+k.Name)
	}
	return n
}

func TestNestedLoopsMultiply(t *testing.T) {
	src := `HloModule nested
icond {
  icp = (s32[], f32[64,128]) parameter(0)
  ici = s32[] get-tuple-element(icp), index=0
  in = s32[] constant(3)
  ROOT ic = pred[] compare(ici, in), direction=LT
}
ibody {
  ibp = (s32[], f32[64,128]) parameter(0)
  ibi = s32[] get-tuple-element(ibp), index=0
  ione = s32[] constant(1)
  inx = s32[] add(ibi, ione)
  ix = f32[64,128] get-tuple-element(ibp), index=1
  iy = f32[64,128] exponential(ix)
  ROOT it = (s32[], f32[64,128]) tuple(inx, iy)
}
ocond {
  ocp = (s32[], f32[64,128]) parameter(0)
  oci = s32[] get-tuple-element(ocp), index=0
  on = s32[] constant(5)
  ROOT oc = pred[] compare(oci, on), direction=LT
}
obody {
  obp = (s32[], f32[64,128]) parameter(0)
  obi = s32[] get-tuple-element(obp), index=0
  oone = s32[] constant(1)
  onx = s32[] add(obi, oone)
  ox = f32[64,128] get-tuple-element(obp), index=1
  oz = s32[] constant(0)
  oinit = (s32[], f32[64,128]) tuple(oz, ox)
  ow = (s32[], f32[64,128]) while(oinit), condition=icond, body=ibody
  oy = f32[64,128] get-tuple-element(ow), index=1
  ROOT ot = (s32[], f32[64,128]) tuple(onx, oy)
}
ENTRY main {
  p = f32[64,128] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[64,128]) tuple(z, p)
  w = (s32[], f32[64,128]) while(init), condition=ocond, body=obody
  ROOT r = f32[64,128] get-tuple-element(w), index=1
}
`
	p, err := Compile(parseText(t, src), nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, k := range p.Kernels {
		if k.Computation == "ibody" && k.Info.Transcendentals > 0 {
			found = true
			if k.Weight != 15 {
				t.Errorf("inner body kernel %s weight = %g, want 5 × 3", k.Name, k.Weight)
			}
		}
	}
	if !found {
		t.Fatalf("no inner body kernel: %v", kernelNames(p))
	}
}

func TestConditionalBranches(t *testing.T) {
	src := func(index string) string {
		return `HloModule cond
b0 {
  a0 = f32[64,128] parameter(0)
  ROOT e0 = f32[64,128] exponential(a0)
}
b1 {
  a1 = f32[64,128] parameter(0)
  ROOT e1 = f32[64,128] negate(a1)
}
b2 {
  a2 = f32[64,128] parameter(0)
  ROOT e2 = f32[64,128] tanh(a2)
}
ENTRY main {
  i = s32[] ` + index + `
  x = f32[64,128] parameter(0)
  ROOT c = f32[64,128] conditional(i, x, x, x), branch_computations={b0, b1, b2}
}
`
	}
	p, err := Compile(parseText(t, src("parameter(1)")), nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	cd := p.Schedule.Steps[0].Cond
	if cd == nil || len(cd.Branches) != 3 {
		t.Fatalf("schedule = %+v, want a conditional of 3 branches", p.Schedule.Steps)
	}
	for i, w := range cd.Weights {
		if w != 1.0/3 {
			t.Errorf("branch %d weight = %g, want 1/3 (unknown index)", i, w)
		}
	}
	// The default simplification group (XLA's order) runs conditional-simplifier, which
	// inlines the branch a constant index selects; the legacy group keeps the
	// conditional, and the schedule weights the known branch.
	inlined := func(name, src string) {
		t.Helper()
		p, err := Compile(parseText(t, src), nil, opts())
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Schedule.Steps) != 1 || p.Schedule.Steps[0].Cond != nil || len(p.Kernels) != 1 || p.Kernels[0].Info.Transcendentals != 0 {
			t.Errorf("%s: %d steps, kernels %v: want the negate branch inlined, one kernel", name, len(p.Schedule.Steps), kernelNames(p))
		}
	}
	inlined("constant index 1", src("constant(1)"))
	legacy := opts()
	legacy.Simplify = Simplify{Pipeline: "legacy"}
	p, err = Compile(parseText(t, src("constant(1)")), nil, legacy)
	if err != nil {
		t.Fatal(err)
	}
	if w := p.Schedule.Steps[0].Cond.Weights; w[0] != 0 || w[1] != 1 || w[2] != 0 {
		t.Errorf("weights with constant index 1 = %v, want [0 1 0]", w)
	}
	pred := `HloModule predcond
bt {
  at = f32[64,128] parameter(0)
  ROOT et = f32[64,128] exponential(at)
}
bf {
  af = f32[64,128] parameter(0)
  ROOT ef = f32[64,128] negate(af)
}
ENTRY main {
  i = pred[] constant(false)
  x = f32[64,128] parameter(0)
  ROOT c = f32[64,128] conditional(i, x, x), true_computation=bt, false_computation=bf
}
`
	inlined("predicate false", pred)
	p, err = Compile(parseText(t, pred), nil, legacy)
	if err != nil {
		t.Fatal(err)
	}
	cd = p.Schedule.Steps[0].Cond
	if cd.Branches[0].Name != "bt" || cd.Weights[0] != 0 || cd.Weights[1] != 1 {
		t.Errorf("predicate false: branches %s/%s weights %v, want the false branch", cd.Branches[0].Name, cd.Branches[1].Name, cd.Weights)
	}
}

func TestCallIsInlined(t *testing.T) {
	src := `HloModule call
callee {
  a = f32[64,128] parameter(0)
  ROOT e = f32[64,128] exponential(a)
}
ENTRY main {
  x = f32[64,128] parameter(0)
  c = f32[64,128] call(x), to_apply=callee
  ROOT y = f32[64,128] add(c, x)
}
`
	p, err := Compile(parseText(t, src), nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Kernels) != 1 || p.Kernels[0].Info.Kind != cost.KindLoop || p.Kernels[0].Info.Transcendentals == 0 {
		t.Fatalf("kernels = %v, want the callee fused with its user into one loop kernel", kernelNames(p))
	}
}

func TestCustomCalls(t *testing.T) {
	src := `HloModule cc
ENTRY main {
  a = f32[4,256,512] parameter(0)
  b = f32[4,512,128] parameter(1)
  s = f32[4,256,512] custom-call(a), custom_call_target="Sharding", sharding={replicated}
  g = (f32[4,256,128], s8[1024]) custom-call(s, b), custom_call_target="__cublas$gemm"
  r = f32[4,256,128] get-tuple-element(g), index=0
  h = f32[4,256,128] custom-call(r), custom_call_target="MoveToHost"
  u = f32[4,256,128] custom-call(h), custom_call_target="SomethingUnknown"
  ROOT o = f32[4,256,128] add(u, r)
}
`
	p, err := Compile(parseText(t, src), nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	var gemm, approx int
	for _, k := range p.Kernels {
		if k.Info.Kind == cost.KindGEMM {
			gemm++
			if k.Info.Batch != 4 || k.Info.M != 256 || k.Info.K != 512 || k.Info.N != 128 {
				t.Errorf("gemm %s: batch %d m %d k %d n %d, want 4 256 512 128", k.Name, k.Info.Batch, k.Info.M, k.Info.K, k.Info.N)
			}
		}
		if k.Approximate {
			approx++
		}
		for _, in := range k.Comp.Instructions {
			if in.Opcode == hlo.OpCustomCall && customCallTarget(in) != "SomethingUnknown" {
				t.Errorf("kernel %s still runs custom-call %s", k.Name, customCallTarget(in))
			}
		}
	}
	if gemm != 1 {
		t.Errorf("%d GEMM kernels, want the cublas call as one: %v", gemm, kernelNames(p))
	}
	if approx != 1 {
		t.Errorf("%d approximate kernels, want 1 (the unknown target)", approx)
	}
}

func TestReplicaGroupSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
		err  bool
	}{
		{"{{0,1,2,3},{4,5,6,7}}", 4, false},
		{"{{0, 1}, {2, 3}, {4, 5}}", 2, false},
		{"{}", 0, false},
		{"[2,4]<=[8]", 4, false},
		{"[1,8]<=[2,4]T(1,0)", 8, false},
		{"{{0,1},{2}}", 0, true},
		{"{{0,x}}", 0, true},
		{"banana", 0, true},
		// XLA's mesh form (its hlo_to_mhlo import tests): groups along the listed axes.
		{"mesh['axis_0'=4,'axis_1'=2] {'axis_0'}", 4, false},
		{"mesh['axis_0'=2,'axis_1'=2] {'axis_1'}", 2, false},
		{"mesh['a'=4,'b'=2] {'a','b'}", 8, false},
		{"mesh['a'=4,'b'=2] {}", 1, false},
		{"mesh['a'=8], device_ids=([2,4]T(1,0)) {'a':(2)4}", 4, false},
		{"mesh['a'=4] {'c'}", 0, true},
		{"mesh['a'=6] {'a':(1)4}", 0, true},
		// device_ids=(...) as XLA's ParseMesh reads it: exactly the mesh's size of ids, or
		// an iota [dims]T(perm) of the mesh's size (T after two or more dimensions).
		{"mesh['a'=2,'b'=2], device_ids=(3,2,1,0) {'b'}", 2, false},
		{"mesh['a'=2,'b'=2], device_ids=([4]) {'a','b'}", 4, false},
		{"mesh['a'=2,'b'=2], device_ids=(3,2,1) {'b'}", 0, true},       // 3 ids for 4 devices
		{"mesh['a'=2,'b'=2], device_ids=(0,1,1,2) {'b'}", 0, true},     // a device twice
		{"mesh['a'=2,'b'=2], device_ids=([2,3]T(1,0)) {'b'}", 0, true}, // 6 for 4
		{"mesh['a'=2,'b'=2], device_ids=([2,2]) {'b'}", 0, true},       // no T(perm)
		{"mesh['a'=2,'b'=2], device_ids=([2,2]T(0,0)) {'b'}", 0, true}, // not a permutation
	} {
		got, err := ReplicaGroupSize(c.in)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ReplicaGroupSize(%q) = %d, %v; want %d (error %v)", c.in, got, err, c.want, c.err)
		}
	}
}

func TestAllReduceIsACollectiveStep(t *testing.T) {
	src := `HloModule ar, replica_count=2, num_partitions=4
sum {
  sa = f32[] parameter(0)
  sb = f32[] parameter(1)
  ROOT sc = f32[] add(sa, sb)
}
ENTRY main {
  x = f32[1024,256] parameter(0)
  e = f32[1024,256] exponential(x)
  ROOT r = f32[1024,256] all-reduce(e), replica_groups={{0,1,2,3},{4,5,6,7}}, to_apply=sum
}
`
	p, err := Compile(parseText(t, src), nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	if p.Chips != 8 {
		t.Errorf("chips = %d, want replica_count × num_partitions = 8", p.Chips)
	}
	var col *Collective
	for _, st := range p.Schedule.Steps {
		if st.Collective != nil {
			col = st.Collective
		}
	}
	if col == nil || col.Kind != CollAllReduce || col.GroupSize != 4 || col.Bytes != 1024*256*4 {
		t.Fatalf("collective = %+v, want all-reduce of 1 MiB over groups of 4", col)
	}
	if len(p.Kernels) != 1 {
		t.Errorf("kernels %v: the all-reduce must not be a kernel", kernelNames(p))
	}
}

// TestRealScan: a JAX scan as XLA dumps it: the trip count comes from the induction
// variable (0 to 2000 step 1), the call in the body is inlined, the body's kernels run
// 2000 times per program run.
func TestRealScan(t *testing.T) {
	m := readTestdata(t, "bench_scan_N2000_M3_notables.hlo")
	p, err := Compile(m, nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	var loop *Loop
	for _, st := range p.Schedule.Steps {
		if st.Loop != nil {
			loop = st.Loop
		}
	}
	if loop == nil || loop.TripCount != 2000 || loop.TripSource != "induction" {
		t.Fatalf("loop = %+v, want 2000 trips from the induction variable", loop)
	}
	body := 0
	for _, k := range p.Kernels {
		if k.Computation == "region_0.2" {
			body++
			if k.Weight != 2000 {
				t.Errorf("body kernel %s weight %g, want 2000", k.Name, k.Weight)
			}
		}
		if k.Info.Kind == cost.KindOpaque {
			t.Errorf("kernel %s is opaque", k.Name)
		}
	}
	if body == 0 {
		t.Errorf("no kernels in the loop body: %v", kernelNames(p))
	}
	for _, c := range p.Module.Computations {
		for _, in := range c.Instructions {
			if in.Opcode == hlo.OpCall {
				t.Errorf("call %s left in %s", in.Name, c.Name)
			}
		}
	}
}

// TestDumpedFusionsAreRefused: a module dumped after XLA's fusion (here a Triton GEMM
// fusion) is unfused and compiled like any module: the dot is a GEMM kernel, not an
// opaque one.
func TestDumpedFusionsAreRefused(t *testing.T) {
	src := `HloModule m
f {
  a = f32[70,70,70] parameter(0)
  b = f32[70,70,70] parameter(1)
  ROOT d = f32[70,70,70] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={2}
}
ENTRY e {
  a.1 = f32[70,70,70] parameter(0)
  b.1 = f32[70,70,70]{2,1,0} parameter(1)
  f.1 = f32[70,70,70] fusion(a.1, b.1), kind=kCustom, calls=f, backend_config={"fusion_backend_config":{"kind":"__triton_gemm"}}
  ROOT n = f32[70,70,70] negate(f.1)
}
`
	p, err := Compile(parseText(t, src), nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Kernels) != 1 || p.Kernels[0].Info.Kind != cost.KindGEMM || p.Kernels[0].Info.Flops < 2*70*70*70*70 {
		t.Fatalf("kernels %v, want one GEMM (the dot with the negate fused)", kernelNames(p))
	}
	if p.Module.Computation("f") != nil {
		t.Error("the dumped fused computation is left in the module")
	}
}
