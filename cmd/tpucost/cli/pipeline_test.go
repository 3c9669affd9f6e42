package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler/opt"
)

// TestCompilePipeline: compile runs the XLA-ordered simplification group by default
// (dce twice per iteration) and --pipeline legacy the previous order, both to the same
// op count on graphsage_tf; --pipeline xla is the default spelled out; an unknown name is
// a one-line error listing the registry's names; the help lists every pipeline.
func TestCompilePipeline(t *testing.T) {
	first := func(args ...string) (string, int) {
		out, errs, code := run(append([]string{"compile", graphsage, "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("compile %v: exit %d: %s", args, code, errs)
		}
		var res struct {
			OpCountAfter int `json:"op_count_after"`
			Passes       []struct {
				Name      string `json:"name"`
				Iteration int    `json:"iteration"`
			} `json:"passes"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		var ns []string
		for _, p := range res.Passes {
			if p.Iteration == 1 {
				ns = append(ns, p.Name)
			}
		}
		return strings.Join(ns, ","), res.OpCountAfter
	}
	def, defOps := first()
	xla, xlaOps := first("--pipeline", "xla")
	legacy, legacyOps := first("--pipeline", "legacy")
	if def != strings.Join(opt.DefaultNames(), ",") || strings.Count(def, "dce") != 2 || xla != def {
		t.Errorf("default group's first iteration %s (--pipeline xla: %s), want %v", def, xla, opt.DefaultNames())
	}
	if strings.Count(legacy, "dce") != 1 || strings.Contains(legacy, "sort-simplifier") {
		t.Errorf("--pipeline legacy's first iteration %s, want the 14 simplifiers", legacy)
	}
	if defOps != legacyOps || defOps != xlaOps {
		t.Errorf("op count after the group: default %d, xla %d, legacy %d: want equal", defOps, xlaOps, legacyOps)
	}
	_, errs, code := run("compile", graphsage, "--pipeline", "default")
	if code == 0 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, `--pipeline "default": want one of xla, legacy`) {
		t.Errorf("--pipeline default: exit %d, stderr %q: want a one-line error listing xla, legacy", code, errs)
	}
	help, _, _ := run("compile", "--help")
	for _, p := range opt.SimplifyPipelineNames() {
		if !strings.Contains(help, p+" (") {
			t.Errorf("compile --help does not list the %s pipeline", p)
		}
	}
}
