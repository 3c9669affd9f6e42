package tune

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/tpusim"
)

// cliRequest is a Request as `tpucost tune SRC` fills it with its flags' defaults, on a
// budget small enough for a test.
func cliRequest(src string) Request {
	d := Defaults()
	return Request{Src: src, Chip: tpusim.ChipSpec{Preset: tpusim.DefaultChip}, Strategy: string(d.Strategy),
		TopK: d.TopKGraph, KernelTopK: d.TopKKernel, ModelEvals: d.ModelEvals, Budget: 5, Seed: 1, Noise: 0.02, Runs: d.Runs}
}

// TestRequestRefusals: every refused combination or value is one error naming the flags,
// before anything is tuned (the policy and model paths do not exist and are never read
// when an earlier check refuses).
func TestRequestRefusals(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	const src, seqSrc = "mlp_96x2_b1", "rnn_char_h96_t24_b1"
	for _, tc := range []struct {
		name string
		edit func(*Request)
		want string
	}{
		{"no source", func(q *Request) { q.Src = "" }, "give exactly one of SRC, --models or --all"},
		{"source and models", func(q *Request) { q.Models = "a" }, "give exactly one of SRC, --models or --all"},
		{"source and all", func(q *Request) { q.All = true }, "give exactly one of SRC, --models or --all"},
		{"unknown chip", func(q *Request) { q.Chip.Preset = "v9" }, "unknown chip"},
		{"budget", func(q *Request) { q.Budget = 0 }, "--budget \"0\": want an integer >= 1"},
		{"runs", func(q *Request) { q.Runs = 5000 }, "--runs \"5000\": want an integer in [1, 1000]"},
		{"topk", func(q *Request) { q.TopK = 0 }, "--topk \"0\""},
		{"kernel topk", func(q *Request) { q.KernelTopK = -1 }, "--kernel-topk \"-1\""},
		{"model evals", func(q *Request) { q.ModelEvals = 0 }, "--model-evals \"0\""},
		{"noise", func(q *Request) { q.Noise = 2 }, "--noise \"2\": want a number in [0, 1]"},
		{"workers", func(q *Request) { q.Workers = -1 }, "--workers \"-1\""},
		{"strategy", func(q *Request) { q.Strategy = "nope" }, `--strategy "nope": want one of ` + StrategyNames()},
		{"partition with xla", func(q *Request) { q.Strategy, q.Fusion = "partition", "xla" }, `--fusion "xla": want partition`},
		{"compare without list", func(q *Request) { q.ComparePerShape = true }, "--compare-per-shape: give --shapes a list of sizes"},
		{"bad shapes", func(q *Request) { q.Shapes = "seq=" }, "--shapes: "},
		{"kinds with xtat", func(q *Request) { q.Kinds = "layout" }, "--kinds is for the non-xtat strategies"},
		{"unknown kind", func(q *Request) { q.Kinds = "bogus" }, `--kinds "bogus": want one or more of`},
		{"policy without rl", func(q *Request) { q.Strategy, q.Policy = "sa", "p" }, "--policy is for --strategy rl, not sa"},
		{"rl without policy", func(q *Request) { q.Strategy = "rl" }, "--strategy rl: "},
		{"out a directory", func(q *Request) { q.Out = dir }, "is a directory"},
		{"batch out a file", func(q *Request) { q.Src, q.Models, q.Out = "", src, file }, "is a file"},
		{"model without loader", func(q *Request) { q.ModelDir = "m" }, "--model: no model loader"},
		{"lengths batch", func(q *Request) { q.Src, q.Models, q.Lengths = "", seqSrc, "3,4" }, "--lengths tunes one SRC, not --models or --all"},
		{"lengths shapes", func(q *Request) { q.Src, q.Lengths, q.Shapes = seqSrc, "3,4", "seq=4" }, "--lengths sizes every sequence itself: drop --shapes"},
		{"lengths compare", func(q *Request) { q.Src, q.Lengths, q.ComparePerShape = seqSrc, "3,4", true }, "--compare-per-shape goes with a --shapes list, not --lengths"},
		{"lengths out", func(q *Request) { q.Src, q.Lengths, q.Out = seqSrc, "3,4", "x.json" }, "--out: a ragged run's config is in --json's config"},
		{"lengths store", func(q *Request) { q.Src, q.Lengths, q.Store = seqSrc, "3,4", "s.db" }, "--store: a ragged run does not read or record a config store"},
		{"lengths model", func(q *Request) { q.Src, q.Lengths, q.ModelDir = seqSrc, "3,4", "m" }, "--model: a ragged run measures every candidate on the simulator"},
		{"lengths policy", func(q *Request) { q.Src, q.Lengths, q.Policy = seqSrc, "3,4", "p" }, "--policy: a shape-generic run does not take the rl strategy"},
		{"lengths budget", func(q *Request) { q.Src, q.Lengths, q.Budget = seqSrc, "3,4", 0 }, "--budget \"0\""},
		{"bad lengths", func(q *Request) { q.Src, q.Lengths = seqSrc, "x" }, "--lengths: "},
		{"shape list batch", func(q *Request) { q.Src, q.Models, q.Shapes = "", seqSrc, "seq=4,8" }, "--shapes with a list of sizes tunes one SRC"},
		{"shape list out", func(q *Request) { q.Src, q.Shapes, q.Out = seqSrc, "seq=4,8", "x.json" }, "--out: a shape-generic run has one config per size"},
		{"shape list store", func(q *Request) { q.Src, q.Shapes, q.Store = seqSrc, "seq=4,8", "s.db" }, "--store: a shape-generic run does not read or record a config store"},
		{"shape list policy", func(q *Request) { q.Src, q.Shapes, q.Policy = seqSrc, "seq=4,8", "p" }, "--policy: a shape-generic run does not take the rl strategy"},
		{"shape list runs", func(q *Request) { q.Src, q.Shapes, q.Runs = seqSrc, "seq=4,8", 0 }, "--runs \"0\""},
	} {
		q := cliRequest(src)
		tc.edit(&q)
		var log bytes.Buffer
		q.Log = &log
		res, err := q.Run(t.Context())
		if err == nil || res != nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: result %v, error %v; want one line with %q", tc.name, res, err, tc.want)
		}
		if log.Len() != 0 {
			t.Errorf("%s: logged %q before refusing", tc.name, log.String())
		}
	}
}

