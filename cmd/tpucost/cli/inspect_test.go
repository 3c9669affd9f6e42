package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/features"
)

// runInspectCmd runs `tpucost ARGS` with the inspect command registered (through the
// root command if it has it, else a stand-in root with the global flags), returning
// stdout, stderr and the exit code as Main does.
func runInspectCmd(args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	ios := IO{In: strings.NewReader(""), Out: &out, Err: &errb}
	for _, c := range NewRootCmd(ios).Commands() {
		if c.Name() == "inspect" {
			code := Main(args, strings.NewReader(""), &out, &errb)
			return out.String(), errb.String(), code
		}
	}
	g := &Globals{}
	root := &cobra.Command{Use: "tpucost", SilenceErrors: true, SilenceUsage: true}
	root.SetOut(&out)
	root.SetErr(&errb)
	root.PersistentFlags().BoolVar(&g.JSON, "json", false, "machine-readable JSON output on stdout")
	root.AddCommand(NewCmdInspect(ios, g))
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		errb.WriteString("tpucost: " + oneLine(err) + "\n")
		return out.String(), errb.String(), 1
	}
	return out.String(), errb.String(), 0
}

// writeTestDataset writes a one-part dataset of three kernels (samples 2, 1, 3) in dir.
func writeTestDataset(t *testing.T, dir string, format dataset.Format) string {
	t.Helper()
	prov := dataset.Provenance{SchemaVersion: dataset.SchemaVersion, FeatureSchema: features.CurrentSchema(), SimulatorVersion: "tpusim-test",
		Chip: "v4", Seed: 3, Task: dataset.TaskTile, ConfigsPerKernel: 3, Models: []string{"a", "b"}, ShardCount: 1}
	w, err := dataset.NewWriter(dataset.WriterOptions{Dir: dir, Format: format, Provenance: prov})
	if err != nil {
		t.Fatal(err)
	}
	row := func(program string, unit int64, key string, runtimes ...float64) dataset.Row {
		r := dataset.Row{Program: program, Unit: unit, Task: dataset.TaskTile, KernelKey: key, KernelName: "fusion", Kind: "kLoop",
			Graph: features.Graph{Opcodes: []int32{1, 19}, NodeFeats: make([]float32, 2*features.NodeWidth),
				EdgeSrc: []int32{0}, EdgeDst: []int32{1}, KernelFeats: make([]float32, features.KernelWidth)}}
		for _, t := range runtimes {
			r.Configs = append(r.Configs, "tile=8x128")
			r.ConfigFeats = append(r.ConfigFeats, make([]float32, features.ConfigWidth))
			r.RuntimesNs = append(r.RuntimesNs, t)
			r.AnalyticalNs = append(r.AnalyticalNs, t)
		}
		return r
	}
	rows := []dataset.Row{row("a", 0, "k1", 100, 300), row("a", 0, "k2", 200), row("b", 1, "k3", 50, 60, 70)}
	occ := []dataset.Occurrence{{Unit: 0, Program: "a", KernelKey: "k1", Count: 1}, {Unit: 0, Program: "a", KernelKey: "k2", Count: 2},
		{Unit: 1, Program: "b", KernelKey: "k3", Count: 1}, {Unit: 1, Program: "b", KernelKey: "k1", Count: 1}}
	if err := w.WritePart(0, 1, rows, occ); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil { // releases the directory's lock, which every writer respects
		t.Fatal(err)
	}
	name, _ := dataset.PartFileNames(dataset.TaskTile, 0, 1, 0, format)
	return filepath.Join(dir, name)
}

func TestInspectCommand(t *testing.T) {
	for _, format := range []dataset.Format{dataset.FormatArrow, dataset.FormatParquet} {
		t.Run(string(format), func(t *testing.T) {
			dir := t.TempDir()
			rowsFile := writeTestDataset(t, dir, format)
			out, errs, code := runInspectCmd("inspect", dir, "--json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			var s struct {
				Rows, Kernels, Programs, Samples int
				Tasks                            []string
				RuntimeNs                        struct {
					Min    float64 `json:"min_ns"`
					Median float64 `json:"median_ns"`
					Max    float64 `json:"max_ns"`
				} `json:"runtime_ns"`
				SchemaVersion  int `json:"schema_version"`
				FeatureVersion int `json:"feature_version"`
				Provenance     struct{ Chip string }
				Shards         []struct{ Files int }
			}
			if err := json.Unmarshal([]byte(out), &s); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			// Runtimes {50, 60, 70, 100, 200, 300}: median (70+100)/2.
			if s.Rows != 3 || s.Kernels != 3 || s.Programs != 2 || s.Samples != 6 || len(s.Tasks) != 1 || s.Tasks[0] != "tile" ||
				s.RuntimeNs.Min != 50 || s.RuntimeNs.Median != 85 || s.RuntimeNs.Max != 300 || s.SchemaVersion != dataset.SchemaVersion ||
				s.FeatureVersion != features.SchemaVersion || s.Provenance.Chip != "v4" || len(s.Shards) != 1 || s.Shards[0].Files != 1 {
				t.Errorf("summary %+v", s)
			}
			out, errs, code = runInspectCmd("inspect", dir)
			if code != 0 || !strings.HasPrefix(out, "dir") || !strings.Contains(out, "samples") || !strings.Contains(out, filepath.Base(rowsFile)) {
				t.Errorf("table (exit %d, %s):\n%s", code, errs, out)
			}

			// One byte flipped in the middle of the rows file (its manifest's SHA-256 no
			// longer matches), then the file truncated: one line naming it, non-zero exit.
			b, err := os.ReadFile(rowsFile)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/2] ^= 1
			for _, damaged := range [][]byte{b, b[:len(b)/2]} {
				if err := os.WriteFile(rowsFile, damaged, 0o644); err != nil {
					t.Fatal(err)
				}
				out, errs, code = runInspectCmd("inspect", dir, "--json")
				if code == 0 || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, rowsFile) {
					t.Errorf("corrupt dataset: exit %d, stdout %q, stderr %q", code, out, errs)
				}
			}
		})
	}
	if _, errs, code := runInspectCmd("inspect", t.TempDir()); code == 0 || !strings.Contains(errs, "no complete dataset files") {
		t.Errorf("empty directory: exit %d, %s", code, errs)
	}
}
