package tpusim

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/hlo"
)

// TestRealMoreFilesSimulate compiles, with the verifier after every pass, and simulates
// on every chip the real XLA files of compiler/hlo/testdata/real_more that import (the
// ones the importer refuses are checked by hlo's TestRealMoreFiles): every program takes
// time, every kernel a positive finite time. Then what each file was added for:
//   - bitcast_only.hlo: the entry only bitcasts its parameter; its output is still
//     written (XLA's copy insertion), one kernel reading and writing the f32[32768].
//   - copy_start_done.hlo: a tuple-shaped producer (copy-start) feeding a kernel
//     (copy-done) stays a kernel of its own, defined before its user (--check).
//   - variadic_sort_tuple.hlo: a two-operand sort's tuple gets layouts (no panic).
//   - mesh_all_reduce.hlo: an all-reduce over mesh['axis_0'=2,'axis_1'=2] {'axis_1'}
//     is a collective of groups of 2 on 4 chips.
//   - all_reduce_uneven_groups.hlo: an all-reduce whose groups differ in size (XLA
//     allows it for all-reduce) is timed by its largest group.
//   - collective_permute_pairs.hlo: a collective-permute whose source_target_pairs name
//     4 devices, in a header of one chip, runs over the 4 (not a 1-chip no-op).
//   - sharded_no_num_partitions.hlo: shardings without num_partitions in the header
//     (compiled per device over the 2 the shardings name; compiler/spmd's test).
func TestRealMoreFilesSimulate(t *testing.T) {
	files, err := filepath.Glob("../compiler/hlo/testdata/real_more/*.hlo")
	if err != nil || len(files) < 9 {
		t.Fatalf("real_more files: %v (%d)", err, len(files))
	}
	reports := map[string]*Report{}
	for _, f := range files {
		base := filepath.Base(f)
		if _, err := hlo.ParseFile(f); err != nil {
			continue // refused at import: hlo's TestRealMoreFiles checks the error
		}
		t.Run(base, func(t *testing.T) {
			for _, name := range PresetNames() {
				m, err := hlo.ParseFile(f) // Compile rewrites its module
				if err != nil {
					t.Fatal(err)
				}
				c := preset(t, name)
				p, err := compiler.Compile(m, nil, compiler.Options{Target: c.Target, Check: true})
				if err != nil {
					t.Fatalf("%s: compile: %v", name, err)
				}
				r, err := Simulate(p, c)
				if err != nil {
					t.Fatalf("%s: simulate: %v", name, err)
				}
				if !(r.TotalNs > 0) || math.IsInf(r.TotalNs, 0) || r.Kernels == nil {
					t.Errorf("%s: total %g ns, kernels %v", name, r.TotalNs, r.Kernels)
				}
				for _, k := range r.Kernels {
					if k.KernelReport != nil && (!(k.SimNs > 0) || math.IsInf(k.SimNs, 0)) {
						t.Errorf("%s: kernel %s time %g", name, k.Name, k.SimNs)
					}
				}
				if name == "v4" {
					reports[base] = r
				}
			}
		})
	}

	for _, f := range []string{"bitcast_only.hlo", "mesh_all_reduce.hlo", "all_reduce_uneven_groups.hlo", "collective_permute_pairs.hlo"} {
		if reports[f] == nil {
			t.Fatalf("%s did not compile and simulate", f)
		}
	}
	if r := reports["bitcast_only.hlo"]; r != nil {
		// f32[32768] read once and written once: 2 x 128 KiB (a multiple of every
		// chip's (8,128) f32 tile, so no padding).
		const want = 2 * 32768 * 4
		if len(r.Kernels) != 1 || r.Kernels[0].KernelReport == nil || r.Kernels[0].Bytes != want ||
			!strings.HasSuffix(r.Kernels[0].Name, ".output_copy") {
			t.Errorf("bitcast_only: kernels %+v, want one output copy of %d bytes", r.Kernels, want)
		}
	}
	for _, c := range []struct {
		file         string
		group, chips int
	}{
		{"mesh_all_reduce.hlo", 2, 4},
		// replica_groups={{0,2,4},{1,3,5,6}}: the largest group, on chips 0..6.
		{"all_reduce_uneven_groups.hlo", 4, 7},
		// source_target_pairs={{0,1},{1,2},{2,3}} in a header of one chip: the pairs
		// name 4 devices, so the permute is one hop among 4, not a 1-chip no-op.
		{"collective_permute_pairs.hlo", 4, 4},
	} {
		r := reports[c.file]
		found := false
		for _, k := range r.Kernels {
			if k.ControlReport != nil && k.Collective != "" {
				found = true
				if k.GroupSize != c.group || !(k.ControlReport.TotalNs > 0) {
					t.Errorf("%s: all-reduce group size %d, %g ns, want %d and a positive time", c.file, k.GroupSize, k.ControlReport.TotalNs, c.group)
				}
			}
		}
		if !found || r.Chips != c.chips || r.UnsizedCollectives != 0 {
			t.Errorf("%s: collective found %v, %d chips, %d unsized, want one, %d and 0", c.file, found, r.Chips, r.UnsizedCollectives, c.chips)
		}
	}
}

// TestNoKernelsIsEmptyList: a program with nothing to run (XLA's no-op test modules,
// ROOT () tuple()) takes 0 ns, and its report lists its kernels as [] in JSON, never
// null (a key of one type).
func TestNoKernelsIsEmptyList(t *testing.T) {
	m, err := hlo.Parse("noop.hlo", []byte("HloModule NoOpModule\nENTRY no_op {\n  ROOT no_op = () tuple()\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := preset(t, DefaultChip)
	p, err := compiler.Compile(m, nil, compiler.Options{Target: c.Target, Check: true})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Simulate(p, c)
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if r.TotalNs != 0 || !strings.Contains(string(out), `"kernels":[]`) {
		t.Errorf("no-op program: %g ns, JSON %s; want 0 ns and \"kernels\":[]", r.TotalNs, out)
	}
	res := compiler.Summarize(p, DefaultChip, "", "")
	if out, _ := json.Marshal(res); !strings.Contains(string(out), `"kernels":[]`) {
		t.Errorf("compile summary JSON %s, want \"kernels\":[]", out)
	}
}

// TestSimErrorNamesFile: an error found when a collective is timed (its replica groups
// span more chips than --chips) names the file and the collective's line:col, on one
// line, as import errors do.
func TestSimErrorNamesFile(t *testing.T) {
	const f = "../compiler/hlo/testdata/real_more/mesh_all_reduce.hlo"
	m, err := hlo.ParseFile(f)
	if err != nil {
		t.Fatal(err)
	}
	c := preset(t, "v4")
	p, err := compiler.Compile(m, nil, compiler.Options{Target: c.Target})
	if err != nil {
		t.Fatal(err)
	}
	_, err = SimulateWith(p, c, Options{Chips: 2})
	const want = f + ":26:8: all-reduce.mesh: replica groups span 4 chips, more than the 2 chips asked for"
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("err = %v, want one line starting %q", err, want)
	}
}
