// Package pbwire reads protocol buffer messages from their wire format by field number,
// without generated code (google.golang.org/protobuf's protowire underneath): XLA's
// HloModuleProto (compiler/hlo) and tpu_graphs' tuning protos (dataset/tpugraphs) are
// decoded with it from field numbers their readers document. A message is its fields in
// wire order (Fields) or grouped by number (Parse).
package pbwire

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field is one field as it appears on the wire.
type Field struct {
	Num  protowire.Number
	Type protowire.Type
	V    uint64 // varint, fixed32 or fixed64 value
	B    []byte // bytes value (a string, bytes, a message or a packed repeated field)
}

// Fields splits a message into its fields, in wire order. A malformed message is an
// error naming the field where decoding stopped.
func Fields(b []byte) ([]Field, error) {
	var out []Field
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		f := Field{Num: num, Type: typ}
		switch typ {
		case protowire.VarintType:
			f.V, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(b)
			f.V = uint64(v)
		case protowire.Fixed64Type:
			f.V, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			f.B, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return nil, fmt.Errorf("field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
		out = append(out, f)
	}
	return out, nil
}

// Varints returns the values of a repeated integer field occurrence: its value (a
// varint, or a fixed-width scalar), or the values of a packed varint encoding.
func (f Field) Varints() ([]uint64, error) {
	switch f.Type {
	case protowire.VarintType, protowire.Fixed32Type, protowire.Fixed64Type:
		return []uint64{f.V}, nil
	case protowire.BytesType:
		var out []uint64
		b := f.B
		for len(b) > 0 {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return nil, protowire.ParseError(n)
			}
			out = append(out, v)
			b = b[n:]
		}
		return out, nil
	}
	return nil, errors.New("want integers")
}

// Message is a message's fields by number, each number's occurrences in wire order.
type Message map[protowire.Number][]Field

// Parse reads a message (see Fields).
func Parse(b []byte) (Message, error) {
	fs, err := Fields(b)
	if err != nil {
		return nil, err
	}
	m := Message{}
	for _, f := range fs {
		m[f.Num] = append(m[f.Num], f)
	}
	return m, nil
}

// All returns the occurrences of field n.
func (m Message) All(n protowire.Number) []Field { return m[n] }

// Has reports whether field n occurs.
func (m Message) Has(n protowire.Number) bool { return len(m[n]) > 0 }

// Bytes returns the last bytes value of field n (a later occurrence wins, as in proto3).
func (m Message) Bytes(n protowire.Number) ([]byte, bool) {
	fs := m[n]
	if len(fs) == 0 || fs[len(fs)-1].Type != protowire.BytesType {
		return nil, false
	}
	return fs[len(fs)-1].B, true
}

// Str returns the last string value of field n ("" when absent).
func (m Message) Str(n protowire.Number) string {
	b, _ := m.Bytes(n)
	return string(b)
}

// Int returns the last scalar value of field n as a signed integer (0 when absent).
func (m Message) Int(n protowire.Number) int64 {
	fs := m[n]
	if len(fs) == 0 || fs[len(fs)-1].Type == protowire.BytesType {
		return 0
	}
	return int64(fs[len(fs)-1].V)
}

// Ints returns repeated integer field n, packed or not.
func (m Message) Ints(n protowire.Number) ([]int64, error) {
	var out []int64
	for _, f := range m[n] {
		vs, err := f.Varints()
		if err != nil {
			return nil, fmt.Errorf("field %d: %w", n, err)
		}
		for _, v := range vs {
			out = append(out, int64(v))
		}
	}
	return out, nil
}

// Msgs parses repeated message field n.
func (m Message) Msgs(n protowire.Number) ([]Message, error) {
	var out []Message
	for _, f := range m[n] {
		if f.Type != protowire.BytesType {
			return nil, fmt.Errorf("field %d is not a message", n)
		}
		sub, err := Parse(f.B)
		if err != nil {
			return nil, fmt.Errorf("field %d: %w", n, err)
		}
		out = append(out, sub)
	}
	return out, nil
}

// Msg parses message field n (the last occurrence; an empty message when absent).
func (m Message) Msg(n protowire.Number) (Message, error) {
	ms, err := m.Msgs(n)
	if err != nil || len(ms) == 0 {
		return Message{}, err
	}
	return ms[len(ms)-1], nil
}
