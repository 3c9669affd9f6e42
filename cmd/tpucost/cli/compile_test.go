package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler"
)

// TestCompilePasses: --passes runs the named simplification passes once each, in order,
// then the compiler passes, and --json reports them with the op counts; --passes none
// runs none; an unknown name is one error line listing the valid ones.
func TestCompilePasses(t *testing.T) {
	out, errs, code := run("compile", "mlp_768x3_b8", "--passes", "algsimp,dce", "--check", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res CompileResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range res.Passes {
		names = append(names, p.Name)
	}
	if want := append([]string{"algsimp", "dce"}, compiler.PassNames()...); !slices.Equal(names, want) {
		t.Fatalf("passes %v, want %v", names, want)
	}
	if res.OpCountBefore <= 0 || res.OpCountAfter > res.OpCountBefore || res.Passes[1].OpCountAfter != res.OpCountAfter {
		t.Errorf("op count %d -> %d, dce left %d", res.OpCountBefore, res.OpCountAfter, res.Passes[1].OpCountAfter)
	}
	for _, field := range []string{`"op_count_before"`, `"op_count_after"`, `"passes"`, `"changed"`} {
		if !strings.Contains(out, field) {
			t.Errorf("--json lacks %s", field)
		}
	}

	out, errs, code = run("compile", "mlp_768x3_b8", "--passes", "none", "--json")
	res = CompileResult{}
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil {
		t.Fatalf("--passes none: exit %d, %v: %s", code, err, errs)
	}
	if len(res.Passes) != len(compiler.PassNames()) || res.OpCountBefore != res.OpCountAfter {
		t.Errorf("--passes none: %d pass runs, op count %d -> %d", len(res.Passes), res.OpCountBefore, res.OpCountAfter)
	}

	out, errs, code = run("compile", "mlp_768x3_b8", "--passes", "cse,nope")
	if code == 0 || out != "" || strings.Count(strings.TrimRight(errs, "\n"), "\n") != 0 ||
		!strings.Contains(errs, `"nope"`) || !strings.Contains(errs, "call-inliner") {
		t.Errorf("--passes cse,nope: exit %d, stdout %.40q, stderr %q", code, out, errs)
	}
}
