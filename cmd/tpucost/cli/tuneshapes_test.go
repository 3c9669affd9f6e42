package cli

import (
	"encoding/json"
	"fmt"
	"math"
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
		{[]string{"tune", "lstm2_lm_h650_t20_b32", "--lengths", "8,16", "--budget", "4"}, "lstm2_lm_h650_t20_b32 has no ragged form: tune --lengths tunes the compiled ragged program"},
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

// TestTuneMicroKernels: tune --shapes RANGE --micro-kernels --out writes the dispatch table,
// and sim --shapes seq=V --config TABLE applies it: at a tuned value it reproduces the
// report's tuned_ns, at a value never tuned it compiles the table's choices.
func TestTuneMicroKernels(t *testing.T) {
	table := t.TempDir() + "/dispatch.json"
	out, errs, code := run("tune", "bert_tiny_s128_b32", "--shapes", "seq=uniform:32-160:4:1", "--micro-kernels", "--budget", "5000", "--out", table, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep tune.MicroReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Shapes) != 4 || rep.DispatchTable == nil || rep.DispatchTable.Lo != 32 || rep.DispatchTable.Hi != 160 || rep.RangeCheck == nil {
		t.Fatalf("%.400s", out)
	}
	s := rep.Shapes[1]
	simOut, errs, code := run("sim", "bert_tiny_s128_b32", "--shapes", fmt.Sprintf("seq=%d", s.Value), "--config", table, "--json")
	if code != 0 {
		t.Fatalf("sim: exit %d: %s", code, errs)
	}
	var sr struct {
		TotalNs float64 `json:"total_ns"`
	}
	if err := json.Unmarshal([]byte(simOut), &sr); err != nil {
		t.Fatal(err)
	}
	// tunedTol: the same program timed twice by the noiseless simulator; float rounding only.
	const tunedTol = 1e-9
	if math.Abs(sr.TotalNs-s.TunedNs) > tunedTol*s.TunedNs {
		t.Errorf("seq=%d: sim with the table %g ns, the report's tuned_ns %g", s.Value, sr.TotalNs, s.TunedNs)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sim", "bert_tiny_s128_b32", "--shapes", "seq=200", "--config", table}, "outside the dispatch table's range 32..160"},
		{[]string{"sim", "bert_tiny_s128_b32", "--config", table}, "is a dispatch table over seq=32..160: give --shapes seq=V"},
		{[]string{"sim", "gpt2_tiny_s128_b8", "--shapes", "seq=64", "--config", table}, "the dispatch table is for bert_tiny_s128_b32"},
		{[]string{"tune", "bert_tiny_s128_b32", "--micro-kernels"}, "--micro-kernels: give --shapes a list or range"},
		{[]string{"tune", "bert_tiny_s128_b32", "--shapes", "seq=64,128", "--micro-kernels", "--strategy", "sa"}, "drop --strategy sa"},
		{[]string{"tune", "bert_tiny_s128_b32", "--shapes", "seq=uniform:1-512:1:1", "--micro-kernels"}, "N \"1\" is not an integer >= 2"},
	} {
		_, errs, code := run(c.args...)
		if code == 0 || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want one line with %q", c.args, code, errs, c.want)
		}
	}
}
