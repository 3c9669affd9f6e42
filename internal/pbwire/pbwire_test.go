package pbwire

import (
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

func TestParse(t *testing.T) {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, "name")
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	b = protowire.AppendVarint(b, 7)
	b = protowire.AppendTag(b, 3, protowire.BytesType) // packed 1, 300
	b = protowire.AppendBytes(b, protowire.AppendVarint(protowire.AppendVarint(nil, 1), 300))
	b = protowire.AppendTag(b, 3, protowire.VarintType) // and one more unpacked
	b = protowire.AppendVarint(b, 5)
	var sub []byte
	sub = protowire.AppendTag(sub, 1, protowire.Fixed32Type)
	sub = protowire.AppendFixed32(sub, 9)
	b = protowire.AppendTag(b, 4, protowire.BytesType)
	b = protowire.AppendBytes(b, sub)

	fs, err := Fields(b)
	if err != nil || len(fs) != 5 || fs[1].Num != 2 || fs[1].V != 7 {
		t.Fatalf("fields %+v, %v", fs, err)
	}
	m, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if m.Str(1) != "name" || m.Int(2) != 7 || !m.Has(4) || m.Has(9) || m.Int(9) != 0 {
		t.Errorf("scalars: %q %d", m.Str(1), m.Int(2))
	}
	if ints, err := m.Ints(3); err != nil || !reflect.DeepEqual(ints, []int64{1, 300, 5}) {
		t.Errorf("ints %v, %v", ints, err)
	}
	if s, err := m.Msg(4); err != nil || s.Int(1) != 9 {
		t.Errorf("message %v, %v", s, err)
	}
	if _, err := m.Msgs(2); err == nil {
		t.Error("a varint read as a message")
	}
	if _, err := Fields(b[:len(b)-1]); err == nil {
		t.Error("a truncated message parsed")
	}
}
