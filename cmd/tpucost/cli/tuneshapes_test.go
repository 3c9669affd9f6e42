package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/tune"
)

// TestTuneShapes: tune --shapes with a list of sizes runs one shape-generic search and
// reports every size (never slower than its default) and the per-shape baseline; bad
// input is refused with one line.
func TestTuneShapes(t *testing.T) {
	out, errs, code := run("tune", "bert_tiny_s128_b32", "--shapes", "seq=128,32", "--budget", "12", "--compare-per-shape", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep tune.ShapesReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Shapes) != 2 || rep.Shapes[0].Value != 32 || rep.Shapes[1].Value != 128 || rep.Measurements > 12 || rep.Dim != "seq" || rep.Program != "bert_tiny_s128_b32" {
		t.Fatalf("%.400s", out)
	}
	for _, s := range rep.Shapes {
		if s.Speedup < 1 || s.Config == nil {
			t.Errorf("seq=%d: speedup %.3f, config %v", s.Value, s.Speedup, s.Config != nil)
		}
	}
	if rep.PerShape == nil || rep.PerShape.Measurements != 2*12 || !strings.Contains(out, `"per_shape"`) {
		t.Errorf("per_shape: %+v", rep.PerShape)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tune", "bert_tiny_s128_b32", "--shapes", "len=64,128"}, `--shapes: bert_tiny_s128_b32 has no dynamic dimension "len"`},
		{[]string{"tune", "bert_tiny_s128_b32", "--shapes", "seq=64,1024"}, "--shapes: seq=1024: bert_tiny_s128_b32 takes seq up to 512"},
		{[]string{"tune", boundedHLO, "--shapes", "d0=64,200"}, "d0=200 is above its bound 128"},
		{[]string{"tune", "bert_tiny_s128_b32", "--shapes="}, `--shapes "": empty`},
		{[]string{"tune", "bert_tiny_s128_b32", "--shapes", "seq=64,abc"}, `--shapes "seq=64,abc": seq: "abc" is not an integer`},
		{[]string{"tune", "resnet18_b1", "--shapes", "seq=64,128"}, `resnet18_b1 has no dynamic dimension "seq" (it declares none)`},
		{[]string{"tune", "bert_tiny_s128_b32", "--compare-per-shape"}, "--compare-per-shape: give --shapes a list"},
		{[]string{"tune", "bert_tiny_s128_b32", "--shapes", "seq=32,64,128", "--budget", "2"}, "--budget \"2\": want at least the number of sizes, 3"},
		{[]string{"tune", "bert_tiny_s128_b32", "--lengths", "32,64,128", "--budget", "2"}, "--budget \"2\": want at least the number of sizes, 3"},
		{[]string{"tune", "--models", "bert_tiny_s128_b32", "--shapes", "seq=64,128"}, "not --models or --all"},
		{[]string{"tune", "bert_tiny_s128_b32", "--shapes", "seq=64,128", "--kinds", "bogus"}, `--kinds "bogus": want one or more of`},
		{[]string{"tune", "bert_tiny_s128_b32", "--shapes", "seq=64,128", "--policy", "p"}, "--policy: a shape-generic run does not take the rl strategy"},
		{[]string{"tune", "bert_tiny_s128_b32", "--shapes", "seq=64,128", "--strategy", "rl"}, "the rl strategy's policy is trained per program"},
		{[]string{"tune", "bert_tiny_s128_b32", "--shapes", "seq=64,128", "--model", "no-such-model-dir"}, "--model no-such-model-dir"},
	} {
		_, errs, code := run(c.args...)
		if code == 0 || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want one line with %q", c.args, code, errs, c.want)
		}
	}
}
