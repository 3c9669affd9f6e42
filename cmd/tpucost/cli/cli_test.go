package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/zoo"
)

// run executes the command line and returns stdout, stderr and the exit code.
func run(args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	code := Main(args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

const graphsage = "../../../compiler/hlo/testdata/graphsage_tf.hlo"

func TestZooList(t *testing.T) {
	out, errs, code := run("zoo", "list", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var entries []zoo.ListEntry
	if err := json.Unmarshal([]byte(out), &entries); err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(zoo.All()) {
		t.Errorf("%d entries, zoo has %d models", len(entries), len(zoo.All()))
	}
	for _, e := range entries {
		if e.Nodes <= 0 || e.Family == "" || (e.Kind != "inference" && e.Kind != "training") {
			t.Errorf("bad entry %+v", e)
		}
	}
	out, _, _ = run("zoo", "list")
	if !strings.HasPrefix(out, "NAME") {
		t.Errorf("table output starts %.20q", out)
	}
}

// TestSimEveryModelEveryPreset is the foundation's acceptance check: sim works on every
// zoo model and on the real XLA dump, for every preset, with JSON holding total_ns and
// kernels.
func TestSimEveryModelEveryPreset(t *testing.T) {
	srcs := []string{graphsage}
	for _, m := range zoo.All() {
		srcs = append(srcs, m.Name)
	}
	for _, chip := range tpusim.PresetNames() {
		for _, src := range srcs {
			t.Run(chip+"/"+filepath.Base(src), func(t *testing.T) {
				t.Parallel()
				out, errs, code := run("sim", src, "--chip", chip, "--json")
				if code != 0 {
					t.Fatalf("exit %d: %s", code, errs)
				}
				var r struct {
					TotalNs *float64          `json:"total_ns"`
					Kernels []json.RawMessage `json:"kernels"`
				}
				if err := json.Unmarshal([]byte(out), &r); err != nil {
					t.Fatal(err)
				}
				if r.TotalNs == nil || *r.TotalNs <= 0 || len(r.Kernels) == 0 {
					t.Errorf("total_ns %v, %d kernels", r.TotalNs, len(r.Kernels))
				}
			})
		}
	}
}

func TestCompileConfigRoundTrip(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cfg.json")
	out1, errs, code := run("compile", "mlp_768x3_b8", "--out", cfg, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	out2, errs, code := run("compile", "mlp_768x3_b8", "--config", cfg, "--json")
	if code != 0 {
		t.Fatalf("with its own config: exit %d: %s", code, errs)
	}
	if out1 != out2 {
		t.Error("compiling with the effective config changed the kernels")
	}
	s1, _, _ := run("sim", "mlp_768x3_b8", "--json")
	s2, _, _ := run("sim", "mlp_768x3_b8", "--config", cfg, "--json")
	if s1 != s2 {
		t.Error("sim with the effective config differs from the default")
	}
	out, _, code := run("compile", "mlp_768x3_b8", "--dump-after", "fusion")
	if code != 0 || !strings.Contains(out, "fusion(") || !strings.HasPrefix(out, "HloModule") {
		t.Errorf("--dump-after fusion: exit %d, %.60q", code, out)
	}
	// A simplification pass is a pass of the one list: its dump has no kernels yet.
	out, _, code = run("compile", "mlp_768x3_b8", "--dump-after", "algsimp")
	if code != 0 || strings.Contains(out, "fusion(") || !strings.HasPrefix(out, "HloModule") {
		t.Errorf("--dump-after algsimp: exit %d, %.60q", code, out)
	}
	// With --json the dump is a field of the one JSON document (it was printed as text).
	out, _, code = run("compile", "mlp_768x3_b8", "--dump-after", "fusion", "--json")
	var res compiler.CompileResult
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || res.DumpAfter != "fusion" ||
		!strings.HasPrefix(res.HLO, "HloModule") || len(res.Kernels) == 0 {
		t.Errorf("--dump-after fusion --json: exit %d, %v, %.60q", code, err, out)
	}
}

func TestErrorsAreOneLine(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.hlo")
	os.WriteFile(bad, []byte("HloModule m\n\nENTRY e {\n  ROOT x = f32[2] add(f32[2] y, f32[2] y)\n}\n"), 0o644)
	badCfg := filepath.Join(dir, "cfg.json")
	os.WriteFile(badCfg, []byte(`{"layout": {"no.such.node": [1,0]}}`), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sim", "no_such_model"}, "no model named"},
		{[]string{"sim", bad}, "bad.hlo:4:"},
		{[]string{"sim", filepath.Join(dir, "missing.hlo")}, "missing.hlo"},
		{[]string{"sim", "mlp_768x3_b8", "--chip", "v9"}, "unknown chip"},
		{[]string{"sim", "mlp_768x3_b8", "--config", badCfg}, "no.such.node"},
		{[]string{"compile", "mlp_768x3_b8", "--dump-after", "nope"}, "no such pass"},
		{[]string{"sim"}, "expected one HLO file or zoo model name"},
	} {
		out, errs, code := run(tc.args...)
		if code == 0 {
			t.Errorf("%v: exit 0", tc.args)
			continue
		}
		if out != "" {
			t.Errorf("%v: wrote to stdout on error: %.60q", tc.args, out)
		}
		if strings.Count(strings.TrimRight(errs, "\n"), "\n") != 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: stderr %q, want one line mentioning %q", tc.args, errs, tc.want)
		}
	}
}

// TestSimLoopJSON: sim --json lists a loop's kernels under it with its trip count, and
// --chips sets the size of a collective without replica groups.
func TestSimLoopJSON(t *testing.T) {
	src := filepath.Join("testdata", "loop_allreduce.hlo")
	out, errs, code := run("sim", src, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	type entry struct {
		Name      string  `json:"name"`
		Control   string  `json:"control"`
		TripCount *int64  `json:"trip_count"`
		GroupSize int     `json:"group_size"`
		SimNs     float64 `json:"sim_ns"`
		Kernels   []entry `json:"kernels"`
	}
	var r struct {
		Chips   int     `json:"chips"`
		Kernels []entry `json:"kernels"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Kernels) != 1 || r.Kernels[0].Control != "while" || r.Kernels[0].TripCount == nil || *r.Kernels[0].TripCount != 6 {
		t.Fatalf("kernels = %+v, want one while with trip_count 6", r.Kernels)
	}
	var coll *entry
	for i, e := range r.Kernels[0].Kernels {
		if e.Control == "collective" {
			coll = &r.Kernels[0].Kernels[i]
		}
	}
	if r.Chips != 4 || coll == nil || coll.GroupSize != 4 {
		t.Fatalf("chips %d, collective %+v: want the all-reduce over the module's 4 replicas", r.Chips, coll)
	}
	out8, errs, code := run("sim", src, "--json", "--chips", "8")
	if code != 0 {
		t.Fatalf("--chips 8: exit %d: %s", code, errs)
	}
	if !strings.Contains(out8, `"group_size": 8`) {
		t.Errorf("--chips 8 did not change the group: %s", out8)
	}
	if _, errs, code := run("sim", src, "--chips", "-1"); code == 0 || !strings.Contains(errs, "--chips") {
		t.Errorf("--chips -1: exit %d, %q", code, errs)
	}
}
