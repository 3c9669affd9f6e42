package tune

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/hlo"
)

// TestPolicyGraphInMemory pins the in-memory policy graph (programGraph takes the module
// after layout assignment through a compiler.PassHook) to what the policy read when it
// printed the module after that pass and parsed the text again: on zoo programs of
// every family and real XLA modules with loops, the two modules are equal (hlo.ModulesEqual) and the
// policy's decisions built on them are identical, features and neighbours included.
func TestPolicyGraphInMemory(t *testing.T) {
	chip := testChip(t)
	for _, name := range []string{"mlp_768x3_b8", "dlrm_small_b32", "bert_tiny_s128_b32", "resnet18_b1",
		"../compiler/hlo/testdata/real/bench_scan_N2000_M3.hlo", "../compiler/hlo/testdata/real/dynamic_slice_loop_1x2048x768_bf16.hlo"} {
		cc := &compilerCtx{mod: rlModule(t, name), opts: compiler.Options{Target: chip.Target, Kernels: &compiler.KernelCache{}}}
		base, err := cc.compile(nil)
		if err != nil {
			t.Fatal(err)
		}
		mem, err := programGraph(cc, base.cfg)
		if err != nil {
			t.Fatal(err)
		}
		// The text round trip the policy used before the hook.
		var buf bytes.Buffer
		o := cc.opts
		o.DumpAfter, o.Dump = "layout-assignment", &buf
		if _, err := compiler.Compile(cc.mod, base.cfg, o); err != nil {
			t.Fatal(err)
		}
		text, err := hlo.Parse(cc.mod.Name+" (after layout-assignment)", buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		text.Name = mem.Name
		if err := hlo.ModulesEqual(mem, text); err != nil {
			t.Errorf("%s: the module in memory differs from the parsed dump: %v", name, err)
		}
		all := newKindSet([]compiler.Kind{compiler.KindLayout, compiler.KindFusion})
		dm, err := newDecisions(mem, base.space, all, chip.Target)
		if err != nil {
			t.Fatal(err)
		}
		dt, err := newDecisions(text, base.space, all, chip.Target)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d decisions, %d nodes", name, dm.n(), len(dm.x)/rlNodeFeatures)
		if dm.n() == 0 {
			t.Errorf("%s: no decisions", name)
		}
		if !reflect.DeepEqual(dm, dt) {
			t.Errorf("%s: the policy's decisions differ between the in-memory graph and the parsed dump", name)
		}
	}
}
