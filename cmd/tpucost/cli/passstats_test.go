package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler"
)

// TestCompilePassStatsAndDumpPatterns: compile --pass-stats --json gives every pass run
// of the program's pass log, in order, with name, wall_ns, ops_before and ops_after, op
// counts that chain from run to run and match the program's simplification counts;
// --dump-after takes all and a regular expression; a bad expression is a one-line error.
func TestCompilePassStatsAndDumpPatterns(t *testing.T) {
	out, errs, code := run("compile", "mlp_768x3_b8", "--pass-stats", "--json")
	if code != 0 {
		t.Fatalf("--pass-stats --json: exit %d: %s", code, errs)
	}
	type stat struct {
		Name      string `json:"name"`
		Iteration int    `json:"iteration"`
		WallNS    *int64 `json:"wall_ns"`
		OpsBefore *int   `json:"ops_before"`
		OpsAfter  *int   `json:"ops_after"`
	}
	var res struct {
		OpCountBefore int `json:"op_count_before"`
		OpCountAfter  int `json:"op_count_after"`
		Passes        []struct {
			Name         string `json:"name"`
			OpCountAfter int    `json:"op_count_after"`
			Iteration    int    `json:"iteration"`
		} `json:"passes"`
		PassStats []stat `json:"pass_stats"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	var runs []stat // the runs without the group's
	seen := map[string]bool{}
	for _, p := range res.PassStats {
		if p.WallNS == nil || p.OpsBefore == nil || p.OpsAfter == nil || *p.WallNS < 0 {
			t.Fatalf("pass %s: want wall_ns, ops_before and ops_after", p.Name)
		}
		seen[p.Name] = true
		if p.Name == compiler.SimplifyGroup {
			if *p.OpsBefore != res.OpCountBefore || *p.OpsAfter != res.OpCountAfter {
				t.Errorf("the simplify group: %d -> %d ops, the program reports %d -> %d", *p.OpsBefore, *p.OpsAfter, res.OpCountBefore, res.OpCountAfter)
			}
			continue
		}
		if n := len(runs); n > 0 && *runs[n-1].OpsAfter != *p.OpsBefore {
			t.Errorf("pass %s starts from %d ops, the run before left %d", p.Name, *p.OpsBefore, *runs[n-1].OpsAfter)
		}
		runs = append(runs, p)
	}
	if len(runs) != len(res.Passes) {
		t.Fatalf("%d runs with stats, the pass log has %d", len(runs), len(res.Passes))
	}
	for i, r := range runs {
		if l := res.Passes[i]; l.Name != r.Name || l.Iteration != r.Iteration || l.OpCountAfter != *r.OpsAfter {
			t.Errorf("run %d: stats %s/%d -> %d ops, log %s/%d -> %d", i, r.Name, r.Iteration, *r.OpsAfter, l.Name, l.Iteration, l.OpCountAfter)
		}
	}
	for _, n := range compiler.PassNames() {
		if !seen[n] {
			t.Errorf("pass %s has no stats", n)
		}
	}
	text, _, code := run("compile", "mlp_768x3_b8", "--pass-stats")
	if code != 0 || !strings.Contains(text, "KERNEL") || !strings.Contains(text, "OPS_BEFORE") {
		t.Errorf("--pass-stats text: exit %d, want the kernel table and the pass table:\n%s", code, text)
	}

	all, _, code := run("compile", "mlp_768x3_b8", "--dump-after", "all")
	if code != 0 || strings.Count(all, "// after pass ") != len(compiler.PassNames()) {
		t.Errorf("--dump-after all: exit %d, %d dumps, want %d", code, strings.Count(all, "// after pass "), len(compiler.PassNames()))
	}
	alg, _, code := run("compile", "mlp_768x3_b8", "--dump-after", "alg.*")
	one, _, _ := run("compile", "mlp_768x3_b8", "--dump-after", "algsimp")
	if code != 0 || alg != one || !strings.HasPrefix(alg, "HloModule") {
		t.Errorf("--dump-after 'alg.*': exit %d, want algsimp's dump", code)
	}
	_, errs, code = run("compile", "mlp_768x3_b8", "--dump-after", "(alg")
	if code == 0 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, "--dump-after") {
		t.Errorf("--dump-after '(alg': exit %d, stderr %q: want a one-line error naming the flag", code, errs)
	}
}
