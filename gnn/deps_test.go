package gnn

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoSimulatorOrZooDependency: gnn (and its subpackages) must not simulate, nor build
// models (DESIGN.md: gnn must not simulate; issue 21: generation lives in dataset/gen, and
// datasets record each program's family). `go list -deps ./...` from this package's
// directory lists what gnn's non-test code imports, directly or not.
func TestNoSimulatorOrZooDependency(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	out, err := exec.Command(gobin, "list", "-deps", "./...").Output()
	if err != nil {
		t.Fatalf("go list -deps ./...: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/tpucost/tpucost/tpusim", "github.com/tpucost/tpucost/zoo"} {
			if pkg == banned || strings.HasPrefix(pkg, banned+"/") {
				t.Errorf("gnn depends on %s", pkg)
			}
		}
	}
}
