package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/tpusim/ragged"
	"github.com/tpucost/tpucost/tune"
)

// TestSimLengths: sim --lengths times a ragged batch padded, ideal and compiled ragged
// (ideal <= ragged < padded here, every kernel marked); equal lengths time the same padded
// and ideal; compile --lengths lists the ragged kernels; tune --lengths tunes the ragged
// form; bad input is one line.
func TestSimLengths(t *testing.T) {
	var r ragged.Report
	out, errs, code := run("sim", "bert_tiny_s128_b32", "--lengths", "128,32,32,32", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !(r.IdealNs <= r.RaggedNs && r.RaggedNs < r.PaddedNs) || !(r.PaddingWaste > 0.5) || r.Batch != 4 || len(r.Lengths) != 4 || len(r.Kernels) == 0 {
		t.Errorf("%+v", r)
	}
	var raw map[string]any
	if json.Unmarshal([]byte(out), &raw) != nil || raw["ideal_ns"] == nil || raw["ragged_ns"] == nil || raw["padded_ns"] == nil {
		t.Errorf("want padded_ns, ideal_ns and ragged_ns in %s", out)
	}
	if ks, _ := raw["kernels"].([]any); len(ks) == 0 || ks[0].(map[string]any)["ragged"] == nil || ks[0].(map[string]any)["steps"] == nil {
		t.Errorf("want kernels[] with ragged and steps")
	}
	var cr ragged.CompileReport
	out, errs, code = run("compile", "bert_tiny_s128_b32", "--lengths", "8,512", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &cr) != nil || cr.PerSequence == 0 || cr.Packed == 0 || cr.PackedRows != 8+512 || len(cr.Pads) != 0 {
		t.Errorf("compile --lengths: exit %d %s: %+v", code, errs, cr)
	}
	out, errs, code = run("compile", "gpt2_tiny_s128_b8", "--lengths", "uniform:16-128:4:1")
	if code != 0 || !strings.Contains(out, "per_sequence") || !strings.Contains(out, "no pads") {
		t.Errorf("compile --lengths uniform: exit %d %s\n%s", code, errs, out)
	}
	out, errs, code = run("sim", "bert_tiny_s128_b32", "--lengths", "64,64")
	if code != 0 || !strings.Contains(out, "1.000x") || !strings.Contains(out, "0.0% of the padded flops") {
		t.Errorf("equal lengths: exit %d %s\n%s", code, errs, out)
	}
	var tr tune.RaggedReport
	out, errs, code = run("tune", "bert_tiny_s128_b32", "--lengths", "32,128", "--budget", "8", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &tr) != nil {
		t.Fatalf("tune --lengths: exit %d: %s", code, errs)
	}
	if tr.Measurements > 8 || tr.TunedRaggedNs > tr.DefaultRaggedNs || tr.Batch != 2 || tr.Config == nil || tr.Program != "bert_tiny_s128_b32" {
		t.Errorf("tune --lengths: %+v", tr)
	}
	if !strings.Contains(errs, "tune bert_tiny_s128_b32") { // it once printed nothing for 16 s
		t.Errorf("tune --lengths: no progress on stderr: %q", errs)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sim", "bert_tiny_s128_b32", "--lengths", "37,abc"}, `--lengths "37,abc": "abc" is not a length`},
		{[]string{"sim", "bert_tiny_s128_b32", "--lengths", ""}, `--lengths "": empty`},
		{[]string{"sim", "bert_tiny_s128_b32", "--lengths", "37,600"}, "--lengths: seq=600: bert_tiny_s128_b32 takes seq up to 512"},
		{[]string{"sim", "resnet18_b1", "--lengths", "37,64"}, `--lengths: resnet18_b1 has no dynamic dimension "seq"`},
		{[]string{"sim", boundedHLO, "--lengths", "37,64"}, "take a zoo model that declares seq"},
		{[]string{"sim", "bert_tiny_s128_b32", "--lengths", "37,64", "--shapes", "seq=64"}, "drop --shapes"},
		{[]string{"tune", "bert_tiny_s128_b32", "--lengths", "37,64", "--shapes", "seq=64"}, "drop --shapes"},
		{[]string{"sim", "bert_tiny_s128_b32", "--lengths", "37,64", "--fusion", "partition"}, "drop --fusion"},
		{[]string{"tune", "bert_tiny_s128_b32", "--lengths", "37,64", "--fusion", "partition"}, "drop --fusion"},
		{[]string{"sim", "bert_tiny_s128_b32", "--lengths", "37,64", "--staging", "on"}, "drop --staging"},
		{[]string{"tune", "bert_tiny_s128_b32", "--lengths", "37,64", "--staging", "auto"}, "drop --staging"},
		{[]string{"tune", "bert_tiny_s128_b32", "--lengths", "37,x"}, `--lengths "37,x": "x" is not a length`},
		{[]string{"tune", "resnet18_b1", "--lengths", "37,64", "--budget", "8"}, `--lengths: resnet18_b1 has no dynamic dimension "seq"`},
		{[]string{"sim", "bert_tiny_s128_b32", "--lengths", "0,64"}, `"0" is not a length`},
		{[]string{"sim", "bert_tiny_s128_b32", "--lengths", "-3"}, `"-3" is not a length`},
		{[]string{"sim", "bert_tiny_s128_b32", "--lengths", "uniform:16-128:4"}, "want uniform:LO-HI:N:SEED"},
		{[]string{"sim", "bert_tiny_s128_b32", "--lengths", "normal:16-128:4:1"}, `unknown form "normal"`},
		{[]string{"sim", "bert_tiny_s128_b32", "--lengths", "file:/no/such/file"}, "file:/no/such/file"},
		{[]string{"compile", "bert_tiny_s128_b32", "--lengths", "37,600"}, "--lengths: seq=600: bert_tiny_s128_b32 takes seq up to 512"},
		{[]string{"compile", "resnet18_b1", "--lengths", "37,64"}, "resnet18_b1 has no ragged form"},
		{[]string{"compile", "bert_tiny_s128_b32", "--lengths", "37,64", "--passes", "none"}, "drop --passes"},
	} {
		_, errs, code := run(c.args...)
		if code == 0 || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want one line with %q", c.args, code, errs, c.want)
		}
	}
}