// TestCheckShapes: tune's --shapes takes a value of every command or a list of one
// dimension's sizes; the error is the parser's that fits the value.
func TestCheckShapes(t *testing.T) {
	for _, s := range []string{"seq=64", "seq=64,128,256", "d0=3,d1=4"} {
		if err := CheckShapes(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{"", "seq=", "seq=0", "seq=64,d0=3,d0=4", "seq=x,y"} {
		if err := CheckShapes(s); err == nil {
			t.Errorf("%q: accepted", s)
		}
	}
}

// TestRequestRunOne: one program tuned through a Request: the result's JSON is the
// report with chip_mismatch, its text ends naming the --out file, which holds the
// config; the log has the program's done line.
func TestRequestRunOne(t *testing.T) {
	out := filepath.Join(t.TempDir(), "tuned.json")
	q := cliRequest("mlp_96x2_b1")
	q.Out, q.Noise = out, 0
	var log bytes.Buffer
	q.Log = &log
	res, err := q.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if res.Report == nil || res.Batch != nil || res.Shapes != nil || res.Ragged != nil {
		t.Fatalf("result %+v: want only Report", res)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var j map[string]any
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	if j["program"] != "mlp_96x2_b1" || j["chip_mismatch"] != false || j["budget"] != float64(5) {
		t.Errorf("JSON %s", b)
	}
	var text bytes.Buffer
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(text.String(), "tuned config written to "+out+"\n") {
		t.Errorf("text %q", text.String())
	}
	if _, err := os.Stat(out); err != nil {
		t.Errorf("--out not written: %v", err)
	}
	if !strings.Contains(log.String(), "tune mlp_96x2_b1: ") {
		t.Errorf("log %q", log.String())
	}
}

// TestRequestModels: ModelDir's checkpoints go through LoadModel with the resolved chip
// and AllowMismatch; a mismatch is warned on Log and marks the result; a relative model
// alone takes the kernel role; a loader's error names the checkpoint.
func TestRequestModels(t *testing.T) {
	q := cliRequest("mlp_96x2_b1")
	q.ModelDir, q.AllowMismatch, q.Chip.VMEMMiB = " k ,", true, 8
	var gotChip tpusim.Chip
	var gotAllow bool
	q.LoadModel = func(dir string, c tpusim.Chip, allow bool) (Model, string, error) {
		if dir != "k" {
			t.Errorf("loaded %q, want the trimmed k", dir)
		}
		gotChip, gotAllow = c, allow
		return simModel{chip: c, relative: true}, "model k was trained on data for chip v3, not v4", nil
	}
	var log bytes.Buffer
	q.Log = &log
	res, err := q.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if gotChip.VMEMBytes != 8<<20 || !gotAllow {
		t.Errorf("loader got VMEM %d, allow %v", gotChip.VMEMBytes, gotAllow)
	}
	if !res.ChipMismatch || !strings.Contains(log.String(), "WARNING: model k was trained on data for chip v3, not v4: its predictions are not validated for this target") {
		t.Errorf("mismatch %v, log %q", res.ChipMismatch, log.String())
	}
	if !res.Report.ModelGuided {
		t.Error("a kernel model given, the run is not model-guided")
	}
	q.LoadModel = func(string, tpusim.Chip, bool) (Model, string, error) {
		return nil, "", errors.New("checkpoint is corrupt")
	}
	if _, err := q.Run(t.Context()); err == nil || err.Error() != "--model k: checkpoint is corrupt" {
		t.Errorf("loader error: %v", err)
	}
}

// TestRequestInterrupted: a cancelled run says what was kept and how to go on: for one
// program that nothing was written; in batch mode which programs are left.
func TestRequestInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	q := cliRequest("mlp_96x2_b1")
	_, err := q.Run(ctx)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "nothing was written; re-run the same command to tune mlp_96x2_b1 again") {
		t.Errorf("one program: %v", err)
	}
	q.Src, q.Models = "", "mlp_96x2_b1,mlp_lenet300_b32"
	_, err = q.Run(ctx)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "0 of 2 programs finished, nothing was written for mlp_96x2_b1; to tune the rest with the same results, re-run the same command with --models mlp_96x2_b1,mlp_lenet300_b32") {
		t.Errorf("batch: %v", err)
	}
}
