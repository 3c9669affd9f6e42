package tpusim

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler"
)

// TestSimRequest: the program is compiled for the chip with the request's fusion rule and
// staging; a collective nothing sizes is warned about once, --chips sizes it; a negative
// --chips is one error.
func TestSimRequest(t *testing.T) {
	c := preset(t, "v4")
	const src = "HloModule m\n\nadd {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n\n" +
		"ENTRY main {\n  p = f32[1024,1024] parameter(0)\n  ROOT ar = f32[1024,1024] all-reduce(p), replica_groups={}, to_apply=add\n}\n"
	var got compiler.Options
	compile := func(name, shapes, config string, o compiler.Options) (*compiler.Program, error) {
		if name != "m.hlo" || shapes != "d0=4" || config != "" {
			t.Errorf("Compile(%q, %q, %q): want the request's source, shapes and config", name, shapes, config)
		}
		got = o
		return compiler.Compile(parseHLO(t, src), nil, o)
	}
	var warn bytes.Buffer
	r, err := SimRequest{Src: "m.hlo", Shapes: "d0=4", Fusion: compiler.FusionPartition, Staging: compiler.StagingAuto, Compile: compile, Warn: &warn}.Simulate(c)
	if err != nil {
		t.Fatal(err)
	}
	if got.Target != c.Target || got.Fusion != compiler.FusionPartition || got.Staging != compiler.StagingAuto {
		t.Errorf("compiled with %+v: want the chip's target, partition fusion, auto staging", got)
	}
	if r.UnsizedCollectives != 1 || strings.Count(warn.String(), "WARNING: 1 collective(s) name no replica group") != 1 {
		t.Errorf("unsized %d, warning %q: want one collective and one warning", r.UnsizedCollectives, warn.String())
	}
	warn.Reset()
	if r, err = (SimRequest{Src: "m.hlo", Shapes: "d0=4", Chips: 4, Compile: compile, Warn: &warn}).Simulate(c); err != nil || r.Chips != 4 || warn.Len() != 0 {
		t.Errorf("--chips 4: chips %d, warning %q, %v: want 4 chips and no warning", r.Chips, warn.String(), err)
	}
	if _, err := (SimRequest{Src: "m.hlo", Shapes: "d0=4", Chips: -1, Compile: compile}).Simulate(c); err == nil || err.Error() != "--chips \"-1\": want an integer >= 0" {
		t.Errorf("--chips -1: %v, want one error naming the flag", err)
	}
}
