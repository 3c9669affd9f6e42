package hlo

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// meshDeviceIDsSrc is testdata/real_more/mesh_all_reduce.hlo's module with the mesh in
// the form XLA prints a mesh of reordered devices (hlo_sharding's Mesh::ToString:
// "mesh['x'=2,'y'=2], device_ids=(0,2,1,3)"), in replica groups and in a named sharding.
const meshDeviceIDsSrc = `HloModule main, replica_count=4

%region_add (Arg_0: f32[], Arg_1: f32[]) -> f32[] {
  %Arg_0 = f32[] parameter(0)
  %Arg_1 = f32[] parameter(1)
  ROOT %add = f32[] add(%Arg_0, %Arg_1)
}

ENTRY %main.mesh_axes (Arg_0.1: f32[128,32]) -> f32[128,32] {
  %Arg_0.1 = f32[128,32] parameter(0), sharding={mesh['x'=2,'y'=2], device_ids=(0,2,1,3), [{'x'}, {}]}
  %ar.list = f32[128,32] all-reduce(%Arg_0.1), replica_groups=mesh['axis_0'=2,'axis_1'=2], device_ids=(3,2,1,0) {'axis_1'}, to_apply=%region_add
  ROOT %ar.iota = f32[128,32] all-reduce(%ar.list), replica_groups=mesh['axis_0'=2,'axis_1'=2],  device_ids=([2,2]T(1,0)) {'axis_0'}, channel_id=1, to_apply=%region_add
}
`

// TestMeshDeviceIDsOneAttribute: a mesh's ", device_ids=(...)" belongs to the mesh's
// attribute value, as XLA's parser reads it (ParseMesh looks ahead for "device_ids"
// after the comma), not a separate attribute; the module round-trips.
func TestMeshDeviceIDsOneAttribute(t *testing.T) {
	m, err := Parse("mesh.hlo", []byte(meshDeviceIDsSrc))
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(m); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"ar.list": "mesh['axis_0'=2,'axis_1'=2], device_ids=(3,2,1,0) {'axis_1'}",
		"ar.iota": "mesh['axis_0'=2,'axis_1'=2], device_ids=([2,2]T(1,0)) {'axis_0'}",
	} {
		in := findIn(t, m.Entry, name)
		var keys []string
		for _, a := range in.Extra {
			keys = append(keys, a.Key)
		}
		if v, _ := in.ExtraAttr("replica_groups"); v != want || slices.Contains(keys, "device_ids") {
			t.Errorf("%s: replica_groups = %q, attributes %v; want %q and no device_ids attribute", name, v, keys, want)
		}
	}
	if ar := findIn(t, m.Entry, "ar.iota"); ar.ToApply == nil {
		t.Errorf("ar.iota lost to_apply after the mesh")
	}
	text := m.String()
	m2, err := Parse("printed.hlo", []byte(text))
	if err != nil {
		t.Fatalf("re-parse: %v\n%s", err, text)
	}
	if err := ModulesEqual(m, m2); err != nil {
		t.Error(err)
	}
}

// TestAnonNamesAsXLA: nested instructions are named by a module-wide uniquer, as XLA's
// parser's name_uniquer_ does (a name written in an earlier computation is avoided); a
// later instruction written with a generated name in another computation is legal (as
// in XLA), in the same computation a duplicate XLA rejects too ("instruction already
// exists"), and a reference to a generated name resolves.
func TestAnonNamesAsXLA(t *testing.T) {
	const head = "HloModule m\n\n"
	// An explicit negate.anon in an earlier computation: the nested negate of the entry
	// is negate.anon.1 (XLA: the uniquer has seen negate.anon).
	m, err := Parse("a.hlo", []byte(head+"f {\n  negate.anon = f32[] parameter(0)\n  ROOT r = f32[] negate(negate.anon)\n}\n\n"+
		"ENTRY e {\n  x = f32[] parameter(0)\n  ROOT c = f32[] call(negate(x)), to_apply=f\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if op := m.Entry.Root.Operands[0]; op.Name != "negate.anon.1" {
		t.Errorf("nested negate after an explicit negate.anon elsewhere = %s, want negate.anon.1", op.Name)
	}
	// The generated name first, then written in another computation: legal.
	if _, err := Parse("b.hlo", []byte(head+"f {\n  p = f32[] parameter(0)\n  ROOT r = f32[] add(negate(p), p)\n}\n\n"+
		"ENTRY e {\n  x = f32[] parameter(0)\n  negate.anon = f32[] negate(x)\n  ROOT c = f32[] call(negate.anon), to_apply=f\n}\n")); err != nil {
		t.Errorf("generated name reused in another computation: %v", err)
	}
	// A reference to the generated name in the same computation resolves.
	if _, err := Parse("c.hlo", []byte(head+"ENTRY e {\n  x = f32[] parameter(0)\n  a = f32[] add(negate(x), x)\n  ROOT r = f32[] add(negate.anon, a)\n}\n")); err != nil {
		t.Errorf("reference to a generated name: %v", err)
	}
	// Written again in the same computation: XLA rejects it too.
	_, err = Parse("d.hlo", []byte(head+"ENTRY e {\n  x = f32[] parameter(0)\n  a = f32[] add(negate(x), x)\n  negate.anon = f32[] negate(a)\n  ROOT r = f32[] add(negate.anon, x)\n}\n"))
	const want = `d.hlo:6:3: duplicate instruction name "negate.anon" in computation "e": the name of the nested instruction at 5:17 (XLA rejects this too: name it otherwise)`
	if err == nil || err.Error() != want {
		t.Errorf("generated name written again in its computation: err = %v, want %s", err, want)
	}
}

// TestModuleWrapNamesFile: an error found after import names the file and the line:col
// of the instruction it is about (At), else of the module's header, on one line, and
// stays in the error chain; a module built in memory keeps "name: msg".
func TestModuleWrapNamesFile(t *testing.T) {
	m, err := Parse("w.hlo", []byte("\n\nHloModule w\n\nENTRY e {\n  x = f32[4] parameter(0)\n  ROOT   y = f32[4] negate(x)\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Line != 3 || m.Col != 1 {
		t.Errorf("header at %d:%d, want 3:1", m.Line, m.Col)
	}
	y := m.Entry.Root
	if y.Line != 7 || y.Col != 10 {
		t.Errorf("y at %d:%d, want 7:10", y.Line, y.Col)
	}
	if c := m.Clone(); c.File != "w.hlo" || c.Entry.Root.Line != 7 {
		t.Errorf("clone lost the positions: %q, line %d", c.File, c.Entry.Root.Line)
	}
	base := errors.New("bad")
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("pass p: %w", At(y, fmt.Errorf("y: %w", base))), "w.hlo:7:10: pass p: y: bad"},
		{base, "w.hlo:3:1: bad"},
		{errors.Join(errors.New("first"), At(y, base)), "w.hlo:7:10: first; bad"},
		{AtPos(6, 29, base), "w.hlo:6:29: bad"},
	} {
		got := m.Wrap(c.err)
		if got.Error() != c.want || !errors.Is(got, base) && c.err != base {
			t.Errorf("Wrap(%q) = %q, want %q (and base in the chain)", c.err, got, c.want)
		}
	}
	built := &Module{Name: "mem"}
	if got := built.Wrap(At(y, base)).Error(); got != "mem: bad" {
		t.Errorf("built module: %q, want mem: bad", got)
	}
	if m.Wrap(nil) != nil {
		t.Error("Wrap(nil) != nil")
	}
	if strings.Contains(m.Wrap(errors.Join(base, base)).Error(), "\n") {
		t.Error("joined error kept a line break")
	}
}
