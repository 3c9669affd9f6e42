package gym

import (
	"bufio"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestServe drives the protocol: actions, reset, steps to stop, and bad lines that get
// error responses naming their line while the server keeps going; a failed reset leaves
// the running episode as it was.
func TestServe(t *testing.T) {
	in := strings.Join([]string{
		`{"op":"actions"}`,
		`{"op":"step","action":0}`,
		`{"op":"reset","program":"bench:graphsage_tf","seed":1,"max_steps":5,"graph":false}`,
		`not json`,
		``,
		`{"op":"step"}`,
		`{"op":"step","action":99}`,
		`{"op":"step","action":12}`,
		`{"op":"fly"}`,
		`{"op":"step","action":12,"extra":1}`,
		`{"op":"reset","program":"no_such_model"}`,
		`{"op":"step","action":` + itoa(Stop()) + `}`,
		`{"op":"reset","program":"mlp_96x2_b1_train"}`,
	}, "\n") // no final newline: EOF ends the last request
	var out strings.Builder
	if err := Serve(context.Background(), strings.NewReader(in), &out, ServeOptions{Verify: true}); err != nil {
		t.Fatal(err)
	}
	var rs []Response
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	sc.Buffer(nil, 1<<26)
	for sc.Scan() {
		var r Response
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("response %q: %v", sc.Text(), err)
		}
		rs = append(rs, r)
	}
	type want struct {
		ok   bool
		line int
		text string
	}
	wants := []want{
		{true, 1, ""},
		{false, 2, "step before a successful reset"},
		{true, 3, ""},
		{false, 4, "malformed request"},
		{false, 6, `needs an integer "action"`},
		{false, 7, "invalid action: 99"},
		{true, 8, ""},
		{false, 9, `unknown op "fly"`},
		{false, 10, `unknown field "extra"`},
		{false, 11, "no_such_model"},
		{true, 12, ""}, // a failed reset keeps the previous session (it once discarded it)
		{true, 13, ""},
	}
	if len(rs) != len(wants) {
		t.Fatalf("%d responses, want %d:\n%s", len(rs), len(wants), out.String())
	}
	for i, w := range wants {
		r := rs[i]
		if r.OK != w.ok || (!w.ok && (r.Line != w.line || !strings.Contains(r.Error, w.text) || !strings.HasPrefix(r.Error, "line "+itoa(w.line)+": "))) {
			t.Errorf("response %d (line %d): ok %v error %q, want ok %v containing %q", i, w.line, r.OK, r.Error, w.ok, w.text)
		}
	}
	if len(rs[0].Actions) != NumActions() || rs[0].Stop == nil || *rs[0].Stop != Stop() {
		t.Errorf("actions response: %+v", rs[0])
	}
	reset, step := rs[2], rs[6]
	if reset.Observation == nil || reset.Observation.InitialOpCount == 0 || reset.Observation.Graph.Nodes() != 0 || reset.Observation.MaxSteps != 5 {
		t.Fatalf("reset response: %+v", reset.Observation)
	}
	if step.Reward == nil || *step.Reward <= 0 || step.Info == nil || step.Info.ActionName != "cse" || step.Info.Return != *step.Reward || *step.Done {
		t.Fatalf("step response: %+v %+v", step, step.Info)
	}
	if last := rs[11]; last.Observation == nil || last.Observation.Graph.Nodes() == 0 {
		t.Fatalf("a reset without graph:false should send the graph tensors")
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
