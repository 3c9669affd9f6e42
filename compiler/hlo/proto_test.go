package hlo

import (
	"os"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tpucost/tpucost/internal/pbwire"
)

// pb builds a protocol buffer message for the tests.
type pb []byte

func (b pb) str(n protowire.Number, s string) pb {
	return protowire.AppendString(protowire.AppendTag(b, n, protowire.BytesType), s)
}
func (b pb) msg(n protowire.Number, m pb) pb {
	return protowire.AppendBytes(protowire.AppendTag(b, n, protowire.BytesType), m)
}
func (b pb) int(n protowire.Number, v int64) pb {
	return protowire.AppendVarint(protowire.AppendTag(b, n, protowire.VarintType), uint64(v))
}
func (b pb) packed(n protowire.Number, vs ...int64) pb {
	var p []byte
	for _, v := range vs {
		p = protowire.AppendVarint(p, uint64(v))
	}
	return protowire.AppendBytes(protowire.AppendTag(b, n, protowire.BytesType), p)
}

func pbShape(et int64, dims ...int64) pb {
	s := pb(nil).int(2, et).packed(3, dims...)
	mtm := make([]int64, len(dims))
	for i := range mtm {
		mtm[i] = int64(len(dims) - 1 - i)
	}
	return s.msg(5, pb(nil).packed(1, mtm...))
}

func pbInstr(id int64, name, opcode string, shape pb, operands ...int64) pb {
	b := pb(nil).str(1, name).str(2, opcode).msg(3, shape).int(35, id)
	if len(operands) > 0 {
		b = b.packed(36, operands...)
	}
	return b
}

// protoModule is a small HloModuleProto: a while loop whose condition and body are listed
// body first, a dot with dimension numbers, a dynamic dimension and a scalar constant.
func protoModule() pb {
	const f32, s32, pred, tuple = 11, 4, 1, 13
	st := pb(nil).int(2, tuple).msg(4, pbShape(s32)).msg(4, pbShape(f32, 8, 8))
	cond := pb(nil).str(1, "cond").int(5, 1).int(6, 3).
		msg(2, pbInstr(1, "p", "parameter", st)).
		msg(2, pbInstr(2, "i", "get-tuple-element", pbShape(s32), 1).int(13, 0)).
		msg(2, pbInstr(4, "n", "constant", pbShape(s32)).msg(8, pb(nil).packed(4, 10))).
		msg(2, pbInstr(3, "lt", "compare", pbShape(pred), 2, 4).str(63, "LT"))
	body := pb(nil).str(1, "body").int(5, 2).int(6, 7).
		msg(2, pbInstr(5, "p", "parameter", st)).
		msg(2, pbInstr(6, "x", "get-tuple-element", pbShape(f32, 8, 8), 5).int(13, 1)).
		msg(2, pbInstr(8, "i", "get-tuple-element", pbShape(s32), 5).int(13, 0)).
		msg(2, pbInstr(9, "d", "dot", pbShape(f32, 8, 8), 6, 6).msg(30, pb(nil).packed(1, 1).packed(2, 0))).
		msg(2, pbInstr(7, "t", "tuple", st, 8, 9))
	dyn := pbShape(f32, 16).packed(6, 1)
	entry := pb(nil).str(1, "main").int(5, 3).int(6, 13).
		msg(2, pbInstr(10, "a", "parameter", pbShape(f32, 8, 8))).
		msg(2, pbInstr(11, "z", "constant", pbShape(s32)).msg(8, pb(nil).packed(4, 0))).
		msg(2, pbInstr(14, "v", "parameter", dyn).int(9, 1)).
		msg(2, pbInstr(12, "init", "tuple", st, 11, 10)).
		msg(2, pbInstr(13, "w", "while", st, 12).packed(38, 2, 1))
	return pb(nil).str(1, "jit_loop").str(2, "main").int(6, 3).msg(3, cond).msg(3, body).msg(3, entry)
}

