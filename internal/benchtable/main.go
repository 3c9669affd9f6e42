// Command benchtable runs tpucost's benchmarks (`make bench`) and writes one table of the
// numbers that matter — simulator evaluations/s, dataset samples/s with 1 and 2 workers,
// training kernels/s, inference predictions/s, compile+simulate time of the largest zoo
// model and of a 500k-node graph, peak memory (of a whole `gen --task fusion --all` run
// too), and the old-vs-new comparison of whole
// tpucost processes (dataset generation and tuning, the binary of the commit before
// issue 11 against this tree's, side by side) — to BENCHMARKS.md, and into
// docs/benchmarks.md between the markers <!-- bench:start --> and <!-- bench:end -->.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// run is one `go test -bench` invocation.
type run struct {
	pkg, bench, benchtime string
}

// runs lists the benchmarks `make bench` runs, with iteration counts that keep the whole
// run to a few minutes on 2 cores.
func runs() []run {
	return []run{
		{"./tpusim", "Simulate(Kernel|Choice)$", "200000x"},
		{"./tpusim", "LargestZooModel|Synthetic500k", "1x"},
		{"./dataset/gen", "Generate", "2x"},
		{"./dataset", "ReadRows1M", "1x"},
		{"./gnn", "TrainStep|Predict", "20x"},
		{"./gnn", "TrainEpoch", "1x"},
		{"./gnn", "TpuGraphsTileEpoch", "1x"},
	}
}

// result is one benchmark line: name and metrics by unit. A name segment
// backend=openblas or backend=go (the training benchmarks) is removed from name and kept
// in backend.
type result struct {
	name, backend string
	metrics       map[string]float64
	order         []string
}

var backendRE = regexp.MustCompile(`/backend=([a-z]+)`)

var lineRE = regexp.MustCompile(`^(Benchmark\S+?)(-\d+)?\s+(\d+)\s+(.*)$`)

func parse(out string) []result {
	var rs []result
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		m := lineRE.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		r := result{name: strings.TrimPrefix(m[1], "Benchmark"), metrics: map[string]float64{}}
		if b := backendRE.FindStringSubmatch(r.name); b != nil {
			r.name, r.backend = strings.Replace(r.name, b[0], "", 1), b[1]
		}
		f := strings.Fields(m[4])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			r.metrics[f[i+1]] = v
			r.order = append(r.order, f[i+1])
		}
		rs = append(rs, r)
	}
	return rs
}

func find(rs []result, name, unit string) (float64, bool) {
	for _, r := range rs {
		if r.name == name {
			v, ok := r.metrics[unit]
			return v, ok
		}
	}
	return 0, false
}

func machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				cpu = strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
				break
			}
		}
	}
	return fmt.Sprintf("%s, %d cores, %s/%s, %s, %s", cpu, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), time.Now().UTC().Format("2006-01-02"))
}

