package hlo

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// shardingModule wraps one parameter's sharding in a module.
func shardingModule(shape, sharding string) string {
	return "HloModule m, num_partitions=8\n\nENTRY e {\n  ROOT p = " + shape + " parameter(0), sharding=" + sharding + "\n}\n"
}

// TestShardingForms parses every sharding form XLA writes, checks what it means and
// that printing gives it back as written (the round trip).
func TestShardingForms(t *testing.T) {
	for _, tc := range []struct {
		shape, text string
		kind        ShardingKind
		tiles       []int // TileCounts
		devices     []int // DeviceList
	}{
		{"f32[8,16]", "{replicated}", ShardReplicated, nil, nil},
		{"f32[8,16]", "{maximal device=3}", ShardMaximal, nil, nil},
		{"f32[8,16]", "{manual}", ShardManual, nil, nil},
		{"f32[8,16]", "{unknown}", ShardUnknown, nil, nil},
		{"f32[8,16]", "{devices=[1,8]<=[8]}", ShardTiled, []int{1, 8}, []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{"f32[8,16]", "{devices=[2,4]<=[2,4]T(1,0)}", ShardTiled, []int{2, 4}, []int{0, 4, 1, 5, 2, 6, 3, 7}},
		{"f32[8,16]", "{devices=[2,2]0,2,1,3}", ShardTiled, []int{2, 2}, []int{0, 2, 1, 3}},
		{"f32[8,16]", "{devices=[2,1,4]<=[8] last_tile_dim_replicate}", ShardTiled, []int{2, 1}, nil},
		{"f32[8,16]", "{devices=[2,1,2,2]<=[2,2,2]T(1,0,2) last_tile_dims={manual, replicated}}", ShardTiled, []int{2, 1}, nil},
		{"f32[8,16]", "{devices=[1,2,4]<=[8] last_tile_dims={manual}}", ShardTiled, []int{1, 2}, nil},
		{"(f32[8,16], s32[])", "{{devices=[8,1]<=[8]}, {replicated}}", ShardTuple, nil, nil},
		{"f32[8,16]", `{devices=[8,1]<=[8] metadata={op_name="a"}}`, ShardTiled, []int{8, 1}, nil},
		{"f32[8,16]", "{mesh['a'=2,'b'=4], [{'a'}, {}]}", ShardNamed, nil, nil},
	} {
		src := shardingModule(tc.shape, tc.text)
		m, err := Parse("s.hlo", []byte(src))
		if err != nil {
			t.Errorf("%s: %v", tc.text, err)
			continue
		}
		s := m.Entry.Root.Sharding
		if s == nil {
			t.Errorf("%s: no sharding parsed", tc.text)
			continue
		}
		if s.Kind != tc.kind {
			t.Errorf("%s: kind %d, want %d", tc.text, s.Kind, tc.kind)
		}
		if tc.tiles != nil && !slices.Equal(s.TileCounts(), tc.tiles) {
			t.Errorf("%s: tiles %v, want %v", tc.text, s.TileCounts(), tc.tiles)
		}
		if tc.devices != nil && !slices.Equal(s.DeviceList(), tc.devices) {
			t.Errorf("%s: devices %v, want %v", tc.text, s.DeviceList(), tc.devices)
		}
		if got := s.String(); got != tc.text {
			t.Errorf("printed %s, want %s", got, tc.text)
		}
		out := m.String()
		if !strings.Contains(out, "sharding="+tc.text) {
			t.Errorf("module text lacks sharding=%s:\n%s", tc.text, out)
		}
		m2, err := Parse("s2.hlo", []byte(out))
		if err != nil {
			t.Errorf("%s: reparse: %v", tc.text, err)
			continue
		}
		if err := ModulesEqual(m, m2); err != nil {
			t.Errorf("%s: round trip: %v", tc.text, err)
		}
	}
}

// TestShardingCustomCalls parses the custom-calls of XLA's SPMD partitioner (Sharding,
// SPMDFullToShardShape, SPMDShardToFullShape) with their shardings.
func TestShardingCustomCalls(t *testing.T) {
	src := `HloModule m, num_partitions=4

ENTRY e {
  p = f32[8,16] parameter(0), sharding={devices=[4,1]<=[4]}
  c = f32[8,16] custom-call(p), custom_call_target="Sharding", sharding={devices=[4,1]<=[4]}
  s = f32[2,16] custom-call(c), custom_call_target="SPMDFullToShardShape", sharding={manual}
  n = f32[2,16] negate(s), sharding={manual}
  ROOT f = f32[8,16] custom-call(n), custom_call_target="SPMDShardToFullShape", sharding={devices=[4,1]<=[4]}
}
`
	m, err := Parse("cc.hlo", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"p", "c", "s", "n", "f"} {
		if m.Entry.Lookup(name).Sharding == nil {
			t.Errorf("%s: sharding not parsed", name)
		}
	}
}

// TestShardingRefused checks that malformed shardings are refused at their line:col with
// one line saying what is wrong.
func TestShardingRefused(t *testing.T) {
	for _, tc := range []struct {
		shape, text string
		col         int // column of the error on line 4 (the offset into the sharding + the prefix)
		want        string
	}{
		{"f32[8,16]", "{devices=[2,4]<=[16]}", 15, "needs 8 devices"},
		{"f32[8,16]", "{devices=[2,2]0,1,2}", 15, "needs 4 devices, but 3 are listed"},
		{"f32[8,16]", "{devices=[2,2]0,1,1,3}", 19, "device 1 appears twice"},
		{"f32[8,16]", "{devices=[2,4]<=[2,4]T(0,0)}", 22, "not a permutation"},
		{"f32[8,16]", "{devices=[8]<=[8]}", 1, "tiles 1 dimensions, but f32[8,16] has rank 2"},
		{"f32[8,16]", "{maximal}", 1, "maximal without device=N"},
		{"f32[8,16]", "{replicated devices=[2]0,1}", 13, "after a sharding form was already given"},
		{"f32[8,16]", "{devices=[2,1,4]<=[8] last_tile_dims={bogus}}", 39, "expected a subgroup type"},
		{"f32[8,16]", "{tiled}", 2, `unknown word "tiled"`},
		{"f32[8,16]", "{devices=[2,0]<=[2]}", 10, "not positive"},
		{"(f32[8], f32[8])", "{}", 0, "a tuple sharding of 0 elements on a tuple of 2 leaves"},
		{"(f32[8], f32[8])", "{{replicated}}", 1, "a tuple sharding of 1 elements on a tuple of 2 leaves"},
		{"f32[8,16]", "{devices=[2,1]<=[2]", 0, "expected"},
	} {
		src := shardingModule(tc.shape, tc.text)
		_, err := Parse("bad.hlo", []byte(src))
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%s: got %v, want a *ParseError", tc.text, err)
			continue
		}
		prefix := len("  ROOT p = " + tc.shape + " parameter(0), sharding=")
		if pe.Line != 4 && tc.col != 0 || tc.col != 0 && pe.Col != prefix+tc.col {
			t.Errorf("%s: error at %d:%d, want 4:%d (%v)", tc.text, pe.Line, pe.Col, prefix+tc.col, err)
		}
		if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %q, want one line containing %q", tc.text, err, tc.want)
		}
	}
}

// TestShardingRealDumps parses the real GSPMD dumps and finds their shardings, and
// checks that printing them parses to the same module.
func TestShardingRealDumps(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "shared", "testdata", "hlo", "sharded")
	files, _ := filepath.Glob(filepath.Join(dir, "*.hlo"))
	if len(files) == 0 {
		t.Skip("no sharded dumps in ../shared/testdata/hlo/sharded")
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Parse(f, src)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		n := 0
		for _, c := range m.Computations {
			for _, in := range c.Instructions {
				if in.Sharding != nil {
					n++
				}
			}
		}
		if want := strings.Count(string(src), "sharding={"); n != want {
			t.Errorf("%s: %d shardings parsed, %d written", filepath.Base(f), n, want)
		}
		m2, err := Parse("printed", []byte(m.String()))
		if err != nil {
			t.Fatalf("%s: reparse: %v", f, err)
		}
		if err := ModulesEqual(m, m2); err != nil {
			t.Errorf("%s: round trip: %v", filepath.Base(f), err)
		}
	}
}