func TestDecodeModuleProto(t *testing.T) {
	for _, tc := range []struct {
		name string
		data pb
	}{{"HloModuleProto", protoModule()}, {"HloProto", pb(nil).msg(1, protoModule())}} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := DecodeModuleProto("m.hlo.pb", tc.data)
			if err != nil {
				t.Fatal(err)
			}
			if err := Verify(m); err != nil {
				t.Fatal(err)
			}
			w := m.Entry.Root
			if m.Name != "jit_loop" || m.Entry.Name != "main" || w.Opcode != OpWhile ||
				w.Condition == nil || w.Condition.Name != "cond" || w.Body.Name != "body" {
				t.Fatalf("module %s entry %s root %s", m.Name, m.Entry.Name, w)
			}
			d := m.Computation("body").Lookup("d")
			if d.Dot == nil || d.Dot.LhsContracting[0] != 1 || d.Dot.RhsContracting[0] != 0 {
				t.Errorf("dot dims %+v", d.Dot)
			}
			if v := m.Entry.Lookup("v").Shape; !v.IsDynamic(0) || v.String() != "f32[<=16]{0}" {
				t.Errorf("dynamic shape %s", v)
			}
			if lit := m.Computation("cond").Lookup("n").Literal; lit != "10" {
				t.Errorf("constant %q, want 10", lit)
			}
			roundTrip(t, m)
		})
	}
}

func TestDecodeModuleProtoErrors(t *testing.T) {
	good := protoModule()
	bad := pb(nil).str(1, "m").msg(3, pb(nil).str(1, "main").int(5, 1).int(6, 1).
		msg(2, pbInstr(1, "a", "parameter", pbShape(11, 4))).
		msg(2, pbInstr(2, "b", "frobnicate", pbShape(11, 4), 1)))
	dangling := pb(nil).str(1, "m").msg(3, pb(nil).str(1, "main").int(5, 1).int(6, 2).
		msg(2, pbInstr(2, "b", "negate", pbShape(11, 4), 7)))
	mismatch := pb(nil).str(1, "m").msg(3, pb(nil).str(1, "main").int(5, 1).int(6, 2).
		msg(2, pbInstr(1, "a", "parameter", pbShape(11, 4))).
		msg(2, pbInstr(2, "b", "negate", pbShape(11, 5), 1)))
	huge := pb(nil).str(1, "m").msg(3, pb(nil).str(1, "main").int(5, 1).int(6, 1).
		msg(2, pbInstr(1, "a", "parameter", pbShape(11, 99999999999, 99999999999))))
	for _, tc := range []struct {
		name string
		data []byte
		msg  string
	}{
		{"truncated", good[:len(good)-3], "x.pb: not a valid HloModuleProto at byte 431: field 3: the data ends inside a field"},
		{"unknown-opcode", bad, `x.pb: computation "main", instruction "b": unknown opcode "frobnicate"`},
		{"dangling-operand", dangling, `x.pb: computation "main", instruction "b": operand 0 refers to instruction id 7`},
		{"shape-mismatch", mismatch, `x.pb: computation "main", instruction "b": %b is declared f32[5], but negate of its operands gives f32[4]`},
		{"overflow", huge, `x.pb: computation "main", instruction "a": f32[99999999999,99999999999] is too large`},
		{"empty", nil, "x.pb: no HloModuleProto found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeModuleProto("x.pb", tc.data)
			if err == nil || !strings.HasPrefix(err.Error(), tc.msg) {
				t.Errorf("error = %v, want prefix %q", err, tc.msg)
			}
		})
	}
}

