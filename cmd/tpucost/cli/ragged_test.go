package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/tpusim/ragged"
	"github.com/tpucost/tpucost/tune"
)

// TestSimLengths: sim --lengths times a ragged batch padded and ragged; equal lengths
// time the same both ways; tune --lengths tunes the ragged form; bad input is one line.
func TestSimLengths(t *testing.T) {
	var r ragged.Report
	out, errs, code := run("sim", "bert_tiny_s128_b32", "--lengths", "128,32,32,32", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !(r.RaggedNs < r.PaddedNs) || !(r.PaddingWaste > 0.5) || r.Batch != 32 || len(r.Lengths) != 4 {
		t.Errorf("%+v", r)
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
	if tr.Measurements > 8 || tr.TunedRaggedNs > tr.DefaultRaggedNs || len(tr.Shapes) != 2 || tr.Program != "bert_tiny_s128_b32" {
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
	} {
		_, errs, code := run(c.args...)
		if code == 0 || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want one line with %q", c.args, code, errs, c.want)
		}
	}
}
