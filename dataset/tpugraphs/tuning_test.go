package tpugraphs

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/internal/pbwire"
)

// The expected numbers below were computed independently of this decoder: with a
// generic protowire field dump of each file (every tag printed with its path, e.g.
// ".1.3.4.4" = TuningData.modules.runs.profile.compute_time_ns), counted with grep and
// summed with awk.

func TestDecodeOpTuningData(t *testing.T) {
	ms, err := ReadTuningFile("testdata/op_tuning_data.pb")
	if err != nil {
		t.Fatal(err)
	}
	// dump: 15 ".1" modules, 754 ".1.3" runs, 2 ".1.3.3: 1" errors, 15 ".1.3.5: 1"
	// defaults, 752 ".1.3.4.4" compute times summing to 371222395 ns.
	if len(ms) != 15 {
		t.Fatalf("%d modules, want 15", len(ms))
	}
	runs, errs, defaults, withTime := 0, 0, 0, 0
	var sum int64
	for _, m := range ms {
		runs += len(m.Runs)
		for _, r := range m.Runs {
			if r.Error {
				errs++
			}
			if r.IsDefault {
				defaults++
			}
			if r.Profile.ComputeTimeNs != 0 {
				withTime++
				sum += r.Profile.ComputeTimeNs
			}
			if r.Tile == nil || r.Layout != nil {
				t.Fatalf("module %s: a run without a tile config", m.Module.Name)
			}
		}
	}
	if runs != 754 || errs != 2 || defaults != 15 || withTime != 752 || sum != 371222395 {
		t.Errorf("runs %d errors %d defaults %d timed %d sum %d, want 754 2 15 752 371222395", runs, errs, defaults, withTime, sum)
	}
	// dump: module 0's fingerprint ".1.2" and its first run: output_bounds packed as
	// "\x02\x1a\x04\x02", profile 114377 cycles, 57188 ns, is_default.
	m := ms[0]
	if m.Fingerprint != 6313619157939063081 || m.Module.Name != "fusion.232" {
		t.Errorf("module 0: %s fingerprint %d", m.Module.Name, m.Fingerprint)
	}
	r := m.Runs[0]
	if !reflect.DeepEqual(r.Tile.OutputBounds, []int64{2, 26, 4, 2}) || r.Profile != (Profile{114377, 57188, 57188}) || !r.IsDefault {
		t.Errorf("module 0 run 0: %+v %+v default %v", r.Tile, r.Profile, r.IsDefault)
	}
}

func TestDecodeModuleTuningDataLayout(t *testing.T) {
	ms, err := ReadTuningFile("testdata/module_tuning_data_layout.pb")
	if err != nil {
		t.Fatal(err)
	}
	// dump: one ModuleTuningData (fields .1 module, .2 fingerprint, 122 ".3" runs, one
	// ".4" config_index_to_node), 10 ".3.3" errors, one ".3.5" default, 112 ".3.4.4"
	// compute times summing to 102261628516 ns, the smallest 910876401.
	if len(ms) != 1 {
		t.Fatalf("%d modules, want 1", len(ms))
	}
	m := ms[0]
	if m.Module.Name != "main__.10904" || m.Fingerprint != 1647297092728839203 {
		t.Errorf("module %s fingerprint %d", m.Module.Name, m.Fingerprint)
	}
	errs, defaults, timed := 0, 0, 0
	var sum, lo int64
	for i, r := range m.Runs {
		if r.Error {
			errs++
		}
		if r.IsDefault {
			defaults++
			if r.Profile.ComputeTimeNs != 910903932 || r.Profile.ComputeCycleCount != 1821807865 {
				t.Errorf("default run: %+v", r.Profile)
			}
		}
		if v := r.Profile.ComputeTimeNs; v != 0 {
			timed++
			sum += v
			if lo == 0 || v < lo {
				lo = v
			}
		}
		if r.Layout == nil || len(r.Layout.Nodes) != len(m.ConfigIndexToNode) {
			t.Fatalf("run %d: layout %v for %d configurable nodes", i, r.Layout, len(m.ConfigIndexToNode))
		}
	}
	if len(m.Runs) != 122 || errs != 10 || defaults != 1 || timed != 112 || sum != 102261628516 || lo != 910876401 {
		t.Errorf("runs %d errors %d defaults %d timed %d sum %d min %d", len(m.Runs), errs, defaults, timed, sum, lo)
	}
	if len(m.ConfigIndexToNode) != 62 || !reflect.DeepEqual(m.ConfigIndexToNode[:5], []uint64{443, 461, 488, 652, 660}) {
		t.Errorf("config_index_to_node %d: %v", len(m.ConfigIndexToNode), m.ConfigIndexToNode[:5])
	}
}

