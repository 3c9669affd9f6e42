package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/zoo"
)

const boundedHLO = "../../../zoo/testdata/bounded.hlo"

// TestZooListDynamic: zoo list declares the sequence models' "seq" in JSON and in a
// DYNAMIC column; static models have neither.
func TestZooListDynamic(t *testing.T) {
	out, errs, code := run("zoo", "list", "--family", "bert", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var entries []zoo.ListEntry
	if err := json.Unmarshal([]byte(out), &entries); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if len(e.Dynamic) != 1 || e.Dynamic[0] != "seq" || e.DynamicMax["seq"] != 512 {
			t.Errorf("%s: dynamic %v max %v", e.Name, e.Dynamic, e.DynamicMax)
		}
	}
	if !strings.Contains(out, `"dynamic": [`) {
		t.Errorf("no dynamic key in %.200s", out)
	}
	out, _, _ = run("zoo", "list", "--family", "resnet_v1", "--json")
	if strings.Contains(out, "dynamic") {
		t.Errorf("a static model lists dynamic dims: %.200s", out)
	}
	out, _, _ = run("zoo", "list", "--family", "gpt2")
	if !strings.Contains(strings.SplitN(out, "\n", 2)[0], "DYNAMIC") || !strings.Contains(out, "seq<=1024") {
		t.Errorf("table:\n%s", out)
	}
}

// TestShapesFlag: --shapes builds a zoo model or sizes an HLO file's bounded dims in
// compile, sim, predict and tune, names the program after the shape, and refuses bad
// input with one line naming the flag.
func TestShapesFlag(t *testing.T) {
	var sim struct {
		Program string  `json:"program"`
		TotalNs float64 `json:"total_ns"`
	}
	out, errs, code := run("sim", "bert_tiny_s128_b32", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &sim) != nil {
		t.Fatalf("exit %d: %s", code, errs)
	}
	full := sim.TotalNs
	out, errs, code = run("sim", "bert_tiny_s128_b32", "--shapes", "seq=64", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &sim) != nil {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if sim.Program != "bert_tiny_s128_b32@seq=64" || !(sim.TotalNs < full) {
		t.Errorf("seq=64: %s %.0f ns, seq=128 %.0f ns", sim.Program, sim.TotalNs, full)
	}
	var comp compiler.CompileResult
	out, errs, code = run("compile", "gpt2_tiny_s128_b8_train", "--shapes", "seq=32", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &comp) != nil || comp.Program != "gpt2_tiny_s128_b8_train@seq=32" {
		t.Errorf("compile: exit %d %s %q", code, errs, comp.Program)
	}
	out, errs, code = run("compile", boundedHLO, "--shapes", "d0=64", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &comp) != nil || comp.Program != "bounded@d0=64" {
		t.Errorf("compile HLO: exit %d %s %q", code, errs, comp.Program)
	}
	out, errs, code = run("sim", boundedHLO, "--shapes", "d0=16,d2=4", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &sim) != nil || sim.Program != "bounded@d0=16,d2=4" {
		t.Errorf("sim HLO: exit %d %s %q", code, errs, sim.Program)
	}
	out, errs, code = run("tune", "bert_tiny_s128_b32", "--shapes", "seq=32", "--budget", "8", "--json")
	if code != 0 || !strings.Contains(out, `"bert_tiny_s128_b32@seq=32"`) {
		t.Errorf("tune: exit %d %s\n%.300s", code, errs, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sim", "bert_tiny_s128_b32", "--shapes", "len=64"}, `--shapes: bert_tiny_s128_b32 has no dynamic dimension "len" (it declares seq)`},
		{[]string{"sim", "resnet18_b1", "--shapes", "seq=64"}, `--shapes: resnet18_b1 has no dynamic dimension "seq" (it declares none)`},
		{[]string{"sim", "bert_tiny_s128_b32", "--shapes", "seq=600"}, "--shapes: seq=600: bert_tiny_s128_b32 takes seq up to 512"},
		{[]string{"sim", "bert_tiny_s128_b32", "--shapes", "seq=0"}, `--shapes "seq=0": seq: "0" is not an integer in [1, 65536]`},
		{[]string{"sim", "bert_tiny_s128_b32", "--shapes", "seq=abc"}, `--shapes "seq=abc": seq: "abc" is not an integer`},
		{[]string{"sim", "bert_tiny_s128_b32", "--shapes", "seq=64,128"}, "--shapes \"seq=64,128\": one value per dimension"},
		{[]string{"sim", "bert_tiny_s128_b32", "--shapes="}, `--shapes "": empty`},
		{[]string{"compile", "bert_tiny_s128_b32", "--shapes", "seq=64,128"}, `--shapes "seq=64,128": one value per dimension`},
		{[]string{"tune", "--models", "resnet18_b1", "--shapes", "seq=64", "--budget", "8"}, "--shapes: resnet18_b1 has no dynamic dimension"},
		{[]string{"predict", "--data", "x", "--model", "m", "--shapes", "seq=64"}, "--shapes sizes SRC"},
		{[]string{"sim", boundedHLO, "--shapes", "d0=129"}, "--shapes: " + boundedHLO + ": d0=129 is above its bound 128 (%p dimension 0)"},
		{[]string{"sim", boundedHLO, "--shapes", "seq=8"}, `no dimension "seq": the module's bounded dimensions are d0`},
		{[]string{"compile", boundedHLO, "--shapes", "d0=8,d1=9"}, "d0 and d1 share the bound 128"},
		{[]string{"sim", graphsage, "--shapes", "d0=8"}, "no bounded dynamic dimension"},
		{[]string{"gen", "--models", "bert_tiny_s128_b32,resnet18_b1", "--shapes", "seq=64,128", "--out", filepath.Join(t.TempDir(), "d")}, `--shapes: resnet18_b1 has no dynamic dimension "seq" (it declares none)`},
		{[]string{"gen", "--models", "bert_tiny_s128_b32", "--shapes", "seq=64,600", "--out", filepath.Join(t.TempDir(), "d")}, "--shapes: seq=600: bert_tiny_s128_b32 takes seq up to 512"},
		{[]string{"gen", "--models", "bert_tiny_s128_b32", "--shapes", "seq=64,d0=3", "--out", filepath.Join(t.TempDir(), "d")}, "a list varies one dimension"},
		{[]string{"gen", "--models", "bert_tiny_s128_b32", "--shapes", "seq=64,64", "--out", filepath.Join(t.TempDir(), "d")}, "seq=64 given twice"},
		{[]string{"train", "--task", "tile", "--data", "x", "--out", filepath.Join(t.TempDir(), "m"), "--split", "shape"}, "--split"},
		{[]string{"eval", "--model", "m", "--split", "shape:seq=x"}, `--split: shape:seq=x: "x" is not a positive integer size`},
	} {
		_, errs, code := run(c.args...)
		if code == 0 || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want one line with %q", c.args, code, errs, c.want)
		}
	}
}
