package pbwire

import (
	"errors"
	"reflect"
	"strings"
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

// TestDecodeErrorInWords: a malformed message is a *DecodeError at the field at fault,
// in words (never protowire's "proto: cannot parse ..."); a nested message's fault is
// located in the whole input, and Invalid says it for a file in one line.
func TestDecodeErrorInWords(t *testing.T) {
	// Field 1 varint 1, then a tag of field 1 with the reserved wire type 7.
	inner := []byte{0x08, 0x01, 0x0f}
	_, err := Fields(inner)
	var de *DecodeError
	if !errors.As(err, &de) || de.Offset != 2 || de.Why != "field 1: a reserved wire type" || strings.Contains(err.Error(), "proto:") {
		t.Fatalf("reserved wire type: %v", err)
	}
	// The same message nested as field 2 of an outer one, after 2 bytes of field 1.
	data := append([]byte{0x08, 0x07, 0x12, byte(len(inner))}, inner...)
	outer, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	_, err = outer.Msgs(2)
	if !errors.As(err, &de) || de.OffsetIn(data) != 6 || de.OffsetIn([]byte{1, 2}) != 2 {
		t.Fatalf("nested: %v (offset in data %d)", err, de.OffsetIn(data))
	}
	got := Invalid("m.pb", "HloModuleProto", data, err).Error()
	want := "m.pb: not a valid HloModuleProto at byte 6: field 1: a reserved wire type (the file is damaged or is not of this kind)"
	if got != want {
		t.Errorf("Invalid: %q, want %q", got, want)
	}
	if !errors.As(Invalid("m.pb", "x", data, err), &de) {
		t.Error("Invalid does not wrap the DecodeError")
	}
	for _, tc := range []struct {
		b   []byte
		why string
	}{
		{[]byte{0x0a, 0x05, 0x01}, "field 1: the data ends inside a field"},
		{[]byte{0x07}, "a field number out of range"},
		{[]byte{0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, "field 1: an integer longer than 10 bytes"},
	} {
		_, err := Fields(tc.b)
		if !errors.As(err, &de) || de.Why != tc.why || strings.Contains(err.Error(), "proto:") {
			t.Errorf("% x: %v, want %q", tc.b, err, tc.why)
		}
	}
}