// TestLayoutNodesArePositions pins what config_index_to_node means: a node's position
// in the module's instructions (computations in proto order), as tpu_graphs numbers the
// nodes of its layout graphs, not HloInstructionProto.id. Read by position, the 62
// configurable nodes are the layout-sensitive ops layout assignment configures (53
// convolutions and 9 reshapes); read as ids they were adds, broadcasts and
// get-tuple-elements. And every tensor layout a run sets for a node fits that node: a
// configured output's minor-to-major dims are dims of the node's rank.
func TestLayoutNodesArePositions(t *testing.T) {
	ms, err := ReadTuningFile("testdata/module_tuning_data_layout.pb")
	if err != nil {
		t.Fatal(err)
	}
	m := ms[0]
	if len(m.Instructions) != 3163 {
		t.Fatalf("%d instructions, want 3163", len(m.Instructions))
	}
	byName := map[[2]string]*hlo.Instruction{}
	for _, c := range m.Module.Computations {
		for _, in := range c.Instructions {
			byName[[2]string{c.Name, in.Name}] = in
		}
	}
	count := map[hlo.Opcode]int{}
	for i, at := range m.ConfigIndexToNode {
		in := byName[m.Instructions[at]]
		if in == nil {
			t.Fatalf("node %d: %v is not an instruction", i, m.Instructions[at])
		}
		count[in.Opcode]++
		for ri, r := range m.Runs {
			if r.Layout == nil || len(r.Layout.Nodes[i]) == 0 {
				continue
			}
			for _, d := range r.Layout.Nodes[i][0] {
				if int(d) >= in.Shape.Rank() {
					t.Fatalf("run %d node %d (%s, rank %d): output layout %v", ri, i, in.Name, in.Shape.Rank(), r.Layout.Nodes[i][0])
				}
			}
		}
	}
	if count[hlo.OpConvolution] != 53 || count[hlo.OpReshape] != 9 {
		t.Errorf("configurable nodes by opcode %v, want 53 convolutions and 9 reshapes", count)
	}
	// Position 660 is convolution.1043 (hand-checked in the file's text dump).
	if in := byName[m.Instructions[660]]; in == nil || in.Name != "convolution.1043" {
		t.Errorf("position 660 is %v", m.Instructions[660])
	}
}

func TestDecodeTuningRejects(t *testing.T) {
	for _, c := range []struct {
		data []byte
		want string
	}{
		{[]byte{0xff, 0xff}, "bad.pb: not a valid tpu_graphs TuningData or ModuleTuningData at byte 0: the data ends inside a field"},
		{[]byte{0x10, 0x05}, "bad.pb: ModuleTuningData has no module (field 1)"},
	} {
		_, err := DecodeTuning("bad.pb", c.data)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%x: err %v, want %q", c.data, err, c.want)
		}
	}
}

func FuzzDecodeTuning(f *testing.F) {
	b, err := os.ReadFile("testdata/op_tuning_data.pb")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	mts, err := DecodeTuning("seed", b)
	if err != nil {
		f.Fatal(err)
	}
	_ = mts
	// The first module of the file alone (a ModuleTuningData), and a few small messages.
	top, _ := pbwire.Fields(b)
	f.Add(top[0].B)
	f.Add([]byte{0x0a, 0x00})
	f.Add([]byte{0x1a, 0x04, 0x18, 0x01, 0x28, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := DecodeTuning("fuzz.pb", data)
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.pb") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, m := range ms {
			if m.Module == nil {
				t.Fatal("a module without its HLO")
			}
		}
	})
}