func main() {
	var all []result
	var raw bytes.Buffer
	for _, r := range runs() {
		args := []string{"test", "-run", "^$", "-bench", r.bench, "-benchtime", r.benchtime, r.pkg}
		fmt.Fprintf(os.Stderr, "benchtable: go %s\n", strings.Join(args, " "))
		cmd := exec.Command("go", args...)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		raw.Write(out)
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchtable: %s: %v\n%s", r.pkg, err, out)
			os.Exit(1)
		}
		all = append(all, parse(string(out))...)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Machine: %s. One run of `make bench`; rows that compare two settings were measured in the same run.\n\n", machine())
	fmt.Fprintf(&b, "| what | value | benchmark |\n|---|---|---|\n")
	row := func(what, format, name, unit string, scale float64) {
		if v, ok := find(all, name, unit); ok {
			fmt.Fprintf(&b, "| %s | "+format+" | `%s` |\n", what, v*scale, name)
		}
	}
	row("simulator evaluations per second (one kernel, varying planned tiles)", "%.0f", "SimulateChoice", "evals/s", 1)
	row("  planning each tile first (SimulateKernel)", "%.0f", "SimulateKernel", "evals/s", 1)
	row("compile + simulate the largest zoo model (default configs)", "%.0f ms", "LargestZooModel", "ns/op", 1e-6)
	row("  peak heap", "%.0f MiB", "LargestZooModel", "peak-heap-MiB", 1)
	row("compile + simulate a 500,000-node graph (default configs)", "%.1f s", "Synthetic500k", "ns/op", 1e-9)
	row("  peak heap", "%.0f MiB", "Synthetic500k", "peak-heap-MiB", 1)
	for _, task := range []string{"tile", "fusion"} {
		row("dataset generation, "+task+", 1 worker on 1 core (samples/s)", "%.0f", "Generate/"+task+"/workers=1/cpus=1", "samples/s", 1)
		row("dataset generation, "+task+", 1 worker (samples/s)", "%.0f", "Generate/"+task+"/workers=1", "samples/s", 1)
		row("dataset generation, "+task+", 2 workers (samples/s)", "%.0f", "Generate/"+task+"/workers=2", "samples/s", 1)
		if one, ok := find(all, "Generate/"+task+"/workers=1", "samples/s"); ok {
			if two, ok := find(all, "Generate/"+task+"/workers=2", "samples/s"); ok {
				fmt.Fprintf(&b, "|   2 workers / 1 worker | %.2f× | |\n", two/one)
			}
		}
		if one, ok := find(all, "Generate/"+task+"/workers=1/cpus=1", "samples/s"); ok {
			if two, ok := find(all, "Generate/"+task+"/workers=2", "samples/s"); ok {
				fmt.Fprintf(&b, "|   2 workers / 1 worker on 1 core | %.2f× | |\n", two/one)
			}
		}
		row("  bytes per sample on disk ("+task+", Arrow + zstd)", "%.0f B", "Generate/"+task+"/workers=2", "bytes/sample", 1)
	}
	row("dataset read, 1M samples, Arrow (samples/s)", "%.0f", "ReadRows1M/arrow/cold", "samples/s", 1)
	row("  peak heap while reading", "%.0f MiB", "ReadRows1M/arrow/cold", "peak-heap-MiB", 1)
	for _, r := range all {
		if r.backend != "" {
			fmt.Fprintf(&b, "| training benchmarks' BLAS backend | %s | `%s` |\n", r.backend, r.name)
			break
		}
	}
	row("training, rank-hinge (kernels/s)", "%.0f", "TrainStep/rank-hinge/bucket=true", "kernels/s", 1)
	row("  share of the machine's float32 peak", "%.1f%%", "TrainStep/rank-hinge/bucket=true", "%peak", 1)
	row("inference (kernel-config predictions/s)", "%.0f", "Predict/bucket=true", "predictions/s", 1)
	row("training epoch over 1M streamed samples: peak heap", "%.0f MiB", "TrainEpoch/samples=1000000", "peak-heap-MiB", 1)
	row("  peak resident set", "%.0f MiB", "TrainEpoch/samples=1000000", "maxrss-MiB", 1)
	row("TpuGraphs tile collection: one epoch over its train split (5,709 kernels; synthetic files of its shape)", "%.1f s", "TpuGraphsTileEpoch", "s/tile-train-epoch", 1)
	memRow, memRaw, err := genMemory()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable: generation memory:", err)
		os.Exit(1)
	}
	b.WriteString(memRow)
	oldNewRows, oldNewRaw, err := oldNew(5)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable: old vs new:", err)
		os.Exit(1)
	}
	b.WriteString(oldNewRows)
	table := b.String()

	fmt.Print(table)
	full := "# Benchmarks\n\n" + table + "\n## All benchmark lines\n\n```\n" + raw.String() + "```\n"
	full += "\n## Peak memory of a whole generation run\n\n```\n" + memRaw + "```\n"
	if oldNewRaw != "" {
		full += "\n## Old vs new runs (whole processes)\n\n```\n" + oldNewRaw + "```\n"
	}
	if err := os.WriteFile("BENCHMARKS.md", []byte(full), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	if err := writeBenchDoc(benchDoc, table); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

// benchDoc is the page whose table `make bench` rewrites, between benchStart and benchEnd.
const (
	benchDoc   = "docs/benchmarks.md"
	benchStart = "<!-- bench:start -->"
	benchEnd   = "<!-- bench:end -->"
)

// writeBenchDoc replaces what lies between the bench markers of the file at path by table.
// A missing file or missing markers is an error naming the file: the table has one home.
func writeBenchDoc(path, table string) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s, err := spliceTable(string(doc), table)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, []byte(s), 0o644)
}

// spliceTable returns doc with the text between its bench markers replaced by table.
func spliceTable(doc, table string) (string, error) {
	i, j := strings.Index(doc, benchStart), strings.Index(doc, benchEnd)
	if i < 0 || j < i {
		return "", fmt.Errorf("no %s ... %s markers", benchStart, benchEnd)
	}
	return doc[:i+len(benchStart)] + "\n" + table + doc[j:], nil
}
