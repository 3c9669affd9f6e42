package cli

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGymServePipe drives `tpucost gym serve` through a pipe, one request and one
// response at a time: a reset, a malformed line (an error naming line 2; the server goes
// on), a step, then EOF ends it with exit 0.
func TestGymServePipe(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errb strings.Builder
	code := make(chan int, 1)
	go func() {
		c := Main([]string{"gym", "serve", "--verify"}, inR, outW, &errb)
		outW.Close()
		code <- c
	}()
	resp := bufio.NewReader(outR)
	ask := func(req string) map[string]any {
		t.Helper()
		if _, err := io.WriteString(inW, req+"\n"); err != nil {
			t.Fatal(err)
		}
		line, err := resp.ReadBytes('\n')
		if err != nil {
			t.Fatalf("%s: no response: %v (stderr %s)", req, err, errb.String())
		}
		var r map[string]any
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("%s: response %q: %v", req, line, err)
		}
		return r
	}
	r := ask(`{"op":"reset","program":"mlp_96x2_b1_train","max_steps":4,"graph":false}`)
	if r["ok"] != true || r["observation"].(map[string]any)["initial_op_count"].(float64) <= 0 {
		t.Fatalf("reset: %v", r)
	}
	r = ask(`{"op":"step","action":`)
	if r["ok"] != false || r["line"] != 2.0 || !strings.HasPrefix(r["error"].(string), "line 2: malformed request") {
		t.Fatalf("malformed line: %v", r)
	}
	r = ask(`{"op":"step","action":12}`)
	if r["ok"] != true || r["reward"].(float64) <= 0 || r["done"] != false {
		t.Fatalf("step cse: %v", r)
	}
	inW.Close()
	if c := <-code; c != 0 || errb.Len() != 0 {
		t.Fatalf("exit %d, stderr %q", c, errb.String())
	}
}

// TestGymTrainEval trains a tiny agent and evaluates it on another program with --json;
// evaluating on a training program or its inference variant, a corrupt checkpoint and bad flags are one-line
// errors with a non-zero exit.
func TestGymTrainEval(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "agent")
	if _, errs, code := run("gym", "train", "--agent", dir, "--programs", "mlp_96x2_b1_train", "--iterations", "2", "--samples", "2", "--max-steps", "3"); code != 0 {
		t.Fatalf("train: exit %d: %s", code, errs)
	}
	out, errs, code := run("gym", "eval", "--agent", dir, "--programs", "mlp_lenet300_b32_train", "--budget", "12", "--json")
	if code != 0 {
		t.Fatalf("eval: exit %d: %s", code, errs)
	}
	var rep struct {
		Programs []struct {
			Program        string `json:"program"`
			InitialOpCount int    `json:"initial_op_count"`
			Default        struct {
				OpCount int     `json:"op_count"`
				SimNs   float64 `json:"sim_ns"`
			} `json:"default"`
		} `json:"programs"`
		MaxSteps int `json:"max_steps"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(rep.Programs) != 1 || rep.Programs[0].Default.OpCount >= rep.Programs[0].InitialOpCount || rep.Programs[0].Default.SimNs <= 0 || rep.MaxSteps != 3 {
		t.Fatalf("eval report: %s", out)
	}
	path := filepath.Join(dir, "agent.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"gym", "eval", "--agent", dir, "--programs", "mlp_96x2_b1_train"}, "the agent trained on mlp_96x2_b1_train"},
		// Held out by model variant: the inference graph of the training step is refused.
		{[]string{"gym", "eval", "--agent", dir, "--programs", "mlp_lenet300_b32_train,mlp_96x2_b1"}, "same model variant (mlp_96x2) as mlp_96x2_b1"},
		{[]string{"gym", "train", "--agent", dir, "--samples", "1"}, "--samples"},
		{[]string{"gym", "train", "--agent", dir, "--entropy", "-0.1"}, "--entropy \"-0.1\": want a finite number >= 0 (0: no entropy bonus)"},
		{[]string{"gym", "train", "--agent", dir, "--algo", "ppo2"}, "--algo \"ppo2\": want reinforce, ppo or effect"},
		{[]string{"gym", "train", "--agent", dir, "--epochs", "8"}, "--epochs \"8\": PPO's setting"},
		{[]string{"gym", "eval", "--agent", dir, "--programs", "nope_model"}, "nope_model"},
	} {
		_, errs, code := run(c.args...)
		if code == 0 || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q, want one line containing %q", c.args, code, errs, c.want)
		}
	}
	b[len(b)/2] ^= 0x01
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, errs, code = run("gym", "eval", "--agent", dir, "--programs", "mlp_lenet300_b32_train")
	if code == 0 || !strings.Contains(errs, "corrupt") {
		t.Errorf("corrupt agent: exit %d, stderr %q", code, errs)
	}
}
