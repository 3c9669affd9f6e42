package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/tpucost/tpucost/internal/measure"
)

// oldCommit is the commit the old-vs-new rows build the OLD binary from: the last commit
// before issue 11's work (a kernel choice planned once) began. TPUCOST_BENCH_OLD names
// another; TPUCOST_BENCH_OLD=none skips the comparison.
const oldCommit = "0814419"

// benchModels are the dataset benchmark's 24 models (gen.BenchmarkGenerate in dataset/gen).
var benchModels = "resnet50_b32,bert_base_s128_b8,mobilenet_v2_100_224_b32,gpt2_small_s128_b8,dlrm_criteo_b64,unet_d4_c64_r256_b1," +
	"vit_s16_224_b16,ssd300_voc_b32,lstm2_lm_h650_t20_b32,wavernn_h512_t24_b16,convdraw_s8_c128_r64_b1,resnet18v2_b16," +
	"resnet34_b8,bert_mini_s128_b16,mobilenet_v1_075_192_b8,transformer_small_s64_b32,dlrm_small_b32,unet_d3_c32_r128_b8," +
	"vit_ti16_224_b32,ssdlite320_coco_b16,nmt_lstm_h512_s24_b32,mlp_1000x4_b64,gpt2_medium_s256_b2,resnet56v2_cifar_b32"

// oldNewCase is one command line timed with both binaries.
type oldNewCase struct {
	what string
	args []string // after the binary; "OUT" is replaced by a fresh directory
	// samples reads a gen --json report's sample count (0 for commands without one).
	samples bool
}

func oldNewCases() []oldNewCase {
	return []oldNewCase{
		{"tile generation", []string{"gen", "--task", "tile", "--models", benchModels, "--configs", "64", "--variants", "2", "--workers", "2", "--out", "OUT", "--json"}, true},
		{"fusion generation", []string{"gen", "--task", "fusion", "--models", benchModels, "--configs", "4", "--workers", "2", "--out", "OUT", "--json"}, true},
		{"tuning (xtat, budget 300, two models)", []string{"tune", "--models", "resnet50_b32,bert_base_s128_b8", "--budget", "300", "--workers", "2", "--json"}, false},
	}
}

// procTime is one finished run: wall and CPU (user + system) seconds, samples written.
type procTime struct {
	wall, cpu float64
	samples   int64
}

// runTimed runs bin with args once, in its own output directory, and times the whole
// process.
func runTimed(bin string, args []string, samples bool) (procTime, error) {
	out, err := os.MkdirTemp("", "tpucost-oldnew-")
	if err != nil {
		return procTime{}, err
	}
	defer os.RemoveAll(out)
	a := make([]string, len(args))
	for i, s := range args {
		a[i] = strings.ReplaceAll(s, "OUT", filepath.Join(out, "data"))
	}
	cmd := exec.Command(bin, a...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	wall := time.Since(start).Seconds()
	if err != nil {
		return procTime{}, fmt.Errorf("%s %s: %v\n%s", bin, strings.Join(a, " "), err, stderr.String())
	}
	st := cmd.ProcessState
	pt := procTime{wall: wall, cpu: (st.UserTime() + st.SystemTime()).Seconds()}
	if samples {
		// The old binary names the field "Samples", the new one "samples".
		var m map[string]any
		if err := json.Unmarshal(stdout.Bytes(), &m); err != nil {
			return procTime{}, fmt.Errorf("%s: reading its --json report: %v", bin, err)
		}
		for k, v := range m {
			if strings.EqualFold(k, "samples") {
				if f, ok := v.(float64); ok {
					pt.samples = int64(f)
				}
			}
		}
		if pt.samples == 0 {
			return procTime{}, fmt.Errorf("%s: no sample count in its --json report", bin)
		}
	}
	return pt, nil
}

// buildOldNew builds the NEW binary from the working tree and the OLD one from commit
// (in a temporary git worktree, removed afterwards) into dir.
func buildOldNew(dir, commit string) (oldBin, newBin string, err error) {
	newBin, oldBin = filepath.Join(dir, "tpucost-new"), filepath.Join(dir, "tpucost-old")
	if out, err := exec.Command("go", "build", "-o", newBin, "./cmd/tpucost").CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("building the new binary: %v\n%s", err, out)
	}
	wt := filepath.Join(dir, "old-src")
	if out, err := exec.Command("git", "worktree", "add", "--detach", wt, commit).CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("git worktree add %s: %v\n%s", commit, err, out)
	}
	defer func() {
		if out, err := exec.Command("git", "worktree", "remove", "--force", wt).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "benchtable: git worktree remove %s: %v\n%s", wt, err, out)
		}
	}()
	build := exec.Command("go", "build", "-o", oldBin, "./cmd/tpucost")
	build.Dir = wt
	if out, err := build.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("building %s: %v\n%s", commit, err, out)
	}
	return oldBin, newBin, nil
}

