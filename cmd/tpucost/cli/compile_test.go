package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler"
)

// listRuns is the pass log of compiler.Passes when the simplify group runs sims once each.
func listRuns(sims ...string) []string {
	var out []string
	for _, p := range compiler.Passes() {
		if p.Name == compiler.SimplifyGroup {
			out = append(out, sims...)
		} else {
			out = append(out, p.Name)
		}
	}
	return out
}

// TestCompilePasses: --passes runs the named simplification passes once each, in order,
// in place of the simplify group, and --json reports every pass run with the op counts;
// --passes none runs none; an unknown name is one error line listing the valid ones.
func TestCompilePasses(t *testing.T) {
	out, errs, code := run("compile", "mlp_768x3_b8", "--passes", "algsimp,dce", "--check", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res compiler.CompileResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range res.Passes {
		names = append(names, p.Name)
	}
	want := listRuns("algsimp", "dce")
	if !slices.Equal(names, want) {
		t.Fatalf("passes %v, want %v", names, want)
	}
	dce := res.Passes[slices.Index(want, "dce")]
	if res.OpCountBefore <= 0 || res.OpCountAfter > res.OpCountBefore || dce.OpCountAfter != res.OpCountAfter {
		t.Errorf("op count %d -> %d, dce left %d", res.OpCountBefore, res.OpCountAfter, dce.OpCountAfter)
	}
	for _, field := range []string{`"op_count_before"`, `"op_count_after"`, `"passes"`, `"changed"`} {
		if !strings.Contains(out, field) {
			t.Errorf("--json lacks %s", field)
		}
	}

	out, errs, code = run("compile", "mlp_768x3_b8", "--passes", "none", "--json")
	res = compiler.CompileResult{}
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil {
		t.Fatalf("--passes none: exit %d, %v: %s", code, err, errs)
	}
	if len(res.Passes) != len(listRuns()) || res.OpCountBefore != res.OpCountAfter {
		t.Errorf("--passes none: %d pass runs, op count %d -> %d", len(res.Passes), res.OpCountBefore, res.OpCountAfter)
	}

	out, errs, code = run("compile", "mlp_768x3_b8", "--passes", "cse,nope")
	if code == 0 || out != "" || strings.Count(strings.TrimRight(errs, "\n"), "\n") != 0 ||
		!strings.Contains(errs, `"nope"`) || !strings.Contains(errs, "call-inliner") {
		t.Errorf("--passes cse,nope: exit %d, stdout %.40q, stderr %q", code, out, errs)
	}
}