// The TpuGraphs files embed real HloModuleProtos: module_tuning_data_layout.pb is a
// tpu_graphs.ModuleTuningData (module = field 1); op_tuning_data.pb is a TuningData
// (repeated ModuleTuningData = field 1), one module per tuned op.
func TestDecodeTuningDataModules(t *testing.T) {
	data, err := os.ReadFile("testdata/tpugraphs/module_tuning_data_layout.pb")
	if err != nil {
		t.Fatal(err)
	}
	m, err := DecodeModuleProtoField("layout.pb", data, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(m); err != nil {
		t.Fatal(err)
	}
	if n := m.InstructionCount(); n < 1000 {
		t.Errorf("%d instructions, want the whole module (thousands)", n)
	}
	roundTrip(t, m)

	data, err = os.ReadFile("testdata/tpugraphs/op_tuning_data.pb")
	if err != nil {
		t.Fatal(err)
	}
	top, err := pbwire.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	// As one file, the collection holds no single module: the error says what it holds.
	if _, err := DecodeModuleProto("op.pb", data); err == nil || !strings.Contains(err.Error(), "holds 15 records with a module each") {
		t.Errorf("the whole TuningData as one module: %v", err)
	}
	// A ModuleTuningData is found as a wrapper, without naming its field.
	if _, err := ParseProtoFile("testdata/tpugraphs/module_tuning_data_layout.pb"); err != nil {
		t.Errorf("ModuleTuningData as a .pb source: %v", err)
	}
	entries := top.All(1)
	if len(entries) != 15 {
		t.Fatalf("%d ModuleTuningData entries, want 15", len(entries))
	}
	for i, e := range entries {
		m, err := DecodeModuleProtoField("op.pb", e.B, 1)
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if err := Verify(m); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		roundTrip(t, m)
	}
}

// FuzzDecodeModuleProto checks that decoding arbitrary bytes never panics, that errors
// name the file, and that every module it accepts verifies and round-trips as text.
func FuzzDecodeModuleProto(f *testing.F) {
	f.Add([]byte(protoModule()))
	f.Add([]byte(pb(nil).msg(1, protoModule())))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeModuleProto("f.pb", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.pb: ") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if err := Verify(m); err != nil {
			t.Fatalf("decoded module does not verify: %v", err)
		}
		roundTrip(t, m)
	})
}

// TestDecodeGatherScatterDims decodes a gather's (field 33) and a scatter's (field 48)
// dimension numbers into the attributes the text form has: fields 1-3 always, the
// batching dims (5, 6) only when present, index_vector_dim from field 4.
func TestDecodeGatherScatterDims(t *testing.T) {
	const f32, s32 = 11, 4
	add := pb(nil).str(1, "add").int(5, 20).int(6, 23).
		msg(2, pbInstr(21, "x", "parameter", pbShape(f32))).
		msg(2, pbInstr(22, "y", "parameter", pbShape(f32)).int(9, 1)).
		msg(2, pbInstr(23, "s", "add", pbShape(f32), 21, 22))
	entry := pb(nil).str(1, "main").int(5, 1).int(6, 5).
		msg(2, pbInstr(1, "table", "parameter", pbShape(f32, 100, 16))).
		msg(2, pbInstr(2, "idx", "parameter", pbShape(s32, 4, 1)).int(9, 1)).
		msg(2, pbInstr(3, "rows", "gather", pbShape(f32, 4, 16), 1, 2).
			msg(33, pb(nil).packed(1, 1).packed(2, 0).packed(3, 0).int(4, 1)).packed(34, 1, 16)).
		msg(2, pbInstr(5, "upd", "scatter", pbShape(f32, 100, 16), 1, 2, 3).
			msg(48, pb(nil).packed(1, 1).packed(2, 0).packed(3, 0).int(4, 1)).packed(38, 20))
	data := pb(nil).str(1, "m").int(6, 1).msg(3, add).msg(3, entry)
	m, err := DecodeModuleProto("g.pb", data)
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(m); err != nil {
		t.Fatal(err)
	}
	text := roundTrip(t, m)
	for _, want := range []string{
		"offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,16}",
		"update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("decoded module lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "batching_dims") {
		t.Errorf("absent batching dims were written:\n%s", text)
	}
}