// oldNew times each case with the old and the new binary side by side: a warm-up run of
// each, then runs runs of each in turn (old, new, old, new, ...), so that a change in
// the machine's speed during the run hits both; the ratios are the medians of the
// per-pair ratios. It returns the table rows and the raw lines for BENCHMARKS.md.
func oldNew(runs int) (rows, raw string, err error) {
	commit := oldCommit
	if c := os.Getenv("TPUCOST_BENCH_OLD"); c != "" {
		commit = c
	}
	if commit == "none" {
		return "", "", nil
	}
	dir, err := os.MkdirTemp("", "tpucost-bench-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(dir)
	oldBin, newBin, err := buildOldNew(dir, commit)
	if err != nil {
		return "", "", err
	}
	head, _ := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	var r, w strings.Builder
	fmt.Fprintf(&w, "old = %s, new = the working tree at %s; %d runs of each, alternated, after one warm-up run each\n",
		commit, strings.TrimSpace(string(head)), runs)
	for _, c := range oldNewCases() {
		fmt.Fprintf(os.Stderr, "benchtable: old vs new: %s\n", c.what)
		for _, bin := range []string{oldBin, newBin} {
			if _, err := runTimed(bin, c.args, c.samples); err != nil {
				return "", "", err
			}
		}
		var wallR, cpuR, rateR, oldRate, newRate, oldWall, newWall []float64
		var oldS, newS int64
		for i := 0; i < runs; i++ {
			o, err := runTimed(oldBin, c.args, c.samples)
			if err != nil {
				return "", "", err
			}
			n, err := runTimed(newBin, c.args, c.samples)
			if err != nil {
				return "", "", err
			}
			fmt.Fprintf(&w, "%s run %d: old %.3f s wall %.3f s cpu %d samples; new %.3f s wall %.3f s cpu %d samples\n",
				c.what, i+1, o.wall, o.cpu, o.samples, n.wall, n.cpu, n.samples)
			wallR = append(wallR, o.wall/n.wall)
			if c.samples { // CPU per sample: the commits write different samples
				cpuR = append(cpuR, (o.cpu/float64(o.samples))/(n.cpu/float64(n.samples)))
			} else {
				cpuR = append(cpuR, o.cpu/n.cpu)
			}
			oldWall, newWall = append(oldWall, o.wall), append(newWall, n.wall)
			oldS, newS = o.samples, n.samples
			if c.samples {
				or, nr := float64(o.samples)/o.wall, float64(n.samples)/n.wall
				oldRate, newRate = append(oldRate, or), append(newRate, nr)
				rateR = append(rateR, nr/or)
			}
		}
		cmd := "tpucost " + strings.Join(c.args, " ")
		cmd = strings.ReplaceAll(cmd, benchModels, "MODELS")
		if c.samples {
			fmt.Fprintf(&r, "| %s, old → new (samples/s, whole process) | %.0f → %.0f (**%.2f×**; CPU per sample %.2f×) | `%s` |\n",
				c.what, measure.Median(oldRate), measure.Median(newRate), measure.Median(rateR), measure.Median(cpuR), cmd)
			fmt.Fprintf(&r, "|   samples written, old / new | %d / %d | |\n", oldS, newS)
		} else {
			fmt.Fprintf(&r, "| %s, old → new (wall time) | %.2f s → %.2f s (**%.2f×**; CPU %.2f×) | `%s` |\n",
				c.what, measure.Median(oldWall), measure.Median(newWall), measure.Median(wallR), measure.Median(cpuR), cmd)
		}
	}
	fmt.Fprintf(&r, "|   old = %s (before issue 11), new = this tree; MODELS = the 24 models of `gen.BenchmarkGenerate` (dataset/gen); medians of %d alternated runs | | |\n", commit, runs)
	return r.String(), w.String(), nil
}
