package layers

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// pkg is the part of `go list -json` this test reads.
type pkg struct {
	ImportPath string
	Imports    []string
}

// list runs `go list -json ARGS` and decodes its stream of JSON objects.
func list(t *testing.T, args ...string) []pkg {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go command is not on PATH: %v", err)
	}
	cmd := exec.Command(goTool, append([]string{"list", "-json"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestImportsGoDown: no package imports one on a higher floor, and every project package
// has a floor (a new top-level package must be placed).
func TestImportsGoDown(t *testing.T) {
	pkgs := list(t, Module+"/...")
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages; want the whole module", len(pkgs))
	}
	for _, p := range pkgs {
		from := Floor(p.ImportPath)
		if from < 0 {
			t.Errorf("%s is on no floor: add its top-level directory to Floors", p.ImportPath)
			continue
		}
		for _, imp := range p.Imports {
			if to := Floor(imp); to > from {
				t.Errorf("%s (floor %d) imports %s (floor %d): imports go down or sideways", p.ImportPath, from, imp, to)
			}
		}
	}
}

// TestSimulatorStandsBelowTheModel: the hardware's dependencies hold none of the
// features, data, learned model, validation, tuning or the gym (issue 32's check).
func TestSimulatorStandsBelowTheModel(t *testing.T) {
	for _, p := range list(t, "-deps", Module+"/tpusim/...") {
		for _, above := range []string{"features", "dataset", "gnn", "validate", "tune", "gym"} {
			if p.ImportPath == Module+"/"+above || strings.HasPrefix(p.ImportPath, Module+"/"+above+"/") {
				t.Errorf("go list -deps of tpusim lists %s", p.ImportPath)
			}
		}
	}
}

// TestFloor pins the lookup on a few paths, including a prefix that is not a directory
// boundary and a path outside the module.
func TestFloor(t *testing.T) {
	for path, want := range map[string]int{
		Module + "/internal/jsonerr": 0,
		Module + "/internal/measure": 0, // below tpusim, which implements its Backend
		Module + "/compiler/hlo":     1,
		Module + "/zoo":              2,
		Module + "/tpusim/ragged":    3,
		Module + "/nn/reinforce":     6,
		Module + "/cmd/tpucost/cli":  11,
		Module + "/tpusimx":          -1,
		"github.com/other/tpusim":    -1,
	} {
		if got := Floor(path); got != want {
			t.Errorf("Floor(%s) = %d, want %d", path, got, want)
		}
	}
}
