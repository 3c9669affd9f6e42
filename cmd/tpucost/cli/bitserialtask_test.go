package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestBitserialTaskBackendFlag: --backend takes sim or cpu, the bitserial task only cpu and
// the compiler tasks only sim; each refusal is one line in the flag-error style.
func TestBitserialTaskBackendFlag(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"gen", "--task", "tile", "--all", "--backend", "gpu", "--out", dir}, `--backend "gpu": want sim or cpu`},
		{[]string{"gen", "--task", "bitserial", "--out", dir}, `--backend "sim": the bitserial task is measured on this machine's processor: want cpu`},
		{[]string{"gen", "--task", "tile", "--all", "--backend", "cpu", "--out", dir}, `--backend "cpu": only --task bitserial is measured on the CPU`},
		{[]string{"gen", "--task", "bitserial", "--backend", "cpu", "--models", "mlp", "--out", dir}, `--models "mlp": does not apply to --task bitserial`},
		{[]string{"gen", "--task", "bitserial", "--backend", "cpu", "--configs", "0", "--out", dir}, `--configs "0": want a positive count`},
		{[]string{"gen", "--task", "bitserial", "--backend", "cpu", "--runs", "2", "--out", dir}, `--runs "2": repeats 2`},
		{[]string{"tune", "--task", "bitserial", "--backend", "sim"}, `--backend "sim": the bitserial task`},
		{[]string{"tune", "--task", "bitserial", "--backend", "cpu", "--top", "0"}, `--top 0`},
		{[]string{"tune", "--task", "bitserial", "--backend", "cpu", "--fit-rounds", "0"}, `--fit-rounds 0: want 1..4`},
		{[]string{"tune", "--task", "bitserial", "--backend", "cpu", "--top", "2", "--fit-rounds", "3"}, `--fit-rounds 3: want 1..2`},
		{[]string{"tune", "mlp", "--fit-rounds", "2"}, `--fit-rounds "2": only --task bitserial takes it`},
		{[]string{"tune", "mlp", "--top", "3"}, `--top "3": only --task bitserial takes it`},
		{[]string{"tune", "--task", "matmul", "--backend", "cpu"}, `--task "matmul": want bitserial`},
		{[]string{"train", "--task", "bitserial", "--data", dir, "--out", dir, "--split", "family"}, `--split "family": want random`},
	} {
		var out, errb bytes.Buffer
		code := MainContext(context.Background(), c.args, nil, &out, &errb)
		msg := strings.TrimSpace(errb.String())
		if code == 0 || !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") {
			t.Errorf("%v: exit %d, stderr %q; want non-zero and one line saying %q", c.args, code, msg, c.want)
		}
	}
}

// TestBitserialTaskEndToEnd: gen measures configs on the CPU into a dataset, train fits
// the learned model, eval --json reports learned and analytical kendall_tau as for the
// other tasks, and tune --json counts its measurements.
func TestBitserialTaskEndToEnd(t *testing.T) {
	dir := t.TempDir()
	data, model := filepath.Join(dir, "data"), filepath.Join(dir, "model")
	run := func(args ...string) []byte {
		t.Helper()
		var out, errb bytes.Buffer
		if code := MainContext(context.Background(), args, nil, &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		return out.Bytes()
	}
	var g struct {
		Configs  int `json:"configs"`
		Rejected int `json:"rejected"`
	}
	if err := json.Unmarshal(run("--json", "gen", "--task", "bitserial", "--backend", "cpu", "--configs", "40", "--runs", "3", "--out", data), &g); err != nil || g.Configs != 40 {
		t.Fatalf("gen: %+v, %v", g, err)
	}
	var in struct {
		Table      string `json:"table"`
		Rows       int    `json:"rows"`
		Backend    string `json:"backend"`
		Provenance struct {
			Machine struct {
				GOARCH string `json:"goarch"`
			} `json:"machine"`
		} `json:"provenance"`
	}
	if err := json.Unmarshal(run("--json", "inspect", data), &in); err != nil || in.Table != "measured-configs" || in.Rows != 40 ||
		in.Backend != "cpu" || in.Provenance.Machine.GOARCH != runtime.GOARCH {
		t.Fatalf("inspect: %+v, %v", in, err)
	}
	run("train", "--task", "bitserial", "--data", data, "--out", model)
	// A truncated copy of the table: inspect and train refuse it in one line naming it.
	bad := filepath.Join(dir, "bad")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"measured-bitserial.arrow", "measured-bitserial.manifest.json"} {
		b, err := os.ReadFile(filepath.Join(data, name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".arrow") {
			b = b[:len(b)-64]
		}
		if err := os.WriteFile(filepath.Join(bad, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"inspect", bad}, {"train", "--task", "bitserial", "--data", bad, "--out", filepath.Join(dir, "m2")}} {
		var out, errb bytes.Buffer
		code := MainContext(context.Background(), args, nil, &out, &errb)
		msg := strings.TrimSuffix(errb.String(), "\n")
		if code == 0 || strings.Contains(msg, "\n") || !strings.Contains(msg, filepath.Join(bad, "measured-bitserial.arrow")+": size") {
			t.Errorf("%v on a truncated table: exit %d, %q; want one line naming the file", args, code, msg)
		}
	}
	var e struct {
		Task    string `json:"task"`
		Samples int    `json:"samples"`
		Learned struct {
			KendallTau *float64 `json:"kendall_tau"`
		} `json:"learned"`
		Analytical struct {
			KendallTau *float64 `json:"kendall_tau"`
		} `json:"analytical"`
	}
	if err := json.Unmarshal(run("--json", "eval", "--model", model), &e); err != nil || e.Task != "bitserial" || e.Samples != 8 ||
		e.Learned.KendallTau == nil || e.Analytical.KendallTau == nil {
		t.Fatalf("eval: %+v, %v", e, err)
	}
	var tr struct {
		Measurements int `json:"measurements"`
		Problems     []struct {
			BestConfig string `json:"best_config"`
		} `json:"problems"`
	}
	if err := json.Unmarshal(run("--json", "tune", "--task", "bitserial", "--backend", "cpu", "--model", model, "--sample", "0", "--top", "1", "--runs", "3"), &tr); err != nil ||
		len(tr.Problems) != 120 || tr.Measurements != 120 {
		t.Fatalf("tune: %d problems, %d measurements, %v", len(tr.Problems), tr.Measurements, err)
	}
}
