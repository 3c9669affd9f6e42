package cli

import (
	"bufio"
	"encoding/json"
	"io"
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
